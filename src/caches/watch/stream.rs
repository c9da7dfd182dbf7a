//! A kind's raw watch streams and what they pass on to the stores: the retrying
//! watch over an API (over the cluster or one namespace), objects passed by reference,
//! and where a store holds a complete first listing.

use std::fmt::Debug;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// Where a kind's store holds a complete first listing.
#[derive(Clone, Debug, Default)]
pub struct Listed {
    /// The cluster's, from one watch over every namespace.
    pub(super) everywhere: bool,
    /// These namespaces', each from a watch of its own.
    pub(super) namespaces: std::collections::HashSet<String>,
}

impl Listed {
    pub(super) fn covers(&self, namespace: &str) -> bool {
        self.everywhere || self.namespaces.contains(namespace)
    }
}

/// A kind's watch over `api`, retrying with backoff. What no decision reads is dropped
/// before the store keeps it: managedFields are often the bulk of an object, so only who
/// wrote `spec.replicas` is kept (a group's autoscaler sets back a size someone else
/// wrote); and `kubectl apply`'s record of the last applied object, a copy of the whole
/// spec, is dropped (the operator never writes an object whole, so it never writes the
/// record back without it).
pub(super) fn watch<K>(
    api: Api<K>,
) -> impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + 'static,
{
    watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(trim)
}

/// Drops from `obj` what no decision reads (see [`watch`]).
pub(super) fn trim<K: Resource>(obj: &mut K) {
    keep_replicas_owner(obj.managed_fields_mut());
    drop_last_applied(&mut obj.meta_mut().annotations);
}

/// The annotation `kubectl apply` records the applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn drop_last_applied(annotations: &mut Option<std::collections::BTreeMap<String, String>>) {
    if let Some(map) = annotations {
        map.remove(LAST_APPLIED);
        if map.is_empty() {
            *annotations = None;
        }
    }
}

/// Whether the managedFields entry owns `spec.replicas`.
pub fn owns_spec_replicas(entry: &ManagedFieldsEntry) -> bool {
    entry.fields_v1.as_ref().is_some_and(|f| {
        f.0.get("f:spec")
            .and_then(|s| s.get("f:replicas"))
            .is_some()
    })
}

/// Keeps, of `entries`, those that own `spec.replicas`, with nothing else in them.
fn keep_replicas_owner(entries: &mut Vec<ManagedFieldsEntry>) {
    entries.retain(owns_spec_replicas);
    for entry in entries.iter_mut() {
        entry.fields_v1 = Some(FieldsV1(serde_json::json!({"f:spec": {"f:replicas": {}}})));
        entry.api_version = None;
        entry.fields_type = None;
    }
    entries.shrink_to_fit();
}

/// One namespace's watch, its events tagged with the namespace; failures are logged and
/// retried.
pub(super) fn namespace_watch<K>(
    api: Api<K>,
    namespace: String,
) -> BoxStream<'static, (String, watcher::Event<K>)>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let kind = K::kind(&());
    watch(api)
        .filter_map(move |change| {
            let tagged = match change {
                Ok(event) => Some((namespace.clone(), event)),
                Err(error) => {
                    tracing::warn!(kind = %kind, namespace = %namespace, %error, "watch failed; retrying with backoff");
                    None
                }
            };
            futures::future::ready(tagged)
        })
        .boxed()
}

/// An object a watch event passes on: one the store holds, by reference (listeners
/// get the store's copy, and a relisting holds no third copy of every object beside
/// the old store and the reflector's buffer), or one deleted from it.
pub(super) enum Passed<K: Resource<DynamicType = ()>> {
    Stored(ObjectRef<K>),
    Deleted(K),
}

pub(super) fn by_reference<K: Resource<DynamicType = ()>>(
    event: watcher::Event<K>,
) -> watcher::Event<Passed<K>> {
    use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
    match event {
        Apply(obj) => Apply(Passed::Stored(ObjectRef::from_obj(&obj))),
        InitApply(obj) => InitApply(Passed::Stored(ObjectRef::from_obj(&obj))),
        Delete(obj) => Delete(Passed::Deleted(obj)),
        Init => Init,
        InitDone => InitDone,
    }
}

/// The objects `event` put in the store: a change at once, a listing's objects all
/// together when the listing is complete (kept in `listing` until then).
pub(super) fn in_store<K>(listing: &mut Vec<K>, event: watcher::Event<K>) -> Vec<K> {
    match event {
        watcher::Event::Apply(obj) | watcher::Event::Delete(obj) => vec![obj],
        watcher::Event::Init => {
            listing.clear();
            Vec::new()
        }
        watcher::Event::InitApply(obj) => {
            listing.push(obj);
            Vec::new()
        }
        watcher::Event::InitDone => std::mem::take(listing),
    }
}
