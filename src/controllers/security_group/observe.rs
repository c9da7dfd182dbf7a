//! Finds what a SecurityGroup stands for in Neutron and gathers what its rules name:
//! its group (by the ID its status recorded, else the group `spec.import` names, else
//! the project's group of its name carrying its owner record: a create whose answer
//! was lost is found so, never made twice), its address groups (as its status recorded
//! them, else found by name and owner record), the addresses of the replicas of the
//! groups the rules name (from the watch cache: no cloud call), and the other peers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kube::runtime::reflector::ObjectRef;

use verda_api::v1alpha1::{SecurityGroup, VirtualMachine};

use super::Services;
use super::plan::{Held, Seen, address_group_name, carries};
use super::rules::Peers;
use crate::caches::watch::packed::{unpacked, unpacked_one};
use crate::caches::watch::{self, WatchCaches, index::group_key};
use crate::cloud::ErrorKind;
use crate::cloud::ids::LoadBalancerId;
use crate::cloud::model::firewall::Firewall;
use crate::controllers::virtual_machine::security_groups::ready_id;
use crate::runtime::ReconcileError;
use crate::runtime::problem::Problem;

/// What the round starts from.
pub async fn seen(
    services: &Services,
    caches: &WatchCaches,
    obj: &SecurityGroup,
    (record, fresh): (&str, Duration),
    key: &str,
) -> Result<Seen, ReconcileError> {
    let firewall = find(services, obj, (record, Some(fresh)), key).await?;
    let namespace = kube::ResourceExt::namespace(obj).unwrap_or_default();
    let mut addresses = BTreeMap::new();
    for group in referenced_groups(obj) {
        let vms = watch::with_key(&caches.virtual_machines, &namespace, &group_key(&group)).await;
        let vms = unpacked(&vms);
        addresses.insert(group, replica_addresses(vms.iter().map(|vm| &**vm)));
    }
    let held = held(services, obj, &addresses, record, key).await?;
    let peers = peers(services, caches, obj, &namespace).await;
    Ok(Seen {
        firewall,
        held,
        addresses,
        peers,
    })
}

/// The VirtualMachineGroups the rules take addresses from.
pub fn referenced_groups(obj: &SecurityGroup) -> BTreeSet<String> {
    let peers = obj.spec.rules.iter().filter_map(|r| r.from.as_ref());
    peers
        .filter_map(|p| p.virtual_machine_group.clone())
        .collect()
}

/// Every fixed address of the replicas, as a host range (`10.0.0.5/32`).
pub fn replica_addresses<'a>(
    vms: impl IntoIterator<Item = &'a VirtualMachine>,
) -> BTreeSet<String> {
    let statuses = vms.into_iter().filter_map(|vm| vm.status.as_ref());
    statuses
        .flat_map(|s| s.addresses.iter())
        .filter(|a| a.kind.as_deref() != Some("floating"))
        .filter_map(|a| super::rules::normalised(&a.address))
        .collect()
}

/// The object's Neutron group, if it has one.
pub async fn find(
    services: &Services,
    obj: &SecurityGroup,
    (record, shared): (&str, Option<Duration>),
    key: &str,
) -> Result<Option<Firewall>, ReconcileError> {
    let recorded = obj.status.as_ref().and_then(|s| s.id.as_deref());
    if let Some(id) = recorded {
        let found = match shared {
            Some(fresh) => listed(services, obj, id, fresh, key).await?,
            None => by_id(services, id, key).await?,
        };
        if let Some(found) = found {
            return Ok(Some(found));
        }
    }
    if let Some(import) = &obj.spec.import {
        return imported(services, &import.id, record, key).await.map(Some);
    }
    let name = kube::ResourceExt::name_any(obj);
    let named = services
        .firewalls
        .security_groups_named(&name)
        .await
        .map_err(ReconcileError::cloud("list the security groups", key))?;
    Ok(named.into_iter().find(|f| carries(&f.description, record)))
}

/// The group as the project's shared listing (younger than `fresh`, taken after the
/// group's last write) shows it; a refresh wakes the object when it changes.
async fn listed(
    services: &Services,
    obj: &SecurityGroup,
    id: &str,
    fresh: Duration,
    key: &str,
) -> Result<Option<Firewall>, ReconcileError> {
    let region = services.region.as_deref();
    let view = &services.view.firewalls;
    let list = services.firewalls.all_security_groups();
    let found = view
        .group(region, id, fresh, list)
        .await
        .map_err(ReconcileError::cloud("list the security groups", key))?;
    view.watch(region, id, ObjectRef::from_obj(obj));
    Ok(found)
}

async fn by_id(
    services: &Services,
    id: &str,
    key: &str,
) -> Result<Option<Firewall>, ReconcileError> {
    match services.firewalls.get_security_group(id).await {
        Ok(found) => Ok(Some(found)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound { .. }) => Ok(None),
        Err(e) => Err(ReconcileError::cloud("show the security group", key)(e)),
    }
}

/// The group `spec.import` names: it must exist and belong to no other object.
async fn imported(
    services: &Services,
    id: &str,
    record: &str,
    key: &str,
) -> Result<Firewall, ReconcileError> {
    let invalid = |problem, message: String| ReconcileError::Invalid {
        object: key.to_owned(),
        problem,
        message,
    };
    let Some(found) = by_id(services, id, key).await? else {
        let message = format!(
            "spec.import.id {id} names no security group of this project; give the ID of one it has (openstack security group list)"
        );
        return Err(invalid(Problem::ImportNotFound, message));
    };
    let others = crate::cloud::owner::port_owner(&found.description).is_some();
    if others && !carries(&found.description, record) {
        let message = format!(
            "security group {} ({id}) is another SecurityGroup's (its description records that owner); nothing was changed",
            found.name
        );
        return Err(invalid(Problem::ImportOwnedByAnother, message));
    }
    Ok(found)
}

/// The address groups: as the status recorded them, else (a create whose answer was
/// lost) found by name and owner record.
async fn held(
    services: &Services,
    obj: &SecurityGroup,
    wanted: &BTreeMap<String, BTreeSet<String>>,
    record: &str,
    key: &str,
) -> Result<Vec<Held>, ReconcileError> {
    let recorded = obj.status.iter().flat_map(|s| s.address_groups.iter());
    let mut held: Vec<Held> = recorded
        .map(|a| Held {
            group: a.virtual_machine_group.clone(),
            id: a.id.clone(),
            addresses: a.addresses.clone(),
        })
        .collect();
    let name = kube::ResourceExt::name_any(obj);
    for group in wanted.keys() {
        if held.iter().any(|h| &h.group == group) {
            continue;
        }
        let listed = services
            .firewalls
            .address_groups_named(&address_group_name(&name, group))
            .await
            .map_err(ReconcileError::cloud("list the address groups", key))?;
        if let Some(found) = listed.into_iter().find(|a| carries(&a.description, record)) {
            held.push(Held {
                group: group.clone(),
                id: found.id,
                addresses: found.addresses,
            });
        }
    }
    Ok(held)
}

/// The security groups and load balancers the rules name, as far as known now.
async fn peers(
    services: &Services,
    caches: &WatchCaches,
    obj: &SecurityGroup,
    namespace: &str,
) -> Peers {
    let mut peers = Peers::default();
    let own = kube::ResourceExt::name_any(obj);
    for from in obj.spec.rules.iter().filter_map(|r| r.from.as_ref()) {
        if let Some(name) = from.security_group.as_ref().filter(|n| **n != own) {
            let found = security_group(services, caches, namespace, name).await;
            peers.security_groups.insert(name.clone(), found);
        }
        if let Some(name) = &from.load_balancer {
            let found = vip_subnet(services, caches, namespace, name).await;
            peers.load_balancers.insert(name.clone(), found);
        }
    }
    peers
}

/// A SecurityGroup of the namespace once Ready, else the project's group of that name.
async fn security_group(
    services: &Services,
    caches: &WatchCaches,
    namespace: &str,
    name: &str,
) -> Result<String, String> {
    if let Some(declared) = watch::named(&caches.security_groups, namespace, name).await {
        return ready_id(&declared).ok_or_else(|| format!("SecurityGroup {name} is not Ready yet"));
    }
    match services.firewalls.security_groups_named(name).await {
        Ok(found) if found.len() == 1 => Ok(found[0].id.clone()),
        Ok(found) if found.is_empty() => Err(format!(
            "the project has no security group {name} and the namespace no SecurityGroup of that name"
        )),
        Ok(found) => Err(format!(
            "{} security groups of the project are named {name}; name a SecurityGroup instead",
            found.len()
        )),
        Err(e) => Err(format!(
            "Neutron did not answer for security group {name}: {e}"
        )),
    }
}

/// The CIDR of a LoadBalancer's VIP subnet.
async fn vip_subnet(
    services: &Services,
    caches: &WatchCaches,
    namespace: &str,
    name: &str,
) -> Result<String, String> {
    let lb = watch::named(&caches.load_balancers, namespace, name).await;
    let Some(lb) = lb.as_deref().and_then(unpacked_one) else {
        return Err(format!("the namespace has no LoadBalancer {name}"));
    };
    let id = lb.status.as_ref().and_then(|s| s.load_balancer_id.clone());
    let Some(id) = id else {
        return Err(format!("LoadBalancer {name} has no load balancer yet"));
    };
    let id = LoadBalancerId::new(id);
    let found = services
        .load_balancing
        .get_load_balancer(&id)
        .await
        .map_err(|e| format!("Octavia did not answer for LoadBalancer {name}: {e}"))?;
    let Some(subnet) = found.vip_subnet_id else {
        return Err(format!("LoadBalancer {name} has no VIP subnet yet"));
    };
    let subnet = services.network.get_subnet(&subnet).await;
    subnet.map(|s| s.cidr).map_err(|e| {
        format!("Neutron did not answer for the VIP subnet of LoadBalancer {name}: {e}")
    })
}
