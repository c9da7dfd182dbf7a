//! Shared helpers: a server with the kube-wire CRDs (tests/fixtures/crds.yaml), dynamic APIs for our kinds,
//! and a raw HTTP client.

use std::path::PathBuf;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Client, core::Status};
use serde_json::{Value, json};
use verda_test_apiserver::ApiServer;

pub const NS: &str = "default";

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub async fn start() -> (ApiServer, Client) {
    let server = ApiServer::builder()
        .crd_dir(fixtures())
        .start()
        .await
        .expect("server starts");
    let client = server.client().expect("client");
    (server, client)
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("verda.linecorp.com", "v1alpha1", kind),
        plural,
    )
}

pub fn vms(c: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        c.clone(),
        NS,
        &resource("VirtualMachine", "virtualmachines"),
    )
}

pub fn namespaced_vms(c: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        c.clone(),
        ns,
        &resource("VirtualMachine", "virtualmachines"),
    )
}

pub fn vmgs(c: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        c.clone(),
        NS,
        &resource("VirtualMachineGroup", "virtualmachinegroups"),
    )
}

pub fn obj(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("valid object")
}

pub fn vm(name: &str) -> DynamicObject {
    obj(json!({
        "apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"image": "centos79", "flavor": "n3-1vcpu-2gb", "initScript": {"value": "ls"}, "description": "generated operator"},
    }))
}

pub fn vmg(name: &str, replicas: i64) -> DynamicObject {
    obj(json!({
        "apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": {"image": "centos79", "flavor": "n3-1vcpu-2gb"}},
    }))
}

pub async fn create(api: &Api<DynamicObject>, o: DynamicObject) -> DynamicObject {
    api.create(&PostParams::default(), &o)
        .await
        .expect("create")
}

/// The Status of a failed call.
pub fn status(r: Result<impl std::fmt::Debug, kube::Error>) -> Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

pub fn rv(o: &DynamicObject) -> u64 {
    o.metadata
        .resource_version
        .as_deref()
        .unwrap_or_default()
        .parse()
        .expect("numeric resourceVersion")
}

pub fn json_of(o: &DynamicObject) -> Value {
    serde_json::to_value(o).expect("serializable")
}

/// Raw HTTP against the server.
pub struct Raw {
    pub base: String,
    pub http: reqwest::Client,
}

impl Raw {
    pub fn new(server: &ApiServer) -> Self {
        Self {
            base: server.url(),
            http: reqwest::Client::new(),
        }
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        ct: &str,
        body: Option<Value>,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self
            .http
            .request(m, format!("{}{path}", self.base))
            .header("content-type", ct);
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        let resp = req.send().await.expect("request");
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        (code, headers, resp.text().await.unwrap())
    }

    pub async fn json(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let (code, _, text) = self.send(method, path, "application/json", body).await;
        (
            code,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

pub const VMS: &str = "/apis/verda.linecorp.com/v1alpha1/namespaces/default/virtualmachines";
pub const VMGS: &str = "/apis/verda.linecorp.com/v1alpha1/namespaces/default/virtualmachinegroups";

/// Publishes the event "ServerCreating" about VirtualMachine `vm-a` in [`NS`] `times` times, as
/// the operator's recorder (events.k8s.io/v1) does: the first a create, the repeats a series.
pub async fn publish_server_creating(c: &Client, uid: Option<String>, times: usize) {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let reference = ObjectReference {
        api_version: Some("verda.linecorp.com/v1alpha1".into()),
        kind: Some("VirtualMachine".into()),
        name: Some("vm-a".into()),
        namespace: Some(NS.into()),
        uid,
        ..Default::default()
    };
    let recorder = Recorder::new(
        c.clone(),
        Reporter {
            controller: "verda-operator".into(),
            instance: Some("pod-1".into()),
        },
    );
    let ev = Event {
        type_: EventType::Normal,
        reason: "ServerCreating".into(),
        note: Some("creating server".into()),
        action: "CreateServer".into(),
        secondary: None,
    };
    for _ in 0..times {
        recorder.publish(&ev, &reference).await.unwrap();
    }
}
