//! Replicas that keep who they are, on the real systems (Neutron 29, Nova 34), driven
//! with `kubectl` and checked with the `openstack` CLI: on a network the project owns
//! (Neutron's default policy lets a member choose addresses only there), a group of 3
//! with `addresses: from 10.20.0.50` runs at .50/.51/.52, each with the same
//! keepalived VIP as an allowed address pair; `openstack server delete` of replica 1
//! and a template change bring servers back on the same ports (same IDs, IPs, MACs); a
//! port left bound to a server Nova deleted has its binding cleared and replica 0 boots
//! on it again;
//! scale 3→2 keeps index 2's port and 2→3 boots on it again; a VirtualMachine asking
//! for a taken address reports Neutron's words; one takes over a port made with the CLI
//! (`portID`); one with a floating IP keeps it across a replacement; replica 2's server
//! has its index in its metadata; deleting everything leaves no port and no floating IP.
//! Run by `hack/real-systems.sh` (stage `volumes`).

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup};

use support::real::{
    Namespace, Operator, Real, context, event_notes, nothing_left, project_inventory, until,
};

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10s\n";
const NETWORK: &str = "verda-addresses";

fn apply(real: &Real, ns: &Namespace, manifest: &str) {
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
}

fn group(flavor: &str, replicas: u32) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: keep}}\nspec:\n  replicas: {replicas}\n  haPolicy: soft\n  template:\n    image: cirros\n    flavor: {flavor}\n    ports:\n      - network: {NETWORK}\n        allowedAddressPairs: [{{ipAddress: 10.20.0.100}}]\n  addresses: [{{network: {NETWORK}, from: 10.20.0.50}}]\n  networkRetention: {{whenScaled: Retain, whenDeleted: Delete}}\n"
    )
}

/// The IDs of the test network's ports (the router's aside).
fn port_ids(real: &Real) -> Vec<String> {
    let listed = real.openstack(
        "osh-demo",
        &["port", "list", "--network", NETWORK, "--long"],
    );
    let router = |p: &serde_json::Value| {
        p["Device Owner"]
            .as_str()
            .unwrap_or_default()
            .starts_with("network:")
    };
    listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| !router(p))
        .filter_map(|p| p["ID"].as_str().map(str::to_owned))
        .collect()
}

/// The ports of the test network: ID → (fixed IP, MAC, bound server, address pairs).
/// `port list` shows no device: each port is shown (while none is being deleted).
fn ports(real: &Real) -> BTreeMap<String, (String, String, String, String)> {
    let ids = port_ids(real);
    ids.into_iter()
        .filter_map(|id| {
            let p = real.openstack("osh-demo", &["port", "show", &id]);
            let ip = p["fixed_ips"][0]["ip_address"].as_str()?.to_owned();
            let mac = p["mac_address"].as_str().unwrap_or_default().to_owned();
            let device = p["device_id"].as_str().unwrap_or_default().to_owned();
            Some((
                id,
                (ip, mac, device, p["allowed_address_pairs"].to_string()),
            ))
        })
        .collect()
}

/// Replica `name` once Ready on its port: (server, port ID, fixed IP, MAC).
async fn on_port(
    vms: &Api<VirtualMachine>,
    op: &Operator,
    name: &str,
) -> (String, String, String, String) {
    until(
        &format!("{name} is Ready on its port"),
        LIMIT,
        &context(op),
        || async {
            let s = vms.get(name).await.ok()?.status?;
            is_true(&s.conditions, READY).then_some(())?;
            let port = s.ports.first()?;
            Some((
                s.server_id?,
                port.id.clone(),
                port.fixed_ips.first()?.clone(),
                port.mac_address.clone()?,
            ))
        },
    )
    .await
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn replicas_keep_their_ports_across_replacement_rollout_and_scaling_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-addresses");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    real.openstack_do("osh-demo", &["network", "create", NETWORK]);
    real.openstack_do(
        "osh-demo",
        &[
            "subnet",
            "create",
            "--network",
            NETWORK,
            "--subnet-range",
            "10.20.0.0/24",
            NETWORK,
        ],
    );
    let mut operator = real.operator("addresses", &[], Some(CONFIG));
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());

    let calls_before = real.operator_requests();
    let started = Instant::now();
    apply(&real, &ns, &group("m1.tiny", 3));
    let mut first = Vec::new();
    for i in 0..3 {
        first.push(on_port(&vms, &operator, &format!("keep-{i}")).await);
    }
    let calls = real.operator_requests() - calls_before;
    let ips: Vec<&str> = first.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(ips, ["10.20.0.50", "10.20.0.51", "10.20.0.52"]);
    let neutron = ports(&real);
    for (server, port, ip, mac) in &first {
        let (n_ip, n_mac, device, pairs) = &neutron[port];
        assert_eq!((n_ip, n_mac, device), (ip, mac, server), "Neutron agrees");
        assert!(
            pairs.contains("10.20.0.100"),
            "the VIP is an allowed pair: {pairs}"
        );
    }
    // Replica 2 knows its index from the metadata service.
    let shown = real.openstack("osh-demo", &["server", "show", &first[2].0]);
    let properties = shown["properties"].to_string();
    assert!(
        properties.contains(r#"verda.linecorp.com:index":"2""#)
            || properties.contains("verda.linecorp.com:index='2'"),
        "replica 2's server metadata: {properties}"
    );
    println!(
        "REAL group of 3 at .50/.51/.52 with a shared VIP: Ready in {:.1} s, {calls} cloud calls ({:.1} per VirtualMachine)",
        started.elapsed().as_secs_f64(),
        calls as f64 / 3.0
    );

    // Replica 1's server deleted with the CLI: a new server on the same port.
    let deleted = Instant::now();
    real.openstack_do("osh-demo", &["server", "delete", &first[1].0]);
    let back = until(
        "keep-1 has a new server on its port",
        LIMIT,
        &context(&operator),
        || async {
            let r = on_port(&vms, &operator, "keep-1").await;
            (r.0 != first[1].0).then_some(r)
        },
    )
    .await;
    assert_eq!(
        (&back.1, &back.2, &back.3),
        (&first[1].1, &first[1].2, &first[1].3)
    );
    println!(
        "REAL replica 1's server deleted with the CLI: back on the same port in {:.1} s",
        deleted.elapsed().as_secs_f64()
    );

    // A port left bound to a server Nova no longer has (Nova logs "Unable to clear device
    // ID for port" and deletes the server anyway when Neutron fails during the delete;
    // made here with the CLI while the operator is stopped, so that nothing races it):
    // the replica clears the binding and boots on its own port again.
    let was = on_port(&vms, &operator, "keep-0").await;
    operator.stop();
    real.openstack_do("osh-demo", &["server", "delete", "--wait", &was.0]);
    let bind = [
        "port",
        "set",
        "--device",
        &was.0,
        "--device-owner",
        "compute:az-1",
        &was.1,
    ];
    real.openstack_do("osh-demo", &bind);
    let restarted = Instant::now();
    let operator = real.operator("addresses-again", &[], Some(CONFIG));
    let back = until(
        "keep-0 is back on its port",
        LIMIT,
        &context(&operator),
        || async {
            let s = vms.get("keep-0").await.ok()?.status?;
            let server = s.server_id.clone().filter(|id| *id != was.0)?;
            let port = s.ports.first()?;
            (is_true(&s.conditions, READY) && port.id == was.1)
                .then(|| (server, port.fixed_ips.clone()))
        },
    )
    .await;
    assert_eq!(back.1.first(), Some(&was.2), "the same address");
    let events = event_notes(&real, &ns, "StaleBindingCleared", None);
    assert!(
        events.iter().any(|e| e.contains(&was.1)),
        "the event names the port: {events:?}"
    );
    println!(
        "REAL port left bound to a deleted server: keep-0 back on it {:.1} s after the operator started",
        restarted.elapsed().as_secs_f64()
    );

    // A template change rolls all three in place; each keeps its port.
    let rolled = Instant::now();
    apply(&real, &ns, &group("m1.small", 3));
    until(
        "every replica rolled onto m1.small on its port",
        LIMIT * 2,
        &context(&operator),
        || async {
            let g = groups.get("keep").await.ok()?.status?;
            (g.updated_replicas == 3 && g.ready_replicas == 3 && g.replicas == 3).then_some(())?;
            for (i, was) in first.iter().enumerate() {
                let s = vms.get(&format!("keep-{i}")).await.ok()?.status?;
                (s.flavor.as_deref() == Some("m1.small") && s.ports.first()?.id == was.1)
                    .then_some(())?;
            }
            Some(())
        },
    )
    .await;
    println!(
        "REAL template change rolled 3 replicas, ports kept: {:.1} s",
        rolled.elapsed().as_secs_f64()
    );

    // Scale 3 -> 2 keeps index 2's port, unbound; 2 -> 3 boots on it again.
    real.kubectl(&["-n", &ns.name, "scale", "vmg", "keep", "--replicas=2"]);
    until(
        "keep-2 is gone, its port kept and free",
        LIMIT,
        &context(&operator),
        || async {
            let gone = vms.get_opt("keep-2").await.ok()?.is_none();
            let port = ports(&real).get(&first[2].1).cloned()?;
            (gone && port.2.is_empty()).then_some(())
        },
    )
    .await;
    real.kubectl(&["-n", &ns.name, "scale", "vmg", "keep", "--replicas=3"]);
    let again = on_port(&vms, &operator, "keep-2").await;
    assert_eq!(
        (&again.1, &again.2),
        (&first[2].1, &first[2].2),
        "index 2 got its port back"
    );

    taken_address(&real, &ns, &vms, &operator).await;
    floating_ip(&real, &ns, &vms, &operator).await;

    real.kubectl(&["-n", &ns.name, "delete", "vmg", "keep", "--wait=false"]);
    until(
        "no port of the test is left",
        LIMIT,
        &context(&operator),
        || async { port_ids(&real).is_empty().then_some(()) },
    )
    .await;
    real.openstack_do("osh-demo", &["network", "delete", NETWORK]);
    nothing_left(&real, &baseline);
}

/// A VirtualMachine with a floating IP keeps it across a replacement of its server and
/// releases it when deleted. Neutron puts a floating IP only on a port whose subnet a
/// router joins to the external network: the test makes both (the external network as
/// admin, as the cloud's administrators would).
async fn floating_ip(real: &Real, ns: &Namespace, vms: &Api<VirtualMachine>, op: &Operator) {
    let ext = format!("{NETWORK}-ext");
    real.openstack_do("osh-admin", &["network", "create", "--external", &ext]);
    real.openstack_do(
        "osh-admin",
        &[
            "subnet",
            "create",
            "--network",
            &ext,
            "--subnet-range",
            "203.0.113.0/24",
            "--no-dhcp",
            &ext,
        ],
    );
    real.openstack_do("osh-demo", &["router", "create", NETWORK]);
    real.openstack_do(
        "osh-demo",
        &["router", "set", "--external-gateway", &ext, NETWORK],
    );
    real.openstack_do("osh-demo", &["router", "add", "subnet", NETWORK, NETWORK]);
    let vm = format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: front}}\nspec:\n  image: cirros\n  flavor: m1.tiny\n  ports: [{{network: {NETWORK}}}]\n  floatingIP: {{network: {ext}}}\n"
    );
    apply(real, ns, &vm);
    let first = until(
        "front is Ready with a floating IP",
        LIMIT,
        &context(op),
        || async {
            let s = vms.get("front").await.ok()?.status?;
            is_true(&s.conditions, READY).then_some(())?;
            Some((s.server_id?, s.floating_ip?, s.ports.first()?.id.clone()))
        },
    )
    .await;
    let shown = real.openstack("osh-demo", &["floating", "ip", "show", &first.1]);
    assert_eq!(
        shown["port_id"].as_str(),
        Some(first.2.as_str()),
        "on the port: {shown}"
    );
    real.openstack_do("osh-demo", &["server", "delete", &first.0]);
    let back = until(
        "front has a new server, the same floating IP",
        LIMIT,
        &context(op),
        || async {
            let s = vms.get("front").await.ok()?.status?;
            let server = s.server_id.clone().filter(|id| *id != first.0)?;
            is_true(&s.conditions, READY).then_some(())?;
            Some((server, s.floating_ip?, s.ports.first()?.id.clone()))
        },
    )
    .await;
    assert_eq!((&back.1, &back.2), (&first.1, &first.2));
    real.kubectl(&["-n", &ns.name, "delete", "vm", "front"]);
    until(
        "the floating IP is released",
        LIMIT,
        &context(op),
        || async {
            let left = real.openstack("osh-demo", &["floating", "ip", "list"]);
            left.as_array().is_some_and(Vec::is_empty).then_some(())
        },
    )
    .await;
    real.openstack_do(
        "osh-demo",
        &["router", "remove", "subnet", NETWORK, NETWORK],
    );
    real.openstack_do("osh-demo", &["router", "delete", NETWORK]);
    real.openstack_do("osh-admin", &["network", "delete", &ext]);
    println!(
        "REAL a VirtualMachine keeps floating IP {} across a replacement of its server",
        first.1
    );
}

/// A VirtualMachine asking for replica 0's address is told so in Neutron's words and
/// creates nothing; one taking over a port made with the CLI (`portID`) boots on it,
/// and the port goes with it.
async fn taken_address(real: &Real, ns: &Namespace, vms: &Api<VirtualMachine>, op: &Operator) {
    let vm = |name: &str, ip: &str| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: cirros\n  flavor: m1.tiny\n  ports: [{{network: {NETWORK}, fixedIPs: [{ip}]}}]\n"
        )
    };
    apply(real, ns, &vm("thief", "10.20.0.50"));
    let said = until(
        "thief reports the address taken",
        LIMIT,
        &context(op),
        || async {
            let s = vms.get("thief").await.ok()?.status?;
            let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
            ready
                .message
                .contains("already allocated")
                .then(|| ready.message.clone())
        },
    )
    .await;
    assert!(said.contains("10.20.0.50"), "{said}");
    assert!(
        vms.get("thief")
            .await
            .expect("read")
            .status
            .expect("status")
            .server_id
            .is_none()
    );
    // A port made with the CLI, taken over by `portID`: the server boots on it.
    let made = real.openstack(
        "osh-demo",
        &[
            "port",
            "create",
            "--network",
            NETWORK,
            "--fixed-ip",
            "ip-address=10.20.0.60",
            "made-by-hand",
        ],
    );
    let made = made["id"]
        .as_str()
        .expect("the port made with the CLI")
        .to_owned();
    let own = format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: own}}\nspec:\n  image: cirros\n  flavor: m1.tiny\n  ports: [{{network: {NETWORK}, portID: {made}}}]\n"
    );
    apply(real, ns, &own);
    let (server, port, ip, _) = on_port(vms, op, "own").await;
    assert_eq!((port.as_str(), ip.as_str()), (made.as_str(), "10.20.0.60"));
    let shown = real.openstack("osh-demo", &["port", "show", &made]);
    assert_eq!(shown["device_id"].as_str(), Some(server.as_str()));
    let recorded = shown["description"].as_str().unwrap_or_default();
    assert!(
        recorded.starts_with("verda-uid-"),
        "owner recorded: {recorded}"
    );
    real.kubectl(&["-n", &ns.name, "delete", "vm", "own", "thief"]);
    until(
        "own's port, taken over, is deleted with it",
        LIMIT,
        &context(op),
        || async { (!port_ids(real).contains(&port)).then_some(()) },
    )
    .await;
    println!(
        "REAL a taken address is refused in Neutron's words: {said}; port {made} made with the CLI taken over and deleted with its VirtualMachine"
    );
}
