//! How a group keeps itself healthy: the power its servers should have (`runStrategy`),
//! how a template change rolls out (`rollingUpdate`), and when an unhealthy replica is
//! replaced (`autoHealing`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A count or a percentage (`25%`) of `replicas`, as a Deployment's `maxSurge`.
const COUNT_OR_PERCENT: &str = "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')";
const COUNT_OR_PERCENT_MESSAGE: &str =
    "a count (0 or more) or a percentage of replicas such as 25%";
/// Not both `maxSurge` and `maxUnavailable` zero (`0`, `0%`), as a Deployment. (No
/// `type()`: the rule is checked client-side in the tests too.)
const NOT_BOTH_ZERO: &str = "!has(self.maxSurge) || !has(self.maxUnavailable) || \
     !string(self.maxSurge).matches('^0+%?$') || !string(self.maxUnavailable).matches('^0+%?$')";

/// The power a server should have, in KubeVirt's words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RunStrategy {
    /// Running: a server found SHUTOFF is started again.
    #[default]
    Always,
    /// Stopped (SHUTOFF), kept with its volumes and addresses; out of every load
    /// balancer's pools before it is stopped.
    Halted,
    /// The power is the user's (`openstack server stop/start`): left as it is.
    Manual,
}

/// `spec.rollingUpdate`: how many replicas a template change may add or take away at
/// once, and which indices it reaches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kube::KubeSchema)]
#[serde(rename_all = "camelCase")]
// A rollout that may neither add nor take away a replica can never progress: refused as
// Kubernetes refuses it for a Deployment, in its words.
#[x_kube(validation = kube::core::Rule::new(NOT_BOTH_ZERO).message("maxUnavailable may not be 0 when maxSurge is 0: the update could neither add a replica nor take one away").field_path(".maxUnavailable"))]
pub struct RollingUpdate {
    /// Replicas created beyond `replicas` while old ones still serve: a count or a
    /// percentage (rounded up); default 1. A group whose replicas have data volumes, or
    /// one with a `partition`, is updated in place (no surge): each replica keeps its
    /// index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = kube::core::Rule::new(COUNT_OR_PERCENT).message(COUNT_OR_PERCENT_MESSAGE))]
    pub max_surge: Option<IntOrString>,
    /// Replicas that may be unavailable during the update: a count or a percentage
    /// (rounded down); default 0 (1 when there is no surge); not 0 when `maxSurge` is 0.
    /// A group updated in place (data volumes, declared ports or addresses, a
    /// `partition`) replaces one replica at a time, which is unavailable while it is
    /// replaced, whatever this says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = kube::core::Rule::new(COUNT_OR_PERCENT).message(COUNT_OR_PERCENT_MESSAGE))]
    pub max_unavailable: Option<IntOrString>,
    /// Only replicas of index `partition` or above get the new template (a canary);
    /// default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub partition: Option<i32>,
}

/// `spec.autoHealing`: replace replicas that stay unhealthy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kube::KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoHealing {
    /// How long a replica stays unhealthy before it is replaced, e.g. `90s`, `5m`,
    /// `1h`; default `5m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+[smh])+$"))]
    pub unhealthy_after: Option<String>,
    /// With more unhealthy replicas than this (a count or a percentage, rounded down),
    /// none is replaced: the fault is likely the network's or a load balancer's, not
    /// the replicas'. Default `40%`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = kube::core::Rule::new(COUNT_OR_PERCENT).message(COUNT_OR_PERCENT_MESSAGE))]
    pub max_unhealthy: Option<IntOrString>,
}

/// One replica's health, as the group judges it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaHealth {
    /// The VirtualMachine, `<group>-<index>`.
    pub name: String,
    /// `Healthy`, `Unhealthy` or `Starting` (not yet healthy since it was created).
    pub state: String,
    /// Why: `Serving`, `ServerShutoff`, `ServerError`, `NotReady`, `MemberError`, …
    pub reason: String,
    /// What was seen, for a person.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Since when the replica has been in this state.
    pub since: Time,
    /// Replacements of this index for being unhealthy, in a row (reset once healthy).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replacements: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A count or percentage of `total`: percentages round up (`round_up`, as a surge) or
/// down (as an unavailability budget); an unparsable value counts as `default`.
pub fn scaled(value: Option<&IntOrString>, total: u32, round_up: bool, default: u32) -> u32 {
    match value {
        None => default,
        Some(IntOrString::Int(n)) => u32::try_from(*n).unwrap_or(0),
        Some(IntOrString::String(s)) => {
            let Some(percent) = s.strip_suffix('%').and_then(|p| p.parse::<u64>().ok()) else {
                return default;
            };
            let product = percent * u64::from(total);
            let n = if round_up {
                product.div_ceil(100)
            } else {
                product / 100
            };
            u32::try_from(n).unwrap_or(u32::MAX)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_as_a_deployments() {
        let pct = |s: &str| IntOrString::String(s.to_owned());
        assert_eq!(scaled(Some(&pct("25%")), 30, true, 1), 8);
        assert_eq!(scaled(Some(&pct("25%")), 30, false, 0), 7);
        assert_eq!(scaled(Some(&pct("40%")), 4, false, 0), 1);
        assert_eq!(scaled(Some(&IntOrString::Int(3)), 30, true, 1), 3);
        assert_eq!(scaled(None, 30, true, 1), 1);
        assert_eq!(scaled(Some(&pct("x%")), 30, true, 1), 1);
    }
}
