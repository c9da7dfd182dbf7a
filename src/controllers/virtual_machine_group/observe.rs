//! The observe step of a VirtualMachineGroup: its Nova server group, its
//! VirtualMachines (by label and controller reference), and the LoadBalancers that draw
//! on it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{
    HaPolicy, LoadBalancer, ReplicaHealth, VirtualMachine, VirtualMachineGroup, annotations, labels,
};

use crate::caches::cloud_view::{KnownServerGroup, ProjectView};
use crate::caches::watch::index::group_key;
use crate::caches::watch::packed::unpacked;
use crate::caches::watch::{WatchCaches, with_key};
use crate::cloud::Compute;
use crate::cloud::ids::ServerGroupId;
use crate::cloud::owner::is_server_group_of;
use crate::controllers::virtual_machine_group::health::health;
use crate::controllers::virtual_machine_group::plan::{Health, Member};
use crate::controllers::virtual_machine_group::zones::{self, Placed, Zoning};
use crate::runtime::ReconcileError;
use crate::runtime::object::{object_key, replica_index};
use crate::runtime::reconciler::Reconcile;

/// The group's zones with Nova's listing of them (at most one listing per project per
/// `max_age`, shared through the cloud view); `None` without `spec.zones`. A failed
/// listing is logged and every zone taken as up: placement then waits on Nova's answer.
pub async fn zoning(
    group: &VirtualMachineGroup,
    compute: &dyn Compute,
    view: &ProjectView,
    max_age: std::time::Duration,
) -> Option<Zoning> {
    let zones = group.spec.zones.as_ref()?;
    let listing = match view
        .zones
        .within(max_age, compute.list_availability_zones())
        .await
    {
        Ok(listing) => Some(listing),
        Err(error) => {
            tracing::warn!(
                group = %object_key(group),
                %error,
                "could not list Nova's availability zones; the group's zones are taken as available until the next listing"
            );
            None
        }
    };
    Some(Zoning::new(zones, listing.as_deref().map(Vec::as_slice)))
}

/// With `spec.zones`: the zoning, the members marked misplaced or surplus, and the
/// active replicas that stay where they are (see [`zones::mark`]).
pub async fn zones(
    group: &VirtualMachineGroup,
    services: &super::Services,
    max_age: std::time::Duration,
    members: &mut [Member],
    vms: &[VirtualMachine],
) -> (Option<Zoning>, Vec<Placed>) {
    let compute = services.compute.as_ref();
    let Some(zoning) = zoning(group, compute, &services.view, max_age).await else {
        return (None, Vec::new());
    };
    let before = group.status.as_ref().map(|s| s.zones.as_slice());
    let refused = zones::refusals(before.unwrap_or_default(), vms, Timestamp::now());
    let zoning = zoning.refusing(refused);
    let replicas = u32::try_from(group.spec.replicas).unwrap_or(0);
    let staying = zones::mark(&zoning, replicas, members, vms);
    (Some(zoning), staying)
}

/// Waits (at most `limit`) until the watch cache shows the round's own writes: each
/// VirtualMachine in `drained` marked draining, each in `deleted` being deleted or gone.
/// The next round counts what serves from the cache: one that still saw a drained
/// replica as serving would drain another beyond `maxUnavailable`.
pub async fn until_seen(
    caches: &WatchCaches,
    group: &VirtualMachineGroup,
    (drained, deleted): (&[String], &[String]),
    limit: std::time::Duration,
) {
    if drained.is_empty() && deleted.is_empty() {
        return;
    }
    let seen = || async {
        let vms = owned_vms(caches, group).await;
        let find = |name: &String| vms.iter().find(|vm| &vm.name_any() == name);
        let marked = drained.iter().all(|name| {
            find(name).is_none_or(|vm| vm.annotations().contains_key(annotations::DRAINING))
        });
        let going = deleted
            .iter()
            .all(|name| find(name).is_none_or(|vm| vm.metadata.deletion_timestamp.is_some()));
        marked && going
    };
    let started = std::time::Instant::now();
    while !seen().await && started.elapsed() < limit {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The group's VirtualMachines, those it controls, from the watch cache.
pub async fn owned_vms(caches: &WatchCaches, group: &VirtualMachineGroup) -> Vec<VirtualMachine> {
    let ns = group.namespace().unwrap_or_default();
    let uid = group.uid();
    let name = group.name_any();
    let members = with_key(&caches.virtual_machines, &ns, &group_key(&name)).await;
    unpacked(&members)
        .into_iter()
        .filter(|vm| {
            vm.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
        })
        .map(Arc::unwrap_or_clone)
        .collect()
}

/// LoadBalancers of the namespace with a port drawing on this group, from the watch cache.
pub async fn referencing_lbs(
    caches: &WatchCaches,
    group: &VirtualMachineGroup,
) -> Vec<LoadBalancer> {
    let ns = group.namespace().unwrap_or_default();
    let name = group.name_any();
    let lbs = with_key(&caches.load_balancers, &ns, &group_key(&name)).await;
    unpacked(&lbs)
        .into_iter()
        .map(Arc::unwrap_or_clone)
        .collect()
}

/// The plan's view of each VirtualMachine: index, template, readiness, draining,
/// whether the load balancers list it, and its health as `judged`.
pub fn members(
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
    lbs: &[LoadBalancer],
    judged: &[ReplicaHealth],
) -> Vec<Member> {
    let group_name = group.name_any();
    let listed: Vec<BTreeMap<String, bool>> = lbs
        .iter()
        .map(|lb| pool_listing(lb, &group.name_any()))
        .collect();
    vms.iter()
        .filter_map(|vm| {
            let name = vm.name_any();
            let index = replica_index(vm, &group_name)?;
            let in_every = |v: &BTreeMap<String, bool>| v.get(&name).copied().unwrap_or(false);
            Some(Member {
                index,
                template_hash: vm
                    .labels()
                    .get(labels::TEMPLATE_HASH)
                    .cloned()
                    .unwrap_or_default(),
                ready: vm
                    .status
                    .as_ref()
                    .is_some_and(|s| is_true(&s.conditions, READY)),
                draining_since: vm
                    .annotations()
                    .get(annotations::DRAINING)
                    .and_then(|t| t.parse::<Timestamp>().ok()),
                deleting: vm.metadata.deletion_timestamp.is_some(),
                in_pools: listed.iter().any(|v| v.contains_key(&name)),
                serving: !listed.is_empty() && listed.iter().all(in_every),
                health: judged
                    .iter()
                    .find(|j| j.name == name)
                    .map_or(Health::Starting, health),
                zone: group.spec.zones.as_ref().and_then(|_| {
                    let status = vm.status.as_ref();
                    let placed = status.and_then(|s| s.availability_zone.clone());
                    vm.spec.availability_zone.clone().or(placed)
                }),
                misplaced: false,
                surplus: false,
                name,
            })
        })
        .collect()
}

/// For one LoadBalancer: member name → whether every port drawing on the group lists it.
fn pool_listing(lb: &LoadBalancer, group: &str) -> BTreeMap<String, bool> {
    let ports: Vec<usize> = lb
        .spec
        .ports
        .iter()
        .enumerate()
        .filter(|(_, p)| p.real_servers.draws_on_group(group))
        .map(|(i, _)| i)
        .collect();
    let status_ports = lb
        .status
        .as_ref()
        .map(|s| s.ports.as_slice())
        .unwrap_or_default();
    let mut listing: BTreeMap<String, usize> = BTreeMap::new();
    for i in &ports {
        for m in status_ports
            .get(*i)
            .map(|p| p.members.as_slice())
            .unwrap_or_default()
        {
            *listing.entry(m.name.clone()).or_default() += 1;
        }
    }
    listing
        .into_iter()
        .map(|(name, n)| (name, n == ports.len()))
        .collect()
}

/// The group's Nova server group: recorded in status, else as this process created it,
/// else found by owner — known to be none when this term's listing of the project's
/// server groups vouches for it. `None` when the group wants none or none exists yet
/// (the plan then creates it).
pub async fn server_group(
    reconcile: &Reconcile<VirtualMachineGroup>,
) -> Result<Option<ServerGroupId>, ReconcileError> {
    let Reconcile {
        ctx,
        tenant,
        obj: group,
        owner,
        services,
        ..
    } = reconcile;
    if group.spec.ha_policy == HaPolicy::None {
        return Ok(None);
    }
    if let Some(id) = group
        .status
        .as_ref()
        .and_then(|s| s.server_group_id.clone())
    {
        return Ok(Some(ServerGroupId::new(id)));
    }
    let view = &services.view;
    let since = ctx.reach.assignment.since(&owner.namespace);
    // Lists the project's server groups once per term (whoever asks first).
    ctx.view
        .server_groups_listed(ctx.surroundings(), tenant, view, since)
        .await;
    match view.server_groups.known(&owner.uid, since) {
        KnownServerGroup::Created(id) => return Ok(Some(id)),
        KnownServerGroup::None => return Ok(None),
        KnownServerGroup::Unknown => {}
    }
    let existing = services
        .compute
        .list_server_groups()
        .await
        .map_err(ReconcileError::cloud("list server groups", &owner.key()))?;
    Ok(existing
        .into_iter()
        .find(|g| is_server_group_of(&g.name, &owner.uid))
        .map(|g| g.id))
}
