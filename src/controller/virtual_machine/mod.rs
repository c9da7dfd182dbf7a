//! The VirtualMachine controller: one Nova server per object.
//!
//! `resolve` (servers by owner UID, lookups) → `plan` (pure: the next step) → `apply`
//! (the only cloud writes) → `status`. The server is found by the owner's UID before any
//! create and its ID is written to status right after, so a crash anywhere leaves
//! neither a duplicate nor an orphan.

pub mod apply;
pub mod import;
pub mod plan;
mod removal;
pub mod resolve;
pub mod status;

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use verda_api::v1alpha1::{ReconcilePolicy, VirtualMachine, VirtualMachineStatus, finalizers};

use super::driver::{Managed, error_policy, managed_kind, object_labels, publish, reconcile_with};
use super::progress;
use super::status_patch::write_status;
use super::tenancy::Tenant;
use super::watch_cache::Feeds;
use super::{Context, ReconcileError};
use crate::cloud::ids::ServerId;

managed_kind!(
    VirtualMachine,
    "virtualmachine",
    finalizers::VIRTUAL_MACHINE
);

/// The controller: its own changes wake a VirtualMachine, and so does a refresh of the
/// cloud view that found its server changed or gone.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    refreshed: BoxStream<'static, ObjectRef<VirtualMachine>>,
) -> impl Future<Output = ()> + use<> {
    Controller::for_stream(
        feeds.virtual_machines.subscribe(),
        ctx.caches.current().virtual_machines.store,
    )
    .reconcile_on(refreshed)
    .run(reconcile, error_policy, ctx)
    .for_each(|_| futures::future::ready(()))
}

pub async fn reconcile(
    vm: Arc<VirtualMachine>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    reconcile_with(vm, ctx, apply_spec, removal::cleanup).await
}

async fn apply_spec(
    vm: Arc<VirtualMachine>,
    ctx: Arc<Context>,
    tenant: Tenant,
    policy: ReconcilePolicy,
) -> Result<Action, ReconcileError> {
    let owner = ctx.owner_of(&*vm);
    let compute = tenant.ports.compute();
    let view = ctx.view.of(&tenant);
    let now = Timestamp::now();
    let step_for = |observed: &resolve::Observed| {
        plan::plan(
            &vm,
            &owner,
            &observed.servers,
            &observed.flavor,
            ctx.timing.error_replace,
            now,
        )
    };
    let mut observed =
        resolve::observe(&ctx, &view.servers, compute.as_ref(), &vm, &owner, true).await?;
    let mut step = step_for(&observed);
    if step == plan::Step::Create && observed.from_view {
        // Never create (or import) on the view's word: ask Nova itself first.
        observed =
            resolve::observe(&ctx, &view.servers, compute.as_ref(), &vm, &owner, false).await?;
        step = step_for(&observed);
    }
    let outcome = match (&step, &vm.spec.import) {
        (plan::Step::Create, Some(import)) => {
            let id = ServerId::new(import.id.clone());
            import::import(&ctx, &tenant, &vm, &owner, &id, policy.writes()).await?
        }
        _ if step.writes() && !policy.writes() => {
            apply::paused(&vm, &observed, &step, ctx.timing.resync)
        }
        _ => {
            // A create changes nothing a listing could bring back; any other write does.
            if step.writes() && step != plan::Step::Create {
                view.servers.forget(&owner);
            }
            apply::run(&ctx, &tenant, &vm, &owner, &observed, step).await?
        }
    };
    let mut status = status::next_status(&vm, &observed.servers, &outcome, now);
    status.project_id = Some(tenant.project.clone());
    progress::summarise(&mut status.conditions, policy, vm.metadata.generation, now);
    finish(&ctx, &vm, status, outcome.event).await?;
    Ok(Action::requeue(outcome.requeue))
}

/// Writes the status when it changed, records its conditions in the metrics, and
/// publishes the step's event.
async fn finish(
    ctx: &Context,
    vm: &VirtualMachine,
    status: VirtualMachineStatus,
    event: Option<(EventType, &'static str, String)>,
) -> Result<(), ReconcileError> {
    if vm.status.as_ref() != Some(&status) {
        write_status(&ctx.client, vm, &status).await?;
    }
    ctx.metrics.set_object_conditions(
        VirtualMachine::CONTROLLER,
        &object_labels(vm),
        Some(&status.conditions),
    );
    if let Some((type_, reason, note)) = event {
        publish(ctx, vm, type_, reason, note, "Reconcile").await;
    }
    Ok(())
}
