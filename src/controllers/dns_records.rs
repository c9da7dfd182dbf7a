//! DNS names (`spec.dns`): one A or AAAA record set per name in a Designate zone of the
//! project, holding the object's address, found again by the owner record in its
//! description (`owner::port_record`, as declared ports are) before anything is created.
//!
//! `observe` reads the record sets of every name the spec asks for and every name the
//! status still reports (an entry removed from the spec: its record set is deleted);
//! `plan` (pure) says per name what to write and what to report; `carry_out` writes.
//! Designate takes several writes at once, so every name is settled in one round.
//! A name held by a record set the operator did not make is reported and left alone.

use std::time::Duration;

use kube::runtime::events::EventType;
use verda_api::v1alpha1::{DnsAddress, DnsName, DnsRecordStatus};

use crate::caches::cloud_view::{ProjectView, RecordSetView, Written};
use crate::cloud::ids::{DnsZoneId, RecordSetId};
use crate::cloud::model::dns::{CreateRecordSet, PENDING, RecordSet, UpdateRecordSet};
use crate::cloud::{CloudError, Dns, ErrorKind};
use crate::runtime::{Context, ReconcileError};

pub const ZONE_NOT_FOUND: &str = "ZoneNotFound";
pub const OWNED_BY_ANOTHER: &str = "RecordOwnedByAnother";
pub const NO_ADDRESS: &str = "NoAddress";
pub const FAILED: &str = "Failed";
/// How soon a name Designate is still publishing, or a failed write, is looked at again.
pub const POLL: Duration = Duration::from_secs(5);

/// Designate as an object's names reach it: the service, and the project's record sets
/// per zone (listed once per `max_age` for every object that names the zone).
#[derive(Clone, Copy)]
pub struct Designate<'a> {
    pub dns: &'a dyn Dns,
    pub view: &'a RecordSetView,
    pub max_age: Duration,
}

impl<'a> Designate<'a> {
    /// The project's record sets listed at most once per resync period.
    pub fn new(dns: &'a dyn Dns, project: &'a ProjectView, ctx: &Context) -> Self {
        Self {
            dns,
            view: &project.record_sets,
            max_age: ctx.timing.resync,
        }
    }
}

/// One name as Designate shows it now.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub name: DnsName,
    /// Whether the spec still asks for it (else it is to be deleted).
    pub wanted: bool,
    pub zone: Result<DnsZoneId, String>,
    /// The record sets of the name, of every type.
    pub sets: Vec<RecordSet>,
}

/// One write.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    Create(DnsZoneId, CreateRecordSet),
    Update(DnsZoneId, RecordSetId, String, UpdateRecordSet),
    Delete(DnsZoneId, RecordSetId, String),
}

impl Write {
    fn zone(&self) -> &DnsZoneId {
        match self {
            Write::Create(zone, _) | Write::Update(zone, ..) | Write::Delete(zone, ..) => zone,
        }
    }
}

/// What a round keeps: the status rows and the events of its writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kept {
    pub statuses: Vec<DnsRecordStatus>,
    pub events: Vec<(EventType, &'static str, String)>,
    /// Something is still settling or failed: look again soon.
    pub unsettled: bool,
}

/// The addresses a name may hold: a LoadBalancer's VIP, a VirtualMachine's primary
/// fixed address, or the addresses of a group's serving replicas as `primary`; a
/// VirtualMachine's floating IP.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Addresses {
    pub primary: Vec<String>,
    pub floating: Option<String>,
}

impl Addresses {
    /// The addresses `name` asks for.
    pub fn of(&self, name: &DnsName) -> &[String] {
        match name.address.unwrap_or_default() {
            DnsAddress::Primary => &self.primary,
            DnsAddress::Floating => self.floating.as_slice(),
        }
    }
}

/// The names to look at: the spec's, then those the status reports that it no longer
/// asks for.
pub fn names(spec: &[DnsName], reported: &[DnsRecordStatus]) -> Vec<(DnsName, bool)> {
    let mut names: Vec<(DnsName, bool)> = spec.iter().map(|n| (n.clone(), true)).collect();
    for row in reported {
        let kept = spec
            .iter()
            .any(|n| n.zone == row.zone && n.fqdn() == row.name);
        let listed = names
            .iter()
            .any(|(n, _)| n.zone == row.zone && n.fqdn() == row.name);
        if !kept && !listed {
            names.push((removed_name(row), false));
        }
    }
    names
}

/// A reported name as an entry, to delete what it holds.
fn removed_name(row: &DnsRecordStatus) -> DnsName {
    let name = match row.name.strip_suffix(&format!(".{}", row.zone)) {
        Some(label) => label.to_owned(),
        None => "@".to_owned(),
    };
    DnsName {
        zone: row.zone.clone(),
        name,
        ..DnsName::default()
    }
}

/// The record sets of the names `spec` asks for and `reported` still shows; no call
/// without any.
pub async fn read(
    designate: Designate<'_>,
    spec: &[DnsName],
    reported: &[DnsRecordStatus],
) -> Result<Vec<Seen>, CloudError> {
    let names = names(spec, reported);
    match names.is_empty() {
        true => Ok(Vec::new()),
        false => observe(designate, names).await,
    }
}

/// Reads the record sets of each name (its zone looked up by name, remembered).
pub async fn observe(
    designate: Designate<'_>,
    names: Vec<(DnsName, bool)>,
) -> Result<Vec<Seen>, CloudError> {
    let Designate { dns, view, max_age } = designate;
    let mut seen = Vec::with_capacity(names.len());
    for (name, wanted) in names {
        let zone = match dns.find_zone(&name.zone).await {
            Ok(zone) => zone,
            Err(e) if matches!(e.kind(), ErrorKind::LookupNotFound { .. }) => {
                let why = format!(
                    "the project has no DNS zone {}: create it in Designate (openstack zone create --email …), or correct spec.dns",
                    name.zone
                );
                seen.push(Seen {
                    name,
                    wanted,
                    zone: Err(why),
                    sets: Vec::new(),
                });
                continue;
            }
            Err(e) => return Err(e),
        };
        let listing = dns.list_zone_record_sets(&zone.id);
        let all = view.within(&zone.id, max_age, listing).await?;
        let fqdn = name.fqdn();
        let sets = all.iter().filter(|s| s.name == fqdn).cloned().collect();
        seen.push(Seen {
            name,
            wanted,
            zone: Ok(zone.id),
            sets,
        });
    }
    Ok(seen)
}

/// `A` or `AAAA`, by the address's family.
pub fn record_type(address: &str) -> &'static str {
    if address.contains(':') { "AAAA" } else { "A" }
}

/// Per name, the writes that make it hold `addresses` (those of the first one's family;
/// or, no longer wanted, nothing of ours), and the row to report until they are seen
/// done. Without addresses, what the name holds stays as it is.
pub fn plan(
    seen: &Seen,
    addresses: &[String],
    record: &str,
) -> (Vec<Write>, Option<DnsRecordStatus>) {
    let mut row = DnsRecordStatus {
        name: seen.name.fqdn(),
        zone: seen.name.zone.clone(),
        ..DnsRecordStatus::default()
    };
    let zone = match &seen.zone {
        Ok(zone) => zone,
        Err(_) if !seen.wanted => return (Vec::new(), None),
        Err(why) => {
            row.status = ZONE_NOT_FOUND.to_owned();
            row.message = Some(why.clone());
            return (Vec::new(), Some(row));
        }
    };
    let (ours, theirs): (Vec<&RecordSet>, Vec<&RecordSet>) = seen
        .sets
        .iter()
        .partition(|s| s.description.as_deref() == Some(record));
    if !seen.wanted {
        return (ours.iter().map(|s| delete(zone, s)).collect(), None);
    }
    let Some(first) = addresses.first() else {
        row.status = NO_ADDRESS.to_owned();
        row.message = Some(
            "no address to hold yet (none assigned, or no replica serves): what the name holds stays as it is"
                .to_owned(),
        );
        return (Vec::new(), Some(row));
    };
    let type_ = record_type(first);
    let mut records: Vec<String> = addresses
        .iter()
        .filter(|a| record_type(a) == type_)
        .cloned()
        .collect();
    records.sort();
    records.dedup();
    row.type_ = Some(type_.to_owned());
    if held_by_another(&theirs, type_, &mut row) {
        return (Vec::new(), Some(row));
    }
    // Ours of another type: the address changed family.
    let mut writes: Vec<Write> = ours
        .iter()
        .filter(|s| s.type_ != type_)
        .map(|s| delete(zone, s))
        .collect();
    let ours = ours.into_iter().find(|s| s.type_ == type_);
    writes.extend(hold(zone, &seen.name, ours, records, record, &mut row));
    (writes, Some(row))
}

/// Whether someone else's record set holds the name for this type (or a CNAME, which
/// takes the name whole); reported on `row`.
fn held_by_another(theirs: &[&RecordSet], type_: &str, row: &mut DnsRecordStatus) -> bool {
    let Some(other) = theirs
        .iter()
        .find(|s| s.type_ == type_ || s.type_ == "CNAME")
    else {
        return false;
    };
    row.status = OWNED_BY_ANOTHER.to_owned();
    row.records = other.records.clone();
    row.message = Some(format!(
        "{} already has a {} record set ({}) that this object did not make: it was left as it is; delete it, or choose another name",
        row.name, other.type_, other.id
    ));
    true
}

/// The write (if any) that makes our record set of the records' type hold them.
fn hold(
    zone: &DnsZoneId,
    name: &DnsName,
    ours: Option<&RecordSet>,
    records: Vec<String>,
    record: &str,
    row: &mut DnsRecordStatus,
) -> Option<Write> {
    let ttl = name.ttl;
    let type_ = row.type_.clone().unwrap_or_default();
    row.records = records.clone();
    row.status = PENDING.to_owned();
    let same = |set: &RecordSet| {
        let mut held = set.records.clone();
        held.sort();
        held == records
    };
    match ours {
        Some(set) if same(set) && set.ttl == ttl => {
            row.status = set.status.clone();
            None
        }
        Some(set) => {
            let update = UpdateRecordSet { records, ttl };
            Some(Write::Update(
                zone.clone(),
                set.id.clone(),
                describe(set),
                update,
            ))
        }
        None => Some(Write::Create(
            zone.clone(),
            CreateRecordSet {
                name: row.name.clone(),
                type_,
                records,
                ttl,
                description: record.to_owned(),
            },
        )),
    }
}

fn delete(zone: &DnsZoneId, set: &RecordSet) -> Write {
    Write::Delete(zone.clone(), set.id.clone(), describe(set))
}

fn describe(set: &RecordSet) -> String {
    format!("{} {} ({})", set.name, set.type_, set.id)
}

/// Plans every name and carries the writes out (none while `writes` is false). A
/// refused or failed write is reported on its name and tried again after [`POLL`]; it
/// never stops the rest of the object's reconcile.
pub async fn converge(
    designate: Designate<'_>,
    seen: &[Seen],
    addresses: &Addresses,
    record: &str,
    writes: bool,
) -> Kept {
    let mut kept = Kept::default();
    for name in seen {
        let (todo, row) = plan(name, addresses.of(&name.name), record);
        let mut row = row;
        // Without a row, the writes are the deletes of a name no longer wanted.
        let deleting = row.is_none() && !todo.is_empty();
        for write in todo.into_iter().filter(|_| writes) {
            match carry_out(designate.dns, &write).await {
                Ok((event, written)) => {
                    designate.view.wrote(write.zone(), written).await;
                    kept.events.push(event);
                }
                Err(e) => {
                    designate.view.forget(write.zone());
                    kept.unsettled = true;
                    match row.as_mut() {
                        Some(r) => {
                            r.status = FAILED.to_owned();
                            r.message = Some(e.to_string());
                        }
                        None => {
                            kept.events
                                .push((EventType::Warning, "DNSRecordFailed", e.to_string()))
                        }
                    }
                }
            }
        }
        if let Some(row) = row {
            kept.unsettled |= row.status == PENDING || row.status == FAILED;
            kept.statuses.push(row);
        } else if deleting {
            // Deleted just now: reported no more, confirmed by the next round's listing.
            kept.unsettled = true;
        }
    }
    kept
}

/// One write's event, and what it did to the zone's record sets.
type Done = ((EventType, &'static str, String), Written);

async fn carry_out(dns: &dyn Dns, write: &Write) -> Result<Done, CloudError> {
    match write {
        Write::Create(zone, request) => {
            let set = dns.create_record_set(zone, request).await?;
            let note = format!(
                "created DNS record set {} {} {}",
                request.name,
                request.type_,
                request.records.join(", ")
            );
            Ok((
                (EventType::Normal, "DNSRecordCreated", note),
                Written::Put(set),
            ))
        }
        Write::Update(zone, id, what, request) => {
            let set = dns.update_record_set(zone, id, request).await?;
            let note = format!(
                "updated DNS record set {what} to hold {}",
                request.records.join(", ")
            );
            Ok((
                (EventType::Normal, "DNSRecordUpdated", note),
                Written::Put(set),
            ))
        }
        Write::Delete(zone, id, what) => {
            match dns.delete_record_set(zone, id).await {
                Err(e) if !matches!(e.kind(), ErrorKind::NotFound { .. }) => return Err(e),
                _ => {}
            }
            let note = format!("deleted DNS record set {what}");
            Ok((
                (EventType::Normal, "DNSRecordDeleted", note),
                Written::Deleted(id.clone()),
            ))
        }
    }
}

/// Deletes every record set of ours under the names of `spec` and `reported` (the
/// object is going); `true` when none is left.
pub async fn delete_all(
    designate: Designate<'_>,
    spec: &[DnsName],
    reported: &[DnsRecordStatus],
    record: &str,
) -> Result<bool, CloudError> {
    let every: Vec<DnsRecordStatus> = spec
        .iter()
        .map(status_of)
        .chain(reported.iter().cloned())
        .collect();
    let names = names(&[], &every);
    // What is left is read from Designate itself, not from a listing shared earlier.
    let fresh = Designate {
        max_age: Duration::ZERO,
        ..designate
    };
    let seen = observe(fresh, names).await?;
    let mut none_left = true;
    for name in &seen {
        let (todo, _) = plan(name, &[], record);
        for write in &todo {
            none_left = false;
            designate.view.forget(write.zone());
            carry_out(designate.dns, write).await?;
        }
    }
    Ok(none_left)
}

/// The row that names an entry, for [`names`] to take as reported.
fn status_of(name: &DnsName) -> DnsRecordStatus {
    DnsRecordStatus {
        name: name.fqdn(),
        zone: name.zone.clone(),
        ..DnsRecordStatus::default()
    }
}

/// For an object being deleted: its names first, so that nothing resolves to its
/// address once it goes. `true` when it has no record set left (none asked for:
/// nothing is read).
pub async fn released(
    designate: Designate<'_>,
    spec: &[DnsName],
    reported: &[DnsRecordStatus],
    record: &str,
    key: &str,
) -> Result<bool, ReconcileError> {
    if spec.is_empty() && reported.is_empty() {
        return Ok(true);
    }
    delete_all(designate, spec, reported, record)
        .await
        .map_err(ReconcileError::cloud("delete the DNS record sets", key))
}

#[cfg(test)]
#[path = "dns_records_tests.rs"]
mod tests;
