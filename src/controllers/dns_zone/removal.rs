//! What deleting a DNSZone does to its zone, as its reconcile policy says: delete it
//! once it holds no record set but its own NS and SOA (Designate would delete every
//! record set with it, someone else's too), take the owner record off it, or leave it.

use std::sync::Arc;

use kube::runtime::events::EventType;
use verda_api::v1alpha1::DNSZone;
use verda_api::v1alpha1::annotations::RECONCILE_POLICY;

use super::observe;
use super::plan::Found;
use crate::cloud::model::dns::{DnsZone, UpdateZone, held_in_zone};
use crate::cloud::owner::port_record;
use crate::cloud::{Dns, ignore_not_found};
use crate::runtime::events::publish;
use crate::runtime::lifecycle::{Removal, removal_finished};
use crate::runtime::object::object_key;
use crate::runtime::reconciler::Cleanup;
use crate::runtime::{Context, ReconcileError};

/// Deletes (or detaches) the zone; done once Designate has none of the object's.
pub async fn cleanup(
    obj: Arc<DNSZone>,
    ctx: Arc<Context>,
    removal: Removal,
) -> Result<Cleanup, ReconcileError> {
    let (tenant, detach) = match removal {
        Removal::Abandon => {
            let note = format!(
                "DNS zone {} was left as it is ({RECONCILE_POLICY} skip)",
                obj.spec.name
            );
            finished(&ctx, &obj, "Abandoned", note).await;
            return Ok(Cleanup::Done);
        }
        Removal::Delete(tenant) => (tenant, false),
        Removal::Detach(tenant) => (tenant, true),
    };
    let key = object_key(&*obj);
    let dns = tenant.services.dns(obj.spec.region.as_deref());
    let record = port_record(&ctx.owner_of(&*obj).uid, None, &ctx.cluster);
    let zone = match observe::find(dns.as_ref(), &obj, &record, &key).await {
        Ok(Found::Zone(zone)) if zone.description.as_deref() == Some(&record) => zone,
        // None of the object's: nothing of it to delete (an import never taken over,
        // a name someone else holds).
        Ok(_) | Err(ReconcileError::Invalid { .. }) => {
            let note = format!("no DNS zone {} of this object is left", obj.spec.name);
            finished(&ctx, &obj, "Deleted", note).await;
            return Ok(Cleanup::Done);
        }
        Err(e) => return Err(e),
    };
    if detach {
        return detached(dns.as_ref(), &zone, &ctx, &obj, &key).await;
    }
    if let Some(wait) = held_back(dns.as_ref(), &zone, &ctx, &obj, &key).await? {
        return Ok(wait);
    }
    ignore_not_found(dns.delete_zone(&zone.id).await)
        .map_err(ReconcileError::cloud("delete the DNS zone", &key))?;
    Ok(Cleanup::Wait(ctx.timing.poll))
}

/// How long the zone's delete waits, if it does: while Designate publishes a change of
/// it, or while it holds record sets other than its own NS and SOA.
async fn held_back(
    dns: &dyn Dns,
    zone: &DnsZone,
    ctx: &Context,
    obj: &DNSZone,
    key: &str,
) -> Result<Option<Cleanup>, ReconcileError> {
    // Not while a change is being published (a record set the objects in the zone
    // just took off): a delete races that change, which can put the zone back on the
    // name servers behind it, and Designate gives the delete up (ERROR). A delete given
    // up is sent again.
    if zone.is_pending() {
        return Ok(Some(Cleanup::Wait(ctx.timing.poll)));
    }
    let others = held_names(dns, zone, key).await?;
    if others.is_empty() {
        return Ok(None);
    }
    let note = format!(
        "DNS zone {} still holds {}: it is deleted once they are gone (delete the objects whose dns names them, or the record sets by hand)",
        zone.name,
        others.join(", ")
    );
    publish(
        &ctx.recorder,
        obj,
        EventType::Warning,
        "ZoneNotEmpty",
        note,
        "Delete",
    )
    .await;
    Ok(Some(Cleanup::Wait(ctx.timing.resync)))
}

/// `detach-on-delete`: the zone stays, without the owner record.
async fn detached(
    dns: &dyn Dns,
    zone: &DnsZone,
    ctx: &Context,
    obj: &DNSZone,
    key: &str,
) -> Result<Cleanup, ReconcileError> {
    let update = UpdateZone {
        description: Some(String::new()),
        ..UpdateZone::default()
    };
    dns.update_zone(&zone.id, &update)
        .await
        .map_err(ReconcileError::cloud(
            "take the owner record off the DNS zone",
            key,
        ))?;
    let note = format!(
        "DNS zone {} keeps serving without the operator's owner record ({RECONCILE_POLICY} detach-on-delete)",
        zone.name
    );
    finished(ctx, obj, "Detached", note).await;
    Ok(Cleanup::Done)
}

/// The record sets of `zone` other than its own NS and SOA, as `name type`.
async fn held_names(
    dns: &dyn Dns,
    zone: &DnsZone,
    key: &str,
) -> Result<Vec<String>, ReconcileError> {
    let sets = dns
        .list_zone_record_sets(&zone.id)
        .await
        .map_err(ReconcileError::cloud(
            "list the DNS zone's record sets",
            key,
        ))?;
    Ok(held_in_zone(&zone.name, &sets))
}

async fn finished(ctx: &Context, obj: &DNSZone, reason: &str, note: String) {
    removal_finished(ctx, obj, reason, note).await;
}
