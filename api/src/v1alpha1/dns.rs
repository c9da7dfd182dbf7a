//! DNS names: record sets in Designate that carry an object's address, kept by the
//! operator as the address changes and removed with the object.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A zone is named with its final dot.
const ZONE_RULE: &str = "self.endsWith('.') && !self.startsWith('.') && !self.contains('..')";
const ZONE_MESSAGE: &str = "zone is a DNS zone's name with its final dot, such as example.test.";
/// A name is the labels before the zone, or `@`.
const NAME_RULE: &str = "self == '@' || (self.matches('^[a-zA-Z0-9_]([-a-zA-Z0-9_.]*[a-zA-Z0-9_])?$') && !self.contains('..'))";
const NAME_MESSAGE: &str = "name is the part of the DNS name before the zone: letters, digits, '-' and '_' in labels separated by dots (www, api.v2), or @ for the zone itself";

/// A name in a Designate zone of the project for the object's address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsName {
    /// The Designate zone, by its name with the final dot (`example.test.`).
    #[schemars(length(min = 2, max = 255))]
    #[x_kube(validation = kube::core::Rule::new(ZONE_RULE).message(ZONE_MESSAGE))]
    pub zone: String,
    /// The name in the zone, without the zone (`www` for `www.example.test.`); `@` for
    /// the zone's own name.
    #[schemars(length(min = 1, max = 200))]
    #[x_kube(validation = kube::core::Rule::new(NAME_RULE).message(NAME_MESSAGE))]
    pub name: String,
    /// Seconds resolvers may keep the answer; the zone's TTL when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2_147_483_647))]
    pub ttl: Option<i32>,
    /// VirtualMachines only: the address the name holds, `primary` (the primary fixed
    /// address, the default) or `floating` (`spec.floatingIP`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<DnsAddress>,
}

/// A group's name: one record set holding the addresses of the replicas that serve
/// (Ready, not draining: a replica leaves it before it is drained and joins it once
/// it serves), and with `perReplica` one name per replica, `<name>-<n>`, holding that
/// replica's address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!self.perReplica || self.name != '@'").message("perReplica names are <name>-<n>: give a name, not @"))]
pub struct GroupDnsName {
    /// The Designate zone, by its name with the final dot (`example.test.`).
    #[schemars(length(min = 2, max = 255))]
    #[x_kube(validation = kube::core::Rule::new(ZONE_RULE).message(ZONE_MESSAGE))]
    pub zone: String,
    /// The name in the zone, without the zone (`db` for `db.example.test.`); `@` for
    /// the zone's own name.
    #[schemars(length(min = 1, max = 190))]
    #[x_kube(validation = kube::core::Rule::new(NAME_RULE).message(NAME_MESSAGE))]
    pub name: String,
    /// Seconds resolvers may keep the answer; the zone's TTL when absent. Keep it short
    /// (30 s): a replica that leaves the name is still answered from caches this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2_147_483_647))]
    pub ttl: Option<i32>,
    /// Also a name per replica, `<name>-<n>`, holding replica `n`'s address whether it
    /// serves or not (kept by the replica's VirtualMachine: its `spec.dns`).
    #[serde(default)]
    pub per_replica: bool,
}

impl GroupDnsName {
    /// The name of the serving replicas' record set.
    pub fn shared(&self) -> DnsName {
        DnsName {
            zone: self.zone.clone(),
            name: self.name.clone(),
            ttl: self.ttl,
            address: None,
        }
    }

    /// Replica `index`'s own name, with `perReplica`.
    pub fn of_replica(&self, index: u32) -> Option<DnsName> {
        self.per_replica.then(|| DnsName {
            zone: self.zone.clone(),
            name: format!("{}-{index}", self.name),
            ttl: self.ttl,
            address: None,
        })
    }
}

/// Which of a VirtualMachine's addresses a name holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DnsAddress {
    /// The primary fixed address (`status.primaryIP`).
    #[default]
    Primary,
    /// The floating IP (`status.floatingIP`).
    Floating,
}

impl DnsName {
    /// The fully qualified name (`www.example.test.`).
    pub fn fqdn(&self) -> String {
        if self.name == "@" {
            self.zone.clone()
        } else {
            format!("{}.{}", self.name, self.zone)
        }
    }
}

/// A record set the operator keeps for the object, as Designate last answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnsRecordStatus {
    /// The fully qualified name (`www.example.test.`).
    pub name: String,
    /// The zone it is in.
    pub zone: String,
    /// `A` or `AAAA`, by the address's family.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The addresses it holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<String>,
    /// Designate's status of the record set: `PENDING` until its name servers serve it,
    /// then `ACTIVE`; `ERROR`. Or why the operator could not keep it
    /// (`ZoneNotFound`, `RecordOwnedByAnother`, `Refused`, `NoAddress`).
    pub status: String,
    /// What went wrong and what to do, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
