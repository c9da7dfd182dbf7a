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
    pub updated: Option<String>,
    /// The SOA serial: one up per change.
    pub serial: u64,
    pub version: u64,
    /// What `PENDING` is about: `CREATE`, `UPDATE`.
    pub action: &'static str,
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

impl DnsZone {
    /// A change Designate takes (`UPDATE`, `DELETE`): `PENDING` until `ready_at`.
    pub fn change(&mut self, action: &'static str, ready_at: Instant) {
        self.action = action;
        self.version += 1;
        self.updated = Some(crate::wire::ts_micro_naive(chrono::Utc::now()));
        self.ready_at = ready_at;
    }
}

/// A project's zones and record sets by ID.
#[derive(Debug, Default)]
pub(crate) struct Designate {
    pub zones: BTreeMap<String, DnsZone>,
    pub record_sets: BTreeMap<String, RecordSet>,
}

impl Designate {
    /// Drops the zones whose delete the name servers finished (with their record
    /// sets); the instants of those still to finish.
    pub fn settle(&mut self, now: Instant) -> Vec<Instant> {
        let going = |z: &DnsZone| z.action == "DELETE";
        let later = self.zones.values().filter(|z| going(z) && z.ready_at > now);
        let later: Vec<Instant> = later.map(|z| z.ready_at).collect();
        let gone: Vec<String> = self
            .zones
            .values()
            .filter(|z| going(z) && z.ready_at <= now)
            .map(|z| z.id.clone())
            .collect();
        for id in gone {
            self.zones.remove(&id);
            self.record_sets.retain(|_, r| r.zone_id != id);
        }
        later
    }
}
