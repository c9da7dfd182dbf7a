//! Name lookups (images, flavors, networks, subnets, Octavia flavors) remembered for a
//! bounded time. Every create asks for the same few names and the answers rarely change,
//! so a fleet of servers costs one lookup per name per lifetime, not one per create.
//!
//! Lookups of one name asked for while it is being fetched wait for that fetch rather
//! than making their own (a fleet's first creates all miss at once).
//!
//! A failed lookup is never remembered, and a create the cloud refuses as a bad request
//! forgets the kinds it could have used, so a deleted or renamed object is looked up
//! again on the retry rather than after the lifetime.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::cloud::services::CloudResult;

/// What is looked up by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Image,
    Flavor,
    Network,
    Subnet,
    LbFlavor,
    SecurityGroup,
    DnsZone,
}

type Key = (Kind, Option<String>, String);

struct Entry {
    at: Instant,
    value: Arc<dyn Any + Send + Sync>,
}

/// One cloud's remembered lookups, shared by every region's client.
pub(crate) struct Lookups {
    lifetime: Duration,
    entries: Mutex<HashMap<Key, Entry>>,
    /// One fetch at a time per name; the names asked for are few.
    fetching: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
}

impl Lookups {
    pub fn new(lifetime: Duration) -> Self {
        Self {
            lifetime,
            entries: Mutex::new(HashMap::new()),
            fetching: Mutex::new(HashMap::new()),
        }
    }

    /// The remembered answer for `name` in `region`, else what `fetch` finds (remembered
    /// when found).
    pub async fn get_or_fetch<T>(
        &self,
        kind: Kind,
        region: Option<&str>,
        name: &str,
        fetch: impl Future<Output = CloudResult<T>>,
    ) -> CloudResult<T>
    where
        T: Clone + Send + Sync + 'static,
    {
        let key = (kind, region.map(str::to_owned), name.to_owned());
        if let Some(hit) = self.fresh(&key) {
            return Ok(hit);
        }
        let turn = self
            .fetching
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone();
        let _turn = turn.lock().await;
        // Fetched by whoever had the turn before.
        if let Some(hit) = self.fresh(&key) {
            return Ok(hit);
        }
        let found = fetch.await?;
        if !self.lifetime.is_zero() {
            self.lock().insert(
                key,
                Entry {
                    at: Instant::now(),
                    value: Arc::new(found.clone()),
                },
            );
        }
        Ok(found)
    }

    /// Forgets every remembered answer of these kinds.
    pub fn forget(&self, kinds: &[Kind]) {
        self.lock().retain(|(kind, _, _), _| !kinds.contains(kind));
    }

    fn fresh<T: Clone + 'static>(&self, key: &Key) -> Option<T> {
        let mut entries = self.lock();
        let entry = entries.get(key)?;
        if entry.at.elapsed() >= self.lifetime {
            entries.remove(key);
            return None;
        }
        entry.value.downcast_ref::<T>().cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        crate::lock::guard(&self.entries)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::cloud::error::{CloudError, ErrorKind, Resource};

    async fn lookup(lookups: &Lookups, calls: &AtomicUsize, name: &str) -> CloudResult<String> {
        lookups
            .get_or_fetch(Kind::Image, None, name, async {
                calls.fetch_add(1, Ordering::SeqCst);
                if name == "missing" {
                    Err(CloudError::new(
                        "find image missing",
                        ErrorKind::LookupNotFound {
                            resource: Resource::Image,
                            name: name.to_owned(),
                        },
                    ))
                } else {
                    Ok(format!("id-of-{name}"))
                }
            })
            .await
    }

    #[tokio::test]
    async fn a_found_name_is_asked_once_a_missing_one_every_time() {
        let lookups = Lookups::new(Duration::from_secs(60));
        let calls = AtomicUsize::new(0);
        for _ in 0..3 {
            assert_eq!(
                lookup(&lookups, &calls, "centos").await.expect("found"),
                "id-of-centos"
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        for _ in 0..2 {
            assert!(lookup(&lookups, &calls, "missing").await.is_err());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn forgetting_a_kind_and_a_zero_lifetime_ask_again() {
        let lookups = Lookups::new(Duration::from_secs(60));
        let calls = AtomicUsize::new(0);
        lookup(&lookups, &calls, "centos").await.expect("found");
        lookups.forget(&[Kind::Flavor]);
        lookup(&lookups, &calls, "centos").await.expect("found");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "another kind was forgotten"
        );
        lookups.forget(&[Kind::Image]);
        lookup(&lookups, &calls, "centos").await.expect("found");
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        let uncached = Lookups::new(Duration::ZERO);
        let calls = AtomicUsize::new(0);
        lookup(&uncached, &calls, "centos").await.expect("found");
        lookup(&uncached, &calls, "centos").await.expect("found");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn lookups_of_one_name_asked_together_make_one_fetch() {
        let lookups = Lookups::new(Duration::from_secs(60));
        let calls = AtomicUsize::new(0);
        let calls = &calls;
        let slow = |name: &'static str| {
            lookups.get_or_fetch(Kind::Network, None, name, async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok::<_, CloudError>(format!("id-of-{name}"))
            })
        };
        let found = futures::future::join_all((0..8).map(|_| slow("private"))).await;
        assert!(found.iter().all(|f| f.as_deref() == Ok("id-of-private")));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
