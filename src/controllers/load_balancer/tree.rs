//! The Octavia tree of one LoadBalancer, read whole from Octavia by its owner tag (and
//! its floating IPs from Neutron), and the load balancer of it the object keeps. Where a
//! look takes the tree from (the cloud view, the status tree, or this read) is
//! `observe`'s to decide.

use verda_api::v1alpha1::{LoadBalancer, VipType};

use crate::caches::cloud_view::OctaviaTree;
use crate::cloud::ids::LoadBalancerId;
use crate::cloud::model::loadbalancing::{
    LbFilter, LoadBalancer as OsLoadBalancer, ProvisioningStatus,
};
use crate::cloud::model::network::FloatingIpFilter;
use crate::cloud::owner::Owner;
use crate::cloud::{LoadBalancing, Network};
use crate::runtime::ReconcileError;
use crate::runtime::keeper;

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
pub async fn read(
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
