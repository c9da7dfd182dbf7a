//! The published LoadBalancer with the published group: an Octavia load balancer with a
//! listener, pool and monitor per port whose members follow the group through the
//! watch on VirtualMachines (one batch update per pool); scale-down drains before a
//! server goes; a public VIP gets a floating IP; a missing group is reported; delete
//! cascades.

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, sample, test_timing, watch_only_timing};
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::sim::{Fault, FaultKind, SimConfig, SimLoadBalancer};

const LIMIT: Duration = Duration::from_secs(30);
const LB: &str = "loadbalancer-sample";
const GROUP: &str = "virtualmachinegroup-sample";

fn the_lb(env: &Env) -> Option<SimLoadBalancer> {
    let mut lbs = env.sim.load_balancers();
    assert!(lbs.len() <= 1, "more than one load balancer: {lbs:?}");
    lbs.pop()
}

/// Member names per pool, in listener order.
fn pool_members(lb: &SimLoadBalancer) -> Vec<BTreeSet<String>> {
    lb.pools
        .iter()
        .map(|p| p.members.iter().map(|m| m.name.clone()).collect())
        .collect()
}

async fn wait_members(env: &Env, want: &[&str]) -> SimLoadBalancer {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    eventually(&format!("every pool lists {want:?}"), LIMIT, || async {
        let lb = the_lb(env)?;
        (lb.pools.len() == 2
            && lb.provisioning_status == "ACTIVE"
            && pool_members(&lb).iter().all(|m| *m == want))
        .then_some(lb)
    })
    .await
}

#[tokio::test]
async fn published_load_balancer_follows_the_group_through_watches() {
    let env = Env::start(SimConfig::fast(), watch_only_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;

    let lb = wait_members(&env, &[&format!("{GROUP}-0"), &format!("{GROUP}-1")]).await;
    let ports: Vec<(String, u64)> = lb
        .listeners
        .iter()
        .map(|l| (l.protocol.clone(), l.protocol_port))
        .collect();
    assert_eq!(ports, [("HTTP".into(), 80), ("HTTPS".into(), 443)]);
    let monitors: Vec<(String, Option<String>)> = lb
        .pools
        .iter()
        .map(|p| {
            let m = p.health_monitor.as_ref().expect("a monitor per pool");
            (m.kind.clone(), m.url_path.clone())
        })
        .collect();
    assert_eq!(
        monitors,
        [
            ("HTTP".into(), Some("/health/alive".into())),
            ("HTTPS".into(), Some("/health/alive".into()))
        ]
    );
    assert!(
        lb.pools
            .iter()
            .all(|p| p.members.iter().all(|m| m.monitor_port.is_none()))
    );

    let object = env.load_balancer_ready(LB, "4/4").await;
    let status = object.status.expect("status");
    assert_eq!(status.load_balancer_id.as_deref(), Some(lb.id.as_str()));
    assert_eq!(status.vip.as_deref(), Some(lb.vip_address.as_str()));
    assert_eq!(status.provisioning_status.as_deref(), Some("ACTIVE"));
    assert_eq!(status.ports.len(), 2);
    assert_eq!(status.ports[0].port, 80);
    assert!(status.ports[0].listener_id.is_some() && status.ports[0].health_monitor_id.is_some());
    assert!(
        status.ports[1]
            .members
            .iter()
            .all(|m| m.operating_status.as_deref() == Some("ONLINE")),
        "{:?}",
        status.ports[1].members
    );
    let monitors = find_condition(&status.conditions, "MonitorsApplied").expect("condition");
    assert_eq!(monitors.status, "False");
    assert!(
        monitors.message.contains("port 80: https /health/ready"),
        "{}",
        monitors.message
    );
    env.event_seen("MonitorsNotApplied").await;

    // Scale 2 → 3: one batch update per pool, through the watch (the resync is 10 min).
    let before = env.sim.requests("load-balancer", "replace_members");
    env.api::<VirtualMachineGroup>()
        .patch_scale(
            GROUP,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale accepted");
    let three = [
        format!("{GROUP}-0"),
        format!("{GROUP}-1"),
        format!("{GROUP}-2"),
    ];
    wait_members(&env, &three.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(
        env.sim.requests("load-balancer", "replace_members") - before,
        2,
        "one batch member update per pool"
    );
    env.load_balancer_ready(LB, "6/6").await;

    // Scale 3 → 1: each removed VM leaves every pool before its server is deleted.
    env.api::<VirtualMachineGroup>()
        .patch_scale(
            GROUP,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("scale accepted");
    let removed = [format!("{GROUP}-1"), format!("{GROUP}-2")];
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let lb = the_lb(&env).expect("load balancer");
        let servers = env.sim.servers();
        for name in &removed {
            let alive = servers.iter().any(|s| &s.name == name && !s.deleting);
            let pooled = lb
                .pools
                .iter()
                .any(|p| p.members.iter().any(|m| &m.name == name));
            assert!(
                alive || !pooled,
                "{name}: server deleted while still a pool member"
            );
        }
        let done = removed
            .iter()
            .all(|n| !servers.iter().any(|s| &s.name == n))
            && pool_members(&lb).iter().all(|m| m.len() == 1);
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "scale-down did not finish"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    env.load_balancer_ready(LB, "2/2").await;

    // Delete: the cascade removes the Octavia tree, then the finalizer goes.
    env.api::<LoadBalancer>()
        .delete(LB, &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("the LoadBalancer is gone", LIMIT, || async {
        env.api::<LoadBalancer>()
            .get_opt(LB)
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    assert!(env.sim.load_balancers().is_empty());
}

#[tokio::test]
async fn a_public_vip_gets_a_floating_ip_released_on_delete() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = sample("loadbalancer.yaml")
        .replace("vipType: private", "vipType: public")
        .replace(
            "virtualMachineGroupRef: virtualmachinegroup-sample",
            "addresses: [\"10.0.0.5\"]",
        )
        .replace("zone: dev", "zone: dev\n  vipSubnet: private-subnet");
    let _: LoadBalancer = env.create_from_yaml(&manifest).await;
    let api = env.api::<LoadBalancer>();
    let status = eventually("a floating IP in status", LIMIT, || async {
        let s = api.get(LB).await.ok()?.status?;
        (is_true(&s.conditions, READY) && s.floating_ip.is_some()).then_some(s)
    })
    .await;
    let fips = env.sim.floating_ips();
    assert_eq!(fips.len(), 1, "{fips:?}");
    assert_eq!(Some(fips[0].address.clone()), status.floating_ip);
    let lb = the_lb(&env).expect("load balancer");
    assert_eq!(fips[0].port_id.as_deref(), Some(lb.vip_port_id.as_str()));
    // Literal addresses are members (one per port); no server answers on 10.0.0.5, so
    // the monitors report them down.
    assert_eq!(status.members.as_deref(), Some("0/2"));

    api.delete(LB, &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("the LoadBalancer is gone", LIMIT, || async {
        api.get_opt(LB).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(env.sim.floating_ips().is_empty(), "floating IP released");
    assert!(env.sim.load_balancers().is_empty());
}

#[tokio::test]
async fn a_missing_group_is_reported_and_its_members_appear_when_it_does() {
    let env = Env::start(SimConfig::fast(), watch_only_timing()).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    let api = env.api::<LoadBalancer>();
    let condition = eventually("Ready=False GroupNotFound", LIMIT, || async {
        let s = api.get(LB).await.ok()?.status?;
        let c = find_condition(&s.conditions, READY)?.clone();
        (c.reason == "GroupNotFound" && s.ports.len() == 2).then_some(c)
    })
    .await;
    assert!(condition.message.contains(GROUP), "{}", condition.message);
    env.event_seen("GroupNotFound").await;

    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    wait_members(&env, &[&format!("{GROUP}-0"), &format!("{GROUP}-1")]).await;
    env.load_balancer_ready(LB, "4/4").await;
}

#[tokio::test]
async fn a_load_balancer_in_error_is_reported_then_recreated() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = sample("loadbalancer.yaml").replace(
        "virtualMachineGroupRef: virtualmachinegroup-sample",
        "addresses: [\"10.0.0.5\"]",
    );
    let _: LoadBalancer = env.create_from_yaml(&manifest).await;
    let api = env.api::<LoadBalancer>();
    let first = eventually("the LoadBalancer is Ready", LIMIT, || async {
        let s = api.get(LB).await.ok()?.status?;
        is_true(&s.conditions, READY).then_some(s.load_balancer_id?)
    })
    .await;
    env.sim.set_load_balancer_error(&first);
    // The report itself is brief (0.5 s here): its Warning event is what lasts.

    let second = eventually("a new load balancer is Ready", LIMIT, || async {
        let s = api.get(LB).await.ok()?.status?;
        let id = s.load_balancer_id.clone()?;
        (id != first && is_true(&s.conditions, READY) && s.ports.len() == 2).then_some(id)
    })
    .await;
    let lbs = env.sim.load_balancers();
    assert_eq!(lbs.len(), 1, "the failed one is gone: {lbs:?}");
    assert_eq!(lbs[0].id, second);
    env.event_seen("LoadBalancerError").await;
    env.event_seen("Recreating").await;
}

#[tokio::test]
async fn a_load_balancer_for_a_ready_group_is_built_with_one_octavia_write() {
    let env = Env::start(SimConfig::fast(), watch_only_timing()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let groups = env.api::<VirtualMachineGroup>();
    eventually("the group has 2 Ready replicas", LIMIT, || async {
        let s = groups.get(GROUP).await.ok()?.status?;
        (s.ready_replicas == 2).then_some(())
    })
    .await;

    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    wait_members(&env, &[&format!("{GROUP}-0"), &format!("{GROUP}-1")]).await;
    env.load_balancer_ready(LB, "4/4").await;
    let writes: Vec<(String, u64)> = env
        .sim
        .request_counts()
        .into_iter()
        .filter(|((service, op), _)| {
            service == "load-balancer" && !op.starts_with("list_") && !op.starts_with("get_")
        })
        .map(|((_, op), n)| (op, n))
        .collect();
    assert_eq!(
        writes,
        [("create_load_balancer".to_owned(), 1)],
        "listeners, pools, monitors and members come with the create"
    );
}

#[tokio::test]
async fn a_load_balancer_waits_for_replicas_an_outage_holds_up_and_is_created_with_them() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    // Nova answers every create 503: both replicas retry, Ready=False CloudUnavailable.
    env.sim.inject(Fault::new(
        "compute",
        Some("create_server"),
        FaultKind::Status(503),
    ));
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let vms = env.api::<VirtualMachine>();
    for name in [format!("{GROUP}-0"), format!("{GROUP}-1")] {
        eventually(&format!("{name} reports the outage"), LIMIT, || async {
            let status = vms.get_opt(&name).await.ok()??.status?;
            let ready = find_condition(&status.conditions, READY)?;
            (ready.reason == "CloudUnavailable").then_some(())
        })
        .await;
    }
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    let lbs = env.api::<LoadBalancer>();
    eventually("the load balancer holds its create", LIMIT, || async {
        let status = lbs.get(LB).await.ok()?.status?;
        let ready = find_condition(&status.conditions, READY)?;
        ready
            .message
            .starts_with("2 VirtualMachines of the group are still starting")
            .then_some(())
    })
    .await;
    assert!(
        the_lb(&env).is_none(),
        "no load balancer is created while its replicas are only held up"
    );

    env.sim.clear_faults();
    wait_members(&env, &[&format!("{GROUP}-0"), &format!("{GROUP}-1")]).await;
    let member_writes: u64 = env
        .sim
        .request_counts()
        .into_iter()
        .filter(|((service, op), _)| {
            service == "load-balancer"
                && ["create_member", "delete_member", "replace_members"].contains(&op.as_str())
        })
        .map(|(_, n)| n)
        .sum();
    assert_eq!(member_writes, 0, "both replicas came with the create");
}
