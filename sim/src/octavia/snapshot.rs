//! Public snapshots of the Octavia state (see `sim::snapshot`).

use crate::world::World;
use crate::world::octavia::{Listener, LoadBalancer, Pool};
use crate::world::octavia_lifecycle::Operating;

#[derive(Debug, Clone, PartialEq)]
pub struct SimMember {
    pub id: String,
    pub name: String,
    pub address: String,
    pub protocol_port: u64,
    pub monitor_port: Option<u64>,
    pub weight: u64,
    pub provisioning_status: String,
    pub operating_status: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimHealthMonitor {
    pub id: String,
    pub kind: String,
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
    pub delay: u64,
    pub timeout: u64,
    pub max_retries: u64,
    pub provisioning_status: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimPool {
    pub id: String,
    pub name: String,
    pub protocol: String,
    pub lb_algorithm: String,
    pub listener_id: Option<String>,
    pub provisioning_status: String,
    pub members: Vec<SimMember>,
    pub health_monitor: Option<SimHealthMonitor>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimListener {
    pub id: String,
    pub name: String,
    pub protocol: String,
    pub protocol_port: u64,
    pub default_pool_id: Option<String>,
    pub provisioning_status: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimLoadBalancer {
    pub id: String,
    pub name: String,
    pub description: String,
    pub provisioning_status: String,
    pub operating_status: String,
    pub vip_address: String,
    pub vip_port_id: String,
    pub vip_subnet_id: String,
    pub flavor_id: Option<String>,
    pub availability_zone: Option<String>,
    pub tags: Vec<String>,
    pub listeners: Vec<SimListener>,
    pub pools: Vec<SimPool>,
}

pub(crate) fn snapshot(w: &World) -> Vec<SimLoadBalancer> {
    let mut lbs: Vec<&LoadBalancer> = w.octavia.lbs.values().collect();
    lbs.sort_by_key(|l| l.meta.seq);
    let op = Operating::of(w);
    lbs.into_iter().map(|lb| load_balancer(&op, lb)).collect()
}

fn load_balancer(op: &Operating, lb: &LoadBalancer) -> SimLoadBalancer {
    let o = &op.w.octavia;
    let mut listeners: Vec<&Listener> = o
        .listeners
        .values()
        .filter(|l| l.lb_id == lb.meta.id)
        .collect();
    listeners.sort_by_key(|l| l.meta.seq);
    let mut pools: Vec<&Pool> = o.pools.values().filter(|p| p.lb_id == lb.meta.id).collect();
    pools.sort_by_key(|p| p.meta.seq);
    SimLoadBalancer {
        id: lb.meta.id.clone(),
        name: lb.meta.name.clone(),
        description: lb.meta.description.clone(),
        provisioning_status: lb.meta.prov.as_str().into(),
        operating_status: op.lb(&lb.meta.id).into(),
        vip_address: lb.vip_address.clone(),
        vip_port_id: lb.vip_port_id.clone(),
        vip_subnet_id: lb.vip_subnet_id.clone(),
        flavor_id: lb.flavor_id.clone(),
        availability_zone: lb.availability_zone.clone(),
        tags: lb.meta.tags.clone(),
        listeners: listeners
            .into_iter()
            .map(|l| SimListener {
                id: l.meta.id.clone(),
                name: l.meta.name.clone(),
                protocol: l.protocol.clone(),
                protocol_port: l.protocol_port,
                default_pool_id: l.default_pool_id.clone(),
                provisioning_status: l.meta.prov.as_str().into(),
            })
            .collect(),
        pools: pools.into_iter().map(|p| pool(op, p)).collect(),
    }
}

fn pool(op: &Operating, p: &Pool) -> SimPool {
    let w = op.w;
    SimPool {
        id: p.meta.id.clone(),
        name: p.meta.name.clone(),
        protocol: p.protocol.clone(),
        lb_algorithm: p.lb_algorithm.clone(),
        listener_id: p.listener_id.clone(),
        provisioning_status: p.meta.prov.as_str().into(),
        members: p
            .members
            .iter()
            .map(|m| SimMember {
                id: m.meta.id.clone(),
                name: m.meta.name.clone(),
                address: m.address.clone(),
                protocol_port: m.protocol_port,
                monitor_port: m.monitor_port,
                weight: m.weight,
                provisioning_status: m.meta.prov.as_str().into(),
                operating_status: op.member(p, m).into(),
            })
            .collect(),
        health_monitor: p
            .monitor_id
            .as_ref()
            .and_then(|id| w.octavia.monitors.get(id))
            .map(|m| SimHealthMonitor {
                id: m.meta.id.clone(),
                kind: m.kind.clone(),
                url_path: m.url_path.clone(),
                expected_codes: m.expected_codes.clone(),
                delay: m.delay,
                timeout: m.timeout,
                max_retries: m.max_retries,
                provisioning_status: m.meta.prov.as_str().into(),
            }),
    }
}
