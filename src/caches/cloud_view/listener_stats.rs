//! Octavia's statistics of the listeners autoscaled groups read, as last fetched: one
//! reading serves every group of the project that reads the listener until it is no
//! longer fresh, and the reading before it gives the rate of new connections.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cloud::ids::ListenerId;
use crate::cloud::model::loadbalancing::ListenerStats;
use crate::lock::Lock;

/// How long readings are kept at most, whatever the callers' freshness: a bound on the
/// map, not a decision.
const KEPT: Duration = Duration::from_secs(3600);

/// One fetch.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    pub at: Instant,
    pub stats: ListenerStats,
}

/// A listener's last reading and the one before it.
#[derive(Clone, Copy, Debug)]
pub struct Readings {
    pub last: Reading,
    pub before: Option<Reading>,
}

impl Readings {
    /// New connections per second between the two readings; `None` with one reading, or
    /// when the count went down (an amphora failed over and counts anew).
    pub fn new_per_second(&self) -> Option<f64> {
        let before = self.before?;
        let seconds = self.last.at.duration_since(before.at).as_secs_f64();
        let added = self
            .last
            .stats
            .total_connections
            .checked_sub(before.stats.total_connections)?;
        // Counts are far below 2^52: exact as f64.
        (seconds >= 1.0).then(|| added as f64 / seconds)
    }
}

#[derive(Default)]
pub struct ListenerStatsView {
    readings: Lock<HashMap<ListenerId, Readings>>,
}

impl ListenerStatsView {
    /// The listener's readings, if the last is younger than `fresh`.
    pub fn fresh(&self, id: &ListenerId, fresh: Duration) -> Option<Readings> {
        self.readings
            .lock()
            .get(id)
            .filter(|r| r.last.at.elapsed() < fresh)
            .copied()
    }

    /// Records a fetch of now.
    pub fn record(&self, id: &ListenerId, stats: ListenerStats) -> Readings {
        let mut readings = self.readings.lock();
        readings.retain(|_, r| r.last.at.elapsed() < KEPT);
        let last = Reading {
            at: Instant::now(),
            stats,
        };
        let before = readings.get(id).map(|r| r.last);
        let now = Readings { last, before };
        readings.insert(id.clone(), now);
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(total: u64) -> ListenerStats {
        ListenerStats {
            active_connections: 1,
            total_connections: total,
        }
    }

    #[test]
    fn the_rate_is_taken_between_two_readings_and_none_after_a_reset() {
        let at = Instant::now();
        let reading = |secs, total| Reading {
            at: at + Duration::from_secs(secs),
            stats: stats(total),
        };
        let two = Readings {
            last: reading(10, 1500),
            before: Some(reading(0, 500)),
        };
        assert_eq!(two.new_per_second(), Some(100.0));
        let one = Readings {
            last: reading(10, 1500),
            before: None,
        };
        assert_eq!(one.new_per_second(), None);
        let reset = Readings {
            last: reading(10, 5),
            before: Some(reading(0, 500)),
        };
        assert_eq!(reset.new_per_second(), None);
    }

    #[test]
    fn a_reading_serves_while_fresh_and_the_next_keeps_it_as_before() {
        let view = ListenerStatsView::default();
        let id = ListenerId::new("l-1");
        assert!(view.fresh(&id, Duration::from_secs(60)).is_none());
        view.record(&id, stats(10));
        let seen = view.fresh(&id, Duration::from_secs(60)).expect("fresh");
        assert_eq!(seen.last.stats, stats(10));
        assert!(view.fresh(&id, Duration::ZERO).is_none());
        let next = view.record(&id, stats(20));
        assert_eq!(next.before.map(|r| r.stats), Some(stats(10)));
    }
}
