//! Availability zones of a group with `spec.zones`: how many replicas each zone should
//! hold, which replicas are in the wrong one, and where a new replica goes.
//!
//! Pure. Replica `n`'s home zone is `names[n mod len]`, so a zone should hold as many
//! replicas as the indices below `replicas` have it as home. Replicas that do not keep
//! their index (surge rollouts) are counted, not named: a new one goes where a zone
//! lacks one. `Balanced` hands the share of a zone Nova lists as not available to the
//! least-loaded zones that are; `Even` never does. A replica with data volumes or a
//! floating IP is pinned: it stays in its zone, which counts it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use verda_api::conditions::{READY, is_true};

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::v1alpha1::{GroupZones, VirtualMachine, ZoneSpread, ZoneStatus};

use super::plan::{Member, Policy};
use crate::cloud::model::compute::AvailabilityZone;
use crate::controllers::virtual_machine::plan::NO_VALID_HOST;

/// The group's zones and what Nova says of them.
#[derive(Clone, Debug, PartialEq)]
pub struct Zoning {
    pub names: Vec<String>,
    pub spread: ZoneSpread,
    /// Of `names`, those Nova does not list as available (not listed, or listed with
    /// `available: false`). Empty while no listing was had: every zone is assumed up.
    pub unavailable: BTreeSet<String>,
    /// Zones that found no valid host for a replica within [`REFUSAL_MEMORY`], and when.
    pub refused: BTreeMap<String, Timestamp>,
}

/// How long a zone where Nova found no valid host takes no replica (`Balanced`): long
/// enough that a full zone is not tried again at every round.
pub const REFUSAL_MEMORY: Duration = Duration::from_secs(600);

/// The zones where Nova found no valid host for a replica of the group, and when: as
/// the last status recorded them (within [`REFUSAL_MEMORY`] of `now`), and where a
/// replica asked into a zone is not Ready and last failed there with NoValidHost.
pub fn refusals(
    before: &[ZoneStatus],
    vms: &[VirtualMachine],
    now: Timestamp,
) -> BTreeMap<String, Timestamp> {
    let mut refused = BTreeMap::new();
    let recent =
        |at: Timestamp| now.duration_since(at).as_secs_f64() < REFUSAL_MEMORY.as_secs_f64();
    for z in before {
        if let Some(at) = z
            .no_valid_host_at
            .as_ref()
            .map(|t| t.0)
            .filter(|at| recent(*at))
        {
            refused.insert(z.name.clone(), at);
        }
    }
    for vm in vms
        .iter()
        .filter(|vm| vm.metadata.deletion_timestamp.is_none())
    {
        let (Some(zone), Some(status)) = (vm.spec.availability_zone.as_ref(), vm.status.as_ref())
        else {
            continue;
        };
        let failed = status
            .last_failure
            .as_ref()
            .filter(|f| f.reason == NO_VALID_HOST);
        if let Some(failure) = failed.filter(|_| !is_true(&status.conditions, READY)) {
            let at = refused.entry(zone.clone()).or_insert(failure.since.0);
            *at = (*at).max(failure.since.0);
        }
    }
    refused
}

/// Where a replica is, for the zone count.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub name: String,
    pub index: u32,
    /// Its server's zone (asked for, else where Nova put it); `None` while unknown.
    pub zone: Option<String>,
    /// Data volumes or a floating IP keep it in its zone.
    pub pinned: bool,
}

impl Zoning {
    /// `spec.zones` with Nova's listing (`None`: no listing had).
    pub fn new(zones: &GroupZones, listing: Option<&[AvailabilityZone]>) -> Self {
        let unavailable = match listing {
            None => BTreeSet::new(),
            Some(listed) => zones
                .names
                .iter()
                .filter(|z| !listed.iter().any(|l| &l.name == *z && l.state.available))
                .cloned()
                .collect(),
        };
        Zoning {
            names: zones.names.clone(),
            spread: zones.spread,
            unavailable,
            refused: BTreeMap::new(),
        }
    }

    /// The same, with the zones that found no valid host lately (see [`refusals`]).
    pub fn refusing(self, refused: BTreeMap<String, Timestamp>) -> Self {
        Zoning { refused, ..self }
    }

    pub fn home(&self, index: u32) -> &str {
        &self.names[index as usize % self.names.len()]
    }

    fn can_take(&self, zone: &str) -> bool {
        !self.unavailable.contains(zone) && !self.refused.contains_key(zone)
    }

    /// How many replicas each zone should hold for `replicas`, given that `pinned`
    /// replicas (per zone) stay where they are.
    pub fn targets(&self, replicas: u32, pinned: &BTreeMap<String, u32>) -> BTreeMap<String, u32> {
        let mut targets: BTreeMap<String, u32> =
            self.names.iter().map(|z| (z.clone(), 0)).collect();
        for i in 0..replicas {
            *targets.entry(self.home(i).to_owned()).or_default() += 1;
        }
        if self.spread == ZoneSpread::Even {
            return targets;
        }
        let up: Vec<&String> = self.names.iter().filter(|z| self.can_take(z)).collect();
        if up.is_empty() {
            return targets;
        }
        let down = self.names.iter().filter(|z| !self.can_take(z));
        for zone in down {
            let Some(share) = targets.get(zone).copied() else {
                continue;
            };
            let kept = pinned.get(zone).copied().unwrap_or(0).min(share);
            targets.insert(zone.clone(), kept);
            for _ in kept..share {
                let least = up
                    .iter()
                    .min_by_key(|z| targets.get(**z).copied().unwrap_or(0))
                    .expect("a zone that can take replicas");
                *targets.entry((*least).clone()).or_default() += 1;
            }
        }
        targets
    }

    /// Which replicas are in the wrong zone (see [`Misplaced`]).
    pub fn misplaced(&self, replicas: u32, active: &[Placed]) -> Misplaced {
        let targets = self.targets(replicas, &pinned_per_zone(active));
        let mut surplus = BTreeSet::new();
        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
        let mut by_index: Vec<&Placed> = active.iter().collect();
        by_index.sort_by_key(|p| (!p.pinned, p.index));
        for p in by_index {
            let Some(zone) = p.zone.as_deref() else {
                continue;
            };
            let count = counts.entry(zone).or_default();
            *count += 1;
            if !p.pinned && *count > targets.get(zone).copied().unwrap_or(0) {
                surplus.insert(p.name.clone());
            }
        }
        let lacking = targets.iter().any(|(zone, target)| {
            self.can_take(zone) && counts.get(zone.as_str()).copied().unwrap_or(0) < *target
        });
        let foreign = |name: &String| {
            active.iter().any(|p| {
                &p.name == name
                    && p.zone
                        .as_deref()
                        .is_some_and(|z| !self.names.iter().any(|n| n == z))
            })
        };
        // With no zone lacking replicas there is nowhere to move to: only replicas
        // outside the named zones move (a scale-down removes the surplus instead).
        let moving = surplus
            .iter()
            .filter(|name| lacking || foreign(name))
            .cloned()
            .collect();
        Misplaced { moving, surplus }
    }

    /// The zone of each new replica (by index, in `create`'s order): with `in_place`
    /// (indices kept), its home zone when it can take it or the spread is `Even`; else
    /// the zone that lacks the most replicas and can take them. `staying`: the active
    /// replicas that stay where they are.
    pub fn placements(
        &self,
        replicas: u32,
        create: &[u32],
        in_place: bool,
        staying: &[Placed],
    ) -> BTreeMap<u32, String> {
        let targets = self.targets(replicas, &pinned_per_zone(staying));
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for zone in staying.iter().filter_map(|p| p.zone.clone()) {
            *counts.entry(zone).or_default() += 1;
        }
        let mut placed = BTreeMap::new();
        for &index in create {
            let home = self.home(index);
            let zone = match in_place && (self.spread == ZoneSpread::Even || self.can_take(home)) {
                true => home.to_owned(),
                false => self
                    .most_lacking(&targets, &counts)
                    .unwrap_or(home)
                    .to_owned(),
            };
            *counts.entry(zone.clone()).or_default() += 1;
            placed.insert(index, zone);
        }
        placed
    }

    /// The zone furthest below its target (first in `names` on a tie), among those that
    /// can take replicas (with `Even`, among all).
    fn most_lacking<'a>(
        &'a self,
        targets: &BTreeMap<String, u32>,
        counts: &BTreeMap<String, u32>,
    ) -> Option<&'a str> {
        let lack = |z: &String| {
            let target = i64::from(targets.get(z).copied().unwrap_or(0));
            target - i64::from(counts.get(z).copied().unwrap_or(0))
        };
        self.names
            .iter()
            .filter(|z| self.spread == ZoneSpread::Even || self.can_take(z))
            .rev()
            .max_by_key(|z| lack(z))
            .map(String::as_str)
    }
}

/// Marks the active `members` misplaced or surplus, and returns where each active one
/// stands; `vms` tell which are pinned.
pub fn mark(
    zoning: &Zoning,
    replicas: u32,
    members: &mut [Member],
    vms: &[VirtualMachine],
) -> Vec<Placed> {
    let pinned = |name: &str| {
        vms.iter()
            .find(|vm| vm.name_any() == name)
            .is_some_and(|vm| {
                vm.spec.volumes.as_ref().is_some_and(|v| !v.is_empty())
                    || vm.spec.floating_ip.is_some()
            })
    };
    let placed: Vec<Placed> = members
        .iter()
        .filter(|m| m.active())
        .map(|m| Placed {
            name: m.name.clone(),
            index: m.index,
            zone: m.zone.clone(),
            pinned: pinned(&m.name),
        })
        .collect();
    let misplaced = zoning.misplaced(replicas, &placed);
    for m in members.iter_mut() {
        m.misplaced = misplaced.moving.contains(&m.name);
        m.surplus = misplaced.surplus.contains(&m.name);
    }
    placed
}

/// Of the active replicas, those that stay where they are: neither misplaced nor on an
/// older template (a rollout replaces them). New replicas are placed around these.
pub fn staying(placed: &[Placed], members: &[Member], policy: &Policy) -> Vec<Placed> {
    let stays = |p: &Placed| {
        members
            .iter()
            .find(|m| m.name == p.name)
            .is_some_and(|m| !m.misplaced && m.template_hash == policy.template_hash)
    };
    placed.iter().filter(|p| stays(p)).cloned().collect()
}

/// The replicas in the wrong zone, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Misplaced {
    /// To move now, as a rollout replaces (surge first): beyond their zone's target
    /// while a zone that can take them lacks replicas, or outside the named zones.
    pub moving: BTreeSet<String>,
    /// Beyond their zone's target (the highest indices of the zone): a scale-down
    /// removes these first. Never a pinned replica, nor one whose zone is unknown.
    pub surplus: BTreeSet<String>,
}

fn pinned_per_zone(placed: &[Placed]) -> BTreeMap<String, u32> {
    let mut pinned = BTreeMap::new();
    for zone in placed
        .iter()
        .filter(|p| p.pinned)
        .filter_map(|p| p.zone.clone())
    {
        *pinned.entry(zone).or_default() += 1;
    }
    pinned
}

/// `status.zones`: each named zone (then any other a replica is in) with its replicas,
/// the Ready and the available ones, and whether Nova lists it as available.
pub fn status(
    zoning: &Zoning,
    members: &[Member],
    policy: &Policy,
    now: Timestamp,
) -> Vec<ZoneStatus> {
    let mut names = zoning.names.clone();
    for zone in members.iter().filter_map(|m| m.zone.as_ref()) {
        if !names.contains(zone) {
            names.push(zone.clone());
        }
    }
    let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    names
        .into_iter()
        .map(|name| {
            let here: Vec<&Member> = members
                .iter()
                .filter(|m| !m.deleting && m.zone.as_ref() == Some(&name))
                .collect();
            ZoneStatus {
                replicas: count(here.len()),
                ready: count(here.iter().filter(|m| m.ready).count()),
                available: count(here.iter().filter(|m| policy.available(m, now)).count()),
                zone_available: zoning.names.contains(&name) && !zoning.unavailable.contains(&name),
                no_valid_host_at: zoning.refused.get(&name).map(|at| Time(*at)),
                name,
            }
        })
        .collect()
}

/// A warning for each named zone Nova stopped listing as available since `before`,
/// naming the replicas there and what becomes of them.
pub fn unavailable_events(
    zoning: &Zoning,
    before: &[ZoneStatus],
    members: &[Member],
) -> Vec<(&'static str, String)> {
    let was_up = |zone: &str| before.iter().any(|z| z.name == zone && z.zone_available);
    let refused_before = |zone: &str, at: &Timestamp| {
        before
            .iter()
            .any(|z| z.name == zone && z.no_valid_host_at.as_ref().is_some_and(|t| t.0 >= *at))
    };
    let unlisted = zoning.unavailable.iter().filter(|zone| was_up(zone));
    let full = zoning
        .refused
        .iter()
        .filter(|(zone, at)| !refused_before(zone, at) && !zoning.unavailable.contains(*zone));
    let why = |zone: &String, listed: bool| match listed {
        false => format!("Nova lists availability zone {zone} as not available"),
        true => format!(
            "Nova found no valid host in availability zone {zone} (NoValidHost); with spread Balanced it takes no replica for 10 minutes"
        ),
    };
    unlisted
        .map(|zone| (zone, why(zone, false)))
        .chain(full.map(|(zone, _)| (zone, why(zone, true))))
        .map(|(zone, why)| {
            let names: Vec<&str> = members
                .iter()
                .filter(|m| m.zone.as_ref() == Some(zone) && !m.deleting)
                .map(|m| m.name.as_str())
                .collect();
            let fate = match zoning.spread {
                ZoneSpread::Balanced => "they move to the zones that can take them, and back once it returns (replicas with data volumes or a floating IP stay)",
                ZoneSpread::Even => "they stay pending there until it returns (spread: Even)",
            };
            let replicas = match names.is_empty() {
                true => "no replica is there".to_owned(),
                false => format!("replicas {} are there: {fate}", names.join(", ")),
            };
            ("ZoneUnavailable", format!("{why}; {replicas}"))
        })
        .collect()
}

/// An event for each misplaced replica the round drained: which replica, from which
/// zone, to which.
pub fn rebalanced_events(
    zoning: &Zoning,
    replicas: u32,
    drained: &[String],
    members: &[Member],
    staying: &[Placed],
) -> Vec<(&'static str, String)> {
    let to = zoning.placements(replicas, &[u32::MAX], false, staying);
    let to = to.values().next().map_or("another zone", String::as_str);
    members
        .iter()
        .filter(|m| m.misplaced && drained.contains(&m.name))
        .map(|m| {
            let from = m.zone.as_deref().unwrap_or("its zone");
            (
                "Rebalanced",
                format!(
                    "{} moves from availability zone {from} to {to}: it is drained once a replacement serves there, or at once if it serves nothing",
                    m.name
                ),
            )
        })
        .collect()
}

/// `az-1=2 az-2=2 az-3=2`: replicas per zone, for the wide output.
pub fn summary(zones: &[ZoneStatus]) -> String {
    let parts: Vec<String> = zones
        .iter()
        .map(|z| format!("{}={}", z.name, z.replicas))
        .collect();
    parts.join(" ")
}

#[cfg(test)]
#[path = "zones_tests.rs"]
mod tests;
