//! The request budget of each cloud project: a token bucket (`requestsPerSecond`,
//! `burst`) every call of every service passes before it goes on the wire, shared by
//! every client and controller acting in that project. Public OpenStack clouds publish
//! budgets of about 20 requests per second per project; Nova has no rate limit of its
//! own, so a burst of ours would land on API servers every team shares.
//!
//! Writes go first: while a write waits for budget, reads wait behind it, so a create
//! is never starved by polls. A 429 with `Retry-After` pauses the whole project, not
//! only the call that got it.
//!
//! With `--shards`, several replicas may act in one project; each spends its share,
//! the budget divided by how many of them do ([`Budgets::share`]), so that together they
//! keep to it.
//!
//! Why not `governor`: its keyed GCRA limiter hands out slots in arrival order, and a
//! read that already holds a slot cannot give it to a write that comes after; the
//! bucket below is a few lines, and the transport's concurrency cap stays beside it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::lock::guard as lock;

/// `requestBudget` of the configuration file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetSpec {
    pub requests_per_second: f64,
    pub burst: u32,
}

impl Default for BudgetSpec {
    fn default() -> Self {
        Self {
            requests_per_second: 20.0,
            burst: 40,
        }
    }
}

/// The budgets of every project the operator acts in.
#[derive(Debug)]
pub struct Budgets {
    spec: BudgetSpec,
    projects: Mutex<HashMap<String, Arc<Budget>>>,
    /// How many replicas spend each project's budget, where more than this one do.
    sharers: Mutex<HashMap<String, u32>>,
}

impl Budgets {
    pub fn new(spec: BudgetSpec) -> Arc<Self> {
        Arc::new(Self {
            spec,
            projects: Mutex::new(HashMap::new()),
            sharers: Mutex::new(HashMap::new()),
        })
    }

    /// The budget of `project` (created full on first use).
    pub fn of(&self, project: &str) -> Arc<Budget> {
        let sharers = self.sharers_of(project);
        lock(&self.projects)
            .entry(project.to_owned())
            .or_insert_with(|| Arc::new(Budget::new(self.spec).shared_by(sharers)))
            .clone()
    }

    /// From now on each project of `sharers` is spent by that many replicas, this one
    /// among them, and this one spends its share; every other project by this one
    /// alone. Returns the projects whose number changed, with the new number.
    pub fn share(&self, sharers: HashMap<String, u32>) -> Vec<(String, u32)> {
        let mut changed = Vec::new();
        let mut current = lock(&self.sharers);
        for (project, budget) in lock(&self.projects).iter() {
            let now = sharers.get(project).copied().unwrap_or(1).max(1);
            if current.get(project).copied().unwrap_or(1) != now {
                changed.push((project.clone(), now));
            }
            budget.sharers.store(now, Ordering::Relaxed);
        }
        *current = sharers;
        changed.sort();
        changed
    }

    /// How many replicas spend `project`'s budget, as last shared.
    pub fn sharers_of(&self, project: &str) -> u32 {
        lock(&self.sharers)
            .get(project)
            .copied()
            .unwrap_or(1)
            .max(1)
    }
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled: Instant,
    writes_waiting: usize,
    paused_until: Option<Instant>,
}

/// One project's token bucket.
#[derive(Debug)]
pub struct Budget {
    spec: BudgetSpec,
    /// The replicas spending this budget: this one refills at that part of the rate,
    /// up to that part of the burst.
    sharers: AtomicU32,
    state: Mutex<State>,
}

/// Decrements the waiting writes when a waiting write ends, however it ends.
struct WaitingWrite<'a>(&'a Budget);

impl Drop for WaitingWrite<'_> {
    fn drop(&mut self) {
        self.0.lock().writes_waiting -= 1;
    }
}

impl Budget {
    fn new(spec: BudgetSpec) -> Self {
        Self {
            spec,
            sharers: AtomicU32::new(1),
            state: Mutex::new(State {
                tokens: f64::from(spec.burst.max(1)),
                refilled: Instant::now(),
                writes_waiting: 0,
                paused_until: None,
            }),
        }
    }

    fn shared_by(self, sharers: u32) -> Self {
        self.sharers.store(sharers.max(1), Ordering::Relaxed);
        let burst = self.burst();
        let mut state = self.lock();
        state.tokens = state.tokens.min(burst);
        drop(state);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// This replica's part of the rate and of the burst.
    fn rate(&self) -> f64 {
        let sharers = f64::from(self.sharers.load(Ordering::Relaxed).max(1));
        (self.spec.requests_per_second / sharers).max(f64::MIN_POSITIVE)
    }

    fn burst(&self) -> f64 {
        let sharers = self.sharers.load(Ordering::Relaxed).max(1);
        f64::from((self.spec.burst / sharers).max(1))
    }

    /// Waits until one request may go; how long it waited.
    pub async fn acquire(&self, write: bool) -> Duration {
        let started = Instant::now();
        let _waiting = write.then(|| {
            self.lock().writes_waiting += 1;
            WaitingWrite(self)
        });
        loop {
            let wait = self.try_take(write);
            match wait {
                None => return started.elapsed(),
                Some(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// Takes a token if one is free and the request may have it; else how long to
    /// wait before trying again.
    fn try_take(&self, write: bool) -> Option<Duration> {
        let mut s = self.lock();
        let now = Instant::now();
        if let Some(until) = s.paused_until {
            if until > now {
                return Some(until - now);
            }
            s.paused_until = None;
        }
        let (rate, burst) = (self.rate(), self.burst());
        s.tokens = (s.tokens + now.duration_since(s.refilled).as_secs_f64() * rate).min(burst);
        s.refilled = now;
        // A read leaves the tokens to the writes waiting, unless there is one for each.
        let reserved = if write { 0.0 } else { s.writes_waiting as f64 };
        if s.tokens >= 1.0 + reserved {
            s.tokens -= 1.0;
            return None;
        }
        let missing = 1.0 + reserved - s.tokens;
        Some(Duration::from_secs_f64(missing / rate).max(Duration::from_millis(1)))
    }

    /// The cloud asked for a pause (429 with `Retry-After`): every request of the
    /// project waits it out.
    pub fn pause(&self, pause: Duration) {
        let until = Instant::now() + pause;
        let mut s = self.lock();
        s.paused_until = Some(s.paused_until.map_or(until, |t| t.max(until)));
    }
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;
