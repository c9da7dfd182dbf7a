//! What each port's `realServers` draws on: its backends (a group's Ready
//! VirtualMachines, named VirtualMachines, or literal addresses), read from the watch
//! caches, and which VirtualMachines and groups wake the LoadBalancer when they change.

use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{
    LoadBalancer, RealServers, VirtualMachine, VirtualMachineGroup, annotations, labels,
};

use crate::caches::watch::index::{DrawnOn, drawn_on, group_key};
use crate::caches::watch::packed::{unpacked, unpacked_one};
use crate::caches::watch::{WatchCaches, named, with_key};
use crate::controllers::load_balancer::desired::Backend;
use crate::runtime::ReconcileError;
use crate::runtime::progress::PROVISIONING;

/// The backends of every port, in spec order, and the groups that do not exist.
#[derive(Debug, Default)]
pub struct Backends {
    pub ports: Vec<Vec<Backend>>,
    /// Per port, the VirtualMachines of its group still on their way to Ready.
    pub starting: Vec<usize>,
    pub missing_groups: Vec<String>,
}

/// How long a new VirtualMachine may hold back its group's other additions to the
/// pools: past this, the pools take whoever is Ready.
pub const STARTING_HOLD: std::time::Duration = std::time::Duration::from_secs(60);

/// The VirtualMachines (and groups) the ports draw on, from the watch caches.
pub async fn backends(caches: &WatchCaches, lb: &LoadBalancer, project: &str) -> Backends {
    let ns = lb.namespace().unwrap_or_default();
    // Only the VirtualMachines some port draws on, and never one whose server is in
    // another project (one recorded before projects were, has not recorded one yet,
    // and is taken as this one's).
    let drawn = |vm: &VirtualMachine| {
        in_project(vm, project)
            && lb
                .spec
                .ports
                .iter()
                .any(|p| draws_from(&p.real_servers, vm))
    };
    let mut vms: Vec<Arc<VirtualMachine>> = Vec::new();
    for drawn in drawn_on(lb) {
        match drawn {
            DrawnOn::Group(group) => {
                let members = with_key(&caches.virtual_machines, &ns, &group_key(group)).await;
                vms.extend(unpacked(&members))
            }
            DrawnOn::VirtualMachine(name) => {
                let named = named(&caches.virtual_machines, &ns, name).await;
                vms.extend(named.as_deref().and_then(unpacked_one))
            }
        }
    }
    // A VirtualMachine named by one port may be in the group of another.
    vms.sort_by_key(|vm| vm.name_any());
    vms.dedup_by_key(|vm| vm.name_any());
    vms.retain(|vm| drawn(vm));
    let mut result = Backends::default();
    let now = Timestamp::now();
    for port in &lb.spec.ports {
        let rs = &port.real_servers;
        let mut unborn = 0;
        for group in rs.group_names() {
            let named = named(&caches.groups, &ns, group).await;
            match named.as_deref().and_then(unpacked_one) {
                Some(group) => unborn += unborn_replicas(&group, &vms, now),
                None if !result.missing_groups.iter().any(|g| g == group) => {
                    result.missing_groups.push(group.to_owned());
                }
                None => {}
            }
        }
        result.ports.push(port_backends(rs, &vms));
        result.starting.push(starting(rs, &vms, now) + unborn);
    }
    result
}

/// The replicas a group created less than [`STARTING_HOLD`] ago has yet to make
/// VirtualMachines for: they are starting too (a LoadBalancer applied with its group
/// is looked at before the group's first round).
fn unborn_replicas(
    group: &VirtualMachineGroup,
    vms: &[Arc<VirtualMachine>],
    now: Timestamp,
) -> usize {
    let new = group
        .metadata
        .creation_timestamp
        .as_ref()
        .is_some_and(|t| now.duration_since(t.0).unsigned_abs() < STARTING_HOLD);
    if !new {
        return 0;
    }
    let name = group.name_any();
    let made = vms
        .iter()
        .filter(|vm| vm.labels().get(labels::GROUP) == Some(&name))
        .count();
    usize::try_from(group.spec.replicas)
        .unwrap_or(0)
        .saturating_sub(made)
}

/// Whether `vm`'s server is in `project`, as far as its status says.
pub fn in_project(vm: &VirtualMachine, project: &str) -> bool {
    vm.status
        .as_ref()
        .and_then(|s| s.project_id.as_deref())
        .is_none_or(|p| p == project)
}

/// The group's VirtualMachines created less than [`STARTING_HOLD`] ago that are still
/// provisioning: not serving, not failed, not leaving.
pub fn starting(rs: &RealServers, vms: &[Arc<VirtualMachine>], now: Timestamp) -> usize {
    if rs.group_names().is_empty() {
        return 0;
    }
    vms.iter()
        .filter(|vm| draws_from(rs, vm))
        .filter(|vm| {
            vm.metadata.deletion_timestamp.is_none()
                && !vm.annotations().contains_key(annotations::DRAINING)
                && serving_backend(vm).is_none()
        })
        .filter(|vm| {
            vm.metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| now.duration_since(t.0).unsigned_abs() < STARTING_HOLD)
        })
        .filter(|vm| on_its_way(vm))
        .count()
}

/// Whether `vm` is still on its way to Ready: provisioning, or held up by an error
/// that heals by itself (an API server or a cloud busy for a moment). One whose server
/// went to ERROR, or that waits for the user, has failed: the pools do not wait for it.
fn on_its_way(vm: &VirtualMachine) -> bool {
    let Some(status) = vm.status.as_ref() else {
        return true;
    };
    if status.last_failure.is_some() {
        return false;
    }
    find_condition(&status.conditions, READY).is_none_or(|ready| {
        ready.reason == PROVISIONING || ReconcileError::heals_by_itself(&ready.reason)
    })
}

/// Whether `vm` is one of the real servers `rs` names: a member of its group, or one
/// of its VirtualMachines (a port has exactly one source).
pub fn draws_from(rs: &RealServers, vm: &VirtualMachine) -> bool {
    if let Some(names) = &rs.virtual_machines {
        return names.iter().any(|n| *n == vm.name_any());
    }
    vm.labels()
        .get(labels::GROUP)
        .is_some_and(|group| rs.draws_on_group(group))
}

/// The backends of one port: its addresses, or the serving VirtualMachines it names.
pub fn port_backends(rs: &RealServers, vms: &[Arc<VirtualMachine>]) -> Vec<Backend> {
    if let Some(addresses) = &rs.addresses {
        return addresses
            .iter()
            .map(|a| Backend {
                name: a.clone(),
                address: a.clone(),
                weight: None,
            })
            .collect();
    }
    let mut backends: Vec<Backend> = vms
        .iter()
        .filter(|vm| draws_from(rs, vm))
        .filter_map(|vm| {
            let weight = vm
                .labels()
                .get(labels::GROUP)
                .and_then(|group| rs.weight_of(group));
            Some(Backend {
                weight,
                ..serving_backend(vm)?
            })
        })
        .collect();
    backends.sort();
    backends
}

/// The backend a VirtualMachine gives while it serves: Ready, with an address, and
/// neither draining nor being deleted.
pub fn serving_backend(vm: &VirtualMachine) -> Option<Backend> {
    if vm.metadata.deletion_timestamp.is_some()
        || vm.annotations().contains_key(annotations::DRAINING)
    {
        return None;
    }
    let status = vm.status.as_ref()?;
    // A stopped server serves nothing, whatever its run strategy calls Ready.
    if !is_true(&status.conditions, READY) || status.state.as_deref() != Some("ACTIVE") {
        return None;
    }
    Some(Backend {
        name: vm.name_any(),
        address: status.primary_ip.clone()?,
        weight: None,
    })
}

/// Whether a group this LoadBalancer draws on heals on its members' health
/// (`autoHealing`): then every look reads its members' operating status from Octavia
/// (one status-tree call per look), as no `updated_at` moves when only a health
/// monitor's verdict does.
pub async fn health_watched(caches: &WatchCaches, lb: &LoadBalancer) -> bool {
    let refs: Vec<&str> = lb
        .spec
        .ports
        .iter()
        .flat_map(|p| p.real_servers.group_names())
        .collect();
    if refs.is_empty() {
        return false;
    }
    let ns = lb.namespace().unwrap_or_default();
    for name in refs {
        let group = named(&caches.groups, &ns, name).await;
        if let Some(group) = group.as_deref().and_then(unpacked_one)
            && group.spec.auto_healing.is_some()
        {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use verda_api::conditions::{NewCondition, Status, set_condition};
    use verda_api::v1alpha1::{ServerFailure, VirtualMachineStatus};

    fn group_port() -> RealServers {
        serde_json::from_value(serde_json::json!({
            "protocol": "http", "port": 80, "virtualMachineGroupRef": "web"
        }))
        .expect("realServers")
    }

    /// A replica of group `web` created `age_secs` ago, Ready `ready` for `reason`.
    fn replica(age_secs: i64, ready: Option<(Status, &str)>) -> Arc<VirtualMachine> {
        let now = Timestamp::now();
        let mut vm = VirtualMachine::new("web-0", Default::default());
        vm.metadata.labels = Some([(labels::GROUP.to_owned(), "web".to_owned())].into());
        vm.metadata.creation_timestamp = Some(Time(
            now - k8s_openapi::jiff::SignedDuration::from_secs(age_secs),
        ));
        let mut status = VirtualMachineStatus::default();
        if let Some((ready, reason)) = ready {
            let condition = NewCondition {
                type_: READY,
                status: ready,
                reason,
                message: String::new(),
            };
            set_condition(&mut status.conditions, condition, None, now);
        }
        vm.status = Some(status);
        Arc::new(vm)
    }

    fn is_starting(vm: Arc<VirtualMachine>) -> bool {
        starting(&group_port(), &[vm], Timestamp::now()) == 1
    }

    #[test]
    fn a_young_replica_provisioning_or_held_up_by_a_passing_error_is_starting() {
        assert!(is_starting(replica(1, None)));
        assert!(is_starting(replica(1, Some((Status::False, PROVISIONING)))));
        // Its last reconcile met a busy API server or cloud: it is still on its way.
        for reason in ["KubernetesApiError", "CloudUnavailable", "RateLimited"] {
            assert!(
                is_starting(replica(1, Some((Status::False, reason)))),
                "{reason}"
            );
        }
    }

    #[test]
    fn a_failed_old_or_stopped_replica_is_not_starting() {
        // Waits for the user, or its create was refused for good.
        for reason in ["SecurityGroupNotReady", "QuotaExceeded", "ServerError"] {
            assert!(
                !is_starting(replica(1, Some((Status::False, reason)))),
                "{reason}"
            );
        }
        assert!(!is_starting(replica(1, Some((Status::True, "Stopped")))));
        assert!(!is_starting(replica(
            STARTING_HOLD.as_secs() as i64 + 1,
            Some((Status::False, PROVISIONING))
        )));
        // Its server went to ERROR before: a passing error since does not make it new.
        let mut vm = Arc::unwrap_or_clone(replica(1, Some((Status::False, "CloudUnavailable"))));
        if let Some(status) = vm.status.as_mut() {
            status.last_failure = Some(Box::new(ServerFailure {
                server_id: "s-1".into(),
                reason: "ServerError".into(),
                message: "boom".into(),
                since: Time(Timestamp::now()),
                count: 1,
            }));
        }
        assert!(!is_starting(Arc::new(vm)));
    }
}
