//! Each LoadBalancer's pool members when it last converged, per owner UID: what tells
//! a correction of drift from an ordinary member update (`load_balancer::drift`). Kept
//! in memory only; a restart forgets it.
//!
//! A pool's members are kept as a 64-bit digest (keyed per process), not as the set:
//! the only question asked of them is whether a batch puts a pool back to exactly
//! them, and a set of 20 members held about 900 bytes a LoadBalancer. Two sets sharing
//! a digest can only name an ordinary member update a drift correction in its event.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::lock::Lock;

/// One pool's members (address and port, in any order, repeats counted once), as a
/// digest: equal for equal sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberSet(u64);

/// Per owner UID, each port's members when the object last converged.
#[derive(Default)]
pub struct MemberMemory {
    ports: Lock<HashMap<String, Box<[MemberSet]>>>,
    digests: RandomState,
}

impl MemberMemory {
    /// The digest of the members `(address, port)`.
    pub fn set<'a>(&self, members: impl Iterator<Item = (&'a str, u16)>) -> MemberSet {
        let mut sorted: Vec<(&str, u16)> = members.collect();
        sorted.sort_unstable();
        sorted.dedup();
        MemberSet(self.digests.hash_one(&sorted))
    }

    pub fn remember(&self, uid: &str, ports: Vec<MemberSet>) {
        self.ports
            .lock()
            .insert(uid.to_owned(), ports.into_boxed_slice());
    }

    pub fn forget(&self, uid: &str) {
        self.ports.lock().remove(uid);
    }

    pub fn of(&self, uid: &str, port: usize) -> Option<MemberSet> {
        self.ports.lock().get(uid)?.get(port).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::MemberMemory;

    #[test]
    fn a_pool_put_back_to_its_members_in_any_order_matches_and_any_other_does_not() {
        let memory = MemberMemory::default();
        let members = [("10.0.0.1", 80), ("10.0.0.2", 80), ("10.0.0.3", 8080)];
        memory.remember("uid", vec![memory.set(members.into_iter())]);
        let shuffled = [
            ("10.0.0.3", 8080),
            ("10.0.0.1", 80),
            ("10.0.0.2", 80),
            ("10.0.0.1", 80),
        ];
        assert_eq!(memory.of("uid", 0), Some(memory.set(shuffled.into_iter())));
        for other in [
            &members[..2],
            &[("10.0.0.1", 80), ("10.0.0.2", 80), ("10.0.0.3", 80)][..],
            &[
                ("10.0.0.1", 80),
                ("10.0.0.2", 80),
                ("10.0.0.3", 8080),
                ("10.0.0.4", 80),
            ][..],
        ] {
            assert_ne!(memory.of("uid", 0), Some(memory.set(other.iter().copied())));
        }
        assert_eq!(memory.of("uid", 1), None, "no second port was remembered");
        memory.forget("uid");
        assert_eq!(memory.of("uid", 0), None);
    }
}
