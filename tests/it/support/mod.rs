//! Support code shared by the integration tests.
#![allow(dead_code)]

pub mod crash;
pub mod crd_schema;
pub mod e2e;
pub mod gitops;
pub mod openstack_cli;
pub mod prometheus;
pub mod real;

/// A JSON merge patch (RFC 7386) applied to `target`: objects merge, `null` removes,
/// anything else replaces.
pub fn merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(serde_json::Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}
