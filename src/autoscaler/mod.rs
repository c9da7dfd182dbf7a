//! What autoscaled groups share: the configured Prometheus and its answers (one query
//! per freshness period, whoever asks), and each group's recent proposals (the
//! stabilization windows). Proposals live in memory: a replica that starts, or takes a
//! group over, knows none, and a scale-down then waits a full window.

pub mod prometheus;
pub mod recommend;
pub mod schedule;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use crate::config::PrometheusConfig;
use crate::lock::Lock;
use prometheus::{Prometheus, QueryError};
pub use recommend::Settled;
use recommend::{Behavior, Bounds, Decision, History};

/// How long answers and proposals are kept at most: a bound on the maps.
const KEPT: Duration = Duration::from_secs(3600);

type Answer = (Instant, Result<f64, QueryError>);

/// Shared by every group's reconcile.
pub struct Autoscaler {
    prometheus: Result<Prometheus, QueryError>,
    answers: Lock<HashMap<String, Answer>>,
    histories: Lock<HashMap<String, History>>,
}

impl Autoscaler {
    pub fn new(config: Option<&PrometheusConfig>) -> Self {
        let prometheus = match config {
            None => Err(QueryError::NotConfigured),
            Some(c) => Prometheus::new(c).map_err(|message| QueryError::Unreachable {
                url: c.url.clone(),
                message,
            }),
        };
        Self {
            prometheus,
            answers: Lock::default(),
            histories: Lock::default(),
        }
    }

    /// The value of `promql`, asked of Prometheus only when no answer younger than
    /// `fresh` is kept (a failure is kept as long: a Prometheus that is down is not
    /// asked again by every group at once).
    pub async fn query(&self, promql: &str, fresh: Duration) -> Result<f64, QueryError> {
        if let Some((at, answer)) = self.answers.lock().get(promql)
            && at.elapsed() < fresh
        {
            return answer.clone();
        }
        let prometheus = self.prometheus.as_ref().map_err(Clone::clone)?;
        let answer = prometheus.query(promql).await;
        let mut answers = self.answers.lock();
        answers.retain(|_, (at, _)| at.elapsed() < KEPT);
        answers.insert(promql.to_owned(), (Instant::now(), answer.clone()));
        answer
    }

    /// Records the group's proposal (if any) and decides its next size.
    pub fn decide(&self, group: &str, proposal: Option<i32>, round: Round) -> Decision {
        let mut histories = self.histories.lock();
        let history = histories
            .entry(group.to_owned())
            .or_insert_with(|| History::new(round.now));
        if let Some(p) = proposal {
            history.record(round.now, p, &round.behavior);
        }
        recommend::decide(
            round.current,
            proposal,
            history,
            &round.behavior,
            round.bounds,
            (round.settled, round.now),
        )
    }

    /// The group is gone, or no longer autoscaled.
    pub fn forget(&self, group: &str) {
        self.histories.lock().remove(group);
    }
}

/// One round of a group, besides its proposal.
pub struct Round {
    pub current: i32,
    pub behavior: Behavior,
    pub bounds: Bounds,
    /// The group reached the size of its last step.
    pub settled: Settled,
    pub now: Timestamp,
}
