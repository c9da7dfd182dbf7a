//! The orphan gauge, counted from what a refresh listed anyway (no call of its own):
//! this cluster's servers and load balancers whose owner is in no watch cache. With a
//! single watched namespace only that namespace's resources are counted; a shard counts
//! those of the namespaces it owns.

use std::collections::{BTreeMap, HashSet};

use kube::ResourceExt;
use kube::runtime::reflector::Store;

use super::surroundings::Surroundings;
use crate::cloud::model::compute::Server;
use crate::cloud::model::loadbalancing::LoadBalancer;
use crate::cloud::model::volume::Volume;
use crate::cloud::orphans;
use crate::cloud::owner::{Owner, load_balancer_name_prefix, namespace_from_tags};
use crate::leases::assignment::Assignment;

/// The orphaned servers of a listing taken in page by page: the owner of each of this
/// cluster's servers is noted as its page is read, and checked against the watch cache
/// once the listing is complete.
pub struct ServerOrphans<'a> {
    ctx: Surroundings<'a>,
    owners: Vec<String>,
}

impl<'a> ServerOrphans<'a> {
    pub fn new(ctx: Surroundings<'a>) -> Self {
        Self {
            ctx,
            owners: Vec::new(),
        }
    }

    pub fn add(&mut self, page: &[Server]) {
        let scoped = page.iter().filter(|s| counted(self.ctx, &s.metadata));
        let owners = scoped.filter_map(|s| orphans::server_owner_uid(s, self.ctx.cluster));
        self.owners.extend(owners);
    }

    pub fn count(self) -> usize {
        let live = uids(&self.ctx.caches.current().virtual_machines.store);
        self.owners
            .iter()
            .filter(|uid| !live.contains(*uid))
            .count()
    }
}

pub fn count_load_balancers(ctx: Surroundings<'_>, listed: &[LoadBalancer]) -> usize {
    let live = uids(&ctx.caches.current().load_balancers.store);
    let scoped = listed.iter().filter(|l| load_balancer_counted(ctx, l));
    orphans::load_balancers(scoped, ctx.cluster, &live).len()
}

/// Whether a load balancer counts here, by the namespace its tags record. One made by
/// an earlier release, without that tag, counts where every namespace is watched,
/// under `--namespace` by its name (`verda-<namespace>-<name>`, which cannot tell
/// `team` from `team-a`), in no shard.
fn load_balancer_counted(ctx: Surroundings<'_>, lb: &LoadBalancer) -> bool {
    match (
        namespace_from_tags(&lb.tags),
        &ctx.reach.assignment,
        &ctx.reach.namespace,
    ) {
        (_, Assignment::All, None) => true,
        (Some(ns), Assignment::Owned(owned), _) => owned.owns(ns),
        (Some(ns), Assignment::All, Some(watched)) => ns == watched,
        (None, Assignment::Owned(_), _) => false,
        (None, Assignment::All, Some(ns)) => lb.name.starts_with(&load_balancer_name_prefix(ns)),
    }
}

/// This cluster's data volumes whose owner — a VirtualMachine, or a group for its
/// replicas' volumes — is in no watch cache.
pub fn count_volumes(ctx: Surroundings<'_>, listed: &[Volume]) -> usize {
    let caches = ctx.caches.current();
    let mut live = uids(&caches.virtual_machines.store);
    live.extend(uids(&caches.groups.store));
    let scoped = listed.iter().filter(|v| counted(ctx, &v.metadata));
    orphans::volumes(scoped, ctx.cluster, &live).len()
}

/// Whether a resource recording `metadata` counts here: every one when all namespaces
/// are watched, else those whose owner's namespace is watched (`--namespace`) or owned
/// (a shard).
fn counted(ctx: Surroundings<'_>, metadata: &BTreeMap<String, String>) -> bool {
    let owner = || Owner::from_metadata(metadata);
    match (&ctx.reach.assignment, &ctx.reach.namespace) {
        (Assignment::Owned(owned), _) => owner().is_some_and(|o| owned.owns(&o.namespace)),
        (Assignment::All, None) => true,
        (Assignment::All, Some(ns)) => owner().is_some_and(|o| &o.namespace == ns),
    }
}

/// The UIDs of the objects a watch cache holds.
fn uids<K>(store: &Store<K>) -> HashSet<String>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    store.state().iter().filter_map(|o| o.uid()).collect()
}
