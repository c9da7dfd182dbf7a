//! One watch per kind for the whole operator, kept in reflector stores that reconciles
//! read instead of listing the API server, and fanned out to the controllers as their
//! triggers.
//!
//! A store is updated before any controller hears of the change it carries, so a
//! reconcile woken by an object finds at least that version of it in the store. A
//! reconcile woken otherwise (a requeue) may read a store a moment behind the API
//! server, as with any kube-rs cache; the controllers tolerate that (creates of
//! deterministic names accept AlreadyExists, deletes accept NotFound).

use std::fmt::Debug;
use std::sync::{PoisonError, RwLock};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};

use super::Context;

/// The stores every reconcile reads: one per kind, filled by one watch each.
#[derive(Clone)]
pub struct WatchCaches {
    pub virtual_machines: Store<VirtualMachine>,
    pub groups: Store<VirtualMachineGroup>,
    pub load_balancers: Store<LoadBalancer>,
}

/// The write ends of [`WatchCaches`], taken by the watches that fill them.
pub struct Writers {
    virtual_machines: Writer<VirtualMachine>,
    groups: Writer<VirtualMachineGroup>,
    load_balancers: Writer<LoadBalancer>,
}

impl WatchCaches {
    pub fn new() -> (Self, Writers) {
        let (virtual_machines, vm_writer) = reflector::store();
        let (groups, group_writer) = reflector::store();
        let (load_balancers, lb_writer) = reflector::store();
        (
            Self {
                virtual_machines,
                groups,
                load_balancers,
            },
            Writers {
                virtual_machines: vm_writer,
                groups: group_writer,
                load_balancers: lb_writer,
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
pub type Changes<K> = BoxStream<'static, Result<K, watcher::Error>>;

/// One kind's watch and the controllers listening to it.
pub struct Feed<K> {
    listeners: Vec<mpsc::UnboundedSender<K>>,
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
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    /// Every change (created, updated, deleted) of the kind, after the store has it.
    pub fn subscribe(&mut self) -> Changes<K> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.listeners.push(tx);
        futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|obj| (Ok(obj), rx))
        })
        .boxed()
    }

    /// Watches `api` into `writer` and passes every change on, until the task ends.
    async fn run(self, api: Api<K>, writer: Writer<K>) {
        let kind = K::kind(&());
        // managedFields are never read here and are often the bulk of an object.
        let watch = watcher(api, watcher::Config::default().any_semantic())
            .default_backoff()
            .modify(|obj| obj.managed_fields_mut().clear());
        let changes = reflector::reflector(writer, watch).touched_objects();
        changes
            .inspect_err(|error| {
                tracing::warn!(kind = %kind, %error, "watch failed; retrying with backoff");
            })
            .filter_map(|change| futures::future::ready(change.ok()))
            .for_each(|obj| {
                for listener in &self.listeners {
                    // A listener gone means its controller stopped; the others go on.
                    let _ = listener.send(obj.clone());
                }
                futures::future::ready(())
            })
            .await;
    }
}

/// The three kinds' feeds; controllers subscribe before [`Feeds::run`] starts them.
#[derive(Default)]
pub struct Feeds {
    pub virtual_machines: Feed<VirtualMachine>,
    pub groups: Feed<VirtualMachineGroup>,
    pub load_balancers: Feed<LoadBalancer>,
}

impl Feeds {
    /// Runs the three watches into the caches `writers` fill.
    pub async fn run(self, ctx: &Context, writers: Writers) {
        tokio::join!(
            self.virtual_machines
                .run(ctx.watched(), writers.virtual_machines),
            self.groups.run(ctx.watched(), writers.groups),
            self.load_balancers
                .run(ctx.watched(), writers.load_balancers),
        );
    }
}

/// The objects of `store` in `namespace`, once the store has been filled.
pub async fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<std::sync::Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    // Dropped writers (controllers stopping) leave the store as it is: read it anyway.
    let _ = store.wait_until_ready().await;
    store.state_filter(|obj| obj.namespace().as_deref() == Some(namespace))
}

/// Whether `name` exists in `namespace`, once the store has been filled.
pub async fn exists<K>(store: &Store<K>, namespace: &str, name: &str) -> bool
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let _ = store.wait_until_ready().await;
    store.get(&ObjectRef::new(name).within(namespace)).is_some()
}
