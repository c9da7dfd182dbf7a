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
use verda_api::v1alpha1::annotations::RECONCILE_POLICY;
use verda_api::v1alpha1::{LoadBalancer, LoadBalancerStatus, VirtualMachine, finalizers, labels};

use super::driver::{
    Cleanup, Managed, error_policy, managed_kind, object_key, object_labels, publish,
    reconcile_with,
};
use super::lifecycle::{self, Removal, accepted_policy};
use super::status_patch::write_status;
use super::tenancy::Tenant;
use super::watch_cache::Feeds;
use super::{Context, ReconcileError};
use crate::cloud::ids::LoadBalancerId;
use crate::cloud::model::loadbalancing::{LbFilter, ProvisioningStatus};
use crate::cloud::model::network::FloatingIpFilter;
use crate::cloud::owner::without_ownership;

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
    reconcile_with(lb, ctx, apply_spec, cleanup).await
}

async fn apply_spec(
    lb: Arc<LoadBalancer>,
    ctx: Arc<Context>,
    tenant: Tenant,
) -> Result<Action, ReconcileError> {
    let owner = ctx.owner_of(&*lb);
    let policy = accepted_policy(&*lb);
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
    let uid = owner.uid.clone();
    let drift = drift::members(&project_view.lb_members, &uid, &lb, &observed, &step);
    if step == plan::Step::Converged {
        project_view
            .lb_members
            .converged(&uid, &lb, &backends.ports);
    }
    let mut outcome = match (&step, &lb.spec.import) {
        (plan::Step::Create(_), Some(import)) => {
            let id = LoadBalancerId::new(import.id.clone());
            import::import(&inputs, &tenant.project, &id, policy.writes()).await?
        }
        _ if step.writes() && !policy.writes() => apply::Outcome {
            recorded: None,
            ready: (
                verda_api::conditions::Status::False,
                lifecycle::PAUSED_READY,
                lifecycle::paused_message(&step.describe()),
            ),
            event: None,
            requeue: ctx.timing.resync,
        },
        _ => apply::run(&inputs, step).await?,
    };
    if let (Some(note), Some(_)) = (drift, &outcome.event) {
        outcome.event = Some((EventType::Warning, "DriftCorrected", note));
    }
    let mut status = status::next_status(&lb, &observed, &outcome, &backends.missing_groups, now);
    status.project_id = Some(tenant.project.clone());
    lifecycle::mark_paused(&mut status.conditions, policy, lb.metadata.generation, now);
    if lb.status.as_ref() != Some(&status) {
        write_status(&ctx.client, &*lb, &status).await?;
    }
    record_metrics(&ctx, &lb, &status);
    for (type_, reason, note) in news(lb.status.as_ref(), &status)
        .into_iter()
        .chain(outcome.event)
    {
        publish(&ctx, &*lb, type_, reason, note, "Reconcile").await;
    }
    Ok(Action::requeue(outcome.requeue))
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
    let reason = find_condition(&status.conditions, READY).map(|c| c.reason.clone());
    ctx.metrics
        .set_object_state(LoadBalancer::CONTROLLER, &object_key(lb), reason.as_deref());
}

/// Releases the floating IPs, then deletes every tagged load balancer (Octavia's
/// cascade takes listeners, pools, monitors and members); done when none is left.
/// Detaching instead takes the owner's records off both and deletes nothing.
async fn cleanup(
    lb: Arc<LoadBalancer>,
    ctx: Arc<Context>,
    removal: Removal,
) -> Result<Cleanup, ReconcileError> {
    let key = object_key(&*lb);
    let (tenant, detach) = match removal {
        Removal::Abandon => {
            let id = lb.status.as_ref().and_then(|s| s.load_balancer_id.clone());
            let note = match id {
                Some(id) => {
                    format!("load balancer {id} was left as it is ({RECONCILE_POLICY} skip)")
                }
                None => format!("nothing was deleted in the cloud ({RECONCILE_POLICY} skip)"),
            };
            finished(&ctx, &lb, "Abandoned", note).await;
            return Ok(Cleanup::Done);
        }
        Removal::Delete(tenant) => (tenant, false),
        Removal::Detach(tenant) => (tenant, true),
    };
    let owner = ctx.owner_of(&*lb);
    let region = lb.spec.region.as_deref();
    let octavia = tenant.ports.load_balancing(region);
    let neutron = tenant.ports.network(region);
    let project_view = ctx.view.of(&tenant);
    project_view.load_balancers.forget(&owner, region);
    project_view.lb_members.forget(&owner.uid);
    let fips = neutron
        .list_floating_ips(&FloatingIpFilter {
            description: Some(owner.tag()),
            ..FloatingIpFilter::default()
        })
        .await
        .map_err(ReconcileError::cloud("list floating IPs", &key))?;
    for fip in &fips {
        let done = if detach {
            neutron
                .set_floating_ip_description(&fip.id, "")
                .await
                .map(drop)
        } else {
            neutron.delete_floating_ip(&fip.id).await
        };
        crate::cloud::ignore_not_found(done)
            .map_err(ReconcileError::cloud("release a floating IP", &key))?;
    }
    let found = octavia
        .list_load_balancers(&LbFilter {
            tags: vec![owner.tag()],
            ..LbFilter::default()
        })
        .await
        .map_err(ReconcileError::cloud("list load balancers", &key))?;
    if found.is_empty() {
        let id = lb.status.as_ref().and_then(|s| s.load_balancer_id.clone());
        let (reason, note) = match (detach, id) {
            (true, Some(id)) => (
                "Detached",
                format!(
                    "load balancer {id} keeps running without the operator's tags ({RECONCILE_POLICY} detach-on-delete)"
                ),
            ),
            (true, None) => ("Detached", "no load balancer to detach".to_owned()),
            (false, _) => ("Deleted", "load balancer deleted".to_owned()),
        };
        finished(&ctx, &lb, reason, note).await;
        return Ok(Cleanup::Done);
    }
    for l in found
        .iter()
        .filter(|l| l.provisioning_status != ProvisioningStatus::PendingDelete)
    {
        let done = if detach {
            octavia
                .set_load_balancer_tags(&l.id, &without_ownership(&l.tags))
                .await
                .map(drop)
        } else {
            octavia.delete_load_balancer(&l.id).await
        };
        match done {
            Ok(()) => {}
            // Busy with an earlier change, or already gone: look again.
            Err(e) if e.is_not_found() || e.is_immutable() => {}
            Err(e) => return Err(ReconcileError::cloud("delete the load balancer", &key)(e)),
        }
    }
    Ok(Cleanup::Wait(ctx.timing.poll))
}

/// The last word on a LoadBalancer leaving: its gauges go, an event says what became
/// of its load balancer.
async fn finished(ctx: &Context, lb: &LoadBalancer, reason: &str, note: String) {
    let labels = object_labels(lb);
    ctx.metrics.load_balancer_members.remove(&labels);
    ctx.metrics.load_balancer_ready_members.remove(&labels);
    ctx.metrics
        .set_object_state(LoadBalancer::CONTROLLER, &object_key(lb), None);
    publish(ctx, lb, EventType::Normal, reason, note, "Delete").await;
}
