//! The VirtualMachine status: what the server looks like, and the Ready condition.

use k8s_openapi::jiff::Timestamp;
use verda_api::conditions::{NewCondition, READY, set_condition};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineAddress, VirtualMachineStatus};

use super::apply::Outcome;
use crate::cloud::model::compute::Server;

/// The status after `outcome`, given the servers observed before it.
pub fn next_status(
    vm: &VirtualMachine,
    servers: &[Server],
    outcome: &Outcome,
    now: Timestamp,
) -> VirtualMachineStatus {
    let mut status = vm.status.clone().unwrap_or_default();
    let server = outcome
        .server_id
        .as_ref()
        .and_then(|id| servers.iter().find(|s| &s.id == id));
    status.server_id = outcome.server_id.as_ref().map(ToString::to_string);
    status.state = server.map(|s| state_word(s).to_owned());
    status.addresses = server
        .map(|s| {
            s.addresses
                .iter()
                .map(|a| VirtualMachineAddress {
                    network: a.network.clone(),
                    address: a.addr.clone(),
                    kind: a.kind.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    status.primary_ip = server.and_then(|s| s.primary_ip().map(str::to_owned));
    status.flavor = server.and_then(|s| s.flavor.clone());
    let (ready, reason, message) = &outcome.ready;
    set_condition(
        &mut status.conditions,
        NewCondition {
            type_: READY,
            status: *ready,
            reason,
            message: message.clone(),
        },
        vm.metadata.generation,
        now,
    );
    status.observed_generation = vm.metadata.generation;
    status
}

/// Nova's status word as users know it (`ACTIVE`, `BUILD`, `VERIFY_RESIZE`, …).
fn state_word(server: &Server) -> &'static str {
    use crate::cloud::model::compute::ServerStatus as S;
    match server.status {
        S::Active => "ACTIVE",
        S::Build => "BUILD",
        S::Error => "ERROR",
        S::Shutoff => "SHUTOFF",
        S::Resize => "RESIZE",
        S::VerifyResize => "VERIFY_RESIZE",
        S::RevertResize => "REVERT_RESIZE",
        S::Reboot | S::HardReboot => "REBOOT",
        S::Deleted | S::SoftDeleted => "DELETED",
        S::Migrating => "MIGRATING",
        S::Paused => "PAUSED",
        S::Suspended => "SUSPENDED",
        S::Rescue => "RESCUE",
        S::Shelved | S::ShelvedOffloaded => "SHELVED",
        S::Rebuild => "REBUILD",
        S::Password => "PASSWORD",
        S::Unknown => "UNKNOWN",
    }
}
