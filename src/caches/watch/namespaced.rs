//! A kind's store filled by one watch per namespace instead of one over the cluster: what
//! `--namespace` runs on, and what lets shards watch (and hold in memory) only the
//! namespaces they own.
//!
//! The namespaces share one store and one index, as the controllers need one store per
//! kind. So each namespace's listing is taken in on its own: it replaces that namespace's
//! objects only (a relisting of one namespace must not drop another's), and it reaches
//! the store as changes of single objects, never as the reflector's swap of the whole
//! store. The store is made ready, empty, before the first watch starts.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, PoisonError, RwLock};

use futures::StreamExt;
use futures::stream::{AbortHandle, Abortable, BoxStream, SelectAll, abortable};
use k8s_openapi::NamespaceResourceScope;
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::watcher::Event;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::stream::{Listed, Passed, namespace_watch};
use crate::caches::watch::index::{KeyIndex, Keyed};

/// One kind's store, index and readiness as the watches of several namespaces fill them.
pub(super) struct Namespaced<K: Resource<DynamicType = ()> + Clone + 'static> {
    writer: Writer<K>,
    index: Arc<RwLock<KeyIndex>>,
    /// The namespaces whose first listing is in, as the cache's readers see them.
    ready: watch::Sender<Listed>,
    /// Listings in progress, by namespace: passed on once complete, as a whole.
    listings: HashMap<String, Vec<K>>,
}

impl<K> Namespaced<K>
where
    K: Resource<DynamicType = ()> + Keyed + Clone + 'static,
{
    pub(super) fn new(
        mut writer: Writer<K>,
        index: Arc<RwLock<KeyIndex>>,
        ready: watch::Sender<Listed>,
    ) -> Self {
        // kube-runtime's controller starts reconciling once the store has been listed
        // into; an empty listing, before any namespace's, says so.
        writer.apply_watcher_event(&Event::Init);
        writer.apply_watcher_event(&Event::InitDone);
        Self {
            writer,
            index,
            ready,
            listings: HashMap::new(),
        }
    }

    pub(super) fn reader(&self) -> Store<K> {
        self.writer.as_reader()
    }

    /// Whether `namespace`'s first listing is in.
    #[cfg(test)]
    fn listed(&self, namespace: &str) -> bool {
        self.ready.borrow().covers(namespace)
    }

    /// Takes in one event of `namespace`'s watch; returns what to pass on to the
    /// controllers (a listing's objects once it is complete, a change at once).
    pub(super) fn apply(&mut self, namespace: &str, event: Event<K>) -> Vec<Passed<K>> {
        match event {
            Event::Apply(obj) => vec![self.store(obj)],
            Event::Delete(obj) => {
                self.writer.apply_watcher_event(&Event::Delete(obj.clone()));
                self.keys(&obj, Vec::new());
                vec![Passed::Deleted(obj)]
            }
            Event::Init => {
                self.listings.insert(namespace.to_owned(), Vec::new());
                Vec::new()
            }
            Event::InitApply(obj) => {
                self.listings
                    .entry(namespace.to_owned())
                    .or_default()
                    .push(obj);
                Vec::new()
            }
            Event::InitDone => {
                // None in progress: a namespace dropped meanwhile.
                let Some(listing) = self.listings.remove(namespace) else {
                    return Vec::new();
                };
                let names: HashSet<String> = listing.iter().map(ResourceExt::name_any).collect();
                // Gone while the watch was down: dropped, as the reflector's swap drops
                // them, without a wake-up.
                self.remove(namespace, |obj| !names.contains(&obj.name_any()));
                let objects = listing.len();
                let passed = listing.into_iter().map(|obj| self.store(obj)).collect();
                let first = self
                    .ready
                    .send_if_modified(|listed| listed.namespaces.insert(namespace.to_owned()));
                if first {
                    let kind = K::kind(&());
                    tracing::info!(%kind, %namespace, objects, "listed; watching");
                }
                passed
            }
        }
    }

    /// Forgets `namespace`: its objects leave the store and the index, its listing in
    /// progress is dropped, and no controller hears of it.
    pub(super) fn drop_namespace(&mut self, namespace: &str) {
        self.listings.remove(namespace);
        self.ready
            .send_if_modified(|listed| listed.namespaces.remove(namespace));
        self.remove(namespace, |_| true);
    }

    fn store(&mut self, obj: K) -> Passed<K> {
        self.keys(&obj, obj.keys());
        let key = ObjectRef::from_obj(&obj);
        self.writer.apply_watcher_event(&Event::Apply(obj));
        Passed::Stored(key)
    }

    fn remove(&mut self, namespace: &str, which: impl Fn(&K) -> bool) {
        let gone = self
            .writer
            .as_reader()
            .state_filter(|obj| obj.namespace().as_deref() == Some(namespace) && which(obj));
        for obj in gone {
            self.keys(&obj, Vec::new());
            self.writer
                .apply_watcher_event(&Event::Delete((*obj).clone()));
        }
    }

    fn keys(&self, obj: &K, keys: Vec<String>) {
        self.index
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .set(&obj.namespace().unwrap_or_default(), &obj.name_any(), keys);
    }
}

/// One namespace's watch events, each with its namespace.
type Tagged<K> = BoxStream<'static, (String, Event<K>)>;

/// One watch per namespace, their events merged, each stoppable on its own.
pub(super) struct Watches<K> {
    client: kube::Client,
    events: SelectAll<Abortable<Tagged<K>>>,
    stops: HashMap<String, AbortHandle>,
}

impl<K> Watches<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + 'static,
{
    pub(super) fn new(client: kube::Client) -> Self {
        Self {
            client,
            events: SelectAll::new(),
            stops: HashMap::new(),
        }
    }

    /// Starts watching `namespace`, unless it is watched already.
    pub(super) fn start(&mut self, namespace: &str) {
        if self.stops.contains_key(namespace) {
            return;
        }
        let api = Api::namespaced(self.client.clone(), namespace);
        let (events, stop) = abortable(namespace_watch(api, namespace.to_owned()));
        self.events.push(events);
        self.stops.insert(namespace.to_owned(), stop);
    }

    /// Stops watching `namespace`: none of its events comes after this.
    pub(super) fn stop(&mut self, namespace: &str) {
        if let Some(stop) = self.stops.remove(namespace) {
            stop.abort();
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The next event of any namespace watched, with its namespace.
    pub(super) async fn next(&mut self) -> Option<(String, Event<K>)> {
        self.events.next().await
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector;
    use verda_api::v1alpha1::{VirtualMachine, labels};

    use super::*;
    use crate::caches::watch::index::group_key;

    fn vm(namespace: &str, name: &str, group: &str) -> VirtualMachine {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": {"name": name, "namespace": namespace, "labels": {labels::GROUP: group}},
            "spec": {"image": "centos79", "flavor": "m1"}
        }))
        .expect("VirtualMachine")
    }

    fn listing(
        feed: &mut Namespaced<VirtualMachine>,
        namespace: &str,
        names: &[&str],
    ) -> Vec<String> {
        assert!(feed.apply(namespace, Event::Init).is_empty());
        for name in names {
            let obj = vm(namespace, name, "web");
            assert!(feed.apply(namespace, Event::InitApply(obj)).is_empty());
        }
        passed_names(feed.apply(namespace, Event::InitDone))
    }

    fn passed_names(passed: Vec<Passed<VirtualMachine>>) -> Vec<String> {
        passed
            .into_iter()
            .map(|p| match p {
                Passed::Stored(key) => key.name,
                Passed::Deleted(obj) => format!("-{}", obj.name_any()),
            })
            .collect()
    }

    fn names_in(store: &Store<VirtualMachine>, namespace: &str) -> Vec<String> {
        let mut names: Vec<String> = store
            .state_filter(|o| o.namespace().as_deref() == Some(namespace))
            .iter()
            .map(|o| o.name_any())
            .collect();
        names.sort();
        names
    }

    fn index_of(index: &RwLock<KeyIndex>, namespace: &str) -> Vec<String> {
        let mut names = index
            .read()
            .expect("index")
            .names(namespace, &group_key("web"));
        names.sort();
        names
    }

    fn namespaced() -> (Namespaced<VirtualMachine>, Arc<RwLock<KeyIndex>>) {
        let (_, writer) = reflector::store();
        let index = Arc::new(RwLock::new(KeyIndex::default()));
        let ready = watch::channel(Listed::default()).0;
        (Namespaced::new(writer, index.clone(), ready), index)
    }

    #[tokio::test]
    async fn the_store_is_ready_before_any_namespace_is_listed() {
        let (feed, _) = namespaced();
        let ready = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            feed.reader().wait_until_ready(),
        )
        .await;
        assert!(matches!(ready, Ok(Ok(()))), "the controllers may start");
        assert!(feed.reader().is_empty());
    }

    #[test]
    fn a_relisting_replaces_only_its_own_namespace() {
        let (mut feed, index) = namespaced();
        assert_eq!(
            listing(&mut feed, "a", &["web-0", "web-1"]),
            ["web-0", "web-1"]
        );
        assert_eq!(listing(&mut feed, "b", &["web-0"]), ["web-0"]);
        assert!(feed.listed("a") && feed.listed("b"));

        // `a` relists without web-1 (deleted while its watch was down) and with web-2:
        // the listing is passed on as a whole, web-1 leaves store and index unannounced.
        assert_eq!(
            listing(&mut feed, "a", &["web-0", "web-2"]),
            ["web-0", "web-2"]
        );
        let store = feed.reader();
        assert_eq!(names_in(&store, "a"), ["web-0", "web-2"]);
        assert_eq!(index_of(&index, "a"), ["web-0", "web-2"]);
        assert_eq!(names_in(&store, "b"), ["web-0"], "b untouched");
        assert_eq!(index_of(&index, "b"), ["web-0"]);
    }

    #[test]
    fn a_listing_in_progress_holds_nothing_back_from_other_namespaces() {
        let (mut feed, _) = namespaced();
        assert!(feed.apply("a", Event::Init).is_empty());
        assert!(
            feed.apply("a", Event::InitApply(vm("a", "web-0", "web")))
                .is_empty()
        );
        // b's change goes through at once while a's listing is still coming in.
        let passed = feed.apply("b", Event::Apply(vm("b", "db-0", "db")));
        assert_eq!(passed_names(passed), ["db-0"]);
        assert!(!feed.listed("a"));
        assert_eq!(names_in(&feed.reader(), "a"), Vec::<String>::new());
        assert_eq!(passed_names(feed.apply("a", Event::InitDone)), ["web-0"]);
        assert!(feed.listed("a"));
    }

    #[test]
    fn changes_are_stored_and_passed_on_at_once() {
        let (mut feed, index) = namespaced();
        listing(&mut feed, "a", &["web-0"]);
        let passed = feed.apply("a", Event::Apply(vm("a", "web-1", "web")));
        assert_eq!(passed_names(passed), ["web-1"]);
        assert_eq!(index_of(&index, "a"), ["web-0", "web-1"]);
        let passed = feed.apply("a", Event::Delete(vm("a", "web-0", "web")));
        assert_eq!(passed_names(passed), ["-web-0"]);
        assert_eq!(names_in(&feed.reader(), "a"), ["web-1"]);
        assert_eq!(index_of(&index, "a"), ["web-1"]);
    }

    #[test]
    fn a_dropped_namespace_leaves_store_and_index_and_must_be_listed_again() {
        let (mut feed, index) = namespaced();
        listing(&mut feed, "a", &["web-0", "web-1"]);
        listing(&mut feed, "b", &["web-0"]);
        feed.apply("a", Event::Init);
        feed.drop_namespace("a");
        assert!(!feed.listed("a"));
        assert_eq!(names_in(&feed.reader(), "a"), Vec::<String>::new());
        assert_eq!(index_of(&index, "a"), Vec::<String>::new());
        assert_eq!(names_in(&feed.reader(), "b"), ["web-0"]);
        // The listing that was in progress is gone with it.
        assert!(feed.apply("a", Event::InitDone).is_empty());
        assert!(!feed.listed("a"));
    }
}
