//! Finds the zone a DNSZone stands for: by the ID its status recorded, else the zone
//! `spec.import` names, else the project's zone of the spec's name carrying the
//! object's owner record (a create whose answer was lost is found so, never made
//! twice). A zone of that name that is someone else's is refused, never touched.

use verda_api::v1alpha1::DNSZone;

use super::plan::Found;
use crate::cloud::model::dns::DnsZone;
use crate::cloud::owner::port_owner;
use crate::cloud::{Dns, ErrorKind};
use crate::runtime::ReconcileError;
use crate::runtime::problem::Problem;

/// The object's zone (`record`: its owner record), or what the user must fix.
pub async fn find(
    dns: &dyn Dns,
    obj: &DNSZone,
    record: &str,
    key: &str,
) -> Result<Found, ReconcileError> {
    let recorded = obj.status.as_ref().and_then(|s| s.id.as_deref());
    if let Some(id) = recorded
        && let Some(zone) = by_id(dns, id, key).await?
        && zone.name == obj.spec.name
    {
        return Ok(Found::Zone(zone));
    }
    if let Some(import) = &obj.spec.import {
        return imported(dns, obj, &import.id, record, key).await;
    }
    let named = dns
        .zones_named(&obj.spec.name)
        .await
        .map_err(ReconcileError::cloud("list the DNS zones", key))?;
    match named.into_iter().next() {
        None => Ok(Found::None),
        Some(zone) if zone.description.as_deref() == Some(record) => Ok(Found::Zone(zone)),
        Some(zone) => Err(owned_by_another(&zone, key)),
    }
}

async fn by_id(dns: &dyn Dns, id: &str, key: &str) -> Result<Option<DnsZone>, ReconcileError> {
    let id = crate::cloud::ids::DnsZoneId::new(id);
    match dns.get_zone(&id).await {
        Ok(zone) => Ok(Some(zone)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound { .. }) => Ok(None),
        Err(e) => Err(ReconcileError::cloud("show the DNS zone", key)(e)),
    }
}

/// The zone `spec.import` names: it must exist, bear the spec's name and belong to no
/// other object.
async fn imported(
    dns: &dyn Dns,
    obj: &DNSZone,
    id: &str,
    record: &str,
    key: &str,
) -> Result<Found, ReconcileError> {
    let invalid = |problem, message: String| ReconcileError::Invalid {
        object: key.to_owned(),
        problem,
        message,
    };
    let Some(zone) = by_id(dns, id, key).await? else {
        let message = format!(
            "spec.import.id {id} names no DNS zone of this project; give the ID of one it has (openstack zone list)"
        );
        return Err(invalid(Problem::ImportNotFound, message));
    };
    if zone.name != obj.spec.name {
        let message = format!(
            "DNS zone {id} is {}, not spec.name {}: nothing was changed; import the zone of that name",
            zone.name, obj.spec.name
        );
        return Err(invalid(Problem::ImportMismatch, message));
    }
    let description = zone.description.as_deref().unwrap_or_default();
    if description != record && port_owner(description).is_some() {
        let message = format!(
            "DNS zone {} is another DNSZone's (its description records that owner); nothing was changed",
            zone.name
        );
        return Err(invalid(Problem::ImportOwnedByAnother, message));
    }
    Ok(Found::Zone(zone))
}

/// A zone of the spec's name that is not the object's.
pub fn owned_by_another(zone: &DnsZone, key: &str) -> ReconcileError {
    ReconcileError::Invalid {
        object: key.to_owned(),
        problem: Problem::ZoneOwnedByAnother,
        message: format!(
            "DNS zone {} exists in Designate and was not made for this DNSZone (by hand, by another object, or in another project); nothing was changed: take it over with spec.import.id {}, or name another zone",
            zone.name, zone.id
        ),
    }
}
