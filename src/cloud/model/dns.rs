//! Designate zones and record sets, in Designate's words (`sim/designate-wire.md`).

use serde::{Deserialize, Serialize};

use crate::cloud::ids::{DnsZoneId, RecordSetId};

/// Designate's word for a change its name servers do not serve yet.
pub const PENDING: &str = "PENDING";

/// A zone as Designate lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct DnsZone {
    pub id: DnsZoneId,
    /// With the final dot: `example.test.`.
    pub name: String,
    /// `PENDING` until the name servers serve the last change, `ACTIVE`, `ERROR`.
    pub status: String,
    /// The change `PENDING` is about: `CREATE`, `UPDATE`, `DELETE`; `NONE` once served.
    #[serde(default)]
    pub action: String,
    #[serde(default)]
    pub email: String,
    #[serde(default)]
    pub ttl: Option<i32>,
    #[serde(default)]
    pub serial: Option<i64>,
    /// Where the operator records the DNSZone that owns it (`owner::port_record`).
    #[serde(default)]
    pub description: Option<String>,
}

impl DnsZone {
    pub fn is_pending(&self) -> bool {
        self.status == PENDING
    }

    /// Being deleted: Designate still lists it until its name servers dropped it.
    pub fn is_going(&self) -> bool {
        self.action == "DELETE"
    }

    /// Designate gave up on its last change.
    pub fn is_failed(&self) -> bool {
        self.status == "ERROR"
    }
}

/// The record sets of `sets` that are not zone `zone_name`'s own NS and SOA (which
/// Designate makes and deletes with it), as `name type`: what deleting the zone would
/// delete too.
pub fn held_in_zone(zone_name: &str, sets: &[RecordSet]) -> Vec<String> {
    sets.iter()
        .filter(|s| !(s.name == zone_name && matches!(s.type_.as_str(), "NS" | "SOA")))
        .map(|s| format!("{} {}", s.name, s.type_))
        .collect()
}

/// `POST /v2/zones`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreateZone {
    pub name: String,
    pub email: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i32>,
    pub description: String,
}

/// `PATCH /v2/zones/{zone}`: only what is given changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UpdateZone {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl UpdateZone {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// `GET /v2/zones/{zone}/nameservers`.
#[derive(Clone, Debug, Deserialize)]
pub struct Nameservers {
    pub nameservers: Vec<Nameserver>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Nameserver {
    pub hostname: String,
}

/// A record set as Designate answers it. Designate deletes one at once from its API
/// (a GET answers 404) and from the name servers some seconds later.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct RecordSet {
    pub id: RecordSetId,
    pub zone_id: DnsZoneId,
    /// Fully qualified, with the final dot.
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub records: Vec<String>,
    /// `None`: the zone's TTL.
    #[serde(default)]
    pub ttl: Option<i32>,
    /// Where the operator records the owner (`owner::port_record`).
    #[serde(default)]
    pub description: Option<String>,
    /// `PENDING` while the name servers are told, `ACTIVE`, `ERROR`.
    pub status: String,
}

impl RecordSet {
    /// A change the name servers do not serve yet.
    pub fn is_pending(&self) -> bool {
        self.status == PENDING
    }
}

/// `POST /v2/zones/{zone}/recordsets`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CreateRecordSet {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub records: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i32>,
    pub description: String,
}

/// `PUT /v2/zones/{zone}/recordsets/{id}`: the records and TTL become these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UpdateRecordSet {
    pub records: Vec<String>,
    pub ttl: Option<i32>,
}
