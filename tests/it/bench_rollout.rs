//! A rollout measured: a 30-replica group behind the published 2-port LoadBalancer on a
//! simulator without latency; a template change with `maxSurge: 1` (one at a time)
//! against `maxSurge: 25%`, until every replica runs the new template and both pools
//! hold exactly the 30 new servers (time, rounds of creates, cloud calls). Run with
//! `hack/bench-rollout.sh`; figures are printed, not asserted.

use crate::e2e_rollout::vm_hashes;
use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, calls_since, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::sim::SimConfig;

const REPLICAS: u32 = 30;
const LIMIT: Duration = Duration::from_secs(600);
const GROUP: &str = "virtualmachinegroup-sample";

fn zero_latency() -> SimConfig {
    SimConfig {
        build_delay: Duration::ZERO,
        lb_delay: Duration::ZERO,
        ..SimConfig::fast()
    }
}

async fn rollout(label: &str, max_surge: &str) -> (f64, u64) {
    let env = Env::start(zero_latency(), test_timing()).await;
    let manifest = sample("virtualmachinegroup.yaml").replace(
        "  replicas: 2\n",
        &format!("  replicas: {REPLICAS}\n  haPolicy: none\n  rollingUpdate: {{maxSurge: {max_surge}}}\n"),
    ).replace("  haPolicy: \"soft\"\n", "");
    let _: VirtualMachineGroup = env.create_from_yaml(&manifest).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    let all = format!("{}/{}", 2 * REPLICAS, 2 * REPLICAS);
    env.load_balancer_ready("loadbalancer-sample", &all).await;
    let old: Vec<String> = env.sim.live_servers().into_iter().map(|s| s.id).collect();
    let before = env.sim.request_counts();
    let started = Instant::now();
    env.api::<VirtualMachineGroup>()
        .patch(
            GROUP,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"template": {"description": "version 2"}}})),
        )
        .await
        .expect("edit accepted");
    let fewest = std::cell::Cell::new(usize::MAX);
    eventually(
        "every replica runs the new template and serves",
        LIMIT,
        || async {
            let lbs = env.sim.load_balancers();
            let lb = lbs.first()?;
            fewest.set(
                fewest
                    .get()
                    .min(lb.pools.iter().map(|p| p.members.len()).min()?),
            );
            let servers = env.sim.live_servers();
            let fresh = servers.iter().filter(|s| !old.contains(&s.id)).count();
            let hashes: BTreeMap<String, String> = vm_hashes(&env).await.into_iter().collect();
            let one = hashes
                .values()
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                == 1;
            let pools = lb
                .pools
                .iter()
                .all(|p| p.members.len() == REPLICAS as usize);
            (one && hashes.len() == REPLICAS as usize
                && fresh == REPLICAS as usize
                && servers.len() == REPLICAS as usize
                && pools)
                .then_some(())
        },
    )
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    let calls = calls_since(&env.sim, &before);
    let total: u64 = calls.values().sum();
    println!(
        "ROLLOUT {REPLICAS} replicas [{label}]: {elapsed:.1} s, {total} cloud calls ({:.1} per replica), fewest members in a pool while it ran: {}; {calls:?}",
        total as f64 / f64::from(REPLICAS),
        fewest.get()
    );
    (elapsed, total)
}

#[tokio::test]
#[ignore = "benchmark: run with hack/bench-rollout.sh"]
async fn rollout_of_thirty_one_at_a_time_against_a_quarter_surge() {
    let (one_time, one_calls) = rollout("maxSurge: 1", "1").await;
    let (quarter_time, quarter_calls) = rollout("maxSurge: 25%", "25%").await;
    println!(
        "ROLLOUT ratio: 25% surge takes {:.2}x the time and {:.2}x the cloud calls of one at a time",
        quarter_time / one_time,
        quarter_calls as f64 / one_calls as f64
    );
}
