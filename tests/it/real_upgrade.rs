//! An upgrade in place on the real systems, as a platform team does it: the previous
//! release (built by `hack/real-systems.sh` from the commit `RELEASES` records, its
//! `dist/install.yaml` installed) runs the published manifests, an imported server,
//! a paused object and a second team's namespace; it is stopped, this release's `dist/install.yaml` is applied over
//! the old one, and this release's binary starts. Nothing in the cloud is replaced,
//! no object leaves Ready, every resource carries this release's records, and the
//! upgrade costs a few calls per object once. Run by `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use serde_json::Value;
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::owner::MANAGED_TAG;

use support::real::{
    Namespace, Operator, Real, context, nothing_left, pools_hold_the_group, project_inventory,
    published, published_scenario, put_secret, single_cloud, tenant_appcred_cloud, tenant_clouds,
    until,
};

const LIMIT: Duration = Duration::from_secs(300);
const CONFIG: &str = "resyncPeriod: 20s\n";
const CRDS: [&str; 3] = [
    "virtualmachines.verda.linecorp.com",
    "virtualmachinegroups.verda.linecorp.com",
    "loadbalancers.verda.linecorp.com",
];

fn previous_binary() -> PathBuf {
    std::env::var_os("VERDA_REAL_PREVIOUS_OPERATOR")
        .map(PathBuf::from)
        .expect("VERDA_REAL_PREVIOUS_OPERATOR is set: run through hack/real-systems.sh")
}

/// `kubectl -n NS apply -f -` of `manifest`.
fn apply(real: &Real, ns: &Namespace, manifest: &str) {
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
}

/// An existing server, made with the `openstack` CLI, to be imported.
fn legacy_server(real: &Real, name: &str) -> String {
    let made = real.openstack(
        "osh-demo",
        &[
            "server",
            "create",
            "--image",
            "cirros",
            "--flavor",
            "m1.tiny",
            "--network",
            "private",
            "--wait",
            name,
        ],
    );
    made["id"].as_str().expect("server ID").to_owned()
}

/// Every object of the three kinds in `namespaces`: `ns/kind/name` → (Ready status,
/// its last transition time), read as the administrator.
async fn readiness(
    client: &kube::Client,
    namespaces: &[&Namespace],
) -> BTreeMap<String, (String, String)> {
    let mut all = BTreeMap::new();
    for ns in namespaces {
        let vms: Api<VirtualMachine> = ns.api(client.clone());
        let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
        let lbs: Api<LoadBalancer> = ns.api(client.clone());
        let mut objects: Vec<(String, Value)> = Vec::new();
        for vm in vms.list(&Default::default()).await.expect("vms").items {
            objects.push(("vm".into(), serde_json::to_value(vm).expect("json")));
        }
        for g in groups
            .list(&Default::default())
            .await
            .expect("groups")
            .items
        {
            objects.push(("vmg".into(), serde_json::to_value(g).expect("json")));
        }
        for lb in lbs.list(&Default::default()).await.expect("lbs").items {
            objects.push(("lb".into(), serde_json::to_value(lb).expect("json")));
        }
        for (kind, obj) in objects {
            let name = obj["metadata"]["name"].as_str().unwrap_or("?").to_owned();
            let conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> =
                serde_json::from_value(obj["status"]["conditions"].clone()).unwrap_or_default();
            let ready = find_condition(&conditions, READY)
                .map(|c| (c.status.clone(), c.last_transition_time.0.to_string()))
                .unwrap_or_default();
            all.insert(format!("{}/{kind}/{name}", ns.name), ready);
        }
    }
    all
}

/// The IDs of everything the two projects hold that an upgrade must not replace.
fn cloud_ids(real: &Real) -> BTreeMap<String, Vec<String>> {
    let ids = |clouds: &std::path::Path, cloud: &str, args: &[&str]| -> Vec<String> {
        let mut ids: Vec<String> = real
            .openstack_in(clouds, cloud, args)
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["ID"].as_str().or(i["id"].as_str()).map(str::to_owned))
            .collect();
        ids.sort();
        ids
    };
    let tenant = tenant_clouds();
    let mut all = BTreeMap::new();
    for (what, args) in [
        ("servers", &["server", "list"][..]),
        ("server groups", &["server", "group", "list"]),
        ("load balancers", &["loadbalancer", "list"]),
        ("listeners", &["loadbalancer", "listener", "list"]),
        ("pools", &["loadbalancer", "pool", "list"]),
        ("floating IPs", &["floating", "ip", "list"]),
    ] {
        all.insert(format!("demo {what}"), ids(&real.clouds, "osh-demo", args));
    }
    all.insert(
        "team-b servers".into(),
        ids(&tenant, &tenant_appcred_cloud(), &["server", "list"]),
    );
    all
}

/// Whether every server and load balancer of the demo project, and the team-b
/// server, carries `verda-managed` and the cluster's tag.
fn records_complete(real: &Real) -> Result<(), String> {
    let tagged = |clouds: &std::path::Path, cloud: &str, what: &str, id: &str| {
        let shown = real.openstack_in(clouds, cloud, &[what, "show", id]);
        let tags: Vec<String> = match &shown["tags"] {
            Value::Array(t) => t
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
            Value::String(t) => t.split(',').map(|t| t.trim().to_owned()).collect(),
            _ => vec![],
        };
        let complete = tags.iter().any(|t| t == MANAGED_TAG)
            && tags.iter().any(|t| t.starts_with("verda-cluster-"));
        complete
            .then_some(())
            .ok_or(format!("{what} {id} has tags {tags:?}"))
    };
    let ids = cloud_ids(real);
    for id in &ids["demo servers"] {
        tagged(&real.clouds, "osh-demo", "server", id)?;
    }
    for id in &ids["demo load balancers"] {
        tagged(&real.clouds, "osh-demo", "loadbalancer", id)?;
    }
    let (tenant, cloud) = (tenant_clouds(), tenant_appcred_cloud());
    for id in &ids["team-b servers"] {
        tagged(&tenant, &cloud, "server", id)?;
    }
    Ok(())
}

/// Waits until the `expected` objects in `namespaces` are Ready; names those that are
/// not when it gives up.
async fn all_ready(
    client: &kube::Client,
    namespaces: &[&Namespace],
    expected: usize,
    op: &Operator,
) {
    let started = Instant::now();
    loop {
        let all = readiness(client, namespaces).await;
        if all.len() == expected && all.values().all(|(s, _)| s == "True") {
            return;
        }
        assert!(
            started.elapsed() < LIMIT,
            "not all {expected} objects Ready after {LIMIT:?}: {all:#?}\n{}",
            context(op)()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn the_next_release_takes_over_in_place_without_replacing_anything() {
    let real = Arc::new(Real::from_env());
    let client = real.kube().await;
    let team_a = Namespace::create(real.clone(), "upgrade-a");
    let team_b = Namespace::create(real.clone(), "upgrade-b");
    let baseline = project_inventory(&real);
    let team_b_before = cloud_ids(&real)["team-b servers"].clone();

    // The previous release, as it ran: the published manifests and the rest.
    let old = real.operator_binary(&previous_binary(), "previous", &[], Some(CONFIG));
    for f in published_scenario() {
        real.kubectl(&["-n", &team_a.name, "apply", "-f", &f]);
    }
    let legacy = legacy_server(&real, &format!("legacy-{}", team_a.name));
    apply(
        &real,
        &team_a,
        &format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: legacy}}\nspec: {{image: cirros, flavor: m1.tiny, import: {{id: {legacy}}}}}\n---\napiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: paused}}\nspec: {{image: cirros, flavor: m1.tiny}}\n"
        ),
    );
    put_secret(
        &real,
        &team_b.name,
        &single_cloud(&tenant_clouds(), &tenant_appcred_cloud()),
    );
    real.kubectl(&[
        "-n",
        &team_b.name,
        "apply",
        "-f",
        &published("virtualmachine.yaml"),
    ]);
    let namespaces = [&team_a, &team_b];
    // vm-sample, the group and its two, the load balancer, legacy, paused; team-b's VM.
    let objects = 8;
    all_ready(&client, &namespaces, objects, &old).await;
    pools_hold_the_group(&team_a, &client, &old, 2).await;
    real.kubectl(&[
        "-n",
        &team_a.name,
        "annotate",
        "vm/paused",
        "verda.linecorp.com/reconcile-policy=skip",
    ]);
    let before = cloud_ids(&real);
    let ready_before = readiness(&client, &namespaces).await;

    // The upgrade: stop, apply the new install over the old one, start the new binary.
    let mut old = old;
    old.stop();
    let install = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/install.yaml");
    real.kubectl(&["apply", "-f", install]);
    for crd in CRDS {
        let stored = real.kubectl(&["get", "crd", crd, "-o", "jsonpath={.status.storedVersions}"]);
        assert_eq!(stored, r#"["v1alpha1"]"#, "{crd}");
    }
    // This release's fields are served: the VirtualMachine schema knows its volumes.
    let served = real.kubectl(&[
        "get",
        "crd",
        CRDS[0],
        "-o",
        "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.volumes.type}",
    ]);
    assert_eq!(served, "array", "spec.volumes is served after the upgrade");
    let calls_before = real.operator_requests();
    let started = Instant::now();
    let new = real.operator("upgraded", &[], Some(CONFIG));
    // Never not Ready, from the start until the new release has settled.
    let settled = until("the new release settles", LIMIT, &context(&new), || async {
        let now = readiness(&client, &namespaces).await;
        assert!(
            now.values().all(|(s, _)| s == "True"),
            "an object left Ready during the upgrade: {now:#?}\n{}",
            context(&new)()
        );
        let ready = new
            .metric(
                "verda_objects_by_condition",
                &[r#"condition="Ready""#, r#"status="True""#],
            )
            .await?;
        let orphans = new.metric("verda_orphaned_cloud_resources", &[]).await;
        (ready as usize == objects && orphans == Some(0.0) && records_complete(&real).is_ok())
            .then(Instant::now)
    })
    .await;
    // A few more seconds: whatever the first reconciles set off has been sent.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let upgrade_calls = real.operator_requests() - calls_before;
    assert_eq!(
        readiness(&client, &namespaces).await,
        ready_before,
        "Ready moved"
    );
    assert_eq!(cloud_ids(&real), before, "a cloud resource was replaced");
    let orphans = real.operator_command(&["orphans", "-o", "json"]);
    assert_eq!(
        serde_json::from_str::<Value>(&orphans).ok(),
        Some(Value::Array(vec![])),
        "{orphans}"
    );
    println!(
        "REAL upgrade {} -> {}: settled {:.1} s after start; {upgrade_calls} cloud calls for {objects} \
         objects ({:.1} per object); nothing replaced, Ready never left",
        std::env::var("VERDA_REAL_PREVIOUS_VERSION").unwrap_or_default(),
        env!("CARGO_PKG_VERSION"),
        (settled - started).as_secs_f64(),
        upgrade_calls as f64 / objects as f64,
    );
    assert!(
        upgrade_calls <= 4 * objects,
        "the upgrade cost {upgrade_calls} calls for {objects} objects"
    );

    // The new release deletes what the old one made, in both projects.
    real.kubectl(&[
        "-n",
        &team_a.name,
        "annotate",
        "vm/paused",
        "verda.linecorp.com/reconcile-policy-",
    ]);
    for ns in namespaces {
        real.kubectl(&[
            "-n",
            &ns.name,
            "delete",
            "vm,vmg,lb",
            "--all",
            "--wait=false",
        ]);
    }
    until("every object is gone", LIMIT, &context(&new), || async {
        readiness(&client, &namespaces)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    nothing_left(&real, &baseline);
    assert_eq!(cloud_ids(&real)["team-b servers"], team_b_before);
}
