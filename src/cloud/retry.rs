//! When the choke point tries again, and after how long. Pure: no clock, no I/O; the
//! jitter source is passed in so tests are deterministic.
//!
//! Rules: at most `max_attempts` tries and `max_elapsed` in total; exponential backoff
//! `base * 2^(n-1)` capped at `max_delay`, with "equal jitter" (half fixed, half random)
//! so a retry never comes immediately and a burst of clients spreads out; never sooner
//! than the server's Retry-After. Which answers are retryable at all is decided by
//! [`is_retryable`].

use std::time::Duration;

use http::Method;

/// Retry bounds of one cloud connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Total time budget across attempts, waits included.
    pub max_elapsed: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
            // Past this a reconcile returns the error and requeues with its own backoff.
            max_elapsed: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`, or `None` to give up. `jitter` is in [0, 1).
    pub fn next_delay(
        &self,
        attempt: u32,
        elapsed: Duration,
        retry_after: Option<Duration>,
        jitter: f64,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
        let capped = exp.min(self.max_delay);
        let backoff = capped / 2 + capped.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
        let wait = retry_after.map_or(backoff, |ra| ra.max(backoff));
        (elapsed + wait <= self.max_elapsed).then_some(wait)
    }
}

/// What went wrong in one attempt, as far as retrying is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with this status.
    Status(u16),
    /// The connection could not be established: nothing was sent.
    Connect,
    /// Sent (maybe partly), but no complete answer: timeout, reset.
    NoResponse,
}

/// Whether a failure may be retried for this method.
///
/// Idempotent requests (GET, PUT, DELETE, and POSTs flagged idempotent) retry on 429, 5xx
/// and any transport failure. A create (`POST`) retries only where the cloud certainly
/// did not act on it — 429 and 503 (refused before processing) and connect failures
/// (nothing sent); never on 500/502/504 or a lost answer, where a duplicate server or load
/// balancer could result. The controllers look their objects up by owner before any
/// create, so the next reconcile finds one that was in fact made.
pub fn is_retryable(method: &Method, idempotent: bool, failure: Failure) -> bool {
    let safe = idempotent || *method != Method::POST;
    match failure {
        Failure::Connect => true,
        Failure::Status(429) | Failure::Status(503) => true,
        Failure::Status(500) | Failure::Status(502) | Failure::Status(504) => safe,
        Failure::Status(_) => false,
        Failure::NoResponse => safe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy = RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(1000),
        max_elapsed: Duration::from_secs(10),
    };

    #[test]
    fn backoff_doubles_and_is_capped_with_half_of_it_jittered() {
        let d = |n, j| POLICY.next_delay(n, Duration::ZERO, None, j);
        assert_eq!(d(1, 0.0), Some(Duration::from_millis(50)));
        assert_eq!(d(2, 0.0), Some(Duration::from_millis(100)));
        assert_eq!(d(3, 0.5), Some(Duration::from_millis(300)));
        assert_eq!(d(4, 0.0), Some(Duration::from_millis(400)));
        let many = RetryPolicy {
            max_attempts: 50,
            ..POLICY
        };
        assert_eq!(
            many.next_delay(30, Duration::ZERO, None, 0.0),
            Some(Duration::from_millis(500))
        );
        assert!(d(1, 0.999) < Some(Duration::from_millis(100)));
    }

    #[test]
    fn gives_up_after_max_attempts_or_when_the_budget_is_spent() {
        assert_eq!(POLICY.next_delay(5, Duration::ZERO, None, 0.0), None);
        assert_eq!(
            POLICY.next_delay(1, Duration::from_secs(10), None, 0.0),
            None
        );
    }

    #[test]
    fn never_retries_sooner_than_retry_after() {
        let wait = POLICY.next_delay(1, Duration::ZERO, Some(Duration::from_secs(2)), 0.9);
        assert_eq!(wait, Some(Duration::from_secs(2)));
        let beyond_budget =
            POLICY.next_delay(1, Duration::from_secs(9), Some(Duration::from_secs(2)), 0.0);
        assert_eq!(beyond_budget, None);
    }

    #[test]
    fn creates_are_retried_only_where_the_cloud_did_not_act() {
        let post = Method::POST;
        assert!(is_retryable(&post, false, Failure::Status(429)));
        assert!(is_retryable(&post, false, Failure::Status(503)));
        assert!(is_retryable(&post, false, Failure::Connect));
        assert!(!is_retryable(&post, false, Failure::Status(500)));
        assert!(!is_retryable(&post, false, Failure::NoResponse));
        assert!(is_retryable(&Method::GET, false, Failure::Status(500)));
        assert!(is_retryable(&Method::DELETE, false, Failure::NoResponse));
        assert!(!is_retryable(&Method::GET, false, Failure::Status(404)));
        assert!(!is_retryable(&Method::PUT, false, Failure::Status(409)));
    }
}
