//! The published scenario (group + LoadBalancer) under a cloud that fails about one
//! call in five — half 503, half 429 with Retry-After — converges to exactly what the
//! fault-free run builds: no duplicate server, server group, load balancer or member.
//! Prints the cloud calls of both runs.

use crate::support;

use std::time::Duration;

use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::sim::{Fault, FaultKind, SimConfig};

const SERVICES: [&str; 5] = ["identity", "compute", "image", "network", "load-balancer"];

/// Runs the published scenario to convergence; returns the cloud calls it took.
async fn converge(faulty: bool) -> u64 {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    if faulty {
        for service in SERVICES {
            env.sim
                .inject(Fault::new(service, None, FaultKind::Status(503)).with_rate(0.1));
            env.sim.inject(
                Fault::new(
                    service,
                    None,
                    FaultKind::RateLimited {
                        retry_after_secs: 1,
                    },
                )
                .with_rate(0.1),
            );
        }
    }
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    let lbs = env.api::<LoadBalancer>();
    eventually(
        "the LoadBalancer serves both VMs on both ports",
        Duration::from_secs(90),
        || async {
            let s = lbs.get("loadbalancer-sample").await.ok()?.status?;
            (is_true(&s.conditions, READY) && s.members.as_deref() == Some("4/4")).then_some(())
        },
    )
    .await;
    let calls = env.sim.total_requests();

    let servers: Vec<_> = env
        .sim
        .servers()
        .into_iter()
        .filter(|s| !s.deleting)
        .collect();
    assert_eq!(servers.len(), 2, "{servers:?}");
    let mut names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 2, "one server per VirtualMachine: {names:?}");
    assert_eq!(env.sim.server_groups().len(), 1);
    let lbs = env.sim.load_balancers();
    assert_eq!(lbs.len(), 1, "{lbs:?}");
    assert_eq!(lbs[0].listeners.len(), 2);
    assert_eq!(lbs[0].pools.len(), 2);
    for pool in &lbs[0].pools {
        assert_eq!(pool.members.len(), 2, "{pool:?}");
        assert!(pool.health_monitor.is_some());
    }
    calls
}

#[tokio::test]
async fn one_call_in_five_failing_still_converges_without_duplicates() {
    let clean = converge(false).await;
    let faulty = converge(true).await;
    println!(
        "FAULTS published group + LoadBalancer: {clean} cloud calls fault-free, {faulty} with ~20% \
         of calls failing (503 / 429 Retry-After 1s): {:.2}x",
        faulty as f64 / clean as f64
    );
}
