//! Octavia request and response types. Requests serialize straight to Octavia's field
//! names (absent options are omitted, so Octavia's defaults apply); responses keep the
//! fields the operator reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::cloud::ids::{
    HealthMonitorId, LbFlavorId, ListenerId, LoadBalancerId, MemberId, NetworkId, PoolId, PortId,
    SubnetId,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProvisioningStatus {
    Active,
    Deleted,
    Error,
    PendingCreate,
    PendingUpdate,
    PendingDelete,
    #[serde(other)]
    Unknown,
}

impl ProvisioningStatus {
    /// While pending, Octavia answers writes with 409: wait, do not fail.
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            Self::PendingCreate | Self::PendingUpdate | Self::PendingDelete
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OperatingStatus {
    Online,
    Draining,
    Offline,
    Degraded,
    Error,
    NoMonitor,
    #[serde(other)]
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Protocol {
    Http,
    Https,
    Tcp,
    Udp,
    TerminatedHttps,
    Proxy,
    ProxyV2,
    Sctp,
    #[serde(other)]
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LbAlgorithm {
    RoundRobin,
    LeastConnections,
    SourceIp,
    SourceIpPort,
    #[serde(other)]
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MonitorType {
    Http,
    Https,
    Ping,
    Tcp,
    /// Octavia spells the two-word types with a hyphen.
    #[serde(rename = "TLS-HELLO")]
    TlsHello,
    #[serde(rename = "UDP-CONNECT")]
    UdpConnect,
    Sctp,
    #[serde(other)]
    Unknown,
}

/// `{"id": ...}` references inside Octavia objects.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Ref<T> {
    pub id: T,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LoadBalancer {
    pub id: LoadBalancerId,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub vip_address: Option<String>,
    #[serde(default)]
    pub vip_port_id: Option<PortId>,
    #[serde(default)]
    pub vip_subnet_id: Option<SubnetId>,
    #[serde(default)]
    pub vip_network_id: Option<NetworkId>,
    #[serde(default)]
    pub flavor_id: Option<LbFlavorId>,
    #[serde(default)]
    pub availability_zone: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub listeners: Vec<Ref<ListenerId>>,
    #[serde(default)]
    pub pools: Vec<Ref<PoolId>>,
    /// Moves with every change of the load balancer or anything under it (each child
    /// write passes through `PENDING_UPDATE`); `null` until the first.
    #[serde(default)]
    pub updated_at: Option<String>,
}

/// `POST /v2/lbaas/loadbalancers`: one of `vip_subnet_id` / `vip_network_id` is required.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CreateLoadBalancer {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_subnet_id: Option<SubnetId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vip_network_id: Option<NetworkId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor_id: Option<LbFlavorId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The fully populated create: listeners with their default pools, members and
    /// monitors, made in the same provisioning cycle as the load balancer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub listeners: Vec<ListenerTree>,
}

/// One listener of a fully populated create. Built from the single-object requests; the
/// references to parents (load balancer, listener, pool) are left out on the wire,
/// where nesting says them.
#[derive(Clone, Debug, PartialEq)]
pub struct ListenerTree {
    pub listener: CreateListener,
    pub pool: CreatePool,
    pub members: Vec<MemberSpec>,
    pub monitor: Option<CreateHealthMonitor>,
}

impl Serialize for ListenerTree {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut pool: serde_json::Value =
            json_without(&self.pool, &["listener_id", "loadbalancer_id"])?;
        pool["members"] = json_without(&self.members, &[])?;
        if let Some(monitor) = &self.monitor {
            pool["healthmonitor"] = json_without(monitor, &["pool_id"])?;
        }
        let mut listener: serde_json::Value =
            json_without(&self.listener, &["loadbalancer_id", "default_pool_id"])?;
        listener["default_pool"] = pool;
        listener.serialize(serializer)
    }
}

/// `value` as JSON, without the top-level keys `drop`.
fn json_without<T: Serialize, E: serde::ser::Error>(
    value: &T,
    drop: &[&str],
) -> Result<serde_json::Value, E> {
    let mut v = serde_json::to_value(value).map_err(E::custom)?;
    if let Some(map) = v.as_object_mut() {
        for key in drop {
            map.remove(*key);
        }
    }
    Ok(v)
}

/// Filters of the Octavia list calls (`tags` is match-all, `name` exact).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LbFilter {
    pub name: Option<String>,
    pub tags: Vec<String>,
    pub loadbalancer_id: Option<LoadBalancerId>,
}

/// What Octavia counted on a listener (`GET /listeners/{id}/stats`), summed over its
/// amphorae since they started: `total_connections` only grows, until a failover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ListenerStats {
    #[serde(default)]
    pub active_connections: u64,
    #[serde(default)]
    pub total_connections: u64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Listener {
    pub id: ListenerId,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub protocol: Protocol,
    pub protocol_port: u16,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub default_pool_id: Option<PoolId>,
    #[serde(default)]
    pub loadbalancers: Vec<Ref<LoadBalancerId>>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(flatten)]
    pub options: ListenerOptions,
}

/// The listener settings a LoadBalancer port declares: in a create, an update, and
/// as Octavia shows them (`null` where it shows none).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_client_data: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_member_connect: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_member_data: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_tcp_inspect: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cidrs: Option<Vec<String>>,
    /// Header name → `"true"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_headers: Option<BTreeMap<String, String>>,
    /// A terminated-https listener's certificate: a Barbican secret's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_tls_container_ref: Option<String>,
    /// Its further certificates, chosen by SNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni_container_refs: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CreateListener {
    pub loadbalancer_id: LoadBalancerId,
    pub protocol: Protocol,
    pub protocol_port: u16,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_pool_id: Option<PoolId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(flatten)]
    pub options: ListenerOptions,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UpdateListener {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_pool_id: Option<PoolId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(flatten)]
    pub options: ListenerOptions,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Pool {
    pub id: PoolId,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub protocol: Protocol,
    pub lb_algorithm: LbAlgorithm,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub healthmonitor_id: Option<HealthMonitorId>,
    #[serde(default)]
    pub listeners: Vec<Ref<ListenerId>>,
    #[serde(default)]
    pub loadbalancers: Vec<Ref<LoadBalancerId>>,
    #[serde(default)]
    pub members: Vec<Ref<MemberId>>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub session_persistence: Option<SessionPersistence>,
}

/// A pool's session persistence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPersistence {
    #[serde(rename = "type")]
    pub kind: PersistenceType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie_name: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PersistenceType {
    SourceIp,
    HttpCookie,
    AppCookie,
    #[serde(other)]
    Unknown,
}

/// `POST /v2/lbaas/pools`: attach to a listener (its default pool) or a load balancer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CreatePool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listener_id: Option<ListenerId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadbalancer_id: Option<LoadBalancerId>,
    pub protocol: Protocol,
    pub lb_algorithm: LbAlgorithm,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<SessionPersistence>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UpdatePool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lb_algorithm: Option<LbAlgorithm>,
    /// `Some(None)` sends `null`: no session persistence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<Option<SessionPersistence>>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct HealthMonitor {
    pub id: HealthMonitorId,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    #[serde(default)]
    pub max_retries_down: Option<u32>,
    #[serde(default)]
    pub url_path: Option<String>,
    #[serde(default)]
    pub expected_codes: Option<String>,
    #[serde(default)]
    pub http_method: Option<String>,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub pools: Vec<Ref<PoolId>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CreateHealthMonitor {
    pub pool_id: PoolId,
    #[serde(rename = "type")]
    pub kind: MonitorType,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries_down: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_codes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UpdateHealthMonitor {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries_down: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_codes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Member {
    pub id: MemberId,
    #[serde(default)]
    pub name: String,
    pub address: String,
    pub protocol_port: u16,
    #[serde(default)]
    pub monitor_port: Option<u16>,
    #[serde(default)]
    pub weight: Option<u32>,
    #[serde(default)]
    pub subnet_id: Option<SubnetId>,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// One entry of the desired member set (`PUT /v2/lbaas/pools/{id}/members`); Octavia
/// matches existing members by `(address, protocol_port)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemberSpec {
    pub address: String,
    pub protocol_port: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitor_port: Option<u16>,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<SubnetId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LbFlavor {
    pub id: LbFlavorId,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
}

fn enabled() -> bool {
    true
}

/// `GET /v2/lbaas/loadbalancers/{id}/status`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct StatusTree {
    pub id: LoadBalancerId,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub listeners: Vec<ListenerStatus>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ListenerStatus {
    pub id: ListenerId,
    #[serde(default)]
    pub name: String,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub pools: Vec<PoolStatus>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PoolStatus {
    pub id: PoolId,
    #[serde(default)]
    pub name: String,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
    #[serde(default)]
    pub health_monitor: Option<MonitorStatus>,
    #[serde(default)]
    pub members: Vec<MemberStatus>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MonitorStatus {
    pub id: HealthMonitorId,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MemberStatus {
    pub id: MemberId,
    #[serde(default)]
    pub name: String,
    pub address: String,
    pub protocol_port: u16,
    pub provisioning_status: ProvisioningStatus,
    pub operating_status: OperatingStatus,
}

#[cfg(test)]
mod tests {
    use super::MonitorType;

    #[test]
    fn monitor_types_use_octavias_spelling() {
        let wire = |t: MonitorType| serde_json::to_value(t).expect("serializes");
        assert_eq!(wire(MonitorType::TlsHello), "TLS-HELLO");
        assert_eq!(wire(MonitorType::UdpConnect), "UDP-CONNECT");
        assert_eq!(wire(MonitorType::Http), "HTTP");
        let read: MonitorType = serde_json::from_value("TLS-HELLO".into()).expect("reads");
        assert_eq!(read, MonitorType::TlsHello);
    }
}
