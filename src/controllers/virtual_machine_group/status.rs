//! The VirtualMachineGroup status: replica counts, the selector of the scale
//! subresource, the server group, and a Ready condition that says why not.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::events::{Event, EventType};
use verda_api::conditions::{NewCondition, READY, Status, find_condition, set_condition};
use verda_api::v1alpha1::{
    ReplicaHealth, VirtualMachine, VirtualMachineGroup, VirtualMachineGroupStatus, labels,
};

use crate::cloud::ids::ServerGroupId;
use crate::controllers::virtual_machine::plan::NO_VALID_HOST;
use crate::controllers::virtual_machine_group::health::{STARTING, UNHEALTHY};
use crate::controllers::virtual_machine_group::plan::{Health, Member, Plan, Policy};
use crate::controllers::virtual_machine_group::rollout;
use crate::runtime::events::event;

/// Ready's reasons when a rollout or the healing stopped (kstatus `Stalled`: they are
/// [`Problem`]s, for the user to fix).
pub const PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
pub const TOO_MANY_UNHEALTHY: &str = "TooManyUnhealthy";

/// The status after this round.
pub fn next_status(
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
    members: &[Member],
    policy: &Policy,
    server_group: Option<&ServerGroupId>,
    now: Timestamp,
) -> VirtualMachineGroupStatus {
    let hash = policy.template_hash.as_str();
    let mut status = group.status.clone().unwrap_or_default();
    let active: Vec<&Member> = members
        .iter()
        .filter(|m| m.draining_since.is_none())
        .collect();
    status.replicas = members.len() as i32;
    status.ready_replicas = active.iter().filter(|m| m.ready).count() as i32;
    status.updated_replicas = active.iter().filter(|m| m.template_hash == hash).count() as i32;
    status.server_group_id = server_group.map(ToString::to_string);
    status.selector = Some(format!("{}={}", labels::GROUP, group.name_any()));
    let outdated = active.iter().any(|m| policy.outdated(m));
    let (ready, reason, message) =
        readiness(group, vms, &status, active.len() as i32, outdated, policy);
    set_condition(
        &mut status.conditions,
        NewCondition {
            type_: READY,
            status: ready,
            reason,
            message,
        },
        group.metadata.generation,
        now,
    );
    status.observed_generation = group.metadata.generation;
    status
}

/// The group's Ready condition from its counts (`active`: members not draining): every
/// replica Ready on the current template, or what is still under way, or why not.
fn readiness(
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
    status: &VirtualMachineGroupStatus,
    active: i32,
    outdated: bool,
    policy: &Policy,
) -> (Status, &'static str, String) {
    let unplaced = vms
        .iter()
        .filter(|vm| {
            vm.status
                .as_ref()
                .and_then(|s| find_condition(&s.conditions, READY))
                .is_some_and(|c| c.reason == NO_VALID_HOST)
        })
        .count();
    let desired = group.spec.replicas;
    if unplaced > 0 {
        (
            Status::False,
            NO_VALID_HOST,
            format!(
                "{unplaced} of {desired} VirtualMachines could not be placed: Nova found no valid host \
                 (hard anti-affinity needs one hypervisor per server; use haPolicy soft or fewer replicas)"
            ),
        )
    } else if status.ready_replicas == desired && !outdated && active == desired {
        (
            Status::True,
            "AllReplicasReady",
            format!("{desired} of {desired} VirtualMachines are Ready"),
        )
    } else if outdated {
        (
            Status::False,
            "RollingUpdate",
            format!(
                "{} of {desired} VirtualMachines run the current template{}",
                status.updated_replicas,
                in_place_note(policy)
            ),
        )
    } else {
        (
            Status::False,
            "Scaling",
            format!(
                "{} of {desired} VirtualMachines are Ready",
                status.ready_replicas
            ),
        )
    }
}

/// What a rollout in place says of `maxUnavailable: 0`, which it cannot keep: each
/// replica keeps its index, so it is replaced where it stands.
fn in_place_note(policy: &Policy) -> &'static str {
    match policy.in_place && policy.max_unavailable == 0 {
        true => {
            "; updated in place one replica at a time (its volumes, addresses or the partition \
             keep each replica's index), so one is unavailable while it is replaced although \
             maxUnavailable is 0"
        }
        false => "",
    }
}

/// What `rollout` reads of the round.
pub struct Round<'a> {
    pub policy: &'a Policy,
    pub members: &'a [Member],
    pub judged: &'a [ReplicaHealth],
    /// The template changed since the last status.
    pub new_revision: bool,
    /// What the round did (nothing while paused).
    pub round: &'a Plan,
}

/// Availability, health, revisions, and Ready=False (so kstatus `Stalled`) with why,
/// when the progress deadline passed or too many replicas are unhealthy to heal.
pub fn rollout(
    status: &mut VirtualMachineGroupStatus,
    group: &VirtualMachineGroup,
    r: Round<'_>,
    now: Timestamp,
) {
    let active: Vec<&Member> = r.members.iter().filter(|m| m.active()).collect();
    let available = active.iter().filter(|m| r.policy.available(m, now)).count() as i32;
    let before = status.progressed_at.as_ref().map(|t| t.0);
    let more = available > status.available_replicas;
    let at = rollout::progressed_at(before, r.new_revision, r.policy.stalled, r.round, more, now);
    status.progressed_at = Some(Time(at));
    status.available_replicas = available;
    status.unhealthy_replicas = active
        .iter()
        .filter(|m| matches!(m.health, Health::Unhealthy { .. }))
        .count() as i32;
    status.update_revision = Some(r.policy.template_hash.clone());
    status.current_revision = current_revision(&active, &r.policy.template_hash);
    status.replica_health = carried_health(&status.replica_health, group, &r, now);
    if let Some((reason, message)) = stalled(group, &r, &active, now) {
        set_condition(
            &mut status.conditions,
            NewCondition {
                type_: READY,
                status: Status::False,
                reason,
                message,
            },
            group.metadata.generation,
            now,
        );
    }
}

/// Each replica's health after the round: a replica healed now starts again (its
/// replacement is `Starting`, one more replacement counted); an index whose
/// VirtualMachine is gone for a replacement keeps its record until it is back.
fn carried_health(
    before: &[ReplicaHealth],
    group: &VirtualMachineGroup,
    r: &Round<'_>,
    now: Timestamp,
) -> Vec<ReplicaHealth> {
    let mut judged: Vec<ReplicaHealth> = r.judged.to_vec();
    for health in judged.iter_mut().filter(|h| r.round.heal.contains(&h.name)) {
        health.replacements += 1;
        health.state = STARTING.to_owned();
        health.reason = "Replacing".to_owned();
        health.message = String::new();
        health.since = Time(now);
    }
    let name = group.name_any();
    let wanted = |h: &ReplicaHealth| {
        h.name
            .strip_prefix(&format!("{name}-"))
            .and_then(|i| i.parse::<i64>().ok())
            .is_some_and(|i| i < i64::from(group.spec.replicas))
    };
    let gone: Vec<ReplicaHealth> = before
        .iter()
        .filter(|h| wanted(h) && !judged.iter().any(|j| j.name == h.name))
        .cloned()
        .collect();
    judged.extend(gone);
    judged.sort_by(|a, b| a.name.cmp(&b.name));
    judged
}

/// The template hash most active replicas run (the update revision on a tie).
fn current_revision(active: &[&Member], update: &str) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for m in active {
        *counts.entry(m.template_hash.as_str()).or_default() += 1;
    }
    let most = counts.values().copied().max()?;
    if counts.get(update) == Some(&most) {
        return Some(update.to_owned());
    }
    counts
        .into_iter()
        .find(|(_, n)| *n == most)
        .map(|(hash, _)| hash.to_owned())
}

/// Why the group is stalled: the progress deadline passed, or too many replicas are
/// unhealthy to heal any.
fn stalled(
    group: &VirtualMachineGroup,
    r: &Round<'_>,
    active: &[&Member],
    now: Timestamp,
) -> Option<(&'static str, String)> {
    if r.policy.stalled {
        let first_not_available = active
            .iter()
            .filter(|m| !r.policy.available(m, now))
            .find_map(|m| r.judged.iter().find(|h| h.name == m.name));
        return Some((
            PROGRESS_DEADLINE_EXCEEDED,
            deadline_message(group, r, first_not_available),
        ));
    }
    let unhealthy: Vec<&ReplicaHealth> = r
        .judged
        .iter()
        .filter(|h| h.state == UNHEALTHY && active.iter().any(|m| m.name == h.name))
        .collect();
    let healing = r.policy.healing?;
    if unhealthy.len() <= healing.max_unhealthy as usize {
        return None;
    }
    let named: Vec<String> = unhealthy
        .iter()
        .take(3)
        .map(|h| format!("{} ({}{})", h.name, h.reason, with_message(&h.message)))
        .collect();
    let message = format!(
        "{} of {} replicas are unhealthy, more than autoHealing.maxUnhealthy allows ({}): none is replaced, as the fault is likely not the replicas' own; check the network and the load balancers' health monitors. Unhealthy: {}",
        unhealthy.len(),
        group.spec.replicas,
        healing.max_unhealthy,
        named.join(", ")
    );
    Some((TOO_MANY_UNHEALTHY, message))
}

/// What `ProgressDeadlineExceeded` says: the replica that did not come up and why.
/// Once the stalled rollout removed it, the message that named it stays.
fn deadline_message(
    group: &VirtualMachineGroup,
    r: &Round<'_>,
    first_not_available: Option<&ReplicaHealth>,
) -> String {
    let said = group
        .status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, READY))
        .filter(|c| c.reason == PROGRESS_DEADLINE_EXCEEDED);
    if let (None, Some(said)) = (first_not_available, said) {
        return said.message.clone();
    }
    let seen = first_not_available.map_or(String::new(), |h| {
        format!(
            ": {} is {} ({}{})",
            h.name,
            h.state,
            h.reason,
            with_message(&h.message)
        )
    });
    format!(
        "the rollout of template {} made no progress in {}s{seen}; no more replicas are replaced and every old one still serving is kept: fix spec.template (or revert it)",
        r.policy.template_hash,
        rollout::deadline(group).as_secs()
    )
}

fn with_message(message: &str) -> String {
    match message.is_empty() {
        true => String::new(),
        false => format!(": {message}"),
    }
}

/// The events of the round's healing: each replica replaced, and why.
pub fn heal_events(round: &Plan, judged: &[ReplicaHealth]) -> Vec<(&'static str, String)> {
    round
        .heal
        .iter()
        .filter_map(|name| judged.iter().find(|h| &h.name == name))
        .map(|h| {
            (
                "Healing",
                format!(
                    "replacing {}, unhealthy since {} ({}{}): it leaves the load balancers' pools first and comes back with its index and volumes",
                    h.name, h.since.0, h.reason, with_message(&h.message)
                ),
            )
        })
        .collect()
}

/// A warning when the group's rollout or healing stops (or stops for another reason).
pub fn stalled_event(
    before: Option<&VirtualMachineGroupStatus>,
    after: &VirtualMachineGroupStatus,
) -> Option<Event> {
    let reason_of = |s: &VirtualMachineGroupStatus| {
        find_condition(&s.conditions, READY)
            .map(|c| c.reason.clone())
            .filter(|r| r == PROGRESS_DEADLINE_EXCEEDED || r == TOO_MANY_UNHEALTHY)
    };
    let now = reason_of(after)?;
    if before.and_then(reason_of).as_ref() == Some(&now) {
        return None;
    }
    let message = find_condition(&after.conditions, READY).map(|c| c.message.clone());
    let reason = match now == PROGRESS_DEADLINE_EXCEEDED {
        true => PROGRESS_DEADLINE_EXCEEDED,
        false => TOO_MANY_UNHEALTHY,
    };
    Some(event(
        EventType::Warning,
        reason,
        message.unwrap_or_default(),
        "Rollout",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::virtual_machine_group::plan::tests::member;

    fn group(replicas: i32) -> VirtualMachineGroup {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "verda.linecorp.com/v1alpha1",
            "kind": "VirtualMachineGroup",
            "metadata": {"name": "web", "namespace": "ns", "generation": 3},
            "spec": {"replicas": replicas, "template": {"image": "centos79", "flavor": "m1"}}
        }))
        .expect("group")
    }

    fn policy(replicas: i32) -> Policy {
        let drain = std::time::Duration::from_secs(60);
        rollout::policy(&group(replicas), "new", false, drain, false)
    }

    fn ready_of(status: &VirtualMachineGroupStatus) -> (&str, &str, &str) {
        let c = find_condition(&status.conditions, READY).expect("Ready");
        (c.status.as_str(), c.reason.as_str(), c.message.as_str())
    }

    #[test]
    fn counts_and_ready_follow_the_members() {
        let members = [member(0, "new", true), member(1, "new", false)];
        let status = next_status(&group(2), &[], &members, &policy(2), None, Timestamp::now());
        assert_eq!(
            (
                status.replicas,
                status.ready_replicas,
                status.updated_replicas
            ),
            (2, 1, 2)
        );
        assert_eq!(
            status.selector.as_deref(),
            Some("verda.linecorp.com/group=web")
        );
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(
            ready_of(&status),
            ("False", "Scaling", "1 of 2 VirtualMachines are Ready")
        );

        let members = [member(0, "old", true), member(1, "new", true)];
        let status = next_status(&group(2), &[], &members, &policy(2), None, Timestamp::now());
        assert_eq!(ready_of(&status).1, "RollingUpdate");

        let members = [member(0, "new", true), member(1, "new", true)];
        let status = next_status(&group(2), &[], &members, &policy(2), None, Timestamp::now());
        assert_eq!(
            ready_of(&status),
            (
                "True",
                "AllReplicasReady",
                "2 of 2 VirtualMachines are Ready"
            )
        );
    }

    #[test]
    fn a_rollout_in_place_says_it_takes_one_replica_away_whatever_max_unavailable_says() {
        let members = [member(0, "old", true), member(1, "new", true)];
        let mut in_place = policy(2);
        in_place.in_place = true;
        let status = next_status(&group(2), &[], &members, &in_place, None, Timestamp::now());
        let (_, reason, message) = ready_of(&status);
        assert_eq!(reason, "RollingUpdate");
        assert!(
            message
                .starts_with("1 of 2 VirtualMachines run the current template; updated in place")
                && message.ends_with("although maxUnavailable is 0"),
            "{message}"
        );
        // With room to take replicas away, or with surge, there is nothing to explain.
        in_place.max_unavailable = 1;
        let status = next_status(&group(2), &[], &members, &in_place, None, Timestamp::now());
        assert_eq!(
            ready_of(&status).2,
            "1 of 2 VirtualMachines run the current template"
        );
        let status = next_status(&group(2), &[], &members, &policy(2), None, Timestamp::now());
        assert_eq!(
            ready_of(&status).2,
            "1 of 2 VirtualMachines run the current template"
        );
    }

    #[test]
    fn a_draining_member_does_not_count_as_ready() {
        let mut leaving = member(2, "new", true);
        leaving.draining_since = Some(Timestamp::now());
        let members = [member(0, "new", true), member(1, "new", true), leaving];
        let status = next_status(&group(2), &[], &members, &policy(2), None, Timestamp::now());
        assert_eq!((status.replicas, status.ready_replicas), (3, 2));
        assert_eq!(ready_of(&status).1, "AllReplicasReady");
    }
}
