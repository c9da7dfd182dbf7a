//! Records of the simulated Octavia objects (plain data) and their provisioning states.
//! Transitions are in `octavia_lifecycle.rs`, JSON views in `octavia/views.rs`.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, Utc};

/// Octavia `provisioning_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prov {
    Active,
    PendingCreate,
    PendingUpdate,
    PendingDelete,
    /// Octavia gave up on the object (a failed amphora, …); only delete helps.
    Error,
}

impl Prov {
    pub fn as_str(self) -> &'static str {
        match self {
            Prov::Active => "ACTIVE",
            Prov::PendingCreate => "PENDING_CREATE",
            Prov::PendingUpdate => "PENDING_UPDATE",
            Prov::PendingDelete => "PENDING_DELETE",
            Prov::Error => "ERROR",
        }
    }

    pub fn pending(self) -> bool {
        matches!(
            self,
            Prov::PendingCreate | Prov::PendingUpdate | Prov::PendingDelete
        )
    }
}

/// Fields every Octavia object has.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub id: String,
    pub seq: u64,
    pub name: String,
    pub description: String,
    pub prov: Prov,
    pub admin_state_up: bool,
    pub tags: Vec<String>,
    pub created: DateTime<Utc>,
    pub updated: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub(crate) struct LoadBalancer {
    pub meta: Meta,
    /// When the pending writes on this load balancer's tree complete.
    pub settle_at: Option<Instant>,
    pub vip_address: String,
    pub vip_port_id: String,
    pub vip_subnet_id: String,
    pub vip_network_id: String,
    pub flavor_id: Option<String>,
    pub availability_zone: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Listener {
    pub meta: Meta,
    pub lb_id: String,
    pub protocol: String,
    pub protocol_port: u64,
    pub connection_limit: i64,
    pub default_pool_id: Option<String>,
    pub options: ListenerOptions,
    /// What its amphorae count: open connections, and connections since they started.
    pub active_connections: u64,
    pub total_connections: u64,
}

/// A listener's timeouts (ms), allowed sources and inserted headers.
#[derive(Debug, Clone)]
pub(crate) struct ListenerOptions {
    pub timeout_client_data: u64,
    pub timeout_member_connect: u64,
    pub timeout_member_data: u64,
    pub timeout_tcp_inspect: u64,
    pub allowed_cidrs: Vec<String>,
    pub insert_headers: serde_json::Map<String, serde_json::Value>,
    /// A terminated-https listener's certificates: Barbican secret URLs.
    pub default_tls_container_ref: Option<String>,
    pub sni_container_refs: Vec<String>,
}

impl Default for ListenerOptions {
    /// Octavia's defaults (`[haproxy_amphora]` of octavia.conf).
    fn default() -> Self {
        Self {
            timeout_client_data: 50_000,
            timeout_member_connect: 5_000,
            timeout_member_data: 50_000,
            timeout_tcp_inspect: 0,
            allowed_cidrs: Vec::new(),
            insert_headers: serde_json::Map::new(),
            default_tls_container_ref: None,
            sni_container_refs: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub meta: Meta,
    pub address: String,
    pub protocol_port: u64,
    pub monitor_port: Option<u64>,
    pub monitor_address: Option<String>,
    pub weight: u64,
    pub backup: bool,
    pub subnet_id: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Pool {
    pub meta: Meta,
    pub lb_id: String,
    pub listener_id: Option<String>,
    pub protocol: String,
    pub lb_algorithm: String,
    /// `{type, cookie_name}` as sent, or none.
    pub session_persistence: Option<serde_json::Value>,
    pub members: Vec<Member>,
    pub monitor_id: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Monitor {
    pub meta: Meta,
    pub pool_id: String,
    pub kind: String,
    pub delay: u64,
    pub timeout: u64,
    pub max_retries: u64,
    pub max_retries_down: u64,
    pub http_method: Option<String>,
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct LbFlavor {
    pub id: String,
    pub name: String,
    pub description: String,
}

/// All Octavia state.
#[derive(Debug, Default)]
pub(crate) struct Octavia {
    pub lbs: BTreeMap<String, LoadBalancer>,
    pub listeners: BTreeMap<String, Listener>,
    pub pools: BTreeMap<String, Pool>,
    pub monitors: BTreeMap<String, Monitor>,
    pub flavors: Vec<LbFlavor>,
}
