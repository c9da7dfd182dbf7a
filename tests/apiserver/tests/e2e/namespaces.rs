//! The NamespaceLifecycle admission plugin: creates (POST, and server-side apply of a missing object) need an
//! existing namespace (404 about the namespace, kube-wire `crud-errors.md`) that is not being deleted (403
//! `NamespaceTerminating`, the plugin's answer), for every namespaced kind.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// (collection path in namespace `ns`, a valid body) for every namespaced kind served.
fn one_of_each_kind(ns: &str) -> Vec<(String, Value)> {
    let event_time = "2026-11-21T06:40:43.123456Z";
    vec![
        (
            format!("/apis/verda.linecorp.com/v1alpha1/namespaces/{ns}/virtualmachines"),
            json_of(&vm("vm-a")),
        ),
        (
            format!("/api/v1/namespaces/{ns}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}}),
        ),
        (
            format!("/api/v1/namespaces/{ns}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "v"}}),
        ),
        (
            format!("/api/v1/namespaces/{ns}/events"),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e-core"}, "type": "Normal", "reason": "R",
                   "message": "m", "involvedObject": {"kind": "VirtualMachine", "name": "vm-a", "namespace": ns}}),
        ),
        (
            format!("/apis/events.k8s.io/v1/namespaces/{ns}/events"),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e-v1"}, "eventTime": event_time,
                   "type": "Normal", "reason": "R", "action": "A", "reportingController": "verda-operator",
                   "reportingInstance": "pod-1", "regarding": {"kind": "VirtualMachine", "name": "vm-a", "namespace": ns}}),
        ),
        (
            format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                   "spec": {"holderIdentity": "pod-1"}}),
        ),
    ]
}

fn namespace_not_found(ns: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("namespaces \"{ns}\" not found"), "reason": "NotFound",
           "details": {"name": ns, "kind": "namespaces"}, "code": 404})
}

async fn apply(raw: &Raw, collection: &str, body: &Value) -> (u16, Value) {
    let name = body["metadata"]["name"].as_str().unwrap();
    let (code, _, text) = raw
        .send(
            "PATCH",
            &format!("{collection}/{name}?fieldManager=test"),
            "application/apply-patch+yaml",
            Some(body.clone()),
        )
        .await;
    (code, serde_json::from_str(&text).unwrap())
}

#[tokio::test]
async fn creating_any_kind_in_a_missing_namespace_is_404_about_the_namespace() {
    let (server, _c) = start().await;
    let raw = Raw::new(&server);
    for (path, body) in one_of_each_kind("no-such-ns") {
        let (code, s) = raw.json("POST", &path, Some(body.clone())).await;
        assert_eq!(
            (code, &s),
            (404, &namespace_not_found("no-such-ns")),
            "POST {path}"
        );
        let (code, s) = apply(&raw, &path, &body).await;
        assert_eq!(
            (code, &s),
            (404, &namespace_not_found("no-such-ns")),
            "apply {path}"
        );
        let (code, list) = raw.json("GET", &path, None).await;
        assert_eq!(
            (code, &list["items"]),
            (200, &json!([])),
            "nothing stored at {path}"
        );
    }
}

#[tokio::test]
async fn the_namespace_is_checked_before_the_object_is_validated() {
    let (server, _c) = start().await;
    let mut invalid = json_of(&vm("Not_A_Name"));
    invalid["spec"] = json!({});
    let (code, s) = Raw::new(&server)
        .json(
            "POST",
            "/apis/verda.linecorp.com/v1alpha1/namespaces/no-such-ns/virtualmachines",
            Some(invalid),
        )
        .await;
    assert_eq!((code, s), (404, namespace_not_found("no-such-ns")));
}

#[tokio::test]
async fn the_four_initial_namespaces_accept_every_kind() {
    let (server, _c) = start().await;
    let raw = Raw::new(&server);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        for (path, body) in one_of_each_kind(ns) {
            let (code, s) = raw.json("POST", &path, Some(body)).await;
            assert_eq!(code, 201, "POST {path}: {s}");
        }
    }
}

fn terminating(resource: &str, group: Option<&str>, name: &str, ns: &str) -> Value {
    let qualified = group.map_or(resource.to_string(), |g| format!("{resource}.{g}"));
    let mut details = json!({"name": name, "kind": resource, "causes": [{"reason": "NamespaceTerminating",
        "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]});
    if let Some(g) = group {
        details["group"] = json!(g);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("{qualified} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"),
           "reason": "Forbidden", "details": details, "code": 403})
}

#[tokio::test]
async fn creating_in_a_terminating_namespace_is_403_but_updates_there_still_work() {
    let (server, _c) = start().await;
    let raw = Raw::new(&server);
    let ns = "doomed";
    let (code, _) = raw
        .json(
            "POST",
            "/api/v1/namespaces",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})),
        )
        .await;
    assert_eq!(code, 201);
    // A finalizer keeps the namespace Terminating while the test creates in it.
    let vms = format!("/apis/verda.linecorp.com/v1alpha1/namespaces/{ns}/virtualmachines");
    let mut held = json_of(&vm("held"));
    held["metadata"]["finalizers"] = json!(["test/hold"]);
    assert_eq!(raw.json("POST", &vms, Some(held)).await.0, 201);
    let (code, deleted) = raw
        .json("DELETE", &format!("/api/v1/namespaces/{ns}"), None)
        .await;
    assert_eq!(
        (code, &deleted["status"]["phase"]),
        (200, &json!("Terminating"))
    );

    let kinds = one_of_each_kind(ns);
    let (cms, cm) = &kinds[1];
    let (code, s) = raw.json("POST", cms, Some(cm.clone())).await;
    assert_eq!((code, s), (403, terminating("configmaps", None, "cm", ns)));
    let (leases, lease) = &kinds[5];
    let (code, s) = apply(&raw, leases, lease).await;
    assert_eq!(
        (code, s),
        (
            403,
            terminating("leases", Some("coordination.k8s.io"), "l", ns)
        )
    );
    // Before the name is generated, the plugin names the object by its prefix.
    let mut generated = json_of(&vm(""));
    generated["metadata"] = json!({"generateName": "vm-"});
    let (code, s) = raw.json("POST", &vms, Some(generated)).await;
    assert_eq!(
        (code, s),
        (
            403,
            terminating("virtualmachines", Some("verda.linecorp.com"), "vm-", ns)
        )
    );

    let (code, _, _) = raw
        .send(
            "PATCH",
            &format!("{vms}/held"),
            "application/merge-patch+json",
            Some(json!({"metadata": {"finalizers": null}})),
        )
        .await;
    assert_eq!(code, 200, "updates in a terminating namespace are allowed");
    for _ in 0..100 {
        if raw
            .json("GET", &format!("/api/v1/namespaces/{ns}"), None)
            .await
            .0
            == 404
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("namespace {ns} was not removed once empty");
}
