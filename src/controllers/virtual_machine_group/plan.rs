//! The VirtualMachineGroup plan: desired replicas and template + the group's
//! VirtualMachines + which of them load balancers still serve → what to create, what to
//! drain, what to delete.
//!
//! Pure. Removal is two-phase: a VirtualMachine is first marked draining (load
//! balancers drop it from their pools), and deleted only once no pool lists it or the
//! drain timed out. A template change rolls out as a Deployment's (`maxSurge` new ones
//! at once, old ones drained while `maxUnavailable` allows), or in place, index by
//! index from `partition`, when replicas keep their index.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::v1alpha1::HaPolicy;
use verda_api::v1alpha1::{Retention, VirtualMachine, VirtualMachineGroup};

use crate::cloud::model::volume::{Volume, VolumeState};
use crate::controllers::virtual_machine::volumes::status::reported;

use crate::cloud::ids::ServerGroupId;
use crate::cloud::model::compute::ServerGroupPolicy;
use crate::controllers::virtual_machine::plan::replace_delay;
use crate::runtime::object::replica_index;

/// What the plan needs to know about one VirtualMachine of the group.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub name: String,
    /// Index in the name `<group>-<index>`.
    pub index: u32,
    pub template_hash: String,
    pub ready: bool,
    /// When the VirtualMachine was marked draining, if it was.
    pub draining_since: Option<Timestamp>,
    /// Its deletion was asked for already (it waits on its finalizer).
    pub deleting: bool,
    /// Some load balancer pool still lists it, or (with `spec.dns`) a record set of the
    /// group still holds its address or is still being published.
    pub in_pools: bool,
    /// Some load balancer that draws on the group lists it in every pool.
    pub serving: bool,
    /// As the group judges it (`health`).
    pub health: Health,
    /// Its zone (with `spec.zones`): asked for, else where Nova put it.
    pub zone: Option<String>,
    /// In the wrong zone and to be moved as a rollout replaces (`zones::Misplaced`).
    pub misplaced: bool,
    /// Beyond its zone's share: a scale-down removes it first.
    pub surplus: bool,
}

impl Member {
    /// Neither draining nor being deleted: one of the replicas the group runs now.
    pub fn active(&self) -> bool {
        self.draining_since.is_none() && !self.deleting
    }
}

/// A replica's health: whether its server is as its run strategy wants and its load
/// balancer members are not failing, and since when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Health {
    /// Not healthy yet since it was created (building, or never Ready).
    Starting,
    Healthy {
        since: Timestamp,
    },
    /// Healthy once, not now; `replacements`: replaced for it in a row before.
    Unhealthy {
        since: Timestamp,
        replacements: i32,
    },
}

/// How the group rolls out, heals and scales: its spec, resolved to counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub replicas: u32,
    pub template_hash: String,
    /// A template change replaces VirtualMachines (`RollingUpdate`).
    pub rolling: bool,
    /// The replicas have data volumes, which belong to their index: a scale-down
    /// removes the highest indices, as a StatefulSet's.
    pub stateful: bool,
    /// Replacements keep the index (no surge): data volumes, or a partition.
    pub in_place: bool,
    pub max_surge: u32,
    pub max_unavailable: u32,
    /// Only indices from here on get the new template.
    pub partition: u32,
    /// Healthy this long before a replica counts as available.
    pub min_ready: Duration,
    /// Some load balancer draws on the group: a replica is available only in its pools.
    pub serving_required: bool,
    pub drain_timeout: Duration,
    pub healing: Option<Healing>,
    /// The rollout passed its progress deadline: it replaces no more outdated replicas.
    pub stalled: bool,
}

/// `autoHealing`, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Healing {
    pub unhealthy_after: Duration,
    /// More unhealthy replicas than this: none is replaced.
    pub max_unhealthy: u32,
}

impl Policy {
    /// Whether `m` should be on the new template and is not.
    pub fn outdated(&self, m: &Member) -> bool {
        let stale = m.template_hash != self.template_hash || m.misplaced;
        self.rolling && stale && m.index >= self.partition
    }

    /// Ready, in every pool where a load balancer draws on the group, and healthy for
    /// `min_ready` (a replica not healthy yet — its member still failing its health
    /// monitor — is not available, however Ready its server).
    pub fn available(&self, m: &Member, now: Timestamp) -> bool {
        let up = m.ready && (!self.serving_required || m.serving);
        let settled = match m.health {
            Health::Healthy { since } => {
                now.duration_since(since).as_secs_f64() >= self.min_ready.as_secs_f64()
            }
            Health::Starting | Health::Unhealthy { .. } => false,
        };
        up && settled
    }

    /// Whether `m` has been unhealthy long enough to be replaced: `unhealthyAfter`,
    /// doubled for each replacement in a row before (the ERROR backoff).
    fn heal_due(&self, m: &Member, now: Timestamp) -> bool {
        let (
            Some(healing),
            Health::Unhealthy {
                since,
                replacements,
            },
        ) = (self.healing, m.health)
        else {
            return false;
        };
        let wait = replace_delay(healing.unhealthy_after, replacements + 1);
        now.duration_since(since).as_secs_f64() >= wait.as_secs_f64()
    }
}

/// What to do this round.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The Nova server group to create before any VirtualMachine, with this policy.
    pub server_group: Option<ServerGroupPolicy>,
    pub scale: Plan,
}

/// The server group `ha_policy` asks for when none exists (`found` is `None`).
pub fn missing_server_group(
    ha_policy: HaPolicy,
    found: Option<&ServerGroupId>,
) -> Option<ServerGroupPolicy> {
    match (ha_policy, found) {
        (_, Some(_)) | (HaPolicy::None, None) => None,
        (HaPolicy::Soft, None) => Some(ServerGroupPolicy::SoftAntiAffinity),
        (HaPolicy::Hard, None) => Some(ServerGroupPolicy::AntiAffinity),
    }
}

/// One round's changes to the group's VirtualMachines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Indices of VirtualMachines to create from the current template.
    pub create: Vec<u32>,
    /// Names to mark draining.
    pub drain: Vec<String>,
    /// Names to delete (drained, or the drain timed out).
    pub delete: Vec<String>,
    /// Of `drain`, those replaced for being unhealthy.
    pub heal: Vec<String>,
}

impl Plan {
    /// The events that tell `kubectl describe` what the round does to the group's
    /// VirtualMachines (named `<group>-<index>`): reason and note.
    pub fn events(&self, group: &str) -> Vec<(&'static str, String)> {
        let mut events = Vec::new();
        if !self.create.is_empty() {
            let names: Vec<String> = self.create.iter().map(|i| format!("{group}-{i}")).collect();
            events.push((
                "Created",
                format!("created VirtualMachines {}", names.join(", ")),
            ));
        }
        if !self.drain.is_empty() {
            events.push((
                "Draining",
                format!(
                    "VirtualMachines {} leave the load balancers' pools before they are deleted",
                    self.drain.join(", ")
                ),
            ));
        }
        if !self.delete.is_empty() {
            events.push((
                "Deleted",
                format!("deleted VirtualMachines {}", self.delete.join(", ")),
            ));
        }
        events
    }
}

/// Decides the round: Deployment's surge and unavailability (in place, StatefulSet's
/// partition, when replicas keep their index), healing within `maxUnhealthy`.
pub fn plan(policy: &Policy, members: &[Member], now: Timestamp) -> Plan {
    let mut plan = Plan {
        delete: drained(members, policy.drain_timeout, now),
        ..Plan::default()
    };
    let active: Vec<&Member> = members.iter().filter(|m| m.active()).collect();
    let rollout: Vec<&Member> = match policy.stalled {
        true => Vec::new(),
        false => active
            .iter()
            .copied()
            .filter(|m| policy.outdated(m))
            .collect(),
    };
    plan.heal = heal_victims(policy, members, &active, &rollout, now);
    let mut drain: Vec<&Member> = active
        .iter()
        .copied()
        .filter(|m| plan.heal.contains(&m.name))
        .collect();
    let round = Round {
        policy,
        members,
        active: &active,
        rollout: &rollout,
        now,
    };
    let (create, more) = match policy.in_place || policy.max_surge == 0 {
        true => round.in_place(),
        false => round.surge(),
    };
    plan.create = create;
    drain.extend(more);
    let mut names: Vec<String> = drain.iter().map(|m| m.name.clone()).collect();
    names.sort();
    names.dedup();
    plan.drain = names;
    plan
}

/// One round's view: the members, those active (not leaving), those the rollout
/// replaces.
struct Round<'a> {
    policy: &'a Policy,
    members: &'a [Member],
    active: &'a [&'a Member],
    rollout: &'a [&'a Member],
    now: Timestamp,
}

impl<'a> Round<'a> {
    /// In place: each index is replaced once its last VirtualMachine is gone, at least
    /// one unavailable at a time; a scale-down removes the highest indices.
    fn in_place(&self) -> (Vec<u32>, Vec<&'a Member>) {
        let policy = self.policy;
        let create = free_indices_below(self.members, policy.replicas);
        let (mut drain, staying): (Vec<&Member>, Vec<&Member>) =
            self.active.iter().partition(|m| m.index >= policy.replicas);
        let available = staying
            .iter()
            .filter(|m| policy.available(m, self.now))
            .count();
        let floor =
            (policy.replicas as usize).saturating_sub(policy.max_unavailable.max(1) as usize);
        drain.extend(self.within_budget(available.saturating_sub(floor), false));
        (create, drain)
    }

    /// With surge: new replicas up to `replicas + maxSurge`, outdated ones drained while
    /// no more than `maxUnavailable` are unavailable; a scale-down removes not-ready
    /// replicas first, then the newest.
    fn surge(&self) -> (Vec<u32>, Vec<&'a Member>) {
        let policy = self.policy;
        let replicas = policy.replicas as usize;
        // A current replica on its way out below `replicas` (healed, or deleted by
        // hand) comes back at its own index once it is gone: its slot is not refilled.
        let returning = self
            .members
            .iter()
            .filter(|m| m.index < policy.replicas)
            .filter(|m| {
                m.deleting
                    || (m.draining_since.is_some() && m.template_hash == policy.template_hash)
            })
            .count();
        let active = self.active.len();
        let keep = active - self.rollout.len() + returning;
        let ceiling = replicas + policy.max_surge as usize;
        let count = replicas
            .saturating_sub(keep)
            .min(ceiling.saturating_sub(active + returning));
        let create = free_indices(self.members, count);
        let kept: Vec<&Member> = self
            .active
            .iter()
            .copied()
            .filter(|m| !policy.outdated(m) || policy.stalled)
            .collect();
        let available = self
            .active
            .iter()
            .filter(|m| policy.available(m, self.now))
            .count();
        let floor = replicas.saturating_sub(policy.max_unavailable as usize);
        let mut budget = available.saturating_sub(floor);
        // One budget for the surplus and the rollout: a replica left surplus by a new
        // one in its zone that does not serve yet stays until that one does. A plain
        // scale-down takes the not-ready first, so the budget never holds it back.
        let mut drain = Vec::new();
        if kept.len() > replicas {
            for m in victims_of(&kept, policy, kept.len() - replicas) {
                if policy.available(m, self.now) {
                    if budget == 0 {
                        continue;
                    }
                    budget -= 1;
                }
                drain.push(m);
            }
        }
        drain.extend(self.within_budget(budget, true));
        (create, drain)
    }

    /// Outdated replicas to drain this round: every unavailable one (it serves
    /// nothing), then the others up to `budget`, highest index first, but never the
    /// last available one of its zone when `by_zone` (a surge rollout with
    /// `spec.zones`; a replica moved out of its zone on purpose may be): a rollout does
    /// not leave a zone serving none at once. In place, a zone's only replica has to go
    /// for its replacement to come.
    fn within_budget(&self, budget: usize, by_zone: bool) -> Vec<&'a Member> {
        // A replica moved between zones goes outside the budget only when its server is
        // down: Ready but missing from a pool for a moment, it still serves.
        let (down, mut up): (Vec<&Member>, Vec<&Member>) = self
            .rollout
            .iter()
            .partition(|m| !self.policy.available(m, self.now) && (!m.misplaced || !m.ready));
        up.sort_by_key(|m| std::cmp::Reverse(m.index));
        let mut serving: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self
            .active
            .iter()
            .filter(|m| self.policy.available(m, self.now))
        {
            *serving
                .entry(m.zone.as_deref().unwrap_or_default())
                .or_default() += 1;
        }
        let mut taken = Vec::new();
        for m in up {
            if taken.len() == budget {
                break;
            }
            if let Some(zone) = m.zone.as_deref().filter(|_| by_zone && !m.misplaced) {
                let left = serving.entry(zone).or_default();
                if *left <= 1 {
                    continue;
                }
                *left -= 1;
            }
            taken.push(m);
        }
        down.into_iter().chain(taken).collect()
    }
}

/// The unhealthy replicas to replace now: due, while no more than `maxUnhealthy` are
/// unhealthy, and no more at once than `maxUnavailable` (at least one) counting those
/// already on their way out. A replica a rollout replaces anyway is not healed.
fn heal_victims(
    policy: &Policy,
    members: &[Member],
    active: &[&Member],
    rollout: &[&Member],
    now: Timestamp,
) -> Vec<String> {
    let Some(healing) = policy.healing else {
        return Vec::new();
    };
    let unhealthy = active
        .iter()
        .filter(|m| matches!(m.health, Health::Unhealthy { .. }))
        .count();
    if unhealthy > healing.max_unhealthy as usize {
        return Vec::new();
    }
    let leaving = members.len() - active.len();
    let missing = (policy.replicas as usize).saturating_sub(active.len());
    let room = (policy.max_unavailable.max(1) as usize).saturating_sub(leaving + missing);
    active
        .iter()
        .filter(|m| policy.heal_due(m, now) && !rollout.iter().any(|r| r.name == m.name))
        .take(room)
        .map(|m| m.name.clone())
        .collect()
}

/// `n` members to remove for a scale-down: the highest indices for a stateful group,
/// else not ready first, then outdated, then the newest.
fn victims_of<'a>(active: &[&'a Member], policy: &Policy, n: usize) -> Vec<&'a Member> {
    let by_index = policy.stateful;
    let mut order: Vec<&Member> = active.to_vec();
    order.sort_by_key(|m| {
        (
            !m.surplus,
            !by_index && m.ready,
            !by_index && m.template_hash == policy.template_hash,
            std::cmp::Reverse(m.index),
        )
    });
    order.into_iter().take(n).collect()
}

/// The draining members to delete now: out of every pool, or drained for too long. One
/// deletion each: a VirtualMachine already being deleted is not deleted (or reported)
/// again while its server goes.
fn drained(members: &[Member], drain_timeout: Duration, now: Timestamp) -> Vec<String> {
    members
        .iter()
        .filter(|m| !m.deleting)
        .filter(|m| {
            m.draining_since.is_some_and(|since| {
                let waited = now.duration_since(since).as_secs_f64();
                !m.in_pools || waited >= drain_timeout.as_secs_f64()
            })
        })
        .map(|m| m.name.clone())
        .collect()
}

/// The indices below `replicas` no member (draining ones included) uses: an index
/// replaced in place comes back once its last VirtualMachine is gone.
fn free_indices_below(members: &[Member], replicas: u32) -> Vec<u32> {
    let used: BTreeSet<u32> = members.iter().map(|m| m.index).collect();
    (0..replicas).filter(|i| !used.contains(i)).collect()
}

/// The `n` lowest indices no member (draining ones included) uses.
fn free_indices(members: &[Member], n: usize) -> Vec<u32> {
    let used: BTreeSet<u32> = members.iter().map(|m| m.index).collect();
    (0..).filter(|i| !used.contains(i)).take(n).collect()
}

/// What becomes of the data volumes of the group's VirtualMachine of replica `index`
/// when the group deletes it: kept for a replacement of the same index (below
/// `replicas`), as `whenScaled` says for a scale-down (its index is past `replicas`).
pub fn volume_fate(group: &VirtualMachineGroup, index: Option<u32>) -> Retention {
    match index.and_then(|i| i32::try_from(i).ok()) {
        Some(i) if i >= group.spec.replicas => {
            group.spec.volume_retention.unwrap_or_default().when_scaled
        }
        _ => Retention::Retain,
    }
}

/// The events telling what became of the volumes of the VirtualMachines this round
/// deletes for a scale-down (a replacement keeps them, unremarkably).
pub fn volume_events(
    group: &VirtualMachineGroup,
    round: &Plan,
    vms: &[VirtualMachine],
) -> Vec<(&'static str, String)> {
    let scaled = group.spec.replicas;
    round
        .delete
        .iter()
        .filter_map(|name| vms.iter().find(|vm| &vm.name_any() == name))
        .filter(|vm| vm.spec.volumes.as_ref().is_some_and(|v| !v.is_empty()))
        .filter_map(|vm| {
            let index = replica_index(vm, &group.name_any())?;
            (i64::from(index) >= i64::from(scaled)).then_some((vm, index))
        })
        .map(|(vm, index)| {
            let shown = reported(vm);
            match volume_fate(group, Some(index)) {
                Retention::Retain => (
                    "VolumesRetained",
                    format!(
                        "{} removed by the scale-down; its volumes {} are kept for index {index} and attached again when it comes back (volumeRetention.whenScaled: Retain)",
                        vm.name_any(),
                        shown
                    ),
                ),
                Retention::Delete => (
                    "VolumesDeleted",
                    format!(
                        "{} removed by the scale-down; its volumes {} are deleted with it (volumeRetention.whenScaled: Delete)",
                        vm.name_any(),
                        shown
                    ),
                ),
            }
        })
        .collect()
}

/// Retained volumes a scale-down left behind that `whenScaled: Delete` says must go:
/// at an index past `replicas`, detached. (A VirtualMachine deleted as a replacement
/// keeps its volumes for its index; a scale-down that came after makes them these.)
pub fn scaled_away(group: &VirtualMachineGroup, retained: &[(u32, Volume)]) -> Vec<(u32, Volume)> {
    let deleting = group.spec.volume_retention.unwrap_or_default().when_scaled == Retention::Delete;
    let replicas = u32::try_from(group.spec.replicas).unwrap_or(0);
    retained
        .iter()
        .filter(|(index, v)| deleting && *index >= replicas && v.status == VolumeState::Available)
        .cloned()
        .collect()
}

/// The event of [`scaled_away`]'s deletes.
pub fn scaled_away_event(volumes: &[(u32, Volume)]) -> (&'static str, String) {
    let named: Vec<String> = volumes
        .iter()
        .map(|(_, v)| format!("{} ({})", v.name.as_deref().unwrap_or("?"), v.id))
        .collect();
    (
        "VolumesDeleted",
        format!(
            "deleted volumes {} of replicas removed by a scale-down (volumeRetention.whenScaled: Delete)",
            named.join(", ")
        ),
    )
}

/// Stable hash of the template's JSON (FNV-1a), the `template-hash` label.
pub fn template_hash(template_json: &str) -> String {
    let hash = crate::fnv::fnv1a64(template_json.as_bytes());
    format!("{:010x}", hash & 0xff_ffff_ffff)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(super) mod tests;
