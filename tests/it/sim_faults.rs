//! Fault injection and request counting through the HTTP wire.
#![allow(clippy::unwrap_used)]

use crate::sim_support;

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use sim_support::{Client, json_of};
use verda_operator::sim::{Fault, FaultKind};

#[tokio::test]
async fn rate_limit_fault_answers_429_with_retry_after_for_count_requests() {
    let c = Client::fast().await;
    c.sim.inject(
        Fault::new(
            "compute",
            Some("list_servers"),
            FaultKind::RateLimited {
                retry_after_secs: 2,
            },
        )
        .times(2),
    );
    for _ in 0..2 {
        let resp = c
            .nova(Method::GET, "/servers/detail", 64)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()["retry-after"], "2");
        assert_eq!(json_of(resp).await["overLimit"]["code"], 429);
    }
    assert_eq!(
        c.nova(Method::GET, "/servers/detail", 64)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(c.sim.requests("compute", "list_servers"), 3);
}

#[tokio::test]
async fn status_fault_on_a_service_uses_that_service_error_shape() {
    let c = Client::fast().await;
    c.sim
        .inject(Fault::new("load-balancer", None, FaultKind::Status(503)));
    let resp = c
        .req(Method::GET, "/load-balancer/v2/lbaas/loadbalancers")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 503);
    assert_eq!(json_of(resp).await["faultcode"], "Server");
    c.sim.clear_faults();
    assert_eq!(
        c.req(Method::GET, "/load-balancer/v2/lbaas/loadbalancers")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn latency_fault_delays_the_answer() {
    let c = Client::fast().await;
    c.sim.inject(Fault::new(
        "network",
        Some("list_networks"),
        FaultKind::Latency(Duration::from_millis(120)),
    ));
    let start = Instant::now();
    assert_eq!(
        c.req(Method::GET, "/network/v2.0/networks")
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert!(start.elapsed() >= Duration::from_millis(120));
}

#[tokio::test]
async fn server_error_fault_sends_new_servers_to_error() {
    let c = Client::fast().await;
    c.sim
        .inject(Fault::new("compute", Some("create_server"), FaultKind::ServerError).times(1));
    let broken = c.create_server("broken", json!({})).await;
    let fine = c.create_server("fine", json!({})).await;
    assert_eq!(c.wait_server(&broken).await["status"], "ERROR");
    assert_eq!(c.wait_server(&fine).await["status"], "ACTIVE");
}

#[tokio::test]
async fn out_of_band_delete_makes_the_server_404() {
    let c = Client::fast().await;
    let id = c.create_server("oob", json!({})).await;
    c.sim.delete_server_out_of_band(&id);
    assert_eq!(
        c.nova(Method::GET, &format!("/servers/{id}"), 64)
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert!(c.sim.servers().is_empty());
}

#[tokio::test]
async fn counters_record_every_operation() {
    let c = Client::fast().await;
    c.nova(Method::GET, "/flavors/detail", 64)
        .send()
        .await
        .unwrap();
    c.req(Method::GET, "/image/v2/images?name=centos79")
        .send()
        .await
        .unwrap();
    assert_eq!(c.sim.requests("identity", "issue_token"), 1);
    assert_eq!(c.sim.requests("compute", "list_flavors"), 1);
    assert_eq!(c.sim.requests("image", "list_images"), 1);
    assert_eq!(c.sim.total_requests(), 3);
}

/// With a latency configured, every request is answered no sooner than that, and
/// requests sent together wait side by side rather than one after another.
#[tokio::test]
async fn a_configured_latency_holds_every_request_side_by_side() {
    let latency = Duration::from_millis(300);
    let c = Client::start(verda_operator::sim::SimConfig {
        latency,
        ..verda_operator::sim::SimConfig::fast()
    })
    .await;
    let started = Instant::now();
    let sends = (0..8).map(|_| c.nova(Method::GET, "/servers/detail", 64).send());
    for resp in futures::future::join_all(sends).await {
        assert_eq!(resp.unwrap().status(), 200);
    }
    let took = started.elapsed();
    assert!(took >= latency, "answered after {took:?}");
    assert!(
        took < latency * 4,
        "eight requests took {took:?}: one after another"
    );
}
