//! Records of the simulated compute, image and network resources (plain data).
//! Octavia's, Cinder's and Barbican's records live in `world/` (`world/octavia.rs`,
//! `world/cinder.rs`, `world/barbican.rs`), with a world's Neutron bookkeeping
//! (`world/neutron.rs`); JSON views are built by the services.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::Value;

#[derive(Debug, Clone)]
pub(crate) struct Flavor {
    pub id: String,
    pub name: String,
    pub ram: u64,
    pub disk: u64,
    pub vcpus: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Image {
    pub id: String,
    pub name: String,
    pub size: u64,
    /// GiB a disk (or boot volume) made from it needs at least.
    pub min_disk: u64,
    pub created: DateTime<Utc>,
}

/// Nova `status` of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Build,
    Active,
    Error,
    Resize,
    VerifyResize,
    /// Stopped (`os-stop`): vm_state `stopped`, power state 4.
    Shutoff,
    /// Between `os-stop` and SHUTOFF: still ACTIVE, task_state `powering-off`.
    PoweringOff,
    /// Between `os-start` and ACTIVE: still SHUTOFF, task_state `powering-on`.
    PoweringOn,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Build => "BUILD",
            Status::Active => "ACTIVE",
            Status::Error => "ERROR",
            Status::Resize => "RESIZE",
            Status::VerifyResize => "VERIFY_RESIZE",
            Status::Shutoff | Status::PoweringOn => "SHUTOFF",
            Status::PoweringOff => "ACTIVE",
        }
    }
}

/// One interface of a server: a Neutron port (its addresses and MAC are the port's).
#[derive(Debug, Clone)]
pub(crate) struct Nic {
    pub network_name: String,
    pub port_id: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Fault {
    pub code: u16,
    pub message: String,
    pub created: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub(crate) struct Server {
    pub id: String,
    pub seq: u64,
    pub name: String,
    pub status: Status,
    /// When the current transition (build, resize, delete) completes.
    pub until: Option<Instant>,
    pub deleting: bool,
    /// Decided at create time: the build ends in ERROR with this fault.
    pub doomed: Option<String>,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub launched: Option<DateTime<Utc>>,
    pub flavor_id: String,
    pub resize_to: Option<String>,
    pub image_id: String,
    /// Booted from a volume made from `image_id` (Nova then shows no image).
    pub boot_from_volume: bool,
    pub nics: Vec<Nic>,
    pub host: Option<String>,
    pub group: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub tags: BTreeSet<String>,
    pub description: Option<String>,
    pub key_name: Option<String>,
    pub user_data: Option<String>,
    pub security_groups: Vec<String>,
    pub availability_zone: Option<String>,
    pub fault: Option<Fault>,
    pub scheduler_hints: Value,
}

#[derive(Debug, Clone)]
pub(crate) struct ServerGroup {
    pub id: String,
    pub seq: u64,
    pub name: String,
    pub policy: String,
    pub max_server_per_host: Option<u64>,
    pub members: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Network {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The owner: the admin's for seeded networks, the creator's otherwise. Policy
    /// lets only the owner choose addresses on it.
    pub project_id: String,
    pub external: bool,
    pub shared: bool,
    pub subnets: Vec<String>,
    pub revision: u64,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub(crate) struct Subnet {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub network_id: String,
    pub cidr: String,
    pub gateway: Ipv4Addr,
    pub pool_start: Ipv4Addr,
    pub pool_end: Ipv4Addr,
    pub dhcp: bool,
    pub created: DateTime<Utc>,
}

/// One address of a port on one of its network's subnets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FixedIp {
    pub subnet_id: String,
    pub ip: Ipv4Addr,
}

/// An allowed address pair: an address (or CIDR, IPv4 or IPv6) the port may also send
/// from, with a MAC (the port's own when none was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AddressPair {
    pub ip_address: String,
    pub mac_address: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Port {
    pub id: String,
    pub seq: u64,
    pub name: String,
    pub description: String,
    pub network_id: String,
    pub fixed_ips: Vec<FixedIp>,
    pub mac: String,
    pub device_id: String,
    pub device_owner: String,
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Security group IDs.
    pub security_groups: Vec<String>,
    /// Made by Nova for a `{"uuid": network}` NIC: deleted with the server. A port the
    /// user made and passed as `{"port": id}` outlives it, unbound.
    pub by_nova: bool,
    pub revision: u64,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
}

impl Port {
    /// The first fixed IPv4 address (what Octavia and floating IPs use).
    pub fn ip(&self) -> Option<Ipv4Addr> {
        self.fixed_ips.first().map(|f| f.ip)
    }

    /// A new revision: `updated_at` moves, `revision_number` goes up.
    pub fn touch(&mut self) {
        self.revision += 1;
        self.updated = Utc::now();
    }
}

/// A Neutron security group and its rules (`world/security_groups.rs`).
#[derive(Debug, Clone)]
pub(crate) struct SecurityGroup {
    pub id: String,
    pub name: String,
    pub description: String,
    pub stateful: bool,
    /// As the last `PUT …/tags` gave them; views sort them.
    pub tags: Vec<String>,
    /// In creation order.
    pub rules: Vec<SecurityGroupRule>,
    /// Moves with every change of the group, its tags or its rules.
    pub revision: u64,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
}

/// One rule of a security group, as Neutron stores it (its converters applied: the
/// protocol lower-cased, a bare prefix made `/32`, ports 1-65535 of TCP dropped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SecurityGroupRule {
    pub id: String,
    /// `standard_attr_id`.
    pub seq: u64,
    pub security_group_id: String,
    /// `ingress` or `egress`.
    pub direction: String,
    /// `IPv4` or `IPv6`.
    pub ethertype: String,
    /// A name (`tcp`) or a number (`"6"`), as given; `None` is any protocol.
    pub protocol: Option<String>,
    pub port_range_min: Option<u32>,
    pub port_range_max: Option<u32>,
    /// As given (host bits kept); `normalized_cidr` clears them.
    pub remote_ip_prefix: Option<String>,
    pub normalized_cidr: Option<String>,
    pub remote_group_id: Option<String>,
    pub remote_address_group_id: Option<String>,
    /// `None` on the rules Neutron makes itself, `""` on a created rule without one.
    pub description: Option<String>,
    pub belongs_to_default_sg: bool,
    pub created: DateTime<Utc>,
}

/// A Neutron address group: CIDRs a rule names as its remote.
#[derive(Debug, Clone)]
pub(crate) struct AddressGroup {
    pub id: String,
    /// `standard_attr_id`.
    pub seq: u64,
    pub name: String,
    pub description: String,
    /// Canonical CIDRs (host bits cleared), each once, sorted as strings.
    pub addresses: Vec<String>,
    /// One more per address added or removed and per update.
    pub revision: u64,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub(crate) struct FloatingIp {
    pub id: String,
    pub seq: u64,
    pub address: Ipv4Addr,
    pub network_id: String,
    pub port_id: Option<String>,
    pub fixed_ip: Option<Ipv4Addr>,
    pub description: String,
    pub tags: Vec<String>,
    pub revision: u64,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
}
