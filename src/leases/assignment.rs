//! Which namespaces this replica reconciles: every one (a single replica, or the leader),
//! or, as one of several shards, the namespaces it owns — each for a *term*, from the
//! moment it took the namespace until it closes it.
//!
//! Every reconcile is admitted through [`Assignment::admit`] and holds its admission to the
//! end, so closing a term ([`OwnedNamespaces::close`]) first refuses new reconciles of the
//! namespace, then lets those running finish for a grace, then stops the rest where they
//! are (as a crash would) and returns only once none is left: after it, this replica
//! writes nothing more for the namespace and another may take it over.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedRwLockReadGuard, RwLock, mpsc, watch};

use crate::lock::Lock;

/// Which namespaces a kind's watches cover; sent to its feed while it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Coverage {
    /// Watch this namespace (again nothing, if watched already).
    Watch(String),
    /// Stop watching this namespace and drop its objects from the store, telling no
    /// controller: another replica now reconciles them.
    Drop(String),
}

/// The namespaces this replica reconciles.
#[derive(Clone, Default)]
pub enum Assignment {
    /// Every namespace, for as long as the controllers run.
    #[default]
    All,
    /// Those it owns, each for its term.
    Owned(Arc<OwnedNamespaces>),
}

impl Assignment {
    /// Leave to reconcile an object of `namespace` now, to be held until the reconcile
    /// ends; `None` when the namespace is not this replica's (or is being closed).
    pub fn admit(&self, namespace: &str) -> Option<Admission> {
        match self {
            Self::All => Some(Admission { term: None }),
            Self::Owned(owned) => owned.admit(namespace),
        }
    }

    /// Since when this replica has reconciled `namespace` without a break: a listing of
    /// the cloud asked for earlier may predate another replica's writes for it. `None`
    /// for every namespace of the controllers' whole run (their cloud view is new with
    /// each run).
    pub fn since(&self, namespace: &str) -> Option<Instant> {
        match self {
            Self::All => None,
            // Not owned: nothing of it is admitted, and no earlier listing vouches.
            Self::Owned(owned) => Some(owned.since(namespace).unwrap_or_else(Instant::now)),
        }
    }

    /// Whether a listing of the cloud asked for at `asked` may be taken in for the
    /// owners of `namespace`: every namespace's, in [`Assignment::All`]; a shard's, only
    /// those of namespaces it has owned since before `asked` (a view holding the other
    /// shards' resources would not divide memory, and an older listing may predate the
    /// previous owner's last writes).
    pub fn speaks_for(&self, namespace: &str, asked: Instant) -> bool {
        match self {
            Self::All => true,
            Self::Owned(owned) => owned.since(namespace).is_some_and(|since| since <= asked),
        }
    }
}

/// The namespaces a shard owns, and their terms. One task opens and closes them (the
/// shard's loop): an open and a close of one namespace never overlap.
#[derive(Default)]
pub struct OwnedNamespaces {
    terms: Lock<HashMap<String, Arc<Term>>>,
    /// The kinds' watch feeds, told which namespaces to watch.
    feeds: Lock<Vec<mpsc::UnboundedSender<Coverage>>>,
    /// Set while this replica may not act at all (its membership lapsed): nothing is
    /// admitted, whatever terms are open.
    fenced: std::sync::atomic::AtomicBool,
}

struct Term {
    since: Instant,
    /// Read-held by each admitted reconcile; written by the close that waits them out.
    running: Arc<RwLock<()>>,
    /// Set when the close's grace is over: admitted reconciles stop where they are.
    cancel: watch::Sender<bool>,
}

impl OwnedNamespaces {
    /// Starts a term for `namespace` (none new if one is open), and has the feeds watch
    /// it: its listing wakes its objects' reconciles, admitted from now on.
    pub fn open(&self, namespace: &str) {
        let mut terms = self.terms.lock();
        if terms.contains_key(namespace) {
            return;
        }
        let term = Term {
            since: Instant::now(),
            running: Arc::new(RwLock::new(())),
            cancel: watch::channel(false).0,
        };
        terms.insert(namespace.to_owned(), Arc::new(term));
        self.tell(Coverage::Watch(namespace.to_owned()));
    }

    /// A feed's coverage: every namespace open now, then each opened or closed.
    pub fn coverage(&self) -> mpsc::UnboundedReceiver<Coverage> {
        let (feed, coverage) = mpsc::unbounded_channel();
        let terms = self.terms.lock();
        for namespace in terms.keys() {
            let _ = feed.send(Coverage::Watch(namespace.clone()));
        }
        self.feeds.lock().push(feed);
        coverage
    }

    fn tell(&self, change: Coverage) {
        // A feed gone is a controller stopped; the others go on.
        self.feeds
            .lock()
            .retain(|feed| feed.send(change.clone()).is_ok());
    }

    /// Whether `namespace` is in an open term.
    pub fn owns(&self, namespace: &str) -> bool {
        self.terms.lock().contains_key(namespace)
    }

    /// The namespaces in open terms.
    pub fn namespaces(&self) -> Vec<String> {
        self.terms.lock().keys().cloned().collect()
    }

    fn since(&self, namespace: &str) -> Option<Instant> {
        self.terms.lock().get(namespace).map(|term| term.since)
    }

    fn admit(&self, namespace: &str) -> Option<Admission> {
        if self.fenced.load(std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        let term = self.terms.lock().get(namespace)?.clone();
        let running = term.running.clone().try_read_owned().ok()?;
        Some(Admission {
            term: Some((running, term.cancel.subscribe())),
        })
    }

    /// Stops everything at once: no reconcile is admitted and those running are revoked
    /// (the terms stay open, to be closed by whoever lifts the fence).
    pub fn fence(&self) {
        self.fenced.store(true, std::sync::atomic::Ordering::SeqCst);
        for term in self.terms.lock().values() {
            term.cancel.send_replace(true);
        }
    }

    /// Lifts [`OwnedNamespaces::fence`]: terms opened from now on admit again.
    pub fn unfence(&self) {
        self.fenced
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Ends `namespace`'s term: refuses its new reconciles at once, lets the running
    /// ones finish within `grace`, then stops the rest; once none is left, the feeds drop
    /// the namespace's watches and objects. Returns then, with whether any reconcile had
    /// to be stopped (its last request may still be on its way). At once if no term was
    /// open.
    pub async fn close(&self, namespace: &str, grace: Duration) -> bool {
        let Some(term) = self.terms.lock().remove(namespace) else {
            return false;
        };
        let drained = term.running.clone().write_owned();
        tokio::pin!(drained);
        let stopped = tokio::select! {
            biased;
            _ = &mut drained => false,
            () = tokio::time::sleep(grace) => {
                term.cancel.send_replace(true);
                drained.await;
                true
            }
        };
        self.tell(Coverage::Drop(namespace.to_owned()));
        stopped
    }
}

/// Leave to reconcile one object, held for as long as the reconcile runs.
pub struct Admission {
    term: Option<(OwnedRwLockReadGuard<()>, watch::Receiver<bool>)>,
}

impl Admission {
    /// Resolves when the term is closing and its grace is over: the reconcile must stop
    /// where it is. Never, in [`Assignment::All`].
    pub async fn revoked(&mut self) {
        match &mut self.term {
            // The sender lives as long as the close that waits for this admission.
            Some((_, cancel)) => drop(cancel.wait_for(|revoked| *revoked).await),
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(namespaces: &[&str]) -> (Assignment, Arc<OwnedNamespaces>) {
        let owned = Arc::new(OwnedNamespaces::default());
        for ns in namespaces {
            owned.open(ns);
        }
        (Assignment::Owned(owned.clone()), owned)
    }

    #[test]
    fn all_admits_every_namespace_for_the_whole_run() {
        assert!(Assignment::All.admit("any").is_some());
        assert_eq!(Assignment::All.since("any"), None);
    }

    #[test]
    fn only_owned_namespaces_are_admitted_and_each_since_its_own_term() {
        let (scope, owned) = owned(&["a"]);
        assert!(scope.admit("a").is_some());
        assert!(scope.admit("b").is_none(), "not ours");
        let a_since = scope.since("a").expect("a term");
        std::thread::sleep(Duration::from_millis(2));
        owned.open("b");
        assert!(scope.since("b").expect("b term") > a_since);
        owned.open("a");
        assert_eq!(scope.since("a"), Some(a_since), "reopening keeps the term");
        assert!(scope.since("c").expect("not ours") > a_since);
    }

    #[test]
    fn a_listing_speaks_for_namespaces_owned_since_before_it_was_asked_for() {
        let (scope, owned) = owned(&["a"]);
        assert!(Assignment::All.speaks_for("any", Instant::now()));
        std::thread::sleep(Duration::from_millis(2));
        let asked = Instant::now();
        assert!(scope.speaks_for("a", asked));
        assert!(!scope.speaks_for("b", asked), "another shard's");
        std::thread::sleep(Duration::from_millis(2));
        owned.open("b");
        assert!(
            !scope.speaks_for("b", asked),
            "taken after the listing was asked for"
        );
        assert!(scope.speaks_for("b", Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn closing_refuses_new_reconciles_and_waits_for_running_ones() {
        let (scope, owned) = owned(&["a"]);
        let mut coverage = owned.coverage();
        assert_eq!(coverage.try_recv(), Ok(Coverage::Watch("a".into())));
        let running = scope.admit("a").expect("admitted");
        let started = tokio::time::Instant::now();
        let close = tokio::spawn({
            let owned = owned.clone();
            async move { owned.close("a", Duration::from_secs(5)).await }
        });
        tokio::task::yield_now().await;
        assert!(scope.admit("a").is_none(), "closing: no new reconcile");
        assert!(!owned.owns("a"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!close.is_finished(), "a reconcile still runs");
        assert!(
            coverage.try_recv().is_err(),
            "watched while a reconcile runs"
        );
        drop(running);
        assert!(!close.await.expect("closed"), "none stopped");
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(1),
            "no grace waited out"
        );
        assert_eq!(coverage.try_recv(), Ok(Coverage::Drop("a".into())));
    }

    #[tokio::test(start_paused = true)]
    async fn a_fence_revokes_every_running_reconcile_and_admits_none() {
        let (scope, owned) = owned(&["a", "b"]);
        let mut running = scope.admit("a").expect("admitted");
        owned.fence();
        tokio::time::timeout(Duration::from_millis(1), running.revoked())
            .await
            .expect("revoked at once");
        assert!(scope.admit("b").is_none(), "fenced");
        drop(running);
        assert!(!owned.close("a", Duration::ZERO).await);
        owned.unfence();
        owned.open("a");
        assert!(scope.admit("a").is_some(), "a new term after the fence");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_still_running_after_the_grace_is_revoked() {
        let (scope, owned) = owned(&["a"]);
        let mut stuck = scope.admit("a").expect("admitted");
        let started = tokio::time::Instant::now();
        let close = tokio::spawn({
            let owned = owned.clone();
            async move { owned.close("a", Duration::from_secs(5)).await }
        });
        // The reconcile notices the revocation and stops, dropping its admission.
        stuck.revoked().await;
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        drop(stuck);
        assert!(close.await.expect("closed"), "one stopped");
        // A new term is a new start, and a feed that starts now watches it.
        owned.open("a");
        let mut coverage = owned.coverage();
        assert_eq!(coverage.try_recv(), Ok(Coverage::Watch("a".into())));
        let mut next = scope.admit("a").expect("admitted again");
        let revoked = tokio::time::timeout(Duration::from_secs(60), next.revoked()).await;
        assert!(revoked.is_err(), "the new term is not revoked");
    }
}
