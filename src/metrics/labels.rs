//! The label sets of the operator's metrics: one struct per set, so that a series' labels
//! are named in one place and never built from `Debug`.

use prometheus_client::encoding::EncodeLabelSet;

/// Labels of one OpenStack API request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudRequestLabels {
    /// `compute`, `load-balancer`, `network` or `identity`.
    pub service: &'static str,
    /// The service verb, e.g. `create_server`.
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

/// One OpenStack service.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServiceLabels {
    pub service: &'static str,
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

/// Labels of a per-kind gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

/// Labels of the orphaned-resources gauge: the kind of cloud resource.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    pub resource: &'static str,
}

/// Labels of a count by reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: String,
}
