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
    /// What `PENDING` is about: `CREATE`, `UPDATE`, `DELETE`.
    pub action: &'static str,
    /// `PENDING` before this instant (the name servers are told), `ACTIVE` after.
    pub ready_at: Instant,
    /// A delete that came while a change was still being published: the change can
    /// reach the name servers after the delete and put the zone back, and Designate
    /// gives up on the delete (`ERROR` `DELETE`, the zone kept). Seen on the real
    /// Designate 23; the simulator always takes that turn. Another delete starts over.
    pub delete_fails: bool,
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
    /// `PENDING` before `ready_at`, then `ACTIVE` (or `ERROR`, for a failed delete).
    pub fn status(&self, now: Instant) -> &'static str {
        match (now < self.ready_at, self.delete_fails) {
            (true, _) => "PENDING",
            (false, true) => "ERROR",
            (false, false) => "ACTIVE",
        }
    }

    /// Deleted by a request: the delete races a change still being published.
    pub fn delete(&mut self, now: Instant, ready_at: Instant) {
        self.delete_fails = self.action == "UPDATE" && now < self.ready_at;
        self.change("DELETE", ready_at);
    }

    /// A change Designate takes (`UPDATE`, `DELETE`): `PENDING` until `ready_at`.
    pub fn change(&mut self, action: &'static str, ready_at: Instant) {
        self.action = action;
        self.version += 1;
        self.updated = Some(crate::wire::ts_micro_naive(chrono::Utc::now()));
        self.ready_at = ready_at;
    }

    /// One of its record sets was created, changed or deleted: as Designate does, the
    /// zone is `PENDING` `UPDATE` with the next serial until the name servers serve it
    /// (a zone being deleted stays so).
    pub fn record_set_changed(&mut self, ready_at: Instant) {
        if self.action == "DELETE" {
            return;
        }
        self.serial += 1;
        self.change("UPDATE", ready_at.max(self.ready_at));
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
        let going = |z: &DnsZone| z.action == "DELETE" && !z.delete_fails;
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
