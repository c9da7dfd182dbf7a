//! Leases of the ring that no one will write again: the member Lease of a replica that
//! is gone (killed, scaled away, released on shutdown) and the claim of a namespace
//! that no longer exists (or is no longer selected) whose holder is not alive. Each is
//! deleted once this replica has seen it unchanged for the sweep period, with its
//! resourceVersion as a precondition, so a replica that came back and wrote it since
//! keeps it (and one that comes back later writes it anew).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;

use crate::leases::shards::roster::{Liveness, Round, holder};

/// When this replica first saw each leftover Lease at its current version.
#[derive(Debug)]
pub struct Leftovers {
    seen: HashMap<String, (String, Instant)>,
    after: Duration,
}

/// A Lease to delete: its name and the version seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    pub name: String,
    pub version: String,
}

impl Leftovers {
    pub fn new(after: Duration) -> Self {
        Self {
            seen: HashMap::new(),
            after,
        }
    }

    /// The leftovers of `round` (as `me` sees the ring at `now`) unchanged for the sweep
    /// period.
    pub fn due(
        &mut self,
        round: &Round,
        liveness: &Liveness,
        me: &str,
        now: Instant,
    ) -> Vec<Sweep> {
        let abandoned =
            |lease: &&Lease| holder(lease).is_none_or(|h| h != me && !liveness.live(h, now));
        let members = round.members.iter().filter(abandoned);
        let gone_claims = round
            .claims
            .iter()
            .filter(|(namespace, _)| !round.namespaces.contains(*namespace))
            .map(|(_, lease)| lease)
            .filter(abandoned);
        let mut seen = HashMap::new();
        let mut due = Vec::new();
        for lease in members.chain(gone_claims) {
            let name = lease.name_any();
            let version = lease.resource_version().unwrap_or_default();
            let since = match self.seen.get(&name) {
                Some((before, since)) if *before == version => *since,
                _ => now,
            };
            if now.saturating_duration_since(since) >= self.after {
                due.push(Sweep {
                    name: name.clone(),
                    version: version.clone(),
                });
            }
            seen.insert(name, (version, since));
        }
        self.seen = seen;
        due
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::roster::Names;
    use super::*;
    use crate::leases::liveness::test_lease as lease;

    #[test]
    fn only_leases_nobody_writes_are_swept_once_unchanged_for_the_period() {
        let names = Names { ring: "r".into() };
        let mut liveness = Liveness::new(Duration::from_secs(10));
        let mut leftovers = Leftovers::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let at = |secs| t0 + Duration::from_secs(secs);
        let ring = |dead_version: &str| {
            vec![
                lease(&names.member("me"), "me", "1"),
                lease(&names.member("live"), "live", "1"),
                lease(&names.member("dead"), "dead", dead_version),
                lease(&names.member("left"), "", "1"),
                lease(&names.claim("kept"), "dead", "1"),
                lease(&names.claim("gone-of-dead"), "dead", "1"),
                lease(&names.claim("gone-of-live"), "live", "1"),
                lease(&names.claim("gone-released"), "", "1"),
            ]
        };
        let namespaces = BTreeSet::from(["kept".to_owned()]);
        let round = Round::read(&names, ring("1"), namespaces.clone(), &mut liveness, t0);
        assert!(leftovers.due(&round, &liveness, "me", t0).is_empty());
        // "live" renews; "dead" does not.
        let mut live = ring("1");
        live[1] = lease(&names.member("live"), "live", "2");
        let round = Round::read(
            &names,
            live.clone(),
            namespaces.clone(),
            &mut liveness,
            at(59),
        );
        leftovers.due(&round, &liveness, "me", at(59));
        live[1] = lease(&names.member("live"), "live", "3");
        let round = Round::read(&names, live, namespaces.clone(), &mut liveness, at(60));
        let swept: BTreeSet<String> = leftovers
            .due(&round, &liveness, "me", at(60))
            .into_iter()
            .map(|s| s.name)
            .collect();
        let expected = [names.member("left"), names.claim("gone-released")];
        assert_eq!(
            swept,
            BTreeSet::from(expected.clone()),
            "released ones, seen for 60 s"
        );
        // "dead" counted as alive when first seen (t0) and was seen dead from 59 s on: its
        // Lease and its claim of a namespace gone are swept once seen so for the period;
        // a claim of a namespace that exists, and anything of a live member, never.
        let round = Round::read(&names, ring("1"), namespaces, &mut liveness, at(119));
        let swept: BTreeSet<String> = leftovers
            .due(&round, &liveness, "me", at(119))
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert!(swept.contains(&names.member("dead")));
        assert!(swept.contains(&names.claim("gone-of-dead")));
        assert!(!swept.contains(&names.claim("kept")));
        assert!(!swept.contains(&names.claim("gone-of-live")));
        assert!(!swept.contains(&names.member("me")));
    }
}
