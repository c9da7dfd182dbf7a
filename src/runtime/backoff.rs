//! Per-object retry delays: exponential with full jitter for transient failures, a
//! slow fixed period for terminal ones, never sooner than the cloud's Retry-After.
//! Success forgets the object's history.
//!
//! A terminal failure the cloud gave also holds its object until that retry: the
//! failure's own status write (and any other change that leaves the spec as it was)
//! wakes the object at once, and without the hold each wake-up sent the refused
//! request again. A new generation is not held: a fixed spec is tried at once; nor are
//! the objects of a namespace whose credentials Secret changed (new credentials may
//! heal an Unauthorized).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

use crate::lock::Lock;
use crate::runtime::object::{Managed, object_key};

/// First retry delay of a transient failure.
const BASE: Duration = Duration::from_secs(1);
/// Longest delay of a transient failure.
const CAP: Duration = Duration::from_secs(300);

/// An object's key in the bookkeeping: `<controller>/<namespace>/<name>`.
pub fn key_of<K: Managed>(obj: &K) -> String {
    key_named::<K>(&object_key(obj))
}

/// [`key_of`] the object whose `<namespace>/<name>` is `object`.
pub fn key_named<K: Managed>(object: &str) -> String {
    format!("{}/{object}", K::CONTROLLER)
}

/// The namespace a key of [`key_of`] names.
fn namespace_of(key: &str) -> Option<&str> {
    key.split('/').nth(1)
}

/// Retry bookkeeping of every object, keyed by [`key_of`].
pub struct Backoff {
    failures: Lock<HashMap<String, u32>>,
    holds: Lock<HashMap<String, Hold>>,
    /// How many times each namespace's credentials changed: a reconcile that began
    /// before the last change may have failed with the credentials it replaced.
    releases: Lock<HashMap<String, u64>>,
    /// Objects whose last terminal failure came from replaced credentials: retried as
    /// a transient failure is.
    retry_soon: Lock<HashSet<String>>,
    /// Retry period of terminal failures (ImageNotFound, QuotaExceeded, …).
    pub terminal_period: Duration,
}

/// A terminal failure's hold on one generation of an object.
struct Hold {
    generation: Option<i64>,
    until: Instant,
}

impl Backoff {
    pub fn new(terminal_period: Duration) -> Self {
        Self {
            failures: Lock::default(),
            holds: Lock::default(),
            releases: Lock::default(),
            retry_soon: Lock::default(),
            terminal_period,
        }
    }

    /// Holds `generation` of `key` until its terminal failure is retried: the terminal
    /// period, or the cloud's Retry-After when longer.
    pub fn hold(&self, key: &str, generation: Option<i64>, retry_after: Option<Duration>) {
        let until = Instant::now() + self.terminal_delay(retry_after);
        self.holds
            .lock()
            .insert(key.to_owned(), Hold { generation, until });
    }

    /// How long `generation` of `key` is still held, if it is.
    pub fn held(&self, key: &str, generation: Option<i64>) -> Option<Duration> {
        let mut holds = self.holds.lock();
        let hold = holds.get(key)?;
        let left = hold.until.saturating_duration_since(Instant::now());
        if hold.generation != generation || left.is_zero() {
            holds.remove(key);
            return None;
        }
        Some(left)
    }

    /// The delay before retrying `key` after one more failure.
    pub fn next(&self, key: &str, terminal: bool, retry_after: Option<Duration>) -> Duration {
        let terminal = terminal && !self.retry_soon.lock().remove(key);
        let mut failures = self.failures.lock();
        let count = failures.entry(key.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        if terminal {
            return self.terminal_delay(retry_after);
        }
        jittered(*count).max(retry_after.unwrap_or_default())
    }

    /// The retry delay of a terminal failure: the terminal period, or the cloud's
    /// Retry-After when longer.
    fn terminal_delay(&self, retry_after: Option<Duration>) -> Duration {
        self.terminal_period.max(retry_after.unwrap_or_default())
    }

    /// Lets go of the holds of `namespace`'s objects: its credentials changed.
    pub fn release_namespace(&self, namespace: &str) {
        self.holds
            .lock()
            .retain(|key, _| namespace_of(key) != Some(namespace));
        *self
            .releases
            .lock()
            .entry(namespace.to_owned())
            .or_default() += 1;
    }

    /// The credentials changes of `key`'s namespace so far: read as a reconcile begins.
    pub fn releases_of(&self, key: &str) -> u64 {
        let releases = self.releases.lock();
        namespace_of(key)
            .and_then(|ns| releases.get(ns).copied())
            .unwrap_or(0)
    }

    /// [`Self::hold`], unless the namespace's credentials changed since `seen` (what
    /// [`Self::releases_of`] said as the reconcile began): then the refusal may be the
    /// old credentials', and the object is retried soon instead of held.
    pub fn hold_unless_released(
        &self,
        key: &str,
        generation: Option<i64>,
        retry_after: Option<Duration>,
        seen: u64,
    ) {
        if self.releases_of(key) != seen {
            self.retry_soon.lock().insert(key.to_owned());
            return;
        }
        self.hold(key, generation, retry_after);
    }

    /// Forgets `key`'s failures (and its hold) after a success.
    pub fn reset(&self, key: &str) {
        self.failures.lock().remove(key);
        self.holds.lock().remove(key);
    }

    /// Consecutive failures of `key`.
    pub fn failures(&self, key: &str) -> u32 {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

/// Full jitter: uniform in [ceiling/2, ceiling], ceiling = BASE·2^(n-1) capped.
fn jittered(attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(16);
    let ceiling = BASE.saturating_mul(1 << exp).min(CAP);
    let half = ceiling / 2;
    let extra = rand::rng().random_range(0..=half.as_millis() as u64);
    half + Duration::from_millis(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_delays_grow_and_stay_under_the_cap() {
        let backoff = Backoff::new(Duration::from_secs(120));
        let delays: Vec<Duration> = (0..12)
            .map(|_| backoff.next("vm/a/b", false, None))
            .collect();
        assert!(delays[0] <= Duration::from_secs(1));
        assert!(delays[4] >= Duration::from_secs(8), "{delays:?}");
        assert!(delays.iter().all(|d| *d <= CAP));
        assert_eq!(backoff.failures("vm/a/b"), 12);
        backoff.reset("vm/a/b");
        assert_eq!(backoff.failures("vm/a/b"), 0);
    }

    #[test]
    fn changed_credentials_release_the_holds_of_their_namespace_only() {
        let backoff = Backoff::new(Duration::from_secs(120));
        for key in [
            "loadbalancer/team-b/lb",
            "virtualmachine/team-b/vm",
            "loadbalancer/team-bb/lb",
        ] {
            backoff.hold(key, Some(1), None);
        }
        backoff.release_namespace("team-b");
        assert_eq!(backoff.held("loadbalancer/team-b/lb", Some(1)), None);
        assert_eq!(backoff.held("virtualmachine/team-b/vm", Some(1)), None);
        assert!(backoff.held("loadbalancer/team-bb/lb", Some(1)).is_some());
    }

    #[test]
    fn a_refusal_of_credentials_replaced_meanwhile_is_retried_soon_not_held() {
        let backoff = Backoff::new(Duration::from_secs(120));
        let key = "loadbalancer/team-b/lb";
        // A reconcile begins; the namespace's Secret changes; the old token is refused.
        let seen = backoff.releases_of(key);
        backoff.release_namespace("team-b");
        backoff.hold_unless_released(key, Some(1), None, seen);
        assert_eq!(backoff.held(key, Some(1)), None);
        assert!(backoff.next(key, true, None) < Duration::from_secs(120));
        // Begun after the change, a refusal is the new credentials': held.
        let seen = backoff.releases_of(key);
        backoff.hold_unless_released(key, Some(1), None, seen);
        assert!(backoff.held(key, Some(1)).is_some());
        assert_eq!(backoff.next(key, true, None), Duration::from_secs(120));
        // Another namespace's change is not this one's.
        let other = "loadbalancer/team-a/lb";
        let seen = backoff.releases_of(other);
        backoff.release_namespace("team-b");
        backoff.hold_unless_released(other, Some(1), None, seen);
        assert!(backoff.held(other, Some(1)).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_terminal_failure_holds_its_generation_until_the_retry() {
        let backoff = Backoff::new(Duration::from_secs(120));
        backoff.hold("k", Some(1), None);
        assert_eq!(backoff.held("k", Some(1)), Some(Duration::from_secs(120)));
        assert_eq!(backoff.held("other", Some(1)), None);
        // A fixed spec (a new generation) is not held, and ends the hold.
        assert_eq!(backoff.held("k", Some(2)), None);
        assert_eq!(backoff.held("k", Some(1)), None);
        backoff.hold("k", Some(2), Some(Duration::from_secs(300)));
        assert_eq!(backoff.held("k", Some(2)), Some(Duration::from_secs(300)));
        tokio::time::advance(Duration::from_secs(300)).await;
        assert_eq!(
            backoff.held("k", Some(2)),
            None,
            "retried once the hold ends"
        );
        backoff.hold("k", Some(2), None);
        backoff.reset("k");
        assert_eq!(backoff.held("k", Some(2)), None, "a success ends it");
    }

    #[test]
    fn terminal_failures_retry_slowly_and_retry_after_is_a_floor() {
        let backoff = Backoff::new(Duration::from_secs(120));
        assert_eq!(backoff.next("k", true, None), Duration::from_secs(120));
        let d = backoff.next("other", false, Some(Duration::from_secs(30)));
        assert!(d >= Duration::from_secs(30));
    }
}
