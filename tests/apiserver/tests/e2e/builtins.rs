//! Built-in kinds the operator uses: Events (kube-runtime's Recorder, both API groups), Leases, Secrets,
//! ConfigMaps, Namespaces (kube-wire `events-leases.md`).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn recorder_events_are_created_then_counted_and_readable_through_core_v1() {
    let (_s, c) = start().await;
    let created = create(&vms(&c), vm("vm-a")).await;
    publish_server_creating(&c, created.metadata.uid.clone(), 2).await;
    let core: Api<CoreEvent> = Api::namespaced(c.clone(), NS);
    let listed = core
        .list(&ListParams::default().fields("involvedObject.name=vm-a"))
        .await
        .unwrap();
    assert_eq!(
        listed.items.len(),
        1,
        "the repeat is a PATCH of the same event"
    );
    let e = &listed.items[0];
    assert_eq!(
        (e.reason.as_deref(), e.message.as_deref()),
        (Some("ServerCreating"), Some("creating server"))
    );
    assert_eq!(e.reporting_component.as_deref(), Some("verda-operator"));
    assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
}

#[tokio::test]
async fn an_events_v1_event_without_event_time_is_422() {
    let (server, _c) = start().await;
    let body = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"}, "reason": "R", "action": "A",
                      "type": "Normal", "reportingController": "verda-operator", "reportingInstance": "pod-1", "regarding": {"kind": "VirtualMachine", "name": "x"}});
    let (code, s) = Raw::new(&server)
        .json(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/default/events",
            Some(body),
        )
        .await;
    assert_eq!(code, 422);
    assert_eq!(
        s["message"],
        "Event \"e1\" is invalid: eventTime: Required value"
    );
    assert_eq!(
        s["details"],
        json!({"name": "e1", "kind": "Event", "causes": [{"reason": "FieldValueRequired", "message": "Required value", "field": "eventTime"}]})
    );
}

fn lease(holder: &str) -> Lease {
    Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("verda-operator-leader".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    }
}

#[tokio::test]
async fn lease_races_and_stale_renewals_are_409s() {
    let (_s, c) = start().await;
    let api: Api<Lease> = Api::namespaced(c.clone(), NS);
    let mine = api
        .create(&PostParams::default(), &lease("pod-a"))
        .await
        .unwrap();
    let s = status(api.create(&PostParams::default(), &lease("pod-b")).await);
    assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        s.message,
        "leases.coordination.k8s.io \"verda-operator-leader\" already exists"
    );
    let mut renew = mine.clone();
    renew.spec.as_mut().unwrap().lease_transitions = Some(0);
    api.replace("verda-operator-leader", &PostParams::default(), &renew)
        .await
        .unwrap();
    let mut takeover = mine;
    takeover.spec.as_mut().unwrap().holder_identity = Some("pod-b".into());
    let s = status(
        api.replace("verda-operator-leader", &PostParams::default(), &takeover)
            .await,
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    let released = api
        .patch(
            "verda-operator-leader",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"holderIdentity": null}})),
        )
        .await
        .unwrap();
    assert!(released.spec.unwrap().holder_identity.is_none());
}

#[tokio::test]
async fn secrets_fold_string_data_into_base64_data_and_configmaps_round_trip() {
    let (_s, c) = start().await;
    let secrets: Api<Secret> = Api::namespaced(c.clone(), NS);
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "clouds"}, "stringData": {"clouds.yaml": "clouds: {}"}}),
    )
    .unwrap();
    let created = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert!(created.string_data.is_none());
    assert_eq!(created.data.unwrap()["clouds.yaml"].0, b"clouds: {}");
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "init"}, "data": {"script": "ls"}}))
            .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert_eq!(cms.get("init").await.unwrap().data.unwrap()["script"], "ls");
    let listed = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
}

/// A legacy core/v1 Event as client-go's recorder writes it: timestamps, count and source, no eventTime.
fn legacy_event(first: Duration, last: Duration) -> serde_json::Value {
    let at = |d: Duration| {
        (chrono::Utc::now() - d)
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    };
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "vm-b.legacy"}, "type": "Warning", "reason": "Pulled",
           "message": "legacy\n", "involvedObject": {"kind": "VirtualMachine", "name": "vm-b", "fieldPath": "spec.image"},
           "firstTimestamp": at(first), "lastTimestamp": at(last), "count": 3,
           "source": {"component": "kubelet", "host": "node-1"}})
}

async fn table(raw: &Raw, path: &str) -> serde_json::Value {
    raw.http
        .get(format!("{}{path}?limit=500", raw.base))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn event_tables_have_the_event_columns_in_both_api_groups() {
    let (server, c) = start().await;
    publish_server_creating(&c, None, 2).await;
    let raw = Raw::new(&server);
    let hours = |h: u64| Duration::from_secs(h * 3600);
    let (code, _) = raw
        .json(
            "POST",
            "/api/v1/namespaces/default/events",
            Some(legacy_event(hours(48), hours(3))),
        )
        .await;
    assert_eq!(code, 201);

    let core = table(&raw, "/api/v1/namespaces/default/events").await;
    let v1 = table(&raw, "/apis/events.k8s.io/v1/namespaces/default/events").await;
    assert_eq!(core, v1, "one storage, one printer");
    let columns: Vec<(&str, i64)> = core["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        columns,
        [
            ("Last Seen", 0),
            ("Type", 0),
            ("Reason", 0),
            ("Object", 0),
            ("Subobject", 1),
            ("Source", 1),
            ("Message", 0),
            ("First Seen", 1),
            ("Count", 1),
            ("Name", 1)
        ]
    );
    let rows = core["rows"].as_array().unwrap();
    let legacy = rows
        .iter()
        .find(|r| r["cells"][9] == "vm-b.legacy")
        .unwrap();
    assert_eq!(
        legacy["cells"],
        json!([
            "3h",
            "Warning",
            "Pulled",
            "virtualmachine/vm-b",
            "spec.image",
            "kubelet, node-1",
            "legacy",
            "2d",
            3,
            "vm-b.legacy"
        ])
    );
    let recorded = &rows
        .iter()
        .find(|r| r["cells"][9] != "vm-b.legacy")
        .unwrap()["cells"];
    let seconds = |v: &serde_json::Value| {
        let s = v.as_str().unwrap();
        s.ends_with('s') && s[..s.len() - 1].parse::<u32>().is_ok()
    };
    assert!(seconds(&recorded[0]) && seconds(&recorded[7]), "{recorded}");
    assert_eq!(
        serde_json::Value::from(recorded.as_array().unwrap()[1..7].to_vec()),
        json!([
            "Normal",
            "ServerCreating",
            "virtualmachine/vm-a",
            "",
            "verda-operator, pod-1",
            "creating server"
        ])
    );
    assert_eq!(recorded[8], 2, "the series count");
}
