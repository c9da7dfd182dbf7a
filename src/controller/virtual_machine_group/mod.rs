//! The VirtualMachineGroup controller: a Nova server group and `replicas` owned
//! VirtualMachines.
//!
//! `resolve` (server group, owned VirtualMachines, LoadBalancers drawing on the group)
//! → `plan` (pure: create / drain / delete) → `apply` (Kubernetes writes only; the
//! VirtualMachine controller owns the servers) → `status`.

pub mod apply;
pub mod plan;
pub mod resolve;
pub mod status;

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use verda_api::v1alpha1::{
    ReconcilePolicy, UpdateStrategy, VirtualMachine, VirtualMachineGroup, finalizers,
};

use super::driver::{
    Cleanup, Managed, error_policy, managed_kind, object_key, object_labels, publish,
    reconcile_with,
};
use super::lifecycle::{Removal, TEMPLATE_IMPORT};
use super::progress;
use super::status_patch::write_status;
use super::tenancy::Tenant;
use super::watch_cache::Feeds;
use super::{Context, ReconcileError};
use crate::cloud::owner::is_server_group_of;

managed_kind!(
    VirtualMachineGroup,
    "virtualmachinegroup",
    finalizers::VIRTUAL_MACHINE_GROUP
);

/// The controller: its VirtualMachines and the LoadBalancers drawing on it wake it.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    woken: BoxStream<'static, ObjectRef<VirtualMachineGroup>>,
) -> impl Future<Output = ()> + use<> {
    let caches = ctx.caches.current();
    Controller::for_stream(feeds.groups.subscribe(), caches.groups.store)
        .reconcile_on(woken)
        .owns_stream(feeds.virtual_machines.subscribe())
        .watches_stream(feeds.load_balancers.subscribe(), |lb| {
            let ns = lb.namespace().unwrap_or_default();
            lb.spec
                .ports
                .iter()
                .filter_map(|p| p.real_servers.virtual_machine_group_ref.clone())
                .map(|name| ObjectRef::new(&name).within(&ns))
                .collect::<Vec<_>>()
        })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
}

pub async fn reconcile(
    group: Arc<VirtualMachineGroup>,
    ctx: Arc<Context>,
) -> Result<Action, ReconcileError> {
    reconcile_with(group, ctx, apply_spec, cleanup).await
}

async fn apply_spec(
    group: Arc<VirtualMachineGroup>,
    ctx: Arc<Context>,
    tenant: Tenant,
    policy: ReconcilePolicy,
) -> Result<Action, ReconcileError> {
    refuse_template_import(&group)?;
    let owner = ctx.owner_of(&*group);
    let compute = tenant.ports.compute();
    let server_group =
        resolve::ensure_server_group(compute.as_ref(), &group, &owner, policy.writes()).await?;
    let caches = ctx.caches.current();
    let vms = resolve::owned_vms(&caches, &group).await;
    let lbs = resolve::referencing_lbs(&caches, &group).await;
    let members = resolve::members(&group, &vms, &lbs);
    let hash =
        plan::template_hash(&serde_json::to_string(&group.spec.template).unwrap_or_default());
    let now = Timestamp::now();
    let plan = plan::plan(
        group.spec.replicas.max(0) as u32,
        &hash,
        group.spec.update_strategy == UpdateStrategy::RollingUpdate,
        &members,
        !lbs.is_empty(),
        ctx.timing.drain_timeout,
        now,
    );
    // Paused: no VirtualMachine comes or goes (they are paused too, by the annotation).
    let writes = if policy.writes() {
        let writes = apply::run(&ctx.client, &group, &plan, &hash, server_group.as_ref()).await?;
        for (reason, note) in plan.events(&group.name_any()) {
            publish(&ctx, &*group, EventType::Normal, reason, note, "Scale").await;
        }
        writes
    } else {
        0
    } + apply::align_credentials(&ctx.client, &group, &vms).await?
        + apply::align_policy(&ctx.client, &group, &vms).await?;
    let mut status = status::next_status(&group, &vms, &members, &hash, server_group.as_ref(), now);
    status.project_id = Some(tenant.project.clone());
    progress::summarise(
        &mut status.conditions,
        policy,
        group.metadata.generation,
        now,
    );
    if group.status.as_ref() != Some(&status) {
        write_status(&ctx.client, &*group, &status).await?;
    }
    record_metrics(&ctx, &group, &status);
    let converged = writes == 0
        && verda_api::conditions::is_true(&status.conditions, verda_api::conditions::READY);
    Ok(Action::requeue(if converged || !policy.writes() {
        ctx.timing.resync
    } else {
        ctx.timing.poll
    }))
}

/// A template naming a server to import would have every replica take over that one
/// server: refused, with what to do instead.
fn refuse_template_import(group: &VirtualMachineGroup) -> Result<(), ReconcileError> {
    if group.spec.template.import.is_none() {
        return Ok(());
    }
    Err(ReconcileError::Invalid {
        object: object_key(group),
        reason: TEMPLATE_IMPORT,
        message: "spec.template.import: the replicas of a group cannot all take over one \
                  server; remove it, and import the server with a VirtualMachine of its own"
            .to_owned(),
    })
}

fn record_metrics(
    ctx: &Context,
    group: &VirtualMachineGroup,
    status: &verda_api::v1alpha1::VirtualMachineGroupStatus,
) {
    let labels = object_labels(group);
    ctx.metrics
        .group_desired_replicas
        .get_or_create(&labels)
        .set(group.spec.replicas.into());
    ctx.metrics
        .group_ready_replicas
        .get_or_create(&labels)
        .set(status.ready_replicas.into());
    ctx.metrics.set_object_conditions(
        VirtualMachineGroup::CONTROLLER,
        &labels,
        Some(&status.conditions),
    );
}

/// Deletes the VirtualMachines (their controller deletes, detaches or leaves the
/// servers, as the group's policy, which they carry, says), then the server group once
/// they are all gone — unless the group detaches or is paused: the server group then
/// stays with the servers.
async fn cleanup(
    group: Arc<VirtualMachineGroup>,
    ctx: Arc<Context>,
    removal: Removal,
) -> Result<Cleanup, ReconcileError> {
    let key = object_key(&*group);
    let vms = resolve::owned_vms(&ctx.caches.current(), &group).await;
    if !vms.is_empty() {
        // They must carry the group's policy when their deletion is decided.
        if apply::align_policy(&ctx.client, &group, &vms).await? > 0 {
            return Ok(Cleanup::Wait(ctx.timing.poll));
        }
        let api: Api<VirtualMachine> =
            Api::namespaced(ctx.client.clone(), &group.namespace().unwrap_or_default());
        for vm in vms
            .iter()
            .filter(|vm| vm.metadata.deletion_timestamp.is_none())
        {
            apply::ignore_missing(
                api.delete(&vm.name_any(), &DeleteParams::background())
                    .await
                    .map(drop),
            )
            .map_err(ReconcileError::kube("delete a VirtualMachine", &key))?;
        }
        return Ok(Cleanup::Wait(ctx.timing.poll));
    }
    if let Removal::Delete(tenant) = removal {
        let owner = ctx.owner_of(&*group);
        let compute = tenant.ports.compute();
        let groups = compute
            .list_server_groups()
            .await
            .map_err(ReconcileError::cloud("list server groups", &key))?;
        for sg in groups
            .iter()
            .filter(|g| is_server_group_of(&g.name, &owner.uid))
        {
            crate::cloud::ignore_not_found(compute.delete_server_group(&sg.id).await)
                .map_err(ReconcileError::cloud("delete the server group", &key))?;
        }
    }
    let labels = object_labels(&*group);
    ctx.metrics.group_desired_replicas.remove(&labels);
    ctx.metrics.group_ready_replicas.remove(&labels);
    ctx.metrics
        .set_object_conditions(VirtualMachineGroup::CONTROLLER, &labels, None);
    Ok(Cleanup::Done)
}
