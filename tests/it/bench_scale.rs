//! The scale story, measured: the published group and LoadBalancer on a simulator
//! without latency; `replicas: 2 → 3` until the third member is in every pool (time and
//! cloud calls), and the cloud calls of the steady state per resync. Run with
//! `hack/bench-scale.sh`; figures are printed, not asserted.

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, calls_since, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::runtime::Timing;
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(60);

fn zero_latency() -> SimConfig {
    SimConfig {
        build_delay: Duration::ZERO,
        lb_delay: Duration::ZERO,
        ..SimConfig::fast()
    }
}

/// The defaults of `verda-operator run` (poll 2 s), with a resync beyond the run.
fn production() -> Timing {
    Timing {
        resync: Duration::from_secs(600),
        poll: Duration::from_secs(2),
        terminal_retry: Duration::from_secs(120),
        error_replace: Duration::from_secs(30),
        drain_timeout: Duration::from_secs(120),
    }
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

async fn scale_two_to_three(label: &str, timing: Timing) {
    let env = Env::start(zero_latency(), timing).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    let before = env.sim.request_counts();
    let started = Instant::now();
    env.api::<VirtualMachineGroup>()
        .patch_scale(
            "virtualmachinegroup-sample",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale accepted");
    eventually("the third member is in every pool", LIMIT, || async {
        let lbs = env.sim.load_balancers();
        let lb = lbs.first()?;
        (lb.pools.len() == 2 && lb.pools.iter().all(|p| p.members.len() == 3)).then_some(())
    })
    .await;
    let elapsed = started.elapsed();
    let calls = calls_since(&env.sim, &before);
    println!(
        "SCALE 2->3 [{label}]: third member in every pool after {:.2} s, {} cloud calls: {calls:?}",
        elapsed.as_secs_f64(),
        total(&calls)
    );
}

#[tokio::test]
#[ignore = "benchmark: run with hack/bench-scale.sh"]
async fn scale_story_and_steady_state() {
    scale_two_to_three("defaults, poll 2 s", production()).await;
    scale_two_to_three("poll 100 ms", test_timing()).await;

    // Steady state: nothing changes; every object resyncs once a second.
    let resync = Duration::from_secs(1);
    let env = Env::start(
        zero_latency(),
        Timing {
            resync,
            ..test_timing()
        },
    )
    .await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = env.sim.request_counts();
    let rounds = 10;
    tokio::time::sleep(resync * rounds).await;
    let calls = calls_since(&env.sim, &before);
    let per_round = |prefix: &str| {
        calls
            .iter()
            .filter(|(op, _)| op.starts_with(prefix))
            .map(|(_, n)| *n)
            .sum::<u64>() as f64
            / f64::from(rounds)
    };
    println!(
        "STEADY per resync: {:.1} calls for 2 VirtualMachines (compute), {:.1} for the group's \
         server group, {:.1} for 1 LoadBalancer with 2 ports (load-balancer + network), total {:.1}; \
         over {rounds} resyncs: {calls:?}",
        per_round("compute/list_servers"),
        per_round("compute/") - per_round("compute/list_servers"),
        per_round("load-balancer/") + per_round("network/"),
        total(&calls) as f64 / f64::from(rounds)
    );
}
