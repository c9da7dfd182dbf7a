//! How far the operator acts on an object's cloud resources: the reconcile policy
//! annotation, and importing a resource that already exists.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::names::annotations::RECONCILE_POLICY;

/// `spec.import`: take over an existing cloud resource instead of creating one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Import {
    /// ID (UUID) of the Nova server, Octavia load balancer, Designate zone or Neutron
    /// security group to take over. It must exist
    /// in the object's project and belong to no other object.
    #[schemars(regex(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    ))]
    pub id: String,
}

/// The value of the `verda.linecorp.com/reconcile-policy` annotation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReconcilePolicy {
    /// Create, correct and delete (no annotation).
    #[default]
    Manage,
    /// Observe only: status is refreshed from the cloud, nothing is written to it, and
    /// deleting the object leaves its cloud resources as they are.
    Skip,
    /// Manage, but deleting the object removes the operator's ownership records from
    /// its cloud resources and leaves them running.
    DetachOnDelete,
}

impl ReconcilePolicy {
    pub const VALUES: &'static str = "manage, skip or detach-on-delete";

    /// The policy an object's annotations ask for; the offending value when unknown.
    pub fn of(annotations: &BTreeMap<String, String>) -> Result<Self, String> {
        match annotations.get(RECONCILE_POLICY).map(String::as_str) {
            None | Some("manage") => Ok(Self::Manage),
            Some("skip") => Ok(Self::Skip),
            Some("detach-on-delete") => Ok(Self::DetachOnDelete),
            Some(other) => Err(other.to_owned()),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manage => "manage",
            Self::Skip => "skip",
            Self::DetachOnDelete => "detach-on-delete",
        }
    }

    /// Whether the operator may write to the cloud outside of deletion.
    pub fn writes(self) -> bool {
        self != Self::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(RECONCILE_POLICY.to_owned(), value.to_owned())])
    }

    #[test]
    fn policy_reads_the_three_values_and_defaults_to_manage() {
        assert_eq!(
            ReconcilePolicy::of(&BTreeMap::new()),
            Ok(ReconcilePolicy::Manage)
        );
        for policy in [
            ReconcilePolicy::Manage,
            ReconcilePolicy::Skip,
            ReconcilePolicy::DetachOnDelete,
        ] {
            assert_eq!(ReconcilePolicy::of(&with(policy.as_str())), Ok(policy));
        }
        assert_eq!(ReconcilePolicy::of(&with("Skip")), Err("Skip".to_owned()));
        assert!(!ReconcilePolicy::Skip.writes());
    }
}
