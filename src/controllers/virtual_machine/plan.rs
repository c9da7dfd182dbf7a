//! The VirtualMachine plan: spec + the servers found for it → the one next step.
//!
//! Pure: no client, no clock (`now` is an argument). One step per reconcile keeps each
//! write observable before the next; the reconcile is requeued to take the next one.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use verda_api::v1alpha1::VirtualMachine;

use crate::cloud::ids::{FlavorId, ServerId, joined};
use crate::cloud::model::compute::{Server, ServerStatus};
use crate::cloud::owner::{META_INDEX, Owner};
use crate::controllers::virtual_machine::network_ports::{self, plan::PortStep};
use crate::controllers::virtual_machine::power::{self, PowerStep};
use crate::controllers::virtual_machine::volumes::Look;
use crate::controllers::virtual_machine::volumes::plan::{VolumeStep, before_server, with_server};
use crate::runtime::context::Timing;
use crate::runtime::keeper::{InError, duplicates, in_error};
use crate::runtime::object::group_replica;

/// Reasons of a Ready=False condition caused by a server in ERROR.
pub const SERVER_ERROR: &str = "ServerError";
pub const NO_VALID_HOST: &str = "NoValidHost";

/// The next thing to do for one VirtualMachine.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// No server exists for this owner: create one.
    Create,
    /// More than one server carries this owner (a crash between create and status
    /// write, twice): keep one, delete these.
    DeleteDuplicates(Vec<ServerId>),
    /// The server is in ERROR: report it (with an event the `first` time), look again
    /// in `retry_in`, replace it once the delay has passed.
    ReportError {
        reason: &'static str,
        message: String,
        first: bool,
        retry_in: Duration,
    },
    ReplaceErrored(ServerId),
    /// Still building or busy (resize in progress, …): look again soon.
    Wait,
    /// Resize to the flavor resolved while observing.
    Resize(ServerId, FlavorId),
    ConfirmResize(ServerId),
    UpdateDescription(ServerId, Option<String>),
    SetMetadata(ServerId, BTreeMap<String, String>),
    /// An imported server: add these keys, keep the metadata it came with.
    MergeMetadata(ServerId, BTreeMap<String, String>),
    /// The server lacks some of the tags that record its owner (made by an earlier
    /// version, or tagged by hand): its whole tag set becomes these.
    RecordOwner(ServerId, Vec<String>),
    /// Something about the data volumes (`volumes::plan`).
    Volume(VolumeStep),
    /// Something about the declared ports (`network_ports::plan`).
    Port(PortStep),
    /// Start, stop, or drain before a stop, as `runStrategy` says.
    Power(PowerStep),
    /// ACTIVE and matching the spec.
    Converged,
}

impl Step {
    /// What the step would do, for a person reading why a paused object differs.
    pub fn describe(&self) -> String {
        match self {
            Step::Create => "create a server".to_owned(),
            Step::DeleteDuplicates(ids) => format!("delete duplicate servers {}", joined(ids)),
            Step::ReplaceErrored(id) => format!("replace server {id}, which is in ERROR"),
            Step::Resize(id, flavor) => format!("resize server {id} to flavor {flavor}"),
            Step::ConfirmResize(id) => format!("confirm the resize of server {id}"),
            Step::UpdateDescription(id, _) => format!("update the description of server {id}"),
            Step::SetMetadata(id, _) | Step::MergeMetadata(id, _) => {
                format!("restore the metadata of server {id}")
            }
            Step::RecordOwner(id, _) => format!("tag server {id} with its owner"),
            Step::Volume(step) => step.describe(),
            Step::Port(step) => step.describe(),
            Step::Power(PowerStep::Start(id)) => format!("start server {id}, found SHUTOFF"),
            Step::Power(PowerStep::Stop(id) | PowerStep::Drain(id)) => {
                format!("stop server {id} (runStrategy Halted)")
            }
            Step::Power(PowerStep::Pending(..)) => "change anything".to_owned(),
            Step::ReportError { .. } | Step::Wait | Step::Converged => "change anything".to_owned(),
        }
    }

    /// Whether carrying the step out writes to the cloud.
    pub fn writes(&self) -> bool {
        match self {
            Step::Volume(step) => step.writes(),
            Step::Port(step) => step.writes(),
            Step::Power(step) => !matches!(step, PowerStep::Drain(_) | PowerStep::Pending(..)),
            _ => !matches!(
                self,
                Step::ReportError { .. } | Step::Wait | Step::Converged
            ),
        }
    }
}

/// What `plan` needs to know about the flavor, resolved only when the names differ.
#[derive(Clone, Debug, PartialEq)]
pub enum FlavorCheck {
    /// The server runs the spec's flavor.
    Matches,
    /// It does not: a resize to this flavor is due.
    Differs(FlavorId),
}

/// The server this object keeps: the one recorded in status, else the first ACTIVE,
/// else the first found.
pub fn keeper<'a>(vm: &VirtualMachine, servers: &'a [Server]) -> Option<&'a Server> {
    let recorded = vm.status.as_ref().and_then(|s| s.server_id.as_deref());
    let active = |s: &Server| s.status == ServerStatus::Active;
    crate::runtime::keeper::keeper(servers, recorded, |s| s.id.as_str(), active, |_| true)
}

/// The metadata the server must carry: the user's plus the owner record, and a group
/// replica's index (the metadata service tells the server who it is).
pub fn desired_metadata(vm: &VirtualMachine, owner: &Owner) -> BTreeMap<String, String> {
    let mut metadata = vm.spec.metadata.clone().unwrap_or_default();
    metadata.extend(owner.server_metadata());
    if let Some((_, index)) = group_replica(vm) {
        metadata.insert(META_INDEX.to_owned(), index.to_string());
    }
    metadata
}

/// Whether the server's metadata is `wanted`. A replica's server made before replicas
/// recorded their index lacks only that: it gets it when replaced, not by a write to
/// every server of the fleet on upgrade.
fn metadata_is(have: &BTreeMap<String, String>, wanted: &BTreeMap<String, String>) -> bool {
    let without_index = || {
        let mut wanted = wanted.clone();
        wanted.remove(META_INDEX);
        &wanted == have
    };
    have == wanted || (!have.contains_key(META_INDEX) && without_index())
}

/// Decides the next step. `in_pools`: some load balancer lists the VirtualMachine.
pub fn plan(
    vm: &VirtualMachine,
    owner: &Owner,
    servers: &[Server],
    flavor: &FlavorCheck,
    timing: &Timing,
    in_pools: bool,
    now: Timestamp,
) -> Step {
    let Some(server) = keeper(vm, servers) else {
        return Step::Create;
    };
    let extra: Vec<ServerId> = duplicates(servers, server.id.as_str(), |s| s.id.as_str(), |_| true)
        .into_iter()
        .map(|s| s.id.clone())
        .collect();
    if !extra.is_empty() {
        return Step::DeleteDuplicates(extra);
    }
    match server.status {
        ServerStatus::Error => return error_step(vm, server, timing.error_replace, now),
        ServerStatus::VerifyResize => return Step::ConfirmResize(server.id.clone()),
        ServerStatus::Active | ServerStatus::Shutoff => {}
        _ => return Step::Wait,
    }
    if let Some(step) = power::step(vm, server, in_pools, timing.drain_timeout, now) {
        return Step::Power(step);
    }
    if let FlavorCheck::Differs(wanted) = flavor {
        return Step::Resize(server.id.clone(), wanted.clone());
    }
    if server.description != vm.spec.description {
        return Step::UpdateDescription(server.id.clone(), vm.spec.description.clone());
    }
    let metadata = desired_metadata(vm, owner);
    if vm.spec.import.is_some() {
        // An imported server keeps the metadata it came with.
        if !metadata
            .iter()
            .all(|(k, v)| server.metadata.get(k) == Some(v))
        {
            return Step::MergeMetadata(server.id.clone(), metadata);
        }
    } else if !metadata_is(&server.metadata, &metadata) {
        return Step::SetMetadata(server.id.clone(), metadata);
    }
    let tags = owner.tags_added_to(&server.tags);
    if tags.len() != server.tags.len() {
        return Step::RecordOwner(server.id.clone(), tags);
    }
    Step::Converged
}

/// `step`, or what the data volumes need first: before the server is created (or
/// while it builds) the volumes it will get, once it is converged their attachment.
pub fn with_volumes(
    step: Step,
    vm: &VirtualMachine,
    servers: &[Server],
    look: Option<&Look>,
) -> Step {
    let Some(look) = look else {
        return step;
    };
    let volume_step = match (&step, keeper(vm, servers)) {
        (Step::Create | Step::Wait, _) => before_server(vm, look),
        (Step::Converged, Some(server)) => with_server(vm, look, server),
        _ => None,
    };
    volume_step.map_or(step, Step::Volume)
}

/// `step`, or what the declared ports need first: before the server is created (or
/// while it builds) the ports it boots on, once it is converged their edits.
pub fn with_ports(
    step: Step,
    vm: &VirtualMachine,
    servers: &[Server],
    look: Option<&network_ports::Look>,
) -> Step {
    let Some(look) = look else {
        return step;
    };
    let kept = keeper(vm, servers).map(|s| s.id.as_str());
    let port_step = match (&step, kept) {
        (Step::Create | Step::Wait, _) => network_ports::plan::before_server(vm, look, kept),
        (Step::Converged, Some(server)) => network_ports::plan::with_server(vm, look, server),
        _ => None,
    };
    port_step.map_or(step, Step::Port)
}

/// The keys whose values differ between two metadata maps, for an event.
pub fn changed_keys(now: &BTreeMap<String, String>, wanted: &BTreeMap<String, String>) -> String {
    let keys: std::collections::BTreeSet<&String> = now
        .keys()
        .chain(wanted.keys())
        .filter(|k| now.get(*k) != wanted.get(*k))
        .collect();
    keys.into_iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A server in ERROR is reported first, and replaced once `replace_delay` has passed
/// since the report: the backoff that keeps a broken image or a full cloud from looping.
fn error_step(
    vm: &VirtualMachine,
    server: &Server,
    error_replace: Duration,
    now: Timestamp,
) -> Step {
    let reason = error_reason(server);
    let recorded = vm
        .status
        .as_ref()
        .and_then(|s| s.last_failure.as_ref())
        .filter(|f| f.server_id == server.id.as_str());
    let count = recorded.map_or_else(|| failures_in_a_row(vm) + 1, |f| f.count);
    let delay = replace_delay(error_replace, count);
    let (first, retry_in) = match in_error(recorded.map(|f| f.since.0), delay, now) {
        InError::Replace => return Step::ReplaceErrored(server.id.clone()),
        InError::Report { first, retry_in } => (first, retry_in),
    };
    let fault = fault_message(server);
    Step::ReportError {
        reason,
        message: format!(
            "server {} is in ERROR ({fault}); it is replaced after {}s (failure {count} in a row)",
            server.id,
            delay.as_secs()
        ),
        first,
        retry_in,
    }
}

/// The condition reason for a server in ERROR.
pub fn error_reason(server: &Server) -> &'static str {
    if server.fault.as_ref().is_some_and(|f| f.is_no_valid_host()) {
        NO_VALID_HOST
    } else {
        SERVER_ERROR
    }
}

/// Nova's fault message for a server in ERROR.
pub fn fault_message(server: &Server) -> String {
    server
        .fault
        .as_ref()
        .map(|f| f.message.clone())
        .unwrap_or_else(|| "no fault recorded".to_owned())
}

/// Failed servers in a row before the current one.
fn failures_in_a_row(vm: &VirtualMachine) -> i32 {
    vm.status
        .as_ref()
        .and_then(|s| s.last_failure.as_ref())
        .map_or(0, |f| f.count)
}

/// How long the `count`th failed server in a row stays before it is replaced:
/// `base`, doubling with each failure, at most 32 × `base`.
pub fn replace_delay(base: Duration, count: i32) -> Duration {
    let doublings = count.saturating_sub(1).clamp(0, 5) as u32;
    base.saturating_mul(1 << doublings)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
