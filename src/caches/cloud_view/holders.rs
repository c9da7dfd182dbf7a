//! The servers that hold a volume or a port some VirtualMachine waits for, as Nova last
//! answered for them. A holder seen alive is not asked about again for a while: a
//! replica waiting for its old server to let go costs one lookup, not one per look.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cloud::ids::ServerId;
use crate::lock::Lock;

/// How long an answer is kept at most, whatever the callers' freshness: a bound on
/// the map, not a decision.
const KEPT: Duration = Duration::from_secs(600);

#[derive(Default)]
pub struct Holders {
    alive: Lock<HashMap<ServerId, Instant>>,
}

impl Holders {
    /// Whether Nova showed `server` within `fresh`.
    pub fn seen_alive(&self, server: &ServerId, fresh: Duration) -> bool {
        self.alive
            .lock()
            .get(server)
            .is_some_and(|at| at.elapsed() < fresh)
    }

    /// Nova showed `server` now.
    pub fn alive(&self, server: &ServerId) {
        let mut alive = self.alive.lock();
        alive.retain(|_, at| at.elapsed() < KEPT);
        alive.insert(server.clone(), Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_seen_alive_is_vouched_for_only_while_the_answer_is_fresh() {
        let holders = Holders::default();
        let server = ServerId::new("s-1");
        assert!(!holders.seen_alive(&server, Duration::from_secs(60)));
        holders.alive(&server);
        assert!(holders.seen_alive(&server, Duration::from_secs(60)));
        assert!(!holders.seen_alive(&server, Duration::ZERO));
        assert!(!holders.seen_alive(&ServerId::new("s-2"), Duration::from_secs(60)));
    }
}
