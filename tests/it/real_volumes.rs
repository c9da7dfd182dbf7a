//! Stateful VirtualMachines on the real systems (Cinder 29, Nova 34 with its fake
//! driver), driven with `kubectl` and checked with the `openstack` CLI: a
//! VirtualMachine boots from a volume and has a data volume `in-use`; a group of 3 has
//! a data volume per replica; `openstack server delete` of replica 1 brings a server
//! with replica 1's volume (same ID); cinder-api stopped while replicas 0 and 2 lose
//! their servers to `openstack server delete --wait` leaves their volumes attached to
//! servers that are gone, and both are Ready on their own volumes again once Cinder is
//! back (the stale attachments deleted); a template change rolls all three and every
//! volume keeps its ID; scale 3→2 keeps `-2`'s volume, which a live server made with
//! the CLI then holds: 2→3 reports it and leaves it there, and attaches it once that
//! server lets it go; a
//! larger size extends the volume; the real kube-apiserver refuses a shrink and a
//! duplicate name; deleting with `whenDeleted: Delete` leaves no volume. Run by
//! `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup};

use support::real::{
    Namespace, Operator, Real, context, event_notes, nothing_left, project_inventory,
    start_services, stop_service, until,
};

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10s\n";

fn apply(real: &Real, ns: &Namespace, manifest: &str) {
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
}

/// `kubectl apply` that the API server must refuse, with `why` in its answer.
fn refused(real: &Real, ns: &Namespace, manifest: &str, why: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new("kubectl")
        .args(["-n", &ns.name, "apply", "-f", "-"])
        .env("KUBECONFIG", &real.admin_kubeconfig)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(manifest.as_bytes())
        .expect("manifest written");
    let out = child.wait_with_output().expect("kubectl ends");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains(why),
        "expected a refusal with {why:?}: {said}"
    );
}

/// The demo project's volumes: ID → (name, status, size, attached server).
fn volumes(real: &Real) -> BTreeMap<String, (String, String, i64, Option<String>)> {
    let listed = real.openstack("osh-demo", &["volume", "list", "--long"]);
    listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            let attached = v["Attached to"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|a| a["server_id"].as_str())
                .map(str::to_owned);
            (
                v["ID"].as_str().unwrap_or_default().to_owned(),
                (
                    v["Name"].as_str().unwrap_or_default().to_owned(),
                    v["Status"].as_str().unwrap_or_default().to_owned(),
                    v["Size"].as_i64().unwrap_or_default(),
                    attached,
                ),
            )
        })
        .collect()
}

/// The VirtualMachine `name` once Ready with `attached` volumes: its server and the
/// data volume IDs in spec order.
async fn ready(
    vms: &Api<VirtualMachine>,
    op: &Operator,
    name: &str,
    attached: &str,
) -> (String, Vec<String>) {
    until(
        &format!("{name} is Ready with {attached} volumes"),
        LIMIT,
        &context(op),
        || async {
            let s = vms.get(name).await.ok()?.status?;
            (is_true(&s.conditions, READY) && s.volumes_attached.as_deref() == Some(attached))
                .then_some(())?;
            Some((
                s.server_id?,
                s.volumes.iter().map(|v| v.id.clone()).collect(),
            ))
        },
    )
    .await
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn volumes_follow_their_virtual_machines_and_replicas_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-volumes");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let volumes_before = volumes(&real);
    let operator = real.operator("volumes", &[], Some(CONFIG));
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let calls_before = real.operator_requests();

    // A VirtualMachine that boots from a volume, with a data volume.
    let started = Instant::now();
    let vm = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: db}\nspec:\n  image: cirros\n  flavor: m1.tiny\n  bootVolume: {size: 1}\n  volumes: [{name: data, size: 1}]\n  volumeRetention: {whenDeleted: Delete}\n";
    apply(&real, &ns, vm);
    let (server, data) = ready(&vms, &operator, "db", "1/1").await;
    let vm_ready = started.elapsed();
    let cinder = volumes(&real);
    let (name, status, _, on) = &cinder[&data[0]];
    assert_eq!(
        (name.as_str(), status.as_str(), on.as_deref()),
        ("db-data", "in-use", Some(server.as_str()))
    );
    let shown = real.openstack("osh-demo", &["server", "show", &server]);
    let attached = shown["volumes_attached"].to_string();
    assert_eq!(
        attached.matches("\"id\"").count(),
        2,
        "boot and data volume: {attached}"
    );
    let vm_calls = real.operator_requests() - calls_before;

    // The real kube-apiserver refuses a shrink and a second volume of the same name.
    refused(
        &real,
        &ns,
        &vm.replace(
            "volumes: [{name: data, size: 1}]",
            "volumes: [{name: data, size: 0}]",
        ),
        "spec.volumes[0].size",
    );
    refused(
        &real,
        &ns,
        &vm.replace(
            "volumes: [{name: data, size: 1}]",
            "volumes: [{name: data, size: 1}, {name: data, size: 2}]",
        ),
        "Duplicate value",
    );
    // Growing it extends the same volume, attached.
    apply(
        &real,
        &ns,
        &vm.replace(
            "volumes: [{name: data, size: 1}]",
            "volumes: [{name: data, size: 2}]",
        ),
    );
    until(
        "the data volume is 2 GiB in Cinder",
        LIMIT,
        &context(&operator),
        || async {
            let (_, status, size, _) = volumes(&real).get(&data[0])?.clone();
            (size == 2 && status == "in-use").then_some(())
        },
    )
    .await;
    refused(&real, &ns, vm, "can grow, never shrink");
    println!(
        "REAL VirtualMachine with a boot volume and a data volume: Ready in {:.1} s, {vm_calls} cloud calls",
        vm_ready.as_secs_f64()
    );

    group_scenario(&real, &ns, &client, &operator).await;

    real.kubectl(&["-n", &ns.name, "delete", "vm", "db", "--wait=false"]);
    until(
        "every volume of the test is gone",
        LIMIT,
        &context(&operator),
        || async { (volumes(&real) == volumes_before).then_some(()) },
    )
    .await;
    nothing_left(&real, &baseline);
}

/// A group of 3 with a data volume each: replacement, roll-out, scale down and up,
/// deletion.
async fn group_scenario(real: &Real, ns: &Namespace, client: &kube::Client, operator: &Operator) {
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let group = |flavor: &str| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: store}}\nspec:\n  replicas: 3\n  haPolicy: soft\n  template:\n    image: cirros\n    flavor: {flavor}\n    volumes: [{{name: data, size: 1}}]\n  volumeRetention: {{whenScaled: Retain, whenDeleted: Delete}}\n"
        )
    };
    // A server outside the group, booting meanwhile, for held_by_a_live_server.
    let made = [
        "server",
        "create",
        "--flavor",
        "m1.tiny",
        "--image",
        "cirros",
        "--network",
        "private",
        "outsider",
    ];
    let outsider = real.openstack("osh-demo", &made)["id"]
        .as_str()
        .expect("server ID")
        .to_owned();
    let calls_before = real.operator_requests();
    let started = Instant::now();
    apply(real, ns, &group("m1.tiny"));
    let mut ids = Vec::new();
    for i in 0..3 {
        let (_, data) = ready(&vms, operator, &format!("store-{i}"), "1/1").await;
        ids.push(data[0].clone());
    }
    let group_ready = started.elapsed();
    let group_calls = real.operator_requests() - calls_before;
    println!(
        "REAL group of 3 with a data volume each: Ready in {:.1} s, {group_calls} cloud calls ({:.1} per VirtualMachine)",
        group_ready.as_secs_f64(),
        group_calls as f64 / 3.0
    );

    // Replica 1's server deleted with the CLI: the new server has replica 1's volume.
    let (server, _) = ready(&vms, operator, "store-1", "1/1").await;
    let deleted = Instant::now();
    real.openstack_do("osh-demo", &["server", "delete", &server]);
    let back = until(
        "store-1 has a new server with its volume",
        LIMIT,
        &context(operator),
        || async {
            let s = vms.get("store-1").await.ok()?.status?;
            let new = s.server_id.clone().filter(|id| *id != server)?;
            (is_true(&s.conditions, READY) && s.volumes_attached.as_deref() == Some("1/1"))
                .then(|| (new, s.volumes[0].id.clone()))
        },
    )
    .await;
    assert_eq!(back.1, ids[1], "the same volume, not a new one");
    let (_, _, _, on) = volumes(real)[&ids[1]].clone();
    assert_eq!(on.as_deref(), Some(back.0.as_str()));
    println!(
        "REAL replica 1's server deleted with the CLI: back with its volume in {:.1} s",
        deleted.elapsed().as_secs_f64()
    );

    stale_attachments(real, ns, client, operator, &ids).await;

    // A template change rolls all three; each keeps its volume.
    let rolled = Instant::now();
    apply(real, ns, &group("m1.small"));
    until(
        "every replica rolled onto m1.small and kept its volume",
        LIMIT * 2,
        &context(operator),
        || async {
            let g = groups.get("store").await.ok()?.status?;
            (g.updated_replicas == 3 && g.ready_replicas == 3 && g.replicas == 3).then_some(())?;
            for (i, id) in ids.iter().enumerate() {
                let s = vms.get(&format!("store-{i}")).await.ok()?.status?;
                (s.flavor.as_deref() == Some("m1.small")
                    && s.volumes.first()?.id == *id
                    && s.volumes_attached.as_deref() == Some("1/1"))
                .then_some(())?;
            }
            Some(())
        },
    )
    .await;
    println!(
        "REAL template change rolled 3 replicas in place, volumes kept: {:.1} s",
        rolled.elapsed().as_secs_f64()
    );

    // Scale 3 -> 2: store-2's volume stays (Retain) and is counted; 2 -> 3 brings it back.
    real.kubectl(&["-n", &ns.name, "scale", "vmg", "store", "--replicas=2"]);
    until("one retained volume", LIMIT, &context(operator), || async {
        let g = groups.get("store").await.ok()?.status?;
        let gone = vms.get_opt("store-2").await.ok()?.is_none();
        (gone && g.retained_volumes == 1).then_some(())
    })
    .await;
    let (_, status, _, on) = volumes(real)[&ids[2]].clone();
    assert_eq!(
        (status.as_str(), on),
        ("available", None),
        "retained, detached"
    );
    let retained = real.kubectl(&["-n", &ns.name, "get", "vmg", "store"]);
    assert!(retained.contains("RETAINED"), "{retained}");
    held_by_a_live_server(real, ns, &vms, operator, (&outsider, &ids[2])).await;
    let (_, data) = ready(&vms, operator, "store-2", "1/1").await;
    assert_eq!(data[0], ids[2], "store-2 got its old volume back");

    // Deleting the group with whenDeleted: Delete leaves none of its volumes.
    real.kubectl(&["-n", &ns.name, "delete", "vmg", "store", "--wait=false"]);
    until(
        "the group's volumes are gone",
        LIMIT,
        &context(operator),
        || async {
            let left = volumes(real);
            ids.iter().all(|id| !left.contains_key(id)).then_some(())
        },
    )
    .await;
}

/// Cinder stopped, replicas 0 and 2 deleted with `openstack server delete --wait` (Nova
/// deletes them but cannot tell Cinder), Cinder started: both are Ready on their own
/// volume again, no attachment left to a deleted server, no person involved. Then a
/// live server made with the CLI takes replica 0's volume: it is reported, never
/// detached, and comes back once that server lets it go.
async fn stale_attachments(
    real: &Real,
    ns: &Namespace,
    client: &kube::Client,
    operator: &Operator,
    ids: &[String],
) {
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let mut gone = Vec::new();
    for i in [0, 2] {
        gone.push(ready(&vms, operator, &format!("store-{i}"), "1/1").await.0);
    }
    stop_service("cinder-api");
    let delete = ["server", "delete", "--wait", &gone[0], &gone[1]];
    real.openstack_do("osh-demo", &delete);
    start_services();
    let back = Instant::now();
    for (i, server) in [0, 2].into_iter().zip(&gone) {
        let name = format!("store-{i}");
        let (now, data) = ready(&vms, operator, &name, "1/1").await;
        assert_ne!(&now, server, "{name} has a new server");
        assert_eq!(data[0], ids[i], "{name} has its own volume");
    }
    let took = back.elapsed();
    let cinder = volumes(real);
    for server in &gone {
        assert!(
            cinder
                .values()
                .all(|v| v.3.as_deref() != Some(server.as_str())),
            "nothing attached to deleted server {server}: {cinder:?}"
        );
    }
    let events = event_notes(real, ns, "StaleAttachmentCleared", None);
    assert_eq!(events.len(), 2, "{events:?}");
    println!(
        "REAL Cinder down while 2 replicas' servers were deleted: both Ready on their own volumes {:.1} s after Cinder's return",
        took.as_secs_f64()
    );
}

/// Retained volume `id` of the scaled-down replica `store-2` attached with the CLI to a
/// live server outside the group, then the group scaled back to 3: the replica reports
/// the server holding it and leaves it there; it gets its volume once that server lets
/// it go.
async fn held_by_a_live_server(
    real: &Real,
    ns: &Namespace,
    vms: &Api<VirtualMachine>,
    operator: &Operator,
    (outsider, id): (&str, &str),
) {
    until(
        "the outsider is ACTIVE",
        LIMIT,
        &context(operator),
        || async {
            let shown = real.openstack("osh-demo", &["server", "show", outsider]);
            (shown["status"] == "ACTIVE").then_some(())
        },
    )
    .await;
    real.openstack_do("osh-demo", &["server", "add", "volume", outsider, id]);
    real.kubectl(&["-n", &ns.name, "scale", "vmg", "store", "--replicas=3"]);
    until(
        "store-2 names the server holding its volume",
        LIMIT,
        &context(operator),
        || async {
            let s = vms.get("store-2").await.ok()?.status?;
            let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
            ready
                .message
                .contains(&format!("attached to server {outsider}"))
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let on = volumes(real).get(id).and_then(|v| v.3.clone());
    assert_eq!(
        on.as_deref(),
        Some(outsider),
        "never detached from a live server"
    );
    real.openstack_do("osh-demo", &["server", "remove", "volume", outsider, id]);
    real.openstack_do("osh-demo", &["server", "delete", outsider]);
}
