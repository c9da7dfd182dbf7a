//! Merge patch, JSON patch and server-side apply (kube-wire `patches.md`, `ssa.md`).

use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn merge_patch_deletes_keys_with_null_and_replaces_lists_whole() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    let mut g = vmg("g1", 2);
    g.data["spec"]["description"] = json!("web tier");
    g.metadata.finalizers = Some(vec!["a.verda.linecorp.com/x".into()]);
    create(&api, g).await;
    let patch = json!({"spec": {"description": null}, "metadata": {"finalizers": ["b.verda.linecorp.com/y", "c.verda.linecorp.com/z"]}});
    let out = api
        .patch("g1", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    assert!(out.data["spec"].get("description").is_none());
    assert_eq!(
        out.metadata.finalizers.unwrap(),
        ["b.verda.linecorp.com/y", "c.verda.linecorp.com/z"]
    );
    assert_eq!(
        out.data["spec"]["haPolicy"], "soft",
        "schema default applied on create survives"
    );
}

#[tokio::test]
async fn a_resource_version_inside_a_merge_patch_is_a_precondition() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    create(&api, vmg("g1", 2)).await;
    let s = status(
        api.patch(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 4}})),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
}

#[tokio::test]
async fn json_patch_applies_escaped_paths_and_a_failed_test_op_is_a_generic_422() {
    let (server, c) = start().await;
    let api = vmgs(&c);
    let mut g = vmg("g1", 2);
    g.metadata.finalizers = Some(vec!["a/x".into(), "b/y".into()]);
    create(&api, g).await;
    let ops = json!([
        {"op": "replace", "path": "/spec/replicas", "value": 4},
        {"op": "add", "path": "/metadata/labels", "value": {}},
        {"op": "add", "path": "/metadata/labels/verda.linecorp.com~1group", "value": "g1"},
        {"op": "test", "path": "/metadata/finalizers/0", "value": "a/x"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]);
    let out = api
        .patch(
            "g1",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(ops).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["replicas"], 4);
    assert_eq!(
        out.metadata.labels.clone().unwrap()["verda.linecorp.com/group"],
        "g1"
    );
    assert_eq!(out.metadata.finalizers.clone().unwrap(), ["b/y"]);
    let before = rv(&out);
    let raw = Raw::new(&server);
    let bad = json!([{"op": "test", "path": "/spec/replicas", "value": 99}, {"op": "replace", "path": "/spec/replicas", "value": 5}]);
    let (code, _, body) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g1"),
            "application/json-patch+json",
            Some(bad),
        )
        .await;
    assert_eq!(code, 422);
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        s["message"],
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(s["details"], json!({}));
    assert_eq!(
        rv(&api.get("g1").await.unwrap()),
        before,
        "a failed patch changes nothing"
    );
}

#[tokio::test]
async fn strategic_merge_on_a_custom_resource_is_415_and_force_on_a_merge_patch_is_422() {
    let (server, c) = start().await;
    create(&vmgs(&c), vmg("g1", 2)).await;
    let raw = Raw::new(&server);
    let (code, _, body) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g1"),
            "application/strategic-merge-patch+json",
            Some(json!({"spec": {"replicas": 5}})),
        )
        .await;
    assert_eq!(code, 415);
    assert!(body.contains("UnsupportedMediaType"));
    let (code, _, body) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g1?force=true"),
            "application/merge-patch+json",
            Some(json!({"spec": {"replicas": 5}})),
        )
        .await;
    assert_eq!(code, 422);
    assert!(body.contains("PatchOptions.meta.k8s.io \\\"\\\" is invalid: force: Forbidden: may not be specified for non-apply patch"), "{body}");
}

fn apply_body(replicas: i64) -> serde_json::Value {
    json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup", "metadata": {"name": "g1"},
           "spec": {"replicas": replicas, "template": {"image": "centos79", "flavor": "n3-1vcpu-2gb"}}})
}

#[tokio::test]
async fn server_side_apply_creates_a_missing_object_and_records_an_apply_manager() {
    let (server, c) = start().await;
    let raw = Raw::new(&server);
    let (code, _, body) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g1?fieldManager=verda-operator"),
            "application/apply-patch+yaml",
            Some(apply_body(2)),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let g = vmgs(&c).get("g1").await.unwrap();
    let mf = g.metadata.managed_fields.unwrap();
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("verda-operator"), Some("Apply"))
    );
    assert_eq!(g.data["spec"]["haPolicy"], "soft");
    let (code, _, _) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g-none"),
            "application/merge-patch+json",
            Some(json!({"spec": {}})),
        )
        .await;
    assert_eq!(code, 404, "merge patches do not create");
    let (code, _, body) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g1"),
            "application/apply-patch+yaml",
            Some(apply_body(2)),
        )
        .await;
    assert_eq!(code, 422);
    assert!(body.contains("fieldManager: Required value: is required for apply patch"));
}

#[tokio::test]
async fn apply_conflicts_with_another_managers_field_unless_forced() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    api.patch(
        "g1",
        &PatchParams::apply("verda-operator"),
        &Patch::Apply(apply_body(5)),
    )
    .await
    .unwrap();
    let yaml = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata:\n  name: g1\nspec:\n  replicas: 7\n";
    let value: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    let s = status(
        api.patch(
            "g1",
            &PatchParams::apply("someone-else"),
            &Patch::Apply(&value),
        )
        .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Apply failed with 1 conflict: conflict with \"verda-operator\": .spec.replicas"
    );
    let d = s.details.unwrap();
    assert!(d.name.is_empty() && d.kind.is_empty());
    assert_eq!(
        (d.causes[0].reason.as_str(), d.causes[0].field.as_str()),
        ("FieldManagerConflict", ".spec.replicas")
    );
    let same = api
        .patch(
            "g1",
            &PatchParams::apply("someone-else"),
            &Patch::Apply(apply_body(5)),
        )
        .await;
    assert!(
        same.is_ok(),
        "applying the owner's value is shared ownership, not a conflict"
    );
    let forced = api
        .patch(
            "g1",
            &PatchParams::apply("someone-else").force(),
            &Patch::Apply(&value),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["replicas"], 7);
    let s = status(
        api.patch(
            "g1",
            &PatchParams::apply("verda-operator"),
            &Patch::Apply(apply_body(5)),
        )
        .await,
    );
    assert_eq!(s.code, 409, "ownership moved to someone-else");
}

#[tokio::test]
async fn apply_conflicts_with_update_managers_and_names_their_api_version() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    create(&api, vmg("g1", 2)).await;
    let s = status(
        api.patch(
            "g1",
            &PatchParams::apply("verda-operator"),
            &Patch::Apply(apply_body(3)),
        )
        .await,
    );
    assert_eq!(
        s.message,
        "Apply failed with 1 conflict: conflict with \"unknown\" using verda.linecorp.com/v1alpha1: .spec.replicas"
    );
}

#[tokio::test]
async fn apply_removes_fields_the_manager_no_longer_applies() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    let pp = PatchParams::apply("verda-operator");
    let mut body = apply_body(2);
    body["metadata"]["labels"] = json!({"a": "1", "b": "2"});
    body["spec"]["description"] = json!("x");
    api.patch("g1", &pp, &Patch::Apply(&body)).await.unwrap();
    body["metadata"]["labels"] = json!({"a": "1"});
    body["spec"].as_object_mut().unwrap().remove("description");
    let out = api.patch("g1", &pp, &Patch::Apply(&body)).await.unwrap();
    assert_eq!(out.metadata.labels.unwrap().len(), 1);
    assert!(out.data["spec"].get("description").is_none());
}

#[tokio::test]
async fn controllers_apply_finalizers_and_status_with_their_field_manager() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    let mut g = vmg("g1", 2);
    g.metadata.finalizers = Some(vec!["user/keep".into()]);
    create(&api, g).await;
    let pp = PatchParams::apply("verda-operator").force();
    let fin = json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup", "metadata": {"name": "g1", "finalizers": ["virtualmachinegroup.verda.linecorp.com/finalizer"]}});
    let out = api.patch("g1", &pp, &Patch::Apply(&fin)).await.unwrap();
    assert_eq!(
        out.metadata.finalizers.unwrap(),
        [
            "user/keep",
            "virtualmachinegroup.verda.linecorp.com/finalizer"
        ],
        "finalizers are a set"
    );
    api.patch_status(
        "g1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"selector": "x=y", "observedGeneration": 1}})),
    )
    .await
    .unwrap();
    let st = json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup",
                    "status": {"replicas": 2, "readyReplicas": 2, "conditions": [{"type": "Ready", "status": "True"}]}});
    let out = api
        .patch_status("g1", &pp, &Patch::Apply(&st))
        .await
        .unwrap();
    assert_eq!(out.data["status"]["readyReplicas"], 2);
    assert_eq!(
        out.data["status"]["selector"], "x=y",
        "fields of other managers stay"
    );
    assert_eq!(out.metadata.generation, Some(1));
    let mf = out.metadata.managed_fields.unwrap();
    assert!(
        mf.iter()
            .any(|e| e.manager.as_deref() == Some("verda-operator")
                && e.subresource.as_deref() == Some("status")
                && e.operation.as_deref() == Some("Apply"))
    );
    let cleared = json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup", "metadata": {"name": "g1"}});
    let out = api.patch("g1", &pp, &Patch::Apply(&cleared)).await.unwrap();
    assert_eq!(
        out.metadata.finalizers.unwrap(),
        ["user/keep"],
        "the controller released only its own finalizer"
    );
}

/// A CRD whose `status.conditions` is a map-list keyed by `type`, as the generated CRDs declare it.
const MAP_LIST_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string}
                    reason: {type: string}
"#;

#[tokio::test]
async fn apply_merges_map_lists_by_key_so_managers_own_separate_conditions() {
    let server = verda_test_apiserver::ApiServer::builder()
        .crd_yaml(MAP_LIST_CRD)
        .start()
        .await
        .unwrap();
    let c = server.client().unwrap();
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(c, NS, &ar);
    create(&api, obj(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}))).await;
    let cond = |t: &str, s: &str| json!({"apiVersion": "example.com/v1", "kind": "Widget", "status": {"conditions": [{"type": t, "status": s}]}});
    api.patch_status(
        "w",
        &PatchParams::apply("a").force(),
        &Patch::Apply(cond("Ready", "False")),
    )
    .await
    .unwrap();
    api.patch_status(
        "w",
        &PatchParams::apply("b").force(),
        &Patch::Apply(cond("Synced", "True")),
    )
    .await
    .unwrap();
    let out = api
        .patch_status(
            "w",
            &PatchParams::apply("a").force(),
            &Patch::Apply(cond("Ready", "True")),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "True"}])
    );
    let s = status(
        api.patch_status(
            "w",
            &PatchParams::apply("b"),
            &Patch::Apply(cond("Ready", "Unknown")),
        )
        .await,
    );
    assert_eq!(
        s.details.unwrap().causes[0].field,
        ".status.conditions[{\"type\":\"Ready\"}].status"
    );
}
