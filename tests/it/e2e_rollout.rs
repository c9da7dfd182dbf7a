//! A template change of the published group behind the published LoadBalancer rolls
//! out by replacement, one VirtualMachine at a time: every pool keeps at least
//! `replicas` members throughout, and an old server goes only after it left the pools.
//! `updateStrategy: OnDelete` leaves the existing VirtualMachines alone.

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup, labels};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);
const GROUP: &str = "virtualmachinegroup-sample";

/// Each VirtualMachine's name and template hash.
pub(crate) async fn vm_hashes(env: &Env) -> Vec<(String, String)> {
    env.api::<VirtualMachine>()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|vm| {
            let hash = vm
                .labels()
                .get(labels::TEMPLATE_HASH)
                .cloned()
                .unwrap_or_default();
            (vm.name_any(), hash)
        })
        .collect()
}

async fn edit_template(env: &Env) {
    env.api::<VirtualMachineGroup>()
        .patch(
            GROUP,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"template": {"description": "version 2"}}})),
        )
        .await
        .expect("edit accepted");
}

#[tokio::test]
async fn a_template_change_replaces_one_at_a_time_and_pools_never_shrink() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    let old: BTreeSet<String> = vm_hashes(&env).await.into_iter().map(|(n, _)| n).collect();

    edit_template(&env).await;
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let lbs = env.sim.load_balancers();
        let lb = lbs.first().expect("load balancer");
        let servers = env.sim.servers();
        for pool in &lb.pools {
            assert!(
                pool.members.len() >= 2,
                "a pool shrank below replicas: {pool:?}"
            );
            for m in &pool.members {
                let alive = servers.iter().any(|s| s.name == m.name && !s.deleting);
                assert!(alive, "{} is a member without a live server", m.name);
            }
        }
        let members: BTreeSet<String> =
            lb.pools[0].members.iter().map(|m| m.name.clone()).collect();
        let done = members.len() == 2
            && members.is_disjoint(&old)
            && lb.pools.iter().all(|p| p.members.len() == 2)
            && servers.iter().filter(|s| !s.deleting).count() == 2;
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rollout did not finish: {members:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    eventually(
        "every VirtualMachine runs the new template",
        LIMIT,
        || async {
            let hashes: BTreeSet<String> =
                vm_hashes(&env).await.into_iter().map(|(_, h)| h).collect();
            (hashes.len() == 1).then_some(())
        },
    )
    .await;
    let servers = env.sim.servers();
    assert!(
        servers
            .iter()
            .filter(|s| !s.deleting)
            .all(|s| s.description.as_deref() == Some("version 2")),
        "{servers:?}"
    );
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
}

#[tokio::test]
async fn on_delete_leaves_existing_virtual_machines_alone() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = sample("virtualmachinegroup.yaml")
        .replace("spec:\n", "spec:\n  updateStrategy: OnDelete\n");
    let _: VirtualMachineGroup = env.create_from_yaml(&manifest).await;
    let api = env.api::<VirtualMachineGroup>();
    eventually("two ready replicas", LIMIT, || async {
        let s = api.get(GROUP).await.ok()?.status?;
        (s.ready_replicas == 2).then_some(())
    })
    .await;
    let before = vm_hashes(&env).await;
    edit_template(&env).await;
    let status = eventually("the group saw the change", LIMIT, || async {
        let g = api.get(GROUP).await.ok()?;
        let s = g.status?;
        (s.observed_generation == g.metadata.generation).then_some(s)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(vm_hashes(&env).await, before, "nothing replaced");
    assert_eq!(status.updated_replicas, 0);
    assert_eq!(env.sim.servers().iter().filter(|s| !s.deleting).count(), 2);
}
