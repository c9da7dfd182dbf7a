//! A namespace's claim Lease: who reconciles it. Never renewed — the holder's liveness
//! is its own member Lease — so a converged cluster writes no claim at all.
//!
//! The rule that no object is written by two replicas rests here: a replica takes a
//! claim only when it was released (the holder stopped reconciling the namespace and
//! said so) or its holder is dead; a holder gives one up only by releasing it.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// What a replica does with a claim it just read (or found missing).
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// No claim exists and the namespace is ours: create it.
    Create(LeaseSpec),
    /// Released, or its holder is dead, and the namespace is ours: write this (guarded
    /// by the read's resourceVersion, so of two takers one wins).
    Take(LeaseSpec),
    /// Ours, and it stays ours.
    Keep,
    /// Ours, and the ring gives it to another: once our reconciles of it have stopped,
    /// write this.
    Release(LeaseSpec),
    /// Another live replica holds it: it will release it once it has stopped.
    Wait { holder: String },
    /// Neither ours nor to be ours.
    NotOurs,
}

/// Decides, from the claim (if any), what `me` does at `now`. `assigned` is whether the
/// ring gives the namespace to `me`; `live` whether a member is alive as `me` observes
/// it (its member Lease seen to change within the lease duration).
pub fn decide(
    current: Option<&LeaseSpec>,
    me: &str,
    assigned: bool,
    live: impl Fn(&str) -> bool,
    now: Timestamp,
) -> Claim {
    let holder = current
        .and_then(|spec| spec.holder_identity.clone())
        .unwrap_or_default();
    if holder == me {
        return match (assigned, current) {
            (true, _) => Claim::Keep,
            (false, Some(spec)) => Claim::Release(LeaseSpec {
                holder_identity: Some(String::new()),
                ..spec.clone()
            }),
            (false, None) => Claim::NotOurs,
        };
    }
    if !assigned {
        return Claim::NotOurs;
    }
    let Some(spec) = current else {
        return Claim::Create(held_by(me, 0, now));
    };
    if !holder.is_empty() && live(&holder) {
        return Claim::Wait { holder };
    }
    let transitions = spec.lease_transitions.unwrap_or(0).saturating_add(1);
    Claim::Take(held_by(me, transitions, now))
}

fn held_by(me: &str, transitions: i32, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(me.to_owned()),
        acquire_time: Some(MicroTime(now)),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(holder: &str, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    fn alive(member: &str) -> bool {
        member == "b"
    }

    #[test]
    fn a_namespace_is_taken_only_when_released_missing_or_its_holder_dead() {
        let now = Timestamp::now();
        let decide = |current: Option<&LeaseSpec>| decide(current, "a", true, alive, now);
        assert!(
            matches!(decide(None), Claim::Create(s) if s.holder_identity.as_deref() == Some("a"))
        );
        assert_eq!(
            decide(Some(&held("b", 3))),
            Claim::Wait { holder: "b".into() }
        );
        assert!(
            matches!(decide(Some(&held("", 3))), Claim::Take(s) if s.lease_transitions == Some(4))
        );
        assert!(
            matches!(decide(Some(&held("dead", 3))), Claim::Take(s) if s.holder_identity.as_deref() == Some("a"))
        );
        assert_eq!(decide(Some(&held("a", 3))), Claim::Keep);
    }

    #[test]
    fn a_holder_gives_a_namespace_up_only_by_releasing_it() {
        let now = Timestamp::now();
        let released = decide(Some(&held("a", 3)), "a", false, alive, now);
        assert_eq!(released, Claim::Release(held("", 3)));
        assert_eq!(
            decide(Some(&held("b", 3)), "a", false, alive, now),
            Claim::NotOurs
        );
        assert_eq!(
            decide(Some(&held("", 3)), "a", false, alive, now),
            Claim::NotOurs
        );
        assert_eq!(decide(None, "a", false, alive, now), Claim::NotOurs);
    }
}
