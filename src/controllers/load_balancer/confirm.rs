//! What one call to Octavia's status tree (`GET /loadbalancers/{id}/status`) confirms of
//! a tree the operator itself just wrote: the load balancer's state, the IDs of what a
//! create made, and every pool's members with their state.
//!
//! Pure. The status tree names listeners, pools, monitors and members (with address and
//! port) but not their settings, so settings come from what was written: the create
//! request, or the member batch just sent. A tree whose shape differs from what was
//! written (something added or removed outside Kubernetes) is not confirmed: the caller
//! reads it whole instead. The status tree has no `updated_at`, so a confirmed tree's load
//! balancer has none either until a refresh of the cloud view supplies it.

use std::collections::BTreeMap;

use crate::caches::cloud_view::OctaviaTree;
use crate::cloud::model::loadbalancing::{
    HealthMonitor, Listener, ListenerTree, LoadBalancer, Member, MemberSpec, Pool, PoolStatus, Ref,
    StatusTree,
};

/// The tree a create of `trees` made, once `status` names every listener, pool and
/// monitor of it; `None` when it does not.
pub fn created(
    lb: &LoadBalancer,
    trees: &[ListenerTree],
    status: &StatusTree,
) -> Option<OctaviaTree> {
    (status.id == lb.id && status.listeners.len() == trees.len()).then_some(())?;
    let mut tree = OctaviaTree {
        load_balancers: vec![confirmed_lb(lb, status)],
        ..OctaviaTree::default()
    };
    for wanted in trees {
        let listener = status
            .listeners
            .iter()
            .find(|l| l.name == wanted.listener.name)?;
        let pool = match listener.pools.as_slice() {
            [pool] if pool.name == wanted.pool.name => pool,
            _ => return None,
        };
        let monitor = match (&wanted.monitor, &pool.health_monitor) {
            (Some(asked), Some(made)) => Some(monitor(asked, made, pool)),
            (None, None) => None,
            _ => return None,
        };
        tree.listeners
            .push(written_listener(&wanted.listener, listener, pool, lb));
        tree.pools.push(Pool {
            id: pool.id.clone(),
            name: wanted.pool.name.clone(),
            description: wanted.pool.description.clone().unwrap_or_default(),
            protocol: wanted.pool.protocol,
            lb_algorithm: wanted.pool.lb_algorithm,
            provisioning_status: pool.provisioning_status,
            operating_status: pool.operating_status,
            healthmonitor_id: monitor.as_ref().map(|m| m.id.clone()),
            listeners: vec![Ref {
                id: listener.id.clone(),
            }],
            loadbalancers: vec![Ref { id: lb.id.clone() }],
            members: Vec::new(),
            tags: wanted.pool.tags.clone(),
            session_persistence: wanted.pool.session_persistence.clone(),
        });
        tree.monitors.extend(monitor);
        let written: Vec<Member> = wanted.members.iter().map(written_member).collect();
        tree.members
            .insert(pool.id.to_string(), pool_members(pool, &written));
    }
    Some(tree)
}

/// `tree` with the load balancer's state and every pool's members as `status` shows
/// them, the members' settings taken from `tree` (which holds what was last written);
/// `None` when the listeners, pools or monitors are not those of `tree`.
pub fn members(tree: &OctaviaTree, status: &StatusTree) -> Option<OctaviaTree> {
    let [lb] = tree.load_balancers.as_slice() else {
        return None;
    };
    if status.id != lb.id {
        return None;
    }
    let pools: Vec<&PoolStatus> = status.listeners.iter().flat_map(|l| &l.pools).collect();
    if status.listeners.len() != tree.listeners.len() || pools.len() != tree.pools.len() {
        return None;
    }
    let mut confirmed = OctaviaTree {
        load_balancers: vec![confirmed_lb(lb, status)],
        members: BTreeMap::new(),
        ..tree.clone()
    };
    for pool in &tree.pools {
        let now = pools.iter().find(|p| p.id == pool.id)?;
        let same_monitor =
            now.health_monitor.as_ref().map(|m| &m.id) == pool.healthmonitor_id.as_ref();
        let listed = status.listeners.iter().any(|l| {
            tree.listeners
                .iter()
                .any(|t| t.id == l.id && t.default_pool_id.as_ref() == Some(&pool.id))
                && l.pools.iter().any(|p| p.id == pool.id)
        });
        if !same_monitor || !listed {
            return None;
        }
        let before = tree
            .members
            .get(pool.id.as_str())
            .map_or(&[][..], Vec::as_slice);
        confirmed
            .members
            .insert(pool.id.to_string(), pool_members(now, before));
    }
    Some(confirmed)
}

/// The listener `asked` for, as Octavia `made` it with `pool` on `lb`.
fn written_listener(
    asked: &crate::cloud::model::loadbalancing::CreateListener,
    made: &crate::cloud::model::loadbalancing::ListenerStatus,
    pool: &PoolStatus,
    lb: &LoadBalancer,
) -> Listener {
    Listener {
        id: made.id.clone(),
        name: asked.name.clone(),
        description: asked.description.clone().unwrap_or_default(),
        protocol: asked.protocol,
        protocol_port: asked.protocol_port,
        provisioning_status: made.provisioning_status,
        operating_status: made.operating_status,
        default_pool_id: Some(pool.id.clone()),
        loadbalancers: vec![Ref { id: lb.id.clone() }],
        tags: asked.tags.clone(),
        options: asked.options.clone(),
    }
}

/// The monitor `asked` for, as Octavia `made` it on `pool`.
fn monitor(
    asked: &crate::cloud::model::loadbalancing::CreateHealthMonitor,
    made: &crate::cloud::model::loadbalancing::MonitorStatus,
    pool: &PoolStatus,
) -> HealthMonitor {
    HealthMonitor {
        id: made.id.clone(),
        name: asked.name.clone(),
        kind: asked.kind,
        delay: asked.delay,
        timeout: asked.timeout,
        max_retries: asked.max_retries,
        max_retries_down: asked.max_retries_down,
        url_path: asked.url_path.clone(),
        expected_codes: asked.expected_codes.clone(),
        http_method: asked.http_method.clone(),
        provisioning_status: made.provisioning_status,
        operating_status: made.operating_status,
        pools: vec![Ref {
            id: pool.id.clone(),
        }],
    }
}

/// A member batch as the tree holds it until the status tree confirms it.
pub fn written_member(spec: &MemberSpec) -> Member {
    Member {
        id: Default::default(),
        name: spec.name.clone(),
        address: spec.address.clone(),
        protocol_port: spec.protocol_port,
        monitor_port: spec.monitor_port,
        weight: spec.weight,
        subnet_id: spec.subnet_id.clone(),
        provisioning_status: crate::cloud::model::loadbalancing::ProvisioningStatus::PendingUpdate,
        operating_status: crate::cloud::model::loadbalancing::OperatingStatus::Unknown,
        tags: spec.tags.clone(),
    }
}

/// The load balancer with the state `status` gives it and no `updated_at`.
fn confirmed_lb(lb: &LoadBalancer, status: &StatusTree) -> LoadBalancer {
    LoadBalancer {
        provisioning_status: status.provisioning_status,
        operating_status: status.operating_status,
        updated_at: None,
        ..lb.clone()
    }
}

/// The pool's members as `status` lists them, each with the settings of the member of
/// `written` at the same address and port (Octavia matches a batch by those two). A
/// member the batch did not hold keeps none, so it differs from every wanted member.
fn pool_members(status: &PoolStatus, written: &[Member]) -> Vec<Member> {
    status
        .members
        .iter()
        .map(|m| {
            let settings = written
                .iter()
                .find(|w| w.address == m.address && w.protocol_port == m.protocol_port);
            Member {
                id: m.id.clone(),
                name: m.name.clone(),
                address: m.address.clone(),
                protocol_port: m.protocol_port,
                monitor_port: settings.and_then(|w| w.monitor_port),
                weight: settings.and_then(|w| w.weight),
                subnet_id: settings.and_then(|w| w.subnet_id.clone()),
                provisioning_status: m.provisioning_status,
                operating_status: m.operating_status,
                tags: settings.map(|w| w.tags.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use verda_api::v1alpha1::LoadBalancer as Spec;

    use super::*;
    use crate::cloud::owner::Owner;
    use crate::controllers::load_balancer::desired::{self, Backend};
    use crate::controllers::load_balancer::plan::{Step, plan};

    fn spec() -> Spec {
        serde_saphyr::from_str(
            r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {name: web, namespace: default, uid: u-1}
spec:
  vipType: private
  ports:
    - port: 80
      protocol: http
      realServers: {protocol: http, port: 8080, virtualMachineGroupRef: web}
      monitors: [{protocol: http, endpoint: /health, port: 8081}]
    - port: 443
      protocol: https
      realServers: {protocol: https, port: 8443, virtualMachineGroupRef: web}
"#,
        )
        .expect("fixture is a LoadBalancer")
    }

    fn owner() -> Owner {
        Owner::new("u-1", "default", "web")
    }

    fn made() -> LoadBalancer {
        serde_json::from_value(
            json!({"id": "lb-1", "provisioning_status": "PENDING_CREATE",
            "operating_status": "OFFLINE", "vip_address": "10.0.0.2", "updated_at": null}),
        )
        .expect("lb")
    }

    fn backends() -> Vec<Backend> {
        vec![Backend {
            name: "web-0".into(),
            address: "10.0.1.5".into(),
            weight: None,
        }]
    }

    /// What a create of `spec()` asked for, each pool with the members of `backends`.
    fn asked(backends: &[Backend]) -> Vec<ListenerTree> {
        spec()
            .spec
            .ports
            .iter()
            .map(|p| desired::listener_tree(&owner(), p, &[], desired::members(p, backends)))
            .collect()
    }

    /// Octavia's status tree for what `asked` made, `members` in every pool.
    fn status(provisioning: &str, asked: &[ListenerTree], members: &[(&str, u16)]) -> StatusTree {
        let listeners: Vec<serde_json::Value> = asked
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let members: Vec<serde_json::Value> = members
                    .iter()
                    .map(|(address, offset)| json!({"id": format!("m-{i}-{address}"), "name": "web-0",
                        "address": address, "protocol_port": t.members.first().map_or(8080, |m| m.protocol_port) + offset,
                        "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}))
                    .collect();
                let mut pool = json!({"id": format!("p-{i}"), "name": t.pool.name,
                    "provisioning_status": "ACTIVE", "operating_status": "ONLINE", "members": members});
                if let Some(m) = &t.monitor {
                    pool["health_monitor"] = json!({"id": format!("hm-{i}"), "name": m.name, "type": "HTTP",
                        "provisioning_status": "ACTIVE", "operating_status": "ONLINE"});
                }
                json!({"id": format!("l-{i}"), "name": t.listener.name, "provisioning_status": "ACTIVE",
                       "operating_status": "ONLINE", "pools": [pool]})
            })
            .collect();
        serde_json::from_value(json!({"id": "lb-1", "provisioning_status": provisioning,
            "operating_status": "ONLINE", "listeners": listeners}))
        .expect("status tree")
    }

    fn now() -> k8s_openapi::jiff::Timestamp {
        k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).expect("valid time")
    }

    #[test]
    fn a_created_tree_confirmed_by_the_status_tree_is_what_the_spec_wants() {
        let asked = asked(&backends());
        let tree = created(
            &made(),
            &asked,
            &status("ACTIVE", &asked, &[("10.0.1.5", 0)]),
        )
        .expect("the status tree names everything asked for");
        let ports = vec![backends(), backends()];
        // Settings come from the request: the plan finds nothing to change.
        assert_eq!(
            plan(&spec(), &tree, &ports, Duration::ZERO, now()),
            Step::Converged
        );
        assert_eq!(tree.monitors.len(), 1);
        assert_eq!(tree.load_balancers[0].updated_at, None);
        assert_eq!(
            tree.load_balancers[0].vip_address.as_deref(),
            Some("10.0.0.2")
        );
        // Still being built: the plan waits.
        let busy = created(&made(), &asked, &status("PENDING_CREATE", &asked, &[])).expect("named");
        assert!(matches!(
            plan(&spec(), &busy, &ports, Duration::ZERO, now()),
            Step::Wait(_)
        ));
    }

    #[test]
    fn a_status_tree_without_what_was_asked_for_confirms_nothing() {
        let asked = asked(&[]);
        let mut short = status("ACTIVE", &asked, &[]);
        short.listeners.pop();
        assert!(created(&made(), &asked, &short).is_none());
        let mut renamed = status("ACTIVE", &asked, &[]);
        renamed.listeners[0].pools[0].name = "someone-else".into();
        assert!(created(&made(), &asked, &renamed).is_none());
        let mut unmonitored = status("ACTIVE", &asked, &[]);
        unmonitored.listeners[0].pools[0].health_monitor = None;
        assert!(created(&made(), &asked, &unmonitored).is_none());
    }

    #[test]
    fn members_take_their_settings_from_the_batch_and_an_outside_member_differs() {
        let asked = asked(&[]);
        let tree = created(&made(), &asked, &status("ACTIVE", &asked, &[])).expect("named");
        let ports = vec![backends(), backends()];
        let Step::ReplaceMembers(0, pool, batch) =
            plan(&spec(), &tree, &ports, Duration::ZERO, now())
        else {
            panic!("the first pool's members are to be set");
        };
        assert_eq!(batch[0].monitor_port, Some(8081));
        let mut written = tree.clone();
        written
            .members
            .insert(pool.to_string(), batch.iter().map(written_member).collect());
        // Octavia holds the batch: the first pool matches, the second is next.
        let both = status("ACTIVE", &asked, &[("10.0.1.5", 0)]);
        let confirmed = members(&written, &both).expect("same shape");
        let first = &confirmed.members["p-0"];
        assert_eq!(
            (first[0].monitor_port, first[0].id.as_str()),
            (Some(8081), "m-0-10.0.1.5")
        );
        assert!(matches!(
            plan(&spec(), &confirmed, &ports, Duration::ZERO, now()),
            Step::ReplaceMembers(1, ..)
        ));
        // A member someone added outside carries none of the batch's settings.
        let outside = status("ACTIVE", &asked, &[("10.0.1.5", 0), ("10.0.9.9", 0)]);
        let confirmed = members(&written, &outside).expect("same shape");
        assert!(matches!(
            plan(&spec(), &confirmed, &ports, Duration::ZERO, now()),
            Step::ReplaceMembers(0, ..)
        ));
    }

    #[test]
    fn a_pool_or_monitor_changed_outside_is_read_whole() {
        let asked = asked(&[]);
        let tree = created(&made(), &asked, &status("ACTIVE", &asked, &[])).expect("named");
        let mut no_monitor = status("ACTIVE", &asked, &[]);
        no_monitor.listeners[0].pools[0].health_monitor = None;
        assert!(members(&tree, &no_monitor).is_none());
        let mut other_pool = status("ACTIVE", &asked, &[]);
        other_pool.listeners[1].pools[0].id = crate::cloud::ids::PoolId::new("p-new".to_owned());
        assert!(members(&tree, &other_pool).is_none());
        let mut gone = status("ACTIVE", &asked, &[]);
        gone.listeners.pop();
        assert!(members(&tree, &gone).is_none());
    }

    use std::time::Duration;
}
