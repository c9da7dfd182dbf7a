//! VirtualMachineGroup end to end: the published manifest gives a soft-anti-affinity
//! server group and two owned VirtualMachines; the scale subresource scales it up and
//! down; deleting it removes the VirtualMachines, their servers and the server group.

use crate::support;

use std::time::Duration;

use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup, labels};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);
const NAME: &str = "virtualmachinegroup-sample";

async fn wait_ready_replicas(env: &Env, n: i32) -> VirtualMachineGroup {
    let api = env.api::<VirtualMachineGroup>();
    eventually(&format!("{n} ready replicas"), LIMIT, || async {
        let g = api.get(NAME).await.ok()?;
        let s = g.status.clone()?;
        (s.ready_replicas == n && s.replicas == n).then_some(g)
    })
    .await
}

fn live_servers(env: &Env) -> Vec<verda_operator::sim::SimServer> {
    env.sim.live_servers()
}

#[tokio::test]
async fn published_group_scales_through_the_scale_subresource_and_cleans_up() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let group: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let ready = wait_ready_replicas(&env, 2).await;
    let status = ready.status.expect("status");
    assert_eq!(status.updated_replicas, 2);
    assert_eq!(
        status.selector.as_deref(),
        Some("verda.linecorp.com/group=virtualmachinegroup-sample")
    );
    let sg_id = status.server_group_id.clone().expect("server group");
    let groups = env.sim.server_groups();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].id, sg_id);
    assert_eq!(groups[0].policy, "soft-anti-affinity");

    let vms = env
        .api::<VirtualMachine>()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    let mut names: Vec<String> = vms.iter().filter_map(|v| v.metadata.name.clone()).collect();
    names.sort();
    assert_eq!(names, [format!("{NAME}-0"), format!("{NAME}-1")]);
    for vm in &vms {
        let owner = &vm.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!(owner.controller, Some(true));
        assert_eq!(Some(&owner.uid), group.metadata.uid.as_ref());
        assert_eq!(
            vm.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::GROUP))
                .map(String::as_str),
            Some(NAME)
        );
    }
    let servers = live_servers(&env);
    assert_eq!(servers.len(), 2);
    assert!(
        servers
            .iter()
            .all(|s| s.server_group.as_deref() == Some(sg_id.as_str())),
        "{servers:?}"
    );

    // kubectl scale vmg/NAME --replicas=3 patches the scale subresource.
    let api = env.api::<VirtualMachineGroup>();
    api.patch_scale(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 3}})),
    )
    .await
    .expect("scale accepted");
    wait_ready_replicas(&env, 3).await;
    assert_eq!(live_servers(&env).len(), 3);

    // Editing replicas works as well; the newest goes first.
    api.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("edit accepted");
    wait_ready_replicas(&env, 1).await;
    let left = env
        .api::<VirtualMachine>()
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    let left: Vec<_> = left
        .iter()
        .filter(|v| v.metadata.deletion_timestamp.is_none())
        .collect();
    assert_eq!(left.len(), 1);
    assert_eq!(
        left[0].metadata.name.as_deref(),
        Some(&*format!("{NAME}-0"))
    );
    eventually("servers follow the scale-down", LIMIT, || async {
        (live_servers(&env).len() == 1).then_some(())
    })
    .await;

    api.delete(NAME, &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("the group is gone", LIMIT, || async {
        api.get_opt(NAME).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(live_servers(&env).is_empty());
    assert!(env.sim.server_groups().is_empty(), "server group deleted");
}

#[tokio::test]
async fn hard_anti_affinity_beyond_the_host_count_reports_how_many_could_not_be_placed() {
    // The simulator has 3 hypervisors; 4 replicas cannot all be apart.
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = sample("virtualmachinegroup.yaml")
        .replace("replicas: 2", "replicas: 4")
        .replace("haPolicy: \"soft\"", "haPolicy: \"hard\"");
    let _: VirtualMachineGroup = env.create_from_yaml(&manifest).await;
    let api = env.api::<VirtualMachineGroup>();
    let condition = eventually("the group reports NoValidHost", LIMIT, || async {
        let g = api.get(NAME).await.ok()?;
        let s = g.status?;
        let c = verda_api::conditions::find_condition(&s.conditions, "Ready")?.clone();
        (c.reason == "NoValidHost" && s.ready_replicas == 3).then_some(c)
    })
    .await;
    assert_eq!(condition.status, "False");
    assert!(
        condition
            .message
            .starts_with("1 of 4 VirtualMachines could not be placed"),
        "{}",
        condition.message
    );
    assert_eq!(env.sim.server_groups()[0].policy, "anti-affinity");
}

fn index_label(vm: &VirtualMachine) -> Option<String> {
    vm.metadata.labels.as_ref()?.get(labels::INDEX).cloned()
}

#[tokio::test]
async fn replicas_carry_their_index_label_and_an_unlabelled_one_is_labelled_in_place() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    wait_ready_replicas(&env, 2).await;
    let vms = env.api::<VirtualMachine>();
    for index in 0..2 {
        let vm = vms.get(&format!("{NAME}-{index}")).await.expect("replica");
        assert_eq!(index_label(&vm), Some(index.to_string()), "{vm:?}");
    }

    // A replica as an earlier release made it: no index label. The group labels it in
    // place; the VirtualMachine and its server are the same.
    let name = format!("{NAME}-1");
    let before = vms.get(&name).await.expect("replica");
    let servers_before = live_servers(&env);
    let unlabel = json!({"metadata": {"labels": {labels::INDEX: null}}});
    vms.patch(&name, &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .expect("label taken off");
    let after = eventually("the index label back on the replica", LIMIT, || async {
        let vm = vms.get(&name).await.ok()?;
        (index_label(&vm).as_deref() == Some("1")).then_some(vm)
    })
    .await;
    assert_eq!(after.metadata.uid, before.metadata.uid, "not replaced");
    let mut ids: Vec<String> = live_servers(&env).into_iter().map(|s| s.id).collect();
    let mut ids_before: Vec<String> = servers_before.into_iter().map(|s| s.id).collect();
    ids.sort();
    ids_before.sort();
    assert_eq!(ids, ids_before, "no server replaced");
}
