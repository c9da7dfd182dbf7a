//! Each LoadBalancer's pool members when it last converged, per owner UID: what tells
//! a correction of drift from an ordinary member update (`load_balancer::drift`). Kept
//! in memory only; a restart forgets it.

use std::collections::{BTreeSet, HashMap};

use crate::lock::Lock;

/// One pool's members: address and port.
pub type MemberSet = BTreeSet<(String, u16)>;

/// Per owner UID, each port's members when the object last converged.
#[derive(Default)]
pub struct MemberMemory(Lock<HashMap<String, Vec<MemberSet>>>);

impl MemberMemory {
    pub fn remember(&self, uid: &str, ports: Vec<MemberSet>) {
        self.0.lock().insert(uid.to_owned(), ports);
    }

    pub fn forget(&self, uid: &str) {
        self.0.lock().remove(uid);
    }

    pub fn of(&self, uid: &str, port: usize) -> Option<MemberSet> {
        self.0.lock().get(uid)?.get(port).cloned()
    }
}
