//! The only cloud writes of the VirtualMachine controller: carry out one planned step
//! and say what it means for status, events and the next look.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::runtime::events::EventType;
use verda_api::conditions::Status;
use verda_api::v1alpha1::VirtualMachine;

use super::plan::Step;
use super::resolve::{self, Observed};
use crate::cloud::ids::ServerId;
use crate::cloud::owner::Owner;
use crate::cloud::{Compute, MetadataMode, ignore_not_found};
use crate::controller::tenancy::Tenant;
use crate::controller::{Context, ReconcileError};

/// What a step did.
pub struct Outcome {
    /// The server status should describe (a fresh create has only an ID).
    pub server_id: Option<ServerId>,
    pub ready: (Status, &'static str, String),
    pub event: Option<(EventType, &'static str, String)>,
    pub requeue: Duration,
}

/// The Ready reason while a server is on its way.
pub const PROVISIONING: &str = "Provisioning";

fn provisioning(id: Option<ServerId>, message: String, requeue: Duration) -> Outcome {
    Outcome {
        server_id: id,
        ready: (Status::False, PROVISIONING, message),
        event: None,
        requeue,
    }
}

/// Carries out `step`.
pub async fn run(
    ctx: &Context,
    tenant: &Tenant,
    vm: &VirtualMachine,
    owner: &Owner,
    observed: &Observed,
    step: Step,
) -> Result<Outcome, ReconcileError> {
    let key = format!("{}/{}", owner.namespace, owner.name);
    let compute = tenant.ports.compute();
    let poll = ctx.timing.poll;
    let kept = super::plan::keeper(vm, &observed.servers).map(|s| s.id.clone());
    let outcome = match step {
        Step::Create => {
            let request = resolve::create_request(ctx, tenant, vm, owner).await?;
            let id = compute
                .create_server(&request)
                .await
                .map_err(ReconcileError::cloud("create server", &key))?;
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
            Outcome {
                event: Some(event),
                ..provisioning(
                    Some(id.clone()),
                    format!("server {id} is being created"),
                    poll,
                )
            }
        }
        Step::DeleteDuplicates(ids) => {
            for id in &ids {
                ignore_not_found(compute.delete_server(id).await)
                    .map_err(ReconcileError::cloud("delete a duplicate server", &key))?;
            }
            let list = crate::cloud::ids::joined(&ids);
            Outcome {
                event: Some((
                    EventType::Warning,
                    "DuplicateDeleted",
                    format!("deleted duplicate servers {list}"),
                )),
                ..provisioning(kept, "removing duplicate servers".into(), poll)
            }
        }
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
        },
        Step::ReplaceErrored(id) => {
            ignore_not_found(compute.delete_server(&id).await)
                .map_err(ReconcileError::cloud("delete the failed server", &key))?;
            Outcome {
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
            }
        }
        Step::Wait => provisioning(kept, "waiting for the server to become ACTIVE".into(), poll),
        Step::Resize(id, flavor) => {
            compute
                .resize_server(&id, &flavor)
                .await
                .map_err(ReconcileError::cloud("resize server", &key))?;
            Outcome {
                event: Some((
                    EventType::Normal,
                    "Resizing",
                    format!("resizing server {id} to flavor {}", vm.spec.flavor),
                )),
                ..provisioning(
                    Some(id),
                    format!("resizing to flavor {}", vm.spec.flavor),
                    poll,
                )
            }
        }
        Step::ConfirmResize(id) => {
            compute
                .confirm_resize(&id)
                .await
                .map_err(ReconcileError::cloud("confirm the resize", &key))?;
            Outcome {
                event: Some((
                    EventType::Normal,
                    "Resized",
                    format!("server {id} now runs flavor {}", vm.spec.flavor),
                )),
                ..provisioning(Some(id), "confirming the resize".into(), poll)
            }
        }
        Step::UpdateDescription(id, description) => {
            compute
                .update_server(&id, description.as_deref())
                .await
                .map_err(ReconcileError::cloud("update the server description", &key))?;
            provisioning(Some(id), "updating the server".into(), Duration::ZERO)
        }
        Step::SetMetadata(id, metadata) => {
            let mode = MetadataMode::Replace;
            set_metadata(compute.as_ref(), vm, observed, id, metadata, mode, &key).await?
        }
        Step::MergeMetadata(id, metadata) => {
            let mode = MetadataMode::Merge;
            set_metadata(compute.as_ref(), vm, observed, id, metadata, mode, &key).await?
        }
        Step::Converged => Outcome {
            server_id: kept.clone(),
            ready: (
                Status::True,
                "Active",
                format!(
                    "server {} is ACTIVE",
                    kept.map(|k| k.to_string()).unwrap_or_default()
                ),
            ),
            event: None,
            requeue: ctx.timing.resync,
        },
    };
    Ok(outcome)
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
            &super::plan::changed_keys(&before, &metadata),
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
    let kept = super::plan::keeper(vm, &observed.servers).map(|s| s.id.clone());
    Outcome {
        server_id: kept,
        ready: (
            Status::False,
            crate::controller::lifecycle::PAUSED_READY,
            crate::controller::lifecycle::paused_message(&step.describe()),
        ),
        event: None,
        requeue: resync,
    }
}
