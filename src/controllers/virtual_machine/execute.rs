//! The only cloud writes of the VirtualMachine controller: carry out one planned step
//! and say what it means for status, events and the next look.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use verda_api::conditions::Status;
use verda_api::v1alpha1::{ResolvedReferences, VirtualMachine};

use crate::cloud::ids::{FlavorId, ServerId};
use crate::cloud::model::compute::CreateServer;
use crate::cloud::owner::Owner;
use crate::cloud::{Compute, MetadataMode, ignore_not_found};
use crate::controllers::virtual_machine::network_ports;
use crate::controllers::virtual_machine::observe::Observed;
use crate::controllers::virtual_machine::plan::Step;
use crate::controllers::virtual_machine::power::{self, PowerStep};
use crate::controllers::virtual_machine::stale_holders;
use crate::controllers::virtual_machine::volumes::plan::VolumeStep;
use crate::runtime::object::object_key;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

pub use crate::controllers::virtual_machine::outcome::{Outcome, PROVISIONING, provisioning};

/// Carries out `step`.
pub async fn run(
    ctx: &Context,
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
    observed: &Observed,
    step: Step,
) -> Result<Outcome, ReconcileError> {
    let key = owner.key();
    let compute = tenant.services.compute();
    let compute = compute.as_ref();
    let poll = ctx.timing.poll;
    let kept = crate::controllers::virtual_machine::plan::keeper(vm, &observed.servers)
        .map(|s| s.id.clone());
    let outcome = match step {
        Step::Create => match &observed.create {
            Some(request) => create(ctx, tenant, vm, owner, request, observed).await?,
            // Observed without a server only in a look that did not prepare one: look again.
            None => provisioning(None, "preparing the server's create request".into(), poll),
        },
        Step::DeleteDuplicates(ids) => Outcome {
            event: Some(delete_duplicates(compute, &ids, &key).await?),
            ..provisioning(kept, "removing duplicate servers".into(), poll)
        },
        Step::ReportError {
            reason,
            message,
            first,
            retry_in,
        } => Outcome {
            server_id: kept,
            ready: (Status::False, reason, message.clone()),
            event: first.then_some((EventType::Warning, reason, message)),
            requeue: retry_in.max(poll),
            dns: None,
        },
        Step::ReplaceErrored(id) => replace_errored(compute, &id, &key, poll).await?,
        Step::Wait => provisioning(kept, "waiting for the server to become ACTIVE".into(), poll),
        Step::Resize(id, flavor) => resize(compute, vm, id, &flavor, poll).await?,
        Step::ConfirmResize(id) => confirm_resize(compute, vm, id, poll).await?,
        Step::UpdateDescription(id, description) => {
            update_description(compute, id, description.as_deref(), &key).await?
        }
        Step::SetMetadata(id, metadata) => {
            let mode = MetadataMode::Replace;
            set_metadata(compute, vm, observed, id, metadata, mode, &key).await?
        }
        Step::MergeMetadata(id, metadata) => {
            let mode = MetadataMode::Merge;
            set_metadata(compute, vm, observed, id, metadata, mode, &key).await?
        }
        Step::RecordOwner(id, tags) => record_owner(compute, id, &tags, &key).await?,
        Step::Volume(step) => volume_step(ctx, tenant, observed, (kept, &key), step).await?,
        Step::Port(step) => port_step(ctx, tenant, observed, (kept, &key), step).await?,
        Step::Power(step) => power(compute, step, &key, poll).await?,
        Step::Converged => converged(vm, observed, kept, ctx.timing.resync),
    };
    Ok(outcome)
}

async fn update_description(
    compute: &dyn Compute,
    id: ServerId,
    description: Option<&str>,
    key: &str,
) -> Result<Outcome, ReconcileError> {
    compute
        .update_server(&id, description)
        .await
        .map_err(ReconcileError::cloud("update the server description", key))?;
    Ok(provisioning(
        Some(id),
        "updating the server".into(),
        Duration::ZERO,
    ))
}

/// Adds the tags of the owner record the server lacks (to its own).
async fn record_owner(
    compute: &dyn Compute,
    id: ServerId,
    tags: &[String],
    key: &str,
) -> Result<Outcome, ReconcileError> {
    compute
        .set_server_tags(&id, tags)
        .await
        .map_err(ReconcileError::cloud("tag the server with its owner", key))?;
    Ok(provisioning(
        Some(id),
        "recording the owner on the server".into(),
        Duration::ZERO,
    ))
}

/// A data volume attached to another server: waited for, or let go of when Nova no
/// longer has that server.
async fn held_volume(
    ctx: &Context,
    (tenant, compute, kept): (&Tenant, &dyn Compute, Option<ServerId>),
    observed: &Observed,
    key: &str,
    step: VolumeStep,
) -> Result<Outcome, ReconcileError> {
    let poll = ctx.timing.poll;
    let (
        VolumeStep::Held {
            name,
            id,
            holder,
            attachment,
        },
        Some(look),
    ) = (step, &observed.volumes)
    else {
        return Ok(provisioning(kept, "looking at the volumes".into(), poll));
    };
    let held = stale_holders::HeldVolume {
        name,
        id,
        holder,
        attachment,
        owner: look.owner.clone(),
    };
    let view = ctx.view.of(tenant);
    let lookup = holder_lookup(ctx, compute, &view, key);
    let cinder = tenant.services.block_storage();
    stale_holders::volume(&lookup, cinder.as_ref(), held, (kept, poll)).await
}

/// How a VirtualMachine asks whether the server holding its volume or port exists.
fn holder_lookup<'a>(
    ctx: &Context,
    compute: &'a dyn Compute,
    view: &'a crate::caches::cloud_view::ProjectView,
    key: &'a str,
) -> stale_holders::Lookup<'a> {
    stale_holders::Lookup {
        compute,
        view,
        fresh: ctx.timing.resync,
        retry: ctx.timing.terminal_retry,
        key,
    }
}

/// A data volume step, acting on the kept server.
async fn volume_step(
    ctx: &Context,
    tenant: &Tenant,
    observed: &Observed,
    (server, key): (Option<ServerId>, &str),
    step: VolumeStep,
) -> Result<Outcome, ReconcileError> {
    if let VolumeStep::Held { .. } = step {
        let compute = tenant.services.compute();
        let target = (tenant, compute.as_ref(), server);
        return held_volume(ctx, target, observed, key, step).await;
    }
    let (cinder, compute) = (tenant.services.block_storage(), tenant.services.compute());
    let view = ctx.view.of(tenant);
    let target = crate::controllers::virtual_machine::volumes::execute::Target {
        cinder: cinder.as_ref(),
        view: &view,
        resync: ctx.timing.resync,
        compute: compute.as_ref(),
        server,
        key,
        poll: ctx.timing.poll,
        slow: ctx.timing.terminal_retry,
    };
    crate::controllers::virtual_machine::volumes::execute::run(&target, step).await
}

/// A declared-port step; the server (if any) waits on it.
async fn port_step(
    ctx: &Context,
    tenant: &Tenant,
    observed: &Observed,
    (server, key): (Option<ServerId>, &str),
    step: network_ports::plan::PortStep,
) -> Result<Outcome, ReconcileError> {
    use network_ports::plan::PortStep;
    let neutron = tenant.services.network(None);
    let view = ctx.view.of(tenant);
    let record = observed.ports.as_ref().map_or("", |l| l.record.as_str());
    let poll = ctx.timing.poll;
    if let PortStep::Held { id, holder } = &step {
        let compute = tenant.services.compute();
        let lookup = holder_lookup(ctx, compute.as_ref(), &view, key);
        let forget = || view.network_ports.forget(record);
        let (message, cleared) =
            stale_holders::port(&lookup, neutron.as_ref(), (id, holder), forget).await?;
        let requeue = if cleared.is_some() {
            Duration::ZERO
        } else {
            poll
        };
        return Ok(Outcome {
            event: cleared.map(|n| (EventType::Warning, "StaleBindingCleared", n)),
            ..provisioning(server, message, requeue)
        });
    }
    let message = match &step {
        PortStep::Wait(why) => why.clone(),
        other => other.describe(),
    };
    let writes = step.writes();
    let memory = (&view.network_ports, record);
    let note = network_ports::execute::run(neutron.as_ref(), memory, step, key).await?;
    Ok(Outcome {
        event: note.map(|n| (EventType::Normal, "PortReady", n)),
        ..provisioning(server, message, if writes { Duration::ZERO } else { poll })
    })
}

/// Creates the server; the event says whether it replaces one deleted behind the
/// operator's back.
/// Records the resolved references in status, then creates the server from the
/// request `observe` finished.
async fn create(
    ctx: &Context,
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
    request: &CreateServer,
    observed: &Observed,
) -> Result<Outcome, ReconcileError> {
    let key = owner.key();
    if let Some(resolved) = &observed.resolved {
        record_resolved(ctx, vm, resolved).await?;
    }
    let created = tenant.services.compute().create_server(request).await;
    if let (Err(_), Some(look)) = (&created, &observed.ports) {
        // Nova may have refused a port gone or bound elsewhere: Neutron says next.
        ctx.view.of(tenant).network_ports.forget(&look.record);
    }
    let id = created.map_err(ReconcileError::cloud("create server", &key))?;
    let recorded = vm.status.as_ref().and_then(|s| s.server_id.clone());
    let event = match recorded {
        Some(old) => (
            EventType::Warning,
            "Recreated",
            format!(
                "server {old} no longer exists (deleted outside Kubernetes?); created server {id}"
            ),
        ),
        None => (EventType::Normal, "Created", format!("created server {id}")),
    };
    Ok(Outcome {
        event: Some(event),
        ..provisioning(
            Some(id.clone()),
            format!("server {id} is being created"),
            ctx.timing.poll,
        )
    })
}

/// Writes `status.resolved`.
async fn record_resolved(
    ctx: &Context,
    vm: &VirtualMachine,
    resolved: &ResolvedReferences,
) -> Result<(), ReconcileError> {
    let api: Api<VirtualMachine> =
        Api::namespaced(ctx.client.clone(), &vm.namespace().unwrap_or_default());
    let patch = serde_json::json!({"status": {"resolved": resolved}});
    api.patch_status(
        &vm.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(drop)
    .map_err(ReconcileError::kube(
        "record the resolved image, flavor and networks",
        &object_key(vm),
    ))
}

/// Deletes the servers a crash between create and status write left beside the kept
/// one; returns the event that names them.
async fn delete_duplicates(
    compute: &dyn Compute,
    ids: &[ServerId],
    key: &str,
) -> Result<(EventType, &'static str, String), ReconcileError> {
    for id in ids {
        ignore_not_found(compute.delete_server(id).await)
            .map_err(ReconcileError::cloud("delete a duplicate server", key))?;
    }
    let list = crate::cloud::ids::joined(ids);
    Ok((
        EventType::Warning,
        "DuplicateDeleted",
        format!("deleted duplicate servers {list}"),
    ))
}

/// Deletes a server in ERROR so that the next look creates a new one.
async fn replace_errored(
    compute: &dyn Compute,
    id: &ServerId,
    key: &str,
    poll: Duration,
) -> Result<Outcome, ReconcileError> {
    ignore_not_found(compute.delete_server(id).await)
        .map_err(ReconcileError::cloud("delete the failed server", key))?;
    Ok(Outcome {
        event: Some((
            EventType::Normal,
            "Replacing",
            format!("deleted server {id} in ERROR; a new one follows"),
        )),
        ..provisioning(
            None,
            format!("replacing server {id}, which was in ERROR"),
            poll,
        )
    })
}

/// Asks Nova to move the server to the spec's flavor.
async fn resize(
    compute: &dyn Compute,
    vm: &VirtualMachine,
    id: ServerId,
    flavor: &FlavorId,
    poll: Duration,
) -> Result<Outcome, ReconcileError> {
    compute
        .resize_server(&id, flavor)
        .await
        .map_err(ReconcileError::cloud("resize server", &object_key(vm)))?;
    let event = format!("resizing server {id} to flavor {}", vm.spec.flavor);
    Ok(Outcome {
        event: Some((EventType::Normal, "Resizing", event)),
        ..provisioning(
            Some(id),
            format!("resizing to flavor {}", vm.spec.flavor),
            poll,
        )
    })
}

/// Confirms a resize Nova finished (VERIFY_RESIZE).
async fn confirm_resize(
    compute: &dyn Compute,
    vm: &VirtualMachine,
    id: ServerId,
    poll: Duration,
) -> Result<Outcome, ReconcileError> {
    compute
        .confirm_resize(&id)
        .await
        .map_err(ReconcileError::cloud("confirm the resize", &object_key(vm)))?;
    let event = format!("server {id} now runs flavor {}", vm.spec.flavor);
    Ok(Outcome {
        event: Some((EventType::Normal, "Resized", event)),
        ..provisioning(Some(id), "confirming the resize".into(), poll)
    })
}

/// Ready: the server is where the spec and its run strategy want it.
fn converged(
    vm: &VirtualMachine,
    observed: &Observed,
    kept: Option<ServerId>,
    resync: Duration,
) -> Outcome {
    let server = kept
        .as_ref()
        .and_then(|id| observed.servers.iter().find(|s| &s.id == id));
    let (reason, message) = match server {
        Some(server) => power::settled(server, power::strategy(vm)),
        None => ("Active", "server is ACTIVE".to_owned()),
    };
    Outcome {
        server_id: kept,
        ready: (Status::True, reason, message),
        event: None,
        requeue: resync,
        dns: None,
    }
}

/// Starts or stops the server, or holds it out of the pools before a stop.
async fn power(
    compute: &dyn Compute,
    step: PowerStep,
    key: &str,
    poll: Duration,
) -> Result<Outcome, ReconcileError> {
    let (id, start) = match step {
        PowerStep::Drain(id) => {
            let message = format!(
                "server {id} leaves the load balancers' pools before it is stopped (runStrategy Halted)"
            );
            return Ok(Outcome {
                server_id: Some(id),
                ready: (Status::False, power::HALTING, message),
                event: None,
                requeue: poll,
                dns: None,
            });
        }
        PowerStep::Pending(id, task) => {
            return Ok(provisioning(
                Some(id.clone()),
                format!("server {id} is {task}"),
                poll,
            ));
        }
        PowerStep::Start(id) => (id, true),
        PowerStep::Stop(id) => (id, false),
    };
    let what = if start {
        "start the server"
    } else {
        "stop the server"
    };
    compute
        .set_server_power(&id, start)
        .await
        .map_err(ReconcileError::cloud(what, key))?;
    let event = match start {
        true => (
            EventType::Warning,
            "Started",
            format!(
                "server {id} was found SHUTOFF (stopped outside Kubernetes?); started it (runStrategy Always)"
            ),
        ),
        false => (
            EventType::Normal,
            "Stopped",
            format!("stopped server {id}; its volumes and addresses are kept (runStrategy Halted)"),
        ),
    };
    let doing = if start { "starting" } else { "stopping" };
    Ok(Outcome {
        event: Some(event),
        ..provisioning(Some(id.clone()), format!("{doing} server {id}"), poll)
    })
}

/// Writes the server's metadata (`Merge` keeps what an imported server came with), and
/// reports it as drift when the spec had already been applied.
async fn set_metadata(
    compute: &dyn Compute,
    vm: &VirtualMachine,
    observed: &Observed,
    id: ServerId,
    metadata: BTreeMap<String, String>,
    mode: MetadataMode,
    key: &str,
) -> Result<Outcome, ReconcileError> {
    compute
        .set_server_metadata(&id, &metadata, mode)
        .await
        .map_err(ReconcileError::cloud("update the server metadata", key))?;
    let before = observed
        .servers
        .iter()
        .find(|s| s.id == id)
        .map(|s| s.metadata.clone())
        .unwrap_or_default();
    Ok(Outcome {
        event: drift_event(
            "metadata",
            &crate::controllers::virtual_machine::plan::changed_keys(&before, &metadata),
            vm,
        ),
        ..provisioning(Some(id), "updating the server".into(), Duration::ZERO)
    })
}

/// A `DriftCorrected` warning when the spec had already been applied (so the cloud was
/// changed outside Kubernetes), naming what changed; `None` after a spec edit.
pub fn drift_event(
    what: &str,
    changed: &str,
    vm: &VirtualMachine,
) -> Option<(EventType, &'static str, String)> {
    let applied = vm
        .status
        .as_ref()
        .is_some_and(|s| s.observed_generation == vm.metadata.generation);
    applied.then(|| {
        (
            EventType::Warning,
            "DriftCorrected",
            format!("server {what} differed from the spec (changed outside Kubernetes?): {changed}; restored"),
        )
    })
}

/// What a paused object reports instead of carrying out `step`.
pub fn paused(vm: &VirtualMachine, observed: &Observed, step: &Step, resync: Duration) -> Outcome {
    let kept = crate::controllers::virtual_machine::plan::keeper(vm, &observed.servers)
        .map(|s| s.id.clone());
    Outcome {
        server_id: kept,
        ready: crate::runtime::lifecycle::paused_ready(&step.describe()),
        event: None,
        requeue: resync,
        dns: None,
    }
}
