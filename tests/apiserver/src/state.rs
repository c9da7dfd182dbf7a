//! Shared server state: the registry, the store behind one mutex, the garbage collector's wake-up and the
//! shutdown signal. Handlers lock the store for the duration of one read-modify-write, which is what makes
//! optimistic concurrency and the global resourceVersion order trivially correct.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::registry::Registry;
use crate::store::Store;

#[derive(Debug, Clone)]
pub struct Options {
    /// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK (the real watch cache: ~1 min).
    pub bookmark_interval: Duration,
    /// How many changes the watch history keeps before older resourceVersions answer 410.
    pub history_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            bookmark_interval: Duration::from_secs(60),
            history_limit: 10_000,
        }
    }
}

pub struct AppState {
    pub registry: Registry,
    pub store: Mutex<Store>,
    pub gc: Notify,
    pub shutdown: watch::Receiver<bool>,
    pub opts: Options,
    /// `(plural, namespace)` pairs the client may not read, as RBAC without a Role there.
    pub denied: Mutex<std::collections::HashSet<(String, String)>>,
}

impl AppState {
    pub fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock leaves consistent data (writes are single `put`s); keep serving.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Storage bucket of Namespaces (the registry's `group/plural` naming).
pub const NAMESPACES: &str = "/namespaces";
