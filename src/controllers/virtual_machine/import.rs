//! Taking over an existing Nova server (`spec.import.id`): checked, then stamped with
//! the owner's tags (how every later reconcile finds it) and metadata. A server another
//! object owns, or whose image or flavor is not the spec's, is reported, never changed.

use kube::runtime::events::EventType;
use verda_api::conditions::Status;
use verda_api::v1alpha1::VirtualMachine;

use crate::cloud::MetadataMode;
use crate::cloud::ids::ServerId;
use crate::cloud::model::compute::Server;
use crate::cloud::owner::{Owner, owned_by_another};
use crate::controllers::virtual_machine::execute::Outcome;
use crate::runtime::lifecycle::{PAUSED_READY, paused_message};
use crate::runtime::problem::Problem;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

/// Checks the server `id` and, when `writes`, takes it over.
pub async fn import(
    ctx: &Context,
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
    id: &ServerId,
    writes: bool,
) -> Result<Outcome, ReconcileError> {
    let server = check(tenant, vm, owner, id).await?;
    if !writes {
        return Ok(Outcome {
            server_id: None,
            ready: (
                Status::False,
                PAUSED_READY,
                paused_message(&format!("take over server {id}")),
            ),
            event: None,
            requeue: ctx.timing.resync,
            dns: None,
        });
    }
    take_over(tenant, vm, owner, &server).await?;
    ctx.view.of(tenant).servers.forget(owner);
    Ok(Outcome {
        server_id: Some(id.clone()),
        ready: (
            Status::False,
            crate::controllers::virtual_machine::execute::PROVISIONING,
            format!("took over server {id}"),
        ),
        event: Some((
            EventType::Normal,
            "Imported",
            format!("took over server {id}; it is managed from now on"),
        )),
        requeue: std::time::Duration::ZERO,
        dns: None,
    })
}

/// The server `id`, when it exists, is nobody else's and runs the spec's image and
/// flavor; otherwise why not, for the object's condition.
async fn check(
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
    id: &ServerId,
) -> Result<Server, ReconcileError> {
    let key = owner.key();
    let refuse = |problem, message: String| ReconcileError::Invalid {
        object: key.clone(),
        problem,
        message,
    };
    let server = match tenant.services.compute().get_server(id).await {
        Ok(server) => server,
        Err(e) if e.is_not_found() => {
            return Err(refuse(
                Problem::ImportNotFound,
                format!(
                    "spec.import.id: server {id} does not exist in project {}; \
                     check the ID with `openstack server show {id}`",
                    tenant.project
                ),
            ));
        }
        Err(e) => return Err(ReconcileError::cloud("read the server to import", &key)(e)),
    };
    if let Some(other) = owned_by_another(&server.tags, &owner.uid) {
        let by = Owner::from_metadata(&server.metadata)
            .map(|o| format!("{}/{} (UID {other})", o.namespace, o.name))
            .unwrap_or_else(|| format!("the object with UID {other}"));
        return Err(refuse(
            Problem::ImportOwnedByAnother,
            format!("spec.import.id: server {id} belongs to {by}; it is not taken over"),
        ));
    }
    if let Some(mismatch) = mismatch(tenant, vm, &server, &key).await? {
        return Err(refuse(
            Problem::ImportMismatch,
            format!(
                "server {id} {mismatch}; it is not resized or replaced, and not taken over until the spec matches"
            ),
        ));
    }
    Ok(server)
}

/// Tags the server with its owner (first: the tags are how the next reconcile finds
/// it, after a crash too — that reconcile merges the metadata if this one could not),
/// then merges the owner metadata and `spec.metadata` into what it has.
async fn take_over(
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
    server: &Server,
) -> Result<(), ReconcileError> {
    let key = owner.key();
    let compute = tenant.services.compute();
    compute
        .set_server_tags(&server.id, &owner.tags_added_to(&server.tags))
        .await
        .map_err(ReconcileError::cloud("tag the imported server", &key))?;
    let metadata = crate::controllers::virtual_machine::plan::desired_metadata(vm, owner);
    compute
        .set_server_metadata(&server.id, &metadata, MetadataMode::Merge)
        .await
        .map_err(ReconcileError::cloud(
            "record the owner on the imported server",
            &key,
        ))?;
    Ok(())
}

/// How the server differs from the spec where only replacing it would help.
async fn mismatch(
    tenant: &Tenant,
    vm: &VirtualMachine,
    server: &Server,
    key: &str,
) -> Result<Option<String>, ReconcileError> {
    let compute = tenant.services.compute();
    let image = compute
        .find_image(&vm.spec.image)
        .await
        .map_err(ReconcileError::cloud("look up the image", key))?;
    if server.image.as_ref().is_some_and(|i| *i != image.id) {
        let running = server
            .image
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        return Ok(Some(format!(
            "runs image {running}, not {} ({}); set spec.image to {running}",
            vm.spec.image, image.id
        )));
    }
    if let Some(current) = &server.flavor {
        let wanted = compute
            .find_flavor(&vm.spec.flavor)
            .await
            .map_err(ReconcileError::cloud("look up the flavor", key))?;
        if !wanted.is_named_by(current) {
            return Ok(Some(format!(
                "runs flavor {current}, not {}; set spec.flavor to {current}",
                vm.spec.flavor
            )));
        }
    }
    Ok(None)
}
