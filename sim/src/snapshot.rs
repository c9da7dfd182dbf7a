//! Public, read-only snapshots of the simulator's state for tests and benchmarks
//! (what exists in the "cloud" right now), independent of the HTTP views.

use std::collections::BTreeMap;

pub use super::octavia::snapshot::{
    SimHealthMonitor, SimListener, SimLoadBalancer, SimMember, SimPool,
};
use super::world::World;

#[derive(Debug, Clone, PartialEq)]
pub struct SimServer {
    pub id: String,
    pub name: String,
    /// Nova status: BUILD, ACTIVE, ERROR, RESIZE, VERIFY_RESIZE.
    pub status: String,
    pub deleting: bool,
    pub flavor_id: String,
    pub flavor_name: String,
    pub image_id: String,
    /// Fixed IPv4 addresses (empty while building or after NoValidHost).
    pub addresses: Vec<String>,
    pub host: Option<String>,
    pub server_group: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub tags: Vec<String>,
    pub description: Option<String>,
    pub key_name: Option<String>,
    pub user_data: Option<String>,
    /// The names of its ports' security groups (none before its NICs are made).
    pub security_groups: Vec<String>,
    /// The zone asked for, else its host's.
    pub availability_zone: Option<String>,
    pub fault: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimServerGroup {
    pub id: String,
    pub name: String,
    pub policy: String,
    pub max_server_per_host: Option<u64>,
    pub members: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimFloatingIp {
    pub id: String,
    pub address: String,
    pub network_id: String,
    pub port_id: Option<String>,
    pub fixed_ip: Option<String>,
}

pub(crate) fn servers(w: &World) -> Vec<SimServer> {
    let mut list: Vec<_> = w.servers.values().collect();
    list.sort_by_key(|s| s.seq);
    list.into_iter()
        .map(|s| SimServer {
            id: s.id.clone(),
            name: s.name.clone(),
            status: s.status.as_str().to_string(),
            deleting: s.deleting,
            flavor_id: s.flavor_id.clone(),
            flavor_name: w
                .flavors
                .iter()
                .find(|f| f.id == s.flavor_id)
                .map(|f| f.name.clone())
                .unwrap_or_default(),
            image_id: s.image_id.clone(),
            addresses: match s.status {
                super::model::Status::Build => vec![],
                _ => s
                    .nics
                    .iter()
                    .filter_map(|n| w.ports.get(&n.port_id))
                    .flat_map(|p| p.fixed_ips.iter().map(|f| f.ip.to_string()))
                    .collect(),
            },
            host: s.host.clone(),
            server_group: s.group.clone(),
            metadata: s.metadata.clone(),
            tags: s.tags.iter().cloned().collect(),
            description: s.description.clone(),
            key_name: s.key_name.clone(),
            user_data: s.user_data.clone(),
            security_groups: w.server_security_groups(&s.nics),
            availability_zone: s
                .availability_zone
                .clone()
                .or_else(|| s.host.as_deref().and_then(|h| w.zone_of_host(h))),
            fault: s.fault.as_ref().map(|f| f.message.clone()),
        })
        .collect()
}

pub(crate) fn server_groups(w: &World) -> Vec<SimServerGroup> {
    let mut list: Vec<_> = w.groups.values().collect();
    list.sort_by_key(|g| g.seq);
    list.into_iter()
        .map(|g| SimServerGroup {
            id: g.id.clone(),
            name: g.name.clone(),
            policy: g.policy.clone(),
            max_server_per_host: g.max_server_per_host,
            members: g.members.clone(),
        })
        .collect()
}

pub(crate) fn floating_ips(w: &World) -> Vec<SimFloatingIp> {
    let mut list: Vec<_> = w.fips.values().collect();
    list.sort_by_key(|f| f.seq);
    list.into_iter()
        .map(|f| SimFloatingIp {
            id: f.id.clone(),
            address: f.address.to_string(),
            network_id: f.network_id.clone(),
            port_id: f.port_id.clone(),
            fixed_ip: f.fixed_ip.map(|a| a.to_string()),
        })
        .collect()
}

/// A Neutron port as the simulated cloud holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPort {
    pub id: String,
    pub name: String,
    pub description: String,
    pub network_id: String,
    /// Fixed IPv4 addresses.
    pub fixed_ips: Vec<String>,
    /// The addresses (or CIDRs) of its allowed address pairs.
    pub allowed_address_pairs: Vec<String>,
    /// Security group IDs.
    pub security_groups: Vec<String>,
    /// The server (or load balancer) it is bound to; empty when free.
    pub device_id: String,
    pub device_owner: String,
}

pub(crate) fn ports(w: &World) -> Vec<SimPort> {
    let mut list: Vec<_> = w.ports.values().collect();
    list.sort_by_key(|p| p.seq);
    list.into_iter()
        .map(|p| SimPort {
            id: p.id.clone(),
            name: p.name.clone(),
            description: p.description.clone(),
            network_id: p.network_id.clone(),
            fixed_ips: p.fixed_ips.iter().map(|f| f.ip.to_string()).collect(),
            allowed_address_pairs: p
                .allowed_address_pairs
                .iter()
                .map(|a| a.ip_address.clone())
                .collect(),
            security_groups: p.security_groups.clone(),
            device_id: p.device_id.clone(),
            device_owner: p.device_owner.clone(),
        })
        .collect()
}

pub(crate) fn load_balancers(w: &World) -> Vec<SimLoadBalancer> {
    super::octavia::snapshot::snapshot(w)
}

/// A Cinder volume as the simulated cloud holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimVolume {
    pub id: String,
    pub name: String,
    /// GiB.
    pub size: i64,
    pub volume_type: String,
    /// Cinder status: creating, available, in-use, extending, deleting, error.
    pub status: String,
    pub metadata: BTreeMap<String, String>,
    /// The server it is attached to, and the device.
    pub attached_to: Option<(String, String)>,
    pub bootable: bool,
}

pub(crate) fn volumes(w: &World) -> Vec<SimVolume> {
    let mut list: Vec<_> = w.cinder.volumes.values().collect();
    list.sort_by_key(|v| v.seq);
    list.into_iter()
        .map(|v| SimVolume {
            id: v.id.clone(),
            name: v.name.clone(),
            size: v.size,
            volume_type: v.volume_type.clone(),
            status: v.status.as_str().to_string(),
            metadata: v.metadata.clone(),
            attached_to: v
                .attachment
                .as_ref()
                .map(|a| (a.server_id.clone(), a.device.clone())),
            bootable: v.bootable,
        })
        .collect()
}

/// A Neutron security group as the simulated cloud holds it, with its rules.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSecurityGroup {
    pub id: String,
    pub name: String,
    pub description: String,
    pub stateful: bool,
    /// Sorted.
    pub tags: Vec<String>,
    /// In creation order (the two egress rules Neutron made first).
    pub rules: Vec<SimSecurityGroupRule>,
}

/// One rule of a security group.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSecurityGroupRule {
    pub id: String,
    pub security_group_id: String,
    /// `ingress` or `egress`.
    pub direction: String,
    /// `IPv4` or `IPv6`.
    pub ethertype: String,
    /// As stored (`tcp`, `"17"`); `None` is any protocol.
    pub protocol: Option<String>,
    pub port_range_min: Option<u32>,
    pub port_range_max: Option<u32>,
    pub remote_ip_prefix: Option<String>,
    pub remote_group_id: Option<String>,
    pub remote_address_group_id: Option<String>,
    /// `None` on the rules Neutron made itself.
    pub description: Option<String>,
}

/// A Neutron address group.
#[derive(Debug, Clone, PartialEq)]
pub struct SimAddressGroup {
    pub id: String,
    pub name: String,
    pub description: String,
    /// Canonical CIDRs, sorted as strings.
    pub addresses: Vec<String>,
}

fn security_group_rule(r: &crate::model::SecurityGroupRule) -> SimSecurityGroupRule {
    SimSecurityGroupRule {
        id: r.id.clone(),
        security_group_id: r.security_group_id.clone(),
        direction: r.direction.clone(),
        ethertype: r.ethertype.clone(),
        protocol: r.protocol.clone(),
        port_range_min: r.port_range_min,
        port_range_max: r.port_range_max,
        remote_ip_prefix: r.remote_ip_prefix.clone(),
        remote_group_id: r.remote_group_id.clone(),
        remote_address_group_id: r.remote_address_group_id.clone(),
        description: r.description.clone(),
    }
}

pub(crate) fn security_groups(w: &World) -> Vec<SimSecurityGroup> {
    let group = |g: &crate::model::SecurityGroup| {
        let mut tags = g.tags.clone();
        tags.sort();
        SimSecurityGroup {
            id: g.id.clone(),
            name: g.name.clone(),
            description: g.description.clone(),
            stateful: g.stateful,
            tags,
            rules: g.rules.iter().map(security_group_rule).collect(),
        }
    };
    w.security_groups.iter().map(group).collect()
}

pub(crate) fn security_group_rules(w: &World) -> Vec<SimSecurityGroupRule> {
    w.security_group_rules().map(security_group_rule).collect()
}

pub(crate) fn address_groups(w: &World) -> Vec<SimAddressGroup> {
    let group = |a: &crate::model::AddressGroup| SimAddressGroup {
        id: a.id.clone(),
        name: a.name.clone(),
        description: a.description.clone(),
        addresses: a.addresses.clone(),
    };
    w.address_groups.iter().map(group).collect()
}
