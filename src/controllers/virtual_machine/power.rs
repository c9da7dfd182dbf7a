//! The server's power, as `spec.runStrategy` asks: `Always` starts a server found
//! SHUTOFF, `Halted` takes it out of the load balancers' pools and then stops it,
//! `Manual` leaves it as the user set it.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{RunStrategy, VirtualMachine, labels};

use crate::caches::watch::index::{group_key, vm_key};
use crate::caches::watch::packed::unpacked;
use crate::caches::watch::{WatchCaches, with_key};
use crate::cloud::ids::ServerId;
use crate::cloud::model::compute::{Server, ServerStatus};

/// Ready's reason while a server to be halted waits for the pools to let it go.
pub const HALTING: &str = "Halting";
/// Ready's reason of a server stopped as `Halted` asks.
pub const HALTED: &str = "Halted";
/// Ready's reason of a stopped server under `Manual`.
pub const STOPPED: &str = "Stopped";

/// A power change the server needs.
#[derive(Clone, Debug, PartialEq)]
pub enum PowerStep {
    /// SHUTOFF under `Always`: start it (drift, reported).
    Start(ServerId),
    /// ACTIVE under `Halted`, out of every pool (or the drain timed out): stop it.
    Stop(ServerId),
    /// ACTIVE under `Halted`, still in some pool: report Ready=False so the load
    /// balancers drop it, and look again.
    Drain(ServerId),
    /// Nova is powering it on or off (`task_state`): the status still shows the state
    /// before, and another action now is a 409. Look again.
    Pending(ServerId, String),
}

/// The run strategy a VirtualMachine has (its group sets its own on it).
pub fn strategy(vm: &VirtualMachine) -> RunStrategy {
    vm.spec.run_strategy.unwrap_or_default()
}

/// What the server's power needs, if anything. `in_pools`: some load balancer lists it.
pub fn step(
    vm: &VirtualMachine,
    server: &Server,
    in_pools: bool,
    drain_timeout: Duration,
    now: Timestamp,
) -> Option<PowerStep> {
    let id = server.id.clone();
    if let Some(task) = server
        .task_state
        .as_ref()
        .filter(|t| t.starts_with("powering"))
    {
        return Some(PowerStep::Pending(id, task.clone()));
    }
    match (strategy(vm), &server.status) {
        (RunStrategy::Always, ServerStatus::Shutoff) => Some(PowerStep::Start(id)),
        (RunStrategy::Halted, ServerStatus::Active) => {
            let drained_for = halting_since(vm).map(|since| now.duration_since(since));
            let timed_out =
                drained_for.is_some_and(|d| d.as_secs_f64() >= drain_timeout.as_secs_f64());
            match in_pools && !timed_out {
                true => Some(PowerStep::Drain(id)),
                false => Some(PowerStep::Stop(id)),
            }
        }
        _ => None,
    }
}

/// Since when Ready has said the server is leaving the pools to be halted.
fn halting_since(vm: &VirtualMachine) -> Option<Timestamp> {
    let ready = find_condition(&vm.status.as_ref()?.conditions, READY)?;
    (ready.reason == HALTING).then_some(ready.last_transition_time.0)
}

/// Whether some LoadBalancer of the namespace lists the VirtualMachine as a member of
/// a pool (from the watch cache: its status).
pub async fn in_pools(caches: &WatchCaches, vm: &VirtualMachine) -> bool {
    let ns = vm.namespace().unwrap_or_default();
    let name = vm.name_any();
    let mut lbs = with_key(&caches.load_balancers, &ns, &vm_key(&name)).await;
    if let Some(group) = vm.labels().get(labels::GROUP) {
        lbs.extend(with_key(&caches.load_balancers, &ns, &group_key(group)).await);
    }
    unpacked(&lbs)
        .iter()
        .filter_map(|lb| lb.status.as_ref())
        .flat_map(|s| s.ports.iter())
        .any(|p| p.members.iter().any(|m| m.name == name))
}

/// Ready's reason and message for a server that is where its strategy wants it.
pub fn settled(server: &Server, strategy: RunStrategy) -> (&'static str, String) {
    match (&server.status, strategy) {
        (ServerStatus::Shutoff, RunStrategy::Halted) => (
            HALTED,
            format!(
                "server {} is SHUTOFF, as runStrategy Halted asks",
                server.id
            ),
        ),
        (ServerStatus::Shutoff, _) => (
            STOPPED,
            format!(
                "server {} is SHUTOFF (runStrategy Manual: its power is left to you)",
                server.id
            ),
        ),
        _ => ("Active", format!("server {} is ACTIVE", server.id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use verda_api::v1alpha1::{VirtualMachineSpec, VirtualMachineStatus};

    fn vm(strategy: RunStrategy, ready_reason: Option<(&str, Timestamp)>) -> VirtualMachine {
        let mut vm = VirtualMachine::new(
            "db-0",
            VirtualMachineSpec {
                run_strategy: Some(strategy),
                ..VirtualMachineSpec::default()
            },
        );
        vm.status = ready_reason.map(|(reason, at)| VirtualMachineStatus {
            conditions: vec![Condition {
                type_: READY.into(),
                status: "False".into(),
                reason: reason.into(),
                message: String::new(),
                last_transition_time: Time(at),
                observed_generation: None,
            }],
            ..VirtualMachineStatus::default()
        });
        vm
    }

    fn server(status: ServerStatus) -> Server {
        Server {
            id: ServerId::new("s-1"),
            name: "db-0".into(),
            status,
            task_state: None,
            addresses: vec![],
            metadata: Default::default(),
            tags: vec![],
            description: None,
            flavor: None,
            image: None,
            fault: None,
            availability_zone: None,
            volumes_attached: vec![],
        }
    }

    const DRAIN: Duration = Duration::from_secs(120);

    #[test]
    fn always_starts_a_stopped_server_and_manual_leaves_it() {
        let now = Timestamp::now();
        let off = server(ServerStatus::Shutoff);
        assert_eq!(
            step(&vm(RunStrategy::Always, None), &off, false, DRAIN, now),
            Some(PowerStep::Start(off.id.clone()))
        );
        assert_eq!(
            step(&vm(RunStrategy::Manual, None), &off, false, DRAIN, now),
            None
        );
        let on = server(ServerStatus::Active);
        assert_eq!(
            step(&vm(RunStrategy::Manual, None), &on, true, DRAIN, now),
            None
        );
        assert_eq!(
            step(&vm(RunStrategy::Always, None), &on, true, DRAIN, now),
            None
        );
    }

    #[test]
    fn halted_drains_the_pools_before_it_stops_unless_the_drain_times_out() {
        let now = Timestamp::now();
        let on = server(ServerStatus::Active);
        let id = on.id.clone();
        let fresh = vm(RunStrategy::Halted, None);
        assert_eq!(
            step(&fresh, &on, true, DRAIN, now),
            Some(PowerStep::Drain(id.clone()))
        );
        assert_eq!(
            step(&fresh, &on, false, DRAIN, now),
            Some(PowerStep::Stop(id.clone()))
        );
        let long_ago = now - Duration::from_secs(121);
        let waited = vm(RunStrategy::Halted, Some((HALTING, long_ago)));
        assert_eq!(
            step(&waited, &on, true, DRAIN, now),
            Some(PowerStep::Stop(id.clone()))
        );
        let just_now = vm(RunStrategy::Halted, Some((HALTING, now)));
        assert_eq!(
            step(&just_now, &on, true, DRAIN, now),
            Some(PowerStep::Drain(id))
        );
        let off = server(ServerStatus::Shutoff);
        assert_eq!(step(&waited, &off, false, DRAIN, now), None);
    }

    #[test]
    fn a_server_powering_on_or_off_is_waited_for_not_asked_again() {
        let mut starting = server(ServerStatus::Shutoff);
        starting.task_state = Some("powering-on".into());
        let always = vm(RunStrategy::Always, None);
        assert_eq!(
            step(&always, &starting, false, DRAIN, Timestamp::now()),
            Some(PowerStep::Pending(
                starting.id.clone(),
                "powering-on".into()
            ))
        );
    }
}
