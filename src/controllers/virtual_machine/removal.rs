//! What deleting a VirtualMachine does to its server, as its reconcile policy says:
//! delete it, take the operator's records off it, or leave it as it is.

use std::sync::Arc;
use std::time::Duration;

use verda_api::v1alpha1::VirtualMachine;
use verda_api::v1alpha1::annotations::RECONCILE_POLICY;

use crate::cloud::model::compute::Server;
use crate::cloud::owner::Owner;
use crate::cloud::owner::{without_owner_metadata, without_ownership};
use crate::cloud::{Compute, MetadataMode};
use crate::controllers::dns_records;
use crate::controllers::virtual_machine::network_ports;
use crate::controllers::virtual_machine::volumes::removal::Left;
use crate::runtime::lifecycle::Removal;
use crate::runtime::object::object_key;
use crate::runtime::reconciler::Cleanup;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

/// Deletes every server of the owner (or, detaching, takes the owner's records off
/// them); done when none carries the owner's tag.
pub async fn cleanup(
    vm: Arc<VirtualMachine>,
    ctx: Arc<Context>,
    removal: Removal,
) -> Result<Cleanup, ReconcileError> {
    let key = object_key(&*vm);
    let (tenant, detach) = match removal {
        Removal::Abandon => {
            let server = vm.status.as_ref().and_then(|s| s.server_id.clone());
            finished(
                &ctx,
                &vm,
                "Abandoned",
                match server {
                    Some(id) => format!("server {id} was left as it is ({RECONCILE_POLICY} skip)"),
                    None => format!("nothing was deleted in the cloud ({RECONCILE_POLICY} skip)"),
                },
            )
            .await;
            return Ok(Cleanup::Done);
        }
        Removal::Delete(tenant) => (tenant, false),
        Removal::Detach(tenant) => (tenant, true),
    };
    let owner = ctx.owner_of(&*vm);
    let dns = tenant.services.dns(None);
    let reported = vm.status.as_ref().map_or(&[][..], |s| &s.dns[..]);
    let record = network_ports::record(&ctx, &vm, &owner);
    let project = ctx.view.of(&tenant);
    let designate = dns_records::Designate::new(dns.as_ref(), &project, &ctx);
    let released = || dns_records::released(designate, &vm.spec.dns, reported, &record, &key);
    if !detach && !released().await? {
        return Ok(Cleanup::Wait(ctx.timing.poll));
    }
    let compute = tenant.services.compute();
    let servers = compute
        .list_servers(&owner.uid)
        .await
        .map_err(ReconcileError::cloud("list servers", &key))?;
    if servers.is_empty() {
        ctx.view.of(&tenant).servers.removed(&owner.uid);
        return gone(&ctx, &vm, &tenant, &owner, detach).await;
    }
    ctx.view.of(&tenant).servers.forget(&owner);
    if detach {
        for server in &servers {
            detach_server(compute.as_ref(), server, &key).await?;
        }
        return Ok(Cleanup::Wait(Duration::ZERO));
    }
    // A server Nova is already deleting needs no second request.
    for server in servers
        .iter()
        .filter(|s| s.task_state.as_deref() != Some("deleting"))
    {
        crate::cloud::ignore_not_found(compute.delete_server(&server.id).await)
            .map_err(ReconcileError::cloud("delete server", &key))?;
    }
    Ok(Cleanup::Wait(ctx.timing.poll))
}

/// No server is left: the volumes go (or stay) as the retention says, then an event
/// tells what became of everything.
async fn gone(
    ctx: &Context,
    vm: &VirtualMachine,
    tenant: &Tenant,
    owner: &Owner,
    detach: bool,
) -> Result<Cleanup, ReconcileError> {
    let volumes = match volumes_left(ctx, vm, tenant, owner, detach).await? {
        Left::Wait => return Ok(Cleanup::Wait(ctx.timing.poll)),
        Left::Done(note) => note,
    };
    let ports = if crate::controllers::virtual_machine::network_ports::wanted(vm) {
        let neutron = tenant.services.network(None);
        let key = object_key(vm);
        let record = crate::controllers::virtual_machine::network_ports::record(ctx, vm, owner);
        // Kept, detached or deleted: whoever takes the record next asks Neutron.
        ctx.view.of(tenant).network_ports.forget(&record);
        let left = crate::controllers::virtual_machine::network_ports::removal::ports(
            neutron.as_ref(),
            vm,
            record,
            detach,
            &key,
        );
        match left.await? {
            None => return Ok(Cleanup::Wait(ctx.timing.poll)),
            Some(note) => note,
        }
    } else {
        String::new()
    };
    let note = match (detach, vm.status.as_ref().and_then(|s| s.server_id.clone())) {
        (true, Some(id)) => format!(
            "server {id} keeps running without the operator's records ({RECONCILE_POLICY} detach-on-delete)"
        ),
        (true, None) => "no server to detach".to_owned(),
        (false, _) => "server deleted".to_owned(),
    };
    let note = [note, volumes, ports]
        .into_iter()
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    finished(ctx, vm, if detach { "Detached" } else { "Deleted" }, note).await;
    Ok(Cleanup::Done)
}

/// With the server gone: the data volumes, as the object's retention says.
async fn volumes_left(
    ctx: &Context,
    vm: &VirtualMachine,
    tenant: &Tenant,
    owner: &Owner,
    detach: bool,
) -> Result<Left, ReconcileError> {
    if !crate::controllers::virtual_machine::volumes::wanted(vm) {
        return Ok(Left::Done(String::new()));
    }
    let volume_owner = crate::controllers::virtual_machine::volumes::volume_owner(ctx, vm, owner);
    let cinder = tenant.services.block_storage();
    let key = object_key(vm);
    crate::controllers::virtual_machine::volumes::removal::volumes(
        cinder.as_ref(),
        vm,
        &volume_owner,
        detach,
        &key,
    )
    .await
}

/// Takes the operator's metadata, then its tags (how it is found), off a server.
async fn detach_server(
    compute: &dyn Compute,
    server: &Server,
    key: &str,
) -> Result<(), ReconcileError> {
    let metadata = without_owner_metadata(&server.metadata);
    crate::cloud::ignore_not_found(
        compute
            .set_server_metadata(&server.id, &metadata, MetadataMode::Replace)
            .await
            .map(drop),
    )
    .map_err(ReconcileError::cloud("remove the owner metadata", key))?;
    crate::cloud::ignore_not_found(
        compute
            .set_server_tags(&server.id, &without_ownership(&server.tags))
            .await
            .map(drop),
    )
    .map_err(ReconcileError::cloud("remove the owner tags", key))
}

/// The last word on a VirtualMachine leaving: its gauges go, an event says what became
/// of its server.
async fn finished(ctx: &Context, vm: &VirtualMachine, reason: &str, note: String) {
    crate::runtime::lifecycle::removal_finished(ctx, vm, reason, note).await;
}
