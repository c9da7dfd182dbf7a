//! The shared cloud view, end to end: a converged fleet costs the same few cloud calls
//! per refresh period whatever its size, and what changes outside Kubernetes (a load
//! balancer deleted, a pool's members edited) is still healed within a refresh.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::crash::{CrashingCloud, Tripwire};
use support::e2e::{Env, calls_since, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::caches::cloud_view::QUIET;
use verda_operator::cloud::ids::{LoadBalancerId, PoolId};
use verda_operator::runtime::Timing;
use verda_operator::sim::{SimConfig, Simulator};

const LIMIT: Duration = Duration::from_secs(60);
const LB: &str = "loadbalancer-sample";
const GROUP: &str = "virtualmachinegroup-sample";
const PERIOD: Duration = Duration::from_secs(1);

fn one_second_refresh() -> Timing {
    Timing {
        resync: PERIOD,
        ..test_timing()
    }
}

/// Every call the cloud received over `periods` refresh periods, by operation.
async fn calls_over(sim: &Simulator, periods: u32) -> BTreeMap<String, u64> {
    let before = sim.request_counts();
    tokio::time::sleep(PERIOD * periods).await;
    calls_since(sim, &before)
}

fn is_write(op: &str) -> bool {
    let verb = op.split('/').nth(1).unwrap_or_default();
    [
        "create", "delete", "update", "replace", "set", "resize", "confirm",
    ]
    .iter()
    .any(|w| verb.starts_with(w))
}

async fn published(env: &Env) {
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready(LB, "4/4").await;
}

/// Until nothing is read on the view's behalf any more: a load balancer that changed
/// within `QUIET` is read from Octavia (its `updated_at` has whole seconds), and two
/// periods more let the last status writes settle.
async fn settle() {
    tokio::time::sleep(QUIET + PERIOD * 2).await;
}

#[tokio::test]
async fn idle_cloud_calls_per_refresh_do_not_grow_with_the_fleet() {
    let env = Env::start(SimConfig::fast(), one_second_refresh()).await;
    published(&env).await;
    settle().await;
    let periods = 6;
    let small = calls_over(&env.sim, periods).await;
    env.scale(GROUP, 6).await;
    env.load_balancer_ready(LB, "12/12").await;
    settle().await;
    let large = calls_over(&env.sim, periods).await;
    let per_period =
        |calls: &BTreeMap<String, u64>| calls.values().sum::<u64>() as f64 / f64::from(periods);
    println!(
        "IDLE per {PERIOD:?} refresh: 2 VMs {:.1} calls {small:?}; 6 VMs {:.1} calls {large:?}",
        per_period(&small),
        per_period(&large)
    );
    for calls in [&small, &large] {
        assert!(
            !calls.keys().any(|op| is_write(op)),
            "an idle fleet writes nothing: {calls:?}"
        );
        // One list of the operator's servers and one of its load balancers per
        // refresh; a period boundary may fall either side of the window.
        assert!(
            per_period(calls) <= 2.0 + 2.0 / f64::from(periods),
            "{calls:?}"
        );
    }
    assert!(
        per_period(&large) <= per_period(&small) + 2.0 / f64::from(periods),
        "three times the VirtualMachines cost more per refresh: {small:?} then {large:?}"
    );
}

/// A burst of creates is decided on one listing of the project, not on a lookup each:
/// with every lookup by owner held, the group's servers and the LoadBalancer are
/// created all the same, and once each (after its create, an object looks itself up
/// again, so nothing converges until the lookups are let through).
#[tokio::test]
async fn a_burst_of_creates_is_decided_on_one_listing_not_a_lookup_each() {
    let wire = Tripwire::armed(usize::MAX);
    wire.hold_lookups();
    let crashing = |client| Arc::new(CrashingCloud::new(client, wire.clone())) as _;
    let env = Env::start_with(SimConfig::fast(), test_timing(), crashing).await;
    let five = sample("virtualmachinegroup.yaml").replace("replicas: 2", "replicas: 5");
    let _: VirtualMachineGroup = env.create_from_yaml(&five).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    // The load balancer's create waits for the replicas to be Ready (it carries them),
    // which their held lookups keep them from: only the servers are made meanwhile.
    eventually("the servers made, lookups held", LIMIT, || async {
        (env.sim.servers().len() == 5).then_some(())
    })
    .await;
    wire.release_lookups();
    env.load_balancer_ready(LB, "10/10").await;
    assert_eq!(env.sim.requests("compute", "create_server"), 5);
    assert_eq!(env.sim.servers().len(), 5);
    assert_eq!(env.sim.requests("load-balancer", "create_load_balancer"), 1);
    assert_eq!(env.sim.load_balancers().len(), 1);
}

/// A group and its LoadBalancer applied together, as a fleet is: the load balancer's
/// create waits for the replicas and carries them (no member batch), the group's server
/// group is known from its create (no listing of its own: one per term for the project),
/// and a replica's build is confirmed by its one lookup after its create, then by the
/// view, never polled. Lookups asked close together share a call (on an idle machine
/// these five cost two); how many share depends on how they fall in time, so the
/// sharing and the pacing are held by the unit tests of `owner_lookups`, and here the
/// client is held to make no call beyond the lookups asked and the view's listings
/// (one per refresh period, so their count grows with the time the test takes).
#[tokio::test]
async fn a_group_applied_with_its_load_balancer_costs_its_creates_and_a_few_reads() {
    let settles_at_once = SimConfig {
        lb_delay: Duration::ZERO,
        ..SimConfig::fast()
    };
    let wire = Tripwire::armed(usize::MAX);
    let counted = |client| Arc::new(CrashingCloud::new(client, wire.clone())) as _;
    let env = Env::start_with(settles_at_once, test_timing(), counted).await;
    let before = env.sim.request_counts();
    let five = sample("virtualmachinegroup.yaml").replace("replicas: 2", "replicas: 5");
    let _: VirtualMachineGroup = env.create_from_yaml(&five).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready(LB, "10/10").await;
    tokio::time::sleep(QUIET + PERIOD).await;
    let calls = calls_since(&env.sim, &before);
    // Counted from the start, so a call in flight at `before` is never missed.
    let (asked, listings) = (wire.server_lookups(), wire.server_listings());
    println!(
        "CONVERGE group of 5 with its load balancer: {asked} server lookups asked, {listings} listings, {calls:?}"
    );
    let count = |op: &str| calls.get(op).copied().unwrap_or(0);
    assert_eq!(count("compute/create_server"), 5);
    assert_eq!(count("compute/create_server_group"), 1);
    assert!(count("compute/list_server_groups") <= 1, "{calls:?}");
    assert_eq!(count("load-balancer/create_load_balancer"), 1);
    assert_eq!(
        count("load-balancer/replace_members"),
        0,
        "the create carries the members: {calls:?}"
    );
    assert!(count("load-balancer/get_status_tree") <= 3, "{calls:?}");
    assert!(
        asked <= 2 * 5,
        "five builds confirmed by no more than two lookups each: {asked}"
    );
    assert!(
        count("compute/list_servers") <= (asked + listings) as u64,
        "no call of servers beyond {asked} lookups and {listings} listings: {calls:?}"
    );
}

#[tokio::test]
async fn a_load_balancer_deleted_outside_kubernetes_is_rebuilt_within_a_refresh() {
    let env = Env::start(SimConfig::fast(), one_second_refresh()).await;
    published(&env).await;
    tokio::time::sleep(PERIOD * 2).await;
    let first = env.sim.load_balancers().pop().expect("a load balancer").id;
    let deleted = Instant::now();
    env.cloud()
        .load_balancing(None)
        .delete_load_balancer(&LoadBalancerId::new(first.clone()))
        .await
        .expect("deleted as `openstack loadbalancer delete --cascade` would");
    let api = env.api::<LoadBalancer>();
    eventually("a new load balancer with every member", LIMIT, || async {
        let lb = api.get(LB).await.ok()?;
        let status = lb.status?;
        (status.load_balancer_id.as_deref() != Some(first.as_str())
            && status.members.as_deref() == Some("4/4"))
        .then_some(())
    })
    .await;
    println!(
        "HEAL load balancer deleted outside: rebuilt with its members in {:.1} s (refresh every {PERIOD:?})",
        deleted.elapsed().as_secs_f64()
    );
    assert_eq!(env.sim.load_balancers().len(), 1);
}

#[tokio::test]
async fn pool_members_edited_outside_kubernetes_are_restored_within_a_refresh() {
    let env = Env::start(SimConfig::fast(), one_second_refresh()).await;
    published(&env).await;
    tokio::time::sleep(PERIOD * 2).await;
    let lb = env.sim.load_balancers().pop().expect("a load balancer");
    let pool = lb.pools.first().expect("a pool").id.clone();
    let edited = Instant::now();
    env.cloud()
        .load_balancing(None)
        .replace_members(&PoolId::new(pool.clone()), &[])
        .await
        .expect("members removed as `openstack loadbalancer member delete` would");
    eventually("the pool lists both members again", LIMIT, || async {
        let lb = env.sim.load_balancers().pop()?;
        let p = lb.pools.iter().find(|p| p.id == pool)?;
        (p.members.len() == 2 && lb.provisioning_status == "ACTIVE").then_some(())
    })
    .await;
    println!(
        "HEAL pool emptied outside: both members back in {:.1} s (refresh every {PERIOD:?})",
        edited.elapsed().as_secs_f64()
    );
}

#[tokio::test]
async fn idle_cloud_calls_with_volumes_do_not_grow_with_the_replicas() {
    let env = Env::start(SimConfig::fast(), one_second_refresh()).await;
    let group = |replicas: i32| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: {GROUP}}}\nspec:\n  replicas: {replicas}\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    volumes: [{{name: data, size: 1}}, {{name: logs, size: 1}}]\n"
        )
    };
    let _: VirtualMachineGroup = env.create_from_yaml(&group(2)).await;
    let ready = |n: i32| {
        let api = env.api::<VirtualMachineGroup>();
        async move {
            eventually(
                &format!("{n} replicas with their volumes"),
                LIMIT,
                || async {
                    let s = api.get(GROUP).await.ok()?.status?;
                    (s.ready_replicas == n && s.replicas == n).then_some(())
                },
            )
            .await
        }
    };
    ready(2).await;
    settle().await;
    let periods = 6;
    let small = calls_over(&env.sim, periods).await;
    env.scale(GROUP, 6).await;
    ready(6).await;
    settle().await;
    let large = calls_over(&env.sim, periods).await;
    let per_period =
        |calls: &BTreeMap<String, u64>| calls.values().sum::<u64>() as f64 / f64::from(periods);
    println!(
        "IDLE with volumes per {PERIOD:?} refresh: 2 VMs {:.1} calls {small:?}; 6 VMs {:.1} calls {large:?}",
        per_period(&small),
        per_period(&large)
    );
    for calls in [&small, &large] {
        assert!(!calls.keys().any(|op| is_write(op)), "{calls:?}");
        // One list of the servers and one of the volumes per refresh.
        assert!(
            per_period(calls) <= 2.0 + 2.0 / f64::from(periods),
            "{calls:?}"
        );
    }
}

/// The published two-port LoadBalancer converges in a handful of calls — one create,
/// its member batches, and one status-tree read after each write plus one `QUIET` later
/// — and the periods right after are as idle as any later one.
///
/// The group is Ready before the LoadBalancer is applied and grows after it settled, so
/// each phase's calls do not depend on whether servers boot within `QUIET` of the create
/// (a LoadBalancer that settles while its group boots reads its tree `QUIET` later once
/// more, as it should). Octavia settles each write at once: with the fast simulator's
/// 10 ms, a confirming read sent sooner than that after its write found the tree still
/// pending and was rightly sent again, one call more depending on the machine's speed.
#[tokio::test]
async fn a_load_balancer_converges_in_a_few_calls_and_is_idle_from_the_first_period() {
    let settles_at_once = SimConfig {
        lb_delay: Duration::ZERO,
        ..SimConfig::fast()
    };
    let env = Env::start(settles_at_once, one_second_refresh()).await;
    let _: VirtualMachineGroup = env
        .create_from_yaml(&sample("virtualmachinegroup.yaml"))
        .await;
    env.ready_vm(&format!("{GROUP}-0")).await;
    env.ready_vm(&format!("{GROUP}-1")).await;
    let before = env.sim.request_counts();
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    env.load_balancer_ready(LB, "4/4").await;
    // Each LoadBalancer reads its tree once more QUIET after its last write.
    tokio::time::sleep(QUIET + PERIOD).await;
    let created = octavia_since(&env.sim, &before);
    let before = env.sim.request_counts();
    env.scale(GROUP, 3).await;
    env.load_balancer_ready(LB, "6/6").await;
    tokio::time::sleep(QUIET + PERIOD).await;
    let grown = octavia_since(&env.sim, &before);
    let periods: Vec<BTreeMap<String, u64>> = {
        let mut periods = Vec::new();
        for _ in 0..3 {
            periods.push(calls_over(&env.sim, 1).await);
        }
        periods
    };
    println!(
        "CONVERGE load balancer: created {created:?}; grown by one replica {grown:?}; \
         then per {PERIOD:?} period: {periods:?}"
    );
    // Every refresh lists the load balancers once for all of them.
    let own = |calls: &BTreeMap<String, u64>| -> u64 {
        calls
            .iter()
            .filter(|(op, _)| !op.ends_with("/list_load_balancers"))
            .map(|(_, n)| *n)
            .sum()
    };
    // One create with the members, its confirming read, the read QUIET later.
    assert_eq!(created.get("load-balancer/create_load_balancer"), Some(&1));
    assert!(
        own(&created) <= 3,
        "a two-port LoadBalancer for a Ready group took {} calls besides listings: {created:?}",
        own(&created)
    );
    // A member batch per pool, a read after each, the read QUIET later.
    assert_eq!(grown.get("load-balancer/replace_members"), Some(&2));
    assert!(
        own(&grown) <= 5,
        "one more replica took {} calls besides listings: {grown:?}",
        own(&grown)
    );
    for calls in &periods {
        assert!(!calls.keys().any(|op| is_write(op)), "{calls:?}");
        // A server list and a load balancer list per refresh; a boundary may fall inside.
        assert!(calls.values().sum::<u64>() <= 4, "{periods:?}");
        assert!(
            !calls
                .keys()
                .any(|op| op.ends_with("get_status_tree") || op.ends_with("list_members")),
            "a converged LoadBalancer read its tree again: {periods:?}"
        );
    }
}

/// The Octavia calls since `before`, by operation.
fn octavia_since(
    sim: &Simulator,
    before: &BTreeMap<(String, String), u64>,
) -> BTreeMap<String, u64> {
    calls_since(sim, before)
        .into_iter()
        .filter(|(op, _)| op.starts_with("load-balancer/"))
        .collect()
}
