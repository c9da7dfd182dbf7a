//! `/status` and `/scale` (kube-wire `subresources.md`).

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn status_writes_ignore_spec_and_main_writes_ignore_status() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    create(&api, vmg("g1", 7)).await;
    let pp = PatchParams::default();
    let st = api
        .patch_status(
            "g1",
            &pp,
            &Patch::Merge(json!({"spec": {"replicas": 0}, "status": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            st.data["spec"]["replicas"].as_i64(),
            st.data["status"]["replicas"].as_i64()
        ),
        (Some(7), Some(2))
    );
    assert_eq!(st.metadata.generation, Some(1));
    let main = api
        .patch(
            "g1",
            &pp,
            &Patch::Merge(json!({"spec": {"replicas": 6}, "status": {"replicas": 99}})),
        )
        .await
        .unwrap();
    assert_eq!(
        (
            main.data["spec"]["replicas"].as_i64(),
            main.data["status"]["replicas"].as_i64()
        ),
        (Some(6), Some(2))
    );
    assert_eq!(main.metadata.generation, Some(2));
    let mut put = main.clone();
    put.data["status"]["replicas"] = json!(5);
    put.data["spec"]["replicas"] = json!(1);
    let replaced = api
        .replace_status("g1", &PostParams::default(), &put)
        .await
        .unwrap();
    assert_eq!(
        (
            replaced.data["spec"]["replicas"].as_i64(),
            replaced.data["status"]["replicas"].as_i64()
        ),
        (Some(6), Some(5))
    );
}

#[tokio::test]
async fn invalid_status_is_a_422_naming_the_status_field() {
    let (_s, c) = start().await;
    let api = vmgs(&c);
    create(&api, vmg("g1", 1)).await;
    let s = status(
        api.patch_status(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": "two"}})),
        )
        .await,
    );
    assert_eq!(s.code, 422);
    let cause = &s.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldValueTypeInvalid", "status.replicas")
    );
    assert_eq!(
        cause.message,
        "Invalid value: \"string\": replicas in body must be of type integer: \"string\""
    );
}

#[tokio::test]
async fn scale_reads_and_writes_replicas_and_bumps_the_generation() {
    let (server, c) = start().await;
    let api = vmgs(&c);
    create(&api, vmg("g1", 6)).await;
    api.patch_status(
        "g1",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"replicas": 2, "selector": "verda.linecorp.com/group=g1"}}),
        ),
    )
    .await
    .unwrap();
    let scale = api.get_scale("g1").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(6));
    let st = scale.status.unwrap();
    assert_eq!(
        (st.replicas, st.selector.as_deref()),
        (2, Some("verda.linecorp.com/group=g1"))
    );
    let patched = api
        .patch_scale(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(3));
    let g = api.get("g1").await.unwrap();
    assert_eq!(
        (g.data["spec"]["replicas"].as_i64(), g.metadata.generation),
        (Some(3), Some(2))
    );
    let raw = Raw::new(&server);
    let stale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "g1", "namespace": "default", "resourceVersion": "1"}, "spec": {"replicas": 4}});
    let (code, s) = raw
        .json("PUT", &format!("{VMGS}/g1/scale"), Some(stale.clone()))
        .await;
    assert_eq!((code, s["reason"].as_str()), (409, Some("Conflict")));
    let mut fresh = stale;
    fresh["metadata"]["resourceVersion"] = json!(g.metadata.resource_version.unwrap());
    let (code, s) = raw
        .json("PUT", &format!("{VMGS}/g1/scale"), Some(fresh))
        .await;
    assert_eq!((code, s["spec"]["replicas"].as_i64()), (200, Some(4)));
    let (code, _, body) = raw
        .send(
            "PATCH",
            &format!("{VMGS}/g1/scale"),
            "application/merge-patch+json",
            Some(json!({"spec": {"replicas": -1}})),
        )
        .await;
    assert_eq!(code, 422);
    let s: serde_json::Value = serde_json::from_str(&body).unwrap();
    let fields: Vec<&str> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(&fields[..2], ["spec.replicas", ".spec.replicas"]);
}
