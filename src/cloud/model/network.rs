//! Neutron request and response types (networks, subnets, ports, floating IPs).
//! Only the fields the operator reads; everything else in Neutron's bodies is ignored.

use serde::{Deserialize, Serialize};

use crate::cloud::ids::{FloatingIpId, NetworkId, PortId, SubnetId};

/// An address a port answers for besides its own (`allowed_address_pairs`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct AddressPair {
    pub ip_address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Network {
    pub id: NetworkId,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub subnets: Vec<SubnetId>,
    #[serde(rename = "router:external", default)]
    pub external: bool,
    #[serde(default)]
    pub shared: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Subnet {
    pub id: SubnetId,
    #[serde(default)]
    pub name: String,
    pub network_id: NetworkId,
    #[serde(default)]
    pub cidr: String,
    #[serde(default)]
    pub ip_version: u8,
    #[serde(default)]
    pub gateway_ip: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct FixedIp {
    pub subnet_id: SubnetId,
    pub ip_address: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Port {
    pub id: PortId,
    #[serde(default)]
    pub name: String,
    pub network_id: NetworkId,
    #[serde(default)]
    pub device_id: String,
    #[serde(default)]
    pub device_owner: String,
    #[serde(default)]
    pub fixed_ips: Vec<FixedIp>,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub mac_address: String,
    #[serde(default)]
    pub allowed_address_pairs: Vec<AddressPair>,
    #[serde(default)]
    pub security_groups: Vec<String>,
}

impl Port {
    /// The server the port is bound to, if any.
    pub fn device(&self) -> Option<&str> {
        (!self.device_id.is_empty()).then_some(self.device_id.as_str())
    }

    pub fn addresses(&self) -> Vec<String> {
        self.fixed_ips
            .iter()
            .map(|f| f.ip_address.clone())
            .collect()
    }
}

/// `POST /v2.0/ports`. Neutron keeps no tags given at create (seen on Neutron 29, which
/// lists `tag-creation`): the owner is recorded in `description`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreatePort {
    pub network: NetworkId,
    pub name: String,
    pub description: String,
    /// Addresses the user chose; empty: Neutron picks one.
    pub fixed_ips: Vec<String>,
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Security group IDs; `None`: the project's default.
    pub security_groups: Option<Vec<String>>,
}

/// `PUT /v2.0/ports/{id}`: the fields a VirtualMachine may edit in place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdatePort {
    pub description: Option<String>,
    pub allowed_address_pairs: Option<Vec<AddressPair>>,
    pub security_groups: Option<Vec<String>>,
    /// Clears `device_id` and `device_owner`: the binding Neutron kept to a server Nova
    /// deleted while Neutron could not be told.
    pub unbind: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SecurityGroup {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

/// Filters of `GET /v2.0/subnets` (exact match; all optional).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubnetFilter {
    pub name: Option<String>,
    pub network_id: Option<NetworkId>,
}

/// Filters of `GET /v2.0/ports`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortFilter {
    pub device_id: Option<String>,
    pub network_id: Option<NetworkId>,
    /// Any of these descriptions (a repeated filter matches any value).
    pub descriptions: Vec<String>,
    pub project_id: Option<String>,
    /// Only these attributes of each port (none: all).
    pub fields: &'static [&'static str],
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct FloatingIp {
    pub id: FloatingIpId,
    pub floating_ip_address: String,
    pub floating_network_id: NetworkId,
    #[serde(default)]
    pub port_id: Option<PortId>,
    #[serde(default)]
    pub fixed_ip_address: Option<String>,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub description: String,
}

/// `POST /v2.0/floatingips`. Neutron refuses tags at create: record the owner in
/// `description` ([`crate::cloud::owner::owner_tag`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateFloatingIp {
    pub floating_network: NetworkId,
    pub port: Option<PortId>,
    pub description: Option<String>,
}

/// Filters of `GET /v2.0/floatingips`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FloatingIpFilter {
    pub port_id: Option<PortId>,
    pub floating_ip_address: Option<String>,
    pub description: Option<String>,
}
