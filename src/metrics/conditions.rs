//! Condition state as metrics: how many objects of a kind are in each condition and
//! reason, and since when each object that is not Ready has been there; and
//! `managed_objects`, the same count for Ready alone, by its reason.
//!
//! The per-object gauge holds the condition's `lastTransitionTime`, read from the
//! object's status, so "Ready=False for a week" survives a restart of the operator:
//! `time() - verda_condition_last_transition_timestamp_seconds{condition="Ready",status="False"}`.
//! It is kept only while the object is not Ready (its Ready condition is not True):
//! those are the series an alert or a dashboard reads one by one, while a fleet of
//! healthy objects is read through the counts.
//!
//! What is remembered of a healthy object is small: the digest of its kind, namespace
//! and name (keyed afresh in every process, as the events' correlator keys its) and the
//! number of its set of conditions among the few sets the fleet has. Those not Ready
//! are kept with their names, and encoded at each scrape from here, so that their table
//! shrinks again after a fleet that was not Ready all at once (a `Family` never does).

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
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
struct ObjectConditionLabels {
    kind: &'static str,
    namespace: String,
    name: String,
    condition: String,
    status: String,
    reason: String,
}

/// A condition's type, status and reason: what its series are labelled with.
#[derive(Debug)]
struct Shape {
    condition: String,
    status: String,
    reason: String,
}

impl Shape {
    fn is(&self, c: &Condition) -> bool {
        self.condition == c.type_ && self.status == c.status && self.reason == c.reason
    }

    fn is_ready(&self) -> bool {
        self.condition == READY && self.status == "True"
    }
}

/// The distinct sets of shape numbers objects have, each under a number (the first is 0).
#[derive(Debug, Default)]
struct Sets {
    all: Vec<Box<[u32]>>,
    numbers: HashMap<Box<[u32]>, u32>,
}

impl Sets {
    fn number(&mut self, set: &[u32]) -> u32 {
        if let Some(n) = self.numbers.get(set) {
            return *n;
        }
        let n = u32::try_from(self.all.len()).expect("fewer than 2^32 distinct sets");
        self.all.push(set.into());
        self.numbers.insert(set.into(), n);
        n
    }

    fn get(&self, n: Option<u32>) -> &[u32] {
        n.map_or(&[], |n| &self.all[n as usize])
    }
}

/// An object that is not Ready: its names and its conditions with their times.
#[derive(Debug)]
struct NotReady {
    kind: &'static str,
    namespace: String,
    name: String,
    since: Vec<(u32, i64)>,
}

#[derive(Debug, Default)]
struct State {
    digests: RandomState,
    /// The distinct shapes conditions have: a few per kind, so found by a look at each.
    shapes: Vec<Shape>,
    sets: Sets,
    /// Each object's set of conditions, by the digest of its kind, namespace and name.
    objects: HashMap<u64, u32>,
    /// The objects that are not Ready, by the same digest.
    not_ready: HashMap<u64, NotReady>,
}

/// The objects that are not Ready, as `condition_last_transition_timestamp_seconds`.
#[derive(Debug, Clone)]
struct NotReadySeries(Arc<Mutex<State>>);

impl NotReadySeries {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Collector for NotReadySeries {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let state = self.lock();
        let mut family = encoder.encode_descriptor(
            "condition_last_transition_timestamp_seconds",
            "When each condition of an object that is not Ready last changed status (its lastTransitionTime), in Unix seconds",
            None,
            MetricType::Gauge,
        )?;
        for object in state.not_ready.values() {
            for (shape, since) in &object.since {
                let shape = &state.shapes[*shape as usize];
                let labels = ObjectConditionLabels {
                    kind: object.kind,
                    namespace: object.namespace.clone(),
                    name: object.name.clone(),
                    condition: shape.condition.clone(),
                    status: shape.status.clone(),
                    reason: shape.reason.clone(),
                };
                ConstGauge::new(*since).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The condition families and what each object last contributed to them.
pub struct ConditionMetrics {
    by_condition: Family<ConditionLabels, Gauge>,
    /// Objects by kind and Ready reason (`verda_managed_objects`).
    managed: Family<ManagedLabels, Gauge>,
    state: NotReadySeries,
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
        let state = NotReadySeries(Arc::default());
        registry.register_collector(Box::new(state.clone()));
        Self {
            by_condition,
            managed,
            state,
        }
    }

    /// Forgets every object.
    pub fn clear(&self) {
        let mut state = self.state.lock();
        state.objects = HashMap::new();
        state.not_ready = HashMap::new();
        self.by_condition.clear();
        self.managed.clear();
    }

    /// Records `conditions` as the object's current ones; `None` forgets the object.
    /// Strings are copied only when a count moves or the object is not Ready.
    pub fn set(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        conditions: Option<&[Condition]>,
    ) {
        let mut state = self.state.lock();
        let state = &mut *state;
        let digest = state.digests.hash_one((kind, namespace, name));
        let numbers: Vec<u32> = conditions
            .unwrap_or_default()
            .iter()
            .map(|c| state.shape(c))
            .collect();
        let set = conditions.map(|_| state.sets.number(&numbers));
        let before = match set {
            Some(set) => state.objects.insert(digest, set),
            None => state.objects.remove(&digest),
        };
        if before != set {
            let (before, now) = (state.sets.get(before), state.sets.get(set));
            self.count(kind, &state.shapes, before, now);
        }
        let ready = numbers.iter().any(|n| state.shapes[*n as usize].is_ready());
        if conditions.is_some() && !ready {
            let times = conditions.unwrap_or_default().iter();
            let since = numbers.iter().zip(times);
            let since = since.map(|(n, c)| (*n, c.last_transition_time.0.as_second()));
            let object = NotReady {
                kind,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                since: since.collect(),
            };
            state.not_ready.insert(digest, object);
        } else if state.not_ready.remove(&digest).is_some()
            && state.not_ready.len() < state.not_ready.capacity() / 4
        {
            state.not_ready.shrink_to_fit();
        }
    }

    /// Moves the object's counts from the shapes it had `before` to those it has `now`.
    fn count(&self, kind: &'static str, shapes: &[Shape], before: &[u32], now: &[u32]) {
        for gone in before.iter().filter(|b| !now.contains(b)) {
            let gone = &shapes[*gone as usize];
            self.by_condition
                .get_or_create(&count_labels(kind, gone))
                .dec();
            if gone.condition == READY {
                self.managed
                    .get_or_create(&managed_labels(kind, gone))
                    .dec();
            }
        }
        for new in now.iter().filter(|n| !before.contains(n)) {
            let new = &shapes[*new as usize];
            self.by_condition
                .get_or_create(&count_labels(kind, new))
                .inc();
            if new.condition == READY {
                self.managed.get_or_create(&managed_labels(kind, new)).inc();
            }
        }
    }
}

impl State {
    /// The number of the condition's shape, numbering it if it is new.
    fn shape(&mut self, c: &Condition) -> u32 {
        let at = self.shapes.iter().position(|s| s.is(c));
        let at = at.unwrap_or_else(|| {
            self.shapes.push(Shape {
                condition: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
            });
            self.shapes.len() - 1
        });
        u32::try_from(at).expect("fewer than 2^32 shapes")
    }
}

fn count_labels(kind: &'static str, s: &Shape) -> ConditionLabels {
    ConditionLabels {
        kind,
        condition: s.condition.clone(),
        status: s.status.clone(),
        reason: s.reason.clone(),
    }
}

fn managed_labels(kind: &'static str, s: &Shape) -> ManagedLabels {
    ManagedLabels {
        kind,
        state: s.reason.clone(),
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
            !text.contains(r#"name="b""#),
            "b is Ready: no series of its own: {text}"
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

    #[test]
    fn an_object_has_series_of_its_own_only_while_it_is_not_ready() {
        let mut registry = Registry::with_prefix("verda");
        let metrics = ConditionMetrics::register(&mut registry, Family::default());
        let series = |registry: &Registry| {
            encoded(registry)
                .lines()
                .filter(|l| l.starts_with("verda_condition_last_transition_timestamp_seconds{"))
                .map(str::to_owned)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
        };
        let healthy = [
            condition("Ready", "True", "AllReplicasReady", 100),
            condition("Reconciling", "False", "Converged", 100),
        ];
        metrics.set("virtualmachinegroup", "ns", "web", Some(&healthy));
        assert!(series(&registry).is_empty(), "{:?}", series(&registry));

        let degraded = [
            condition("Ready", "False", "ReplicasNotReady", 200),
            condition("Reconciling", "True", "Scaling", 210),
        ];
        metrics.set("virtualmachinegroup", "ns", "web", Some(&degraded));
        assert_eq!(
            series(&registry),
            [
                r#"verda_condition_last_transition_timestamp_seconds{kind="virtualmachinegroup",namespace="ns",name="web",condition="Ready",status="False",reason="ReplicasNotReady"} 200"#,
                r#"verda_condition_last_transition_timestamp_seconds{kind="virtualmachinegroup",namespace="ns",name="web",condition="Reconciling",status="True",reason="Scaling"} 210"#,
            ]
        );

        // Still not Ready, for another reason: the old reason's series goes.
        let other = [
            condition("Ready", "False", "QuotaExceeded", 300),
            condition("Reconciling", "True", "Scaling", 210),
        ];
        metrics.set("virtualmachinegroup", "ns", "web", Some(&other));
        let now = series(&registry);
        assert_eq!(now.len(), 2, "{now:?}");
        assert!(now[0].contains(r#"reason="QuotaExceeded"} 300"#), "{now:?}");
        assert!(now[1].contains(r#"reason="Scaling"} 210"#), "{now:?}");

        metrics.set("virtualmachinegroup", "ns", "web", Some(&healthy));
        assert!(series(&registry).is_empty(), "{:?}", series(&registry));
        let text = encoded(&registry);
        assert!(
            text.contains(
                r#"verda_objects_by_condition{kind="virtualmachinegroup",condition="Ready",status="True",reason="AllReplicasReady"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"verda_objects_by_condition{kind="virtualmachinegroup",condition="Ready",status="False",reason="QuotaExceeded"} 0"#
            ),
            "{text}"
        );
    }
}
