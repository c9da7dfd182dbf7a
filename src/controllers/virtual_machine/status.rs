//! The VirtualMachine status: what the server looks like, and the Ready condition.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use verda_api::conditions::{NewCondition, READY, set_condition};
use verda_api::v1alpha1::{
    ServerFailure, VirtualMachine, VirtualMachineAddress, VirtualMachineStatus,
};

use crate::cloud::model::compute::{Server, ServerStatus};
use crate::controllers::virtual_machine::execute::{Outcome, PROVISIONING};
use crate::controllers::virtual_machine::plan::{error_reason, fault_message};

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
    status.availability_zone = server.and_then(|s| s.availability_zone.clone());
    status.last_failure =
        next_failure(status.last_failure.take().map(|f| *f), server, now).map(Box::new);
    let (ready, reason, message) = &outcome.ready;
    // While a replacement builds, the failure stays the reason: a group or a user
    // polling the condition sees why the server is not ACTIVE yet, not "Provisioning".
    let (reason, message) = match status.last_failure.as_ref() {
        Some(failure) if *reason == PROVISIONING => (
            failure.reason.clone(),
            format!(
                "{message}; server {} went to ERROR before ({}), failure {} in a row",
                failure.server_id, failure.message, failure.count
            ),
        ),
        _ => ((*reason).to_owned(), message.clone()),
    };
    set_condition(
        &mut status.conditions,
        NewCondition {
            type_: READY,
            status: *ready,
            reason: &reason,
            message,
        },
        vm.metadata.generation,
        now,
    );
    status.observed_generation = vm.metadata.generation;
    status
}

/// The failure record after observing `server`: a new server in ERROR starts a new
/// record (counting on from the last), an ACTIVE one clears it.
fn next_failure(
    last: Option<ServerFailure>,
    server: Option<&Server>,
    now: Timestamp,
) -> Option<ServerFailure> {
    let Some(server) = server else { return last };
    match server.status {
        ServerStatus::Active => None,
        ServerStatus::Error
            if last
                .as_ref()
                .is_none_or(|f| f.server_id != server.id.as_str()) =>
        {
            Some(ServerFailure {
                server_id: server.id.to_string(),
                reason: error_reason(server).to_owned(),
                message: fault_message(server),
                since: Time(now),
                count: last.map_or(0, |f| f.count) + 1,
            })
        }
        _ => last,
    }
}

/// Nova's status word as users know it (`ACTIVE`, `BUILD`, `VERIFY_RESIZE`, …).
fn state_word(server: &Server) -> &'static str {
    use ServerStatus as S;
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
