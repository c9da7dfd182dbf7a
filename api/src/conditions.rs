//! Condition helpers: one way to set a condition on any of our kinds.
//!
//! `now` is an argument so callers (and tests) decide the clock; nothing here reads it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The condition every kind carries.
pub const READY: &str = "Ready";

/// Status value of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    True,
    False,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

/// A condition to record: `reason` is a CamelCase word, `message` says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCondition<'a> {
    pub type_: &'a str,
    pub status: Status,
    pub reason: &'a str,
    pub message: String,
}

/// Sets `new` in `conditions`, stamping `observed_generation`. `lastTransitionTime`
/// moves to `now` only when the status flips (or the condition is new). Returns
/// whether anything changed.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    new: NewCondition<'_>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> bool {
    let status = new.status.as_str();
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            let flipped = existing.status != status;
            let changed = flipped
                || existing.reason != new.reason
                || existing.message != new.message
                || existing.observed_generation != observed_generation;
            if flipped {
                existing.last_transition_time = Time(now);
                existing.status = status.to_owned();
            }
            existing.reason = new.reason.to_owned();
            existing.message = new.message;
            existing.observed_generation = observed_generation;
            changed
        }
        None => {
            conditions.push(Condition {
                type_: new.type_.to_owned(),
                status: status.to_owned(),
                reason: new.reason.to_owned(),
                message: new.message,
                observed_generation,
                last_transition_time: Time(now),
            });
            true
        }
    }
}

/// Removes the condition of type `type_`; returns whether it was there.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    before != conditions.len()
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is present and True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).expect("valid timestamp")
    }

    fn ready(status: Status, reason: &str) -> NewCondition<'_> {
        NewCondition {
            type_: READY,
            status,
            reason,
            message: format!("{reason} message"),
        }
    }

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let mut conditions = Vec::new();
        assert!(set_condition(
            &mut conditions,
            ready(Status::False, "Provisioning"),
            Some(1),
            at(10)
        ));
        assert!(set_condition(
            &mut conditions,
            ready(Status::False, "ImageNotFound"),
            Some(1),
            at(20)
        ));
        assert_eq!(conditions[0].last_transition_time, Time(at(10)));
        assert_eq!(conditions[0].reason, "ImageNotFound");
        assert!(set_condition(
            &mut conditions,
            ready(Status::True, "Active"),
            Some(2),
            at(30)
        ));
        assert_eq!(conditions[0].last_transition_time, Time(at(30)));
        assert_eq!(conditions[0].observed_generation, Some(2));
    }

    #[test]
    fn setting_the_same_condition_again_reports_no_change() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            ready(Status::True, "Active"),
            Some(1),
            at(10),
        );
        assert!(!set_condition(
            &mut conditions,
            ready(Status::True, "Active"),
            Some(1),
            at(99)
        ));
        assert_eq!(conditions.len(), 1);
        assert!(is_true(&conditions, READY));
        assert!(remove_condition(&mut conditions, READY));
        assert!(find_condition(&conditions, READY).is_none());
    }
}
