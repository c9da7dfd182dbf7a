//! The one rule by which a Lease's holder is judged alive, for the leader Lease and the
//! shards' member Leases alike: alive while this replica sees its Lease change, by our
//! own monotonic clock since we last saw its `resourceVersion` move (client-go's
//! observed time), never by comparing its `renewTime` with our wall clock, so clocks
//! need not agree. A holder seen for the first time counts as just renewed: a replica
//! that starts beside an abandoned Lease waits one lease duration before taking it.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;

/// The holder a Lease names, if any.
pub fn holder(lease: &Lease) -> Option<&str> {
    let holder = lease.spec.as_ref()?.holder_identity.as_deref()?;
    (!holder.is_empty()).then_some(holder)
}

/// When this replica last saw each holder's Lease change.
#[derive(Clone, Debug)]
pub struct Liveness {
    seen: HashMap<String, Seen>,
    /// How long a member's Lease may stay as it is before the member counts as dead:
    /// its lease duration.
    dead_after: Duration,
}

#[derive(Clone, Debug)]
struct Seen {
    version: String,
    changed: Instant,
}

impl Liveness {
    pub fn new(dead_after: Duration) -> Self {
        Self {
            seen: HashMap::new(),
            dead_after,
        }
    }

    /// Takes in the member Leases as listed at `now`. A member seen for the first time
    /// counts as just renewed; one whose Lease is released (no holder) or gone is
    /// forgotten: dead.
    pub fn observe(&mut self, members: &[Lease], now: Instant) {
        let mut seen = HashMap::new();
        for lease in members {
            let Some(identity) = holder(lease) else {
                continue;
            };
            let version = lease.resource_version().unwrap_or_default();
            let changed = match self.seen.get(identity) {
                Some(before) if before.version == version => before.changed,
                _ => now,
            };
            seen.insert(identity.to_owned(), Seen { version, changed });
        }
        self.seen = seen;
    }

    /// Takes in one member Lease seen at `now` between rounds (a watch event): a
    /// renewal counts from when it is seen, not from the next round's listing. A
    /// released Lease is left to the next round, which forgets its member.
    pub fn saw(&mut self, lease: &Lease, now: Instant) {
        let Some(identity) = holder(lease) else {
            return;
        };
        let version = lease.resource_version().unwrap_or_default();
        match self.seen.get_mut(identity) {
            Some(seen) if seen.version == version => {}
            Some(seen) => {
                seen.version = version;
                seen.changed = now;
            }
            None => {
                let seen = Seen {
                    version,
                    changed: now,
                };
                self.seen.insert(identity.to_owned(), seen);
            }
        }
    }

    /// Whether `member` is alive as of `now`.
    pub fn live(&self, member: &str, now: Instant) -> bool {
        self.seen
            .get(member)
            .is_some_and(|seen| now.saturating_duration_since(seen.changed) < self.dead_after)
    }

    /// The first instant after `now` at which a member alive now would count as dead
    /// if its Lease stays as it is: the round to read then tells a death without waiting
    /// for the next regular one.
    pub fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.seen
            .values()
            .map(|seen| seen.changed + self.dead_after)
            .filter(|expiry| *expiry > now)
            .min()
    }

    /// The members alive as of `now`.
    pub fn members(&self, now: Instant) -> BTreeSet<String> {
        self.seen
            .keys()
            .filter(|member| self.live(member, now))
            .cloned()
            .collect()
    }
}

/// A Lease named `name`, held by `holder`, at `version`: for the leases' unit tests.
#[cfg(test)]
pub(crate) fn test_lease(name: &str, holder: &str, version: &str) -> Lease {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use kube::api::ObjectMeta;
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            ..LeaseSpec::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::test_lease as lease;
    use super::*;

    const DEAD_AFTER: Duration = Duration::from_secs(17);

    #[test]
    fn a_member_is_dead_once_its_lease_stays_unchanged_for_the_dead_after_period() {
        let mut liveness = Liveness::new(DEAD_AFTER);
        let t0 = Instant::now();
        let at = |secs| t0 + Duration::from_secs(secs);
        liveness.observe(
            &[lease("r-member-a", "a", "1"), lease("r-member-b", "b", "1")],
            t0,
        );
        assert_eq!(
            liveness.members(t0),
            BTreeSet::from(["a".into(), "b".into()])
        );
        // a renews, b does not.
        liveness.observe(
            &[lease("r-member-a", "a", "2"), lease("r-member-b", "b", "1")],
            at(10),
        );
        assert!(liveness.live("b", at(16)));
        liveness.observe(
            &[lease("r-member-a", "a", "3"), lease("r-member-b", "b", "1")],
            at(17),
        );
        assert!(liveness.live("a", at(17)));
        assert!(!liveness.live("b", at(17)), "unchanged for 17 s");
        assert!(!liveness.live("c", at(17)), "never seen");
    }

    #[test]
    fn the_next_expiry_is_the_earliest_death_still_to_come() {
        let mut liveness = Liveness::new(DEAD_AFTER);
        let t0 = Instant::now();
        let at = |secs| t0 + Duration::from_secs(secs);
        assert_eq!(liveness.next_expiry(t0), None, "no member seen");
        liveness.observe(
            &[lease("r-member-a", "a", "1"), lease("r-member-b", "b", "1")],
            t0,
        );
        liveness.observe(
            &[lease("r-member-a", "a", "2"), lease("r-member-b", "b", "1")],
            at(5),
        );
        assert_eq!(
            liveness.next_expiry(at(5)),
            Some(at(17)),
            "b, unchanged since t0"
        );
        assert!(liveness.live("b", at(16)) && !liveness.live("b", at(17)));
        assert_eq!(
            liveness.next_expiry(at(17)),
            Some(at(22)),
            "b is dead already; a is next"
        );
        assert_eq!(liveness.next_expiry(at(22)), None);
    }

    #[test]
    fn a_renewal_seen_between_rounds_counts_from_when_it_was_seen() {
        let mut liveness = Liveness::new(DEAD_AFTER);
        let t0 = Instant::now();
        let at = |secs| t0 + Duration::from_secs(secs);
        liveness.observe(&[lease("r-member-a", "a", "1")], t0);
        // Renewed at 2 s, seen at once by the watch; the round at 5 s lists the same.
        liveness.saw(&lease("r-member-a", "a", "2"), at(2));
        liveness.observe(&[lease("r-member-a", "a", "2")], at(5));
        assert_eq!(
            liveness.next_expiry(at(5)),
            Some(at(19)),
            "from 2 s, not 5 s"
        );
        assert!(liveness.live("a", at(18)) && !liveness.live("a", at(19)));
        // A member seen first by the watch is alive from then on; a released Lease
        // changes nothing until a round lists it.
        liveness.saw(&lease("r-member-b", "b", "1"), at(6));
        liveness.saw(&lease("r-member-a", "", "3"), at(7));
        assert_eq!(
            liveness.members(at(7)),
            BTreeSet::from(["a".into(), "b".into()])
        );
        assert_eq!(liveness.next_expiry(at(7)), Some(at(19)));
    }

    #[test]
    fn a_released_or_deleted_member_lease_is_dead_at_once() {
        let mut liveness = Liveness::new(DEAD_AFTER);
        let now = Instant::now();
        liveness.observe(
            &[lease("r-member-a", "a", "1"), lease("r-member-b", "b", "1")],
            now,
        );
        liveness.observe(&[lease("r-member-b", "", "2")], now);
        assert!(!liveness.live("b", now), "released");
        assert!(!liveness.live("a", now), "its Lease is gone");
    }
}
