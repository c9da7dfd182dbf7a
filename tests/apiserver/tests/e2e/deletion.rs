//! Finalizers, DELETE answers, preconditions, propagation policies and the garbage collector
//! (kube-wire `deletion.md`).

use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, Preconditions, PropagationPolicy};
use serde_json::json;

use crate::support::*;

const FIN: &str = "virtualmachine.verda.linecorp.com/finalizer";

#[tokio::test]
async fn delete_with_a_finalizer_marks_the_object_and_the_last_finalizer_removes_it() {
    let (_s, c) = start().await;
    let api = vms(&c);
    let mut o = vm("vm-f");
    o.metadata.finalizers = Some(vec![FIN.into()]);
    create(&api, o).await;
    let marked = api
        .delete("vm-f", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("object while finalizers are pending");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.generation, Some(2));
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    let again = api
        .delete("vm-f", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(rv(&again), rv(&marked), "a repeated DELETE changes nothing");
    let s = status(
        api.patch(
            "vm-f",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [FIN, "other.verda.linecorp.com/x"]}})),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert!(
        s.message
            .contains("no new finalizers can be added if the object is being deleted")
    );
    api.patch_status(
        "vm-f",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Deleting"}})),
    )
    .await
    .unwrap();
    let ops: json_patch::Patch = serde_json::from_value(json!([{"op": "test", "path": "/metadata/finalizers/0", "value": FIN}, {"op": "remove", "path": "/metadata/finalizers/0"}])).unwrap();
    api.patch("vm-f", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .unwrap();
    assert!(api.get_opt("vm-f").await.unwrap().is_none());
}

#[tokio::test]
async fn delete_without_finalizers_answers_a_success_status_with_the_plural_and_uid() {
    let (_s, c) = start().await;
    let api = vms(&c);
    let created = create(&api, vm("vm-plain")).await;
    let s = api
        .delete("vm-plain", &DeleteParams::default())
        .await
        .unwrap()
        .right()
        .expect("Status");
    let d = s.details.unwrap();
    assert_eq!(
        (d.name.as_str(), d.kind.as_str(), d.group.as_str()),
        ("vm-plain", "virtualmachines", "verda.linecorp.com")
    );
    assert_eq!(Some(d.uid), created.metadata.uid);
    let s = status(api.delete("vm-plain", &DeleteParams::default()).await);
    assert_eq!(s.code, 404);
}

#[tokio::test]
async fn a_mismatching_uid_precondition_is_a_409() {
    let (_s, c) = start().await;
    let api = vms(&c);
    create(&api, vm("vm-pre")).await;
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("00000000-0000-0000-0000-000000000000".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let s = status(api.delete("vm-pre", &dp).await);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(s.message.contains(
        "the UID in the precondition (00000000-0000-0000-0000-000000000000) does not match"
    ));
}

async fn owner_and_dependent(
    c: &kube::Client,
    owner: &str,
    dep: &str,
    dep_finalizer: bool,
) -> (DynamicObject, Api<DynamicObject>) {
    let g = create(&vmgs(c), vmg(owner, 1)).await;
    let mut d = vm(dep);
    d.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "verda.linecorp.com/v1alpha1".into(),
            kind: "VirtualMachineGroup".into(),
            name: owner.into(),
            uid: g.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    if dep_finalizer {
        d.metadata.finalizers = Some(vec![FIN.into()]);
    }
    create(&vms(c), d).await;
    (g, vms(c))
}

async fn eventually_gone(api: &Api<DynamicObject>, name: &str) -> bool {
    for _ in 0..50 {
        if api.get_opt(name).await.unwrap().is_none() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn background_deletion_collects_dependents_after_the_owner_is_gone() {
    let (_s, c) = start().await;
    let (_, deps) = owner_and_dependent(&c, "g-bg", "vm-bg", false).await;
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    assert!(vmgs(&c).delete("g-bg", &dp).await.unwrap().is_right());
    assert!(eventually_gone(&deps, "vm-bg").await);
}

#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone() {
    let (_s, c) = start().await;
    let (_, deps) = owner_and_dependent(&c, "g-fg", "vm-fg", true).await;
    let owner = vmgs(&c)
        .delete("g-fg", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .expect("owner object");
    assert_eq!(owner.metadata.finalizers.unwrap(), ["foregroundDeletion"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let dep = deps.get("vm-fg").await.unwrap();
    assert!(
        dep.metadata.deletion_timestamp.is_some(),
        "the dependent is being deleted"
    );
    assert!(
        vmgs(&c).get_opt("g-fg").await.unwrap().is_some(),
        "the owner waits for the dependent's finalizer"
    );
    deps.patch(
        "vm-fg",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(eventually_gone(&vmgs(&c), "g-fg").await);
}

#[tokio::test]
async fn orphan_deletion_strips_owner_references_and_keeps_dependents() {
    let (_s, c) = start().await;
    let (_, deps) = owner_and_dependent(&c, "g-or", "vm-or", false).await;
    let owner = vmgs(&c)
        .delete("g-or", &DeleteParams::orphan())
        .await
        .unwrap()
        .left()
        .expect("owner object");
    assert_eq!(owner.metadata.finalizers.unwrap(), ["orphan"]);
    assert!(eventually_gone(&vmgs(&c), "g-or").await);
    let dep = deps.get("vm-or").await.unwrap();
    assert!(dep.metadata.owner_references.is_none());
}

#[tokio::test]
async fn delete_collection_deletes_the_selected_objects_and_lists_them() {
    let (_s, c) = start().await;
    let api = vms(&c);
    for (n, batch) in [("vm-dc1", "dc"), ("vm-dc2", "dc"), ("vm-keep", "other")] {
        let mut o = vm(n);
        o.metadata.labels = Some([("batch".to_string(), batch.to_string())].into());
        create(&api, o).await;
    }
    let out = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("batch=dc"),
        )
        .await
        .unwrap();
    let deleted = out.left().expect("list of deleted objects");
    assert_eq!(deleted.items.len(), 2);
    let left = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(left.items.len(), 1);
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents_then_the_namespace() {
    let (server, c) = start().await;
    let cluster = verda_test_apiserver::TestCluster::with_server(server).unwrap();
    let ns = cluster.namespace("e2e-").await.unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), &ns, &vm_resource());
    create(&api, vm("inside")).await;
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    let terminating = nss
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert!(eventually_gone(&api, "inside").await);
    for _ in 0..50 {
        if nss.get_opt(&ns).await.unwrap().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("namespace {ns} was not removed");
}

fn vm_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("verda.linecorp.com", "v1alpha1", "VirtualMachine"),
        "virtualmachines",
    )
}
