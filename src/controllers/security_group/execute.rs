//! Carries a SecurityGroup's step out: the Neutron writes of one round, and the
//! group and address groups as they are after them.

use std::collections::BTreeMap;

use kube::ResourceExt;
use verda_api::v1alpha1::SecurityGroup;

use super::plan::{AddressWrite, Held, Seen, Step, address_group_name, carries};
use super::rules::describe;
use super::{Outcome, Services};
use crate::cloud::model::firewall::{AddressGroup, CreateRule, Firewall};
use crate::cloud::{CloudError, ErrorKind, ignore_not_found};
use crate::runtime::ReconcileError;
use crate::runtime::object::object_key;
use crate::runtime::reconciler::Reconcile;

pub async fn execute(
    reconcile: &Reconcile<SecurityGroup>,
    seen: &Seen,
    step: Step,
) -> Result<Outcome, ReconcileError> {
    let key = object_key(&*reconcile.obj);
    let services = &reconcile.services;
    let mut outcome = Outcome {
        firewall: seen.firewall.clone(),
        held: seen.held.clone(),
        wrote: None,
    };
    match step {
        Step::Converged => {}
        Step::Create(request) => {
            let made = services
                .firewalls
                .create_security_group(&request)
                .await
                .map_err(ReconcileError::cloud("create the security group", &key))?;
            let note = format!("created security group {} ({})", made.name, made.id);
            services.view.firewalls.wrote(&made.id);
            outcome.firewall = Some(made);
            outcome.wrote = Some(("Created", note));
        }
        Step::Describe { id, description } => {
            // Marked before the write: a listing taken meanwhile never vouches for it.
            services.view.firewalls.wrote(&id);
            let (described, wrote) = set_description(reconcile, &id, &description, &key).await?;
            outcome.firewall = Some(described);
            outcome.wrote = Some(wrote);
        }
        Step::AddressGroups(writes) => {
            let note = address_groups(reconcile, &mut outcome.held, writes, &key).await?;
            outcome.wrote = Some(("AddressesChanged", note));
        }
        Step::Rules { create, delete } => {
            let firewall = outcome.firewall.get_or_insert_with(Firewall::default);
            services.view.firewalls.wrote(&firewall.id);
            let names = address_group_names(&reconcile.obj, &outcome.held);
            let note = rules(services, firewall, create, delete, &names, &key).await?;
            outcome.wrote = Some(("RulesChanged", note));
        }
        Step::DropAddressGroups(unused) => {
            let note = drop_unused(services, &mut outcome.held, &unused, &key).await?;
            outcome.wrote = Some(("AddressGroupsDeleted", note));
        }
    }
    Ok(outcome)
}

/// The owner record (and free text) written on the group; `Imported` when it was
/// not the object's before.
async fn set_description(
    reconcile: &Reconcile<SecurityGroup>,
    id: &str,
    description: &str,
    key: &str,
) -> Result<(Firewall, (&'static str, String)), ReconcileError> {
    let described = reconcile
        .services
        .firewalls
        .set_security_group_description(id, description)
        .await
        .map_err(ReconcileError::cloud("update the security group", key))?;
    let recorded = reconcile.obj.status.as_ref().and_then(|s| s.id.as_deref());
    let wrote = match recorded != Some(id) {
        true => (
            "Imported",
            format!("took over security group {} ({id})", described.name),
        ),
        false => (
            "Updated",
            format!("set the description of security group {}", described.name),
        ),
    };
    Ok((described, wrote))
}

/// Deletes the address groups no rule names any more.
async fn drop_unused(
    services: &Services,
    held: &mut Vec<Held>,
    unused: &[Held],
    key: &str,
) -> Result<String, ReconcileError> {
    for gone in unused {
        ignore_not_found(services.firewalls.delete_address_group(&gone.id).await).map_err(
            ReconcileError::cloud("delete an address group no rule names", key),
        )?;
        held.retain(|h| h.id != gone.id);
    }
    let names: Vec<_> = unused.iter().map(|h| h.group.as_str()).collect();
    Ok(format!(
        "deleted the address groups of {}: no rule names them",
        names.join(", ")
    ))
}

fn address_group_names(obj: &SecurityGroup, held: &[Held]) -> BTreeMap<String, String> {
    held.iter()
        .map(|h| (h.id.clone(), address_group_name(&obj.name_any(), &h.group)))
        .collect()
}

/// Makes the address groups and brings their addresses to the replicas'.
async fn address_groups(
    reconcile: &Reconcile<SecurityGroup>,
    held: &mut Vec<Held>,
    writes: Vec<AddressWrite>,
    key: &str,
) -> Result<String, ReconcileError> {
    let firewalls = &reconcile.services.firewalls;
    let mut notes = Vec::new();
    for write in writes {
        match write {
            AddressWrite::Create { group, request } => {
                let made = firewalls
                    .create_address_group(&request)
                    .await
                    .map_err(ReconcileError::cloud("create an address group", key))?;
                notes.push(format!(
                    "created address group {} with {} addresses",
                    made.name,
                    made.addresses.len()
                ));
                held.push(Held {
                    group,
                    id: made.id,
                    addresses: made.addresses,
                });
            }
            AddressWrite::Change {
                group,
                id,
                add,
                addresses,
            } => {
                let verb = if add { "added" } else { "removed" };
                notes.push(format!(
                    "{verb} {} in the address group of {group}",
                    addresses.join(", ")
                ));
                let now = change(reconcile, &group, &id, add, &addresses, key).await?;
                held.retain(|h| h.id != id);
                if let Some(now) = now {
                    held.push(Held {
                        group,
                        id: now.id,
                        addresses: now.addresses,
                    });
                }
            }
        }
    }
    Ok(notes.join("; "))
}

/// Adds or removes `addresses`: the address group after it (none: it is gone).
async fn change(
    reconcile: &Reconcile<SecurityGroup>,
    group: &str,
    id: &str,
    add: bool,
    addresses: &[String],
    key: &str,
) -> Result<Option<AddressGroup>, ReconcileError> {
    let firewalls = &reconcile.services.firewalls;
    match firewalls.change_addresses(id, add, addresses).await {
        Ok(changed) => Ok(Some(changed)),
        // The status recorded another set than Neutron has (a write whose status was
        // lost: `AddressesAlreadyExist`, `AddressesNotFound`), or the address group is
        // gone: take what Neutron has and go on from there.
        Err(e) if refused(&e) => neutron_address_group(reconcile, group, key).await,
        Err(e) => Err(ReconcileError::cloud(
            "change the addresses of an address group",
            key,
        )(e)),
    }
}

fn refused(e: &CloudError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::BadRequest { .. } | ErrorKind::Conflict { .. } | ErrorKind::NotFound { .. }
    )
}

/// The object's address group for `group` as Neutron has it; none: it is to be made.
async fn neutron_address_group(
    reconcile: &Reconcile<SecurityGroup>,
    group: &str,
    key: &str,
) -> Result<Option<AddressGroup>, ReconcileError> {
    let name = address_group_name(&reconcile.obj.name_any(), group);
    let listed = reconcile
        .services
        .firewalls
        .address_groups_named(&name)
        .await
        .map_err(ReconcileError::cloud("list the address groups", key))?;
    let record = super::record(reconcile);
    Ok(listed
        .into_iter()
        .find(|a| carries(&a.description, &record)))
}

/// New rules first, then the ones no longer declared.
async fn rules(
    services: &Services,
    firewall: &mut Firewall,
    create: Vec<CreateRule>,
    delete: Vec<String>,
    names: &BTreeMap<String, String>,
    key: &str,
) -> Result<String, ReconcileError> {
    let mut notes = Vec::new();
    for request in create {
        match services.firewalls.create_rule(&request).await {
            Ok(made) => firewall.security_group_rules.push(made),
            // Made by a round whose answer was lost: the next look finds it.
            Err(e) if matches!(e.kind(), ErrorKind::Conflict { .. }) => {}
            Err(e) => {
                return Err(ReconcileError::cloud("create a security group rule", key)(
                    e,
                ));
            }
        }
        notes.push(format!("created rule {}", describe(&request.shape, names)));
    }
    for id in delete {
        let gone = firewall
            .security_group_rules
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.shape());
        ignore_not_found(services.firewalls.delete_rule(&id).await)
            .map_err(ReconcileError::cloud("delete a security group rule", key))?;
        firewall.security_group_rules.retain(|r| r.id != id);
        if let Some(shape) = gone {
            notes.push(format!("deleted rule {}", describe(&shape, names)));
        }
    }
    Ok(notes.join("; "))
}
