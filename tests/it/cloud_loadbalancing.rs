//! Contract tests: the real client's Octavia and Neutron verbs against the simulator.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use std::time::Duration;

use cloud_support::{eventually, harness, while_immutable};
use verda_operator::cloud::ids::{LoadBalancerId, PoolId};
use verda_operator::cloud::model::loadbalancing::*;
use verda_operator::cloud::model::network::{
    CreateFloatingIp, FloatingIpFilter, PortFilter, SubnetFilter,
};
use verda_operator::cloud::owner::{Owner, owner_tag, uid_from_tags};
use verda_operator::cloud::{LoadBalancing, Network};
use verda_operator::sim::SimConfig;

fn owner() -> Owner {
    Owner::new("7a1e2b3c-1111-4000-8000-000000000001", "default", "web")
}

async fn active_lb(h: &cloud_support::Harness, id: &LoadBalancerId) -> LoadBalancer {
    eventually("load balancer ACTIVE", || async {
        let lb = h.client.get_load_balancer(id).await.unwrap();
        (lb.provisioning_status == ProvisioningStatus::Active).then_some(lb)
    })
    .await
}

async fn create_lb(h: &cloud_support::Harness) -> LoadBalancer {
    let subnet = h.client.find_subnet("private-subnet").await.unwrap();
    let flavor = h.client.find_lb_flavor("generic").await.unwrap();
    let req = CreateLoadBalancer {
        name: "verda-default-web".into(),
        description: Some("LoadBalancer default/web".into()),
        vip_subnet_id: Some(subnet.id),
        flavor_id: Some(flavor.id),
        tags: vec![owner().tag()],
        ..CreateLoadBalancer::default()
    };
    let lb = h.client.create_load_balancer(&req).await.unwrap();
    assert_eq!(lb.provisioning_status, ProvisioningStatus::PendingCreate);
    lb
}

#[tokio::test]
async fn load_balancer_tree_is_built_observed_and_cascade_deleted() {
    let h = harness(SimConfig::fast()).await;
    let lb = create_lb(&h).await;
    let lb = active_lb(&h, &lb.id).await;
    assert!(lb.vip_address.is_some() && lb.vip_port_id.is_some());
    let by_owner = LbFilter {
        tags: vec![owner().tag()],
        ..LbFilter::default()
    };
    let listed = h.client.list_load_balancers(&by_owner).await.unwrap();
    assert_eq!(
        listed.iter().map(|l| &l.id).collect::<Vec<_>>(),
        vec![&lb.id]
    );
    assert_eq!(uid_from_tags(&listed[0].tags), Some(owner().uid.as_str()));

    let listener_req = CreateListener {
        loadbalancer_id: lb.id.clone(),
        protocol: Protocol::Http,
        protocol_port: 80,
        name: "verda-default-web-80".into(),
        description: None,
        default_pool_id: None,
        tags: vec![owner().tag()],
        options: Default::default(),
    };
    let (listener, c1) = while_immutable(|| h.client.create_listener(&listener_req)).await;
    let pool_req = CreatePool {
        listener_id: Some(listener.id.clone()),
        loadbalancer_id: None,
        protocol: Protocol::Http,
        lb_algorithm: LbAlgorithm::RoundRobin,
        name: "verda-default-web-80".into(),
        description: None,
        tags: vec![owner().tag()],
        session_persistence: None,
    };
    let (pool, c2) = while_immutable(|| h.client.create_pool(&pool_req)).await;
    let monitor_req = CreateHealthMonitor {
        pool_id: pool.id.clone(),
        kind: MonitorType::Http,
        delay: 5,
        timeout: 3,
        max_retries: 3,
        max_retries_down: Some(3),
        url_path: Some("/healthz".into()),
        expected_codes: Some("200".into()),
        http_method: Some("GET".into()),
        name: "verda-default-web-80".into(),
        tags: vec![],
    };
    let (monitor, c3) = while_immutable(|| h.client.create_health_monitor(&monitor_req)).await;
    let members = vec![
        MemberSpec {
            address: "10.0.0.11".into(),
            protocol_port: 8080,
            monitor_port: Some(8081),
            name: "web-0".into(),
            subnet_id: None,
            weight: None,
            tags: vec![],
        },
        MemberSpec {
            address: "10.0.0.12".into(),
            protocol_port: 8080,
            monitor_port: Some(8081),
            name: "web-1".into(),
            subnet_id: None,
            weight: Some(2),
            tags: vec![],
        },
    ];
    let ((), c4) = while_immutable(|| h.client.replace_members(&pool.id, &members)).await;
    println!(
        "409 immutable answers waited out: listener {c1}, pool {c2}, monitor {c3}, members {c4}"
    );

    active_lb(&h, &lb.id).await;
    let got = h.client.list_members(&pool.id).await.unwrap();
    let mut addrs: Vec<(String, u16, Option<u16>)> = got
        .iter()
        .map(|m| (m.address.clone(), m.protocol_port, m.monitor_port))
        .collect();
    addrs.sort();
    assert_eq!(
        addrs,
        vec![
            ("10.0.0.11".into(), 8080, Some(8081)),
            ("10.0.0.12".into(), 8080, Some(8081))
        ]
    );

    let tree = h.client.get_status_tree(&lb.id).await.unwrap();
    assert_eq!(tree.listeners.len(), 1);
    assert_eq!(tree.listeners[0].pools[0].members.len(), 2);
    assert_eq!(
        tree.listeners[0].pools[0]
            .health_monitor
            .as_ref()
            .map(|m| &m.id),
        Some(&monitor.id)
    );

    let of_lb = LbFilter {
        loadbalancer_id: Some(lb.id.clone()),
        ..LbFilter::default()
    };
    assert_eq!(h.client.list_listeners(&of_lb).await.unwrap().len(), 1);
    assert_eq!(h.client.list_pools(&of_lb).await.unwrap().len(), 1);
    assert_eq!(
        h.client
            .get_listener(&listener.id)
            .await
            .unwrap()
            .protocol_port,
        80
    );
    assert_eq!(
        h.client.get_pool(&pool.id).await.unwrap().lb_algorithm,
        LbAlgorithm::RoundRobin
    );
    assert_eq!(
        h.client
            .get_health_monitor(&monitor.id)
            .await
            .unwrap()
            .url_path
            .as_deref(),
        Some("/healthz")
    );

    let upd = UpdateListener {
        description: Some("port 80".into()),
        ..UpdateListener::default()
    };
    let (l, _) = while_immutable(|| h.client.update_listener(&listener.id, &upd)).await;
    assert_eq!(l.description, "port 80");
    let upd = UpdatePool {
        lb_algorithm: Some(LbAlgorithm::LeastConnections),
        ..UpdatePool::default()
    };
    let (p, _) = while_immutable(|| h.client.update_pool(&pool.id, &upd)).await;
    assert_eq!(p.lb_algorithm, LbAlgorithm::LeastConnections);
    let upd = UpdateHealthMonitor {
        delay: Some(10),
        ..UpdateHealthMonitor::default()
    };
    let (m, _) = while_immutable(|| h.client.update_health_monitor(&monitor.id, &upd)).await;
    assert_eq!(m.delay, 10);

    while_immutable(|| h.client.delete_health_monitor(&monitor.id)).await;
    while_immutable(|| h.client.delete_pool(&pool.id)).await;
    while_immutable(|| h.client.delete_listener(&listener.id)).await;
    while_immutable(|| h.client.delete_load_balancer(&lb.id)).await;
    let gone = eventually("load balancer gone", || async {
        h.client.get_load_balancer(&lb.id).await.err()
    })
    .await;
    assert_eq!(gone.category(), "NotFound");
    assert!(
        h.client
            .list_load_balancers(&by_owner)
            .await
            .unwrap()
            .is_empty()
    );
    h.report("load_balancer_tree");
}

/// LoadBalancers looking for their load balancers at once (a fleet's creates) share
/// calls: the first goes alone, those asked meanwhile go out as one `tags-any` list, and
/// each owner gets exactly its own.
#[tokio::test]
async fn lookups_by_owner_asked_together_share_one_list() {
    let h = harness(SimConfig::fast()).await;
    let subnet = h.client.find_subnet("private-subnet").await.unwrap();
    let owners: Vec<Owner> = (0..6)
        .map(|i| {
            Owner::new(
                format!("7a1e2b3c-2222-4000-8000-00000000000{i}"),
                "default",
                format!("web-{i}"),
            )
        })
        .collect();
    let mut created = Vec::new();
    for owner in &owners[..3] {
        let req = CreateLoadBalancer {
            name: format!("verda-default-{}", owner.uid),
            vip_subnet_id: Some(subnet.id.clone()),
            tags: vec![owner.tag()],
            ..CreateLoadBalancer::default()
        };
        created.push(h.client.create_load_balancer(&req).await.unwrap().id);
    }
    let before = h.calls("load-balancer", "list_load_balancers");
    let found =
        futures::future::join_all(owners.iter().map(|o| h.client.load_balancers_of(&o.uid))).await;
    assert_eq!(h.calls("load-balancer", "list_load_balancers") - before, 2);
    for (i, answer) in found.into_iter().enumerate() {
        let ids: Vec<LoadBalancerId> = answer.unwrap().into_iter().map(|l| l.id).collect();
        let expected: Vec<LoadBalancerId> = created.get(i).cloned().into_iter().collect();
        assert_eq!(
            ids, expected,
            "owner {i} gets exactly its own load balancer"
        );
    }
}

#[tokio::test]
async fn writes_while_pending_answer_an_immutable_conflict_that_is_not_retried() {
    let h = harness(SimConfig {
        lb_delay: Duration::from_millis(400),
        ..SimConfig::fast()
    })
    .await;
    let lb = create_lb(&h).await;
    let err = h
        .client
        .create_listener(&CreateListener {
            loadbalancer_id: lb.id.clone(),
            protocol: Protocol::Tcp,
            protocol_port: 443,
            name: "early".into(),
            description: None,
            default_pool_id: None,
            tags: vec![],
            options: Default::default(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.category(), "Conflict");
    assert!(err.is_immutable() && !err.is_terminal(), "{err}");
    assert!(err.to_string().contains("is immutable"), "{err}");
    assert_eq!(
        h.calls("load-balancer", "create_listener"),
        1,
        "a 409 goes back to the controller"
    );

    active_lb(&h, &lb.id).await;
    h.client.delete_load_balancer(&lb.id).await.unwrap();
    let again = h.client.delete_load_balancer(&lb.id).await.unwrap_err();
    assert_eq!(
        again.category(),
        "Conflict",
        "a second delete while PENDING_DELETE: {again}"
    );
    h.report("pending_conflict");
}

#[tokio::test]
async fn floating_ip_is_allocated_associated_with_the_vip_port_and_released() {
    let h = harness(SimConfig::fast()).await;
    let networks = h.client.list_networks(None).await.unwrap();
    assert!(networks.iter().any(|n| n.name == "private"));
    let public = h.client.find_network("public").await.unwrap();
    assert!(public.external);
    assert_eq!(
        h.client.get_network(&public.id).await.unwrap().name,
        "public"
    );
    let private = h
        .client
        .find_network("89908bff-e0fe-45be-b92d-5828f5ddc763")
        .await
        .unwrap();
    assert_eq!(private.name, "private");
    let subnets = h
        .client
        .list_subnets(&SubnetFilter {
            network_id: Some(private.id.clone()),
            ..SubnetFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(subnets.len(), 1);
    assert_eq!(
        h.client.get_subnet(&subnets[0].id).await.unwrap().name,
        "private-subnet"
    );
    assert_eq!(
        h.client.find_subnet("nope").await.unwrap_err().category(),
        "SubnetNotFound"
    );
    assert_eq!(
        h.client.find_network("nope").await.unwrap_err().category(),
        "NetworkNotFound"
    );

    let lb = create_lb(&h).await;
    let lb = active_lb(&h, &lb.id).await;
    let vip_port = lb.vip_port_id.clone().unwrap();
    let ports = h
        .client
        .list_ports(&PortFilter {
            network_id: lb.vip_network_id.clone(),
            ..PortFilter::default()
        })
        .await
        .unwrap();
    assert!(
        ports.iter().any(|p| p.id == vip_port),
        "the VIP port is a Neutron port"
    );

    let description = owner_tag(&owner().uid);
    let fip = h
        .client
        .create_floating_ip(&CreateFloatingIp {
            floating_network: public.id.clone(),
            port: None,
            description: Some(description.clone()),
        })
        .await
        .unwrap();
    assert_eq!(fip.port_id, None);
    let found = h
        .client
        .list_floating_ips(&FloatingIpFilter {
            description: Some(description),
            ..FloatingIpFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(
        found.iter().map(|f| &f.id).collect::<Vec<_>>(),
        vec![&fip.id]
    );

    let associated = h
        .client
        .update_floating_ip(&fip.id, Some(&vip_port))
        .await
        .unwrap();
    assert_eq!(associated.port_id.as_ref(), Some(&vip_port));
    assert_eq!(associated.fixed_ip_address, lb.vip_address);
    let by_port = h
        .client
        .list_floating_ips(&FloatingIpFilter {
            port_id: Some(vip_port.clone()),
            ..FloatingIpFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(by_port.len(), 1);
    let released = h.client.update_floating_ip(&fip.id, None).await.unwrap();
    assert_eq!(released.port_id, None);
    assert_eq!(
        h.client
            .get_floating_ip(&fip.id)
            .await
            .unwrap()
            .floating_ip_address,
        fip.floating_ip_address
    );

    h.client.delete_floating_ip(&fip.id).await.unwrap();
    let gone = h.client.get_floating_ip(&fip.id).await.unwrap_err();
    assert_eq!(gone.category(), "NotFound");
    assert!(gone.to_string().contains("could not be found"), "{gone}");
    h.report("floating_ip");
}

#[tokio::test]
async fn octavia_flavors_are_listed_and_found_by_name_or_id() {
    let h = harness(SimConfig::fast()).await;
    let flavors = h.client.list_lb_flavors().await.unwrap();
    assert!(flavors.iter().any(|f| f.name == "ha"));
    let ha = h.client.find_lb_flavor("ha").await.unwrap();
    assert_eq!(
        h.client.find_lb_flavor(ha.id.as_str()).await.unwrap().name,
        "ha"
    );
    assert_eq!(
        h.client.find_lb_flavor("xl").await.unwrap_err().category(),
        "LoadBalancerFlavorNotFound"
    );
    h.report("lb_flavors");
}

/// A port's listener tree as the operator sends it in a fully populated create.
fn listener_tree(port: u16, monitor: MonitorType, members: &[&str]) -> ListenerTree {
    let name = format!("verda-default-web-{port}");
    ListenerTree {
        listener: CreateListener {
            loadbalancer_id: LoadBalancerId::default(),
            protocol: Protocol::Http,
            protocol_port: port,
            name: name.clone(),
            description: None,
            default_pool_id: None,
            tags: vec![owner().tag()],
            options: Default::default(),
        },
        pool: CreatePool {
            listener_id: None,
            loadbalancer_id: None,
            protocol: Protocol::Http,
            lb_algorithm: LbAlgorithm::RoundRobin,
            name: name.clone(),
            description: None,
            tags: vec![owner().tag()],
            session_persistence: None,
        },
        members: members
            .iter()
            .map(|a| MemberSpec {
                address: (*a).to_owned(),
                protocol_port: 8080,
                monitor_port: None,
                name: format!("vm-{a}"),
                subnet_id: None,
                weight: None,
                tags: vec![owner().tag()],
            })
            .collect(),
        monitor: Some(CreateHealthMonitor {
            pool_id: PoolId::default(),
            kind: monitor,
            delay: 5,
            timeout: 3,
            max_retries: 3,
            max_retries_down: None,
            url_path: Some("/health".into()),
            expected_codes: Some("200".into()),
            http_method: None,
            name,
            tags: vec![owner().tag()],
        }),
    }
}

#[tokio::test]
async fn a_fully_populated_create_builds_the_whole_tree_in_one_provisioning_cycle() {
    let h = harness(SimConfig::fast()).await;
    let subnet = h.client.find_subnet("private-subnet").await.unwrap();
    let req = CreateLoadBalancer {
        name: "verda-default-web".into(),
        vip_subnet_id: Some(subnet.id.clone()),
        tags: vec![owner().tag()],
        listeners: vec![
            listener_tree(80, MonitorType::Http, &["10.0.0.11", "10.0.0.12"]),
            listener_tree(443, MonitorType::TlsHello, &[]),
        ],
        ..CreateLoadBalancer::default()
    };
    let lb = h.client.create_load_balancer(&req).await.unwrap();
    assert_eq!(h.sim.requests("load-balancer", "create_load_balancer"), 1);
    let lb = active_lb(&h, &lb.id).await;
    let by_lb = LbFilter {
        loadbalancer_id: Some(lb.id.clone()),
        ..LbFilter::default()
    };
    let listeners = h.client.list_listeners(&by_lb).await.unwrap();
    let pools = h.client.list_pools(&by_lb).await.unwrap();
    assert_eq!(listeners.len(), 2);
    assert_eq!(pools.len(), 2);
    for listener in &listeners {
        assert_eq!(listener.provisioning_status, ProvisioningStatus::Active);
        let pool = pools
            .iter()
            .find(|p| Some(&p.id) == listener.default_pool_id.as_ref())
            .expect("the listener's default pool");
        assert_eq!(pool.provisioning_status, ProvisioningStatus::Active);
        let monitor = h
            .client
            .get_health_monitor(pool.healthmonitor_id.as_ref().expect("a monitor"))
            .await
            .unwrap();
        let members = h.client.list_members(&pool.id).await.unwrap();
        if listener.protocol_port == 80 {
            assert_eq!(monitor.kind, MonitorType::Http);
            let mut addresses: Vec<_> = members.iter().map(|m| m.address.as_str()).collect();
            addresses.sort_unstable();
            assert_eq!(addresses, ["10.0.0.11", "10.0.0.12"]);
        } else {
            assert_eq!(monitor.kind, MonitorType::TlsHello);
            assert!(members.is_empty());
        }
    }

    // Octavia refuses the graph whole: a bad monitor leaves nothing behind.
    let mut bad = req.clone();
    bad.name = "verda-default-bad".into();
    if let Some(m) = bad.listeners[0].monitor.as_mut() {
        m.max_retries = 11;
    }
    let err = h.client.create_load_balancer(&bad).await.unwrap_err();
    assert_eq!(err.category(), "BadRequest", "{err}");
    let named = LbFilter {
        name: Some("verda-default-bad".into()),
        ..LbFilter::default()
    };
    assert!(
        h.client
            .list_load_balancers(&named)
            .await
            .unwrap()
            .is_empty()
    );
}
