//! Leader election through a `coordination.k8s.io/v1` Lease, so that of several
//! replicas exactly one runs the controllers.
//!
//! [`decide`] is the pure rule (lease record + clock → what to write); [`LeaderElector`]
//! does the API calls. Writes carry the read `resourceVersion`, so two candidates racing
//! for an expired lease cannot both win: the loser gets 409 Conflict and stays follower.
//! A holder is alive while this candidate sees its Lease change ([`Liveness`], the same
//! rule the shards judge their members by): no clock is compared with another's.
//!
//! The holder stops on its own [`Fence`]: two thirds of the lease duration after it *sent*
//! its last renewal that got through (as client-go's renew deadline), whatever the API
//! server answers or fails to answer meanwhile. A peer takes over no earlier than the whole
//! lease duration after it saw that renewal, which it cannot see before it was stamped,
//! so the two never run together.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::leases::liveness::Liveness;
use crate::lock::Lock;

/// What a candidate should do with the lease it just read.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// No lease exists: create it with us as holder.
    Create(LeaseSpec),
    /// Write this spec (renewal, or takeover of an expired or released lease).
    Update(LeaseSpec),
    /// Someone else holds a live lease.
    Follow { holder: String },
}

/// Decides, from the current lease spec (if any), what `identity` does at `now`; `live`
/// says whether another holder is alive as this candidate observes it ([`Liveness`]).
pub fn decide(
    current: Option<&LeaseSpec>,
    identity: &str,
    lease_duration: Duration,
    now: Timestamp,
    live: impl Fn(&str) -> bool,
) -> Decision {
    let seconds = i32::try_from(lease_duration.as_secs())
        .unwrap_or(i32::MAX)
        .max(1);
    let ours = |acquire: Option<MicroTime>, transitions: Option<i32>| LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(seconds),
        acquire_time: acquire.or(Some(MicroTime(now))),
        renew_time: Some(MicroTime(now)),
        lease_transitions: transitions,
        ..LeaseSpec::default()
    };
    let Some(spec) = current else {
        return Decision::Create(ours(None, Some(0)));
    };
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == identity {
        return Decision::Update(ours(spec.acquire_time.clone(), spec.lease_transitions));
    }
    if !holder.is_empty() && live(&holder) {
        return Decision::Follow { holder };
    }
    let transitions = spec.lease_transitions.unwrap_or(0).saturating_add(1);
    Decision::Update(ours(None, Some(transitions)))
}

/// Errors talking to the Lease API.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("failed to {action} lease {namespace}/{name}: {}", crate::kube_error::describe(.source))]
    Api {
        action: &'static str,
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("lease {namespace}/{name}: the API server did not answer within {after:?}")]
    Timeout {
        namespace: String,
        name: String,
        after: Duration,
    },
}

impl LeaseError {
    /// Whether waiting cannot help: the Lease's namespace does not exist (404) or the
    /// operator may not use Leases there (403). Says what to do about it.
    pub fn hint(&self) -> Option<String> {
        let Self::Api {
            namespace, source, ..
        } = self
        else {
            return None;
        };
        match crate::kube_error::api_code(source)? {
            404 => Some(format!(
                "create the namespace (kubectl create namespace {namespace}), pass \
                 --lease-namespace with one that exists, or run without --leader-elect"
            )),
            403 => Some(format!(
                "grant the operator get/create/update on leases.coordination.k8s.io in \
                 {namespace} (config/rbac), or run without --leader-elect"
            )),
            _ => None,
        }
    }
}

/// Annotations every write of a Lease carries, changed by its holder as it goes.
pub type Annotations = Arc<Lock<BTreeMap<String, String>>>;

/// One candidate for the lease `namespace/name`.
pub struct LeaderElector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    annotations: Annotations,
    /// When this candidate last saw the Lease's holder renew it.
    liveness: Lock<Liveness>,
}

impl LeaderElector {
    pub fn new(
        client: Client,
        namespace: &str,
        name: &str,
        identity: &str,
        lease_duration: Duration,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration,
            annotations: Annotations::default(),
            liveness: Lock::new(Liveness::new(lease_duration)),
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// What the next acquisitions and renewals write as annotations of the Lease (a
    /// shard's projects); others already on it are left as they are.
    pub fn annotations(&self) -> Annotations {
        self.annotations.clone()
    }

    fn annotate(&self, metadata: &mut ObjectMeta) {
        let ours = self.annotations.lock();
        if !ours.is_empty() {
            let annotations = metadata.annotations.get_or_insert_with(BTreeMap::new);
            annotations.extend(ours.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }

    fn error(&self, action: &'static str, source: kube::Error) -> LeaseError {
        LeaseError::Api {
            action,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Reads the lease and acquires or renews it when [`decide`] says so. Returns, when we
    /// hold the lease afterwards, the instant its `renewTime` was stamped (what peers count
    /// its expiry from); `None` when another holds it — losing a write race is no error.
    pub async fn try_acquire_or_renew(&self) -> Result<Option<Instant>, LeaseError> {
        let current = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error("read", e))?;
        let stamped = Instant::now();
        let decision = {
            let seen = std::time::Instant::now();
            let mut liveness = self.liveness.lock();
            liveness.observe(current.as_slice(), seen);
            decide(
                current.as_ref().and_then(|l| l.spec.as_ref()),
                &self.identity,
                self.lease_duration,
                Timestamp::now(),
                |holder| liveness.live(holder, seen),
            )
        };
        let result = match decision {
            Decision::Follow { .. } => return Ok(None),
            Decision::Create(spec) => {
                let mut lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.annotate(&mut lease.metadata);
                self.api.create(&PostParams::default(), &lease).await
            }
            Decision::Update(spec) => {
                let mut lease = current.unwrap_or_default();
                lease.spec = Some(spec);
                self.annotate(&mut lease.metadata);
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(_) => Ok(Some(stamped)),
            // Another candidate wrote first (AlreadyExists or a stale resourceVersion).
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
            Err(e) => Err(self.error("write", e)),
        }
    }

    /// [`Self::try_acquire_or_renew`], given up when the API server has not answered
    /// within `within` (a hung connection must not hold the loop past the fence).
    async fn attempt(&self, within: Duration) -> Result<Option<Instant>, LeaseError> {
        match tokio::time::timeout(within, self.try_acquire_or_renew()).await {
            Ok(attempt) => attempt,
            Err(_) => Err(LeaseError::Timeout {
                namespace: self.namespace.clone(),
                name: self.name.clone(),
                after: within,
            }),
        }
    }

    /// Gives the lease up if we hold it, so a standby takes over at once instead of
    /// after the lease expires.
    pub async fn release(&self) -> Result<(), LeaseError> {
        let Some(mut lease) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error("read", e))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(e) => Err(self.error("release", e)),
        }
    }
}

/// Runs `lead` while this candidate holds the lease: tries every `retry_every` (sooner
/// after a failed try), starts `lead` on acquiring, aborts it on losing the lease or when
/// its [`Fence`] passes without a renewal getting through, and releases the lease when
/// `shutdown` resolves.
///
/// A first attempt that fails in a way waiting cannot fix ([`LeaseError::hint`]) ends
/// the election with that error instead of retrying forever.
pub async fn run_elected<F>(
    elector: &LeaderElector,
    retry_every: Duration,
    shutdown: impl Future<Output = ()>,
    mut lead: F,
) -> Result<(), FatalLeaseError>
where
    F: FnMut() -> tokio::task::JoinHandle<()>,
{
    let mut term = Term {
        leading: None,
        fence: Fence::new(elector.lease_duration),
    };
    let mut ever_answered = false;
    tokio::pin!(shutdown);
    loop {
        let attempt = tokio::select! {
            attempt = elector.attempt(retry_every) => attempt,
            () = term.fence.passed(), if term.leading.is_some() => {
                term.stop(elector);
                continue;
            }
            () = &mut shutdown => break,
        };
        if let Err(error) = &attempt
            && !ever_answered
            && let Some(hint) = error.hint()
        {
            return Err(FatalLeaseError {
                error: error.to_string(),
                hint,
            });
        }
        ever_answered |= attempt.is_ok();
        // A failed renewal is retried within the fence, not a whole period later.
        let pause = if attempt.is_ok() {
            retry_every
        } else {
            retry_every / 4
        };
        term.follow(elector, attempt, &mut lead);
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(pause) => {}
            () = term.fence.passed(), if term.leading.is_some() => term.stop(elector),
        }
    }
    if let Some(task) = term.leading.take() {
        task.abort();
        // Wait for the controllers to stop before another replica may start.
        let _ = task.await;
    }
    if let Err(error) = elector.release().await {
        tracing::warn!(%error, "failed to release the lease; a standby takes over when it expires");
    }
    Ok(())
}

/// Until when a holder may act on its Lease: two thirds of the lease duration after the
/// last renewal that got through was stamped. Counted from the stamp, not from the
/// answer, since a peer counts the lease's expiry from the `renewTime` it reads.
#[derive(Debug)]
pub struct Fence {
    renew_deadline: Duration,
    until: Option<Instant>,
}

impl Fence {
    pub fn new(lease_duration: Duration) -> Self {
        Self {
            renew_deadline: lease_duration * 2 / 3,
            until: None,
        }
    }

    /// A renewal stamped at `stamped` got through.
    pub fn renewed(&mut self, stamped: Instant) {
        self.until = Some(stamped + self.renew_deadline);
    }

    /// The lease is lost or given up.
    pub fn lapse(&mut self) {
        self.until = None;
    }

    /// Whether the holder may still act.
    pub fn holds(&self) -> bool {
        self.until.is_some_and(|until| Instant::now() < until)
    }

    /// Resolves once the holder may no longer act (never, while nothing is held).
    pub async fn passed(&self) {
        match self.until {
            Some(until) => tokio::time::sleep_until(until).await,
            None => std::future::pending().await,
        }
    }
}

/// This replica's time as leader: the controllers' task while it leads, and its fence.
struct Term {
    leading: Option<tokio::task::JoinHandle<()>>,
    fence: Fence,
}

impl Term {
    /// Starts the controllers on acquiring the Lease; stops them on losing it, or once
    /// its fence passed without a renewal getting through.
    fn follow<F>(
        &mut self,
        elector: &LeaderElector,
        attempt: Result<Option<Instant>, LeaseError>,
        lead: &mut F,
    ) where
        F: FnMut() -> tokio::task::JoinHandle<()>,
    {
        match attempt {
            Ok(Some(stamped)) => {
                self.fence.renewed(stamped);
                if !self.fence.holds() {
                    // The answer came too late to act on; the next renewal may count.
                    if self.leading.is_some() {
                        self.stop(elector);
                    }
                } else if self.leading.is_none() {
                    tracing::info!(
                        identity = elector.identity(),
                        "acquired the lease; starting controllers"
                    );
                    self.leading = Some(lead());
                }
            }
            Ok(None) => {
                self.fence.lapse();
                if let Some(task) = self.leading.take() {
                    tracing::warn!(
                        identity = elector.identity(),
                        "lost the lease; stopping controllers"
                    );
                    task.abort();
                }
            }
            Err(error) => {
                tracing::warn!(%error, "lease renewal failed");
                if self.leading.is_some() && !self.fence.holds() {
                    self.stop(elector);
                }
            }
        }
    }

    /// Stops the controllers: no renewal got through within the fence, so a peer may
    /// take the lease over once it expires.
    fn stop(&mut self, elector: &LeaderElector) {
        self.fence.lapse();
        if let Some(task) = self.leading.take() {
            tracing::warn!(
                identity = elector.identity(),
                "no lease renewal got through within two thirds of the lease duration; \
                 stopping controllers before a standby may take over"
            );
            task.abort();
        }
    }
}

/// Leader election cannot start; the message says what to do.
#[derive(Debug, thiserror::Error)]
#[error("{error}; {hint}")]
pub struct FatalLeaseError {
    error: String,
    hint: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DURATION: Duration = Duration::from_secs(15);

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn held_by(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(at(renewed))),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_missing_lease_is_created_with_us_as_holder() {
        let Decision::Create(spec) = decide(None, "a", DURATION, at(0), |_| true) else {
            panic!("expected create");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
    }

    #[test]
    fn a_live_lease_of_another_holder_is_followed() {
        let lease = held_by("b", 0);
        let decision = decide(Some(&lease), "a", DURATION, at(14), |_| true);
        assert_eq!(decision, Decision::Follow { holder: "b".into() });
    }

    #[test]
    fn an_expired_lease_is_taken_over_and_counts_a_transition() {
        let lease = held_by("b", 0);
        let Decision::Update(spec) = decide(Some(&lease), "a", DURATION, at(16), |_| false) else {
            panic!("expected takeover");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(4));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(16))));
    }

    #[test]
    fn a_released_lease_is_taken_over_at_once() {
        let mut lease = held_by("b", 0);
        lease.holder_identity = None;
        assert!(matches!(
            decide(Some(&lease), "a", DURATION, at(1), |_| true),
            Decision::Update(_)
        ));
    }

    /// `spec` as a Lease at `version`, for [`Liveness`].
    fn lease(spec: &LeaseSpec, version: &str) -> Lease {
        Lease {
            metadata: ObjectMeta {
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            spec: Some(spec.clone()),
        }
    }

    #[test]
    fn a_holder_is_judged_by_the_changes_seen_not_by_its_renew_time_against_our_clock() {
        let mut liveness = Liveness::new(DURATION);
        let t0 = std::time::Instant::now();
        // Its renewTime is an hour behind our clock (skew, or a long-stopped writer), yet
        // the Lease was only just seen: it is followed for a whole lease duration.
        let skewed = held_by("b", -3600);
        liveness.observe(&[lease(&skewed, "1")], t0);
        let decision = decide(Some(&skewed), "a", DURATION, at(0), |h| {
            liveness.live(h, t0)
        });
        assert_eq!(decision, Decision::Follow { holder: "b".into() });
        // Its renewTime an hour ahead, but unchanged for the lease duration: taken over.
        let ahead = held_by("b", 3600);
        liveness.observe(&[lease(&ahead, "2")], t0);
        let later = t0 + DURATION;
        liveness.observe(&[lease(&ahead, "2")], later);
        let decision = decide(Some(&ahead), "a", DURATION, at(15), |h| {
            liveness.live(h, later)
        });
        assert!(matches!(decision, Decision::Update(_)), "{decision:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_fence_counts_from_when_the_renewal_was_stamped_not_from_its_answer() {
        let mut fence = Fence::new(DURATION);
        assert!(!fence.holds(), "nothing held yet");
        let stamped = Instant::now();
        // The answer takes 4 s to come back.
        tokio::time::advance(Duration::from_secs(4)).await;
        fence.renewed(stamped);
        assert!(fence.holds());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(fence.holds(), "9 s after the stamp");
        tokio::time::timeout(Duration::from_secs(5), fence.passed())
            .await
            .expect("the fence passes");
        assert_eq!(stamped.elapsed(), Duration::from_secs(10), "2/3 of 15 s");
        assert!(!fence.holds());
        fence.lapse();
        assert!(
            tokio::time::timeout(Duration::from_secs(100), fence.passed())
                .await
                .is_err(),
            "a lapsed fence never passes again"
        );
    }

    #[test]
    fn the_holder_renews_without_a_transition() {
        let mut lease = held_by("a", 0);
        lease.acquire_time = Some(MicroTime(at(-100)));
        let Decision::Update(spec) = decide(Some(&lease), "a", DURATION, at(5), |_| true) else {
            panic!("expected renewal");
        };
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(-100))));
        assert_eq!(spec.renew_time, Some(MicroTime(at(5))));
    }
}
