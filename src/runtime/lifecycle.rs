//! The reconcile policy (`verda.linecorp.com/reconcile-policy`) as the controllers
//! apply it. Pure: no client.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::{Resource, ResourceExt};
use verda_api::conditions::{NewCondition, Status, remove_condition, set_condition};
use verda_api::v1alpha1::{ReconcilePolicy, annotations::RECONCILE_POLICY};

use crate::runtime::ReconcileError;
use crate::runtime::object::object_key;
use crate::runtime::problem::Problem;
use crate::tenancy::Tenant;

/// Condition type set while the policy is `skip`.
pub const PAUSED: &str = "Paused";
/// Its reason; also the Ready reason of a paused object the cloud does not match.
pub const SKIP_REASON: &str = "ReconcilePolicySkip";
pub const PAUSED_READY: &str = "Paused";

/// The object's policy; an unknown value is refused with what to write instead.
pub fn policy_of<K: Resource>(obj: &K) -> Result<ReconcilePolicy, ReconcileError> {
    ReconcilePolicy::of(obj.annotations()).map_err(|value| ReconcileError::Invalid {
        object: object_key(obj),
        problem: Problem::ReconcilePolicyInvalid,
        message: format!(
            "annotation {RECONCILE_POLICY} is {value:?}; use {} (nothing is written to the \
             cloud or deleted until it is fixed)",
            ReconcilePolicy::VALUES
        ),
    })
}

/// What deleting an object does to its cloud resources.
pub enum Removal {
    /// `manage`: delete them.
    Delete(Tenant),
    /// `detach-on-delete`: take the operator's ownership records off them.
    Detach(Tenant),
    /// `skip`: leave them as they are, without a cloud call.
    Abandon,
}

/// Sets the `Paused` condition while the policy is `skip`, removes it otherwise.
pub fn mark_paused(
    conditions: &mut Vec<Condition>,
    policy: ReconcilePolicy,
    generation: Option<i64>,
    now: Timestamp,
) {
    if policy.writes() {
        remove_condition(conditions, PAUSED);
        return;
    }
    set_condition(
        conditions,
        NewCondition {
            type_: PAUSED,
            status: Status::True,
            reason: SKIP_REASON,
            message: format!(
                "{RECONCILE_POLICY} is skip: status follows the cloud and nothing is written \
                 to it; remove the annotation (or set it to manage) to resume"
            ),
        },
        generation,
        now,
    );
}

/// The Ready message of a paused object whose cloud resources differ from the spec.
pub fn paused_message(not_done: &str) -> String {
    format!("{RECONCILE_POLICY} is skip, so the operator does not {not_done}")
}

/// The Ready condition of a paused object that would `not_done` (status, reason,
/// message).
pub fn paused_ready(not_done: &str) -> (verda_api::conditions::Status, &'static str, String) {
    let status = verda_api::conditions::Status::False;
    (status, PAUSED_READY, paused_message(not_done))
}

/// A removal is over: the object's condition series go, and a Normal event with
/// `reason` tells what became of its cloud resources.
pub async fn removal_finished<K>(ctx: &crate::runtime::Context, obj: &K, reason: &str, note: String)
where
    K: crate::runtime::object::Managed + Resource<DynamicType = ()>,
{
    let labels = crate::runtime::object::object_labels(obj);
    ctx.metrics
        .set_object_conditions(K::CONTROLLER, &labels, None);
    let normal = kube::runtime::events::EventType::Normal;
    crate::runtime::events::publish(&ctx.recorder, obj, normal, reason, note, "Delete").await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use verda_api::conditions::find_condition;

    #[test]
    fn paused_condition_follows_the_policy() {
        let mut conditions = Vec::new();
        mark_paused(
            &mut conditions,
            ReconcilePolicy::Skip,
            Some(1),
            Timestamp::now(),
        );
        let paused = find_condition(&conditions, PAUSED).expect("set");
        assert_eq!(
            (paused.status.as_str(), paused.reason.as_str()),
            ("True", SKIP_REASON)
        );
        mark_paused(
            &mut conditions,
            ReconcilePolicy::Manage,
            Some(2),
            Timestamp::now(),
        );
        assert!(find_condition(&conditions, PAUSED).is_none());
    }
}
