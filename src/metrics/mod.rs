//! The operator's Prometheus metrics: one registry, created once and shared.
//!
//! Call sites never build label strings themselves: every family takes a typed label
//! set, so a metric label can never be assembled from `Debug` output or carry a secret.

mod conditions;
mod labels;
pub mod shards;

pub use labels::*;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Every metric family the operator exports.
pub struct Metrics {
    registry: Registry,
    pub cloud_requests: Family<CloudRequestLabels, Counter>,
    /// OpenStack API requests per project: what each team's objects cost.
    pub project_cloud_requests: Family<ProjectLabels, Counter>,
    projects: Mutex<std::collections::HashSet<String>>,
    pub cloud_request_duration: Family<CloudOperationLabels, Histogram>,
    /// Time a request waited for its project's request budget, by service.
    pub cloud_request_wait: Family<ServiceLabels, Histogram>,
    pub reconciles: Family<ReconcileLabels, Counter>,
    pub reconcile_duration: Family<ControllerLabels, Histogram>,
    pub group_desired_replicas: Family<ObjectLabels, Gauge>,
    pub group_ready_replicas: Family<ObjectLabels, Gauge>,
    /// The size each autoscaled group's autoscaler asks for.
    pub group_autoscaling_desired_replicas: Family<ObjectLabels, Gauge>,
    /// Replicas a group replaced, by why (a health reason, or `TemplateChanged`).
    pub group_replacements: Family<ReasonLabels, Counter>,
    pub load_balancer_members: Family<ObjectLabels, Gauge>,
    pub load_balancer_ready_members: Family<ObjectLabels, Gauge>,
    /// Objects whose reconcile policy is `skip`, by kind.
    pub paused_objects: Family<KindLabels, Gauge>,
    paused: Mutex<std::collections::HashSet<(&'static str, String)>>,
    /// Cloud resources of this cluster whose owner object is gone, by resource kind.
    pub orphaned_resources: Family<ResourceLabels, Gauge>,
    orphans: Mutex<HashMap<(String, &'static str), i64>>,
    /// Objects by condition, and each object's time in its conditions.
    conditions: conditions::ConditionMetrics,
    /// 1 while this process holds the leader Lease and runs the controllers.
    pub leader: Gauge,
    /// The controllers run (leader or shard): object series may be written.
    following: std::sync::atomic::AtomicBool,
    /// With `--shards`: what this replica holds of the ring.
    pub shards: shards::ShardMetrics,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("verda");
        let managed_objects = Family::<ManagedLabels, Gauge>::default();
        registry.register(
            "managed_objects",
            "Managed objects by kind and state (the Ready condition's reason)",
            managed_objects.clone(),
        );
        let conditions = conditions::ConditionMetrics::register(&mut registry, managed_objects);
        let mut metrics = Self {
            registry,
            conditions,
            leader: Gauge::default(),
            following: std::sync::atomic::AtomicBool::new(false),
            shards: shards::ShardMetrics::default(),
            paused_objects: Family::default(),
            paused: Mutex::default(),
            orphaned_resources: Family::default(),
            orphans: Mutex::default(),
            cloud_requests: Family::default(),
            project_cloud_requests: Family::default(),
            projects: Mutex::default(),
            cloud_request_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.005, 2.0, 12))
            }),
            cloud_request_wait: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 16))
            }),
            reconciles: Family::default(),
            reconcile_duration: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 14))
            }),
            group_desired_replicas: Family::default(),
            group_ready_replicas: Family::default(),
            group_autoscaling_desired_replicas: Family::default(),
            group_replacements: Family::default(),
            load_balancer_members: Family::default(),
            load_balancer_ready_members: Family::default(),
        };
        metrics.register_cloud_and_reconciles();
        metrics.register_object_gauges();
        Arc::new(metrics)
    }

    fn register_cloud_and_reconciles(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "cloud_requests",
            "OpenStack API requests by service, operation and HTTP status code",
            self.cloud_requests.clone(),
        );
        registry.register(
            "project_cloud_requests",
            "OpenStack API requests by project (at most 100 projects, then `other`) and service",
            self.project_cloud_requests.clone(),
        );
        registry.register(
            "cloud_request_duration_seconds",
            "Duration of OpenStack API requests, retries included",
            self.cloud_request_duration.clone(),
        );
        registry.register(
            "cloud_request_wait_seconds",
            "Time OpenStack API requests waited for their project's request budget, by service",
            self.cloud_request_wait.clone(),
        );
        registry.register(
            "reconciles",
            "Reconciles by controller and result",
            self.reconciles.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of reconciles by controller",
            self.reconcile_duration.clone(),
        );
    }

    fn register_object_gauges(&mut self) {
        let registry = &mut self.registry;
        registry.register(
            "group_desired_replicas",
            "spec.replicas of each VirtualMachineGroup",
            self.group_desired_replicas.clone(),
        );
        registry.register(
            "group_ready_replicas",
            "Ready VirtualMachines of each VirtualMachineGroup",
            self.group_ready_replicas.clone(),
        );
        registry.register(
            "group_autoscaling_desired_replicas",
            "The size the autoscaler asks for, of each VirtualMachineGroup with spec.autoscaling",
            self.group_autoscaling_desired_replicas.clone(),
        );
        registry.register(
            "group_replacements",
            "VirtualMachines a VirtualMachineGroup replaced, by reason: the health reason of an unhealthy replica (autoHealing), or TemplateChanged (a rollout)",
            self.group_replacements.clone(),
        );
        registry.register(
            "load_balancer_members",
            "Pool members of each LoadBalancer, every port",
            self.load_balancer_members.clone(),
        );
        registry.register(
            "load_balancer_ready_members",
            "ONLINE or NO_MONITOR pool members of each LoadBalancer, every port",
            self.load_balancer_ready_members.clone(),
        );
        registry.register(
            "paused_objects",
            "Objects whose reconcile-policy annotation is skip: observed, never written to the cloud",
            self.paused_objects.clone(),
        );
        registry.register(
            "orphaned_cloud_resources",
            "Servers and load balancers of this cluster whose owner object no longer exists (see verda-operator orphans)",
            self.orphaned_resources.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the leader Lease and runs the controllers, 0 on a standby",
            self.leader.clone(),
        );
        self.shards.register(registry);
    }

    /// Counts one request to `service` made for `project` (`None`: not known yet).
    pub fn count_project_request(&self, project: Option<&str>, service: &'static str) {
        let project = match project {
            None => "unknown".to_owned(),
            Some(id) => {
                let mut seen = self.projects.lock().unwrap_or_else(|e| e.into_inner());
                if seen.contains(id) || seen.len() < MAX_PROJECTS {
                    seen.insert(id.to_owned());
                    id.to_owned()
                } else {
                    "other".to_owned()
                }
            }
        };
        self.project_cloud_requests
            .get_or_create(&ProjectLabels { project, service })
            .inc();
    }

    /// Whether this replica runs the controllers now: a reconcile still finishing after
    /// they stopped must not bring back the series `forget_objects` dropped.
    pub fn following(&self) -> bool {
        self.following.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Says whether the controllers run (see [`Metrics::following`]).
    pub fn set_following(&self, running: bool) {
        self.following
            .store(running, std::sync::atomic::Ordering::SeqCst);
    }

    /// Forgets every series about objects and cloud resources. A replica that stops
    /// leading no longer follows them, and must not go on exporting what it last saw
    /// (an object fixed since would stay not-Ready on its scrape, and alert).
    pub fn forget_objects(&self) {
        self.paused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.paused_objects.clear();
        self.orphans
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.orphaned_resources.clear();
        self.conditions.clear();
        for family in [
            &self.group_desired_replicas,
            &self.group_ready_replicas,
            &self.group_autoscaling_desired_replicas,
            &self.load_balancer_members,
            &self.load_balancer_ready_members,
        ] {
            family.clear();
        }
    }

    /// Records the object's conditions as its status now has them (`None`: it is gone):
    /// the condition families, `managed_objects` among them.
    pub fn set_object_conditions(
        &self,
        kind: &'static str,
        object: &ObjectLabels,
        conditions: Option<&[Condition]>,
    ) {
        self.conditions
            .set(kind, &object.namespace, &object.name, conditions);
        if conditions.is_none() {
            let key = format!("{}/{}", object.namespace, object.name);
            self.set_paused(kind, &key, false);
        }
    }

    /// Records whether the object `key` of `kind` is paused (reconcile-policy `skip`).
    pub fn set_paused(&self, kind: &'static str, key: &str, paused: bool) {
        let mut set = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        let entry = (kind, key.to_owned());
        let changed = if paused {
            set.insert(entry)
        } else {
            set.remove(&entry)
        };
        // Every kind with an object has a series, 0 while none is paused.
        let gauge = self.paused_objects.get_or_create(&KindLabels { kind });
        if changed {
            if paused {
                gauge.inc()
            } else {
                gauge.dec()
            };
        }
    }

    /// Records how many `resource`s of `project` are orphaned, as its last look found.
    pub fn set_orphans(&self, project: &str, resource: &'static str, count: usize) {
        let mut counts = self.orphans.lock().unwrap_or_else(|e| e.into_inner());
        counts.insert((project.to_owned(), resource), count as i64);
        let total = counts
            .iter()
            .filter(|((_, r), _)| *r == resource)
            .map(|(_, n)| n)
            .sum();
        self.orphaned_resources
            .get_or_create(&ResourceLabels { resource })
            .set(total);
    }

    /// The registry in the Prometheus text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_labels_are_bounded() {
        let metrics = Metrics::new();
        for n in 0..MAX_PROJECTS + 5 {
            metrics.count_project_request(Some(&format!("p{n}")), "compute");
        }
        metrics.count_project_request(Some("p0"), "compute");
        metrics.count_project_request(None, "identity");
        let text = metrics.encode();
        let projects = text
            .lines()
            .filter(|l| l.starts_with("verda_project_cloud_requests_total{"))
            .count();
        assert_eq!(
            projects,
            MAX_PROJECTS + 2,
            "{MAX_PROJECTS} projects, other, unknown"
        );
        assert!(text.contains(
            r#"verda_project_cloud_requests_total{project="other",service="compute"} 5"#
        ));
        assert!(
            text.contains(
                r#"verda_project_cloud_requests_total{project="p0",service="compute"} 2"#
            )
        );
        assert!(text.contains(
            r#"verda_project_cloud_requests_total{project="unknown",service="identity"} 1"#
        ));
    }

    #[test]
    fn a_replica_that_stops_leading_forgets_every_object() {
        let metrics = Metrics::new();
        let object = ObjectLabels {
            namespace: "ns".into(),
            name: "web".into(),
        };
        metrics.set_object_conditions("virtualmachine", &object, Some(&[]));
        metrics.group_ready_replicas.get_or_create(&object).set(2);
        metrics.set_paused("virtualmachine", "ns/web", true);
        metrics.set_orphans("p1", "server", 1);
        metrics.leader.set(1);
        metrics.forget_objects();
        let text = metrics.encode();
        assert!(!text.contains(r#"name="web""#), "{text}");
        assert!(!text.contains("verda_paused_objects{"), "{text}");
        assert!(!text.contains("verda_orphaned_cloud_resources{"), "{text}");
        // The leader gauge is not an object's (Leading sets it).
        assert!(text.contains("verda_leader 1"), "{text}");
        metrics.set_paused("virtualmachine", "ns/web", true);
        assert!(
            metrics
                .encode()
                .contains(r#"verda_paused_objects{kind="virtualmachine"} 1"#),
            "counted anew after a restart of the controllers"
        );
    }

    #[test]
    fn paused_and_orphaned_gauges_count_each_object_once_and_sum_projects() {
        let metrics = Metrics::new();
        metrics.set_paused("virtualmachine", "ns/a", true);
        metrics.set_paused("virtualmachine", "ns/a", true);
        metrics.set_paused("virtualmachine", "ns/b", true);
        metrics.set_paused("virtualmachine", "ns/b", false);
        let c = ObjectLabels {
            namespace: "ns".into(),
            name: "c".into(),
        };
        metrics.set_object_conditions("virtualmachine", &c, Some(&[]));
        metrics.set_paused("virtualmachine", "ns/c", true);
        metrics.set_object_conditions("virtualmachine", &c, None);
        metrics.set_orphans("p1", "server", 2);
        metrics.set_orphans("p2", "server", 3);
        metrics.set_orphans("p1", "server", 1);
        let text = metrics.encode();
        assert!(
            text.contains(r#"verda_paused_objects{kind="virtualmachine"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"verda_orphaned_cloud_resources{resource="server"} 4"#),
            "{text}"
        );
    }
}
