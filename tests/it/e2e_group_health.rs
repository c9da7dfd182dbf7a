//! Groups that keep themselves healthy, driven as `kubectl apply` would: a stopped
//! server is started again (`runStrategy: Always`), `Halted` stops every server out of
//! the pools and `Always` brings the same servers back, an unhealthy replica is
//! replaced within `maxUnhealthy`, a rollout that never progresses stops and says so,
//! and `partition` updates only the indices from it.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{ListParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::find_condition;
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup, labels};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(40);
const GROUP: &str = "virtualmachinegroup-sample";

/// The published group with `extra` added to its spec.
fn group_with(replicas: i32, extra: &str) -> String {
    sample("virtualmachinegroup.yaml").replace(
        "  replicas: 2\n",
        &format!("  replicas: {replicas}\n{extra}"),
    )
}

/// Live servers by name → (ID, status).
fn servers(env: &Env) -> BTreeMap<String, (String, String)> {
    env.sim
        .servers()
        .into_iter()
        .filter(|s| !s.deleting)
        .map(|s| (s.name, (s.id, s.status)))
        .collect()
}

async fn patch_group(env: &Env, patch: serde_json::Value) {
    env.api::<VirtualMachineGroup>()
        .patch(GROUP, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("edit accepted");
}

async fn group_status(env: &Env) -> verda_api::v1alpha1::VirtualMachineGroupStatus {
    let g = env
        .api::<VirtualMachineGroup>()
        .get(GROUP)
        .await
        .expect("group");
    g.status.expect("status")
}

async fn available(env: &Env, n: i32) {
    let api = env.api::<VirtualMachineGroup>();
    eventually(&format!("{n} available replicas"), LIMIT, || async {
        let s = api.get(GROUP).await.ok()?.status?;
        (s.available_replicas == n && s.replicas == n).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_stopped_server_is_started_again_and_halted_keeps_the_same_servers_out_of_the_pools() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env.create_from_yaml(&group_with(2, "")).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    let before = servers(&env);

    // `openstack server stop` behind the operator's back: started again (Always).
    let (id, _) = before[&format!("{GROUP}-0")].clone();
    env.sim.set_server_power(&id, false);
    eventually("the stopped server runs again", LIMIT, || async {
        let now = servers(&env);
        (now[&format!("{GROUP}-0")] == (id.clone(), "ACTIVE".into())).then_some(())
    })
    .await;
    // The event is written after the start it tells of: it may come a moment later.
    env.event_seen_within("Started", LIMIT).await;

    // Halted: every server SHUTOFF, none in any pool, the same servers.
    patch_group(&env, json!({"spec": {"runStrategy": "Halted"}})).await;
    eventually(
        "every server is stopped and out of the pools",
        LIMIT,
        || async {
            let now = servers(&env);
            let stopped = now.values().all(|(_, status)| status == "SHUTOFF");
            let lb = env.sim.load_balancers();
            let empty = lb.first()?.pools.iter().all(|p| p.members.is_empty());
            (stopped && empty && now.len() == 2).then_some(())
        },
    )
    .await;
    let halted = servers(&env);
    let ids = |s: &BTreeMap<String, (String, String)>| -> Vec<String> {
        s.values().map(|(id, _)| id.clone()).collect()
    };
    assert_eq!(ids(&halted), ids(&before), "no server replaced");
    eventually("the group is Ready, halted", LIMIT, || async {
        let s = group_status(&env).await;
        let ready = find_condition(&s.conditions, "Ready")?;
        (ready.status == "True").then_some(())
    })
    .await;

    // Always again: the same servers run and serve.
    patch_group(&env, json!({"spec": {"runStrategy": "Always"}})).await;
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    let back = servers(&env);
    assert_eq!(ids(&back), ids(&before), "the same servers came back");
    assert!(back.values().all(|(_, status)| status == "ACTIVE"));
}

#[tokio::test]
async fn an_unhealthy_replica_is_replaced_but_not_when_too_many_are() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    // A short progress deadline: replicas failing with the template unchanged are the
    // healer's concern, never a rollout's deadline.
    let healing = "  progressDeadlineSeconds: 1\n  autoHealing:\n    unhealthyAfter: 1s\n    maxUnhealthy: 1\n";
    let _: VirtualMachineGroup = env.create_from_yaml(&group_with(4, healing)).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "8/8").await;
    available(&env, 4).await;
    let before = servers(&env);

    // Two unhealthy of four, more than maxUnhealthy: none replaced, the group says why.
    let (one, _) = before[&format!("{GROUP}-1")].clone();
    let (two, _) = before[&format!("{GROUP}-2")].clone();
    // Their services stop answering: the health monitors mark their members ERROR.
    env.sim.set_service_answering(&one, false);
    env.sim.set_service_answering(&two, false);
    let stalled = eventually("Stalled TooManyUnhealthy", LIMIT, || async {
        let s = group_status(&env).await;
        let c = find_condition(&s.conditions, "Stalled")?.clone();
        let ready = find_condition(&s.conditions, "Ready")?;
        (c.status == "True" && c.reason == "TooManyUnhealthy" && ready.status == "False")
            .then_some(c)
    })
    .await;
    assert!(
        stalled.message.contains("virtualmachinegroup-sample-1"),
        "{}",
        stalled.message
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(servers(&env).len(), 4);
    assert_eq!(servers(&env)[&format!("{GROUP}-1")].0, one, "not replaced");

    // One of four: replaced after unhealthyAfter, same index, a new server.
    env.sim.set_service_answering(&two, true);
    let replaced = eventually("replica 1 is replaced", LIMIT, || async {
        let now = servers(&env);
        let (id, status) = now.get(&format!("{GROUP}-1"))?.clone();
        (id != one && status == "ACTIVE").then_some(id)
    })
    .await;
    assert_ne!(replaced, one);
    assert_eq!(
        servers(&env)[&format!("{GROUP}-2")].0,
        two,
        "the recovered one is kept"
    );
    env.event_seen("Healing").await;
    available(&env, 4).await;
    let s = group_status(&env).await;
    assert_eq!(s.unhealthy_replicas, 0);
    let health = s
        .replica_health
        .iter()
        .find(|h| h.name == format!("{GROUP}-1"))
        .expect("replica 1's health");
    assert_eq!((health.state.as_str(), health.replacements), ("Healthy", 1));
}

#[tokio::test]
async fn a_rollout_that_never_progresses_stops_keeps_the_old_replicas_and_a_revert_ends_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&group_with(4, "  progressDeadlineSeconds: 3\n"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready("loadbalancer-sample", "8/8").await;
    available(&env, 4).await;
    let before = servers(&env);

    patch_group(
        &env,
        json!({"spec": {"template": {"flavor": "no-such-flavor"}}}),
    )
    .await;
    let stalled = eventually("Stalled ProgressDeadlineExceeded", LIMIT, || async {
        let s = group_status(&env).await;
        let c = find_condition(&s.conditions, "Stalled")?.clone();
        (c.status == "True" && c.reason == "ProgressDeadlineExceeded").then_some(c)
    })
    .await;
    assert!(
        stalled.message.contains("no progress"),
        "{}",
        stalled.message
    );
    env.event_seen("ProgressDeadlineExceeded").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let now = servers(&env);
    for (name, (id, _)) in &before {
        assert_eq!(now.get(name).map(|(i, _)| i), Some(id), "{name} kept");
    }
    let vms = env
        .api::<VirtualMachine>()
        .list(&ListParams::default())
        .await
        .expect("vms");
    assert!(
        vms.items.len() <= 5,
        "at most maxSurge (1) new replica tried"
    );
    env.load_balancer_ready("loadbalancer-sample", "8/8").await;

    // Revert: the old replicas are current again, none replaced.
    patch_group(
        &env,
        json!({"spec": {"template": {"flavor": "n3-1vcpu-2gb"}}}),
    )
    .await;
    eventually("the rollout ended", LIMIT, || async {
        let s = group_status(&env).await;
        let ready = find_condition(&s.conditions, "Ready")?;
        let vms = env
            .api::<VirtualMachine>()
            .list(&ListParams::default())
            .await
            .ok()?;
        let stalled = find_condition(&s.conditions, "Stalled").is_some();
        (ready.status == "True" && !stalled && s.updated_replicas == 4 && vms.items.len() == 4)
            .then_some(())
    })
    .await;
    assert_eq!(servers(&env), before, "the old servers, untouched");
}

#[tokio::test]
async fn a_partition_updates_only_the_indices_from_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&group_with(4, "  rollingUpdate:\n    partition: 3\n"))
        .await;
    available(&env, 4).await;
    let before = servers(&env);
    patch_group(
        &env,
        json!({"spec": {"template": {"description": "version 2"}}}),
    )
    .await;
    eventually("index 3 runs the new template", LIMIT, || async {
        let s = group_status(&env).await;
        (s.updated_replicas == 1 && s.available_replicas == 4).then_some(())
    })
    .await;
    let vms = env
        .api::<VirtualMachine>()
        .list(&ListParams::default())
        .await
        .expect("vms");
    let updated: Vec<String> = vms
        .items
        .iter()
        .filter(|vm| vm.spec.description.as_deref() == Some("version 2"))
        .map(|vm| vm.labels()[labels::INDEX].clone())
        .collect();
    assert_eq!(updated, vec!["3".to_owned()]);
    let now = servers(&env);
    for i in 0..3 {
        let name = format!("{GROUP}-{i}");
        assert_eq!(now[&name].0, before[&name].0, "{name} untouched");
    }
    assert_ne!(
        now[&format!("{GROUP}-3")].0,
        before[&format!("{GROUP}-3")].0
    );
    let s = group_status(&env).await;
    assert!(find_condition(&s.conditions, "Ready").is_some_and(|c| c.status == "True"));
}
