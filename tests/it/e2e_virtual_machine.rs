//! VirtualMachine end to end: the published manifest through the API server to an
//! ACTIVE Nova server in the simulator, and back on delete.

use crate::support;

use std::time::Duration;

use kube::ResourceExt;
use kube::api::DeleteParams;
use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::VirtualMachine;
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn published_virtual_machine_becomes_an_active_server_and_is_deleted_with_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let vm: VirtualMachine = env.create_from_yaml(&sample("virtualmachine.yaml")).await;
    let uid = vm.metadata.uid.clone().expect("uid");
    let api = env.api::<VirtualMachine>();

    let ready = eventually("the VirtualMachine is Ready", LIMIT, || async {
        let vm = api.get("vm-sample").await.ok()?;
        let status = vm.status.clone()?;
        is_true(&status.conditions, READY).then_some(vm)
    })
    .await;
    let status = ready.status.expect("status");
    assert_eq!(status.state.as_deref(), Some("ACTIVE"));
    assert_eq!(status.observed_generation, ready.metadata.generation);
    let primary_ip = status.primary_ip.clone().expect("primary IP");
    assert!(!status.addresses.is_empty());

    let servers = env.sim.servers();
    assert_eq!(servers.len(), 1, "exactly one server: {servers:?}");
    let server = &servers[0];
    assert_eq!(Some(server.id.as_str()), status.server_id.as_deref());
    assert_eq!(server.status, "ACTIVE");
    // Nova keeps user data base64-encoded, as it was sent: "ls" is "bHM=".
    assert_eq!(server.user_data.as_deref(), Some("bHM="));
    assert_eq!(server.metadata.get("verda.linecorp.com:uid"), Some(&uid));
    assert_eq!(
        server
            .metadata
            .get("verda.linecorp.com:name")
            .map(String::as_str),
        Some("vm-sample")
    );
    assert_eq!(server.description.as_deref(), Some("generated operator"));
    assert!(server.addresses.contains(&primary_ip));

    api.delete("vm-sample", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("the VirtualMachine is gone", LIMIT, || async {
        api.get_opt("vm-sample").await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(
        env.sim.servers().iter().all(|s| s.deleting),
        "no server left: {:?}",
        env.sim.servers()
    );
}

#[tokio::test]
async fn a_replacement_server_is_built_from_the_references_resolved_for_the_first() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env.create_from_yaml(&sample("virtualmachine.yaml")).await;
    let first = env.ready_vm("vm-sample").await;
    let status = first.status.clone().expect("status");
    let resolved = status.resolved.clone().expect("status.resolved");
    let server = env.sim.servers().remove(0);
    let id = |r: &Option<verda_api::v1alpha1::Resolution>| r.as_ref().map(|r| r.id.clone());
    assert_eq!(id(&resolved.image), Some(server.image_id.clone()));
    assert_eq!(id(&resolved.flavor), Some(server.flavor_id.clone()));
    assert_eq!(
        resolved.image.as_ref().map(|r| r.requested.as_str()),
        Some(first.spec.image.as_str())
    );
    assert!(!resolved.networks.is_empty());

    // The server goes; its replacement needs no lookup: the recorded IDs are used.
    let before = env.sim.request_counts();
    env.sim.delete_server_out_of_band(&server.id);
    let api = env.api::<VirtualMachine>();
    let second = eventually("a replacement server is ACTIVE", LIMIT, || async {
        let vm = api.get("vm-sample").await.ok()?;
        let status = vm.status.clone()?;
        (status.server_id.as_deref() != Some(server.id.as_str())
            && status.state.as_deref() == Some("ACTIVE"))
        .then_some(status)
    })
    .await;
    let calls = support::e2e::calls_since(&env.sim, &before);
    assert_eq!(calls.get("compute/create_server"), Some(&1), "{calls:?}");
    for lookup in [
        "image/list_images",
        "image/get_image",
        "compute/list_flavors",
        "network/list_networks",
    ] {
        assert!(
            !calls.contains_key(lookup),
            "{lookup} on the retry: {calls:?}"
        );
    }
    assert_eq!(second.resolved, Some(resolved));
    let replacement = env
        .sim
        .servers()
        .into_iter()
        .find(|s| !s.deleting)
        .expect("the replacement");
    assert_eq!(replacement.image_id, server.image_id);
}

/// `kubectl apply` records the whole applied object in an annotation: the watch cache
/// keeps no copy of it (no decision reads it), and the operator, which never writes an
/// object whole, leaves it on the object for the next `kubectl apply`.
#[tokio::test]
async fn the_cache_keeps_no_copy_of_kubectl_s_last_applied_record_and_the_object_keeps_it() {
    const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let mut vm: VirtualMachine =
        serde_saphyr::from_str(&sample("virtualmachine.yaml")).expect("sample");
    let record = serde_json::to_string(&vm).expect("json");
    vm.metadata.namespace = Some(env.ns.clone());
    vm.metadata.annotations = Some(
        [
            (LAST_APPLIED.to_owned(), record.clone()),
            ("team".to_owned(), "web".to_owned()),
        ]
        .into(),
    );
    let api = env.api::<VirtualMachine>();
    api.create(&Default::default(), &vm).await.expect("created");
    env.ready_vm("vm-sample").await;

    let cached = env
        .ctx
        .caches
        .current()
        .virtual_machines
        .store
        .get(&kube::runtime::reflector::ObjectRef::new("vm-sample").within(&env.ns))
        .expect("in the cache")
        .unpack()
        .expect("the cached copy decodes");
    let annotations = cached.metadata.annotations.clone().unwrap_or_default();
    assert!(!annotations.contains_key(LAST_APPLIED), "{annotations:?}");
    assert_eq!(annotations.get("team").map(String::as_str), Some("web"));
    // The operator's writes (finalizer, status) went through; the record is untouched.
    let stored = api.get("vm-sample").await.expect("read");
    assert!(stored.finalizers().iter().any(|f| !f.is_empty()));
    assert_eq!(stored.annotations().get(LAST_APPLIED), Some(&record));
}
