//! The Secrets objects refer to (credentials; terminated-https certificates), read only
//! when an object refers to them: one watch per referenced Secret (a `metadata.name`
//! field selector in its namespace), so the operator holds no Secret it was not pointed
//! at. A change after the first listing is announced, so the objects of that namespace
//! reconcile with what it holds now at once; a client built from old credentials is
//! dropped with it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::sync::{mpsc, watch};

use super::origin::{CredentialsError, SecretKey};
use crate::cloud::CloudServices;
use crate::lock::Lock;

/// How long a first look at a Secret may take before the reconcile gives up for now.
const FIRST_LISTING: Duration = Duration::from_secs(10);

/// Retries of a Secret's watch double from half a second to at most 10 s (kube's default
/// goes to 30 s), so access granted later (a RoleBinding) is seen within seconds.
/// The watcher reports a new listing (`Init`) before each attempt, which would reset a
/// backoff at once: the doubling starts over only after a quiet minute instead.
struct Retry {
    next: Duration,
    last: Option<tokio::time::Instant>,
}

impl Retry {
    const FIRST: Duration = Duration::from_millis(500);
    const MAX: Duration = Duration::from_secs(10);
    const QUIET: Duration = Duration::from_secs(60);
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            next: Self::FIRST,
            last: None,
        }
    }
}

impl Iterator for Retry {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = tokio::time::Instant::now();
        if self
            .last
            .is_some_and(|last| now > last + Self::MAX + Self::QUIET)
        {
            self.next = Self::FIRST;
        }
        self.last = Some(now);
        let wait = self.next;
        self.next = (wait * 2).min(Self::MAX);
        Some(wait)
    }
}

impl kube::runtime::utils::Backoff for Retry {
    fn reset(&mut self) {}
}

/// What the watch of one Secret knows.
#[derive(Clone)]
enum Seen {
    /// The first listing is not in yet.
    Listing,
    Present(Arc<Secret>),
    Absent,
    /// The first listing failed (API server): why.
    Failed(String),
    /// The operator's RBAC does not let it list Secrets in that namespace.
    Forbidden,
}

/// A client built from one version of a Secret, for one of its clouds.
pub struct Built {
    pub resource_version: String,
    pub cloud: Option<String>,
    pub services: Arc<dyn CloudServices>,
}

/// Where the client of a followed Secret is kept.
pub type BuiltSlot = Arc<Lock<Option<Built>>>;

struct Followed {
    seen: watch::Receiver<Seen>,
    built: BuiltSlot,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Followed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The Secrets followed, and where their changes are announced.
pub struct SecretWatches {
    client: kube::Client,
    followed: Lock<HashMap<SecretKey, Followed>>,
    changes: Lock<mpsc::UnboundedSender<SecretKey>>,
}

impl SecretWatches {
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            followed: Lock::default(),
            changes: Lock::new(mpsc::unbounded_channel().0),
        }
    }

    /// Stops following every Secret (their clients go with them); changes from now on
    /// are announced on the returned channel.
    pub fn restart(&self) -> mpsc::UnboundedReceiver<SecretKey> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.changes.lock() = tx;
        self.followed.lock().clear();
        rx
    }

    /// The Secret as the watch last saw it (`None`: it does not exist), and the client
    /// slot for that Secret.
    pub async fn current(
        &self,
        key: &SecretKey,
    ) -> Result<(Option<Arc<Secret>>, BuiltSlot), CredentialsError> {
        let (mut seen, built) = self.follow(key);
        let settled = tokio::time::timeout(
            FIRST_LISTING,
            seen.wait_for(|s| !matches!(s, Seen::Listing)),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .map(|s| s.clone());
        match settled {
            Some(Seen::Present(secret)) => Ok((Some(secret), built)),
            Some(Seen::Absent) => Ok((None, built)),
            Some(Seen::Forbidden) => Err(CredentialsError::Forbidden {
                secret: key.clone(),
            }),
            Some(Seen::Failed(reason)) => Err(CredentialsError::Unreadable {
                secret: key.clone(),
                reason,
            }),
            Some(Seen::Listing) | None => Err(CredentialsError::Unreadable {
                secret: key.clone(),
                reason: format!(
                    "the API server did not list it within {}s",
                    FIRST_LISTING.as_secs()
                ),
            }),
        }
    }

    fn follow(&self, key: &SecretKey) -> (watch::Receiver<Seen>, BuiltSlot) {
        let mut followed = self.followed.lock();
        if let Some(f) = followed.get(key) {
            return (f.seen.clone(), f.built.clone());
        }
        let (tx, seen) = watch::channel(Seen::Listing);
        let built = Arc::new(Lock::default());
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &key.namespace);
        let task = tokio::spawn(watch_secret(
            api,
            key.clone(),
            tx,
            built.clone(),
            self.changes.lock().clone(),
        ));
        followed.insert(
            key.clone(),
            Followed {
                seen: seen.clone(),
                built: built.clone(),
                task,
            },
        );
        (seen, built)
    }
}

/// Follows one Secret until aborted.
async fn watch_secret(
    api: Api<Secret>,
    key: SecretKey,
    seen: watch::Sender<Seen>,
    built: BuiltSlot,
    changes: mpsc::UnboundedSender<SecretKey>,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={}", key.name));
    let mut events = watcher::watcher(api, config)
        .backoff(Retry::default())
        .boxed();
    let mut listing: Option<Secret> = None;
    let mut state = Watched {
        key,
        seen,
        built,
        changes,
        listed: false,
        refused: false,
    };
    while let Some(event) = events.next().await {
        let now = match event {
            Ok(Event::Init) => {
                listing = None;
                continue;
            }
            Ok(Event::InitApply(secret)) => {
                listing = Some(secret);
                continue;
            }
            Ok(Event::InitDone) => listing.take(),
            Ok(Event::Apply(secret)) => Some(secret),
            Ok(Event::Delete(_)) => None,
            Err(error) => {
                state.failed(&error);
                continue;
            }
        };
        state.saw(now);
    }
}

/// One followed Secret: what its watch has told, and to whom.
struct Watched {
    key: SecretKey,
    seen: watch::Sender<Seen>,
    built: BuiltSlot,
    changes: mpsc::UnboundedSender<SecretKey>,
    listed: bool,
    /// Refused until now: access granted later (a RoleBinding) wakes the objects waiting.
    refused: bool,
}

impl Watched {
    fn failed(&mut self, error: &watcher::Error) {
        if !self.listed {
            self.refused = forbidden(error);
            self.seen.send_replace(match self.refused {
                true => Seen::Forbidden,
                false => Seen::Failed(error.to_string()),
            });
        }
        tracing::debug!(secret = %self.key, %error, "watch of a Secret failed; retrying");
    }

    /// The Secret as it is now (`None`: absent); a change is announced.
    fn saw(&mut self, now: Option<Secret>) {
        let before = version(&self.seen.borrow());
        let after = now
            .as_ref()
            .map(|s| s.resource_version().unwrap_or_default());
        let changed = self.listed && before != after;
        let granted = std::mem::take(&mut self.refused);
        if before != after || !self.listed {
            if before != after {
                self.built.lock().take();
            }
            self.seen.send_replace(match now {
                Some(secret) => Seen::Present(Arc::new(secret)),
                None => Seen::Absent,
            });
        }
        self.listed = true;
        let key = &self.key;
        if changed {
            tracing::info!(secret = %key, "Secret changed: the objects of its namespace reconcile with what it holds now");
            let _ = self.changes.send(key.clone());
        } else if granted {
            tracing::info!(secret = %key, "Secret readable now (RBAC granted): the objects of its namespace reconcile");
            let _ = self.changes.send(key.clone());
        }
    }
}

/// Whether the API server refused the listing for want of RBAC (403).
fn forbidden(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::InitialListFailed(kube::Error::Api(response))
            | watcher::Error::WatchStartFailed(kube::Error::Api(response))
            if response.code == 403
    )
}

/// The resourceVersion seen; `None` when absent or not listed yet.
fn version(seen: &Seen) -> Option<String> {
    match seen {
        Seen::Present(secret) => Some(secret.resource_version().unwrap_or_default()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::utils::Backoff;

    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_backs_off_to_ten_seconds_and_starts_over_after_a_quiet_minute() {
        let mut retry = Retry::default();
        let mut waits = Vec::new();
        for _ in 0..7 {
            // The watcher's `Init` before each listing must not undo the doubling.
            retry.reset();
            let wait = retry.next().expect("always retries");
            waits.push(wait.as_millis());
            tokio::time::advance(wait).await;
        }
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10000, 10000]);
        tokio::time::advance(Duration::from_secs(120)).await;
        assert_eq!(retry.next(), Some(Retry::FIRST));
    }
}
