//! What a LoadBalancer refers to: the backends of each port (a group's Ready
//! VirtualMachines, named VirtualMachines, or literal addresses), the Octavia objects
//! that exist for it, and the names it needs resolved at create time.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{
    LoadBalancer, RealServers, VipType, VirtualMachine, annotations, labels,
};

use crate::caches::cloud_view::OctaviaTree;
use crate::caches::watch::index::Keyed;
use crate::caches::watch::{WatchCaches, exists, in_namespace, with_key};
use crate::cloud::ids::{LbFlavorId, LoadBalancerId, NetworkId, SubnetId};
use crate::cloud::model::loadbalancing::{
    LbFilter, LoadBalancer as OsLoadBalancer, ProvisioningStatus,
};
use crate::cloud::model::network::FloatingIpFilter;
use crate::cloud::owner::Owner;
use crate::cloud::{LoadBalancing, Network};
use crate::config::Config;
use crate::controllers::load_balancer::desired::Backend;
use crate::runtime::ReconcileError;
use crate::runtime::keeper;
use crate::runtime::object::object_key;
use crate::runtime::problem::Problem;
use crate::runtime::progress::PROVISIONING;

/// The backends of every port, in spec order, and the groups that do not exist.
#[derive(Debug, Default)]
pub struct Backends {
    pub ports: Vec<Vec<Backend>>,
    /// Per port, the VirtualMachines of its group still on their way to Ready.
    pub starting: Vec<usize>,
    pub missing_groups: Vec<String>,
}

/// How long a new VirtualMachine may hold back its group's other additions to the
/// pools: past this, the pools take whoever is Ready.
pub const STARTING_HOLD: std::time::Duration = std::time::Duration::from_secs(60);

/// The VirtualMachines (and groups) the ports draw on, from the watch caches.
pub async fn backends(caches: &WatchCaches, lb: &LoadBalancer, project: &str) -> Backends {
    let ns = lb.namespace().unwrap_or_default();
    // Only the VirtualMachines some port draws on, shared with the cache, not copied,
    // and never one whose server is in another project (one recorded before projects
    // were, has not recorded one yet, and is taken as this one's).
    let drawn = |vm: &VirtualMachine| {
        in_project(vm, project)
            && lb
                .spec
                .ports
                .iter()
                .any(|p| draws_from(&p.real_servers, vm))
    };
    let mut vms: Vec<Arc<VirtualMachine>> = Vec::new();
    for key in lb.keys() {
        vms.extend(with_key(&caches.virtual_machines, &ns, &key).await);
    }
    // A VirtualMachine named by one port may be in the group of another.
    vms.sort_by_key(|vm| vm.name_any());
    vms.dedup_by_key(|vm| vm.name_any());
    vms.retain(|vm| drawn(vm));
    let mut result = Backends::default();
    for port in &lb.spec.ports {
        let rs = &port.real_servers;
        for group in rs.group_names() {
            if !result.missing_groups.iter().any(|g| g == group)
                && !exists(&caches.groups, &ns, group).await
            {
                result.missing_groups.push(group.to_owned());
            }
        }
        result.ports.push(port_backends(rs, &vms));
        result.starting.push(starting(rs, &vms, Timestamp::now()));
    }
    result
}

/// Whether `vm`'s server is in `project`, as far as its status says.
pub fn in_project(vm: &VirtualMachine, project: &str) -> bool {
    vm.status
        .as_ref()
        .and_then(|s| s.project_id.as_deref())
        .is_none_or(|p| p == project)
}

/// The group's VirtualMachines created less than [`STARTING_HOLD`] ago that are still
/// provisioning: not serving, not failed, not leaving.
pub fn starting(rs: &RealServers, vms: &[Arc<VirtualMachine>], now: Timestamp) -> usize {
    if rs.group_names().is_empty() {
        return 0;
    }
    vms.iter()
        .filter(|vm| draws_from(rs, vm))
        .filter(|vm| {
            vm.metadata.deletion_timestamp.is_none()
                && !vm.annotations().contains_key(annotations::DRAINING)
                && serving_backend(vm).is_none()
        })
        .filter(|vm| {
            vm.metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| now.duration_since(t.0).unsigned_abs() < STARTING_HOLD)
        })
        .filter(|vm| {
            let reason = vm
                .status
                .as_ref()
                .and_then(|s| find_condition(&s.conditions, READY))
                .map(|c| c.reason.as_str());
            reason.is_none_or(|r| r == PROVISIONING)
        })
        .count()
}

/// Whether `vm` is one of the real servers `rs` names: a member of its group, or one
/// of its VirtualMachines (a port has exactly one source).
pub fn draws_from(rs: &RealServers, vm: &VirtualMachine) -> bool {
    if let Some(names) = &rs.virtual_machines {
        return names.iter().any(|n| *n == vm.name_any());
    }
    vm.labels()
        .get(labels::GROUP)
        .is_some_and(|group| rs.draws_on_group(group))
}

/// The backends of one port: its addresses, or the serving VirtualMachines it names.
pub fn port_backends(rs: &RealServers, vms: &[Arc<VirtualMachine>]) -> Vec<Backend> {
    if let Some(addresses) = &rs.addresses {
        return addresses
            .iter()
            .map(|a| Backend {
                name: a.clone(),
                address: a.clone(),
                weight: None,
            })
            .collect();
    }
    let mut backends: Vec<Backend> = vms
        .iter()
        .filter(|vm| draws_from(rs, vm))
        .filter_map(|vm| {
            let weight = vm
                .labels()
                .get(labels::GROUP)
                .and_then(|group| rs.weight_of(group));
            Some(Backend {
                weight,
                ..serving_backend(vm)?
            })
        })
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
    // A stopped server serves nothing, whatever its run strategy calls Ready.
    if !is_true(&status.conditions, READY) || status.state.as_deref() != Some("ACTIVE") {
        return None;
    }
    Some(Backend {
        name: vm.name_any(),
        address: status.primary_ip.clone()?,
        weight: None,
    })
}

/// Whether a group this LoadBalancer draws on heals on its members' health
/// (`autoHealing`): then every look reads its members' operating status from Octavia
/// (one status-tree call per look), as no `updated_at` moves when only a health
/// monitor's verdict does.
pub async fn health_watched(caches: &WatchCaches, lb: &LoadBalancer) -> bool {
    let refs: Vec<&str> = lb
        .spec
        .ports
        .iter()
        .flat_map(|p| p.real_servers.group_names())
        .collect();
    if refs.is_empty() {
        return false;
    }
    let ns = lb.namespace().unwrap_or_default();
    in_namespace(&caches.groups, &ns)
        .await
        .iter()
        .any(|g| refs.contains(&g.name_any().as_str()) && g.spec.auto_healing.is_some())
}

/// The load balancer this object keeps: the recorded one, else the first not being
/// deleted.
pub fn keeper<'a>(lb: &LoadBalancer, found: &'a [OsLoadBalancer]) -> Option<&'a OsLoadBalancer> {
    let recorded = lb
        .status
        .as_ref()
        .and_then(|s| s.load_balancer_id.as_deref());
    keeper::keeper(found, recorded, |l| l.id.as_str(), live, live)
}

/// Not on its way out: a load balancer in PENDING_DELETE is neither kept nor a
/// duplicate.
pub fn live(l: &OsLoadBalancer) -> bool {
    l.provisioning_status != ProvisioningStatus::PendingDelete
}

/// Reads the Octavia tree (and floating IPs when the object has or wants one).
pub async fn observe(
    octavia: &dyn LoadBalancing,
    neutron: &dyn Network,
    lb: &LoadBalancer,
    owner: &Owner,
) -> Result<OctaviaTree, ReconcileError> {
    let key = owner.key();
    let mut tree = OctaviaTree {
        load_balancers: octavia
            .load_balancers_of(&owner.uid)
            .await
            .map_err(ReconcileError::cloud("list load balancers", &key))?,
        ..OctaviaTree::default()
    };
    let wants_fip = lb.spec.vip_type == VipType::Public
        || lb.status.as_ref().is_some_and(|s| s.floating_ip.is_some());
    if wants_fip {
        tree.floating_ips = neutron
            .list_floating_ips(&FloatingIpFilter {
                description: Some(owner.tag()),
                ..FloatingIpFilter::default()
            })
            .await
            .map_err(ReconcileError::cloud("list floating IPs", &key))?;
    }
    let Some(kept) = keeper(lb, &tree.load_balancers) else {
        return Ok(tree);
    };
    if matches!(
        kept.provisioning_status,
        ProvisioningStatus::PendingCreate | ProvisioningStatus::PendingDelete
    ) {
        return Ok(tree);
    }
    let kept = kept.id.clone();
    read_children(octavia, &kept, &key, &mut tree).await?;
    Ok(tree)
}

/// The listeners, pools, health monitors and members under the kept load balancer.
async fn read_children(
    octavia: &dyn LoadBalancing,
    kept: &LoadBalancerId,
    key: &str,
    tree: &mut OctaviaTree,
) -> Result<(), ReconcileError> {
    let children = LbFilter {
        loadbalancer_id: Some(kept.clone()),
        ..LbFilter::default()
    };
    tree.listeners = octavia
        .list_listeners(&children)
        .await
        .map_err(ReconcileError::cloud("list listeners", key))?;
    tree.pools = octavia
        .list_pools(&children)
        .await
        .map_err(ReconcileError::cloud("list pools", key))?;
    for pool in &tree.pools {
        if let Some(id) = &pool.healthmonitor_id {
            match octavia.get_health_monitor(id).await {
                Ok(m) => tree.monitors.push(m),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(ReconcileError::cloud("read a health monitor", key)(e)),
            }
        }
        let members = octavia
            .list_members(&pool.id)
            .await
            .map_err(ReconcileError::cloud("list pool members", key))?;
        tree.members.insert(pool.id.to_string(), members);
    }
    Ok(())
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
    let key = object_key(lb);
    let subnet = neutron
        .find_subnet(vip_subnet_name(config, lb)?)
        .await
        .map_err(ReconcileError::cloud("find the VIP subnet", &key))?;
    let flavor = match flavor_name(config, lb)? {
        None => None,
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

/// The VIP subnet's name: the spec's, else the operator configuration's rule for the
/// region, zone and VIP type.
pub fn vip_subnet_name<'a>(
    config: &'a Config,
    lb: &'a LoadBalancer,
) -> Result<&'a str, ReconcileError> {
    let spec = &lb.spec;
    if let Some(name) = &spec.vip_subnet {
        return Ok(name);
    }
    let vip_type = match spec.vip_type {
        VipType::Private => "private",
        VipType::Public => "public",
    };
    let region = spec.region.as_deref().unwrap_or_default();
    let zone = spec.zone.as_deref().unwrap_or_default();
    config
        .load_balancer
        .vip_subnet(region, zone, vip_type)
        .ok_or_else(|| ReconcileError::Invalid {
            object: object_key(lb),
            problem: Problem::VipSubnetNotConfigured,
            message: format!(
                "no loadBalancer.vipSubnets rule of the operator configuration matches region {region:?}, \
                 zone {zone:?}, vipType {vip_type}; add one or set spec.vipSubnet"
            ),
        })
}

/// The Octavia flavor the spec's `serviceType` maps to (`None`: Octavia's default).
pub fn flavor_name<'a>(
    config: &'a Config,
    lb: &LoadBalancer,
) -> Result<Option<&'a str>, ReconcileError> {
    let flavors = &config.load_balancer.flavors;
    match flavors.get(&lb.spec.service_type) {
        Some(name) if name.is_empty() => Ok(None),
        Some(name) => Ok(Some(name)),
        None => Err(ReconcileError::Invalid {
            object: object_key(lb),
            problem: Problem::ServiceTypeUnknown,
            message: format!(
                "serviceType {:?} is not configured; known: {}",
                lb.spec.service_type,
                flavors
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
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
