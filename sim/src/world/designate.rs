//! Designate's records: a project's zones and their record sets.

use std::collections::BTreeMap;
use std::time::Instant;

/// One zone. Its NS and SOA record sets are made with it, as Designate does.
#[derive(Debug, Clone)]
pub(crate) struct DnsZone {
    pub id: String,
    /// With the final dot.
    pub name: String,
    pub email: String,
    pub ttl: i64,
    pub description: Option<String>,
    pub created: String,
    /// `PENDING` before this instant (the name servers are told), `ACTIVE` after.
    pub ready_at: Instant,
    pub seq: u64,
}

/// One record set.
#[derive(Debug, Clone)]
pub(crate) struct RecordSet {
    pub id: String,
    pub zone_id: String,
    /// Fully qualified, with the final dot.
    pub name: String,
    pub type_: String,
    pub records: Vec<String>,
    pub ttl: Option<i64>,
    pub description: Option<String>,
    pub created: String,
    pub updated: Option<String>,
    pub version: u64,
    /// The last change (`CREATE`, `UPDATE`), `PENDING` before this instant.
    pub action: &'static str,
    pub ready_at: Instant,
    pub seq: u64,
}

/// A project's zones and record sets by ID.
#[derive(Debug, Default)]
pub(crate) struct Designate {
    pub zones: BTreeMap<String, DnsZone>,
    pub record_sets: BTreeMap<String, RecordSet>,
}
