//! The ring as one replica sees it: which members are alive, who holds which
//! namespace's claim, and which namespaces exist — read from the API server each round,
//! the member Leases' renewals also as they are watched between rounds.
//!
//! A member is alive while this replica sees its Lease change ([`Liveness`], the rule
//! every Lease is judged by).

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;

pub use crate::leases::liveness::{Liveness, holder};

/// Lease names of one ring: `<ring>-member-<identity>` and `<ring>-ns-<namespace>`.
#[derive(Clone, Debug)]
pub struct Names {
    pub ring: String,
}

impl Names {
    pub fn member(&self, identity: &str) -> String {
        lease_name(&format!("{}-member-{identity}", self.ring))
    }

    pub fn claim(&self, namespace: &str) -> String {
        lease_name(&format!("{}-ns-{namespace}", self.ring))
    }

    /// The namespace a claim Lease is for, from its name.
    fn claimed<'a>(&self, lease: &'a str) -> Option<&'a str> {
        lease.strip_prefix(&format!("{}-ns-", self.ring))
    }

    pub fn is_member(&self, lease: &str) -> bool {
        lease.starts_with(&format!("{}-member-", self.ring))
    }
}

/// A valid object name: lower case, other characters than letters, digits, `-` and `.`
/// as `-` (the identity itself is the Lease's holder).
fn lease_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '-' | '.' => c,
            _ => '-',
        })
        .collect();
    name.truncate(253);
    name
}

/// One round's reading of the ring.
#[derive(Debug, Default)]
pub struct Round {
    /// Claims by namespace.
    pub claims: HashMap<String, Lease>,
    /// The namespaces that exist.
    pub namespaces: BTreeSet<String>,
    /// The members' Leases.
    pub members: Vec<Lease>,
}

impl Round {
    /// Sorts a listing of the lease namespace into claims and member Leases; the member
    /// Leases go to `liveness`.
    pub fn read(
        names: &Names,
        leases: Vec<Lease>,
        namespaces: BTreeSet<String>,
        liveness: &mut Liveness,
        now: Instant,
    ) -> Self {
        let (claims, members) = sort(names, leases);
        liveness.observe(&members, now);
        Self {
            claims,
            namespaces,
            members,
        }
    }

    /// The claims among a listing of the lease namespace, by namespace.
    pub fn claims(names: &Names, leases: Vec<Lease>) -> HashMap<String, Lease> {
        sort(names, leases).0
    }

    /// Who holds each namespace's claim (released claims have no holder).
    pub fn holders(&self) -> HashMap<String, String> {
        self.claims
            .iter()
            .filter_map(|(namespace, lease)| {
                let holder = holder(lease)?;
                Some((namespace.clone(), holder.to_owned()))
            })
            .collect()
    }
}

/// A listing of the lease namespace as this ring's claims (by namespace) and members.
fn sort(names: &Names, leases: Vec<Lease>) -> (HashMap<String, Lease>, Vec<Lease>) {
    let mut claims = HashMap::new();
    let mut members = Vec::new();
    for lease in leases {
        let name = lease.name_any();
        if let Some(namespace) = names.claimed(&name) {
            claims.insert(namespace.to_owned(), lease);
        } else if names.is_member(&name) {
            members.push(lease);
        }
    }
    (claims, members)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leases::liveness::test_lease as lease;
    use std::time::Duration;

    const DEAD_AFTER: Duration = Duration::from_secs(17);

    #[test]
    fn a_listing_is_sorted_into_claims_and_members_of_this_ring_only() {
        let names = Names { ring: "r".into() };
        let mut liveness = Liveness::new(DEAD_AFTER);
        let now = Instant::now();
        let leases = vec![
            lease(&names.member("pod-A_1"), "pod-A_1", "1"),
            lease(&names.claim("team-a"), "pod-A_1", "1"),
            lease(&names.claim("team-b"), "", "1"),
            lease("r", "leader", "1"),
            lease("other-ns-team-c", "x", "1"),
        ];
        let round = Round::read(&names, leases, BTreeSet::new(), &mut liveness, now);
        assert_eq!(names.member("pod-A_1"), "r-member-pod-a-1");
        assert_eq!(liveness.members(now), BTreeSet::from(["pod-A_1".into()]));
        assert_eq!(round.claims.len(), 2);
        assert_eq!(
            round.holders(),
            HashMap::from([("team-a".into(), "pod-A_1".into())])
        );
    }
}
