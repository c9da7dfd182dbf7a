//! The VirtualMachineGroup status: replica counts, the selector of the scale
//! subresource, the server group, and a Ready condition that says why not.

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{NewCondition, READY, Status, find_condition, set_condition};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup, VirtualMachineGroupStatus, labels};

use crate::cloud::ids::ServerGroupId;
use crate::controllers::virtual_machine::plan::NO_VALID_HOST;
use crate::controllers::virtual_machine_group::plan::Member;

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
    let (ready, reason, message) = readiness(group, vms, &status, active.len() as i32);
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
    } else if status.ready_replicas == desired
        && status.updated_replicas == desired
        && active == desired
    {
        (
            Status::True,
            "AllReplicasReady",
            format!("{desired} of {desired} VirtualMachines are Ready"),
        )
    } else if status.updated_replicas < active {
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
    }
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

    fn ready_of(status: &VirtualMachineGroupStatus) -> (&str, &str, &str) {
        let c = find_condition(&status.conditions, READY).expect("Ready");
        (c.status.as_str(), c.reason.as_str(), c.message.as_str())
    }

    #[test]
    fn counts_and_ready_follow_the_members() {
        let members = [member(0, "new", true), member(1, "new", false)];
        let status = next_status(&group(2), &[], &members, "new", None, Timestamp::now());
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
        let status = next_status(&group(2), &[], &members, "new", None, Timestamp::now());
        assert_eq!(ready_of(&status).1, "RollingUpdate");

        let members = [member(0, "new", true), member(1, "new", true)];
        let status = next_status(&group(2), &[], &members, "new", None, Timestamp::now());
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
    fn a_draining_member_does_not_count_as_ready() {
        let mut leaving = member(2, "new", true);
        leaving.draining_since = Some(Timestamp::now());
        let members = [member(0, "new", true), member(1, "new", true), leaving];
        let status = next_status(&group(2), &[], &members, "new", None, Timestamp::now());
        assert_eq!((status.replicas, status.ready_replicas), (3, 2));
        assert_eq!(ready_of(&status).1, "AllReplicasReady");
    }
}
