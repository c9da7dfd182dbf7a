//! The LoadBalancer controller: an Octavia load balancer with a listener, pool and
//! health monitor per port, members from a group, VirtualMachines or addresses, and a
//! floating IP for `vipType: public`.
//!
//! `resolve` (backends from Kubernetes, the Octavia tree by owner tag) → `plan` (pure:
//! the one next write) → `apply` (that write) → `status`. VirtualMachine and group
//! changes wake the LoadBalancers that draw on them at once.

pub mod apply;
pub mod desired;
pub mod drift;
pub mod import;
pub mod observe;
pub mod plan;
mod removal;
pub mod resolve;
pub mod status;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{
    LoadBalancer, LoadBalancerStatus, ReconcilePolicy, VirtualMachine, finalizers, labels,
};

use super::driver::{
    Managed, error_policy, managed_kind, object_key, object_labels, publish, reconcile_with,
};
use super::progress;
use super::status_patch::write_status;
use super::tenancy::Tenant;
use super::watch_cache::Feeds;
use super::{Context, ReconcileError};
use crate::cloud::ids::LoadBalancerId;

managed_kind!(LoadBalancer, "loadbalancer", finalizers::LOAD_BALANCER);

/// The controller: VirtualMachines and groups wake the LoadBalancers drawing on them,
/// and a refresh of the cloud view wakes those whose Octavia tree changed.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    refreshed: BoxStream<'static, ObjectRef<LoadBalancer>>,
) -> impl Future<Output = ()> + use<> {
    let lbs = ctx.caches.current().load_balancers.store;
    let by_vm = lbs.clone();
    let by_group = lbs.clone();
    let seen = Mutex::new(HashMap::new());
    let groups = Mutex::new(HashSet::new());
    Controller::for_stream(feeds.load_balancers.subscribe(), lbs)
        .watches_stream(feeds.virtual_machines.subscribe(), move |vm| {
            if !membership_changed(&seen, &vm) {
                return Vec::new();
            }
            drawing_on(&by_vm, vm.namespace(), |rs| resolve::draws_from(rs, &vm))
        })
        .watches_stream(feeds.groups.subscribe(), move |group| {
            // Only a group's coming and going matters here; its members wake the
            // LoadBalancers through the VirtualMachine watch.
            let key = object_key(&group);
            let mut known = groups
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let news = if group.metadata.deletion_timestamp.is_some() {
                known.remove(&key)
            } else {
                known.insert(key)
            };
            if !news {
                return Vec::new();
            }
            let name = group.name_any();
            drawing_on(&by_group, group.namespace(), |rs| {
                rs.virtual_machine_group_ref.as_deref() == Some(name.as_str())
            })
        })
        .reconcile_on(refreshed)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
}

/// What pool membership depends on: the group, the address, and whether it serves.
#[derive(Clone, PartialEq)]
struct Membership {
    group: Option<String>,
    address: Option<String>,
    serving: bool,
}

/// Whether `vm` changed in a way its pools can see since it was last watched: status
/// updates that change none of that wake no LoadBalancer.
fn membership_changed(seen: &Mutex<HashMap<String, Membership>>, vm: &VirtualMachine) -> bool {
    let now = Membership {
        group: vm.labels().get(labels::GROUP).cloned(),
        address: vm.status.as_ref().and_then(|s| s.primary_ip.clone()),
        serving: resolve::serving_backend(vm).is_some(),
    };
    let key = object_key(vm);
    let mut seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if vm.metadata.deletion_timestamp.is_some() {
        // On its way out: pass the change on once, then forget it.
        return seen.remove(&key).is_some_and(|before| before != now);
    }
    seen.insert(key, now.clone()) != Some(now)
}

/// The LoadBalancers of `namespace` with a port whose real servers satisfy `draws`.
fn drawing_on(
    store: &Store<LoadBalancer>,
    namespace: Option<String>,
    draws: impl Fn(&verda_api::v1alpha1::RealServers) -> bool,
) -> Vec<ObjectRef<LoadBalancer>> {
    store
        .state()
        .iter()
        .filter(|lb| lb.namespace() == namespace)
        .filter(|lb| lb.spec.ports.iter().any(|p| draws(&p.real_servers)))
        .map(|lb| ObjectRef::from_obj(&**lb))
        .collect()
}

pub async fn reconcile(lb: Arc<LoadBalancer>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    reconcile_with(lb, ctx, apply_spec, removal::cleanup).await
}

async fn apply_spec(
    lb: Arc<LoadBalancer>,
    ctx: Arc<Context>,
    tenant: Tenant,
    policy: ReconcilePolicy,
) -> Result<Action, ReconcileError> {
    let owner = ctx.owner_of(&*lb);
    let region = lb.spec.region.as_deref();
    let octavia = tenant.ports.load_balancing(region);
    let neutron = tenant.ports.network(region);
    let backends = resolve::backends(&ctx.caches.current(), &lb, &tenant.project).await;
    let project_view = ctx.view.of(&tenant);
    let view = &project_view.load_balancers;
    let sources = observe::Sources {
        octavia: octavia.as_ref(),
        neutron: neutron.as_ref(),
        lb: &lb,
        owner: &owner,
    };
    let now = Timestamp::now();
    let step_for = |observed: &resolve::Observed| {
        plan::plan_holding(
            &lb,
            observed,
            &backends.ports,
            &backends.starting,
            ctx.timing.error_replace,
            now,
        )
    };
    let mut look = observe::look(&sources, view.cached(&owner.uid, ctx.view_max_age())).await?;
    let mut step = step_for(&look.tree);
    if look.from_view && matches!(step, plan::Step::Create(_)) {
        // Never create on the view's word: ask Octavia itself first.
        look = observe::read(&sources).await?;
        step = step_for(&look.tree);
    }
    observe::remember(view, &owner, region, &look, &step);
    let observed = look.tree;
    let inputs = apply::Inputs {
        ctx: &ctx,
        octavia: octavia.as_ref(),
        neutron: neutron.as_ref(),
        lb: &lb,
        owner: &owner,
    };
    let members = &project_view.lb_members;
    let drift = drift::members(members, &owner.uid, &lb, &observed, &step);
    if step == plan::Step::Converged {
        members.converged(&owner.uid, &lb, &backends.ports);
    }
    let mut outcome = carry_out(&inputs, step, &tenant.project, policy).await?;
    if let (Some(note), Some(_)) = (drift, &outcome.event) {
        outcome.event = Some((EventType::Warning, "DriftCorrected", note));
    }
    let mut status = status::next_status(&lb, &observed, &outcome, &backends.missing_groups, now);
    status.project_id = Some(tenant.project.clone());
    progress::summarise(&mut status.conditions, policy, lb.metadata.generation, now);
    finish(&ctx, &lb, status, outcome.event).await?;
    Ok(Action::requeue(outcome.requeue))
}

/// Carries out `step`: an import in place of a create, what a paused object would do,
/// or the step itself.
async fn carry_out(
    inputs: &apply::Inputs<'_>,
    step: plan::Step,
    project: &str,
    policy: ReconcilePolicy,
) -> Result<apply::Outcome, ReconcileError> {
    match (&step, &inputs.lb.spec.import) {
        (plan::Step::Create(_), Some(import)) => {
            let id = LoadBalancerId::new(import.id.clone());
            import::import(inputs, project, &id, policy.writes()).await
        }
        _ if step.writes() && !policy.writes() => {
            Ok(apply::paused(&step, inputs.ctx.timing.resync))
        }
        _ => apply::run(inputs, step).await,
    }
}

/// Writes the status when it changed, updates the gauges, and publishes what the
/// step and the new conditions have to say.
async fn finish(
    ctx: &Context,
    lb: &LoadBalancer,
    status: LoadBalancerStatus,
    event: Option<(EventType, &'static str, String)>,
) -> Result<(), ReconcileError> {
    if lb.status.as_ref() != Some(&status) {
        write_status(&ctx.client, lb, &status).await?;
    }
    record_metrics(ctx, lb, &status);
    for (type_, reason, note) in news(lb.status.as_ref(), &status).into_iter().chain(event) {
        publish(ctx, lb, type_, reason, note, "Reconcile").await;
    }
    Ok(())
}

/// Warnings for conditions that just turned bad: a missing group, ignored monitors.
fn news(
    before: Option<&LoadBalancerStatus>,
    after: &LoadBalancerStatus,
) -> Vec<(EventType, &'static str, String)> {
    let reason_of = |s: Option<&LoadBalancerStatus>, type_: &str| {
        s.and_then(|s| find_condition(&s.conditions, type_))
            .map(|c| (c.reason.clone(), c.message.clone()))
    };
    let mut events = Vec::new();
    for (type_, bad, event) in [
        (READY, status::GROUP_NOT_FOUND, status::GROUP_NOT_FOUND),
        (
            status::MONITORS_APPLIED,
            "ExtraMonitorsIgnored",
            "MonitorsNotApplied",
        ),
    ] {
        let now = reason_of(Some(after), type_);
        if now.as_ref().is_some_and(|(r, _)| r == bad) && reason_of(before, type_) != now {
            let message = now.map(|(_, m)| m).unwrap_or_default();
            events.push((EventType::Warning, event, message));
        }
    }
    events
}

fn record_metrics(ctx: &Context, lb: &LoadBalancer, status: &LoadBalancerStatus) {
    let labels = object_labels(lb);
    let (ready, total) = status::member_counts(&status.ports);
    ctx.metrics
        .load_balancer_members
        .get_or_create(&labels)
        .set(total as i64);
    ctx.metrics
        .load_balancer_ready_members
        .get_or_create(&labels)
        .set(ready as i64);
    ctx.metrics
        .set_object_conditions(LoadBalancer::CONTROLLER, &labels, Some(&status.conditions));
}
