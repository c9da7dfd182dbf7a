//! The VirtualMachineGroup status: replica counts, the selector of the scale
//! subresource, the server group, and a Ready condition that says why not.

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{NewCondition, READY, Status, find_condition, set_condition};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup, VirtualMachineGroupStatus, labels};

use super::plan::Member;
use crate::cloud::ids::ServerGroupId;
use crate::controller::virtual_machine::plan::NO_VALID_HOST;

/// The status after this round.
pub fn next_status(
    group: &VirtualMachineGroup,
    vms: &[VirtualMachine],
    members: &[Member],
    hash: &str,
    server_group: Option<&ServerGroupId>,
    now: Timestamp,
) -> VirtualMachineGroupStatus {
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
    let (ready, reason, message) = if unplaced > 0 {
        (
            Status::False,
            NO_VALID_HOST,
            format!(
                "{unplaced} of {desired} VirtualMachines could not be placed: Nova found no valid host \
                 (hard anti-affinity needs one hypervisor per server; use haPolicy soft or fewer replicas)"
            ),
        )
    } else if status.ready_replicas == desired
        && status.updated_replicas == desired
        && active.len() as i32 == desired
    {
        (
            Status::True,
            "AllReplicasReady",
            format!("{desired} of {desired} VirtualMachines are Ready"),
        )
    } else if status.updated_replicas < active.len() as i32 {
        (
            Status::False,
            "RollingUpdate",
            format!(
                "{} of {desired} VirtualMachines run the current template",
                status.updated_replicas
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
    };
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
