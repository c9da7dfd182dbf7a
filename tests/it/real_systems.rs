//! The operator binary on a real kube-apiserver and real Keystone, Nova, Neutron and
//! Octavia, driven as a user drives it. Run by `hack/real-systems.sh` (CI's second
//! stage), which starts the real systems; ignored by a plain `cargo test`.
//!
//! Octavia runs with no-op drivers there: members stay OFFLINE (no health manager), so
//! pool membership is read from `status.ports[].members` and from Octavia itself, not
//! from the ready count.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::caches::cloud_view::QUIET;
use verda_operator::cloud::ids::{PoolId, ServerId};
use verda_operator::cloud::model::compute::ServerStatus;
use verda_operator::cloud::{Compute, LoadBalancing};

use support::real::{
    Namespace, Real, all_deleted, context, nothing_left, pools_hold_the_group, project_inventory,
    published, published_scenario, until,
};

const GROUP: &str = "virtualmachinegroup-sample";
const LB: &str = "loadbalancer-sample";

/// `kubectl apply -f` of each file into the test's namespace.
fn apply(real: &Real, ns: &Namespace, files: &[String]) {
    for f in files {
        real.kubectl(&["-n", &ns.name, "apply", "-f", f]);
    }
}

/// What every scenario starts from: the real systems, a fresh namespace, an
/// administrator's client, and what the project held before.
struct Scene {
    real: Arc<Real>,
    ns: Namespace,
    client: kube::Client,
    baseline: BTreeSet<String>,
}

impl Scene {
    async fn start(prefix: &str) -> Self {
        let real = Arc::new(Real::from_env());
        Self {
            ns: Namespace::create(real.clone(), prefix),
            client: real.kube().await,
            baseline: project_inventory(&real),
            real,
        }
    }
}

/// Octavia's own view of the pools of the published LoadBalancer: member addresses.
fn octavia_pools(real: &Real, lb: &LoadBalancer) -> Vec<BTreeSet<String>> {
    let status = lb.status.as_ref().expect("status");
    status
        .ports
        .iter()
        .map(|p| {
            let pool = p.pool_id.as_deref().expect("pool ID");
            real.openstack("osh-demo", &["loadbalancer", "member", "list", pool])
                .as_array()
                .expect("members")
                .iter()
                .map(|m| m["address"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .collect()
}

/// Waits until `kubectl -n NS ARGS…` prints every one of `lines`; returns its output.
async fn told(
    real: &Real,
    ns: &Namespace,
    operator: &support::real::Operator,
    args: &[&str],
    lines: &[&str],
) -> String {
    let mut full = vec!["-n", ns.name.as_str()];
    full.extend(args);
    until(
        &format!("kubectl {} tells {lines:?}", args.join(" ")),
        Duration::from_secs(30),
        &context(operator),
        || async {
            let out = real.kubectl(&full);
            lines.iter().all(|l| out.contains(l)).then_some(out)
        },
    )
    .await
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn published_manifests_converge_scale_both_ways_and_leave_nothing() {
    let Scene {
        real,
        ns,
        client,
        baseline,
    } = Scene::start("real-published").await;
    // Exactly as docs/src/installation.md runs it outside a cluster: no flags.
    let operator = real.operator("published", &[], None);
    let files = published_scenario();

    let applied = Instant::now();
    apply(&real, &ns, &files);
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    until(
        "vm-sample is Ready",
        Duration::from_secs(120),
        &context(&operator),
        || async {
            let vm = vms.get("vm-sample").await.ok()?;
            is_true(&vm.status?.conditions, READY).then_some(())
        },
    )
    .await;
    let server_ready = applied.elapsed();
    pools_hold_the_group(&ns, &client, &operator, 2).await;
    let lb_ready = applied.elapsed();
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let lb = lbs.get(LB).await.expect("lb");
    let octavia = octavia_pools(&real, &lb);
    assert!(
        octavia.iter().all(|p| p.len() == 2),
        "Octavia's pools: {octavia:?}"
    );
    // Octavia keeps the tag that tells a shard whose namespace the load balancer is of.
    let id = lb.status.as_ref().and_then(|s| s.load_balancer_id.clone());
    let shown = real.openstack("osh-demo", &["loadbalancer", "show", &id.expect("its ID")]);
    let tag = format!("verda-namespace-{}", ns.name);
    assert!(shown["tags"].to_string().contains(&tag), "{shown}");
    println!(
        "REAL create-to-ready: server {:.1} s, load balancer with 2 members per pool {:.1} s",
        server_ready.as_secs_f64(),
        lb_ready.as_secs_f64()
    );

    // Scale up: the third member reaches every pool.
    let scaled = Instant::now();
    real.kubectl(&["-n", &ns.name, "scale", "vmg", GROUP, "--replicas=3"]);
    pools_hold_the_group(&ns, &client, &operator, 3).await;
    let scale_up = scaled.elapsed();
    let lb = lbs.get(LB).await.expect("lb");
    assert!(
        octavia_pools(&real, &lb).iter().all(|p| p.len() == 3),
        "Octavia's pools after scale-up"
    );
    println!(
        "REAL scale 2->3 to every pool: {:.1} s",
        scale_up.as_secs_f64()
    );
    // What `kubectl describe` and `kubectl events` tell: each scale its own event.
    let group = format!("vmg/{GROUP}");
    let lb_ref = format!("lb/{LB}");
    told(
        &real,
        &ns,
        &operator,
        &["describe", &group],
        &[
            &format!("created VirtualMachines {GROUP}-0, {GROUP}-1"),
            &format!("created VirtualMachines {GROUP}-2"),
        ],
    )
    .await;
    told(
        &real,
        &ns,
        &operator,
        &["events", "--for", &lb_ref],
        &[
            &format!("port 80: 3 members ({GROUP}-0, {GROUP}-1, {GROUP}-2)"),
            &format!("port 443: 3 members ({GROUP}-0, {GROUP}-1, {GROUP}-2)"),
        ],
    )
    .await;

    // Scale down: a removed VirtualMachine's server lives while any pool lists it.
    let mut leaving: Vec<(ServerId, String)> = Vec::new();
    for suffix in ["-1", "-2"] {
        let vm = vms.get(&format!("{GROUP}{suffix}")).await.expect("vm");
        let s = vm.status.expect("status");
        leaving.push((
            ServerId::from(s.server_id.expect("server")),
            s.primary_ip.expect("address"),
        ));
    }
    let pools: Vec<PoolId> = lb
        .status
        .as_ref()
        .expect("status")
        .ports
        .iter()
        .map(|p| PoolId::from(p.pool_id.clone().expect("pool")))
        .collect();
    let cloud = real.cloud();
    real.kubectl(&["-n", &ns.name, "scale", "vmg", GROUP, "--replicas=1"]);
    let mut samples = 0;
    let drained = Instant::now();
    loop {
        let mut listed = BTreeSet::new();
        for pool in &pools {
            for m in LoadBalancing::list_members(&cloud, pool)
                .await
                .expect("members")
            {
                listed.insert(m.address);
            }
        }
        let mut alive = 0;
        for (server, address) in &leaving {
            let exists = match Compute::get_server(&cloud, server).await {
                Ok(s) => !matches!(s.status, ServerStatus::Deleted | ServerStatus::SoftDeleted),
                Err(e) if e.is_not_found() => false,
                Err(e) => panic!("reading server {server}: {e}"),
            };
            assert!(
                exists || !listed.contains(address),
                "server {server} was deleted while a pool still listed {address}"
            );
            alive += usize::from(exists);
        }
        samples += 1;
        if alive == 0 {
            break;
        }
        assert!(
            drained.elapsed() < Duration::from_secs(300),
            "scale-down did not finish\n{}",
            context(&operator)()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    pools_hold_the_group(&ns, &client, &operator, 1).await;
    println!(
        "REAL scale 3->1: {:.1} s, {samples} samples, no server deleted while a pool listed it",
        drained.elapsed().as_secs_f64()
    );
    // Each deletion is told once. The two may go in one event or in two: a load
    // balancer may drop the first drained VirtualMachine from its pools before the
    // group has marked the second (two writes no reconcile sees as one), and the group
    // then deletes them a step apart.
    let removed = [format!("{GROUP}-1"), format!("{GROUP}-2")];
    let deleted = |described: &str| -> Vec<String> {
        described
            .lines()
            .filter(|l| l.contains("deleted VirtualMachines"))
            .map(str::to_owned)
            .collect()
    };
    let named = |lines: &[String], name: &str| {
        lines
            .iter()
            .filter(|l| l.split([' ', ',']).any(|word| word == name))
            .count()
    };
    let described = until(
        "kubectl describe tells the draining and both deletions",
        Duration::from_secs(30),
        &context(&operator),
        || async {
            let out = real.kubectl(&["-n", ns.name.as_str(), "describe", &group]);
            let lines = deleted(&out);
            (out.contains("Draining") && removed.iter().all(|n| named(&lines, n) > 0))
                .then_some(out)
        },
    )
    .await;
    let lines = deleted(&described);
    assert!(
        lines.iter().all(|l| !l.contains("(x")) && removed.iter().all(|n| named(&lines, n) == 1),
        "the scale-down tells each deleted VirtualMachine once:\n{described}"
    );
    told(
        &real,
        &ns,
        &operator,
        &["events", "--for", &lb_ref],
        &[
            &format!("port 80: 1 member ({GROUP}-0)"),
            &format!("port 443: 1 member ({GROUP}-0)"),
        ],
    )
    .await;

    all_deleted(&real, &client, &ns, &operator, &files, baseline).await;
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn steady_state_cloud_calls_and_healing_within_a_resync() {
    let Scene {
        real,
        ns,
        client,
        baseline,
    } = Scene::start("real-steady").await;
    let resync = 10;
    let operator = real.operator("steady", &[], Some(&format!("resyncPeriod: {resync}s\n")));
    let files = published_scenario();
    // The group first, then a LoadBalancer for it: one Octavia write builds it all.
    apply(&real, &ns, &files[..2]);
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    until(
        "the group has 2 Ready replicas",
        Duration::from_secs(120),
        &context(&operator),
        || async { (groups.get(GROUP).await.ok()?.status?.ready_replicas == 2).then_some(()) },
    )
    .await;
    let writes_before = real.octavia_writes();
    let applied = Instant::now();
    apply(&real, &ns, &files[2..]);
    pools_hold_the_group(&ns, &client, &operator, 2).await;
    let writes = real.octavia_writes() - writes_before;
    println!(
        "REAL load balancer for a Ready group: both pools full {:.1} s after apply, \
         {writes} Octavia write(s)",
        applied.elapsed().as_secs_f64()
    );
    assert_eq!(
        writes, 1,
        "listeners, pools, monitors and members come with the create"
    );
    // Let the last status writes settle and the one confirmation read of a load balancer
    // that changed within QUIET (its updated_at has whole seconds) happen at the first
    // resync, then count over whole resync periods.
    tokio::time::sleep(Duration::from_secs(resync) + QUIET * 2).await;
    let periods = 3;
    let before = real.operator_requests();
    tokio::time::sleep(Duration::from_secs(resync * periods)).await;
    let calls = real.operator_requests() - before;
    println!(
        "REAL steady state: {calls} OpenStack requests over {periods} resyncs of {resync} s \
         = {:.1} per resync (1 VirtualMachine, 1 group of 2, 1 LoadBalancer of 2 ports), \
         counted from the services' access logs",
        calls as f64 / periods as f64
    );
    assert!(calls > 0, "no resync reached the cloud");

    let vms: Api<VirtualMachine> = ns.api(client.clone());
    // Heal: a server deleted behind the operator's back comes back.
    let before = vms.get("vm-sample").await.expect("vm").status.expect("s");
    let old = before.server_id.expect("server");
    let broken = Instant::now();
    real.openstack_do("osh-demo", &["server", "delete", "--wait", &old]);
    until(
        "vm-sample has a new ACTIVE server",
        Duration::from_secs(120),
        &context(&operator),
        || async {
            let s = vms.get("vm-sample").await.ok()?.status?;
            (s.server_id.as_deref() != Some(old.as_str()) && is_true(&s.conditions, READY))
                .then_some(())
        },
    )
    .await;
    println!(
        "REAL out-of-band server deletion healed in {:.1} s (resync {resync} s)",
        broken.elapsed().as_secs_f64()
    );

    all_deleted(&real, &client, &ns, &operator, &files, baseline).await;
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn failures_are_reported_on_the_object() {
    let Scene {
        real,
        ns,
        client,
        baseline,
    } = Scene::start("real-failures").await;
    let operator = real.operator("failures", &[], None);
    let hosts = real.compute_hosts;
    let manifests = format!(
        r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachine
metadata: {{name: no-such-image}}
spec: {{image: no-such-image, flavor: m1.tiny}}
---
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachine
metadata: {{name: no-such-flavor}}
spec: {{image: cirros, flavor: no-such-flavor}}
---
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachineGroup
metadata: {{name: hard}}
spec:
  replicas: {}
  haPolicy: hard
  template: {{image: cirros, flavor: m1.tiny}}
"#,
        hosts + 1
    );
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifests));
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let reason = |name: &'static str| {
        let vms = vms.clone();
        async move {
            let s = vms.get(name).await.ok()?.status?;
            s.conditions
                .iter()
                .find(|c| c.type_ == READY && c.status == "False")
                .map(|c| c.reason.clone())
        }
    };
    for (name, expected) in [
        ("no-such-image", "ImageNotFound"),
        ("no-such-flavor", "FlavorNotFound"),
    ] {
        until(
            &format!("{name} reports {expected}"),
            Duration::from_secs(60),
            &context(&operator),
            || async { (reason(name).await.as_deref() == Some(expected)).then_some(()) },
        )
        .await;
    }
    // One hard anti-affine server more than there are hosts: it has no valid host.
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    until(
        &format!(
            "{hosts} of {} hard anti-affine replicas run and one reports NoValidHost",
            hosts + 1
        ),
        Duration::from_secs(240),
        &context(&operator),
        || async {
            let list = vms.list(&Default::default()).await.ok()?;
            let hard: Vec<_> = list
                .items
                .iter()
                .filter(|vm| {
                    vm.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("hard-"))
                })
                .filter_map(|vm| vm.status.as_ref())
                .collect();
            let running = hard
                .iter()
                .filter(|s| is_true(&s.conditions, READY))
                .count();
            let no_host = hard
                .iter()
                .filter(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == READY && c.reason == "NoValidHost")
                })
                .count();
            let group = groups.get("hard").await.ok()?.status?;
            (running == hosts && no_host == 1 && group.ready_replicas == hosts as i32).then_some(())
        },
    )
    .await;
    real.kubectl_with_input(
        &["-n", &ns.name, "delete", "--wait=false", "-f", "-"],
        Some(&manifests),
    );
    until(
        "every object is gone and the project is empty",
        Duration::from_secs(240),
        &context(&operator),
        || async {
            let n = vms.list(&Default::default()).await.ok()?.items.len();
            (n == 0).then_some(())
        },
    )
    .await;
    nothing_left(&real, &baseline);
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn a_killed_leader_is_replaced_and_a_later_scale_reaches_every_pool() {
    let Scene {
        real,
        ns,
        client,
        baseline,
    } = Scene::start("real-leader").await;
    let elect = |id: &'static str| {
        [
            "--leader-elect",
            "--lease-namespace",
            "verda-system",
            "--lease-name",
            "verda-real-leader",
            "--lease-duration",
            "6s",
            "--identity",
            id,
        ]
    };
    let a = real.operator("leader-a", &elect("replica-a"), None);
    let b = real.operator("leader-b", &elect("replica-b"), None);
    let files = ["virtualmachinegroup.yaml", "loadbalancer.yaml"].map(published);
    apply(&real, &ns, &files);
    let leases: Api<Lease> = Api::namespaced(client.clone(), "verda-system");
    let holder = until(
        "one replica holds the lease",
        Duration::from_secs(30),
        &context(&a),
        || async {
            leases
                .get("verda-real-leader")
                .await
                .ok()?
                .spec?
                .holder_identity
        },
    )
    .await;
    pools_hold_the_group(&ns, &client, &a, 2).await;
    let (mut leader, standby) = if holder == "replica-a" {
        (a, b)
    } else {
        (b, a)
    };
    leader.kill();
    let killed = Instant::now();
    real.kubectl(&["-n", &ns.name, "scale", "vmg", GROUP, "--replicas=3"]);
    pools_hold_the_group(&ns, &client, &standby, 3).await;
    let lease = leases.get("verda-real-leader").await.expect("lease");
    let now_holder = lease.spec.and_then(|s| s.holder_identity);
    assert_ne!(now_holder.as_deref(), Some(holder.as_str()));
    println!(
        "REAL leader {holder} killed (SIGKILL); the standby took over and the scale 2->3 \
         reached every pool {:.1} s after the kill (lease duration 6 s)",
        killed.elapsed().as_secs_f64()
    );
    all_deleted(&real, &client, &ns, &standby, &files, baseline).await;
    drop(leader);
}
