//! The controllers reconcile only the namespaces their scope admits, as one of several
//! shards does: nothing of a namespace it does not own, and nothing more of one whose
//! term was closed, until it owns it again.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use kube::Api;
use kube::api::{Patch, PatchParams};
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::VirtualMachine;
use verda_operator::cloud::ids::ServerId;
use verda_operator::leases::assignment::{Assignment, OwnedNamespaces};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(20);

/// An edit that wakes the object's reconcile, as the watch's listing of a namespace
/// taken over does.
async fn touch(api: &Api<VirtualMachine>, round: u32) {
    let patch = serde_json::json!({"metadata": {"annotations": {"test/round": round.to_string()}}});
    api.patch("vm-sample", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotated");
}

/// The server of the Ready VirtualMachine, once Ready with a server other than `not`.
async fn ready_server(api: &Api<VirtualMachine>, not: Option<&str>) -> String {
    eventually(
        "the VirtualMachine is Ready with its server",
        LIMIT,
        || async {
            let status = api.get("vm-sample").await.ok()?.status?;
            let id = status.server_id?;
            (is_true(&status.conditions, READY) && Some(id.as_str()) != not).then_some(id)
        },
    )
    .await
}

#[tokio::test]
async fn only_an_owned_namespace_is_reconciled_and_a_closed_term_writes_nothing_more() {
    let owned = Arc::new(OwnedNamespaces::default());
    let timing = test_timing();
    let scope = Assignment::Owned(owned.clone());
    let env = Env::start_scoped(SimConfig::fast(), timing, scope).await;
    let api = env.api::<VirtualMachine>();
    let _: VirtualMachine = env.create_from_yaml(&sample("virtualmachine.yaml")).await;

    tokio::time::sleep(timing.resync * 2).await;
    let vm = api.get("vm-sample").await.expect("vm");
    assert!(
        vm.status.is_none(),
        "another replica's namespace: no status written"
    );
    assert!(env.sim.servers().is_empty());

    owned.open(&env.ns);
    touch(&api, 1).await;
    let first = ready_server(&api, None).await;

    owned.close(&env.ns, Duration::from_secs(5)).await;
    env.cloud()
        .compute()
        .delete_server(&ServerId::new(&first))
        .await
        .expect("deleted behind the operator's back");
    // Refreshes of the cloud view see it gone and wake the owner: refused.
    tokio::time::sleep(timing.resync * 3).await;
    let live = env.sim.live_servers();
    assert!(live.is_empty(), "healed by a closed term: {live:?}");

    owned.open(&env.ns);
    touch(&api, 2).await;
    let healed = ready_server(&api, Some(&first)).await;
    let live = env.sim.live_servers();
    assert_eq!(live.len(), 1, "exactly one: {live:?}");
    assert_eq!(live[0].id, healed);
}
