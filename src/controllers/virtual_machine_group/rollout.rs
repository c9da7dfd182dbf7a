//! The group's spec resolved for one round (`Policy`), and the rollout's progress
//! deadline: a rollout that makes no progress for `progressDeadlineSeconds` stops
//! replacing until the template changes again.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use verda_api::v1alpha1::{RunStrategy, UpdateStrategy, VirtualMachineGroup, scaled};

use crate::config::duration;
use crate::controllers::virtual_machine_group::plan::{Healing, Member, Plan, Policy};

/// Default `progressDeadlineSeconds`, as a Deployment's.
pub const PROGRESS_DEADLINE: Duration = Duration::from_secs(600);
/// Default `autoHealing.unhealthyAfter`.
pub const UNHEALTHY_AFTER: Duration = Duration::from_secs(300);
/// Default `autoHealing.maxUnhealthy`.
const MAX_UNHEALTHY: &str = "40%";

/// The group's spec for this round. `serving_required`: a load balancer draws on it.
pub fn policy(
    group: &VirtualMachineGroup,
    template_hash: &str,
    serving_required: bool,
    drain_timeout: Duration,
    stalled: bool,
) -> Policy {
    let spec = &group.spec;
    let replicas = u32::try_from(spec.replicas).unwrap_or(0);
    let rolling = spec.rolling_update.clone().unwrap_or_default();
    let partition = rolling
        .partition
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(0);
    let halted = spec.run_strategy == Some(RunStrategy::Halted);
    Policy {
        replicas,
        template_hash: template_hash.to_owned(),
        rolling: spec.update_strategy == UpdateStrategy::RollingUpdate,
        stateful: stateful(group),
        in_place: stateful(group) || partition > 0,
        max_surge: scaled(rolling.max_surge.as_ref(), replicas, true, 1),
        max_unavailable: scaled(rolling.max_unavailable.as_ref(), replicas, false, 0),
        partition,
        min_ready: Duration::from_secs(spec.min_ready_seconds.unwrap_or(0).max(0) as u64),
        // A halted replica serves nothing, by design.
        serving_required: serving_required && !halted,
        drain_timeout,
        healing: spec.auto_healing.as_ref().map(|h| Healing {
            unhealthy_after: h
                .unhealthy_after
                .as_deref()
                .and_then(|t| duration::parse(t).ok())
                .unwrap_or(UNHEALTHY_AFTER),
            max_unhealthy: scaled(
                Some(
                    h.max_unhealthy
                        .as_ref()
                        .unwrap_or(&IntOrString::String(MAX_UNHEALTHY.to_owned())),
                ),
                replicas,
                false,
                0,
            ),
        }),
        stalled,
    }
}

/// The group's progress deadline.
pub fn deadline(group: &VirtualMachineGroup) -> Duration {
    group
        .spec
        .progress_deadline_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map_or(PROGRESS_DEADLINE, Duration::from_secs)
}

/// Whether a rollout is under way: some replica that should be on the template is
/// not. (Replicas that fail later, the template unchanged, are the healer's concern,
/// not a rollout's deadline.)
pub fn rolling(policy: &Policy, members: &[Member]) -> bool {
    members
        .iter()
        .filter(|m| m.active())
        .any(|m| policy.outdated(m))
}

/// When the rollout last progressed, after this round: now when the template changed
/// (a new rollout), when the round creates or drains for it, or when more replicas are
/// available than the last status said; else as before. Never while stalled: the
/// removal of a stalled rollout's new replicas is no progress.
pub fn progressed_at(
    before: Option<Timestamp>,
    new_revision: bool,
    stalled: bool,
    round: &Plan,
    more_available: bool,
    now: Timestamp,
) -> Timestamp {
    let moved = !round.create.is_empty() || round.drain.len() > round.heal.len() || more_available;
    match before {
        Some(at) if !new_revision && (stalled || !moved) => at,
        _ => now,
    }
}

/// Whether a rollout under way has gone `deadline` without progress.
pub fn stalled(
    progressed_at: Option<Timestamp>,
    deadline: Duration,
    rolling: bool,
    now: Timestamp,
) -> bool {
    rolling
        && progressed_at
            .is_some_and(|at| now.duration_since(at).as_secs_f64() >= deadline.as_secs_f64())
}

/// Whether the replicas have data volumes or declared ports (kept per index): they are
/// replaced in place, index by index.
pub fn stateful(group: &VirtualMachineGroup) -> bool {
    let volumes = group.spec.template.volumes.as_ref();
    volumes.is_some_and(|v| !v.is_empty())
        || crate::controllers::virtual_machine_group::addresses::has_ports(group)
}
