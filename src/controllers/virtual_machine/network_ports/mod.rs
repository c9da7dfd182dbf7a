//! A VirtualMachine's declared Neutron ports (`spec.ports`): made before the server,
//! found again by their owner record, and booted on by every server that replaces it,
//! so the addresses and MACs stay.
//!
//! The owner is recorded in the port's `description` (Neutron keeps no tags given at
//! create; [`port_record`]): the VirtualMachine's, or for replica `n` of a group the
//! group's and `n`, with the cluster, so a new VirtualMachine of that index finds them.
//! `observe` lists them (one call), `plan` decides the next step (pure), `execute`
//! carries it out, `removal` keeps or deletes them as `networkRetention` says.

pub mod adoption;
pub mod execute;
pub mod floating;
pub mod plan;
pub mod removal;

use verda_api::v1alpha1::{NetworkPortStatus, VirtualMachine};

use crate::caches::cloud_view::PortView;
use crate::cloud::Network;
use crate::cloud::ids::{NetworkId, PortId};
use crate::cloud::model::compute::Server;
use crate::cloud::model::network::{Port, PortFilter};
use crate::cloud::owner::{Owner, port_record};
use crate::controllers::virtual_machine::security_groups;
use crate::controllers::virtual_machine::volumes::volume_owner;
use crate::runtime::object::first_create;
use crate::runtime::reconciler::Reconcile;
use crate::runtime::{Context, ReconcileError};

/// The ports as this VirtualMachine sees them.
#[derive(Clone, Debug)]
pub struct Look {
    /// The owner record the ports carry.
    pub record: String,
    /// The network of each `spec.ports` entry, in order.
    pub networks: Vec<NetworkId>,
    /// The security group IDs of each entry (`None`: the project's default, left alone).
    pub groups: Vec<Option<Vec<String>>>,
    /// Every port carrying the record.
    pub found: Vec<Port>,
    /// The floating IP, when the spec asks for one.
    pub floating: Option<floating::Floating>,
}

impl Look {
    /// The port kept for spec entry `i`, when there is one.
    pub fn kept(&self, i: usize, server: Option<&str>) -> Option<&Port> {
        self.candidates(i, server).into_iter().next()
    }

    /// The ports on entry `i`'s network, the one to keep first: bound to `server`,
    /// then free, then bound elsewhere.
    pub fn candidates(&self, i: usize, server: Option<&str>) -> Vec<&Port> {
        let Some(network) = self.networks.get(i) else {
            return Vec::new();
        };
        let mut found: Vec<&Port> = self
            .found
            .iter()
            .filter(|p| &p.network_id == network)
            .collect();
        found.sort_by_key(|p| match p.device() {
            Some(d) if Some(d) == server => 0,
            None => 1,
            Some(_) => 2,
        });
        found
    }

    /// The ports a new server boots on, in spec order; `None` while one is missing.
    pub fn boot_ports(&self, count: usize) -> Option<Vec<PortId>> {
        (0..count)
            .map(|i| self.kept(i, None).map(|p| p.id.clone()))
            .collect()
    }
}

/// Whether the object has ports to look after: declared, or still reported.
pub fn wanted(vm: &VirtualMachine) -> bool {
    vm.spec.ports.as_ref().is_some_and(|p| !p.is_empty())
        || vm.status.as_ref().is_some_and(|s| !s.ports.is_empty())
        || floating::wanted(vm)
}

/// Whether the last reconcile left the object Ready with every declared port (and the
/// floating IP) recorded, and the spec has not changed since: its server settled in
/// the shared view, nothing about the ports needs a look.
pub fn settled(vm: &VirtualMachine) -> bool {
    let Some(status) = &vm.status else {
        return false;
    };
    let spec = vm.spec.ports.as_deref().unwrap_or_default();
    let recorded = status.ports.len() == spec.len()
        && spec
            .iter()
            .zip(&status.ports)
            .all(|(p, s)| p.network == s.network);
    let floating = vm.spec.floating_ip.is_none() || status.floating_ip.is_some();
    let unchanged = status.observed_generation == vm.metadata.generation;
    let ready = verda_api::conditions::is_true(&status.conditions, verda_api::conditions::READY);
    recorded && floating && unchanged && ready
}

/// The owner record of the VirtualMachine's ports: its group's and index when a
/// group controls it, else its own (the same owner its data volumes record).
pub fn record(ctx: &Context, vm: &VirtualMachine, owner: &Owner) -> String {
    let whose = volume_owner(ctx, vm, owner);
    port_record(&whose.owner.uid, whose.index, &ctx.cluster)
}

/// The record's ports as the shared view knows them, when it may answer: while the
/// server the status records is there (a replacement waits on Nova letting the old one
/// go, which only Neutron tells), from a recent read or create of this process; for an
/// object that never had a server and is about to create, from the project's listing.
pub async fn known(
    reconcile: &Reconcile<VirtualMachine>,
    servers: &[Server],
    record: &str,
) -> Option<Vec<Port>> {
    let Reconcile {
        ctx,
        obj: vm,
        owner,
        tenant,
        services,
        ..
    } = reconcile;
    let recorded = vm.status.as_ref().and_then(|s| s.server_id.as_deref());
    if recorded.is_some_and(|id| !servers.iter().any(|s| s.id.as_str() == id)) {
        return None;
    }
    let view = &services.view;
    if let Some(found) = view.network_ports.settled(record, ctx.view_max_age()) {
        return Some(found);
    }
    if !first_create(vm, reconcile.policy.writes()) {
        return None;
    }
    let since = ctx.reach.assignment.since(&owner.namespace);
    let listed = ctx
        .view
        .ports_listed(ctx.surroundings(), tenant, view, since)
        .await;
    (listed && view.network_ports.vouches_none(record, since)).then(Vec::new)
}

/// The ports carrying the object's record (`known`, else one listing, kept in `view`),
/// and the security groups they should have (a SecurityGroup of the namespace by its
/// ID; other names by remembered lookups: no call once known).
/// `networks`: the resolved network of each spec entry.
pub async fn observe(
    ctx: &crate::runtime::Context,
    neutron: &dyn Network,
    view: &PortView,
    vm: &VirtualMachine,
    (record, known): (String, Option<Vec<Port>>),
    networks: Vec<NetworkId>,
    key: &str,
) -> Result<Look, ReconcileError> {
    let count = vm.spec.ports.as_ref().map_or(0, Vec::len);
    let mut groups = Vec::with_capacity(count);
    for i in 0..count {
        groups.push(match wanted_groups(vm, i) {
            Some(names) => {
                let names = security_groups::declared(ctx, vm, &names, key).await?;
                Some(group_ids(neutron, &names, key).await?)
            }
            None => None,
        });
    }
    let found = match known {
        Some(found) => found,
        None => {
            let filter = PortFilter {
                descriptions: vec![record.clone()],
                ..PortFilter::default()
            };
            let found = neutron
                .list_ports(&filter)
                .await
                .map_err(ReconcileError::cloud("list ports", key))?;
            view.record(&record, &found);
            found
        }
    };
    let floating = floating::observe(neutron, vm, &record, key).await?;
    Ok(Look {
        record,
        networks,
        groups,
        found,
        floating,
    })
}

/// Security group IDs of `names`: Neutron takes IDs only.
async fn group_ids(
    neutron: &dyn Network,
    names: &[String],
    key: &str,
) -> Result<Vec<String>, ReconcileError> {
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        let group = neutron
            .find_security_group(name)
            .await
            .map_err(ReconcileError::cloud(
                "look up a security group of spec.ports",
                key,
            ))?;
        ids.push(group.id);
    }
    ids.sort();
    Ok(ids)
}

/// The security groups spec entry `i` asks for, by name: its own, else the
/// VirtualMachine's; `None`: the project's default.
pub fn wanted_groups(vm: &VirtualMachine, i: usize) -> Option<Vec<String>> {
    let port = vm.spec.ports.as_ref()?.get(i)?;
    port.security_groups
        .clone()
        .or_else(|| vm.spec.security_groups.clone())
}

/// The floating IP's address, once allocated.
pub fn floating_status(look: &Look) -> Option<String> {
    let floating = look.floating.as_ref()?;
    let port = look.kept(0, None).map(|p| p.id.clone())?;
    floating::kept(floating, &port).map(|f| f.floating_ip_address.clone())
}

/// The status of the declared ports, in spec order: those Neutron has.
pub fn status(vm: &VirtualMachine, look: &Look, server: Option<&str>) -> Vec<NetworkPortStatus> {
    let spec = vm.spec.ports.as_deref().unwrap_or_default();
    spec.iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let port = look.kept(i, server)?;
            Some(NetworkPortStatus {
                network: p.network.clone(),
                id: port.id.to_string(),
                fixed_ips: port.addresses(),
                mac_address: (!port.mac_address.is_empty()).then(|| port.mac_address.clone()),
            })
        })
        .collect()
}
