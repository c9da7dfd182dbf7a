//! The driver's own duties, against a scripted API server and a cloud that must not be
//! called: the finalizer comes first and is guarded by the resourceVersion, a failure
//! is reported on the object once per change, a terminal one settles the generation,
//! and deleting an object that is not ours, or is paused, makes no cloud call.

use std::sync::Arc;

use kube::runtime::controller::Action;
use serde_json::{Value, json};
use verda_api::v1alpha1::{VirtualMachine, finalizers};

use super::reconcile;
use crate::cloud::CloudServices;
use crate::cloud::owner::ClusterId;
use crate::cloud::{BlockStorage, CloudFuture, Compute, Dns, Firewalls, LoadBalancing, Network};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::runtime::scripted_api::ApiServer;
use crate::runtime::{Context, Timing};

/// A cloud the driver must not reach in these tests.
struct NoCloud;

impl CloudServices for NoCloud {
    fn compute(&self) -> Arc<dyn Compute> {
        panic!("the driver called Nova")
    }
    fn network(&self, _: Option<&str>) -> Arc<dyn Network> {
        panic!("the driver called Neutron")
    }
    fn load_balancing(&self, _: Option<&str>) -> Arc<dyn LoadBalancing> {
        panic!("the driver called Octavia")
    }
    fn dns(&self, _: Option<&str>) -> Arc<dyn Dns> {
        panic!("the driver called Designate")
    }
    fn firewalls(&self, _: Option<&str>) -> Arc<dyn Firewalls> {
        panic!("the driver called Neutron's security groups")
    }
    fn block_storage(&self) -> Arc<dyn BlockStorage> {
        panic!("the driver called Cinder")
    }
    fn project_id(&self) -> CloudFuture<'_, String> {
        panic!("the driver asked Keystone for a project")
    }
}

fn context(server: &ApiServer) -> Arc<Context> {
    let config = Config::default();
    Arc::new(Context::new(
        server.client(),
        config.clone(),
        Metrics::new(),
        Arc::new(NoCloud),
        Timing::from_config(&config),
        ClusterId::new("test").expect("a valid cluster name"),
    ))
}

const VM_PATH: &str = "/apis/verda.linecorp.com/v1alpha1/namespaces/team/virtualmachines/web";

fn vm(extra: Value) -> Arc<VirtualMachine> {
    let mut object = json!({
        "apiVersion": "verda.linecorp.com/v1alpha1",
        "kind": "VirtualMachine",
        "metadata": {"name": "web", "namespace": "team", "uid": "u-1",
                     "resourceVersion": "7", "generation": 3},
        "spec": {"flavor": "m1.small", "image": "cirros"},
    });
    merge(&mut object, extra);
    Arc::new(serde_json::from_value(object).expect("a VirtualMachine"))
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "message": format!("{reason} (scripted)"), "reason": reason, "code": code})
}

/// The finalizer patch answers `code`; everything else succeeds with the object.
fn refusing_finalizer(code: u16, reason: &'static str) -> ApiServer {
    ApiServer::new(move |method, path, _| match (method, path) {
        ("PATCH", VM_PATH) => (code, status(code, reason)),
        _ => (200, serde_json::to_value(&*vm(json!({}))).expect("JSON")),
    })
}

fn condition<'a>(patch: &'a Value, type_: &str) -> Option<&'a Value> {
    patch["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[tokio::test]
async fn the_finalizer_comes_first_guarded_by_the_resource_version() {
    // The copy reconciled is older than the object (409 on the resourceVersion
    // precondition, as the real API server answers a merge patch carrying it): nothing
    // else is done, nothing reported, and the newer copy's event reconciles again.
    let server = refusing_finalizer(409, "Conflict");
    let action = reconcile(vm(json!({})), context(&server))
        .await
        .expect("a stale copy is not a failure");
    assert_eq!(action, Action::await_change());
    assert_eq!(
        server.writes(),
        [format!("PATCH {VM_PATH}")],
        "nothing happens before the finalizer, and no failure is reported"
    );
    assert_eq!(
        server.seen()[0].body,
        json!({"metadata": {
            "resourceVersion": "7",
            "finalizers": [finalizers::VIRTUAL_MACHINE],
        }})
    );
}

#[tokio::test]
async fn a_transient_failure_is_reported_once_and_leaves_the_generation_behind() {
    let server = refusing_finalizer(500, "InternalError");
    let _ = reconcile(vm(json!({})), context(&server)).await;
    assert_eq!(
        server.writes(),
        [
            format!("PATCH {VM_PATH}"),
            format!("PATCH {VM_PATH}/status")
        ]
    );
    let patch = &server.seen()[1].body;
    let ready = condition(patch, "Ready").expect("Ready written");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "KubernetesApiError");
    assert_eq!(
        condition(patch, "Reconciling").expect("Reconciling")["status"],
        "True"
    );
    assert!(condition(patch, "Stalled").is_none());
    assert_eq!(patch["status"]["observedGeneration"], Value::Null);
    let events = server.events();
    assert_eq!(events.len(), 1, "one Warning event: {events:?}");
    assert_eq!(events[0]["type"], "Warning");
    assert_eq!(events[0]["reason"], "KubernetesApiError");

    // The same failure again: status and events already say so.
    let reported = vm(json!({"status": patch["status"].clone()}));
    let again = refusing_finalizer(500, "InternalError");
    let _ = reconcile(reported, context(&again)).await;
    assert_eq!(again.writes(), [format!("PATCH {VM_PATH}")]);
    assert!(
        again.events().is_empty(),
        "no second event for the same failure"
    );
}

#[tokio::test]
async fn missing_rbac_is_terminal_and_settles_the_generation() {
    let server = refusing_finalizer(403, "Forbidden");
    let ctx = context(&server);
    let error = reconcile(vm(json!({})), ctx.clone())
        .await
        .expect_err("refused");
    assert!(error.is_terminal());
    let patch = &server.seen()[1].body;
    assert_eq!(
        condition(patch, "Ready").expect("Ready")["reason"],
        "KubernetesForbidden"
    );
    assert_eq!(
        condition(patch, "Stalled").expect("Stalled")["status"],
        "True"
    );
    assert!(condition(patch, "Reconciling").is_none());
    assert_eq!(patch["status"]["observedGeneration"], 3);
}

#[tokio::test]
async fn an_unknown_policy_is_refused_before_any_write() {
    let server = refusing_finalizer(500, "InternalError");
    let bad = vm(
        json!({"metadata": {"annotations": {"verda.linecorp.com/reconcile-policy": "sometimes"}}}),
    );
    let error = reconcile(bad, context(&server)).await.expect_err("refused");
    assert!(error.is_terminal());
    assert_eq!(server.writes(), [format!("PATCH {VM_PATH}/status")]);
    let patch = &server.seen()[0].body;
    let message = condition(patch, "Ready").expect("Ready")["message"]
        .as_str()
        .expect("a message");
    assert!(message.contains("\"sometimes\""), "{message}");
}

#[tokio::test]
async fn deleting_an_object_without_our_finalizer_touches_nothing() {
    let server = refusing_finalizer(500, "InternalError");
    let deleting = vm(
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z",
                                           "finalizers": ["someone.else/keep"]}}),
    );
    let action = reconcile(deleting, context(&server))
        .await
        .expect("reconciled");
    assert_eq!(action, Action::await_change());
    assert!(server.seen().is_empty(), "{:?}", server.seen());
}

#[tokio::test]
async fn a_paused_object_goes_without_a_cloud_call_and_keeps_other_finalizers() {
    let server =
        ApiServer::new(|_, _, _| (200, serde_json::to_value(&*vm(json!({}))).expect("JSON")));
    let paused = vm(json!({"metadata": {
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "annotations": {"verda.linecorp.com/reconcile-policy": "skip"},
        "finalizers": ["someone.else/keep", finalizers::VIRTUAL_MACHINE],
    }}));
    let action = reconcile(paused, context(&server))
        .await
        .expect("reconciled");
    assert_eq!(action, Action::await_change());
    let removal = server
        .seen()
        .into_iter()
        .find(|s| s.method == "PATCH" && s.path == VM_PATH)
        .expect("the finalizer removed");
    assert_eq!(
        removal.body["metadata"]["finalizers"],
        json!(["someone.else/keep"])
    );
}

#[tokio::test]
async fn removing_the_finalizer_of_an_object_already_gone_is_done() {
    // A reconcile of a store copy a moment older than the deletion: the object and its
    // finalizer are gone by the time this one removes it.
    let server = refusing_finalizer(404, "NotFound");
    let paused = vm(json!({"metadata": {
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "annotations": {"verda.linecorp.com/reconcile-policy": "skip"},
        "finalizers": [finalizers::VIRTUAL_MACHINE],
    }}));
    let action = reconcile(paused, context(&server))
        .await
        .expect("done, not failed");
    assert_eq!(action, Action::await_change());
    assert_eq!(
        server.writes(),
        [format!("PATCH {VM_PATH}")],
        "no failure reported"
    );
    let warnings = server
        .events()
        .into_iter()
        .filter(|e| e["type"] == "Warning")
        .count();
    assert_eq!(warnings, 0, "{:?}", server.events());
}
