//! Designate zones and record sets, in Designate's words (`sim/designate-wire.md`).

use serde::{Deserialize, Serialize};

use crate::cloud::ids::{DnsZoneId, RecordSetId};

/// A zone as Designate lists it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct DnsZone {
    pub id: DnsZoneId,
    /// With the final dot: `example.test.`.
    pub name: String,
    /// `PENDING` until the name servers serve it, `ACTIVE`, `ERROR`.
    pub status: String,
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
