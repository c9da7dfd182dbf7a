//! Declared ports end to end (test API server and simulator): a group's replicas at
//! fixed addresses by index, kept across an out-of-band server delete, a template
//! change and a scale-down and up; a shared allowed-address-pair VIP; an address pair
//! edited in place; a floating IP kept across a replacement; a taken address reported
//! in Neutron's words; the ports deleted
//! with the group; a crash right after a port create leaves neither a duplicate nor an
//! orphan; new replicas cost a port create each and no lookup each; a port made outside
//! is taken over by `portID`.

use crate::sim_support;
use crate::support;

use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, calls_since, eventually, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::ids::NetworkId;
use verda_operator::cloud::model::network::{CreatePort, Port, PortFilter};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(30);

/// Creates network `name` with subnet 10.20.0.0/24 in the operator's project, as
/// `openstack network create` and `openstack subnet create` do; its ID.
pub async fn own_network(env: &Env, name: &str) -> String {
    let http = reqwest::Client::new();
    let token = sim_support::issue_token(&http, &env.sim).await;
    let base = format!("http://{}/network/v2.0", env.sim.addr());
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("{base}/{path}"))
            .header("x-auth-token", &token)
            .json(&body)
            .send()
    };
    let net = post("networks", json!({"network": {"name": name}}))
        .await
        .expect("network created");
    assert_eq!(net.status(), 201);
    let id = sim_support::json_of(net).await["network"]["id"]
        .as_str()
        .expect("a network ID")
        .to_owned();
    let subnet = json!({"subnet": {"network_id": id, "cidr": "10.20.0.0/24", "ip_version": 4, "name": name}});
    assert_eq!(post("subnets", subnet).await.expect("subnet").status(), 201);
    id
}

/// User data as the server got it (Nova takes it in base64).
fn decoded(user_data: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sextets: Vec<u32> = user_data
        .bytes()
        .filter_map(|c| ALPHABET.iter().position(|a| *a == c))
        .map(|p| p as u32)
        .collect();
    let mut bytes = Vec::new();
    for chunk in sextets.chunks(4) {
        let n = chunk.iter().fold(0u32, |acc, s| acc << 6 | s) << (6 * (4 - chunk.len()));
        let got = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        bytes.extend_from_slice(&got[..chunk.len().saturating_sub(1)]);
    }
    String::from_utf8(bytes).expect("UTF-8 user data")
}

/// Every port on network `id`, as Neutron lists them.
async fn ports_on(env: &Env, id: &str) -> Vec<Port> {
    let all = env
        .cloud()
        .network(None)
        .list_ports(&PortFilter::default())
        .await
        .expect("ports listed");
    all.into_iter()
        .filter(|p| p.network_id.as_str() == id)
        .collect()
}

fn group(flavor: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: db}}\nspec:\n  replicas: 3\n  template:\n    image: centos79\n    flavor: {flavor}\n    ports:\n      - network: db-net\n        allowedAddressPairs: [{{ipAddress: 10.20.0.100}}]\n    floatingIP: {{network: public}}\n    initScript: {{value: 'echo ${{VERDA_NAME}} ${{VERDA_INDEX}} $${{HOME}}'}}\n  addresses: [{{network: db-net, from: 10.20.0.50}}]\n"
    )
}

/// Replica `name` once Ready: (server, port ID, fixed IP, MAC).
async fn on_port(env: &Env, name: &str) -> (String, String, String, String) {
    let api = env.api::<VirtualMachine>();
    eventually(&format!("{name} is Ready on its port"), LIMIT, || async {
        let s = api.get(name).await.ok()?.status?;
        is_true(&s.conditions, READY).then_some(())?;
        let port = s.ports.first()?;
        Some((
            s.server_id?,
            port.id.clone(),
            port.fixed_ips.first()?.clone(),
            port.mac_address.clone()?,
        ))
    })
    .await
}

#[tokio::test]
async fn replicas_keep_their_addresses_and_ports_across_every_replacement() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let net = own_network(&env, "db-net").await;
    let _: VirtualMachineGroup = env.create_from_yaml(&group("n3-1vcpu-2gb")).await;
    let mut first = Vec::new();
    for i in 0..3 {
        first.push(on_port(&env, &format!("db-{i}")).await);
    }
    let ips: Vec<&str> = first.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(ips, ["10.20.0.50", "10.20.0.51", "10.20.0.52"]);
    let fips = env.sim.floating_ips();
    assert_eq!(fips.len(), 3, "a floating IP per replica: {fips:?}");
    // Each replica knows who it is at boot.
    let server = env.sim.servers().into_iter().find(|s| s.id == first[2].0);
    let server = server.expect("db-2's server");
    let index = server.metadata.get("verda.linecorp.com:index");
    assert_eq!(
        index.map(String::as_str),
        Some("2"),
        "in the metadata service"
    );
    let script = server.user_data.expect("user data");
    assert_eq!(decoded(&script), "echo db-2 2 ${HOME}");
    let ports = ports_on(&env, &net).await;
    assert_eq!(ports.len(), 3, "{ports:?}");
    for p in &ports {
        let pairs: Vec<&str> = p
            .allowed_address_pairs
            .iter()
            .map(|a| a.ip_address.as_str())
            .collect();
        assert_eq!(pairs, ["10.20.0.100"], "every replica carries the VIP");
        assert!(
            p.name.starts_with("db-") && p.name.ends_with("-db-net"),
            "{}",
            p.name
        );
    }

    // Deleted outside Kubernetes: the new server boots on the same port.
    env.sim.delete_server_out_of_band(&first[1].0);
    let api = env.api::<VirtualMachine>();
    let back = eventually("db-1 is back on its port", LIMIT, || async {
        let s = api.get("db-1").await.ok()?.status?;
        let server = s.server_id.clone().filter(|id| *id != first[1].0)?;
        is_true(&s.conditions, READY).then_some(())?;
        Some((server, s.ports.first()?.id.clone()))
    })
    .await;
    assert_eq!(back.1, first[1].1, "the same port");

    // A template change replaces the replicas in place, each on its port.
    let flavor = json!({"spec": {"template": {"flavor": "n3-2vcpu-4gb"}}});
    env.api::<VirtualMachineGroup>()
        .patch("db", &PatchParams::default(), &Patch::Merge(&flavor))
        .await
        .expect("template changed");
    eventually("every replica rolled, on its port", LIMIT * 2, || async {
        let g = env
            .api::<VirtualMachineGroup>()
            .get("db")
            .await
            .ok()?
            .status?;
        (g.updated_replicas == 3 && g.ready_replicas == 3 && g.replicas == 3).then_some(())?;
        for (i, was) in first.iter().enumerate() {
            let s = api.get(&format!("db-{i}")).await.ok()?.status?;
            (s.flavor.as_deref() == Some("n3-2vcpu-4gb") && s.ports.first()?.id == was.1)
                .then_some(())?;
        }
        Some(())
    })
    .await;
    assert_eq!(ports_on(&env, &net).await.len(), 3, "no new port");

    // 3 -> 2 keeps index 2's port, free; 2 -> 3 boots on it again.
    env.scale("db", 2).await;
    eventually("db-2 is gone, its port kept and free", LIMIT, || async {
        api.get_opt("db-2").await.ok()?.is_none().then_some(())?;
        let ports = ports_on(&env, &net).await;
        let p = ports.iter().find(|p| p.id.as_str() == first[2].1)?;
        p.device().is_none().then_some(())
    })
    .await;
    env.scale("db", 3).await;
    let again = on_port(&env, "db-2").await;
    assert_eq!((&again.1, &again.2), (&first[2].1, &first[2].2));

    // Deleting the group deletes its ports (whenDeleted: Delete, the default).
    env.api::<VirtualMachineGroup>()
        .delete("db", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("no port of the group is left", LIMIT, || async {
        ports_on(&env, &net).await.is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_taken_address_is_reported_in_neutrons_words_and_an_edited_pair_updates_the_port() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let net = own_network(&env, "db-net").await;
    let vm = |name: &str, ip: &str, vip: &str| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  ports: [{{network: db-net, fixedIPs: [{ip}], allowedAddressPairs: [{{ipAddress: {vip}}}]}}]\n  floatingIP: {{network: public}}\n"
        )
    };
    let _: VirtualMachine = env
        .create_from_yaml(&vm("one", "10.20.0.10", "10.20.0.100"))
        .await;
    let (server, port, ip, _) = on_port(&env, "one").await;
    assert_eq!(ip, "10.20.0.10");
    let api = env.api::<VirtualMachine>();
    let status = api.get("one").await.expect("read").status.expect("status");
    let fip = status.floating_ip.expect("a floating IP is reported");
    let on = |f: &verda_operator::sim::SimFloatingIp| f.port_id.as_deref() == Some(port.as_str());
    assert!(env.sim.floating_ips().iter().any(on), "on the port");

    // Replaced: the new server boots on the port, which keeps the floating IP.
    env.sim.delete_server_out_of_band(&server);
    let kept = eventually("one is back with its floating IP", LIMIT, || async {
        let s = api.get("one").await.ok()?.status?;
        s.server_id.as_ref().filter(|id| **id != server)?;
        is_true(&s.conditions, READY).then_some(s.floating_ip)?
    })
    .await;
    assert_eq!(kept, fip);
    assert_eq!(env.sim.floating_ips().len(), 1, "no second floating IP");

    let _: VirtualMachine = env
        .create_from_yaml(&vm("two", "10.20.0.10", "10.20.0.100"))
        .await;
    let api = env.api::<VirtualMachine>();
    let said = eventually("two reports the address taken", LIMIT, || async {
        let s = api.get("two").await.ok()?.status?;
        let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
        ready
            .message
            .contains("already allocated")
            .then(|| ready.message.clone())
    })
    .await;
    assert!(said.contains("10.20.0.10"), "{said}");
    assert!(env.sim.servers().len() == 1, "nothing else was created");

    // The pair edited in the spec is edited on the port, which stays.
    let pair = json!({"spec": {"ports": [{"network": "db-net", "fixedIPs": ["10.20.0.10"], "allowedAddressPairs": [{"ipAddress": "10.20.0.101"}]}], "floatingIP": {"network": "public"}}});
    api.patch("one", &PatchParams::default(), &Patch::Merge(&pair))
        .await
        .expect("the pair is editable");
    eventually("the port answers for the new VIP", LIMIT, || async {
        let ports = ports_on(&env, &net).await;
        let p = ports.iter().find(|p| p.id.as_str() == port)?;
        (p.allowed_address_pairs.first()?.ip_address == "10.20.0.101").then_some(())
    })
    .await;

    // Deleted: its own port goes with it (networkRetention.whenDeleted: Delete).
    for name in ["two", "one"] {
        api.delete(name, &DeleteParams::default())
            .await
            .expect("deleted");
    }
    eventually("no port and no floating IP is left", LIMIT, || async {
        let none = ports_on(&env, &net).await.is_empty() && env.sim.floating_ips().is_empty();
        none.then_some(())
    })
    .await;
}

/// New replicas' ports are decided on one listing of the project's ports and on the
/// operator's own creates: a fleet on declared ports costs one port create per replica,
/// not a lookup each as well.
#[tokio::test]
async fn new_replicas_on_ports_cost_a_create_each_and_no_lookup_each() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let net = own_network(&env, "db-net").await;
    let before = env.sim.request_counts();
    let yaml = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: web}\nspec:\n  replicas: 6\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    ports: [{network: db-net}]\n";
    let _: VirtualMachineGroup = env.create_from_yaml(yaml).await;
    for i in 0..6 {
        on_port(&env, &format!("web-{i}")).await;
    }
    let calls = calls_since(&env.sim, &before);
    let count = |op: &str| calls.get(op).copied().unwrap_or(0);
    assert_eq!(count("network/create_port"), 6, "{calls:?}");
    assert!(
        count("network/list_ports") <= 2,
        "one listing of the project's ports, not a lookup per replica: {calls:?}"
    );
    assert_eq!(ports_on(&env, &net).await.len(), 6);

    // A replica whose server went behind the operator's back asks Neutron again: the
    // replacement boots on the same port, once Nova let it go.
    let (server, port, _, _) = on_port(&env, "web-3").await;
    env.sim.delete_server_out_of_band(&server);
    eventually("web-3 is back on its port", LIMIT, || async {
        let status = env
            .api::<VirtualMachine>()
            .get("web-3")
            .await
            .ok()?
            .status?;
        let back = status.server_id.as_deref() != Some(server.as_str())
            && is_true(&status.conditions, READY);
        (back && status.ports.first()?.id == port).then_some(())
    })
    .await;
    assert_eq!(ports_on(&env, &net).await.len(), 6, "no port was added");
}

/// `ports[].portID` takes over a port made outside Kubernetes: the server boots on it,
/// it records the owner from then on and goes with the VirtualMachine; a port that is
/// not there, or on another network, is refused in the Ready condition.
#[tokio::test]
async fn a_port_made_outside_is_taken_over_and_a_wrong_one_refused() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let net = own_network(&env, "db-net").await;
    let neutron = env.cloud().network(None);
    let made = neutron
        .create_port(&CreatePort {
            network: NetworkId::new(net.clone()),
            name: "made-by-hand".into(),
            description: "the db VIP".into(),
            ..CreatePort::default()
        })
        .await
        .expect("a port made outside");
    let vm = |name: &str, port: &str| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  ports: [{{network: db-net, portID: {port}}}]\n"
        )
    };
    let _: VirtualMachine = env.create_from_yaml(&vm("adopter", made.id.as_str())).await;
    let (server, port, ip, _) = on_port(&env, "adopter").await;
    assert_eq!(
        port,
        made.id.as_str(),
        "the server boots on the port made outside"
    );
    assert_eq!(ip, made.addresses()[0]);
    let ports = ports_on(&env, &net).await;
    assert_eq!(ports.len(), 1, "no port was created: {ports:?}");
    assert!(
        ports[0].description.starts_with("verda-uid-"),
        "{:?}",
        ports[0]
    );
    assert_eq!(ports[0].device_id, server);

    let api = env.api::<VirtualMachine>();
    let missing = "0b7f7d1e-3c1a-4a5e-9f00-000000000000";
    let _: VirtualMachine = env.create_from_yaml(&vm("missing", missing)).await;
    let said = eventually("missing reports the port not there", LIMIT, || async {
        let s = api.get("missing").await.ok()?.status?;
        let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
        (ready.reason == "ImportNotFound").then(|| ready.message.clone())
    })
    .await;
    assert!(said.contains(missing) && said.contains("portID"), "{said}");
    assert_eq!(env.sim.servers().len(), 1, "nothing else was created");

    // Deleted: the port taken over goes with it (networkRetention.whenDeleted: Delete).
    api.delete("adopter", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("the port taken over is deleted", LIMIT, || async {
        ports_on(&env, &net).await.is_empty().then_some(())
    })
    .await;
}
