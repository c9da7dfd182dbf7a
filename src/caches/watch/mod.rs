//! One watch per kind for the whole operator, kept in reflector stores that reconciles
//! read instead of listing the API server, and fanned out to the controllers as their
//! triggers.
//!
//! A store is updated before any controller hears of the change it carries, so a
//! reconcile woken by an object finds at least that version of it in the store. That
//! holds for a relisting too (after a watch expired): the reflector swaps a listing in
//! only once it is complete, so the objects it lists are passed on then, not as they
//! arrive — a controller woken by an object not yet in its store drops the wake-up, and
//! an object created while the watch was down would never be reconciled. A
//! reconcile woken otherwise (a requeue) may read a store a moment behind the API
//! server, as with any kube-rs cache; the controllers tolerate that (creates of
//! deterministic names accept AlreadyExists, deletes accept NotFound).
//!
//! Beside each store, an [`index::KeyIndex`] of what each object relates to (its group,
//! the groups and VirtualMachines a LoadBalancer draws on), updated right after the store,
//! so reconciles and watch mappers look up a group's members instead of scanning the
//! namespace: with every object in one namespace that scan made convergence quadratic.
//!
//! The kinds a fleet has thousands of (VirtualMachines, groups, LoadBalancers) are
//! stored [`packed`]: deflated, decoded where read.

pub mod index;
pub mod namespaced;
pub mod packed;
mod stream;

pub use stream::owns_spec_replicas;

use std::fmt::Debug;
use std::sync::{Arc, PoisonError, RwLock};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{Controller, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, watch};
use verda_api::v1alpha1::{
    DNSZone, LoadBalancer, SecurityGroup, VirtualMachine, VirtualMachineGroup,
};

use self::index::{KeyIndex, Keyed};
use self::namespaced::{Namespaced, Watches};
use self::packed::Packed;
use self::stream::{Listed, Passed, by_reference, in_store, watch};
use crate::caches::Reach;
use crate::leases::assignment::{Assignment, Coverage, OwnedNamespaces};

/// One kind's store and where its first listing is in.
#[derive(Clone)]
pub struct Cache<K: Resource<DynamicType = ()> + Clone + 'static> {
    pub store: Store<K>,
    /// kube's `Store::wait_until_ready` wakes only the last of several concurrent
    /// waiters (a single-waker oneshot), and the controller's own runner is already
    /// one; reconciles wait on this instead.
    ready: watch::Receiver<Listed>,
    index: Arc<RwLock<KeyIndex>>,
}

/// The write ends of one [`Cache`].
pub struct CacheWriter<K: Resource<DynamicType = ()> + Clone + 'static> {
    writer: Writer<K>,
    ready: watch::Sender<Listed>,
    index: Arc<RwLock<KeyIndex>>,
}

fn cache<K>() -> (Cache<K>, CacheWriter<K>)
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let (store, writer) = reflector::store();
    let (ready_tx, ready) = watch::channel(Listed::default());
    let index = Arc::new(RwLock::new(KeyIndex::default()));
    (
        Cache {
            store,
            ready,
            index: index.clone(),
        },
        CacheWriter {
            writer,
            ready: ready_tx,
            index,
        },
    )
}

impl<K: Resource<DynamicType = ()> + Clone + 'static> Cache<K> {
    /// Once the first listing of `namespace` is in (at once after that). A stopped
    /// watch leaves the store as it is, to be read anyway.
    async fn filled(&self, namespace: &str) {
        let mut ready = self.ready.clone();
        let _ = ready.wait_for(|listed| listed.covers(namespace)).await;
    }
}

impl<K: Resource<DynamicType = ()> + Keyed + Clone + 'static> Cache<K> {
    /// The objects of `namespace` the store holds now that relate to `key` (see
    /// [`index`]), without waiting for the first listing: for watch mappers.
    pub fn with_key_now(&self, namespace: &str, key: &str) -> Vec<Arc<K>> {
        let names = self
            .index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .names(namespace, key);
        names
            .iter()
            .filter_map(|name| self.store.get(&ObjectRef::new(name).within(namespace)))
            .filter(|obj| obj.keys().iter().any(|k| k == key))
            .collect()
    }
}

/// Keeps `index` on what `event` left in the store `reader`: an object's keys as it
/// now is, none once it is deleted, and the whole index anew after each listing (which
/// drops what was deleted while the watch was down).
fn follow<K>(index: &RwLock<KeyIndex>, reader: &Store<K>, event: &watcher::Event<K>)
where
    K: Resource<DynamicType = ()> + Keyed + Clone + 'static,
{
    let id = |obj: &K| (obj.namespace().unwrap_or_default(), obj.name_any());
    let mut index = index.write().unwrap_or_else(PoisonError::into_inner);
    match event {
        watcher::Event::Apply(obj) => {
            let (namespace, name) = id(obj);
            index.set(&namespace, &name, obj.keys());
        }
        watcher::Event::Delete(obj) => {
            let (namespace, name) = id(obj);
            index.set(&namespace, &name, Vec::new());
        }
        watcher::Event::InitDone => {
            *index = KeyIndex::of(reader.state().iter().map(|obj| {
                let (namespace, name) = id(obj);
                (namespace, name, obj.keys())
            }));
        }
        watcher::Event::Init | watcher::Event::InitApply(_) => {}
    }
}

/// The stores every reconcile reads: one per kind, filled by one watch each.
#[derive(Clone)]
pub struct WatchCaches {
    pub virtual_machines: Cache<Packed<VirtualMachine>>,
    pub groups: Cache<Packed<VirtualMachineGroup>>,
    pub load_balancers: Cache<Packed<LoadBalancer>>,
    pub dns_zones: Cache<DNSZone>,
    pub security_groups: Cache<SecurityGroup>,
}

/// The write ends of [`WatchCaches`], taken by the watches that fill them.
pub struct Writers {
    virtual_machines: CacheWriter<Packed<VirtualMachine>>,
    groups: CacheWriter<Packed<VirtualMachineGroup>>,
    load_balancers: CacheWriter<Packed<LoadBalancer>>,
    dns_zones: CacheWriter<DNSZone>,
    security_groups: CacheWriter<SecurityGroup>,
}

impl WatchCaches {
    pub fn new() -> (Self, Writers) {
        let (virtual_machines, vm_writer) = cache();
        let (groups, group_writer) = cache();
        let (load_balancers, lb_writer) = cache();
        let (dns_zones, zone_writer) = cache();
        let (security_groups, sg_writer) = cache();
        (
            Self {
                virtual_machines,
                groups,
                load_balancers,
                dns_zones,
                security_groups,
            },
            Writers {
                virtual_machines: vm_writer,
                groups: group_writer,
                load_balancers: lb_writer,
                dns_zones: zone_writer,
                security_groups: sg_writer,
            },
        )
    }
}

/// The caches of the controllers now running; replaced each time they start again
/// (after a lost and regained leadership), so a restart never reads a dead watch.
pub struct CacheSlot(RwLock<WatchCaches>);

impl CacheSlot {
    pub fn new() -> Self {
        Self(RwLock::new(WatchCaches::new().0))
    }

    pub fn current(&self) -> WatchCaches {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// New, empty caches for controllers about to start; their writers fill them.
    pub fn renew(&self) -> Writers {
        let (caches, writers) = WatchCaches::new();
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = caches;
        writers
    }
}

impl Default for CacheSlot {
    fn default() -> Self {
        Self::new()
    }
}

/// A stream of one kind's changes, as a controller takes its triggers.
pub type Changes<K> = BoxStream<'static, Arc<K>>;

/// One kind's watch and the controllers listening to it.
pub struct Feed<K> {
    listeners: Vec<mpsc::UnboundedSender<Arc<K>>>,
}

impl<K> Default for Feed<K> {
    fn default() -> Self {
        Self {
            listeners: Vec::new(),
        }
    }
}

impl<K> Feed<K>
where
    K: Resource<DynamicType = ()>
        + Keyed
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    /// Every change (created, updated, deleted) of the kind, after the store has it.
    /// Listeners share the store's copy of the object: a change queued for three
    /// controllers costs one object, not four.
    pub fn subscribe(&mut self) -> Changes<K> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.listeners.push(tx);
        futures::stream::unfold(
            rx,
            |mut rx| async move { rx.recv().await.map(|obj| (obj, rx)) },
        )
        .boxed()
    }

    /// A controller of the kind, reading `store`, woken by every change of an object,
    /// by the object's name. kube's own trigger (`for_shared_stream`'s stream) queues the
    /// object's UID and resourceVersion beside its name, in each request its queue keeps
    /// (twice over while a requeue waits), which no reconcile reads: it reads the store.
    pub fn controller(&mut self, store: Store<K>) -> Controller<K> {
        let names = self.subscribe().map(|obj| {
            let name = ObjectRef::new(&obj.name_any());
            match obj.namespace() {
                Some(namespace) => name.within(&namespace),
                None => name,
            }
        });
        // Woken by name only, through `reconcile_on`.
        Controller::for_shared_stream(futures::stream::pending(), store).reconcile_on(names)
    }

    /// Watches `api` into `cache` and passes every change on, until the task ends.
    async fn run(self, api: Api<K>, cache: CacheWriter<K>) {
        let kind = K::kind(&());
        let CacheWriter {
            writer,
            ready,
            index,
        } = cache;
        let reader = writer.as_reader();
        let shared = reader.clone();
        let listed_kind = kind.clone();
        let changes = reflector::reflector(writer, watch(api))
            .inspect_ok(move |event| {
                // The reflector has applied the event (swapped the listing in) by now.
                follow(&index, &reader, event);
                if matches!(event, watcher::Event::InitDone) {
                    tracing::info!(kind = %listed_kind, objects = reader.state().len(), "listed; watching");
                    ready.send_modify(|listed| listed.everywhere = true);
                }
            });
        let mut listing = Vec::new();
        changes
            .inspect_err(|error| {
                tracing::warn!(kind = %kind, %error, "watch failed; retrying with backoff");
            })
            .filter_map(|change| futures::future::ready(change.ok()))
            .for_each(|event| {
                for passed in in_store(&mut listing, by_reference(event)) {
                    self.pass_on(&shared, passed);
                }
                futures::future::ready(())
            })
            .await;
    }

    /// Watches the namespaces `coverage` names, each on its own, into `cache`, and passes
    /// every change on, until the task ends. The cache is ready for a namespace once its
    /// first listing is in.
    async fn run_namespaced(
        self,
        client: kube::Client,
        cache: CacheWriter<K>,
        mut coverage: mpsc::UnboundedReceiver<Coverage>,
    ) where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    {
        let CacheWriter {
            writer,
            ready,
            index,
        } = cache;
        let mut store = Namespaced::new(writer, index, ready);
        let reader = store.reader();
        let mut watches = Watches::new(client);
        let mut covering = true;
        loop {
            tokio::select! {
                change = coverage.recv(), if covering => match change {
                    Some(Coverage::Watch(namespace)) => watches.start(&namespace),
                    Some(Coverage::Drop(namespace)) => {
                        watches.stop(&namespace);
                        store.drop_namespace(&namespace);
                    }
                    None => covering = false,
                },
                Some((namespace, event)) = watches.next(), if !watches.is_empty() => {
                    for passed in store.apply(&namespace, event) {
                        self.pass_on(&reader, passed);
                    }
                }
                else => break,
            }
        }
    }

    /// Hands `passed` to every listener, as the store now holds it.
    fn pass_on(&self, store: &Store<K>, passed: Passed<K>) {
        let obj = match passed {
            // Stored before it is passed on; a miss would be a kube-runtime change, not
            // worth a panic.
            Passed::Stored(key) => match store.get(&key) {
                Some(obj) => obj,
                None => return,
            },
            Passed::Deleted(obj) => Arc::new(obj),
        };
        for listener in &self.listeners {
            // A listener gone means its controller stopped; the others go on.
            let _ = listener.send(obj.clone());
        }
    }
}

impl<K> Feed<Packed<K>>
where
    K: Resource<DynamicType = ()>
        + Keyed
        + serde::Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    /// Every change of the kind, as [`Feed::subscribe`], each object decoded: for
    /// mappers that read more than an object's name and keys.
    pub fn unpacked(&mut self) -> Changes<K> {
        self.subscribe()
            .filter_map(|packed| futures::future::ready(packed::unpacked_one(&packed)))
            .boxed()
    }
}

/// The kinds' feeds; controllers subscribe before [`Feeds::run`] starts them.
#[derive(Default)]
pub struct Feeds {
    pub virtual_machines: Feed<Packed<VirtualMachine>>,
    pub groups: Feed<Packed<VirtualMachineGroup>>,
    pub load_balancers: Feed<Packed<LoadBalancer>>,
    pub dns_zones: Feed<DNSZone>,
    pub security_groups: Feed<SecurityGroup>,
}

impl Feeds {
    /// Runs the kinds' watches into the caches `writers` fill: over the cluster,
    /// or with `--namespace` over that namespace only.
    pub async fn run(self, reach: &Reach, writers: Writers) {
        let covered = match (&reach.assignment, &reach.namespace) {
            (Assignment::Owned(owned), _) => Some(Coverages::Owned(owned.clone())),
            (Assignment::All, Some(namespace)) => Some(Coverages::Only(namespace.clone())),
            (Assignment::All, None) => None,
        };
        if let Some(covered) = covered {
            let only = || covered.feed();
            let client = &reach.client;
            tokio::join!(
                self.virtual_machines.run_namespaced(
                    client.clone(),
                    writers.virtual_machines,
                    only()
                ),
                self.groups
                    .run_namespaced(client.clone(), writers.groups, only()),
                self.load_balancers
                    .run_namespaced(client.clone(), writers.load_balancers, only()),
                self.dns_zones
                    .run_namespaced(client.clone(), writers.dns_zones, only()),
                self.security_groups.run_namespaced(
                    client.clone(),
                    writers.security_groups,
                    only()
                ),
            );
            return;
        }
        tokio::join!(
            self.virtual_machines
                .run(reach.watched(), writers.virtual_machines),
            self.groups.run(reach.watched(), writers.groups),
            self.load_balancers
                .run(reach.watched(), writers.load_balancers),
            self.dns_zones.run(reach.watched(), writers.dns_zones),
            self.security_groups
                .run(reach.watched(), writers.security_groups),
        );
    }
}

/// Where the namespaces watched one by one come from.
enum Coverages {
    /// A shard's owned namespaces, as they come and go.
    Owned(Arc<OwnedNamespaces>),
    /// `--namespace`.
    Only(String),
}

impl Coverages {
    fn feed(&self) -> mpsc::UnboundedReceiver<Coverage> {
        match self {
            Self::Owned(owned) => owned.coverage(),
            Self::Only(namespace) => {
                let (coverage, covered) = mpsc::unbounded_channel();
                let _ = coverage.send(Coverage::Watch(namespace.clone()));
                covered
            }
        }
    }
}

/// The objects of `cache` in `namespace`, once it has been filled.
pub async fn in_namespace<K>(cache: &Cache<K>, namespace: &str) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    cache.filled(namespace).await;
    cache
        .store
        .state_filter(|obj| obj.namespace().as_deref() == Some(namespace))
}

/// The objects of `cache` in `namespace` that relate to `key`, once it has been filled.
pub async fn with_key<K>(cache: &Cache<K>, namespace: &str, key: &str) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Keyed + Clone + 'static,
{
    cache.filled(namespace).await;
    cache.with_key_now(namespace, key)
}

/// The object `name` of `namespace`, once the cache has been filled.
pub async fn named<K>(cache: &Cache<K>, namespace: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    cache.filled(namespace).await;
    cache.store.get(&ObjectRef::new(name).within(namespace))
}

/// Whether `name` exists in `namespace`, once the cache has been filled.
pub async fn exists<K>(cache: &Cache<K>, namespace: &str, name: &str) -> bool
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    cache.filled(namespace).await;
    cache
        .store
        .get(&ObjectRef::new(name).within(namespace))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_passed_on_once_complete_and_changes_at_once() {
        use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
        let mut listing = Vec::new();
        assert_eq!(in_store(&mut listing, Apply("a")), ["a"]);
        assert!(in_store(&mut listing, Init).is_empty());
        assert!(in_store(&mut listing, InitApply("b")).is_empty());
        assert!(in_store(&mut listing, InitApply("c")).is_empty());
        assert_eq!(in_store(&mut listing, InitDone), ["b", "c"]);
        assert_eq!(in_store(&mut listing, Delete("b")), ["b"]);
        // A listing that restarted half-way passes on only the new one.
        assert!(in_store(&mut listing, Init).is_empty());
        assert!(in_store(&mut listing, InitApply("d")).is_empty());
        assert!(in_store(&mut listing, Init).is_empty());
        assert!(in_store(&mut listing, InitApply("e")).is_empty());
        assert_eq!(in_store(&mut listing, InitDone), ["e"]);
    }

    #[tokio::test]
    async fn every_reconcile_waiting_for_a_cache_wakes_when_it_fills() {
        let (caches, writers) = WatchCaches::new();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let caches = caches.clone();
                tokio::spawn(async move { in_namespace(&caches.groups, "ns").await.len() })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        writers.groups.ready.send_modify(|listed| {
            let _ = listed.namespaces.insert("ns".into());
        });
        for waiter in waiters {
            let found = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
                .await
                .expect("woken")
                .expect("no panic");
            assert_eq!(found, 0);
        }
    }
}
