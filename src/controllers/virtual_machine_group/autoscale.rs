//! `spec.autoscaling`, each round: the metrics read (Octavia's listener statistics
//! through the project's cloud view, PromQL through the operator's Prometheus), the
//! floor (`minReplicas`, raised by the schedules holding now), the size decided, and
//! what the status, conditions and events say of it. The size is written through the
//! scale subresource with the autoscaler's own field manager, as a
//! HorizontalPodAutoscaler writes it; a size someone else wrote is set back.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use verda_api::conditions::{NewCondition, Status, set_condition};
use verda_api::v1alpha1::{
    AUTOSCALER_FIELD_MANAGER, Autoscaling, AutoscalingStatus, LoadBalancer, LoadBalancerMetric,
    MetricStatus, VirtualMachine, VirtualMachineGroup, VirtualMachineGroupStatus,
};

use crate::autoscaler::recommend::{Behavior, Bounds, Limit, Rules, proposal};
use crate::autoscaler::schedule::Schedule;
use crate::autoscaler::{Round, Settled};
use crate::caches::cloud_view::Readings;
use crate::caches::watch::owns_spec_replicas;
use crate::cloud::ids::ListenerId;
use crate::config::duration;
use crate::runtime::ReconcileError;
use crate::runtime::object::object_key;
use crate::runtime::reconciler::Reconcile;

/// The conditions of an autoscaled group, a HorizontalPodAutoscaler's.
pub const ABLE_TO_SCALE: &str = "AbleToScale";
pub const SCALING_ACTIVE: &str = "ScalingActive";
pub const SCALING_LIMITED: &str = "ScalingLimited";

/// Defaults of `behavior`: up at once by at most 4, down after 5 minutes by 1.
const UP: Rules = Rules {
    window: Duration::ZERO,
    max_step: 4,
};
const DOWN: Rules = Rules {
    window: Duration::from_secs(300),
    max_step: 1,
};

/// One metric, read.
struct Reading {
    name: String,
    /// Per replica.
    target: f64,
    /// The group's whole load.
    value: Result<f64, Unread>,
}

/// Why a metric has no value this round.
struct Unread {
    reason: &'static str,
    message: String,
}

/// What the autoscaler decided this round.
pub struct Sizing {
    /// `spec.replicas` as the group has it now.
    current: i32,
    /// The manager that set `spec.replicas` outside the autoscaler; it is set back.
    overridden_by: Option<String>,
    pub status: AutoscalingStatus,
    conditions: Vec<Verdict>,
    /// What made the size: the winning metric, or the floor.
    why: String,
    /// When a schedule starts or ends within the resync period.
    pub next_look: Option<Duration>,
}

impl Sizing {
    /// What `spec.replicas` should be.
    fn replicas(&self) -> i32 {
        self.status.desired_replicas
    }

    /// Whether this round writes `spec.replicas`.
    pub fn changes(&self) -> bool {
        self.replicas() != self.current
    }

    /// The event the write tells.
    fn event(&self) -> (&'static str, String) {
        let (from, to) = (self.current, self.replicas());
        match &self.overridden_by {
            Some(manager) => (
                "ScaleReverted",
                format!(
                    "spec.replicas was set to {from} by {manager}, outside the autoscaler; set back to {to}: \
                     the group is sized by spec.autoscaling (change minReplicas or maxReplicas instead, \
                     or remove spec.autoscaling to size it by hand)"
                ),
            ),
            None => (
                "Scaled",
                format!("scaled from {from} to {to}: {}", self.why),
            ),
        }
    }
}

/// The round's sizing; `None` for a group that is not autoscaled.
pub async fn size(
    r: &Reconcile<VirtualMachineGroup>,
    lbs: &[LoadBalancer],
    vms: &[VirtualMachine],
) -> Option<Sizing> {
    let group = &r.obj;
    let uid = group.uid().unwrap_or_default();
    let before = group.status.as_ref().and_then(|s| s.autoscaling.as_ref());
    let Some(spec) = group.spec.autoscaling.as_ref() else {
        // No longer autoscaled (a deleted group's proposals go in its cleanup).
        if before.is_some() {
            r.ctx.autoscaler.forget(&uid);
        }
        return None;
    };
    let current = group.spec.replicas;
    let readings = read_metrics(r, spec, lbs).await;
    let floor = floor(spec, r.now, r.ctx.timing.resync);
    let bounds = Bounds {
        floor: floor.replicas.min(spec.max_replicas),
        ceiling: spec.max_replicas,
    };
    let (proposed, why) = proposed(&readings, current, (bounds.floor, &floor.why));
    let settled = settled(vms, current);
    let round = Round {
        current,
        behavior: behavior(spec),
        bounds,
        settled,
        now: r.now,
    };
    let mut decision = r.ctx.autoscaler.decide(&uid, proposed, round);
    let overridden_by = overridden(group, before);
    if let (Some(_), Some(last)) = (&overridden_by, before) {
        decision.replicas = last.desired_replicas.clamp(bounds.floor, bounds.ceiling);
    }
    let status = AutoscalingStatus {
        desired_replicas: decision.replicas,
        metrics: readings.iter().map(|m| metric_status(m, current)).collect(),
        last_scale_time: last_scale_time(before, (current, decision.replicas), r.now),
    };
    let conditions = vec![
        able_to_scale(decision.replicas, current, settled),
        scaling_active(&readings, floor.unreadable, &floor.why),
        scaling_limited(decision.limit, bounds, &floor.why),
    ];
    let why = match decision.limit {
        Some(Limit::TooFew) => floor.why,
        _ => why,
    };
    Some(Sizing {
        current,
        overridden_by,
        status,
        conditions,
        why,
        next_look: floor.next_change,
    })
}

/// `now` when the size changes this round, else when it last did. A size the status
/// does not record yet changed too: the round that wrote it may not have written its
/// status before this one read the object (woken by its own scale write), and this
/// round's status must not drop the time.
fn last_scale_time(
    before: Option<&AutoscalingStatus>,
    (current, decided): (i32, i32),
    now: Timestamp,
) -> Option<Time> {
    let unrecorded = before.is_some_and(|b| b.desired_replicas != decided);
    match decided != current || unrecorded {
        true => Some(Time(now)),
        false => before.and_then(|b| b.last_scale_time.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_the_status_does_not_record_yet_keeps_a_scale_time() {
        let now = Timestamp::now();
        let before = |desired, at: Option<Time>| AutoscalingStatus {
            desired_replicas: desired,
            last_scale_time: at,
            ..AutoscalingStatus::default()
        };
        // Written by the round before, whose status this round did not see.
        let stale = before(2, None);
        assert!(last_scale_time(Some(&stale), (5, 5), now).is_some());
        // Steady: the time stays the one recorded.
        let at = Time(now);
        let steady = before(5, Some(at.clone()));
        assert_eq!(
            last_scale_time(Some(&steady), (5, 5), Timestamp::now()),
            Some(at)
        );
        // Never scaled: no time.
        assert_eq!(last_scale_time(None, (2, 2), now), None);
    }
}

/// How long a reading (a listener's statistics, a query's answer) serves every group
/// that reads it: half a resync, so that each resync of a group reads anew.
fn fresh(r: &Reconcile<VirtualMachineGroup>) -> Duration {
    r.ctx.timing.resync / 2
}

/// Each metric of `spec`, read.
async fn read_metrics(
    r: &Reconcile<VirtualMachineGroup>,
    spec: &Autoscaling,
    lbs: &[LoadBalancer],
) -> Vec<Reading> {
    let mut readings = Vec::with_capacity(spec.metrics.len());
    for (index, metric) in spec.metrics.iter().enumerate() {
        readings.push(match (&metric.load_balancer, &metric.prometheus) {
            (Some(lb), _) => read_listener(r, lb, lbs).await,
            (None, Some(p)) => Reading {
                name: format!("prometheus/{index}"),
                target: p.target_per_replica,
                value: r
                    .ctx
                    .autoscaler
                    .query(&p.query, fresh(r))
                    .await
                    .map_err(|e| Unread {
                        reason: "FailedGetPrometheusMetric",
                        message: e.to_string(),
                    }),
            },
            (None, None) => continue,
        });
    }
    readings
}

/// Whether the group reached `current`: every replica there and Ready (for a step
/// up), the removed ones gone (for a step down).
fn settled(vms: &[VirtualMachine], current: i32) -> Settled {
    let count = usize::try_from(current).unwrap_or(0);
    let ready = vms.iter().filter(|vm| is_ready(vm)).count();
    let live = vms
        .iter()
        .filter(|vm| vm.metadata.deletion_timestamp.is_none())
        .count();
    Settled {
        up: live == count && ready >= count,
        down: vms.len() == count,
    }
}

/// The largest proposal, and why; a metric that could not be read lets the group grow
/// on the others but not shrink (its load is unknown). No metrics: the floor.
fn proposed(
    readings: &[Reading],
    current: i32,
    (floor, floor_why): (i32, &str),
) -> (Option<i32>, String) {
    if readings.is_empty() {
        return (Some(floor), floor_why.to_owned());
    }
    let best = readings
        .iter()
        .filter_map(|m| {
            let total = *m.value.as_ref().ok()?;
            Some((proposal(total, m.target, current), m, total))
        })
        .max_by_key(|(p, _, _)| *p);
    let Some((p, m, total)) = best else {
        return (None, String::new());
    };
    let per_replica = total / f64::from(current.max(1));
    let why = format!(
        "{} is {} per replica, target {}",
        m.name,
        quantity(per_replica),
        quantity(m.target)
    );
    let unread = readings.iter().any(|m| m.value.is_err());
    (Some(if unread { p.max(current) } else { p }), why)
}

/// A LoadBalancer metric: the listener of `metric.port` of a LoadBalancer drawing on the
/// group, read at most once per half resync for every group of the project.
async fn read_listener(
    r: &Reconcile<VirtualMachineGroup>,
    metric: &LoadBalancerMetric,
    lbs: &[LoadBalancer],
) -> Reading {
    let name = format!("loadBalancer/{}:{}", metric.name, metric.port);
    let target = &metric.target;
    let (per, target) = match (
        target.active_connections_per_replica,
        target.new_connections_per_second_per_replica,
    ) {
        (Some(t), _) => (Per::Active, t),
        (None, Some(t)) => (Per::NewPerSecond, t),
        (None, None) => (Per::Active, 0),
    };
    // Targets are at most 10^8: exact as f64.
    let target = target as f64;
    let value = match listener_of(r, metric, lbs) {
        Ok((listener, lb)) => match readings(r, &listener, lb, metric).await {
            Ok(readings) => per.value(&readings, &name),
            Err(unread) => Err(unread),
        },
        Err(unread) => Err(unread),
    };
    Reading {
        name,
        target,
        value,
    }
}

/// The listener the metric reads, and its LoadBalancer.
fn listener_of<'a>(
    r: &Reconcile<VirtualMachineGroup>,
    metric: &LoadBalancerMetric,
    lbs: &'a [LoadBalancer],
) -> Result<(ListenerId, &'a LoadBalancer), Unread> {
    let invalid = |message| Unread {
        reason: "InvalidMetricSource",
        message,
    };
    let Some(lb) = lbs.iter().find(|lb| lb.name_any() == metric.name) else {
        return Err(invalid(format!(
            "no LoadBalancer {} in namespace {} draws on this group: name one whose realServers name the group",
            metric.name,
            r.obj.namespace().unwrap_or_default()
        )));
    };
    if !lb.spec.ports.iter().any(|p| p.port == metric.port) {
        let message = format!("LoadBalancer {} has no port {}", metric.name, metric.port);
        return Err(invalid(message));
    }
    let listener = lb
        .status
        .as_ref()
        .and_then(|s| s.ports.iter().find(|p| p.port == metric.port))
        .and_then(|p| p.listener_id.clone());
    match listener {
        Some(id) => Ok((ListenerId::new(id), lb)),
        None => Err(Unread {
            reason: "MetricPending",
            message: format!(
                "LoadBalancer {} has no listener on port {} yet",
                metric.name, metric.port
            ),
        }),
    }
}

/// The listener's readings: the project view's while fresh, else Octavia's now.
async fn readings(
    r: &Reconcile<VirtualMachineGroup>,
    listener: &ListenerId,
    lb: &LoadBalancer,
    metric: &LoadBalancerMetric,
) -> Result<Readings, Unread> {
    let view = &r.services.view.listener_stats;
    if let Some(seen) = view.fresh(listener, fresh(r)) {
        return Ok(seen);
    }
    let octavia = r.tenant.services.load_balancing(lb.spec.region.as_deref());
    match octavia.listener_stats(listener).await {
        Ok(stats) => Ok(view.record(listener, stats)),
        Err(e) => Err(Unread {
            reason: "FailedGetLoadBalancerMetric",
            message: format!(
                "cannot read the statistics of LoadBalancer {}'s listener on port {}: {e}",
                metric.name, metric.port
            ),
        }),
    }
}

#[derive(Clone, Copy)]
enum Per {
    Active,
    NewPerSecond,
}

impl Per {
    /// The load this reads from a listener's readings.
    fn value(self, readings: &Readings, name: &str) -> Result<f64, Unread> {
        match self {
            // Counts are far below 2^52: exact as f64.
            Per::Active => Ok(readings.last.stats.active_connections as f64),
            Per::NewPerSecond => readings.new_per_second().ok_or_else(|| Unread {
                reason: "MetricPending",
                message: format!(
                    "the rate of new connections on {name} needs two readings (or a count that did not \
                     go down); it is read again within a resync"
                ),
            }),
        }
    }
}

/// The floor of a round: `minReplicas`, raised by the schedules holding now.
struct Floor {
    replicas: i32,
    /// What set it, for events and conditions.
    why: String,
    /// When a schedule starts or ends next, within the horizon asked for.
    next_change: Option<Duration>,
    /// The first schedule that cannot be read, and why.
    unreadable: Option<String>,
}

fn floor(spec: &Autoscaling, now: Timestamp, horizon: Duration) -> Floor {
    let mut floor = spec.min_replicas;
    let mut why = format!("minReplicas is {floor}");
    let (mut next, mut bad) = (None::<Timestamp>, None);
    for s in &spec.schedules {
        let parsed = duration::parse(&s.duration)
            .and_then(|d| Schedule::parse(&s.cron, s.time_zone.as_deref(), d));
        let schedule = match parsed {
            Ok(schedule) => schedule,
            Err(e) => {
                bad.get_or_insert(format!("schedule {:?}: {e}", s.cron));
                continue;
            }
        };
        if schedule.holds_at(now) && s.min_replicas > floor {
            floor = s.min_replicas;
            let zone = s.time_zone.as_deref().unwrap_or("UTC");
            why = format!(
                "schedule {:?} ({zone}, for {}) raises the floor to {floor}",
                s.cron, s.duration
            );
        }
        if let Some(at) = schedule.next_change(now, horizon) {
            next = Some(next.map_or(at, |n| n.min(at)));
        }
    }
    Floor {
        replicas: floor,
        why,
        next_change: next.and_then(|at| Duration::try_from(at.duration_since(now)).ok()),
        unreadable: bad,
    }
}

fn behavior(spec: &Autoscaling) -> Behavior {
    let rules = |given: Option<&verda_api::v1alpha1::ScalingRules>, default: Rules| Rules {
        window: given
            .and_then(|g| g.stabilization_window.as_deref())
            .and_then(|w| duration::parse(w).ok())
            .unwrap_or(default.window),
        max_step: given.and_then(|g| g.max_step).unwrap_or(default.max_step),
    };
    let behavior = spec.behavior.as_ref();
    Behavior {
        up: rules(behavior.and_then(|b| b.scale_up.as_ref()), UP),
        down: rules(behavior.and_then(|b| b.scale_down.as_ref()), DOWN),
    }
}

/// The manager that last wrote `spec.replicas`, when it is not the autoscaler and wrote
/// a size other than the last decided (`before`): that size is set back.
fn overridden(group: &VirtualMachineGroup, before: Option<&AutoscalingStatus>) -> Option<String> {
    before.filter(|last| last.desired_replicas != group.spec.replicas)?;
    let owner = group
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| owns_spec_replicas(e))
        .max_by_key(|e| e.time.as_ref().map(|t| t.0))?;
    let manager = owner.manager.clone().unwrap_or_default();
    (manager != AUTOSCALER_FIELD_MANAGER).then_some(manager)
}

fn is_ready(vm: &VirtualMachine) -> bool {
    vm.status.as_ref().is_some_and(|s| {
        verda_api::conditions::is_true(&s.conditions, verda_api::conditions::READY)
    })
}

fn metric_status(m: &Reading, current: i32) -> MetricStatus {
    MetricStatus {
        name: m.name.clone(),
        current: m
            .value
            .as_ref()
            .ok()
            .map(|total| quantity(total / f64::from(current.max(1)))),
        target: quantity(m.target),
    }
}

/// A value as a person reads it: `225`, `12.5`, `0.33`.
fn quantity(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

type Verdict = (&'static str, Status, &'static str, String);

/// `AbleToScale`, with a HorizontalPodAutoscaler's reasons (and `ScaleStepPending`).
fn able_to_scale(decided: i32, current: i32, settled: Settled) -> Verdict {
    let (reason, message) = if decided != current {
        (
            "SucceededRescale",
            format!("the autoscaler set spec.replicas from {current} to {decided}"),
        )
    } else if !(settled.up && settled.down) {
        (
            "ScaleStepPending",
            format!(
                "the group is still reaching its size of {current}; the next step waits for it"
            ),
        )
    } else {
        ("ReadyForNewScale", "the group may be scaled now".to_owned())
    };
    (ABLE_TO_SCALE, Status::True, reason, message)
}

/// `ScalingActive`: False with the first metric or schedule that could not be read.
fn scaling_active(readings: &[Reading], unreadable: Option<String>, floor_why: &str) -> Verdict {
    let unread = readings
        .iter()
        .find_map(|m| m.value.as_ref().err().map(|u| (m, u)));
    let (status, reason, message) = match (unread, unreadable) {
        (Some((m, u)), _) => (
            Status::False,
            u.reason,
            format!(
                "{}: {}; the group holds its size (it may grow on the other metrics)",
                m.name, u.message
            ),
        ),
        (None, Some(bad)) => (
            Status::False,
            "InvalidSchedule",
            format!("{bad}; the other schedules and metrics still apply"),
        ),
        (None, None) if readings.is_empty() => (
            Status::True,
            "NoMetrics",
            format!("no metrics: the group is sized by its floor ({floor_why})"),
        ),
        (None, None) => {
            let names: Vec<&str> = readings.iter().map(|m| m.name.as_str()).collect();
            let message = format!("the size follows {}", names.join(", "));
            (Status::True, "ValidMetricFound", message)
        }
    };
    (SCALING_ACTIVE, status, reason, message)
}

/// `ScalingLimited`: which bound or step held the size.
fn scaling_limited(limit: Option<Limit>, bounds: Bounds, floor_why: &str) -> Verdict {
    let (status, reason, message) = match limit {
        Some(Limit::TooFew) => (
            Status::True,
            Limit::TooFew.reason(),
            format!("the size is held at its floor of {}: {floor_why}", bounds.floor),
        ),
        Some(Limit::TooMany) => (
            Status::True,
            Limit::TooMany.reason(),
            format!("the size is held at maxReplicas {}", bounds.ceiling),
        ),
        Some(step) => (
            Status::True,
            step.reason(),
            "the step is limited by behavior's maxStep; the next follows once the group reaches this size"
                .to_owned(),
        ),
        None => (
            Status::False,
            "DesiredWithinRange",
            format!("the size lies within {} to {}", bounds.floor, bounds.ceiling),
        ),
    };
    (SCALING_LIMITED, status, reason, message)
}

/// Writes the sizing's `spec.replicas` through the scale subresource; the event that
/// tells it.
pub async fn write(
    client: &kube::Client,
    group: &VirtualMachineGroup,
    sizing: &Sizing,
) -> Result<(&'static str, String), ReconcileError> {
    let api: Api<VirtualMachineGroup> =
        Api::namespaced(client.clone(), &group.namespace().unwrap_or_default());
    let params = PatchParams {
        field_manager: Some(AUTOSCALER_FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let patch = json!({"spec": {"replicas": sizing.replicas()}});
    api.patch_scale(&group.name_any(), &params, &Patch::Merge(&patch))
        .await
        .map(|_| sizing.event())
        .map_err(ReconcileError::kube(
            "write spec.replicas (scale subresource)",
            &object_key(group),
        ))
}

/// The sizing in the status: `status.autoscaling` and the three conditions; without
/// `spec.autoscaling`, neither.
pub fn report(
    status: &mut VirtualMachineGroupStatus,
    sizing: Option<&Sizing>,
    generation: Option<i64>,
    now: Timestamp,
) {
    let Some(sizing) = sizing else {
        status.autoscaling = None;
        for type_ in [ABLE_TO_SCALE, SCALING_ACTIVE, SCALING_LIMITED] {
            verda_api::conditions::remove_condition(&mut status.conditions, type_);
        }
        return;
    };
    status.autoscaling = Some(sizing.status.clone());
    for (type_, state, reason, message) in &sizing.conditions {
        let new = NewCondition {
            type_,
            status: *state,
            reason,
            message: message.clone(),
        };
        set_condition(&mut status.conditions, new, generation, now);
    }
}
