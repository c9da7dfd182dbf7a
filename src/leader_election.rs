//! Leader election through a `coordination.k8s.io/v1` Lease, so that of several
//! replicas exactly one runs the controllers.
//!
//! [`decide`] is the pure rule (lease record + clock → what to write); [`LeaderElector`]
//! does the API calls. Writes carry the read `resourceVersion`, so two candidates racing
//! for an expired lease cannot both win: the loser gets 409 Conflict and stays follower.
//! Expiry compares the holder's `renewTime` with our clock, so clocks must agree to well
//! within the lease duration (the usual Kubernetes assumption).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

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

/// Decides, from the current lease spec (if any), what `identity` does at `now`.
pub fn decide(
    current: Option<&LeaseSpec>,
    identity: &str,
    lease_duration: Duration,
    now: Timestamp,
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
    let held_for = SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(seconds).into());
    let live = spec
        .renew_time
        .as_ref()
        .and_then(|t| t.0.checked_add(held_for).ok())
        .is_some_and(|expires| expires > now);
    if !holder.is_empty() && live {
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
}

impl LeaseError {
    /// Whether waiting cannot help: the Lease's namespace does not exist (404) or the
    /// operator may not use Leases there (403). Says what to do about it.
    pub fn hint(&self) -> Option<String> {
        let Self::Api {
            namespace, source, ..
        } = self;
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

/// One candidate for the lease `namespace/name`.
pub struct LeaderElector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
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
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn error(&self, action: &'static str, source: kube::Error) -> LeaseError {
        LeaseError::Api {
            action,
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Reads the lease and acquires or renews it when [`decide`] says so. Returns
    /// whether we hold the lease afterwards; losing a write race is not an error.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, LeaseError> {
        let current = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error("read", e))?;
        let decision = decide(
            current.as_ref().and_then(|l| l.spec.as_ref()),
            &self.identity,
            self.lease_duration,
            Timestamp::now(),
        );
        let result = match decision {
            Decision::Follow { .. } => return Ok(false),
            Decision::Create(spec) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Decision::Update(spec) => {
                let mut lease = current.unwrap_or_default();
                lease.spec = Some(spec);
                self.api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await
            }
        };
        match result {
            Ok(_) => Ok(true),
            // Another candidate wrote first (AlreadyExists or a stale resourceVersion).
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(self.error("write", e)),
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

/// Runs `lead` while this candidate holds the lease: tries every `retry_every`, starts
/// `lead` on acquiring, aborts it on losing the lease (or when renewals fail for a whole
/// lease duration), and releases the lease when `shutdown` resolves.
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
        last_renewed: tokio::time::Instant::now(),
    };
    let mut ever_answered = false;
    tokio::pin!(shutdown);
    loop {
        let attempt = elector.try_acquire_or_renew().await;
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
        term.follow(elector, attempt, &mut lead);
        tokio::select! {
            () = &mut shutdown => break,
            () = tokio::time::sleep(retry_every) => {}
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

/// This replica's time as leader: the controllers' task while it leads, and when the
/// Lease was last renewed.
struct Term {
    leading: Option<tokio::task::JoinHandle<()>>,
    last_renewed: tokio::time::Instant,
}

impl Term {
    /// Starts the controllers on acquiring the Lease; stops them on losing it, or once
    /// it expired without a renewal getting through.
    fn follow<F>(
        &mut self,
        elector: &LeaderElector,
        attempt: Result<bool, LeaseError>,
        lead: &mut F,
    ) where
        F: FnMut() -> tokio::task::JoinHandle<()>,
    {
        match attempt {
            Ok(true) => {
                self.last_renewed = tokio::time::Instant::now();
                if self.leading.is_none() {
                    tracing::info!(
                        identity = elector.identity(),
                        "acquired the lease; starting controllers"
                    );
                    self.leading = Some(lead());
                }
            }
            Ok(false) => {
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
                if self.leading.is_some() && self.last_renewed.elapsed() >= elector.lease_duration {
                    tracing::warn!("lease expired without renewal; stopping controllers");
                    if let Some(task) = self.leading.take() {
                        task.abort();
                    }
                }
            }
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
        let Decision::Create(spec) = decide(None, "a", DURATION, at(0)) else {
            panic!("expected create");
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
    }

    #[test]
    fn a_live_lease_of_another_holder_is_followed() {
        let lease = held_by("b", 0);
        let decision = decide(Some(&lease), "a", DURATION, at(14));
        assert_eq!(decision, Decision::Follow { holder: "b".into() });
    }

    #[test]
    fn an_expired_lease_is_taken_over_and_counts_a_transition() {
        let lease = held_by("b", 0);
        let Decision::Update(spec) = decide(Some(&lease), "a", DURATION, at(16)) else {
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
            decide(Some(&lease), "a", DURATION, at(1)),
            Decision::Update(_)
        ));
    }

    #[test]
    fn the_holder_renews_without_a_transition() {
        let mut lease = held_by("a", 0);
        lease.acquire_time = Some(MicroTime(at(-100)));
        let Decision::Update(spec) = decide(Some(&lease), "a", DURATION, at(5)) else {
            panic!("expected renewal");
        };
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(-100))));
        assert_eq!(spec.renew_time, Some(MicroTime(at(5))));
    }
}
