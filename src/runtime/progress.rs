//! The conditions that summarise progress after `Ready`: `Paused` while the policy is
//! `skip`, and the kstatus pair Flux and kpt read, `Reconciling` (the operator still
//! works towards the spec) and `Stalled` (it cannot without the user). Both kstatus
//! conditions are "abnormal-true": present only while true, so a Ready object carries
//! neither. Pure: no client.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use verda_api::conditions::{
    NewCondition, READY, Status, find_condition, is_true, remove_condition, set_condition,
};
use verda_api::v1alpha1::ReconcilePolicy;

use crate::runtime::lifecycle::{PAUSED, mark_paused};
use crate::runtime::problem::Problem;

/// The Ready reason of every kind while its cloud resources are on their way.
pub const PROVISIONING: &str = "Provisioning";

pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";

/// Completes a status a controller built: `Paused` from the policy, then the kstatus
/// pair from `Ready`.
pub fn summarise(
    conditions: &mut Vec<Condition>,
    policy: ReconcilePolicy,
    generation: Option<i64>,
    now: Timestamp,
) {
    mark_paused(conditions, policy, generation, now);
    // A problem the user must fix: no retry changes it. (Failed reconciles say so
    // themselves: `ReconcileError::is_terminal`.)
    let stalled =
        find_condition(conditions, READY).is_some_and(|ready| Problem::is_reason(&ready.reason));
    derive(conditions, stalled, generation, now);
}

/// Sets `Reconciling` or `Stalled` (whichever `stalled` picks) from a `Ready=False`,
/// with its reason and message; removes both when Ready is True or the object is
/// paused (nothing is in progress then).
pub fn derive(
    conditions: &mut Vec<Condition>,
    stalled: bool,
    generation: Option<i64>,
    now: Timestamp,
) {
    let not_ready = find_condition(conditions, READY)
        .filter(|ready| ready.status != Status::True.as_str())
        .filter(|_| !is_true(conditions, PAUSED))
        .map(|ready| (ready.reason.clone(), ready.message.clone()));
    let Some((reason, message)) = not_ready else {
        remove_condition(conditions, RECONCILING);
        remove_condition(conditions, STALLED);
        return;
    };
    let (set, clear) = if stalled {
        (STALLED, RECONCILING)
    } else {
        (RECONCILING, STALLED)
    };
    remove_condition(conditions, clear);
    set_condition(
        conditions,
        NewCondition {
            type_: set,
            status: Status::True,
            reason: &reason,
            message,
        },
        generation,
        now,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(conditions: &mut Vec<Condition>, status: Status, reason: &str) {
        set_condition(
            conditions,
            NewCondition {
                type_: READY,
                status,
                reason,
                message: format!("because {reason}"),
            },
            Some(1),
            Timestamp::now(),
        );
    }

    fn kstatus(conditions: &[Condition]) -> Vec<(&str, &str)> {
        [RECONCILING, STALLED]
            .into_iter()
            .filter_map(|t| find_condition(conditions, t))
            .map(|c| (c.type_.as_str(), c.reason.as_str()))
            .collect()
    }

    #[test]
    fn not_ready_is_reconciling_until_only_the_user_can_help() {
        let mut conditions = Vec::new();
        ready(&mut conditions, Status::False, "Provisioning");
        summarise(
            &mut conditions,
            ReconcilePolicy::Manage,
            Some(1),
            Timestamp::now(),
        );
        assert_eq!(kstatus(&conditions), [(RECONCILING, "Provisioning")]);

        ready(
            &mut conditions,
            Status::False,
            Problem::ImportMismatch.reason(),
        );
        summarise(
            &mut conditions,
            ReconcilePolicy::Manage,
            Some(1),
            Timestamp::now(),
        );
        assert_eq!(
            kstatus(&conditions),
            [(STALLED, Problem::ImportMismatch.reason())]
        );

        ready(&mut conditions, Status::False, "ImageNotFound");
        derive(&mut conditions, true, Some(1), Timestamp::now());
        assert_eq!(kstatus(&conditions), [(STALLED, "ImageNotFound")]);

        ready(&mut conditions, Status::True, "Active");
        summarise(
            &mut conditions,
            ReconcilePolicy::Manage,
            Some(1),
            Timestamp::now(),
        );
        assert_eq!(kstatus(&conditions), []);
    }

    #[test]
    fn a_paused_object_is_not_in_progress() {
        let mut conditions = Vec::new();
        ready(&mut conditions, Status::False, "Paused");
        summarise(
            &mut conditions,
            ReconcilePolicy::Skip,
            Some(1),
            Timestamp::now(),
        );
        assert!(is_true(&conditions, PAUSED));
        assert_eq!(kstatus(&conditions), []);
    }
}
