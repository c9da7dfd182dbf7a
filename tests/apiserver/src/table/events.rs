//! The Table of Events, as kube-apiserver's printer builds it for `kubectl get events` (core/v1 and
//! events.k8s.io/v1 share its storage and so its columns): `Last Seen`, `Type`, `Reason`, `Object`, `Message`,
//! plus the `-o wide` columns `Subobject`, `Source`, `First Seen`, `Count`, `Name` (priority 1, which kubectl
//! hides otherwise). The server always fills every column; kubectl picks. Ages are rendered here, like the
//! server does, so `Last Seen` is `5s`, not a timestamp.

use serde_json::{Value, json};

use super::{NAME_DESCRIPTION, age, column};
use crate::registry::View;

const FIELD_PATH_DESCRIPTION: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";

/// (name, format, description, priority) in the apiserver's order.
const COLUMNS: [(&str, &str, &str, i64); 10] = [
    (
        "Last Seen",
        "",
        "The time at which the most recent occurrence of this event was recorded.",
        0,
    ),
    (
        "Type",
        "",
        "Type of this event (Normal, Warning), new types could be added in the future",
        0,
    ),
    (
        "Reason",
        "",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        0,
    ),
    ("Object", "", "The object that this event is about.", 0),
    ("Subobject", "", FIELD_PATH_DESCRIPTION, 1),
    (
        "Source",
        "",
        "The component reporting this event. Should be a short machine understandable string.",
        1,
    ),
    (
        "Message",
        "",
        "A human-readable description of the status of this operation.",
        0,
    ),
    (
        "First Seen",
        "",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    (
        "Count",
        "",
        "The number of times this event has occurred.",
        1,
    ),
    ("Name", "name", NAME_DESCRIPTION, 1),
];

/// Column definitions and one row of cells per event (`items` in the wire shape of `view`).
pub fn table(view: View, items: &[Value]) -> (Vec<Value>, Vec<Vec<Value>>) {
    let defs = COLUMNS
        .iter()
        .map(|(name, format, description, priority)| column(name, format, description, *priority))
        .collect();
    let rows = items
        .iter()
        .map(|e| match view {
            // The printer works on the stored (core) shape: `regarding` is `involvedObject`, `note` is `message`.
            View::EventsV1 => cells(&crate::events::events_v1_to_core(e.clone())),
            _ => cells(e),
        })
        .collect();
    (defs, rows)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

/// The age of a timestamp field; `None` when unset (Go's zero time).
fn since(v: &Value) -> Option<String> {
    v.as_str().map(age)
}

/// `printEvent` of the apiserver's printers, wide.
fn cells(e: &Value) -> Vec<Value> {
    let first_seen = since(&e["firstTimestamp"])
        .or_else(|| since(&e["eventTime"]))
        .unwrap_or_else(|| "<unknown>".into());
    let series = &e["series"];
    let (last_seen, count) = if series.is_object() {
        let last = since(&series["lastObservedTime"]).unwrap_or_else(|| "<unknown>".into());
        (last, series["count"].as_i64().unwrap_or_default())
    } else {
        let last = since(&e["lastTimestamp"]).unwrap_or_else(|| first_seen.clone());
        // Singleton events of the events.k8s.io API carry no count.
        let count = e["count"].as_i64().filter(|c| *c != 0).unwrap_or(1);
        (last, count)
    };
    let involved = &e["involvedObject"];
    let kind = text(involved, "kind").to_lowercase();
    let object = match text(involved, "name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    vec![
        json!(last_seen),
        json!(text(e, "type")),
        json!(text(e, "reason")),
        json!(object),
        json!(text(involved, "fieldPath")),
        json!(source(e)),
        json!(text(e, "message").trim()),
        json!(first_seen),
        json!(count),
        e["metadata"]["name"].clone(),
    ]
}

/// `component, host` of the legacy source, else of the reporting controller and instance.
fn source(e: &Value) -> String {
    let first = |a: &str, b: &str| -> String {
        let a = text(&e["source"], a);
        if a.is_empty() {
            text(e, b).to_string()
        } else {
            a.to_string()
        }
    };
    let component = first("component", "reportingComponent");
    match first("host", "reportingInstance") {
        host if host.is_empty() => component,
        host => format!("{component}, {host}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorder_series_shows_its_count_and_last_observation_and_the_reporting_controller() {
        let just_now = chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string();
        let e = json!({
            "metadata": {"name": "vm-a.1"}, "type": "Normal", "reason": "ServerCreating", "message": " creating server\n",
            "involvedObject": {"kind": "VirtualMachine", "name": "vm-a"},
            "eventTime": "2000-01-01T00:00:00.000000Z", "reportingComponent": "verda-operator", "reportingInstance": "pod-1",
            "series": {"count": 2, "lastObservedTime": just_now}, "source": {},
        });
        let c = cells(&e);
        assert_eq!(
            c[1..],
            [
                json!("Normal"),
                json!("ServerCreating"),
                json!("virtualmachine/vm-a"),
                json!(""),
                json!("verda-operator, pod-1"),
                json!("creating server"),
                c[7].clone(),
                json!(2),
                json!("vm-a.1"),
            ]
        );
        assert!(matches!(c[0].as_str(), Some("0s" | "1s")), "{c:?}");
        assert!(
            c[7].as_str().is_some_and(|s| s.ends_with('y')),
            "first seen from eventTime: {c:?}"
        );
    }

    #[test]
    fn a_legacy_event_without_last_timestamp_is_last_seen_when_first_seen() {
        let e = json!({
            "metadata": {"name": "x"}, "involvedObject": {"kind": "Node"},
            "source": {"component": "kubelet"}, "firstTimestamp": "2020-01-01T00:00:00Z",
        });
        let c = cells(&e);
        assert_eq!(c[0], c[7]);
        assert_eq!(
            (&c[3], &c[5], &c[8]),
            (&json!("node"), &json!("kubelet"), &json!(1))
        );
        let unset = cells(&json!({"metadata": {"name": "y"}}));
        assert_eq!(
            (&unset[0], &unset[7]),
            (&json!("<unknown>"), &json!("<unknown>"))
        );
    }
}
