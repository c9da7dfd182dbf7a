//! The VirtualMachineGroup plan: desired replicas and template + the group's
//! VirtualMachines + which of them load balancers still serve → what to create, what to
//! drain, what to delete.
//!
//! Pure. Removal is two-phase: a VirtualMachine is first marked draining (load
//! balancers drop it from their pools), and deleted only once no pool lists it or the
//! drain timed out. A template change rolls out one surge VirtualMachine at a time.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::v1alpha1::HaPolicy;
use verda_api::v1alpha1::{Retention, VirtualMachine, VirtualMachineGroup};

use crate::cloud::model::volume::{Volume, VolumeState};
use crate::controllers::virtual_machine::volumes::status::reported;

use crate::cloud::ids::ServerGroupId;
use crate::cloud::model::compute::ServerGroupPolicy;
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
    /// Some load balancer pool still lists it.
    pub in_pools: bool,
    /// Some load balancer that draws on the group lists it in every pool.
    pub serving: bool,
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

/// How a group replaces and removes VirtualMachines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// A template change replaces VirtualMachines (`RollingUpdate`).
    pub rolling: bool,
    /// The replicas have data volumes, which belong to their index: a template change
    /// replaces each in place (no surge: the new VirtualMachine takes the same index
    /// and volumes), and a scale-down removes the highest indices, as a StatefulSet's.
    pub stateful: bool,
}

/// Decides the round. `serving_required` is whether any load balancer draws on the
/// group (then a new VirtualMachine counts as up only when it is in the pools).
pub fn plan(
    replicas: u32,
    template_hash: &str,
    shape: Shape,
    members: &[Member],
    serving_required: bool,
    drain_timeout: Duration,
    now: Timestamp,
) -> Plan {
    let mut plan = Plan {
        delete: drained(members, drain_timeout, now),
        ..Plan::default()
    };
    let active: Vec<&Member> = members
        .iter()
        .filter(|m| m.draining_since.is_none())
        .collect();
    let up = |m: &Member| m.ready && (!serving_required || m.serving);
    let outdated: Vec<&Member> = active
        .iter()
        .copied()
        .filter(|m| m.template_hash != template_hash)
        .collect();
    let rolling = shape.rolling;
    let target = if rolling && !outdated.is_empty() && !shape.stateful {
        replicas + 1
    } else {
        replicas
    };
    let count = active.len() as u32;
    if count < target {
        let surge_blocked = rolling
            && !outdated.is_empty()
            && active
                .iter()
                .any(|m| m.template_hash == template_hash && !up(m));
        if count < replicas || !surge_blocked {
            plan.create = new_indices(members, (target - count) as usize, replicas, shape);
        }
    } else if count > target || (rolling && !outdated.is_empty() && count == target) {
        let surplus = (count - replicas) as usize;
        let new_ones_up = active
            .iter()
            .filter(|m| m.template_hash == template_hash)
            .all(|m| up(m));
        if count > target || new_ones_up {
            let n = surplus.max(1).min(count as usize);
            plan.drain = victims(&active, template_hash, n, shape.stateful && count > target);
        }
    }
    plan
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

/// Removal order: not ready first, then outdated, then the newest (highest index);
/// `by_index`: the highest indices only (a stateful scale-down).
fn victims(active: &[&Member], template_hash: &str, n: usize, by_index: bool) -> Vec<String> {
    let mut order: Vec<&&Member> = active.iter().collect();
    order.sort_by_key(|m| {
        (
            !by_index && m.ready,
            !by_index && m.template_hash == template_hash,
            std::cmp::Reverse(m.index),
        )
    });
    order.into_iter().take(n).map(|m| m.name.clone()).collect()
}

/// The indices of the VirtualMachines to create: the `n` lowest free ones; for a
/// stateful group never past `replicas` (an index's volumes are its own: it comes
/// back only once its last VirtualMachine is gone).
fn new_indices(members: &[Member], n: usize, replicas: u32, shape: Shape) -> Vec<u32> {
    let free = free_indices(members, n);
    match shape.stateful {
        true => free.into_iter().filter(|i| *i < replicas).collect(),
        false => free,
    }
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
