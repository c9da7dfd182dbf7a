//! What deleting a SecurityGroup does to its Neutron group, as its reconcile policy
//! says: delete it once no port is in it (Neutron refuses otherwise: `InUse` names the
//! ports meanwhile), then its address groups; take the owner record off; or leave it.

use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::events::EventType;
use verda_api::v1alpha1::SecurityGroup;
use verda_api::v1alpha1::annotations::RECONCILE_POLICY;

use super::observe::{self, referenced_groups};
use super::plan::{address_group_name, carries};
use super::{Services, record_of};
use crate::cloud::model::firewall::Firewall;
use crate::cloud::{ErrorKind, ignore_not_found};
use crate::runtime::events::publish;
use crate::runtime::lifecycle::{Removal, removal_finished};
use crate::runtime::object::object_key;
use crate::runtime::reconciler::{Cleanup, Reconciler};
use crate::runtime::{Context, ReconcileError};

/// The event reason while ports keep the group from being deleted.
pub const IN_USE: &str = "InUse";

/// Deletes (or detaches) the group and its address groups; done once Neutron has
/// none of the object's.
pub async fn cleanup(
    obj: Arc<SecurityGroup>,
    ctx: Arc<Context>,
    removal: Removal,
) -> Result<Cleanup, ReconcileError> {
    let (tenant, detach) = match removal {
        Removal::Abandon => {
            let note = format!(
                "security group {} was left as it is ({RECONCILE_POLICY} skip)",
                obj.name_any()
            );
            finished(&ctx, &obj, "Abandoned", note).await;
            return Ok(Cleanup::Done);
        }
        Removal::Delete(tenant) => (tenant, false),
        Removal::Detach(tenant) => (tenant, true),
    };
    let key = object_key(&*obj);
    let services = SecurityGroup::services(&ctx, &tenant, &obj);
    let record = record_of(&ctx, &obj);
    let found = match observe::find(&services, &obj, (&record, None), &key).await {
        Ok(found) => found.filter(|f| carries(&f.description, &record)),
        // An import never taken over: nothing of the object's.
        Err(ReconcileError::Invalid { .. }) => None,
        Err(e) => return Err(e),
    };
    if let Some(firewall) = found {
        if detach {
            detach_group(&services, &obj, &firewall, &key).await?;
            let note = format!(
                "security group {} stays in Neutron without the operator's owner record ({RECONCILE_POLICY} detach-on-delete); its address groups stay too",
                firewall.name
            );
            finished(&ctx, &obj, "Detached", note).await;
            return Ok(Cleanup::Done);
        }
        if !deleted(&services, &ctx, &obj, &firewall, &key).await? {
            return Ok(Cleanup::Wait(ctx.timing.poll));
        }
    }
    drop_address_groups(&services, &obj, &record, &key).await?;
    let note = format!(
        "security group {} and its address groups are deleted",
        obj.name_any()
    );
    finished(&ctx, &obj, "Deleted", note).await;
    Ok(Cleanup::Done)
}

/// Takes the owner record off the group, leaving the spec's free text.
async fn detach_group(
    services: &Services,
    obj: &SecurityGroup,
    firewall: &Firewall,
    key: &str,
) -> Result<(), ReconcileError> {
    let text = obj.spec.description.clone().unwrap_or_default();
    services
        .firewalls
        .set_security_group_description(&firewall.id, &text)
        .await
        .map_err(ReconcileError::cloud(
            "take the owner record off the security group",
            key,
        ))?;
    Ok(())
}

/// Deletes the group unless a port is in it (`InUse`): whether it is gone.
async fn deleted(
    services: &Services,
    ctx: &Context,
    obj: &SecurityGroup,
    firewall: &Firewall,
    key: &str,
) -> Result<bool, ReconcileError> {
    let ports =
        services
            .firewalls
            .ports_using(&firewall.id)
            .await
            .map_err(ReconcileError::cloud(
                "list the ports in the security group",
                key,
            ))?;
    if !ports.is_empty() {
        in_use(ctx, obj, &firewall.name, &ports).await;
        return Ok(false);
    }
    let deleted = services.firewalls.delete_security_group(&firewall.id).await;
    if deleted.as_ref().is_ok() || deleted.as_ref().is_err_and(|e| e.is_not_found()) {
        services.view.firewalls.forget(&firewall.id);
    }
    match deleted {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(true),
        Err(e) if matches!(e.kind(), ErrorKind::Conflict { .. }) => {
            // A port joined between the look and the delete.
            in_use(ctx, obj, &firewall.name, &[]).await;
            Ok(false)
        }
        Err(e) => Err(ReconcileError::cloud("delete the security group", key)(e)),
    }
}

/// The address groups the status recorded and any the rules' names find with the
/// owner record (a create whose answer was lost).
async fn drop_address_groups(
    services: &Services,
    obj: &SecurityGroup,
    record: &str,
    key: &str,
) -> Result<(), ReconcileError> {
    let mut ids: Vec<String> = obj
        .status
        .iter()
        .flat_map(|s| s.address_groups.iter().map(|a| a.id.clone()))
        .collect();
    for group in referenced_groups(obj) {
        let name = address_group_name(&obj.name_any(), &group);
        let listed = services
            .firewalls
            .address_groups_named(&name)
            .await
            .map_err(ReconcileError::cloud("list the address groups", key))?;
        ids.extend(
            listed
                .into_iter()
                .filter(|a| carries(&a.description, record))
                .map(|a| a.id),
        );
    }
    ids.sort();
    ids.dedup();
    for id in ids {
        ignore_not_found(services.firewalls.delete_address_group(&id).await)
            .map_err(ReconcileError::cloud("delete an address group", key))?;
    }
    Ok(())
}

async fn in_use(ctx: &Context, obj: &SecurityGroup, name: &str, ports: &[String]) {
    let which = match ports.len() {
        0 => "a port".to_owned(),
        n => format!("{n} ports ({})", ports.join(", ")),
    };
    let note = format!(
        "security group {name} is still used by {which}: it is deleted once no VirtualMachine or port is in it (delete those, or take the group out of their securityGroups)"
    );
    publish(
        &ctx.recorder,
        obj,
        EventType::Warning,
        IN_USE,
        note,
        "Delete",
    )
    .await;
}

async fn finished(ctx: &Context, obj: &SecurityGroup, reason: &str, note: String) {
    removal_finished(ctx, obj, reason, note).await;
}
