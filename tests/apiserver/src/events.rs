//! Shape conversions for built-ins stored once and served differently: Events (core/v1 ⇄ events.k8s.io/v1,
//! kube-wire `events-leases.md`) and Secret `stringData` (folded into base64 `data` on write).
//!
//! Events are stored in the core/v1 shape. Only the fields the apiserver maps are converted; nothing here
//! validates core/v1 Events (the real server's checks for them are looser and the operator does not send them).

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::error::Cause;

/// (events.k8s.io/v1 field, core/v1 field)
const RENAMES: [(&str, &str); 7] = [
    ("note", "message"),
    ("regarding", "involvedObject"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(obj: &Value, to_core: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in obj.as_object().into_iter().flatten() {
        let key = RENAMES
            .iter()
            .find(|(a, b)| if to_core { a == k } else { b == k })
            .map(|(a, b)| if to_core { *b } else { *a })
            .unwrap_or(k.as_str());
        out.insert(key.to_string(), v.clone());
    }
    out
}

/// events.k8s.io/v1 body → stored core/v1 shape.
pub fn events_v1_to_core(v: Value) -> Value {
    let mut out = rename(&v, true);
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!("Event"));
    Value::Object(out)
}

/// Stored event → core/v1 wire shape (the defaults the real server always prints).
pub fn core_view(stored: &Value) -> Value {
    let mut out = stored.as_object().cloned().unwrap_or_default();
    out.insert("apiVersion".into(), json!("v1"));
    out.insert("kind".into(), json!("Event"));
    for (k, d) in [
        ("source", json!({})),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
    ] {
        out.entry(k).or_insert(d);
    }
    out.entry("eventTime").or_insert(Value::Null);
    out.entry("reportingComponent").or_insert(json!(""));
    out.entry("reportingInstance").or_insert(json!(""));
    Value::Object(out)
}

/// Stored event → events.k8s.io/v1 wire shape.
pub fn events_v1_view(stored: &Value) -> Value {
    let mut out = rename(stored, false);
    out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    out.insert("kind".into(), json!("Event"));
    for (k, d) in [
        ("deprecatedSource", json!({})),
        ("deprecatedFirstTimestamp", Value::Null),
        ("deprecatedLastTimestamp", Value::Null),
    ] {
        out.entry(k).or_insert(d);
    }
    out.entry("eventTime").or_insert(Value::Null);
    for k in ["reportingController", "reportingInstance"] {
        if out.get(k).and_then(Value::as_str) == Some("") {
            out.remove(k);
        }
    }
    Value::Object(out)
}

/// The create/update checks of events.k8s.io/v1 Events (kube-wire `events-leases.md`).
pub fn validate_events_v1(v: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if v.get("eventTime").is_none_or(Value::is_null) {
        causes.push(Cause::required("eventTime"));
    }
    for f in ["reportingController", "reportingInstance"] {
        if v.get(f).and_then(Value::as_str).unwrap_or("").is_empty() {
            causes.push(Cause::required(f));
        }
    }
    let t = v.get("type").and_then(Value::as_str).unwrap_or("");
    if t != "Normal" && t != "Warning" {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: \"\": has invalid value: {t}"),
            "type",
        ));
    }
    causes
}

/// Secrets: `stringData` entries are base64-encoded into `data` and `stringData` is dropped, as on write.
pub fn secret_string_data(mut v: Value) -> Value {
    let Some(obj) = v.as_object_mut() else {
        return v;
    };
    if let Some(Value::Object(sd)) = obj.remove("stringData") {
        let data = obj.entry("data").or_insert_with(|| json!({}));
        if let Some(d) = data.as_object_mut() {
            for (k, val) in sd {
                let s = val.as_str().unwrap_or_default();
                d.insert(
                    k,
                    json!(base64::engine::general_purpose::STANDARD.encode(s)),
                );
            }
        }
    }
    v
}
