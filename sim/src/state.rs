//! The simulator's shared state: configuration, one world per project, tokens,
//! faults and counters. Time-driven transitions are applied lazily: every access
//! first calls [`settle`], so no background task is needed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use chrono::{DateTime, Utc};

use super::config::SimConfig;
use super::faults::{Counters, FaultTable, lock};
use super::world::World;

pub(crate) type Sim = Arc<Shared>;

/// Everything the handlers share.
pub(crate) struct Shared {
    pub config: SimConfig,
    /// `http://127.0.0.1:PORT`, the prefix of every catalog URL.
    pub base: String,
    /// One world per project: a project sees only its own resources.
    pub worlds: HashMap<String, Mutex<World>>,
    /// Every identity Keystone accepts; a token names one by its index.
    pub identities: Vec<crate::config::SimCredentials>,
    /// The project whose world answers for a project without one.
    pub default_project: String,
    pub tokens: Mutex<HashMap<String, Token>>,
    /// Keystone's revocation of every token of the users (a password change): tokens
    /// issued up to this instant, compared in whole seconds as Keystone does.
    pub revoked_before: Mutex<Option<DateTime<Utc>>>,
    pub faults: FaultTable,
    pub counters: Counters,
}

impl Shared {
    /// Locks the default project's world with every due transition applied.
    pub fn world(&self) -> MutexGuard<'_, World> {
        self.world_of(&self.default_project)
    }

    /// Locks `project`'s world (an unknown project: the default one's, which a valid
    /// token never names) with every due transition applied.
    pub fn world_of(&self, project: &str) -> MutexGuard<'_, World> {
        let world = self
            .worlds
            .get(project)
            .or_else(|| self.worlds.get(&self.default_project))
            .expect("the default project's world exists");
        let mut w = lock(world);
        w.reach = crate::world::Reach::now(&self.faults);
        w.settle(Instant::now());
        w
    }
}

/// Whether `token` is still accepted: neither expired nor revoked. Fernet tokens carry
/// their issue time in whole seconds, so a token issued in the same second as a
/// revocation, even after it, is revoked too (Keystone's `issued_before >= issued_at`).
pub(crate) fn live(shared: &Shared, token: &Token) -> bool {
    let revoked = lock(&shared.revoked_before)
        .is_some_and(|before| token.issued.timestamp() <= before.timestamp());
    token.valid_until > Instant::now() && !revoked
}

/// An issued Keystone token.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub methods: Vec<String>,
    pub scoped: bool,
    pub app_cred: bool,
    pub issued: DateTime<Utc>,
    pub expires: DateTime<Utc>,
    pub valid_until: Instant,
    pub audit_id: String,
    /// Whose token it is: an index into the seeded identities.
    pub identity: usize,
}
