//! Schema validation, defaulting, pruning and CEL rules (kube-wire `crud-errors.md`).

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn schema_violations_are_all_reported_in_one_422_like_the_apiserver() {
    let (server, _c) = start().await;
    let body = json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup", "metadata": {"name": "bad-schema"},
                      "spec": {"replicas": -1, "haPolicy": "sometimes", "template": {"image": "centos79"}}});
    let (code, s) = Raw::new(&server).json("POST", VMGS, Some(body)).await;
    assert_eq!(code, 422);
    assert_eq!(s["details"]["kind"], "VirtualMachineGroup");
    assert_eq!(
        s["details"]["causes"],
        json!([
            {"reason": "FieldValueNotSupported", "message": "Unsupported value: \"sometimes\": supported values: \"soft\", \"hard\", \"none\"", "field": "spec.haPolicy"},
            {"reason": "FieldValueInvalid", "message": "Invalid value: -1: spec.replicas in body should be greater than or equal to 0", "field": "spec.replicas"},
            {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.template.flavor"},
            {"reason": "FieldValueInvalid", "message": "Invalid value: -1: should be a non-negative integer", "field": ".spec.replicas"},
            {"reason": "FieldValueInvalid", "message": "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation", "field": "<nil>"},
        ])
    );
    assert!(s["message"].as_str().unwrap().starts_with("VirtualMachineGroup.verda.linecorp.com \"bad-schema\" is invalid: [spec.haPolicy: Unsupported value"));
}

#[tokio::test]
async fn a_failing_cel_rule_is_a_422_at_the_field_carrying_the_rule() {
    let (_s, c) = start().await;
    let mut g = vmg("bad-cel", 9);
    g.data["spec"]["haPolicy"] = json!("hard");
    let s = status(vmgs(&c).create(&PostParams::default(), &g).await);
    assert_eq!(s.code, 422);
    assert_eq!(
        s.message,
        "VirtualMachineGroup.verda.linecorp.com \"bad-cel\" is invalid: spec: Invalid value: haPolicy hard allows at most 8 replicas"
    );
}

#[tokio::test]
async fn a_transition_rule_rejects_changing_an_immutable_field_on_update_only() {
    let (_s, c) = start().await;
    let api = vms(&c);
    create(&api, vm("vm-a")).await;
    let s = status(
        api.patch(
            "vm-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "ubuntu22"}})),
        )
        .await,
    );
    assert_eq!(s.code, 422);
    assert_eq!(
        s.message,
        "VirtualMachine.verda.linecorp.com \"vm-a\" is invalid: spec.image: Invalid value: \"ubuntu22\": image is immutable"
    );
    let cause = &s.details.unwrap().causes[0];
    assert_eq!(
        (cause.field.as_str(), cause.reason.as_str()),
        ("spec.image", "FieldValueInvalid")
    );
}

#[tokio::test]
async fn defaults_from_the_schema_are_applied_on_create() {
    let (_s, c) = start().await;
    let mut g = vmg("g", 1);
    g.data["spec"].as_object_mut().unwrap().remove("replicas");
    let created = create(&vmgs(&c), g).await;
    assert_eq!(
        (
            created.data["spec"]["replicas"].as_i64(),
            created.data["spec"]["haPolicy"].as_str()
        ),
        (Some(1), Some("soft"))
    );
}

#[tokio::test]
async fn string_length_limits_are_enforced() {
    let (_s, c) = start().await;
    let mut o = vm("vm-long");
    o.data["spec"]["description"] = json!("x".repeat(256));
    o.data["spec"]["flavor"] = json!("");
    let s = status(vms(&c).create(&PostParams::default(), &o).await);
    let causes = s.details.unwrap().causes;
    let got: Vec<(&str, &str)> = causes
        .iter()
        .map(|c| (c.reason.as_str(), c.field.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("FieldValueTooLong", "spec.description"),
            ("FieldValueInvalid", "spec.flavor"),
            ("FieldValueInvalid", "<nil>")
        ]
    );
}

#[tokio::test]
async fn unknown_fields_are_pruned_with_a_warning_or_refused_when_strict() {
    let (server, c) = start().await;
    let raw = Raw::new(&server);
    let mut body = json_of(&vm("vm-unknown"));
    body["spec"]["colour"] = json!("blue");
    let (code, headers, text) = raw
        .send("POST", VMS, "application/json", Some(body.clone()))
        .await;
    assert_eq!(code, 201, "{text}");
    assert_eq!(
        headers["warning"],
        "299 - \"unknown field \\\"spec.colour\\\"\""
    );
    assert!(
        vms(&c).get("vm-unknown").await.unwrap().data["spec"]
            .get("colour")
            .is_none()
    );
    body["metadata"]["name"] = json!("vm-strict");
    let (code, s) = raw
        .json("POST", &format!("{VMS}?fieldValidation=Strict"), Some(body))
        .await;
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "VirtualMachine in version \"v1alpha1\" cannot be handled as a VirtualMachine: strict decoding error: unknown field \"spec.colour\""
    );
}

#[tokio::test]
async fn malformed_json_is_400_and_a_mismatched_kind_is_422() {
    let (server, _c) = start().await;
    let raw = Raw::new(&server);
    let req = raw
        .http
        .post(format!("{}{VMS}", raw.base))
        .header("content-type", "application/json")
        .body("{\"apiVersion\": \"verda.linecorp.com/v1alpha1\", ");
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let s: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(s["reason"], "BadRequest");
    let mut body = json_of(&vm("vm-wrongkind"));
    body["kind"] = json!("LoadBalancer");
    let (code, s) = raw.json("POST", VMS, Some(body)).await;
    assert_eq!(code, 422);
    assert_eq!(
        s["message"],
        "LoadBalancer.verda.linecorp.com \"vm-wrongkind\" is invalid: kind: Invalid value: \"LoadBalancer\": must be VirtualMachine"
    );
}

#[tokio::test]
async fn names_and_label_values_must_have_the_kubernetes_formats() {
    let (_s, c) = start().await;
    let s = status(vms(&c).create(&PostParams::default(), &vm("Vm_A")).await);
    assert_eq!(
        (s.code, s.details.unwrap().causes[0].field.as_str()),
        (422, "metadata.name")
    );
    let mut o = vm("vm-a");
    o.metadata.labels = Some([("verda.linecorp.com/group".to_string(), "g".repeat(64))].into());
    let s = status(vms(&c).create(&PostParams::default(), &o).await);
    assert_eq!(s.code, 422);
    assert!(s.message.ends_with("metadata.labels: Invalid value: \"gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg\": must be no more than 63 characters"), "{}", s.message);
}
