//! The operator's Prometheus metrics: one registry, created once and shared.
//!
//! Call sites never build label strings themselves: every family takes a typed label
//! set, so a metric label can never be assembled from `Debug` output or carry a secret.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of one OpenStack API request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudRequestLabels {
    /// `compute`, `load-balancer`, `network` or `identity`.
    pub service: &'static str,
    /// The port verb, e.g. `create_server`.
    pub operation: &'static str,
    /// HTTP status code, or `error` when no response arrived.
    pub code: String,
}

/// Labels of the per-project request count: a project and a service.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProjectLabels {
    /// The project's ID; `other` past [`MAX_PROJECTS`] projects, `unknown` for the
    /// token request that first tells a client its project.
    pub project: String,
    pub service: &'static str,
}

/// Most distinct `project` label values; later projects are counted as `other`, so a
/// cluster with many teams cannot grow the metrics without bound.
pub const MAX_PROJECTS: usize = 100;

/// Labels of one OpenStack API operation, without its outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudOperationLabels {
    pub service: &'static str,
    pub operation: &'static str,
}

/// Labels of one reconcile.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// `virtualmachine`, `virtualmachinegroup` or `loadbalancer`.
    pub controller: &'static str,
    /// `success`, `requeue` (waiting on the cloud) or the error category.
    pub result: &'static str,
}

/// Labels of one controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: &'static str,
}

/// Labels of a per-object gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ObjectLabels {
    pub namespace: String,
    pub name: String,
}

/// Labels of the managed-objects gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ManagedLabels {
    pub kind: &'static str,
    pub state: String,
}

/// Every metric family the operator exports.
pub struct Metrics {
    registry: Registry,
    pub cloud_requests: Family<CloudRequestLabels, Counter>,
    /// OpenStack API requests per project: what each team's objects cost.
    pub project_cloud_requests: Family<ProjectLabels, Counter>,
    projects: Mutex<std::collections::HashSet<String>>,
    pub cloud_request_duration: Family<CloudOperationLabels, Histogram>,
    pub reconciles: Family<ReconcileLabels, Counter>,
    pub reconcile_duration: Family<ControllerLabels, Histogram>,
    /// Managed objects by kind and state (the Ready condition's reason).
    pub managed_objects: Family<ManagedLabels, Gauge>,
    states: Mutex<HashMap<(&'static str, String), String>>,
    pub group_desired_replicas: Family<ObjectLabels, Gauge>,
    pub group_ready_replicas: Family<ObjectLabels, Gauge>,
    pub load_balancer_members: Family<ObjectLabels, Gauge>,
    pub load_balancer_ready_members: Family<ObjectLabels, Gauge>,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("verda");
        let cloud_requests = Family::<CloudRequestLabels, Counter>::default();
        registry.register(
            "cloud_requests",
            "OpenStack API requests by service, operation and HTTP status code",
            cloud_requests.clone(),
        );
        let project_cloud_requests = Family::<ProjectLabels, Counter>::default();
        registry.register(
            "project_cloud_requests",
            "OpenStack API requests by project (at most 100 projects, then `other`) and service",
            project_cloud_requests.clone(),
        );
        let cloud_request_duration =
            Family::<CloudOperationLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.005, 2.0, 12))
            });
        registry.register(
            "cloud_request_duration_seconds",
            "Duration of OpenStack API requests, retries included",
            cloud_request_duration.clone(),
        );
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles by controller and result",
            reconciles.clone(),
        );
        let reconcile_duration =
            Family::<ControllerLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.001, 2.0, 14))
            });
        registry.register(
            "reconcile_duration_seconds",
            "Duration of reconciles by controller",
            reconcile_duration.clone(),
        );
        let managed_objects = Family::<ManagedLabels, Gauge>::default();
        registry.register(
            "managed_objects",
            "Managed objects by kind and state (the Ready condition's reason)",
            managed_objects.clone(),
        );
        let group_desired_replicas = Family::<ObjectLabels, Gauge>::default();
        registry.register(
            "group_desired_replicas",
            "spec.replicas of each VirtualMachineGroup",
            group_desired_replicas.clone(),
        );
        let group_ready_replicas = Family::<ObjectLabels, Gauge>::default();
        registry.register(
            "group_ready_replicas",
            "Ready VirtualMachines of each VirtualMachineGroup",
            group_ready_replicas.clone(),
        );
        let load_balancer_members = Family::<ObjectLabels, Gauge>::default();
        registry.register(
            "load_balancer_members",
            "Pool members of each LoadBalancer, every port",
            load_balancer_members.clone(),
        );
        let load_balancer_ready_members = Family::<ObjectLabels, Gauge>::default();
        registry.register(
            "load_balancer_ready_members",
            "ONLINE or NO_MONITOR pool members of each LoadBalancer, every port",
            load_balancer_ready_members.clone(),
        );
        Arc::new(Self {
            registry,
            cloud_requests,
            project_cloud_requests,
            projects: Mutex::default(),
            cloud_request_duration,
            reconciles,
            reconcile_duration,
            managed_objects,
            states: Mutex::default(),
            group_desired_replicas,
            group_ready_replicas,
            load_balancer_members,
            load_balancer_ready_members,
        })
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

    /// Records that the object `key` (namespace/name) of `kind` is now in `state`;
    /// `None` forgets it (deleted).
    pub fn set_object_state(&self, kind: &'static str, key: &str, state: Option<&str>) {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        let entry = (kind, key.to_owned());
        let previous = match state {
            Some(state) => states.insert(entry, state.to_owned()),
            None => states.remove(&entry),
        };
        if previous.as_deref() == state {
            return;
        }
        if let Some(previous) = previous {
            self.managed_objects
                .get_or_create(&ManagedLabels {
                    kind,
                    state: previous,
                })
                .dec();
        }
        if let Some(state) = state {
            self.managed_objects
                .get_or_create(&ManagedLabels {
                    kind,
                    state: state.to_owned(),
                })
                .inc();
        }
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
}
