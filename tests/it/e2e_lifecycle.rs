//! Lifecycle control through what `kubectl annotate`, `kubectl apply` and
//! `kubectl delete` send: `verda.linecorp.com/reconcile-policy` (skip pauses every cloud
//! write but keeps status fresh, detach-on-delete leaves the server without the
//! operator's records), `spec.import.id` (an existing server or load balancer taken
//! over; one owned by another object, missing, or unlike the spec refused), the orphan
//! inventory, and drift corrected with an event naming what changed.

use crate::support;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, test_timing};
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::caches::cloud_view::QUIET;
use verda_operator::cloud::MetadataMode;
use verda_operator::cloud::ids::PoolId;
use verda_operator::cloud::ids::ServerId;
use verda_operator::cloud::model::compute::CreateServer;
use verda_operator::cloud::model::loadbalancing::{CreateLoadBalancer, MemberSpec};
use verda_operator::cloud::owner::{META_PREFIX, namespace_from_tags};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);
const POLICY: &str = "verda.linecorp.com/reconcile-policy";

fn vm_yaml(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n{extra}"
    )
}

/// `kubectl annotate --overwrite` (a `None` value: `kubectl annotate KEY-`).
async fn annotate<K>(env: &Env, name: &str, value: Option<&str>)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
{
    let patch = json!({"metadata": {"annotations": {POLICY: value}}});
    env.api::<K>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotated");
}

async fn condition(env: &Env, name: &str, type_: &str) -> Option<Condition> {
    let vm = env.api::<VirtualMachine>().get(name).await.ok()?;
    find_condition(&vm.status?.conditions, type_).cloned()
}

async fn vm_reason(env: &Env, name: &str, reason: &str) -> Condition {
    eventually(
        &format!("{name} has Ready reason {reason}"),
        LIMIT,
        || async {
            condition(env, name, READY)
                .await
                .filter(|c| c.reason == reason)
        },
    )
    .await
}

async fn gone<K>(env: &Env, name: &str)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
{
    let api = env.api::<K>();
    eventually(&format!("{name} is gone"), LIMIT, || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

fn server_id(vm: &VirtualMachine) -> String {
    vm.status
        .as_ref()
        .and_then(|s| s.server_id.clone())
        .expect("a server ID")
}

fn metric(env: &Env, line_start: &str) -> Option<String> {
    env.ctx
        .metrics
        .encode()
        .lines()
        .find(|l| l.starts_with(line_start))
        .map(str::to_owned)
}

#[tokio::test]
async fn skip_pauses_cloud_writes_keeps_status_fresh_and_leaves_the_server_on_delete() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachine>(&vm_yaml("web", ""))
        .await;
    let id = server_id(&env.ready_vm("web").await);

    annotate::<VirtualMachine>(&env, "web", Some("skip")).await;
    let paused = eventually("the Paused condition", LIMIT, || async {
        condition(&env, "web", "Paused").await
    })
    .await;
    assert_eq!(
        (paused.status.as_str(), paused.reason.as_str()),
        ("True", "ReconcilePolicySkip")
    );
    assert_eq!(
        metric(&env, "verda_paused_objects{").as_deref(),
        Some(r#"verda_paused_objects{kind="virtualmachine"} 1"#)
    );

    // Deleted behind the operator's back: status says so, nothing is recreated.
    let before = env.sim.requests("compute", "create_server");
    delete_server(&env, &id).await;
    let ready = vm_reason(&env, "web", "Paused").await;
    assert!(
        ready.message.contains("does not create a server"),
        "{}",
        ready.message
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        env.sim.requests("compute", "create_server"),
        before,
        "no create while paused"
    );
    assert!(env.sim.servers().is_empty());

    // Resumed: the server comes back.
    annotate::<VirtualMachine>(&env, "web", None).await;
    let resumed = env.ready_vm("web").await;
    assert_ne!(server_id(&resumed), id);
    assert!(condition(&env, "web", "Paused").await.is_none());

    // Deleted while paused: the object goes, the server stays (an orphan).
    let kept = server_id(&resumed);
    annotate::<VirtualMachine>(&env, "web", Some("skip")).await;
    eventually("paused again", LIMIT, || async {
        condition(&env, "web", "Paused").await
    })
    .await;
    env.api::<VirtualMachine>()
        .delete("web", &DeleteParams::default())
        .await
        .expect("deleted");
    gone::<VirtualMachine>(&env, "web").await;
    let servers = env.sim.servers();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].id, kept);
    env.event_seen("Abandoned").await;

    // The orphan inventory finds it; the running operator's gauge counts it.
    let listing = verda_operator::orphans::list(env.cloud().as_ref(), &env.ctx.cluster)
        .await
        .expect("listed");
    let orphans = verda_operator::orphans::classify(&listing, &env.ctx.cluster, &HashSet::new());
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert_eq!(
        (orphans[0].kind.as_str(), orphans[0].id.as_str()),
        ("server", kept.as_str())
    );
    eventually("the orphan gauge counts the server", LIMIT, || async {
        metric(&env, "verda_orphaned_cloud_resources{resource=\"server\"}")
            .filter(|l| l.ends_with(" 1"))
    })
    .await;
    let deleted = verda_operator::orphans::delete(env.cloud().as_ref(), &orphans).await;
    assert!(deleted.iter().all(|(_, r)| r.is_ok()));
    eventually("the orphan is deleted", LIMIT, || async {
        env.sim.servers().is_empty().then_some(())
    })
    .await;
}

async fn delete_server(env: &Env, id: &str) {
    env.cloud()
        .compute()
        .delete_server(&ServerId::new(id))
        .await
        .expect("deleted behind the operator's back");
}

#[tokio::test]
async fn detach_on_delete_leaves_the_server_running_without_the_operators_records() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let yaml = vm_yaml("db", "  metadata: {team: data}\n").replace(
        "metadata: {name: db}",
        &format!("metadata: {{name: db, annotations: {{{POLICY}: detach-on-delete}}}}"),
    );
    env.create_from_yaml::<VirtualMachine>(&yaml).await;
    let id = server_id(&env.ready_vm("db").await);
    env.api::<VirtualMachine>()
        .delete("db", &DeleteParams::default())
        .await
        .expect("deleted");
    gone::<VirtualMachine>(&env, "db").await;
    let servers = env.sim.servers();
    assert_eq!(servers.len(), 1, "the server stays");
    let server = &servers[0];
    assert_eq!(server.id, id);
    assert!(!server.deleting);
    assert!(
        server.tags.iter().all(|t| !t.starts_with("verda-")),
        "no owner, managed or cluster tag: {:?}",
        server.tags
    );
    assert!(
        server.metadata.keys().all(|k| !k.starts_with(META_PREFIX)),
        "{:?}",
        server.metadata
    );
    assert_eq!(
        server.metadata.get("team").map(String::as_str),
        Some("data")
    );
    env.event_seen("Detached").await;
    // Nothing names this cluster any more: not an orphan either.
    let listing = verda_operator::orphans::list(env.cloud().as_ref(), &env.ctx.cluster)
        .await
        .expect("listed");
    assert!(
        verda_operator::orphans::classify(&listing, &env.ctx.cluster, &HashSet::new()).is_empty()
    );
}

#[tokio::test]
async fn an_unknown_policy_is_refused_and_nothing_is_written() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let yaml = vm_yaml("typo", "").replace(
        "metadata: {name: typo}",
        &format!("metadata: {{name: typo, annotations: {{{POLICY}: Skip}}}}"),
    );
    env.create_from_yaml::<VirtualMachine>(&yaml).await;
    let c = vm_reason(&env, "typo", "ReconcilePolicyInvalid").await;
    assert!(
        c.message.contains("use manage, skip or detach-on-delete"),
        "{}",
        c.message
    );
    assert!(env.sim.servers().is_empty());
}

#[tokio::test]
async fn a_group_template_may_not_import() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let yaml = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: pool}\nspec:\n  replicas: 2\n  template: {image: centos79, flavor: n3-1vcpu-2gb, import: {id: 3f1c2a4e-0000-4000-8000-000000000001}}\n";
    env.create_from_yaml::<VirtualMachineGroup>(yaml).await;
    let api = env.api::<VirtualMachineGroup>();
    let c = eventually("the group reports the template's import", LIMIT, || async {
        let group = api.get("pool").await.ok()?;
        find_condition(&group.status?.conditions, READY)
            .filter(|c| c.reason == "TemplateImportNotAllowed")
            .cloned()
    })
    .await;
    assert!(
        c.message
            .contains("import the server with a VirtualMachine"),
        "{}",
        c.message
    );
    let vms = env
        .api::<VirtualMachine>()
        .list(&Default::default())
        .await
        .expect("list");
    assert!(vms.items.is_empty(), "no VirtualMachine made");
}

/// A server made outside the operator, as a team's existing production server.
async fn existing_server(env: &Env, name: &str, flavor: &str) -> String {
    let cloud = env.cloud();
    let compute = cloud.compute();
    let image = compute.find_image("centos79").await.expect("image");
    let flavor = compute.find_flavor(flavor).await.expect("flavor");
    let network = cloud
        .network(None)
        .find_network("private")
        .await
        .expect("network");
    let id = compute
        .create_server(&CreateServer {
            name: name.to_owned(),
            image: image.id,
            flavor: flavor.id,
            networks: vec![network.id],
            metadata: BTreeMap::from([("owner".to_owned(), "ops".to_owned())]),
            tags: vec!["legacy".to_owned()],
            ..CreateServer::default()
        })
        .await
        .expect("created outside the operator");
    id.to_string()
}

#[tokio::test]
async fn import_takes_over_an_existing_server_and_refuses_what_it_cannot_own() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let id = existing_server(&env, "legacy-web", "n3-1vcpu-2gb").await;
    let creates = env.sim.requests("compute", "create_server");
    env.create_from_yaml::<VirtualMachine>(&vm_yaml(
        "legacy",
        &format!("  metadata: {{tier: web}}\n  import: {{id: {id}}}\n"),
    ))
    .await;
    let vm = env.ready_vm("legacy").await;
    assert_eq!(server_id(&vm), id, "the existing server, not a new one");
    assert_eq!(env.sim.requests("compute", "create_server"), creates);
    let server = env
        .sim
        .servers()
        .into_iter()
        .find(|s| s.id == id)
        .expect("server");
    assert!(
        server
            .tags
            .contains(&format!("verda-uid-{}", vm.uid().expect("uid")))
    );
    assert!(
        server.tags.contains(&"legacy".to_owned()),
        "its own tags stay"
    );
    assert_eq!(
        server.metadata.get("owner").map(String::as_str),
        Some("ops"),
        "its metadata stays"
    );
    assert_eq!(server.metadata.get("tier").map(String::as_str), Some("web"));
    env.event_seen("Imported").await;

    // Owned now: a second object may not take it.
    env.create_from_yaml::<VirtualMachine>(&vm_yaml("thief", &format!("  import: {{id: {id}}}\n")))
        .await;
    let c = vm_reason(&env, "thief", "ImportOwnedByAnother").await;
    assert!(
        c.message.contains(&format!("belongs to {}/legacy", env.ns)),
        "{}",
        c.message
    );
    // A server that does not exist, and one whose flavor is not the spec's.
    env.create_from_yaml::<VirtualMachine>(&vm_yaml(
        "ghost",
        "  import: {id: 00000000-0000-4000-8000-000000000000}\n",
    ))
    .await;
    vm_reason(&env, "ghost", "ImportNotFound").await;
    let big = existing_server(&env, "legacy-big", "n3-2vcpu-4gb").await;
    env.create_from_yaml::<VirtualMachine>(&vm_yaml("big", &format!("  import: {{id: {big}}}\n")))
        .await;
    let c = vm_reason(&env, "big", "ImportMismatch").await;
    assert!(
        c.message.contains("set spec.flavor to n3-2vcpu-4gb"),
        "{}",
        c.message
    );
    let untouched = env
        .sim
        .servers()
        .into_iter()
        .find(|s| s.id == big)
        .expect("server");
    assert_eq!(untouched.flavor_name, "n3-2vcpu-4gb", "not resized");
    assert!(
        untouched.tags.iter().all(|t| !t.starts_with("verda-")),
        "not taken"
    );
}

#[tokio::test]
async fn import_takes_over_an_existing_load_balancer_and_programs_its_ports() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let cloud = env.cloud();
    let subnet = cloud
        .network(None)
        .find_subnet("private-subnet")
        .await
        .expect("subnet");
    let existing = cloud
        .load_balancing(None)
        .create_load_balancer(&CreateLoadBalancer {
            name: "legacy-lb".to_owned(),
            vip_subnet_id: Some(subnet.id),
            tags: vec!["legacy".to_owned()],
            ..CreateLoadBalancer::default()
        })
        .await
        .expect("created outside the operator");
    let id = existing.id.to_string();
    let yaml = format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {{name: legacy}}\nspec:\n  import: {{id: {id}}}\n  ports:\n  - port: 80\n    protocol: http\n    realServers: {{protocol: http, port: 8080, addresses: [10.0.0.21]}}\n"
    );
    env.create_from_yaml::<LoadBalancer>(&yaml).await;
    let lb = env.load_balancer_ready("legacy", "1/1").await;
    assert_eq!(
        lb.status.as_ref().and_then(|s| s.load_balancer_id.clone()),
        Some(id.clone())
    );
    let lbs = env.sim.load_balancers();
    assert_eq!(lbs.len(), 1, "no second load balancer");
    assert!(lbs[0].tags.contains(&"legacy".to_owned()));
    assert!(
        lbs[0]
            .tags
            .contains(&format!("verda-uid-{}", lb.uid().expect("uid")))
    );
    assert_eq!(namespace_from_tags(&lbs[0].tags), Some(env.ns.as_str()));
    assert_eq!(lbs[0].listeners.len(), 1);
}

#[tokio::test]
async fn a_paused_group_neither_scales_nor_writes_and_its_vms_are_paused_too() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let yaml = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: pool}\nspec:\n  replicas: 1\n  haPolicy: soft\n  template: {image: centos79, flavor: n3-1vcpu-2gb}\n";
    env.create_from_yaml::<VirtualMachineGroup>(yaml).await;
    env.ready_vm("pool-0").await;
    annotate::<VirtualMachineGroup>(&env, "pool", Some("skip")).await;
    eventually("pool-0 carries the group's policy", LIMIT, || async {
        let vm = env.api::<VirtualMachine>().get("pool-0").await.ok()?;
        (vm.annotations().get(POLICY).map(String::as_str) == Some("skip")).then_some(())
    })
    .await;
    let patch = json!({"spec": {"replicas": 3}});
    env.api::<VirtualMachineGroup>()
        .patch("pool", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("scaled");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let vms = env
        .api::<VirtualMachine>()
        .list(&Default::default())
        .await
        .expect("list");
    assert_eq!(vms.items.len(), 1, "no VirtualMachine added while paused");
    assert_eq!(env.sim.servers().len(), 1);
    annotate::<VirtualMachineGroup>(&env, "pool", None).await;
    eventually(
        "three servers once resumed",
        Duration::from_secs(60),
        || async { (env.sim.servers().len() == 3).then_some(()) },
    )
    .await;
    let vm = env
        .api::<VirtualMachine>()
        .get("pool-0")
        .await
        .expect("pool-0");
    assert!(
        !vm.annotations().contains_key(POLICY),
        "the annotation follows the group"
    );
}

#[tokio::test]
async fn metadata_changed_outside_kubernetes_is_restored_with_an_event_naming_it() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachine>(&vm_yaml("app", "  metadata: {tier: web}\n"))
        .await;
    let id = server_id(&env.ready_vm("app").await);
    // Wait until status records the applied generation, as a converged object does.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let changed = BTreeMap::from([("tier".to_owned(), "db".to_owned())]);
    env.cloud()
        .compute()
        .set_server_metadata(&ServerId::new(&id), &changed, MetadataMode::Merge)
        .await
        .expect("changed behind the operator's back");
    let started = Instant::now();
    eventually("the metadata is restored", LIMIT, || async {
        let s = env.sim.servers().into_iter().find(|s| s.id == id)?;
        (s.metadata.get("tier").map(String::as_str) == Some("web")).then_some(())
    })
    .await;
    let took = started.elapsed();
    drift_event(&env, "tier").await;
    // Found by the cloud view's refresh (every resync period, 2 s here) at the latest.
    assert!(took < Duration::from_secs(2) * 3, "restored after {took:?}");
    eprintln!(
        "metadata drift restored {} ms after the change",
        took.as_millis()
    );
}

#[tokio::test]
async fn pool_members_changed_outside_kubernetes_are_restored_with_an_event_naming_them() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let yaml = "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {name: front}\nspec:\n  ports:\n  - port: 80\n    protocol: http\n    realServers: {protocol: http, port: 8080, addresses: [10.0.0.21, 10.0.0.22]}\n";
    env.create_from_yaml::<LoadBalancer>(yaml).await;
    let lb = env.load_balancer_ready("front", "2/2").await;
    let pool = lb
        .status
        .as_ref()
        .and_then(|s| s.ports.first()?.pool_id.clone())
        .expect("pool");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let only_one = [MemberSpec {
        address: "10.0.0.21".to_owned(),
        protocol_port: 8080,
        monitor_port: None,
        name: "10.0.0.21".to_owned(),
        subnet_id: None,
        weight: None,
        tags: vec![],
    }];
    env.cloud()
        .load_balancing(None)
        .replace_members(&PoolId::new(pool), &only_one)
        .await
        .expect("a member removed behind the operator's back");
    let pool_size = || {
        env.sim
            .load_balancers()
            .first()
            .and_then(|l| Some(l.pools.first()?.members.len()))
    };
    eventually("Octavia applied the removal", LIMIT, || async {
        (pool_size() == Some(1)).then_some(())
    })
    .await;
    let started = Instant::now();
    eventually("the member is back", LIMIT, || async {
        (pool_size() == Some(2)).then_some(())
    })
    .await;
    let took = started.elapsed();
    let note = drift_event(&env, "had members 10.0.0.21:8080 (").await;
    assert!(
        note.contains("restored to 10.0.0.21:8080, 10.0.0.22:8080"),
        "{note}"
    );
    // Found by the next refresh (2 s here), or, when the change fell in the second of
    // the operator's last write (Octavia's updated_at has whole seconds), by the recheck
    // QUIET after it.
    assert!(
        took < QUIET + Duration::from_secs(2) * 3,
        "restored after {took:?}"
    );
    eprintln!(
        "member drift restored {} ms after the change",
        took.as_millis()
    );
}

/// The note of the `DriftCorrected` event containing `text` (published right after the
/// write that corrected the drift, so it may trail it a little).
async fn drift_event(env: &Env, text: &str) -> String {
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = env.api();
    eventually(
        &format!("a DriftCorrected event naming {text}"),
        LIMIT,
        || async {
            events
                .list(&Default::default())
                .await
                .ok()?
                .items
                .into_iter()
                .filter(|e| e.reason.as_deref() == Some("DriftCorrected"))
                .filter_map(|e| e.message)
                .find(|n| n.contains(text))
        },
    )
    .await
}
