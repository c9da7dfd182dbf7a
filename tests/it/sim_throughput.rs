//! Throughput driver for the simulator on loopback (ignored by default):
//! `hack/sim-throughput.sh` or
//! `cargo test -p verda-operator --test sim_throughput -- --ignored --nocapture`.
//! Knobs: `SIM_BENCH_SECS` (default 3), `SIM_BENCH_CONCURRENCY` (default 16).
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use sim_support::{Client, json_of};

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A mixed read workload like a resync loop: server show, server list page, LB show,
/// status tree, network lookup.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark driver; run explicitly"]
async fn simulator_serves_mixed_reads_on_loopback() {
    let c = Arc::new(Client::fast().await);
    let mut servers = Vec::new();
    for i in 0..20 {
        servers.push(
            c.create_server(&format!("bench-{i}"), json!({"tags": ["bench"]}))
                .await,
        );
    }
    let lb = c
        .req(Method::POST, "/load-balancer/v2/lbaas/loadbalancers")
        .json(&json!({"loadbalancer": {"name": "bench", "vip_subnet_id": "3d5443ce-8418-4529-a819-73f717122551"}}))
        .send()
        .await
        .unwrap();
    let lb = json_of(lb).await["loadbalancer"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let paths: Arc<Vec<String>> = Arc::new(vec![
        format!("/compute/v2.1/servers/{}", servers[0]),
        "/compute/v2.1/servers/detail?tags=bench&limit=20".into(),
        format!("/load-balancer/v2/lbaas/loadbalancers/{lb}"),
        format!("/load-balancer/v2/lbaas/loadbalancers/{lb}/status"),
        "/network/v2.0/networks?name=private".into(),
    ]);
    let only: Option<usize> = std::env::var("SIM_BENCH_ONLY")
        .ok()
        .and_then(|v| v.parse().ok());
    let paths: Arc<Vec<String>> = Arc::new(match only {
        Some(i) => vec![paths[i].clone()],
        None => paths.to_vec(),
    });
    let secs = knob("SIM_BENCH_SECS", 3);
    let concurrency = knob("SIM_BENCH_CONCURRENCY", 16);
    let before = c.sim.total_requests();
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|t| {
            let (c, paths, ok, failed) = (c.clone(), paths.clone(), ok.clone(), failed.clone());
            tokio::spawn(async move {
                let mut i = t as usize;
                while Instant::now() < deadline {
                    let resp = c
                        .req(Method::GET, &paths[i % paths.len()])
                        .header("openstack-api-version", "compute 2.64")
                        .send()
                        .await
                        .unwrap();
                    let counter = if resp.status() == 200 { &ok } else { &failed };
                    resp.bytes().await.unwrap();
                    counter.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    let served = c.sim.total_requests() - before;
    println!(
        "sim throughput: {ok} ok + {failed} failed requests in {elapsed:.2} s with {concurrency} connections = {:.0} requests/s (simulator counted {served})",
        (ok + failed) as f64 / elapsed
    );
    assert_eq!(failed, 0);
    assert_eq!(served, ok);
}
