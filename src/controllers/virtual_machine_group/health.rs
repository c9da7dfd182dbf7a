//! A replica's health, judged by its group: the server in the state its run strategy
//! wants, and (with `autoHealing`) its members not failing in any load balancer drawing
//! on the group. Read from what is already watched (the VirtualMachine's status, the
//! LoadBalancers' status, which their controller fills from Octavia's status tree): no
//! cloud call of its own.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{LoadBalancer, ReplicaHealth, RunStrategy, VirtualMachine};

use crate::controllers::virtual_machine_group::plan::Health;

pub const HEALTHY: &str = "Healthy";
pub const UNHEALTHY: &str = "Unhealthy";
pub const STARTING: &str = "Starting";

/// Healthy this long, a replica's replacements in a row are forgotten.
const SETTLED: std::time::Duration = std::time::Duration::from_secs(3600);

/// What was seen of one replica now: healthy or not, why, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub healthy: bool,
    /// On its way somewhere its controller takes it (building, resizing, being stopped
    /// as `Halted` asks): not healthy, and not to be healed either.
    pub settling: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The replica's health now, carrying `before` (the last status) on: the same state
/// keeps its `since`; a replica never healthy yet is `Starting`, not unhealthy.
pub fn judge(
    vm: &VirtualMachine,
    strategy: RunStrategy,
    lbs: Option<&[LoadBalancer]>,
    before: Option<&ReplicaHealth>,
    now: Timestamp,
) -> ReplicaHealth {
    let seen = look(vm, strategy, lbs);
    let was_healthy_once = before.is_some_and(|b| b.state != STARTING);
    let state = match (seen.healthy, was_healthy_once && !seen.settling) {
        (true, _) => HEALTHY,
        (false, true) => UNHEALTHY,
        (false, false) => STARTING,
    };
    let since = before
        .filter(|b| b.state == state)
        .map_or(Time(now), |b| b.since.clone());
    // Replacements in a row are forgotten only once the replica stayed healthy a
    // while: one that fails again soon after its replacement backs off further.
    let settled =
        state == HEALTHY && now.duration_since(since.0).as_secs_f64() >= SETTLED.as_secs_f64();
    let replacements = match settled {
        true => 0,
        false => before.map_or(0, |b| b.replacements),
    };
    ReplicaHealth {
        name: vm.name_any(),
        state: state.to_owned(),
        reason: seen.reason.to_owned(),
        message: seen.message,
        since,
        replacements,
    }
}

/// The plan's view of a judged replica.
pub fn health(judged: &ReplicaHealth) -> Health {
    match judged.state.as_str() {
        HEALTHY => Health::Healthy {
            since: judged.since.0,
        },
        UNHEALTHY => Health::Unhealthy {
            since: judged.since.0,
            replacements: judged.replacements,
        },
        _ => Health::Starting,
    }
}

/// The server's state against the run strategy, then its Ready condition, then (when
/// `lbs` is given) its members.
fn look(vm: &VirtualMachine, strategy: RunStrategy, lbs: Option<&[LoadBalancer]>) -> Seen {
    let unhealthy = |reason, message: String| Seen {
        healthy: false,
        settling: false,
        reason,
        message,
    };
    let settling = |reason, message: String| Seen {
        settling: true,
        ..unhealthy(reason, message)
    };
    let Some(status) = vm.status.as_ref() else {
        return unhealthy("NotCreated", "no server yet".to_owned());
    };
    let state = status.state.as_deref().unwrap_or("");
    let wanted = match strategy {
        RunStrategy::Always => Some("ACTIVE"),
        RunStrategy::Halted => Some("SHUTOFF"),
        RunStrategy::Manual => None,
    };
    let ready = find_condition(&status.conditions, READY);
    if state.is_empty() {
        let why = ready.map_or("not reported yet".to_owned(), |c| {
            format!("{}: {}", c.reason, c.message)
        });
        return unhealthy("NotReady", format!("no server yet ({why})"));
    }
    if state == "ERROR" {
        return unhealthy("ServerError", "its server is in ERROR".to_owned());
    }
    if let Some(wanted) = wanted.filter(|w| *w != state) {
        let message = format!("its server is {state}, runStrategy wants {wanted}");
        return match state {
            "SHUTOFF" => unhealthy("ServerShutoff", message),
            _ => settling("ServerSettling", message),
        };
    }
    match ready {
        Some(ready) if ready.status == "True" => {}
        ready => {
            let why = ready.map_or("not reported yet".to_owned(), |c| c.message.clone());
            return unhealthy("NotReady", format!("not Ready: {why}"));
        }
    }
    if let Some(failing) = lbs.and_then(|lbs| failing_member(lbs, &vm.name_any())) {
        return failing;
    }
    Seen {
        healthy: true,
        settling: false,
        reason: "Serving",
        message: String::new(),
    }
}

/// The first pool that reports the replica's member `ERROR` or `OFFLINE`.
fn failing_member(lbs: &[LoadBalancer], name: &str) -> Option<Seen> {
    for lb in lbs {
        let ports = lb
            .status
            .as_ref()
            .map(|s| s.ports.as_slice())
            .unwrap_or_default();
        for port in ports {
            let member = port.members.iter().find(|m| m.name == name);
            let status = member.and_then(|m| m.operating_status.as_deref());
            let reason = match status {
                Some("ERROR") => "MemberError",
                Some("OFFLINE") => "MemberOffline",
                _ => continue,
            };
            return Some(Seen {
                healthy: false,
                settling: false,
                reason,
                message: format!(
                    "load balancer {} reports its member on port {} {}",
                    lb.name_any(),
                    port.port,
                    status.unwrap_or_default()
                ),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vm(state: &str, ready: bool) -> VirtualMachine {
        serde_json::from_value(json!({
            "apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachine",
            "metadata": {"name": "web-1", "namespace": "ns"},
            "spec": {"image": "cirros", "flavor": "m1"},
            "status": {"state": state, "conditions": [{
                "type": "Ready", "status": if ready { "True" } else { "False" },
                "reason": "Active", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .expect("vm")
    }

    fn lb(status: &str) -> LoadBalancer {
        serde_json::from_value(json!({
            "apiVersion": "verda.linecorp.com/v1alpha1", "kind": "LoadBalancer",
            "metadata": {"name": "front", "namespace": "ns"},
            "spec": {"ports": []},
            "status": {"ports": [{"port": 80, "members": [
                {"name": "web-1", "address": "10.0.0.5", "port": 80, "operatingStatus": status}]}]}
        }))
        .expect("lb")
    }

    fn once(state: &str) -> ReplicaHealth {
        ReplicaHealth {
            name: "web-1".into(),
            state: state.into(),
            reason: String::new(),
            message: String::new(),
            since: Time(Timestamp::UNIX_EPOCH),
            replacements: 0,
        }
    }

    #[test]
    fn health_follows_the_server_the_strategy_and_the_members() {
        let now = Timestamp::now();
        let healthy = once(HEALTHY);
        let j = judge(
            &vm("ACTIVE", true),
            RunStrategy::Always,
            None,
            Some(&healthy),
            now,
        );
        assert_eq!(
            (j.state.as_str(), j.since.0),
            (HEALTHY, Timestamp::UNIX_EPOCH)
        );
        let j = judge(
            &vm("SHUTOFF", true),
            RunStrategy::Always,
            None,
            Some(&healthy),
            now,
        );
        assert_eq!(
            (j.state.as_str(), j.reason.as_str()),
            (UNHEALTHY, "ServerShutoff")
        );
        assert_eq!(j.since.0, now, "a new state starts now");
        let j = judge(
            &vm("SHUTOFF", true),
            RunStrategy::Manual,
            None,
            Some(&healthy),
            now,
        );
        assert_eq!(j.state, HEALTHY);
        let j = judge(
            &vm("ACTIVE", false),
            RunStrategy::Halted,
            None,
            Some(&healthy),
            now,
        );
        assert_eq!(j.state, STARTING, "on its way to SHUTOFF: not healed");
        let failing = [lb("ERROR")];
        let j = judge(
            &vm("ACTIVE", true),
            RunStrategy::Always,
            Some(&failing),
            Some(&healthy),
            now,
        );
        assert_eq!(
            (j.state.as_str(), j.reason.as_str()),
            (UNHEALTHY, "MemberError")
        );
        let fine = [lb("NO_MONITOR")];
        let j = judge(
            &vm("ACTIVE", true),
            RunStrategy::Always,
            Some(&fine),
            Some(&healthy),
            now,
        );
        assert_eq!(j.state, HEALTHY);
        let j = judge(
            &vm("ACTIVE", true),
            RunStrategy::Always,
            Some(&failing),
            None,
            now,
        );
        assert_eq!(j.state, STARTING, "never healthy yet: not unhealthy");
    }
}
