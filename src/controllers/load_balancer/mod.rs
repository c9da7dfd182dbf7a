//! The LoadBalancer controller: an Octavia load balancer with a listener, pool and
//! health monitor per port, members from a group, VirtualMachines or addresses, and a
//! floating IP for `vipType: public`.
//!
//! Its [`Reconciler`]: `observe` (the backends from the watch caches, `real_servers`; the
//! Octavia tree by owner tag, `tree`, or from the cloud view, `observe`; the names a
//! create needs, `references`) → `plan` (pure: the one next write) → `execute` (that
//! write) → `status`. VirtualMachine and group changes wake the LoadBalancers that draw
//! on them at once.

pub mod certificates;
pub mod confirm;
pub mod desired;
pub mod drift;
pub mod execute;
pub mod import;
pub mod observe;
pub mod plan;
pub mod real_servers;
pub mod references;
mod removal;
pub mod status;
pub mod tree;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::ResourceExt;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{
    LoadBalancer, LoadBalancerStatus, ReconcilePolicy, VirtualMachine, finalizers, labels,
};

use crate::caches::cloud_view::ProjectView;
use crate::caches::watch::index::{Keyed, group_key, vm_key};
use crate::caches::watch::packed::{Packed, unpacked};
use crate::caches::watch::{Cache, Feeds};
use crate::cloud::ids::LoadBalancerId;
use crate::cloud::owner::port_record;
use crate::cloud::{CloudError, Dns, LoadBalancing, Network};
use crate::controllers::dns_records;
use crate::runtime::driver::{packed_error_policy, reconcile_packed};
use crate::runtime::events::reconcile_event;
use crate::runtime::lifecycle::Removal;
use crate::runtime::object::{managed_kind, object_key, object_labels};
use crate::runtime::reconciler::{Cleanup, Reconcile, Reconciler};
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

managed_kind!(LoadBalancer, "loadbalancer", finalizers::LOAD_BALANCER);

/// The controller: VirtualMachines and groups wake the LoadBalancers drawing on them,
/// and a refresh of the cloud view wakes those whose Octavia tree changed.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    refreshed: BoxStream<'static, ObjectRef<Packed<LoadBalancer>>>,
) -> impl Future<Output = ()> + use<> {
    let lbs = ctx.caches.current().load_balancers;
    let by_vm = lbs.clone();
    let by_group = lbs.clone();
    let seen = Mutex::new(HashMap::new());
    let groups = Mutex::new(HashSet::new());
    feeds
        .load_balancers
        .controller(lbs.store)
        .watches_shared_stream(feeds.virtual_machines.unpacked(), move |vm| {
            if !membership_changed(&seen, &vm) {
                return Vec::new();
            }
            // A LoadBalancer may draw on the VirtualMachine by its group or by its name.
            let mut keys = vm.keys();
            keys.push(vm_key(&vm.name_any()));
            drawing_on(&by_vm, &*vm, &keys, |rs| real_servers::draws_from(rs, &vm))
        })
        .watches_shared_stream(feeds.groups.unpacked(), move |group| {
            // Only a group's coming and going matters here; its members wake the
            // LoadBalancers through the VirtualMachine watch.
            let key = object_key(&*group);
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
            drawing_on(&by_group, &*group, &[group_key(&name)], |rs| {
                rs.draws_on_group(&name)
            })
        })
        .reconcile_on(refreshed)
        .run(reconcile_packed, packed_error_policy, ctx)
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
        serving: real_servers::serving_backend(vm).is_some(),
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

/// The LoadBalancers of `obj`'s namespace related to one of `keys` with a port whose
/// real servers satisfy `draws`.
fn drawing_on(
    cache: &Cache<Packed<LoadBalancer>>,
    obj: &impl kube::Resource,
    keys: &[String],
    draws: impl Fn(&verda_api::v1alpha1::RealServers) -> bool,
) -> Vec<ObjectRef<Packed<LoadBalancer>>> {
    let namespace = obj.meta().namespace.clone().unwrap_or_default();
    let related: Vec<_> = keys
        .iter()
        .flat_map(|key| cache.with_key_now(&namespace, key))
        .collect();
    let mut lbs: Vec<ObjectRef<Packed<LoadBalancer>>> = unpacked(&related)
        .iter()
        .filter(|lb| lb.spec.ports.iter().any(|p| draws(&p.real_servers)))
        .map(|lb| ObjectRef::new(&lb.name_any()).within(&namespace))
        .collect();
    lbs.sort_by(|a, b| a.name.cmp(&b.name));
    lbs.dedup();
    lbs
}

/// The cloud a LoadBalancer talks to, in its region: Octavia, Neutron, and the
/// project's view of its load balancers.
pub struct Services {
    octavia: Arc<dyn LoadBalancing>,
    neutron: Arc<dyn Network>,
    dns: Arc<dyn Dns>,
    view: Arc<ProjectView>,
}

/// The Octavia tree, the backends the ports draw on, and — while the object has no
/// load balancer and may create one — where it goes (VIP subnet, Octavia flavor).
pub struct Observed {
    look: observe::Look,
    backends: real_servers::Backends,
    placement: Option<references::Placement>,
    certificates: certificates::Certificates,
    /// The record sets of `spec.dns` (and of names removed from it); none read when
    /// there are none. An error of Designate's leaves the rest of the round to run.
    dns: Result<Vec<dns_records::Seen>, CloudError>,
}

impl Reconciler for LoadBalancer {
    type Services = Services;
    type Observed = Observed;
    type Step = plan::Step;
    type Outcome = execute::Outcome;
    type Status = LoadBalancerStatus;

    fn services(ctx: &Context, tenant: &Tenant, lb: &Self) -> Services {
        let region = lb.spec.region.as_deref();
        Services {
            octavia: tenant.services.load_balancing(region),
            neutron: tenant.services.network(region),
            dns: tenant.services.dns(region),
            view: ctx.view.of(tenant),
        }
    }

    /// The VIP subnet and the Octavia flavor must follow from the spec and the
    /// operator's configuration, for the load balancer there is as for the next.
    fn validate(lb: &Self, ctx: &Context) -> Result<(), ReconcileError> {
        references::vip_subnet_name(&ctx.config, lb)?;
        references::flavor_name(&ctx.config, lb).map(drop)
    }

    fn current_status(&self) -> Option<&LoadBalancerStatus> {
        self.status.as_ref()
    }

    async fn observe(
        reconcile: &Reconcile<Self>,
        use_view: bool,
    ) -> Result<Observed, ReconcileError> {
        let Reconcile {
            ctx,
            obj: lb,
            owner,
            services,
            tenant,
            ..
        } = reconcile;
        let backends = real_servers::backends(&ctx.caches.current(), lb, &tenant.project).await;
        let sources = observe::Sources {
            octavia: services.octavia.as_ref(),
            neutron: services.neutron.as_ref(),
            lb,
            owner,
        };
        let look = if use_view {
            let cached = services
                .view
                .load_balancers
                .cached(&owner.uid, ctx.view_max_age());
            let writes = reconcile.policy.writes();
            if cached.is_none()
                && observe::vouched_none(ctx, tenant, &services.view, &sources, writes).await
            {
                observe::listed_none()
            } else {
                let health = real_servers::health_watched(&ctx.caches.current(), lb).await;
                observe::look(&sources, cached, health).await?
            }
        } else {
            observe::read(&sources).await?
        };
        let now = chrono::Utc::now();
        let certificates =
            certificates::read(ctx, lb, owner, sources.octavia, &look.tree, now).await?;
        // Paused, nothing is created: nothing to place.
        let placement = match tree::keeper(lb, &look.tree.load_balancers) {
            Some(_) => None,
            None if !reconcile.policy.writes() => None,
            None => Some(
                references::placement(&ctx.config, sources.octavia, sources.neutron, lb).await?,
            ),
        };
        let designate = dns_records::Designate::new(services.dns.as_ref(), &services.view, ctx);
        let reported = lb.status.as_ref().map_or(&[][..], |s| &s.dns[..]);
        let dns = dns_records::read(designate, &lb.spec.dns, reported).await;
        Ok(Observed {
            look,
            backends,
            placement,
            certificates,
            dns,
        })
    }

    /// A create, or a certificate delete: a tree from the view may not show the
    /// listener that still holds it.
    fn needs_fresh_look(observed: &Observed, step: &plan::Step) -> bool {
        observed.look.from_view()
            && matches!(
                step,
                plan::Step::Create(_) | plan::Step::DeleteCertificate(_)
            )
    }

    fn plan(reconcile: &Reconcile<Self>, observed: &Observed) -> plan::Step {
        let facts = plan::Facts {
            tree: &observed.look.tree,
            backends: &observed.backends.ports,
            starting: &observed.backends.starting,
            certificates: &observed.certificates,
        };
        let step = plan::plan_holding(
            &reconcile.obj,
            &facts,
            reconcile.ctx.timing.error_replace,
            reconcile.now,
        );
        let tree = &observed.look.tree;
        // Not the namespace tag: added to a load balancer of an earlier release, it
        // would cost an update (PENDING_UPDATE, the LoadBalancer not Ready meanwhile)
        // for what only the orphan gauge of shards reads.
        plan::recording_owner(step, &reconcile.obj, tree, &reconcile.owner.tags())
    }

    /// A step that writes, but for an import in place of a create (it writes nothing
    /// while paused: it only looks the load balancer up).
    fn while_paused(
        reconcile: &Reconcile<Self>,
        _: &Observed,
        step: &plan::Step,
    ) -> Option<execute::Outcome> {
        let imports = matches!(step, plan::Step::Create(_)) && reconcile.obj.spec.import.is_some();
        let resync = reconcile.ctx.timing.resync;
        (step.writes() && !imports).then(|| execute::paused(step, resync))
    }

    /// Remembers what the step leaves the view vouching for, tells a correction of
    /// drift from an ordinary member update, and carries the step out.
    async fn execute(
        reconcile: &Reconcile<Self>,
        observed: &Observed,
        step: plan::Step,
    ) -> Result<execute::Outcome, ReconcileError> {
        let Reconcile {
            ctx,
            obj: lb,
            owner,
            services,
            tenant,
            policy,
            ..
        } = reconcile;
        let region = lb.spec.region.as_deref();
        observe::remember(
            &services.view.load_balancers,
            owner,
            region,
            &observed.look,
            &step,
        );
        let members = &services.view.lb_members;
        let drift = drift::members(members, &owner.uid, lb, &observed.look.tree, &step);
        if step == plan::Step::Converged {
            drift::converged(members, &owner.uid, lb, &observed.backends.ports);
        }
        let inputs = execute::Inputs {
            ctx,
            octavia: services.octavia.as_ref(),
            neutron: services.neutron.as_ref(),
            lb,
            owner,
            placement: observed.placement.as_ref(),
            certificates: &observed.certificates,
        };
        let settled = step.settled();
        let mut outcome = carry_out(&inputs, step, &tenant.project, *policy).await?;
        if let (Some(note), Some(_)) = (drift, &outcome.event) {
            outcome.event = Some((EventType::Warning, "DriftCorrected", note));
        }
        outcome.dns = names(reconcile, observed).await;
        if outcome.dns.as_ref().is_some_and(|kept| kept.unsettled) {
            outcome.requeue = outcome.requeue.min(dns_records::POLL);
        }
        if let Some((made, trees)) = outcome.created.take() {
            observe::remember_created(&services.view.load_balancers, owner, lb, made, trees);
        }
        if settled && let Some(due) = services.view.load_balancers.quiet_read_in(&owner.uid) {
            // The confirming read came right after the write: read once more when a
            // listing can vouch for what it finds.
            outcome.requeue = outcome.requeue.min(due + Duration::from_millis(500));
        }
        Ok(outcome)
    }

    fn status(
        reconcile: &Reconcile<Self>,
        observed: &Observed,
        outcome: &execute::Outcome,
    ) -> LoadBalancerStatus {
        let missing = &observed.backends.missing_groups;
        status::next_status(
            &reconcile.obj,
            &observed.look.tree,
            outcome,
            missing,
            &observed.certificates,
            reconcile.now,
        )
    }

    /// News of conditions that turned bad, then the step's own event.
    fn events(
        reconcile: &Reconcile<Self>,
        outcome: &execute::Outcome,
        status: &LoadBalancerStatus,
    ) -> Vec<Event> {
        let dns = outcome.dns.iter().flat_map(|kept| kept.events.clone());
        news(reconcile.obj.status.as_ref(), status)
            .into_iter()
            .chain(outcome.event.clone())
            .chain(dns)
            .map(|(type_, reason, note)| reconcile_event(type_, reason, note))
            .collect()
    }

    fn gauges(ctx: &Context, lb: &Self, status: &LoadBalancerStatus) {
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
    }

    fn requeue(
        _: &Reconcile<Self>,
        outcome: &execute::Outcome,
        _: &LoadBalancerStatus,
    ) -> Duration {
        outcome.requeue
    }

    async fn cleanup(
        lb: Arc<Self>,
        ctx: Arc<Context>,
        removal: Removal,
    ) -> Result<Cleanup, ReconcileError> {
        removal::cleanup(lb, ctx, removal).await
    }
}

/// The record sets of `spec.dns` brought to the VIP (the floating IP for `vipType:
/// public`) as the tree shows it; `None` (the status keeps its rows) when there are no
/// names or Designate could not be read.
async fn names(
    reconcile: &Reconcile<LoadBalancer>,
    observed: &Observed,
) -> Option<dns_records::Kept> {
    let seen = match &observed.dns {
        Ok(seen) if seen.is_empty() => return None,
        Ok(seen) => seen,
        Err(e) => {
            tracing::warn!(loadbalancer = %reconcile.owner.key(), "could not read the DNS record sets of spec.dns: {e}");
            return None;
        }
    };
    let lb = &reconcile.obj;
    let addresses = dns_records::Addresses {
        primary: status::dns_address(lb, &observed.look.tree)
            .into_iter()
            .collect(),
        floating: None,
    };
    let record = port_record(&reconcile.owner.uid, None, &reconcile.ctx.cluster);
    let services = &reconcile.services;
    let designate =
        dns_records::Designate::new(services.dns.as_ref(), &services.view, &reconcile.ctx);
    let writes = reconcile.policy.writes();
    Some(dns_records::converge(designate, seen, &addresses, &record, writes).await)
}

/// Carries out `step`: an import in place of a create, or the step itself.
async fn carry_out(
    inputs: &execute::Inputs<'_>,
    step: plan::Step,
    project: &str,
    policy: ReconcilePolicy,
) -> Result<execute::Outcome, ReconcileError> {
    match (&step, &inputs.lb.spec.import) {
        (plan::Step::Create(_), Some(import)) => {
            let id = LoadBalancerId::new(import.id.clone());
            import::import(inputs, project, &id, policy.writes()).await
        }
        _ => execute::run(inputs, step).await,
    }
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
