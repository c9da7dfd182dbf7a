use verda_api::v1alpha1::{AddressPair as SpecPair, PortSpec, VirtualMachine, VirtualMachineSpec};

use super::*;
use crate::cloud::ids::NetworkId;
use crate::cloud::model::network::FixedIp;

fn vm(ports: Vec<PortSpec>) -> VirtualMachine {
    VirtualMachine::new(
        "db-0",
        VirtualMachineSpec {
            image: "img".into(),
            flavor: "small".into(),
            ports: Some(ports),
            ..VirtualMachineSpec::default()
        },
    )
}

fn port(id: &str, device: &str, ip: &str) -> Port {
    Port {
        id: PortId::new(id),
        name: String::new(),
        network_id: NetworkId::new("net-1"),
        device_id: device.into(),
        device_owner: String::new(),
        fixed_ips: vec![FixedIp {
            subnet_id: crate::cloud::ids::SubnetId::new("sub"),
            ip_address: ip.into(),
        }],
        status: String::new(),
        description: "verda-uid-g-0 verda-cluster-c".into(),
        mac_address: "fa:16:3e:00:00:01".into(),
        allowed_address_pairs: Vec::new(),
        security_groups: Vec::new(),
    }
}

fn look(found: Vec<Port>) -> Look {
    Look {
        record: "verda-uid-g-0 verda-cluster-c".into(),
        networks: vec![NetworkId::new("net-1")],
        groups: vec![None],
        found,
        floating: None,
    }
}

fn private(ips: Option<Vec<&str>>) -> PortSpec {
    PortSpec {
        network: "private".into(),
        fixed_ips: ips.map(|v| v.into_iter().map(String::from).collect()),
        ..PortSpec::default()
    }
}

#[test]
fn a_missing_port_is_created_before_the_server_with_the_owner_record_and_address() {
    let vm = vm(vec![private(Some(vec!["10.0.0.50"]))]);
    let Some(PortStep::Create(request)) = before_server(&vm, &look(vec![]), None) else {
        panic!("expected a create");
    };
    assert_eq!(request.name, "db-0-private");
    assert_eq!(request.description, "verda-uid-g-0 verda-cluster-c");
    assert_eq!(request.fixed_ips, vec!["10.0.0.50".to_owned()]);
    assert_eq!(request.network, NetworkId::new("net-1"));
}

#[test]
fn a_port_still_bound_to_another_server_is_held_by_it_then_booted_on() {
    let vm = vm(vec![private(None)]);
    let bound = look(vec![port("p1", "old-server", "10.0.0.50")]);
    assert_eq!(
        before_server(&vm, &bound, None),
        Some(PortStep::Held {
            id: PortId::new("p1"),
            holder: ServerId::new("old-server")
        })
    );
    let free = look(vec![port("p1", "", "10.0.0.50")]);
    assert_eq!(before_server(&vm, &free, None), None);
    assert_eq!(free.boot_ports(1), Some(vec![PortId::new("p1")]));
    // While the new server builds on it, nothing is missing.
    let building = look(vec![port("p1", "new", "10.0.0.50")]);
    assert_eq!(before_server(&vm, &building, Some("new")), None);
}

#[test]
fn a_second_unbound_port_from_a_crash_is_deleted_the_bound_one_kept() {
    let vm = vm(vec![private(None)]);
    let twice = look(vec![
        port("p2", "", "10.0.0.7"),
        port("p1", "srv", "10.0.0.6"),
    ]);
    assert_eq!(
        with_server(&vm, &twice, "srv"),
        Some(PortStep::DeleteDuplicate(PortId::new("p2")))
    );
}

#[test]
fn an_edited_address_pair_updates_the_port_in_place() {
    let mut spec = private(None);
    spec.allowed_address_pairs = Some(vec![SpecPair {
        ip_address: "10.0.0.100".into(),
        mac_address: None,
    }]);
    let vm = vm(vec![spec]);
    let found = look(vec![port("p1", "srv", "10.0.0.6")]);
    let Some(PortStep::Update { id, pairs, groups }) = with_server(&vm, &found, "srv") else {
        panic!("expected an update");
    };
    assert_eq!(id, PortId::new("p1"));
    assert_eq!(groups, None);
    let pairs = pairs.expect("pairs change");
    assert_eq!(pairs[0].ip_address, "10.0.0.100");
    assert_eq!(pairs[0].mac_address.as_deref(), Some("fa:16:3e:00:00:01"));
    // As Neutron answers it (the pair with the port's MAC), nothing more is due.
    let mut done = port("p1", "srv", "10.0.0.6");
    done.allowed_address_pairs = pairs;
    assert_eq!(with_server(&vm, &look(vec![done]), "srv"), None);
}

#[test]
fn security_groups_that_differ_from_the_resolved_ones_are_set() {
    let vm = vm(vec![private(None)]);
    let mut found = look(vec![port("p1", "srv", "10.0.0.6")]);
    found.groups = vec![Some(vec!["sg-web".into()])];
    assert!(matches!(
        with_server(&vm, &found, "srv"),
        Some(PortStep::Update { groups: Some(g), pairs: None, .. }) if g == vec!["sg-web".to_owned()]
    ));
}

#[test]
fn a_floating_ip_is_allocated_on_the_first_port_and_put_back_on_it() {
    use crate::cloud::model::network::FloatingIp;
    use crate::controllers::virtual_machine::network_ports::floating::{Floating, FloatingStep};
    let vm = vm(vec![private(None)]);
    let mut found = look(vec![port("p1", "", "10.0.0.6")]);
    found.floating = Some(Floating {
        network: NetworkId::new("public"),
        found: Vec::new(),
    });
    let Some(PortStep::Floating(FloatingStep::Create(request))) = before_server(&vm, &found, None)
    else {
        panic!("expected an allocation");
    };
    assert_eq!(request.port, Some(PortId::new("p1")));
    assert_eq!(
        request.description.as_deref(),
        Some("verda-uid-g-0 verda-cluster-c")
    );
    let fip = |id: &str, port: Option<&str>| FloatingIp {
        id: id.into(),
        floating_ip_address: "203.0.113.7".into(),
        floating_network_id: NetworkId::new("public"),
        port_id: port.map(PortId::new),
        fixed_ip_address: None,
        status: String::new(),
        description: String::new(),
    };
    // Taken off its port outside Kubernetes: put back; a crash's second one released.
    found.floating.as_mut().expect("floating").found = vec![fip("f1", None)];
    assert!(matches!(
        before_server(&vm, &found, None),
        Some(PortStep::Floating(FloatingStep::Associate(id, port))) if id.as_str() == "f1" && port.as_str() == "p1"
    ));
    found.floating.as_mut().expect("floating").found = vec![fip("f2", None), fip("f1", Some("p1"))];
    assert!(matches!(
        before_server(&vm, &found, None),
        Some(PortStep::Floating(FloatingStep::DeleteDuplicate(id))) if id.as_str() == "f2"
    ));
    found.floating.as_mut().expect("floating").found = vec![fip("f1", Some("p1"))];
    assert_eq!(before_server(&vm, &found, None), None);
}
