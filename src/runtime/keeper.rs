//! What both cloud-owning controllers decide the same way about the resources found for
//! one owner: which one it keeps, which are duplicates a crash left behind, and when a
//! kept resource in ERROR is replaced rather than reported again. Pure.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// The resource an object keeps among those found with its owner record: the one its
/// status records, else the first `preferred`, else the first `usable`.
pub fn keeper<'a, R>(
    found: &'a [R],
    recorded: Option<&str>,
    id: impl Fn(&R) -> &str,
    preferred: impl Fn(&R) -> bool,
    usable: impl Fn(&R) -> bool,
) -> Option<&'a R> {
    found
        .iter()
        .find(|r| Some(id(r)) == recorded)
        .or_else(|| found.iter().find(|r| preferred(r)))
        .or_else(|| found.iter().find(|r| usable(r)))
}

/// The resources besides the kept one that `count` (a crash between a create and the
/// status write left them): they are deleted before anything else.
pub fn duplicates<'a, R>(
    found: &'a [R],
    kept: &str,
    id: impl Fn(&R) -> &str,
    count: impl Fn(&R) -> bool,
) -> Vec<&'a R> {
    found.iter().filter(|r| id(r) != kept && count(r)).collect()
}

/// What to do about a kept resource in ERROR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InError {
    /// Say so on the object (`first`: it is news) and look again in `retry_in`.
    Report { first: bool, retry_in: Duration },
    /// The delay since the first report has passed: replace it.
    Replace,
}

/// A resource in ERROR is reported first, and replaced once `delay` has passed since
/// that report (`reported`): the backoff that keeps a broken image or a full cloud
/// from a create-delete loop.
pub fn in_error(reported: Option<Timestamp>, delay: Duration, now: Timestamp) -> InError {
    let Some(reported) = reported else {
        return InError::Report {
            first: true,
            retry_in: delay,
        };
    };
    let waited = now.duration_since(reported).unsigned_abs();
    if waited >= delay {
        InError::Replace
    } else {
        InError::Report {
            first: false,
            retry_in: delay - waited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_resource_is_kept_before_a_preferred_one() {
        let found = [("a", false), ("b", true), ("c", true)];
        let keep = |recorded| keeper(&found, recorded, |r| r.0, |r| r.1, |_| true).map(|r| r.0);
        assert_eq!(keep(Some("c")), Some("c"));
        assert_eq!(keep(None), Some("b"));
        assert_eq!(keep(Some("gone")), Some("b"));
        let unusable = keeper(&found, None, |r| r.0, |_| false, |r| r.0 == "z");
        assert!(unusable.is_none());
    }

    #[test]
    fn an_error_is_reported_then_replaced_after_the_delay() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().expect("a timestamp");
        let delay = Duration::from_secs(30);
        assert_eq!(
            in_error(None, delay, t0),
            InError::Report {
                first: true,
                retry_in: delay
            }
        );
        let later = t0 + Duration::from_secs(10);
        assert_eq!(
            in_error(Some(t0), delay, later),
            InError::Report {
                first: false,
                retry_in: Duration::from_secs(20)
            }
        );
        assert_eq!(in_error(Some(t0), delay, t0 + delay), InError::Replace);
    }
}
