//! Fault injection and request counting per (service, operation).
//! Faults are drawn from a seeded generator so a run repeats; this module decides
//! *whether* a fault fires, the services render it in their own error shape.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One injected fault. `operation: None` matches every operation of the service;
/// `rate` is the probability (0..=1) that a matching request is hit; `count` limits
/// how many times it fires in total (a burst), `None` = forever.
#[derive(Debug, Clone)]
pub struct Fault {
    pub service: String,
    pub operation: Option<String>,
    pub kind: FaultKind,
    pub rate: f64,
    pub count: Option<u64>,
}

impl Fault {
    /// A fault that always fires on `service`/`operation`.
    pub fn new(service: &str, operation: Option<&str>, kind: FaultKind) -> Self {
        Fault {
            service: service.to_string(),
            operation: operation.map(str::to_string),
            kind,
            rate: 1.0,
            count: None,
        }
    }

    /// Fire with probability `rate`.
    pub fn with_rate(mut self, rate: f64) -> Self {
        self.rate = rate;
        self
    }

    /// Fire at most `count` times.
    pub fn times(mut self, count: u64) -> Self {
        self.count = Some(count);
        self
    }

    fn matches(&self, service: &str, operation: &str) -> bool {
        self.service == service && self.operation.as_deref().is_none_or(|op| op == operation)
    }
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Answer with this HTTP status and the service's error body.
    Status(u16),
    /// Answer 429 with `Retry-After: retry_after_secs`.
    RateLimited { retry_after_secs: u64 },
    /// Delay the answer.
    Latency(Duration),
    /// New servers created while this fault is active end in `ERROR` (Nova `create_server`).
    ServerError,
}

/// How a request is refused by a fault.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Refusal {
    Status(u16),
    RateLimited(u64),
}

/// Outcome of checking the faults for one request.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub delay: Duration,
    pub refusal: Option<Refusal>,
}

/// The active faults and the generator that decides them.
pub(crate) struct FaultTable {
    inner: Mutex<(Vec<Fault>, StdRng)>,
}

impl FaultTable {
    pub fn new(seed: u64) -> Self {
        FaultTable {
            inner: Mutex::new((Vec::new(), StdRng::seed_from_u64(seed))),
        }
    }

    pub fn inject(&self, fault: Fault) {
        lock(&self.inner).0.push(fault);
    }

    pub fn clear(&self) {
        lock(&self.inner).0.clear();
    }

    /// Faults that act on the request itself (status, 429, latency).
    pub fn check(&self, service: &str, operation: &str) -> Verdict {
        let mut verdict = Verdict::default();
        let mut guard = lock(&self.inner);
        let (faults, rng) = &mut *guard;
        for fault in faults.iter_mut().filter(|f| f.matches(service, operation)) {
            let refusal = match fault.kind {
                FaultKind::Status(code) => Some(Refusal::Status(code)),
                FaultKind::RateLimited { retry_after_secs } => {
                    Some(Refusal::RateLimited(retry_after_secs))
                }
                FaultKind::Latency(_) => None,
                FaultKind::ServerError => continue,
            };
            if refusal.is_some() && verdict.refusal.is_some() {
                continue;
            }
            if !fire(fault, rng) {
                continue;
            }
            match (&fault.kind, refusal) {
                (FaultKind::Latency(d), _) => verdict.delay += *d,
                (_, r) => verdict.refusal = r,
            }
        }
        faults.retain(|f| f.count != Some(0));
        verdict
    }

    /// Whether `service` is down: a fault refuses every request to it, always. Nova,
    /// which calls it behind the API, fails the same way.
    pub fn down(&self, service: &str) -> bool {
        lock(&self.inner).0.iter().any(|f| {
            f.operation.is_none()
                && f.service == service
                && f.rate >= 1.0
                && f.count.is_none()
                && matches!(f.kind, FaultKind::Status(code) if code >= 500)
        })
    }

    /// Whether a server created now should end in ERROR (consumes the fault's count).
    pub fn server_error(&self, service: &str, operation: &str) -> bool {
        let mut guard = lock(&self.inner);
        let (faults, rng) = &mut *guard;
        let mut hit = false;
        for fault in faults.iter_mut() {
            if fault.kind == FaultKind::ServerError
                && fault.matches(service, operation)
                && fire(fault, rng)
            {
                hit = true;
                break;
            }
        }
        faults.retain(|f| f.count != Some(0));
        hit
    }
}

fn fire(fault: &mut Fault, rng: &mut StdRng) -> bool {
    if fault.count == Some(0) {
        return false;
    }
    // Roll only when the rate is fractional, so a rate-1.0 fault leaves the sequence alone.
    let hit = fault.rate >= 1.0 || (fault.rate > 0.0 && rng.random::<f64>() < fault.rate);
    if hit && let Some(n) = fault.count.as_mut() {
        *n -= 1;
    }
    hit
}

/// Requests per (service, operation).
#[derive(Default)]
pub(crate) struct Counters {
    inner: Mutex<HashMap<(&'static str, &'static str), u64>>,
    /// When each request arrived (of every service and operation), in order: the
    /// simulator's own record of the rate it was asked at.
    arrivals: Mutex<Vec<std::time::Instant>>,
}

impl Counters {
    pub fn bump(&self, service: &'static str, operation: &'static str) {
        *lock(&self.inner).entry((service, operation)).or_default() += 1;
        lock(&self.arrivals).push(std::time::Instant::now());
    }

    /// The most requests that arrived within any one second.
    pub fn busiest_second(&self) -> usize {
        let arrivals = lock(&self.arrivals);
        let mut start = 0;
        let mut most = 0;
        for (end, at) in arrivals.iter().enumerate() {
            while at.duration_since(arrivals[start]) >= std::time::Duration::from_secs(1) {
                start += 1;
            }
            most = most.max(end + 1 - start);
        }
        most
    }

    pub fn get(&self, service: &str, operation: &str) -> u64 {
        lock(&self.inner)
            .get(&(service, operation))
            .copied()
            .unwrap_or(0)
    }

    pub fn snapshot(&self) -> BTreeMap<(String, String), u64> {
        lock(&self.inner)
            .iter()
            .map(|((s, o), n)| ((s.to_string(), o.to_string()), *n))
            .collect()
    }
}

/// Locks a mutex, recovering from poisoning: a panicked handler must not wedge the simulator.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_second_counts_the_most_arrivals_within_one_second() {
        let counters = Counters::default();
        assert_eq!(counters.busiest_second(), 0);
        for _ in 0..5 {
            counters.bump("compute", "get_server");
        }
        assert_eq!(counters.busiest_second(), 5);
    }

    #[test]
    fn count_limited_fault_fires_exactly_count_times() {
        let table = FaultTable::new(1);
        table.inject(Fault::new("compute", Some("get_server"), FaultKind::Status(503)).times(2));
        let hits = (0..5)
            .filter(|_| table.check("compute", "get_server").refusal.is_some())
            .count();
        assert_eq!(hits, 2);
    }

    #[test]
    fn same_seed_gives_same_fault_sequence() {
        let run = || {
            let table = FaultTable::new(7);
            table.inject(Fault::new("network", None, FaultKind::Status(500)).with_rate(0.5));
            (0..64)
                .map(|_| table.check("network", "list_networks").refusal.is_some())
                .collect::<Vec<_>>()
        };
        let first = run();
        assert_eq!(first, run());
        assert!(first.iter().any(|h| *h) && first.iter().any(|h| !*h));
    }

    #[test]
    fn fault_for_one_operation_leaves_others_alone() {
        let table = FaultTable::new(1);
        table.inject(Fault::new(
            "compute",
            Some("create_server"),
            FaultKind::RateLimited {
                retry_after_secs: 3,
            },
        ));
        assert_eq!(table.check("compute", "get_server").refusal, None);
        assert_eq!(
            table.check("compute", "create_server").refusal,
            Some(Refusal::RateLimited(3))
        );
    }
}
