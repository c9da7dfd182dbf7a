//! A group that sizes itself: `spec.autoscaling` (a HorizontalPodAutoscaler's words)
//! and what it last decided (`status.autoscaling`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most replicas one group may ask for, by hand or autoscaled: a guard against a typo
/// that would exhaust the project's quota, not a technical limit of Nova.
pub const MAX_REPLICAS: i32 = 100;

/// The field manager the autoscaler writes `spec.replicas` with, through the scale
/// subresource (as a HorizontalPodAutoscaler does): GitOps tools ignore its field by it.
pub const AUTOSCALER_FIELD_MANAGER: &str = "verda-autoscaler";

/// The longest stabilization window and schedule duration.
const LONGEST_WINDOW: &str = "1h";

/// How a group sizes itself from its load, between `minReplicas` and `maxReplicas`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("self.minReplicas <= self.maxReplicas").message("autoscaling.minReplicas may not exceed maxReplicas"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.schedules) || self.schedules.all(s, s.minReplicas <= self.maxReplicas)").message("a schedule's minReplicas may not exceed autoscaling.maxReplicas"))]
pub struct Autoscaling {
    /// The fewest replicas the autoscaler leaves (default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 0, max = MAX_REPLICAS))]
    pub min_replicas: i32,
    /// The most replicas the autoscaler asks for.
    #[schemars(range(min = 1, max = MAX_REPLICAS))]
    pub max_replicas: i32,
    /// What the group's size follows; each proposes a size, the largest wins (as in a
    /// HorizontalPodAutoscaler). None: the group keeps `minReplicas` and the schedules'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub metrics: Vec<AutoscalingMetric>,
    /// How fast the group may grow and shrink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<ScalingBehavior>,
    /// Times the floor is raised: from each time the cron names, for `duration`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub schedules: Vec<ScalingSchedule>,
}

fn one() -> i32 {
    1
}

/// One metric: exactly one of `loadBalancer` and `prometheus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.loadBalancer) != has(self.prometheus)").message("a metric is exactly one of loadBalancer and prometheus"))]
pub struct AutoscalingMetric {
    /// Connections Octavia counts on a listener of a LoadBalancer drawing on the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerMetric>,
    /// Any PromQL, evaluated by the Prometheus of the operator's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<PrometheusMetric>,
}

/// A listener's statistics, per replica.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerMetric {
    /// A LoadBalancer of the namespace whose pools draw on this group.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The port of that LoadBalancer whose listener is read.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// What one replica should carry.
    pub target: ConnectionTarget,
}

/// What one replica should carry: exactly one of the two.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.activeConnectionsPerReplica) != has(self.newConnectionsPerSecondPerReplica)").message("a target is exactly one of activeConnectionsPerReplica and newConnectionsPerSecondPerReplica"))]
pub struct ConnectionTarget {
    /// Open connections per replica (Octavia's `active_connections`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub active_connections_per_replica: Option<i64>,
    /// New connections per second per replica: the rise of Octavia's
    /// `total_connections` between two readings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub new_connections_per_second_per_replica: Option<i64>,
}

/// A PromQL query whose value (summed over its samples) is the group's load.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrometheusMetric {
    /// An instant PromQL query: a scalar, or a vector whose samples are summed.
    #[schemars(length(min = 1, max = 4096))]
    pub query: String,
    /// The value one replica should carry (at least 0.001).
    #[schemars(range(min = 0.001))]
    pub target_per_replica: f64,
}

/// A HorizontalPodAutoscaler's `behavior`: each direction's window and step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScalingBehavior {
    /// Default: no window, at most 4 replicas per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_up: Option<ScalingRules>,
    /// Default: a 5m window, 1 replica per step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down: Option<ScalingRules>,
}

/// One direction's rules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScalingRules {
    /// How long past proposals count: the group grows to the smallest (shrinks to the
    /// largest) size proposed within it, so a noisy metric does not flap (`0s` to `1h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,11}(ms|s|m|h))+$"), length(max = 32))]
    #[x_kube(validation = window_bound())]
    pub stabilization_window: Option<String>,
    /// Most replicas added (removed) in one step; the next step waits for the group to
    /// reach the size of the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_REPLICAS))]
    pub max_step: Option<i32>,
}

fn window_bound() -> kube::core::Rule {
    kube::core::Rule::new(format!("duration(self) <= duration('{LONGEST_WINDOW}')"))
        .message("a stabilization window is at most 1h")
}

/// A floor for known busy times, as a CronJob names them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScalingSchedule {
    /// Five fields, a CronJob's: minute hour day-of-month month day-of-week.
    #[schemars(length(min = 9, max = 128))]
    pub cron: String,
    /// An IANA time zone (`Asia/Tokyo`) the cron is read in; default UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub time_zone: Option<String>,
    /// The floor while the schedule holds.
    #[schemars(range(min = 0, max = MAX_REPLICAS))]
    pub min_replicas: i32,
    /// How long the floor holds from each start (`1m` to `24h`).
    #[schemars(regex(pattern = r"^([0-9]{1,11}(ms|s|m|h))+$"), length(max = 32))]
    #[x_kube(validation = kube::core::Rule::new("duration(self) >= duration('1m') && duration(self) <= duration('24h')").message("a schedule's duration is 1m to 24h"))]
    pub duration: String,
}

/// What the autoscaler last decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingStatus {
    /// The size the autoscaler asks for now.
    pub desired_replicas: i32,
    /// Each metric's last value against its target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricStatus>,
    /// When the autoscaler last changed `spec.replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<Time>,
}

/// One metric's reading.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricStatus {
    /// `loadBalancer/<name>:<port>` or `prometheus/<index>`.
    pub name: String,
    /// Its value per replica now; absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// Its target per replica.
    pub target: String,
}
