//! Per-object retry delays: exponential with full jitter for transient failures, a
//! slow fixed period for terminal ones, never sooner than the cloud's Retry-After.
//! Success forgets the object's history.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use rand::Rng;

/// First retry delay of a transient failure.
const BASE: Duration = Duration::from_secs(1);
/// Longest delay of a transient failure.
const CAP: Duration = Duration::from_secs(300);

/// Retry bookkeeping of every object, keyed by `kind/namespace/name`.
pub struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
    /// Retry period of terminal failures (ImageNotFound, QuotaExceeded, …).
    pub terminal_period: Duration,
}

impl Backoff {
    pub fn new(terminal_period: Duration) -> Self {
        Self {
            failures: Mutex::default(),
            terminal_period,
        }
    }

    /// The delay before retrying `key` after one more failure.
    pub fn next(&self, key: &str, terminal: bool, retry_after: Option<Duration>) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let count = failures.entry(key.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        let delay = if terminal {
            self.terminal_period
        } else {
            jittered(*count)
        };
        delay.max(retry_after.unwrap_or_default())
    }

    /// Forgets `key`'s failures after a success.
    pub fn reset(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }

    /// Consecutive failures of `key`.
    pub fn failures(&self, key: &str) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .copied()
            .unwrap_or(0)
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
    fn terminal_failures_retry_slowly_and_retry_after_is_a_floor() {
        let backoff = Backoff::new(Duration::from_secs(120));
        assert_eq!(backoff.next("k", true, None), Duration::from_secs(120));
        let d = backoff.next("other", false, Some(Duration::from_secs(30)));
        assert!(d >= Duration::from_secs(30));
    }
}
