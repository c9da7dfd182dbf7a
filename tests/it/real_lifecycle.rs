//! Lifecycle control on the real systems, driven as a user drives it: a server and a
//! load balancer made with the `openstack` CLI are taken over with `spec.import.id`;
//! metadata changed with `openstack server set` is put back (timed); `kubectl annotate`
//! to `skip` stops every write; `detach-on-delete` leaves the server running without
//! the operator's records when the object is deleted; an object deleted while `skip`
//! leaves an orphan that `verda-operator orphans` lists and `--delete` removes. Run by
//! `hack/real-systems.sh`.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::{Api, ResourceExt};
use serde_json::Value;
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine};
use verda_operator::cloud::ids::{LoadBalancerId, PoolId, ServerId};
use verda_operator::cloud::model::compute::{Server, ServerStatus};
use verda_operator::cloud::owner::META_PREFIX;
use verda_operator::cloud::{Compute, LoadBalancing};

use support::real::{Namespace, Real, context, nothing_left, project_inventory, until};

const LIMIT: Duration = Duration::from_secs(120);
const RESYNC: Duration = Duration::from_secs(6);
const POLICY: &str = "verda.linecorp.com/reconcile-policy";

fn vm_manifest(name: &str, id: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  metadata: {{tier: web}}\n  import: {{id: {id}}}\n"
    )
}

fn apply(real: &Real, ns: &Namespace, manifest: &str) {
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
}

fn annotate(real: &Real, ns: &Namespace, what: &str, value: &str) {
    let set = format!("{POLICY}={value}");
    real.kubectl(&["-n", &ns.name, "annotate", "--overwrite", what, &set]);
}

/// The server as Nova has it now (read with our client: tags and metadata as data).
async fn server(real: &Real, id: &str) -> Server {
    real.cloud()
        .get_server(&ServerId::new(id))
        .await
        .expect("the server exists")
}

async fn property(real: &Real, id: &str, key: &str) -> Option<String> {
    server(real, id).await.metadata.get(key).cloned()
}

/// `verda-operator orphans ARGS` as the operator's ServiceAccount, on the demo project.
fn orphans(real: &Real, args: &[&str]) -> String {
    real.operator_command(&[&["orphans"], args].concat())
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn import_drift_skip_detach_and_orphans_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-lifecycle");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let config = format!("resyncPeriod: {}s\n", RESYNC.as_secs());
    let operator = real.operator("lifecycle", &[], Some(&config));
    let vms: Api<VirtualMachine> = ns.api(client.clone());

    // A team's existing server, made with the openstack CLI.
    let made = real.openstack(
        "osh-demo",
        &[
            "server",
            "create",
            "--image",
            "centos79",
            "--flavor",
            "n3-1vcpu-2gb",
            "--network",
            "private",
            "--property",
            "owner=ops",
            "--wait",
            &format!("legacy-{}", ns.name),
        ],
    );
    let id = made["id"].as_str().expect("server ID").to_owned();

    // Import: the same server becomes the VirtualMachine's, its own metadata kept.
    let started = Instant::now();
    apply(&real, &ns, &vm_manifest("legacy", &id));
    let vm = until("legacy is Ready", LIMIT, &context(&operator), || async {
        let vm = vms.get("legacy").await.ok()?;
        is_true(&vm.status.as_ref()?.conditions, READY).then_some(vm)
    })
    .await;
    assert_eq!(
        vm.status.as_ref().and_then(|s| s.server_id.as_deref()),
        Some(id.as_str())
    );
    let uid = vm.uid().expect("uid");
    let taken = server(&real, &id).await;
    assert!(
        taken.tags.contains(&format!("verda-uid-{uid}")),
        "{:?}",
        taken.tags
    );
    assert_eq!(taken.metadata.get("owner").map(String::as_str), Some("ops"));
    assert_eq!(taken.metadata.get("tier").map(String::as_str), Some("web"));
    println!(
        "REAL import of an existing server to Ready: {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Drift: a property changed with the CLI is put back, and an event names it.
    real.openstack_do("osh-demo", &["server", "set", "--property", "tier=db", &id]);
    let changed = Instant::now();
    until("tier is restored", LIMIT, &context(&operator), || async {
        (property(&real, &id, "tier").await.as_deref() == Some("web")).then_some(())
    })
    .await;
    let restored = changed.elapsed();
    let events = real.kubectl(&["-n", &ns.name, "get", "events", "-o", "json"]);
    assert!(
        events.contains("DriftCorrected") && events.contains("tier"),
        "a DriftCorrected event"
    );
    println!(
        "REAL metadata drift restored in {:.1} s (resyncPeriod {} s)",
        restored.as_secs_f64(),
        RESYNC.as_secs()
    );

    // Skip: paused, and a change made meanwhile stays.
    annotate(&real, &ns, "vm/legacy", "skip");
    until("legacy is Paused", LIMIT, &context(&operator), || async {
        let vm = vms.get("legacy").await.ok()?;
        find_condition(&vm.status?.conditions, "Paused")
            .filter(|c| c.status == "True")
            .map(drop)
    })
    .await;
    real.openstack_do(
        "osh-demo",
        &["server", "set", "--property", "tier=paused", &id],
    );
    tokio::time::sleep(RESYNC * 3).await;
    assert_eq!(
        property(&real, &id, "tier").await.as_deref(),
        Some("paused"),
        "not restored while paused"
    );

    // Detach on delete: the object goes, the server stays without the operator's records.
    annotate(&real, &ns, "vm/legacy", "detach-on-delete");
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "vm",
        "legacy",
        "--wait=true",
        "--timeout=120s",
    ]);
    let detached = server(&real, &id).await;
    assert_eq!(detached.status, ServerStatus::Active);
    let tags = &detached.tags;
    assert!(
        tags.iter().all(|t| !t.starts_with("verda-")),
        "tags left: {tags:?}"
    );
    let keys = detached.metadata.keys();
    assert!(
        keys.clone().all(|k| !k.starts_with(META_PREFIX)),
        "{:?}",
        detached.metadata
    );
    assert_eq!(
        orphans(&real, &["-o", "json"]).trim(),
        "[]",
        "a detached server is nobody's orphan"
    );

    // Taken over again, then deleted while skip: an orphan, listed and removed.
    apply(&real, &ns, &vm_manifest("again", &id));
    until("again is Ready", LIMIT, &context(&operator), || async {
        let vm = vms.get("again").await.ok()?;
        is_true(&vm.status?.conditions, READY).then_some(())
    })
    .await;
    annotate(&real, &ns, "vm/again", "skip");
    until("again is Paused", LIMIT, &context(&operator), || async {
        find_condition(&vms.get("again").await.ok()?.status?.conditions, "Paused").map(drop)
    })
    .await;
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "vm",
        "again",
        "--wait=true",
        "--timeout=120s",
    ]);
    assert_eq!(
        server(&real, &id).await.status,
        ServerStatus::Active,
        "left as it was"
    );
    let listed: Vec<Value> = serde_json::from_str(&orphans(&real, &["-o", "json"])).expect("JSON");
    let found: Vec<(&str, &str)> = listed
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap_or(""),
                o["id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(found, [("server", id.as_str())], "the orphan inventory");
    let table = orphans(&real, &["--delete"]);
    assert!(table.contains(&id), "{table}");
    until(
        "the orphan is deleted",
        LIMIT,
        &context(&operator),
        || async {
            let ids = real.openstack("osh-demo", &["server", "list", "-c", "ID"]);
            (!ids.to_string().contains(&id)).then_some(())
        },
    )
    .await;
    import_a_load_balancer(&real, &ns, &client, &operator).await;
    nothing_left(&real, &baseline);
}

/// A load balancer made with the CLI, taken over (its listener programmed from the
/// spec), then detached on delete and removed with the CLI.
async fn import_a_load_balancer(
    real: &Real,
    ns: &Namespace,
    client: &kube::Client,
    operator: &support::real::Operator,
) {
    let made = real.openstack(
        "osh-demo",
        &[
            "loadbalancer",
            "create",
            "--name",
            &format!("legacy-{}", ns.name),
            "--vip-subnet-id",
            "private-subnet",
            "--wait",
        ],
    );
    let id = made["id"].as_str().expect("load balancer ID").to_owned();
    let manifest = format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {{name: legacy-lb, annotations: {{{POLICY}: detach-on-delete}}}}\nspec:\n  import: {{id: {id}}}\n  ports:\n  - port: 80\n    protocol: http\n    realServers: {{protocol: http, port: 8080, addresses: [10.0.0.99]}}\n"
    );
    let started = Instant::now();
    apply(real, ns, &manifest);
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    // Ready, not only the member in status: a pool changed before the operator has seen
    // it converged is not drift from anything (drift.rs), and the CLI is quick enough
    // to get there first.
    until(
        "legacy-lb holds its member and is Ready",
        LIMIT,
        &context(operator),
        || async {
            let lb = lbs.get("legacy-lb").await.ok()?;
            let s = lb.status?;
            (s.load_balancer_id.as_deref() == Some(id.as_str())
                && s.ports.first().is_some_and(|p| p.members.len() == 1)
                && is_true(&s.conditions, READY))
            .then_some(())
        },
    )
    .await;
    println!(
        "REAL import of an existing load balancer to its port programmed: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let lb_id = LoadBalancerId::new(id.clone());
    let octavia = real.cloud();
    let shown = octavia
        .get_load_balancer(&lb_id)
        .await
        .expect("load balancer");
    assert!(
        shown.tags.iter().any(|t| t.starts_with("verda-uid-")),
        "{:?}",
        shown.tags
    );
    member_drift(real, ns, &lbs, operator).await;
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "lb",
        "legacy-lb",
        "--wait=true",
        "--timeout=120s",
    ]);
    let shown = octavia
        .get_load_balancer(&lb_id)
        .await
        .expect("load balancer stays");
    assert!(
        shown.tags.iter().all(|t| !t.starts_with("verda-")),
        "{:?}",
        shown.tags
    );
    assert_eq!(shown.listeners.len(), 1, "its listener stays");
    real.openstack_do(
        "osh-demo",
        &["loadbalancer", "delete", "--cascade", "--wait", &id],
    );
}

/// A pool member deleted with `openstack loadbalancer member delete` comes back, with a
/// `DriftCorrected` event naming the pool's port.
async fn member_drift(
    real: &Real,
    ns: &Namespace,
    lbs: &Api<LoadBalancer>,
    operator: &support::real::Operator,
) {
    let lb = lbs.get("legacy-lb").await.expect("legacy-lb");
    let pool = lb
        .status
        .and_then(|s| s.ports.first()?.pool_id.clone())
        .expect("the pool of port 80");
    let members = real.openstack("osh-demo", &["loadbalancer", "member", "list", &pool]);
    let member = members[0]["id"].as_str().expect("a member").to_owned();
    real.openstack_do(
        "osh-demo",
        &["loadbalancer", "member", "delete", &pool, &member],
    );
    let removed = Instant::now();
    let octavia = real.cloud();
    let pool_id = PoolId::new(pool.clone());
    // A member with another ID is the operator's: seen whether or not a poll caught the
    // pool empty in between (the next refresh may come within the poll interval).
    until(
        "a new member in the pool",
        LIMIT,
        &context(operator),
        || async {
            let members = octavia.list_members(&pool_id).await.ok()?;
            members
                .iter()
                .any(|m| m.id.as_str() != member && m.address == "10.0.0.99")
                .then_some(())
        },
    )
    .await;
    let restored = removed.elapsed();
    until(
        "a DriftCorrected event for port 80",
        LIMIT,
        &context(operator),
        || async {
            let events = real.kubectl(&["-n", &ns.name, "get", "events", "-o", "json"]);
            (events.contains("DriftCorrected") && events.contains("the pool of port 80"))
                .then_some(())
        },
    )
    .await;
    println!(
        "REAL pool member deleted with the CLI restored in {:.1} s (resyncPeriod {} s)",
        restored.as_secs_f64(),
        RESYNC.as_secs()
    );
}
