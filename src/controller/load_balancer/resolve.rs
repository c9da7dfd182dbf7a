//! What a LoadBalancer refers to: the backends of each port (a group's Ready
//! VirtualMachines, named VirtualMachines, or literal addresses), the Octavia objects
//! that exist for it, and the names it needs resolved at create time.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::{Api, ListParams};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{
    LoadBalancer, RealServers, VipType, VirtualMachine, VirtualMachineGroup, annotations, labels,
};

use super::desired::Backend;
use crate::cloud::ids::{LbFlavorId, NetworkId, SubnetId};
use crate::cloud::model::loadbalancing::{
    HealthMonitor, LbFilter, Listener, LoadBalancer as OsLoadBalancer, Member, Pool,
    ProvisioningStatus,
};
use crate::cloud::model::network::{FloatingIp, FloatingIpFilter};
use crate::cloud::owner::Owner;
use crate::cloud::{LoadBalancing, Network};
use crate::config::Config;
use crate::controller::ReconcileError;

/// The backends of every port, in spec order, and the groups that do not exist.
#[derive(Debug, Default)]
pub struct Backends {
    pub ports: Vec<Vec<Backend>>,
    pub missing_groups: Vec<String>,
}

/// Reads the VirtualMachines (and groups) the ports draw on: one list per namespace.
pub async fn backends(
    client: &kube::Client,
    lb: &LoadBalancer,
) -> Result<Backends, ReconcileError> {
    let ns = lb.namespace().unwrap_or_default();
    let key = format!("{ns}/{}", lb.name_any());
    let needs_vms = lb
        .spec
        .ports
        .iter()
        .any(|p| p.real_servers.addresses.is_none());
    let vms = if needs_vms {
        Api::<VirtualMachine>::namespaced(client.clone(), &ns)
            .list(&ListParams::default())
            .await
            .map_err(ReconcileError::kube("list VirtualMachines", &key))?
            .items
    } else {
        Vec::new()
    };
    let groups = Api::<VirtualMachineGroup>::namespaced(client.clone(), &ns);
    let mut exists: BTreeMap<String, bool> = BTreeMap::new();
    let mut result = Backends::default();
    for port in &lb.spec.ports {
        let rs = &port.real_servers;
        if let Some(group) = &rs.virtual_machine_group_ref
            && !exists.contains_key(group)
        {
            let found = groups
                .get_opt(group)
                .await
                .map_err(ReconcileError::kube("read the VirtualMachineGroup", &key))?
                .is_some();
            exists.insert(group.clone(), found);
            if !found {
                result.missing_groups.push(group.clone());
            }
        }
        result.ports.push(port_backends(rs, &vms));
    }
    Ok(result)
}

/// The backends of one port: its addresses, or the serving VirtualMachines it names.
pub fn port_backends(rs: &RealServers, vms: &[VirtualMachine]) -> Vec<Backend> {
    if let Some(addresses) = &rs.addresses {
        return addresses
            .iter()
            .map(|a| Backend {
                name: a.clone(),
                address: a.clone(),
            })
            .collect();
    }
    let chosen = |vm: &VirtualMachine| match (&rs.virtual_machine_group_ref, &rs.virtual_machines) {
        (Some(group), _) => vm.labels().get(labels::GROUP) == Some(group),
        (None, Some(names)) => names.iter().any(|n| *n == vm.name_any()),
        (None, None) => false,
    };
    let mut backends: Vec<Backend> = vms
        .iter()
        .filter(|vm| chosen(vm))
        .filter_map(serving_backend)
        .collect();
    backends.sort();
    backends
}

/// The backend a VirtualMachine gives while it serves: Ready, with an address, and
/// neither draining nor being deleted.
pub fn serving_backend(vm: &VirtualMachine) -> Option<Backend> {
    if vm.metadata.deletion_timestamp.is_some()
        || vm.annotations().contains_key(annotations::DRAINING)
    {
        return None;
    }
    let status = vm.status.as_ref()?;
    if !is_true(&status.conditions, READY) {
        return None;
    }
    Some(Backend {
        name: vm.name_any(),
        address: status.primary_ip.clone()?,
    })
}

/// The Octavia objects of one LoadBalancer, found by its owner tag.
#[derive(Debug, Default)]
pub struct Observed {
    /// Every load balancer carrying the owner tag (more than one only after a crash).
    pub load_balancers: Vec<OsLoadBalancer>,
    /// The children of the kept load balancer.
    pub listeners: Vec<Listener>,
    pub pools: Vec<Pool>,
    pub monitors: Vec<HealthMonitor>,
    /// Pool ID → members.
    pub members: BTreeMap<String, Vec<Member>>,
    /// Floating IPs recording this owner.
    pub floating_ips: Vec<FloatingIp>,
}

/// The load balancer this object keeps: the recorded one, else the first not being
/// deleted.
pub fn keeper<'a>(lb: &LoadBalancer, found: &'a [OsLoadBalancer]) -> Option<&'a OsLoadBalancer> {
    let recorded = lb
        .status
        .as_ref()
        .and_then(|s| s.load_balancer_id.as_deref());
    found
        .iter()
        .find(|l| Some(l.id.as_str()) == recorded)
        .or_else(|| {
            found
                .iter()
                .find(|l| l.provisioning_status != ProvisioningStatus::PendingDelete)
        })
}

/// Reads the Octavia tree (and floating IPs when the object has or wants one).
pub async fn observe(
    octavia: &dyn LoadBalancing,
    neutron: &dyn Network,
    lb: &LoadBalancer,
    owner: &Owner,
) -> Result<Observed, ReconcileError> {
    let key = format!("{}/{}", owner.namespace, owner.name);
    let mut observed = Observed {
        load_balancers: octavia
            .list_load_balancers(&LbFilter {
                tags: vec![owner.tag()],
                ..LbFilter::default()
            })
            .await
            .map_err(ReconcileError::cloud("list load balancers", &key))?,
        ..Observed::default()
    };
    let wants_fip = lb.spec.vip_type == VipType::Public
        || lb.status.as_ref().is_some_and(|s| s.floating_ip.is_some());
    if wants_fip {
        observed.floating_ips = neutron
            .list_floating_ips(&FloatingIpFilter {
                description: Some(owner.tag()),
                ..FloatingIpFilter::default()
            })
            .await
            .map_err(ReconcileError::cloud("list floating IPs", &key))?;
    }
    let Some(kept) = keeper(lb, &observed.load_balancers) else {
        return Ok(observed);
    };
    if matches!(
        kept.provisioning_status,
        ProvisioningStatus::PendingCreate | ProvisioningStatus::PendingDelete
    ) {
        return Ok(observed);
    }
    let children = LbFilter {
        loadbalancer_id: Some(kept.id.clone()),
        ..LbFilter::default()
    };
    observed.listeners = octavia
        .list_listeners(&children)
        .await
        .map_err(ReconcileError::cloud("list listeners", &key))?;
    observed.pools = octavia
        .list_pools(&children)
        .await
        .map_err(ReconcileError::cloud("list pools", &key))?;
    for pool in &observed.pools {
        if let Some(id) = &pool.healthmonitor_id {
            match octavia.get_health_monitor(id).await {
                Ok(m) => observed.monitors.push(m),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(ReconcileError::cloud("read a health monitor", &key)(e)),
            }
        }
        let members = octavia
            .list_members(&pool.id)
            .await
            .map_err(ReconcileError::cloud("list pool members", &key))?;
        observed.members.insert(pool.id.to_string(), members);
    }
    Ok(observed)
}

/// What a create needs resolved from names: the VIP subnet and the Octavia flavor.
pub struct Placement {
    pub vip_subnet: SubnetId,
    pub flavor: Option<LbFlavorId>,
}

pub async fn placement(
    config: &Config,
    octavia: &dyn LoadBalancing,
    neutron: &dyn Network,
    lb: &LoadBalancer,
) -> Result<Placement, ReconcileError> {
    let key = format!("{}/{}", lb.namespace().unwrap_or_default(), lb.name_any());
    let spec = &lb.spec;
    let vip_type = match spec.vip_type {
        VipType::Private => "private",
        VipType::Public => "public",
    };
    let region = spec.region.as_deref().unwrap_or_default();
    let zone = spec.zone.as_deref().unwrap_or_default();
    let subnet_name = match &spec.vip_subnet {
        Some(name) => name.as_str(),
        None => config
            .load_balancer
            .vip_subnet(region, zone, vip_type)
            .ok_or_else(|| ReconcileError::Invalid {
                object: key.clone(),
                reason: "VipSubnetNotConfigured",
                message: format!(
                    "no loadBalancer.vipSubnets rule of the operator configuration matches region {region:?}, \
                     zone {zone:?}, vipType {vip_type}; add one or set spec.vipSubnet"
                ),
            })?,
    };
    let subnet = neutron
        .find_subnet(subnet_name)
        .await
        .map_err(ReconcileError::cloud("find the VIP subnet", &key))?;
    let flavor = match config.load_balancer.flavors.get(&spec.service_type) {
        None => {
            let known: Vec<&str> = config
                .load_balancer
                .flavors
                .keys()
                .map(String::as_str)
                .collect();
            return Err(ReconcileError::Invalid {
                object: key,
                reason: "ServiceTypeUnknown",
                message: format!(
                    "serviceType {:?} is not configured; known: {}",
                    spec.service_type,
                    known.join(", ")
                ),
            });
        }
        Some(name) if name.is_empty() => None,
        Some(name) => Some(
            octavia
                .find_lb_flavor(name)
                .await
                .map_err(ReconcileError::cloud("find the load balancer flavor", &key))?
                .id,
        ),
    };
    Ok(Placement {
        vip_subnet: subnet.id,
        flavor,
    })
}

/// The external network floating IPs of `vipType: public` come from.
pub async fn floating_network(
    config: &Config,
    neutron: &dyn Network,
    key: &str,
) -> Result<NetworkId, ReconcileError> {
    Ok(neutron
        .find_network(&config.load_balancer.floating_network)
        .await
        .map_err(ReconcileError::cloud("find the floating IP network", key))?
        .id)
}
