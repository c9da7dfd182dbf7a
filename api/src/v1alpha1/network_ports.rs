//! Declared Neutron ports: a server's addresses that outlive the server. A port is
//! created before its server and every replacement server boots on it again, so the
//! address, the MAC and the allowed address pairs stay; a group's replica `<group>-<n>`
//! keeps its ports per index, as it keeps its volumes.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::volumes::Retention;

/// IPv4 dotted quad, for the schema (Neutron checks the rest: in the subnet, free).
const IPV4: &str = r"^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$";

/// One port of the server, on one network (a network appears at most once).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.portID) || !has(self.fixedIPs)").message("give either portID (the port keeps its own addresses) or fixedIPs, not both"))]
pub struct PortSpec {
    /// The network, by name or UUID. Immutable.
    #[schemars(length(min = 1, max = 255))]
    pub network: String,
    /// Fixed addresses of the port, chosen by the user (Neutron picks one when absent).
    /// A VirtualMachine only: a group's template takes `spec.addresses` instead.
    /// Immutable. Neutron allows it only on a network the project owns.
    #[serde(default, rename = "fixedIPs", skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 8), inner(regex(pattern = IPV4)))]
    #[x_kube(validation = kube::core::Rule::new("self == oldSelf").message("fixedIPs is immutable: the port keeps its address for the life of the VirtualMachine; create a new VirtualMachine for another"))]
    pub fixed_ips: Option<Vec<String>>,
    /// An existing port to take over instead of creating one, by UUID: the server boots
    /// on it, and from then on it records the owner in its description and goes with the
    /// VirtualMachine as a created port does (`networkRetention`, `detach-on-delete`).
    /// It must be on `network`, free or bound to this VirtualMachine's server. Its
    /// allowed address pairs become this entry's. A VirtualMachine only. Immutable.
    #[serde(default, rename = "portID", skip_serializing_if = "Option::is_none")]
    #[schemars(regex(
        pattern = r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
    ))]
    #[x_kube(validation = kube::core::Rule::new("self == oldSelf").message("portID is immutable: the port taken over is the VirtualMachine's; create a new VirtualMachine to take over another"))]
    pub port_id: Option<String>,
    /// More addresses the port may answer for (a keepalived VIP, say). Edits update the
    /// port in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub allowed_address_pairs: Option<Vec<AddressPair>>,
    /// The port's security groups, by name or UUID; absent: the VirtualMachine's
    /// `securityGroups`, else the project's `default`. Edits update the port in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 255)))]
    pub security_groups: Option<Vec<String>>,
}

/// An address a port may answer for besides its own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddressPair {
    /// An IPv4 address or CIDR.
    #[serde(rename = "ipAddress")]
    #[schemars(regex(
        pattern = r"^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(/([0-9]|[12][0-9]|3[0-2]))?$"
    ))]
    pub ip_address: String,
    /// The MAC it answers with; absent: the port's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"))]
    pub mac_address: Option<String>,
}

/// A floating IP for the server's first declared port: allocated once, kept across
/// every replacement of the server (it stays on the port).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FloatingIpSpec {
    /// The external network it is allocated from, by name or UUID.
    #[schemars(length(min = 1, max = 255))]
    pub network: String,
}

/// Replica `n`'s fixed address on one network of a group's template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.from) != has(self.list)").message("give either from (index n gets from + n) or list (one address per index), not both"))]
pub struct GroupAddresses {
    /// A network of the template (`ports` or `networks`), by the same name or UUID.
    #[schemars(length(min = 1, max = 255))]
    pub network: String,
    /// Index `n` gets this address plus `n` (e.g. 10.0.0.50 → .50, .51, .52).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = IPV4))]
    pub from: Option<String>,
    /// One address per index; the group may not have more replicas than addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 100), inner(regex(pattern = IPV4)))]
    pub list: Option<Vec<String>>,
}

impl GroupAddresses {
    /// The address of replica `index`, or why there is none.
    pub fn of(&self, index: u32) -> Result<String, String> {
        if let Some(list) = &self.list {
            return list.get(index as usize).cloned().ok_or_else(|| {
                format!(
                    "addresses of network {}: the list has {} addresses, none for index {index}",
                    self.network,
                    list.len()
                )
            });
        }
        let from = self.from.as_deref().unwrap_or_default();
        let start: std::net::Ipv4Addr = from.parse().map_err(|_| {
            format!(
                "addresses of network {}: {from:?} is no IPv4 address",
                self.network
            )
        })?;
        u32::from(start)
            .checked_add(index)
            .map(|ip| std::net::Ipv4Addr::from(ip).to_string())
            .ok_or_else(|| {
                format!(
                    "addresses of network {}: {from} + {index} is past the last IPv4 address",
                    self.network
                )
            })
    }
}

/// What becomes of a group's replica ports when a replica is removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupNetworkRetention {
    /// When a scale-down removes a replica: `Retain` (default) keeps its ports (and
    /// addresses) for a later scale-up of the same index; `Delete` deletes them.
    #[serde(default)]
    pub when_scaled: Retention,
    /// When the group is deleted: `Delete` (default) or `Retain`.
    #[serde(default = "deleted")]
    pub when_deleted: Retention,
}

fn deleted() -> Retention {
    Retention::Delete
}

/// What becomes of a VirtualMachine's declared ports when it is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRetention {
    /// `Delete` (default) or `Retain`. A group sets it on its VirtualMachines as it
    /// decides their fate.
    #[serde(default = "deleted")]
    pub when_deleted: Retention,
}

impl Default for NetworkRetention {
    fn default() -> Self {
        Self {
            when_deleted: Retention::Delete,
        }
    }
}

/// One declared port as Neutron has it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// The network as the spec names it.
    pub network: String,
    /// Neutron port ID.
    pub id: String,
    /// The port's fixed addresses.
    #[serde(default, rename = "fixedIPs")]
    pub fixed_ips: Vec<String>,
    /// The port's MAC address: the same whatever server boots on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}
