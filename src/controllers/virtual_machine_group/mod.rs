//! The VirtualMachineGroup controller: a Nova server group and `replicas` owned
//! VirtualMachines.
//!
//! Its [`Reconciler`]: `observe` (server group, owned VirtualMachines, LoadBalancers
//! drawing on the group) → `plan` (pure: the server group to create, VirtualMachines to
//! create / drain / delete) → `execute` (the server group, then Kubernetes writes only;
//! the VirtualMachine controller owns the servers) → `status`.

pub mod addresses;
pub mod autoscale;
pub mod execute;
pub mod health;
pub mod names;
pub mod observe;
pub mod plan;
pub mod rollout;
pub mod status;
pub mod zones;

use std::sync::Arc;

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{
    ReplicaHealth, VirtualMachine, VirtualMachineGroup, VirtualMachineGroupStatus, VolumeRetention,
    finalizers,
};

use crate::caches::cloud_view::{ProjectView, VolumeOwner};
use crate::caches::watch::Feeds;
use crate::caches::watch::packed::Packed;
use crate::cloud::ids::ServerGroupId;
use crate::cloud::model::volume::Volume;
use crate::cloud::owner::{Owner, is_server_group_of};
use crate::cloud::{BlockStorage, CloudError, Compute, Dns};
use crate::controllers::dns_records;
use crate::controllers::virtual_machine::volumes::removal as volume_removal;
use crate::metrics::ReasonLabels;
use crate::runtime::driver::{packed_error_policy, reconcile_packed};
use crate::runtime::events::event;
use crate::runtime::lifecycle::Removal;
use crate::runtime::object::{Managed, managed_kind, object_key, object_labels, replica_index};
use crate::runtime::problem::Problem;
use crate::runtime::reconciler::{Cleanup, Reconcile, Reconciler};
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;

/// How long a round waits at most for the watch cache to show its own drains and
/// deletes (usually milliseconds).
const SEEN_WITHIN: Duration = Duration::from_secs(2);

managed_kind!(
    VirtualMachineGroup,
    "virtualmachinegroup",
    finalizers::VIRTUAL_MACHINE_GROUP
);

/// The controller: its VirtualMachines and the LoadBalancers drawing on it wake it.
pub fn run(
    ctx: Arc<Context>,
    feeds: &mut Feeds,
    woken: BoxStream<'static, ObjectRef<Packed<VirtualMachineGroup>>>,
) -> impl Future<Output = ()> + use<> {
    let caches = ctx.caches.current();
    feeds
        .groups
        .controller(caches.groups.store)
        .reconcile_on(woken)
        .owns_shared_stream(feeds.virtual_machines.unpacked())
        .watches_shared_stream(feeds.load_balancers.unpacked(), |lb| {
            let ns = lb.namespace().unwrap_or_default();
            lb.spec
                .ports
                .iter()
                .flat_map(|p| p.real_servers.group_names())
                .map(|name| ObjectRef::new(name).within(&ns))
                .collect::<Vec<_>>()
        })
        .run(reconcile_packed, packed_error_policy, ctx)
        .for_each(|_| futures::future::ready(()))
}

/// The cloud a group talks to: Nova, for its server group; the project's view, for
/// its retained volumes.
pub struct Services {
    pub(crate) compute: Arc<dyn Compute>,
    cinder: Arc<dyn BlockStorage>,
    dns: Arc<dyn Dns>,
    pub(crate) view: Arc<ProjectView>,
}

/// The group's server group, its VirtualMachines and the LoadBalancers drawing on it.
pub struct Observed {
    server_group: Option<ServerGroupId>,
    vms: Vec<VirtualMachine>,
    members: Vec<plan::Member>,
    /// Each replica's health now.
    judged: Vec<ReplicaHealth>,
    /// The spec for this round, stalled or not.
    policy: plan::Policy,
    /// The template changed since the last status.
    new_revision: bool,
    /// The group's zones and Nova's word on them (with `spec.zones`).
    zoning: Option<zones::Zoning>,
    /// Where each active replica is (with `spec.zones`).
    placed: Vec<zones::Placed>,
    template_hash: String,
    /// Volumes kept for indices that have no VirtualMachine (from the cloud view), with
    /// their index.
    retained_volumes: Vec<(u32, Volume)>,
    /// The record sets of `spec.dns` (and of names removed from it); none read when
    /// there are none.
    dns: Result<Vec<dns_records::Seen>, CloudError>,
    /// What the autoscaler decided (with `spec.autoscaling`).
    sizing: Option<autoscale::Sizing>,
}

/// What a round did.
pub struct Outcome {
    server_group: Option<ServerGroupId>,
    /// What the round did to the VirtualMachines (nothing while paused).
    round: plan::Plan,
    writes: usize,
    /// Reason and note of each event the round has to tell.
    events: Vec<(&'static str, String)>,
    /// The record sets of `spec.dns` after this round; `None`: as the status reports.
    dns: Option<dns_records::Kept>,
    /// When a schedule of `spec.autoscaling` starts or ends within the resync period.
    next_look: Option<Duration>,
}

impl Reconciler for VirtualMachineGroup {
    type Services = Services;
    type Observed = Observed;
    type Step = plan::Step;
    type Outcome = Outcome;
    type Status = VirtualMachineGroupStatus;

    fn services(ctx: &Context, tenant: &Tenant, _: &Self) -> Services {
        Services {
            compute: tenant.services.compute(),
            cinder: tenant.services.block_storage(),
            dns: tenant.services.dns(None),
            view: ctx.view.of(tenant),
        }
    }

    fn validate(group: &Self, _: &Context) -> Result<(), ReconcileError> {
        refuse_template_import(group)?;
        addresses::validate(group)
    }

    fn current_status(&self) -> Option<&VirtualMachineGroupStatus> {
        self.status.as_ref()
    }

    async fn observe(reconcile: &Reconcile<Self>, _: bool) -> Result<Observed, ReconcileError> {
        let Reconcile {
            ctx,
            obj: group,
            owner,
            services,
            ..
        } = reconcile;
        let server_group = observe::server_group(reconcile).await?;
        let caches = ctx.caches.current();
        let vms = observe::owned_vms(&caches, group).await;
        let lbs = observe::referencing_lbs(&caches, group).await;
        let sizing = autoscale::size(reconcile, &lbs, &vms).await;
        let name = group.name_any();
        let live = vms
            .iter()
            .filter_map(|vm| replica_index(vm, &name))
            .collect();
        let retained_volumes = services.view.volumes.retained(&owner.uid, &live);
        let template_hash =
            plan::template_hash(&serde_json::to_string(&group.spec.template).unwrap_or_default());
        let judged = judge_all(group, &vms, &lbs, reconcile.now);
        let mut members = observe::members(group, &vms, &lbs, &judged);
        let designate = dns_records::Designate::new(services.dns.as_ref(), &services.view, ctx);
        let dns = names::observe(designate, ctx, group, &mut members, &vms).await;
        let (zoning, placed) =
            observe::zones(group, services, ctx.timing.resync, &mut members, &vms).await;
        let status = group.status.as_ref();
        let new_revision =
            status.and_then(|s| s.update_revision.as_deref()) != Some(template_hash.as_str());
        let drain_timeout = ctx.timing.drain_timeout;
        let mut policy =
            rollout::policy(group, &template_hash, !lbs.is_empty(), drain_timeout, false);
        let rolling = rollout::rolling(&policy, &members);
        let progressed = status.and_then(|s| s.progressed_at.as_ref()).map(|t| t.0);
        policy.stalled = !new_revision
            && rollout::stalled(progressed, rollout::deadline(group), rolling, reconcile.now);
        Ok(Observed {
            sizing,
            dns,
            zoning,
            placed,
            server_group,
            retained_volumes,
            members,
            judged,
            policy,
            new_revision,
            vms,
            template_hash,
        })
    }

    fn needs_fresh_look(_: &Observed, _: &plan::Step) -> bool {
        // Nothing is read from the cloud view: every look is fresh.
        false
    }

    fn plan(reconcile: &Reconcile<Self>, observed: &Observed) -> plan::Step {
        let group = &reconcile.obj;
        plan::Step {
            server_group: plan::missing_server_group(
                group.spec.ha_policy,
                observed.server_group.as_ref(),
            ),
            // A new size is written first; the next round (its watch event) acts on it.
            scale: match &observed.sizing {
                Some(sizing) if sizing.changes() => plan::Plan::default(),
                _ => plan::plan(&observed.policy, &observed.members, reconcile.now),
            },
        }
    }

    /// None: a group's policy is carried by its VirtualMachines, whose runtime holds
    /// their writes; the group's own steps (its server group, its VirtualMachine objects)
    /// are taken.
    fn while_paused(_: &Reconcile<Self>, _: &Observed, _: &plan::Step) -> Option<Outcome> {
        None
    }

    /// Paused, no VirtualMachine comes or goes (they are paused too, by the
    /// annotation); either way they carry the group's credentials and policy.
    async fn execute(
        reconcile: &Reconcile<Self>,
        observed: &Observed,
        step: plan::Step,
    ) -> Result<Outcome, ReconcileError> {
        let Reconcile {
            ctx,
            obj: group,
            owner,
            services,
            policy,
            ..
        } = reconcile;
        let mut outcome = Outcome {
            server_group: observed.server_group.clone(),
            round: plan::Plan::default(),
            writes: 0,
            events: Vec::new(),
            dns: None,
            next_look: observed.sizing.as_ref().and_then(|s| s.next_look),
        };
        if policy.writes() {
            if let Some(sizing) = observed.sizing.as_ref().filter(|s| s.changes()) {
                outcome
                    .events
                    .push(autoscale::write(&ctx.client, group, sizing).await?);
                outcome.writes += 1;
            }
            if let Some(wanted) = step.server_group {
                let (compute, view) = (services.compute.as_ref(), &services.view.server_groups);
                let created = execute::create_server_group(compute, view, owner, wanted);
                outcome.server_group = Some(created.await?);
            }
            let sg = outcome.server_group.as_ref();
            let (scale, hash, vms) = (&step.scale, &observed.template_hash, &observed.vms);
            let zones = placements(observed, scale);
            let applied = execute::run(&ctx.client, group, scale, (hash, sg, &zones), vms).await?;
            let done = applied.done(scale);
            let written = (done.drain.as_slice(), done.delete.as_slice());
            let caches = ctx.caches.current();
            observe::until_seen(&caches, group, written, SEEN_WITHIN).await;
            outcome.writes += applied.writes;
            outcome.events.extend(round_events(group, observed, &done));
            count_replacements(ctx, observed, &done);
            let dns = dns_records::Designate::new(services.dns.as_ref(), &services.view, ctx);
            outcome.dns = names::converge(dns, ctx, group, &observed.dns, (vms, &done)).await;
            outcome
                .events
                .extend(outcome.dns.iter().flat_map(names::events));
            outcome.round = done;
            let scaled_away = plan::scaled_away(group, &observed.retained_volumes);
            if !scaled_away.is_empty() {
                outcome.writes += delete_scaled_away(services, owner, &scaled_away).await?;
                outcome.events.push(plan::scaled_away_event(&scaled_away));
            }
        }
        outcome.writes += execute::align_all(&ctx.client, group, &observed.vms).await?;
        Ok(outcome)
    }

    fn status(
        reconcile: &Reconcile<Self>,
        observed: &Observed,
        outcome: &Outcome,
    ) -> VirtualMachineGroupStatus {
        let mut status = status::next_status(
            &reconcile.obj,
            &observed.vms,
            &observed.members,
            &observed.policy,
            outcome.server_group.as_ref(),
            reconcile.now,
        );
        status::rollout(
            &mut status,
            &reconcile.obj,
            status::Round {
                policy: &observed.policy,
                members: &observed.members,
                judged: &observed.judged,
                new_revision: observed.new_revision,
                round: &outcome.round,
            },
            reconcile.now,
        );
        let retained = observed.retained_volumes.len();
        status.retained_volumes = i32::try_from(retained).unwrap_or(i32::MAX);
        status.zones = observed.zoning.as_ref().map_or_else(Vec::new, |z| {
            zones::status(z, &observed.members, &observed.policy, reconcile.now)
        });
        status.zone_summary = (!status.zones.is_empty()).then(|| zones::summary(&status.zones));
        if let Some(kept) = &outcome.dns {
            status.dns = kept.statuses.clone();
        }
        let generation = reconcile.obj.metadata.generation;
        autoscale::report(
            &mut status,
            observed.sizing.as_ref(),
            generation,
            reconcile.now,
        );
        status
    }

    fn events(
        reconcile: &Reconcile<Self>,
        outcome: &Outcome,
        status: &VirtualMachineGroupStatus,
    ) -> Vec<Event> {
        let mut events: Vec<Event> = outcome
            .events
            .iter()
            .map(|(reason, note)| {
                let kind = match *reason {
                    "ZoneUnavailable" | "DNSRecordFailed" | "ScaleReverted" => EventType::Warning,
                    _ => EventType::Normal,
                };
                event(kind, reason, note.clone(), "Scale")
            })
            .collect();
        events.extend(status::stalled_event(reconcile.obj.status.as_ref(), status));
        events
    }

    fn gauges(ctx: &Context, group: &Self, status: &VirtualMachineGroupStatus) {
        let labels = object_labels(group);
        ctx.metrics
            .group_desired_replicas
            .get_or_create(&labels)
            .set(group.spec.replicas.into());
        ctx.metrics
            .group_ready_replicas
            .get_or_create(&labels)
            .set(status.ready_replicas.into());
        let autoscaled = &ctx.metrics.group_autoscaling_desired_replicas;
        match &status.autoscaling {
            Some(a) => {
                autoscaled
                    .get_or_create(&labels)
                    .set(a.desired_replicas.into());
            }
            None => {
                autoscaled.remove(&labels);
            }
        }
    }

    fn requeue(
        reconcile: &Reconcile<Self>,
        outcome: &Outcome,
        status: &VirtualMachineGroupStatus,
    ) -> Duration {
        if outcome.dns.as_ref().is_some_and(|kept| kept.unsettled) {
            return dns_records::POLL.min(reconcile.ctx.timing.resync);
        }
        let converged = outcome.writes == 0 && is_true(&status.conditions, READY);
        let period = if converged || !reconcile.policy.writes() {
            reconcile.ctx.timing.resync
        } else {
            reconcile.ctx.timing.poll
        };
        // A schedule that starts or ends sooner is acted on at its time.
        let schedule = outcome.next_look.unwrap_or(period);
        period.min(schedule + Duration::from_secs(1))
    }

    async fn cleanup(
        group: Arc<Self>,
        ctx: Arc<Context>,
        removal: Removal,
    ) -> Result<Cleanup, ReconcileError> {
        cleanup(group, ctx, removal).await
    }
}

/// Each replica's health now.
fn judge_all(
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
    lbs: &[verda_api::v1alpha1::LoadBalancer],
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<ReplicaHealth> {
    let strategy = group.spec.run_strategy.unwrap_or_default();
    // Members' health counts only where the group heals on it.
    let pools = group.spec.auto_healing.is_some().then_some(lbs);
    let before = group.status.as_ref().map(|s| s.replica_health.as_slice());
    vms.iter()
        .map(|vm| {
            let was = before.and_then(|b| b.iter().find(|h| h.name == vm.name_any()));
            health::judge(vm, strategy, pools, was, now)
        })
        .collect()
}

/// What a round tells: its scaling, its healing, its volumes, its zones.
fn round_events(
    group: &VirtualMachineGroup,
    observed: &Observed,
    done: &plan::Plan,
) -> Vec<(&'static str, String)> {
    let mut events = done.events(&group.name_any());
    events.extend(status::heal_events(done, &observed.judged));
    events.extend(plan::volume_events(group, done, &observed.vms));
    events.extend(zone_events(group, observed, done));
    events
}

/// Deletes the volumes kept for the indices the group scaled away, then forgets them in
/// the view; how many it deleted.
async fn delete_scaled_away(
    services: &Services,
    owner: &Owner,
    scaled_away: &[(u32, Volume)],
) -> Result<usize, ReconcileError> {
    let cinder = services.cinder.as_ref();
    let deleted = execute::delete_volumes(cinder, scaled_away, &owner.key()).await?;
    for (index, _) in scaled_away {
        let gone = VolumeOwner {
            owner: owner.clone(),
            index: Some(*index),
        };
        services.view.volumes.forget(&gone);
    }
    Ok(deleted)
}

/// Counts the round's replacements: healed replicas by their health reason, outdated
/// ones drained by a rollout as `TemplateChanged`.
/// The zone of each replica the round creates (with `spec.zones`).
fn placements(observed: &Observed, round: &plan::Plan) -> std::collections::BTreeMap<u32, String> {
    let policy = &observed.policy;
    observed.zoning.as_ref().map_or_else(Default::default, |z| {
        let staying = zones::staying(&observed.placed, &observed.members, policy);
        z.placements(policy.replicas, &round.create, policy.in_place, &staying)
    })
}

/// `ZoneUnavailable` for each zone Nova stopped listing since the last status, and
/// `Rebalanced` for each misplaced replica the round drained.
fn zone_events(
    group: &VirtualMachineGroup,
    observed: &Observed,
    done: &plan::Plan,
) -> Vec<(&'static str, String)> {
    let Some(z) = &observed.zoning else {
        return Vec::new();
    };
    let before = group.status.as_ref().map(|s| s.zones.as_slice());
    let members = &observed.members;
    let mut events = zones::unavailable_events(z, before.unwrap_or_default(), members);
    let replicas = observed.policy.replicas;
    let staying = zones::staying(&observed.placed, members, &observed.policy);
    events.extend(zones::rebalanced_events(
        z,
        replicas,
        &done.drain,
        members,
        &staying,
    ));
    events
}

fn count_replacements(ctx: &Context, observed: &Observed, round: &plan::Plan) {
    let family = &ctx.metrics.group_replacements;
    for name in &round.drain {
        let healed = round.heal.contains(name);
        let reason = match observed.judged.iter().find(|j| &j.name == name) {
            Some(judged) if healed => judged.reason.clone(),
            _ => {
                let member = observed.members.iter().find(|m| &m.name == name);
                if !member.is_some_and(|m| observed.policy.outdated(m)) {
                    continue;
                }
                "TemplateChanged".to_owned()
            }
        };
        family.get_or_create(&ReasonLabels { reason }).inc();
    }
}

/// With every VirtualMachine gone: what was kept for indices that had none (earlier
/// scale-downs), volumes then ports, as the group says; `Some` while deletes run.
async fn retained(
    group: &VirtualMachineGroup,
    ctx: &Context,
    removal: &Removal,
) -> Result<Option<Cleanup>, ReconcileError> {
    if let Some(wait) = retained_volumes(group, ctx, removal).await? {
        return Ok(Some(wait));
    }
    let Removal::Delete(tenant) = removal else {
        return Ok(None);
    };
    let neutron = tenant.services.network(None);
    let key = object_key(group);
    let bound = addresses::delete_retained(neutron.as_ref(), group, &ctx.cluster, &key).await?;
    Ok(bound.then_some(Cleanup::Wait(ctx.timing.poll)))
}

/// The volumes kept for indices that had none, deleted or detached as the group says;
/// `Some` while deletes run.
async fn retained_volumes(
    group: &VirtualMachineGroup,
    ctx: &Context,
    removal: &Removal,
) -> Result<Option<Cleanup>, ReconcileError> {
    let (tenant, detach) = match removal {
        Removal::Delete(t) => (t, false),
        Removal::Detach(t) => (t, true),
        Removal::Abandon => return Ok(None),
    };
    if !rollout::stateful(group) {
        return Ok(None);
    }
    let owner = VolumeOwner {
        owner: ctx.owner_of(group),
        index: None,
    };
    let cinder = tenant.services.block_storage();
    let key = object_key(group);
    // As the group's own would be deleted: a VirtualMachine carrying its retention.
    let mut holder = VirtualMachine::new(&group.name_any(), group.spec.template.clone());
    holder.spec.volume_retention = Some(VolumeRetention {
        when_deleted: group.spec.volume_retention.unwrap_or_default().when_deleted,
    });
    match volume_removal::volumes(cinder.as_ref(), &holder, &owner, detach, &key).await? {
        volume_removal::Left::Wait => Ok(Some(Cleanup::Wait(ctx.timing.poll))),
        volume_removal::Left::Done(_) => Ok(None),
    }
}

/// A template naming a server to import would have every replica take over that one
/// server: refused, with what to do instead.
fn refuse_template_import(group: &VirtualMachineGroup) -> Result<(), ReconcileError> {
    if group.spec.template.import.is_none() {
        return Ok(());
    }
    Err(ReconcileError::Invalid {
        object: object_key(group),
        problem: Problem::TemplateImportNotAllowed,
        message: "spec.template.import: the replicas of a group cannot all take over one \
                  server; remove it, and import the server with a VirtualMachine of its own"
            .to_owned(),
    })
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
    if let Removal::Delete(tenant) = &removal {
        let dns = tenant.services.dns(None);
        let reported = group.status.as_ref().map_or(&[][..], |s| &s.dns[..]);
        let record = names::record(&ctx, &group);
        let spec = names::shared(&group);
        let project = ctx.view.of(tenant);
        let designate = dns_records::Designate::new(dns.as_ref(), &project, &ctx);
        if !dns_records::released(designate, &spec, reported, &record, &key).await? {
            return Ok(Cleanup::Wait(ctx.timing.poll));
        }
    }
    let vms = observe::owned_vms(&ctx.caches.current(), &group).await;
    if !vms.is_empty() {
        // They must carry the group's policy when their deletion is decided.
        if execute::align_policy(&ctx.client, &group, &vms).await? > 0 {
            return Ok(Cleanup::Wait(ctx.timing.poll));
        }
        let api: Api<VirtualMachine> =
            Api::namespaced(ctx.client.clone(), &group.namespace().unwrap_or_default());
        let fate = group.spec.volume_retention.unwrap_or_default().when_deleted;
        let port_fate = addresses::retention(&group).when_deleted;
        for vm in vms
            .iter()
            .filter(|vm| vm.metadata.deletion_timestamp.is_none())
        {
            execute::delete_as_seen(&api, vm, (fate, port_fate), &key).await?;
        }
        return Ok(Cleanup::Wait(ctx.timing.poll));
    }
    if let Some(wait) = retained(&group, &ctx, &removal).await? {
        return Ok(wait);
    }
    if let Removal::Delete(tenant) = removal {
        let owner = ctx.owner_of(&*group);
        let compute = tenant.services.compute();
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
        ctx.view.of(&tenant).server_groups.removed(&owner.uid);
    }
    forget(&ctx, &group);
    Ok(Cleanup::Done)
}

/// The group is gone: its series and its autoscaler's proposals go too.
fn forget(ctx: &Context, group: &VirtualMachineGroup) {
    let labels = object_labels(group);
    ctx.metrics.group_desired_replicas.remove(&labels);
    ctx.metrics.group_ready_replicas.remove(&labels);
    let autoscaled = &ctx.metrics.group_autoscaling_desired_replicas;
    autoscaled.remove(&labels);
    ctx.autoscaler.forget(&group.uid().unwrap_or_default());
    ctx.metrics
        .set_object_conditions(VirtualMachineGroup::CONTROLLER, &labels, None);
}
