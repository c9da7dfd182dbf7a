//! Condition state as metrics: how many objects of a kind are in each condition and
//! reason, and since when each object has been there; and `managed_objects`, the same
//! count for Ready alone, by its reason.
//!
//! The per-object gauge holds the condition's `lastTransitionTime`, read from the
//! object's status, so "Ready=False for a week" survives a restart of the operator:
//! `time() - verda_condition_last_transition_timestamp_seconds{condition="Ready",status="False"}`.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use verda_api::conditions::READY;

use super::labels::ManagedLabels;

/// Labels of the per-kind condition count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConditionLabels {
    pub kind: &'static str,
    pub condition: String,
    pub status: String,
    pub reason: String,
}

/// Labels of one object's condition.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectConditionLabels {
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    pub condition: String,
    pub status: String,
    pub reason: String,
}

/// One condition as last recorded: its labels and its transition time.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Recorded {
    condition: String,
    status: String,
    reason: String,
    since: i64,
}

type ObjectId = (&'static str, String, String);

/// The condition families and what each object last contributed to them.
pub struct ConditionMetrics {
    by_condition: Family<ConditionLabels, Gauge>,
    /// Objects by kind and Ready reason (`verda_managed_objects`).
    managed: Family<ManagedLabels, Gauge>,
    since: Family<ObjectConditionLabels, Gauge>,
    recorded: Mutex<HashMap<ObjectId, Vec<Recorded>>>,
}

impl ConditionMetrics {
    /// Registers the condition families; `managed` is registered by the caller.
    pub fn register(registry: &mut Registry, managed: Family<ManagedLabels, Gauge>) -> Self {
        let by_condition = Family::<ConditionLabels, Gauge>::default();
        registry.register(
            "objects_by_condition",
            "Objects by kind, condition type, status and reason",
            by_condition.clone(),
        );
        let since = Family::<ObjectConditionLabels, Gauge>::default();
        registry.register(
            "condition_last_transition_timestamp_seconds",
            "When each object's condition last changed status (its lastTransitionTime), in Unix seconds",
            since.clone(),
        );
        Self {
            by_condition,
            managed,
            since,
            recorded: Mutex::default(),
        }
    }

    /// Forgets every object.
    pub fn clear(&self) {
        let mut recorded = self.recorded.lock().unwrap_or_else(|e| e.into_inner());
        recorded.clear();
        self.by_condition.clear();
        self.managed.clear();
        self.since.clear();
    }

    /// Records `conditions` as the object's current ones; `None` forgets the object.
    pub fn set(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        conditions: Option<&[Condition]>,
    ) {
        let now: Vec<Recorded> = conditions
            .unwrap_or_default()
            .iter()
            .map(|c| Recorded {
                condition: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                since: c.last_transition_time.0.as_second(),
            })
            .collect();
        let id = (kind, namespace.to_owned(), name.to_owned());
        let mut recorded = self.recorded.lock().unwrap_or_else(|e| e.into_inner());
        let before = match conditions {
            Some(_) => recorded.insert(id, now.clone()),
            None => recorded.remove(&id),
        }
        .unwrap_or_default();
        for gone in before.iter().filter(|b| !now.iter().any(|n| same(b, n))) {
            self.by_condition
                .get_or_create(&count_labels(kind, gone))
                .dec();
            if gone.condition == READY {
                self.managed
                    .get_or_create(&managed_labels(kind, gone))
                    .dec();
            }
            self.since
                .remove(&object_labels(kind, namespace, name, gone));
        }
        for new in &now {
            if !before.iter().any(|b| same(b, new)) {
                self.by_condition
                    .get_or_create(&count_labels(kind, new))
                    .inc();
                if new.condition == READY {
                    self.managed.get_or_create(&managed_labels(kind, new)).inc();
                }
            }
            self.since
                .get_or_create(&object_labels(kind, namespace, name, new))
                .set(new.since);
        }
    }
}

/// Whether two records fall on the same series (the time may still differ).
fn same(a: &Recorded, b: &Recorded) -> bool {
    (&a.condition, &a.status, &a.reason) == (&b.condition, &b.status, &b.reason)
}

fn count_labels(kind: &'static str, r: &Recorded) -> ConditionLabels {
    ConditionLabels {
        kind,
        condition: r.condition.clone(),
        status: r.status.clone(),
        reason: r.reason.clone(),
    }
}

fn managed_labels(kind: &'static str, r: &Recorded) -> ManagedLabels {
    ManagedLabels {
        kind,
        state: r.reason.clone(),
    }
}

fn object_labels(
    kind: &'static str,
    namespace: &str,
    name: &str,
    r: &Recorded,
) -> ObjectConditionLabels {
    ObjectConditionLabels {
        kind,
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        condition: r.condition.clone(),
        status: r.status.clone(),
        reason: r.reason.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn condition(type_: &str, status: &str, reason: &str, at: i64) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Time(Timestamp::from_second(at).expect("valid time")),
        }
    }

    fn encoded(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).expect("encodes");
        out
    }

    #[test]
    fn counts_follow_each_object_and_forget_it_on_delete() {
        let mut registry = Registry::with_prefix("verda");
        let metrics = ConditionMetrics::register(&mut registry, Family::default());
        let failing = [condition("Ready", "False", "ImageNotFound", 100)];
        metrics.set("virtualmachine", "ns", "a", Some(&failing));
        metrics.set("virtualmachine", "ns", "a", Some(&failing));
        metrics.set("virtualmachine", "ns", "b", Some(&failing));
        metrics.set(
            "virtualmachine",
            "ns",
            "b",
            Some(&[condition("Ready", "True", "Active", 160)]),
        );
        let text = encoded(&registry);
        assert!(
            text.contains(
                r#"verda_objects_by_condition{kind="virtualmachine",condition="Ready",status="False",reason="ImageNotFound"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"verda_condition_last_transition_timestamp_seconds{kind="virtualmachine",namespace="ns",name="a",condition="Ready",status="False",reason="ImageNotFound"} 100"#
            ),
            "{text}"
        );
        assert!(
            !text.contains(r#"name="b",condition="Ready",status="False""#),
            "b's old series is gone: {text}"
        );

        metrics.set("virtualmachine", "ns", "a", None);
        let text = encoded(&registry);
        assert!(
            text.contains(
                r#"verda_objects_by_condition{kind="virtualmachine",condition="Ready",status="False",reason="ImageNotFound"} 0"#
            ),
            "{text}"
        );
        assert!(!text.contains(r#"name="a""#), "{text}");
    }
}
