//! A group spread over availability zones, end to end on the simulator (three hosts in
//! `az-1`..`az-3`, as on the real systems): two replicas per zone; a scale-down leaves
//! 2/1/1; a zone lost (its compute service disabled, its servers ERROR) moves its
//! replicas to the others (`Balanced`) or leaves them pending (`Even`); the zone back,
//! `Balanced` moves them home, surge first: the pool behind a LoadBalancer never holds
//! fewer than `replicas` meanwhile.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::e2e::{Env, eventually, test_timing};
use verda_api::v1alpha1::VirtualMachineGroup;
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(60);
const NAME: &str = "web";

fn group(spread: &str) -> String {
    format!(
        r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachineGroup
metadata:
  name: {NAME}
spec:
  replicas: 6
  haPolicy: soft
  zones:
    names: [az-1, az-2, az-3]
    spread: {spread}
  template:
    image: centos79
    flavor: n3-1vcpu-2gb
"#
    )
}

/// ACTIVE servers per zone, as the simulator has them.
fn active_per_zone(env: &Env) -> BTreeMap<String, usize> {
    let mut zones = BTreeMap::new();
    for s in env.sim.live_servers() {
        if s.status == "ACTIVE" {
            *zones
                .entry(s.availability_zone.unwrap_or_default())
                .or_default() += 1;
        }
    }
    zones
}

async fn until_spread(env: &Env, want: &[(&str, usize)]) {
    let want: BTreeMap<String, usize> = want
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(z, n)| ((*z).to_owned(), *n))
        .collect();
    let total: usize = want.values().sum();
    let what = format!("ACTIVE servers per zone {want:?}");
    eventually(&what, LIMIT, || async {
        let live = env.sim.live_servers().len();
        (active_per_zone(env) == want && live == total).then_some(())
    })
    .await;
}

async fn summary(env: &Env) -> Option<String> {
    let g = env.api::<VirtualMachineGroup>().get(NAME).await.ok()?;
    g.status?.zone_summary
}

#[tokio::test]
async fn a_balanced_group_spreads_scales_and_survives_the_loss_of_a_zone() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(&group("Balanced"))
        .await;
    until_spread(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;
    eventually("the zones in status", LIMIT, || async {
        (summary(&env).await.as_deref() == Some("az-1=2 az-2=2 az-3=2")).then_some(())
    })
    .await;

    env.scale(NAME, 4).await;
    until_spread(&env, &[("az-1", 2), ("az-2", 1), ("az-3", 1)]).await;
    env.scale(NAME, 6).await;
    until_spread(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;

    env.sim.set_zone_enabled("az-2", false);
    let lost = env.sim.fail_zone("az-2");
    assert_eq!(lost.len(), 2, "two replicas were in az-2");
    until_spread(&env, &[("az-1", 3), ("az-3", 3)]).await;
    env.event_seen("ZoneUnavailable").await;
    env.event_seen("Rebalanced").await;

    env.sim.set_zone_enabled("az-2", true);
    until_spread(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;
}

#[tokio::test]
async fn an_even_group_leaves_a_lost_zones_replicas_pending_and_keeps_the_rest() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(&group("Even"))
        .await;
    until_spread(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;

    env.sim.set_zone_enabled("az-2", false);
    env.sim.fail_zone("az-2");
    env.event_seen("ZoneUnavailable").await;
    // Nothing moves: after a few resyncs az-1 and az-3 still hold two each, and az-2
    // none that is ACTIVE.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let zones = active_per_zone(&env);
    assert_eq!(zones.get("az-1"), Some(&2), "{zones:?}");
    assert_eq!(zones.get("az-3"), Some(&2), "{zones:?}");
    assert_eq!(zones.get("az-2"), None, "{zones:?}");

    env.sim.set_zone_enabled("az-2", true);
    until_spread(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;
}

#[tokio::test]
async fn a_load_balancer_is_created_in_its_availability_zone() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(&support::e2e::sample("virtualmachinegroup.yaml"))
        .await;
    let yaml = support::e2e::sample("loadbalancer.yaml").replacen(
        "spec:\n",
        "spec:\n  availabilityZone: az-1\n",
        1,
    );
    env.create_from_yaml::<verda_api::v1alpha1::LoadBalancer>(&yaml)
        .await;
    let zone = eventually("the load balancer in Octavia", LIMIT, || async {
        let lbs = env.sim.load_balancers();
        lbs.first().map(|lb| lb.availability_zone.clone())
    })
    .await;
    assert_eq!(zone.as_deref(), Some("az-1"));
}

/// A zone Nova still lists but whose hosts are down: a replica sent there fails with
/// NoValidHost, and a `Balanced` group places its share in the other zones, records
/// when, and warns.
#[tokio::test]
async fn a_balanced_group_avoids_a_zone_that_finds_no_valid_host() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(
        &group("Balanced").replace("replicas: 6", "replicas: 3"),
    )
    .await;
    until_spread(&env, &[("az-1", 1), ("az-2", 1), ("az-3", 1)]).await;

    env.sim.set_zone_down("az-2", true);
    env.sim.fail_zone("az-2");
    // The replica's server is replaced in az-2 and fails with NoValidHost there; the
    // group then moves the replica to az-1 or az-3.
    eventually(
        "two ACTIVE servers in one zone, none in az-2",
        LIMIT,
        || async {
            let zones = active_per_zone(&env);
            let total: usize = zones.values().sum();
            (total == 3 && !zones.contains_key("az-2") && env.sim.live_servers().len() == 3)
                .then_some(())
        },
    )
    .await;
    let g = env
        .api::<VirtualMachineGroup>()
        .get(NAME)
        .await
        .expect("group");
    let zones = g.status.expect("status").zones;
    let az2 = zones
        .iter()
        .find(|z| z.name == "az-2")
        .expect("az-2 in status");
    assert!(az2.no_valid_host_at.is_some(), "{zones:?}");
    assert!(az2.zone_available, "Nova still lists it");
    env.event_seen("ZoneUnavailable").await;
}

/// A VirtualMachine in a zone Cinder does not have (the simulator's Cinder, as the real
/// systems', has only `nova`): its volume is made in Cinder's default zone, and the
/// event says so.
#[tokio::test]
async fn a_volume_is_made_in_the_servers_zone_only_where_cinder_has_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let vm = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: db}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  availabilityZone: az-2\n  volumes: [{name: data, size: 1}]\n";
    env.create_from_yaml::<verda_api::v1alpha1::VirtualMachine>(vm)
        .await;
    let ready = env.ready_vm("db").await;
    let status = ready.status.expect("status");
    assert_eq!(status.availability_zone.as_deref(), Some("az-2"));
    let note = eventually("the VolumeCreated event", LIMIT, || async {
        let events = env
            .api::<k8s_openapi::api::core::v1::Event>()
            .list(&Default::default())
            .await
            .ok()?;
        events
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("VolumeCreated"))
            .and_then(|e| e.message)
    })
    .await;
    assert!(
        note.ends_with(
            "in Cinder's default zone: Cinder has no availability zone az-2, the server's"
        ),
        "{note}"
    );
}

/// `zones` added to a running group: its replicas outside the named zones move there
/// as a rollout replaces them, surge first.
#[tokio::test]
async fn zones_added_to_a_running_group_move_its_replicas_in() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let plain = group("Balanced")
        .replace("replicas: 6", "replicas: 3")
        .replace(
            "  zones:\n    names: [az-1, az-2, az-3]\n    spread: Balanced\n",
            "",
        );
    env.create_from_yaml::<VirtualMachineGroup>(&plain).await;
    eventually("3 ACTIVE servers", LIMIT, || async {
        let zones = active_per_zone(&env);
        (zones.values().sum::<usize>() == 3).then_some(())
    })
    .await;
    let patch = serde_json::json!({"spec": {"zones": {"names": ["az-3"]}}});
    env.api::<VirtualMachineGroup>()
        .patch(
            NAME,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("zones added");
    until_spread(&env, &[("az-3", 3)]).await;
}

const FRONT: &str = r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata:
  name: front
spec:
  region: tokyo1
  zone: dev
  vipType: private
  serviceType: generic
  ports:
  - port: 80
    protocol: tcp
    realServers: {protocol: tcp, port: 80, virtualMachineGroupRef: web}
"#;

/// The fewest members the LoadBalancer's pool held, sampled every 5 ms until the group
/// runs `want` per zone, and the pool's changes meanwhile.
async fn pool_floor_until(env: &Env, want: &[(&str, usize)]) -> (usize, Vec<Vec<String>>) {
    let mut fewest = usize::MAX;
    let mut seen: Vec<Vec<String>> = Vec::new();
    let deadline = tokio::time::Instant::now() + LIMIT;
    let want: BTreeMap<String, usize> = want.iter().map(|(z, n)| ((*z).to_owned(), *n)).collect();
    loop {
        if let Some(pool) = env
            .sim
            .load_balancers()
            .first()
            .and_then(|lb| lb.pools.first().cloned())
        {
            let mut names: Vec<String> = pool.members.iter().map(|m| m.name.clone()).collect();
            names.sort();
            fewest = fewest.min(names.len());
            if seen.last() != Some(&names) {
                seen.push(names);
            }
        }
        let total: usize = want.values().sum();
        if active_per_zone(env) == want && env.sim.live_servers().len() == total {
            return (fewest, seen);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{want:?} not reached: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_zone_back_moves_replicas_home_without_shrinking_the_pool() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(&group("Balanced"))
        .await;
    let _: verda_api::v1alpha1::LoadBalancer = env.create_from_yaml(FRONT).await;
    until_spread(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;
    env.load_balancer_ready("front", "6/6").await;

    env.sim.set_zone_enabled("az-2", false);
    env.sim.fail_zone("az-2");
    let (lost, _) = pool_floor_until(&env, &[("az-1", 3), ("az-3", 3)]).await;
    assert!(lost >= 4, "the pool held {lost} while az-2 was lost");
    env.load_balancer_ready("front", "6/6").await;

    env.sim.set_zone_enabled("az-2", true);
    let (back, seen) = pool_floor_until(&env, &[("az-1", 2), ("az-2", 2), ("az-3", 2)]).await;
    assert!(
        back >= 6,
        "the pool held {back} while az-2 came back: {seen:?}"
    );
}
