use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::caches::cloud_view::OctaviaTree;

const REPLACE: Duration = Duration::from_secs(30);

fn published() -> LoadBalancer {
    serde_saphyr::from_str(
        r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {name: web, namespace: default, uid: u-1}
spec:
  vipType: private
  ports:
    - port: 80
      protocol: http
      realServers: {protocol: http, port: 8080, virtualMachineGroupRef: web}
      monitors:
        - {protocol: http, endpoint: /health}
"#,
    )
    .expect("fixture is a LoadBalancer")
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid time")
}

fn os_lb(id: &str, status: &str) -> serde_json::Value {
    json!({"id": id, "provisioning_status": status, "operating_status": "ONLINE",
           "vip_address": "10.0.0.2", "vip_port_id": "vip-port"})
}

/// An ACTIVE tree for `published()` with `members` in the pool.
fn tree(members: &[(&str, &str)]) -> OctaviaTree {
    let members = members
        .iter()
        .map(|(name, address)| {
            serde_json::from_value(json!({"id": format!("m-{name}"), "name": name, "address": address,
                "protocol_port": 8080, "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}))
            .expect("member")
        })
        .collect();
    OctaviaTree {
        load_balancers: vec![serde_json::from_value(os_lb("lb-1", "ACTIVE")).expect("lb")],
        listeners: vec![
            serde_json::from_value(json!({"id": "l-80", "protocol": "HTTP", "protocol_port": 80,
                "provisioning_status": "ACTIVE", "operating_status": "ONLINE", "default_pool_id": "p-80"}))
            .expect("listener"),
        ],
        pools: vec![
            serde_json::from_value(json!({"id": "p-80", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                "provisioning_status": "ACTIVE", "operating_status": "ONLINE", "healthmonitor_id": "hm-80"}))
            .expect("pool"),
        ],
        monitors: vec![
            serde_json::from_value(json!({"id": "hm-80", "type": "HTTP", "delay": 5, "timeout": 3,
                "max_retries": 3, "url_path": "/health", "expected_codes": "200",
                "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}))
            .expect("monitor"),
        ],
        members: [("p-80".to_owned(), members)].into(),
        floating_ips: vec![],
    }
}

fn backend(name: &str, address: &str) -> Backend {
    Backend {
        name: name.into(),
        address: address.into(),
        weight: None,
    }
}

/// The published port's monitor: HTTP on `/health`, checked every `delay` seconds.
fn health(delay: u32) -> desired::MonitorSettings {
    desired::MonitorSettings {
        kind: crate::cloud::model::loadbalancing::MonitorType::Http,
        delay,
        timeout: 3,
        max_retries: 3,
        url_path: Some("/health".into()),
        expected_codes: Some("200".into()),
        max_retries_down: 3,
        http_method: Some(verda_api::v1alpha1::HttpMethod::Get),
    }
}

/// A member serving the published port (8080; the monitor checks the same port).
fn member(name: &str, address: &str) -> crate::cloud::model::loadbalancing::MemberSpec {
    crate::cloud::model::loadbalancing::MemberSpec {
        address: address.into(),
        protocol_port: 8080,
        monitor_port: None,
        name: name.into(),
        subnet_id: None,
        weight: None,
        tags: vec![],
    }
}

fn plan_for(lb: &LoadBalancer, observed: &OctaviaTree, backends: &[Backend]) -> Step {
    plan(lb, observed, &[backends.to_vec()], REPLACE, at(0))
}

#[test]
fn nothing_found_means_create_and_a_duplicate_is_deleted() {
    let lb = published();
    assert_eq!(
        plan_for(&lb, &OctaviaTree::default(), &[]),
        Step::Create(vec![Vec::new(); lb.spec.ports.len()])
    );
    let mut observed = tree(&[]);
    observed
        .load_balancers
        .push(serde_json::from_value(os_lb("lb-2", "ACTIVE")).expect("lb"));
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::DeleteDuplicates(vec![LoadBalancerId::new("lb-2")])
    );
}

#[test]
fn a_create_carries_the_members_already_serving() {
    let lb = published();
    let serving = [backend("web-0", "10.0.0.10"), backend("web-1", "10.0.0.11")];
    assert_eq!(
        plan_for(&lb, &OctaviaTree::default(), &serving),
        Step::Create(vec![vec![
            member("web-0", "10.0.0.10"),
            member("web-1", "10.0.0.11")
        ]])
    );
}

#[test]
fn a_busy_load_balancer_is_waited_for() {
    let mut observed = tree(&[]);
    observed.load_balancers[0].provisioning_status = ProvisioningStatus::PendingUpdate;
    assert_eq!(
        plan_for(&published(), &observed, &[]),
        Step::Wait(ProvisioningStatus::PendingUpdate)
    );
}

#[test]
fn the_tree_is_built_listener_then_pool_then_monitor() {
    let lb = published();
    let mut observed = tree(&[]);
    observed.monitors.clear();
    observed.pools[0].healthmonitor_id = None;
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::CreateMonitor(0, PoolId::new("p-80"), health(5))
    );
    observed.pools.clear();
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::CreatePool(0, ListenerId::new("l-80"))
    );
    observed.listeners.clear();
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::CreateListener(0, LoadBalancerId::new("lb-1"))
    );
}

#[test]
fn members_follow_the_backends_in_one_batch_and_converge() {
    let lb = published();
    let two = [backend("web-0", "10.0.0.10"), backend("web-1", "10.0.0.11")];
    let observed = tree(&[("web-0", "10.0.0.10")]);
    assert_eq!(
        plan_for(&lb, &observed, &two),
        Step::ReplaceMembers(
            0,
            PoolId::new("p-80"),
            vec![member("web-0", "10.0.0.10"), member("web-1", "10.0.0.11")]
        )
    );
    let observed = tree(&[("web-1", "10.0.0.11"), ("web-0", "10.0.0.10")]);
    assert_eq!(plan_for(&lb, &observed, &two), Step::Converged);
}

/// `tree(members)` with the listener and pool as Octavia shows them with its defaults.
fn shown_with_defaults(members: &[(&str, &str)]) -> OctaviaTree {
    let mut observed = tree(members);
    observed.listeners[0] = serde_json::from_value(json!({"id": "l-80", "protocol": "HTTP",
        "protocol_port": 80, "provisioning_status": "ACTIVE", "operating_status": "ONLINE",
        "default_pool_id": "p-80", "connection_limit": -1, "timeout_client_data": 50000,
        "timeout_member_connect": 5000, "timeout_member_data": 50000, "timeout_tcp_inspect": 0,
        "allowed_cidrs": null, "insert_headers": {}}))
    .expect("listener");
    observed.pools[0] = serde_json::from_value(json!({"id": "p-80", "protocol": "HTTP",
        "lb_algorithm": "ROUND_ROBIN", "session_persistence": null, "provisioning_status": "ACTIVE",
        "operating_status": "ONLINE", "healthmonitor_id": "hm-80"}))
    .expect("pool");
    observed
}

#[test]
fn octavias_defaults_match_a_port_that_sets_no_option() {
    let lb = published();
    assert_eq!(
        plan_for(&lb, &shown_with_defaults(&[]), &[]),
        Step::Converged
    );
}

#[test]
fn a_listener_option_changed_is_one_update_with_every_setting() {
    let mut lb = published();
    lb.spec.ports[0].timeouts = Some(verda_api::v1alpha1::ListenerTimeouts {
        client_data: Some("1m30s".into()),
        ..Default::default()
    });
    lb.spec.ports[0].allowed_cidrs = Some(vec!["10.0.0.0/8".into()]);
    let observed = shown_with_defaults(&[]);
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::UpdateListener(0, ListenerId::new("l-80"))
    );
    let update = desired::update_listener(&lb.spec.ports[0], &[]);
    let wire = serde_json::to_value(&update).expect("serializes");
    assert_eq!(
        wire,
        json!({"connection_limit": -1, "timeout_client_data": 90000,
            "timeout_member_connect": 5000, "timeout_member_data": 50000,
            "timeout_tcp_inspect": 0, "allowed_cidrs": ["10.0.0.0/8"], "insert_headers": {}})
    );
    // A setting taken out again goes back to Octavia's default, in the same way.
    let mut updated = observed.clone();
    updated.listeners[0].options = update.options;
    assert_eq!(plan_for(&lb, &updated, &[]), Step::Converged);
    lb.spec.ports[0].allowed_cidrs = None;
    assert_eq!(
        plan_for(&lb, &updated, &[]),
        Step::UpdateListener(0, ListenerId::new("l-80"))
    );
}

#[test]
fn an_algorithm_or_persistence_change_updates_the_pool_in_place() {
    let mut lb = published();
    lb.spec.ports[0].real_servers.session_persistence =
        Some(verda_api::v1alpha1::SessionPersistence {
            kind: verda_api::v1alpha1::PersistenceType::AppCookie,
            cookie_name: Some("sid".into()),
        });
    assert_eq!(
        plan_for(&lb, &shown_with_defaults(&[]), &[]),
        Step::UpdatePool(0, PoolId::new("p-80"))
    );
    let wire = serde_json::to_value(desired::update_pool(&lb.spec.ports[0])).expect("json");
    assert_eq!(
        wire,
        json!({"lb_algorithm": "ROUND_ROBIN",
            "session_persistence": {"type": "APP_COOKIE", "cookie_name": "sid"}})
    );
    lb.spec.ports[0].real_servers.session_persistence = None;
    let wire = serde_json::to_value(desired::update_pool(&lb.spec.ports[0])).expect("json");
    assert_eq!(wire["session_persistence"], serde_json::Value::Null);
}

#[test]
fn a_weight_change_rewrites_the_members_in_one_batch() {
    let lb = published();
    let weighted = |weight| Backend {
        weight,
        ..backend("web-0", "10.0.0.10")
    };
    // Members made without a weight have Octavia's, 1.
    let observed = tree(&[("web-0", "10.0.0.10")]);
    assert_eq!(
        plan_for(&lb, &observed, &[weighted(Some(1))]),
        Step::Converged
    );
    let step = plan_for(&lb, &observed, &[weighted(Some(0))]);
    let Step::ReplaceMembers(0, _, members) = step else {
        panic!("expected a member batch, got {step:?}");
    };
    assert_eq!(members[0].weight, Some(0));
}

#[test]
fn a_monitor_change_updates_in_place_unless_its_type_changed() {
    let mut lb = published();
    lb.spec.ports[0].monitors[0].delay_seconds = Some(10);
    assert_eq!(
        plan_for(&lb, &tree(&[]), &[]),
        Step::UpdateMonitor(0, HealthMonitorId::new("hm-80"), health(10))
    );
    lb.spec.ports[0].monitors[0].protocol = verda_api::v1alpha1::MonitorProtocol::Tcp;
    lb.spec.ports[0].monitors[0].endpoint = None;
    assert_eq!(
        plan_for(&lb, &tree(&[]), &[]),
        Step::DeleteMonitor(HealthMonitorId::new("hm-80"))
    );
}

#[test]
fn a_port_removed_from_the_spec_loses_its_pool_then_its_listener() {
    let mut lb = published();
    let mut observed = tree(&[]);
    lb.spec.ports[0].port = 8000;
    lb.spec.ports[0].monitors.clear();
    observed.listeners.push(
        serde_json::from_value(json!({"id": "l-8000", "protocol": "HTTP", "protocol_port": 8000,
            "provisioning_status": "ACTIVE", "operating_status": "ONLINE", "default_pool_id": "p-8000"}))
        .expect("listener"),
    );
    observed.pools.push(
        serde_json::from_value(
            json!({"id": "p-8000", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
            "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}),
        )
        .expect("pool"),
    );
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::DeletePool(PoolId::new("p-80"))
    );
    observed.pools.retain(|p| p.id.as_str() != "p-80");
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::DeleteListener(ListenerId::new("l-80"))
    );
}

#[test]
fn an_errored_load_balancer_is_reported_then_replaced_after_the_delay() {
    let mut lb = published();
    let mut observed = tree(&[]);
    observed.load_balancers[0].provisioning_status = ProvisioningStatus::Error;
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::ReportError {
            first: true,
            retry_in: REPLACE
        }
    );
    lb.status = Some(verda_api::v1alpha1::LoadBalancerStatus {
        load_balancer_id: Some("lb-1".into()),
        error_since: Some(Time(at(-10))),
        ..Default::default()
    });
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::ReportError {
            first: false,
            retry_in: Duration::from_secs(20)
        }
    );
    let due = plan(&lb, &observed, &[vec![]], REPLACE, at(25));
    assert_eq!(due, Step::ReplaceErrored(LoadBalancerId::new("lb-1")));
}

#[test]
fn a_public_vip_gets_one_floating_ip_on_the_vip_port() {
    let mut lb = published();
    lb.spec.vip_type = VipType::Public;
    let mut observed = tree(&[]);
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::CreateFloatingIp(PortId::new("vip-port"))
    );
    let fip = |id: &str, port: Option<&str>| {
        serde_json::from_value(json!({"id": id, "floating_ip_address": "203.0.113.7",
            "floating_network_id": "public", "port_id": port}))
        .expect("floating IP")
    };
    observed.floating_ips = vec![fip("f-1", None)];
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::AssociateFloatingIp(FloatingIpId::new("f-1"), PortId::new("vip-port"))
    );
    observed.floating_ips = vec![fip("f-1", None), fip("f-2", Some("vip-port"))];
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::DeleteFloatingIp(FloatingIpId::new("f-1"))
    );
    observed.floating_ips = vec![fip("f-2", Some("vip-port"))];
    assert_eq!(plan_for(&lb, &observed, &[]), Step::Converged);
    lb.spec.vip_type = VipType::Private;
    assert_eq!(
        plan_for(&lb, &observed, &[]),
        Step::DeleteFloatingIp(FloatingIpId::new("f-2"))
    );
}

#[test]
fn additions_wait_for_the_groups_starting_virtual_machines_but_removals_do_not() {
    let lb = published();
    let two = [backend("web-0", "10.0.0.10"), backend("web-1", "10.0.0.11")];
    let one = tree(&[("web-0", "10.0.0.10")]);
    let holding = |observed: &OctaviaTree, backends: &[Backend], starting: usize| {
        let certificates = Certificates::default();
        let facts = Facts {
            tree: observed,
            backends: &[backends.to_vec()],
            starting: &[starting],
            certificates: &certificates,
        };
        plan_holding(&lb, &facts, REPLACE, at(0))
    };
    assert_eq!(holding(&one, &two, 3), Step::HoldMembers(3));
    assert!(matches!(holding(&one, &two, 0), Step::ReplaceMembers(..)));
    // web-1 leaves: written at once, however many are starting.
    let both = tree(&[("web-0", "10.0.0.10"), ("web-1", "10.0.0.11")]);
    assert_eq!(
        holding(&both, &two[..1], 3),
        Step::ReplaceMembers(0, PoolId::new("p-80"), vec![member("web-0", "10.0.0.10")])
    );
    assert_eq!(holding(&both, &two, 3), Step::Converged);
    // No load balancer yet: the create waits for them too, then carries every member.
    let none = OctaviaTree::default();
    assert_eq!(holding(&none, &two[..1], 1), Step::HoldCreate(1));
    assert_eq!(
        holding(&none, &two, 0),
        Step::Create(vec![vec![
            member("web-0", "10.0.0.10"),
            member("web-1", "10.0.0.11")
        ]])
    );
}

#[test]
fn holding_and_converged_are_settled_and_write_nothing() {
    for step in [Step::HoldMembers(1), Step::HoldCreate(1), Step::Converged] {
        assert!(step.settled() && !step.writes(), "{step:?}");
    }
    let write = Step::ReplaceMembers(0, PoolId::new("p-80"), vec![]);
    assert!(write.writes() && !write.settled());
    assert!(!Step::Wait(ProvisioningStatus::PendingUpdate).writes());
}

#[test]
fn a_converged_load_balancer_missing_an_owner_tag_gets_it_added_to_its_own() {
    let lb = published();
    let mut observed = tree(&[("web-0", "10.0.0.5")]);
    observed.load_balancers[0].tags = vec!["verda-uid-u-1".into(), "team:web".into()];
    let wanted = ["verda-uid-u-1".to_owned(), "verda-managed".to_owned()];
    let step = plan_for(&lb, &observed, &[backend("web-0", "10.0.0.5")]);
    assert_eq!(step, Step::Converged);
    assert_eq!(
        recording_owner(step, &lb, &observed, &wanted),
        Step::RecordOwner(
            "lb-1".into(),
            vec![
                "verda-uid-u-1".into(),
                "team:web".into(),
                "verda-managed".into()
            ]
        )
    );
    // Not while anything else is to be done, and not once recorded.
    let busy = Step::Wait(ProvisioningStatus::PendingUpdate);
    assert_eq!(recording_owner(busy.clone(), &lb, &observed, &wanted), busy);
    observed.load_balancers[0].tags.push("verda-managed".into());
    assert_eq!(
        recording_owner(Step::Converged, &lb, &observed, &wanted),
        Step::Converged
    );
}

/// The published LoadBalancer terminating TLS on its port with Secret `web-tls`.
fn terminating() -> LoadBalancer {
    let mut lb = published();
    let port = &mut lb.spec.ports[0];
    port.protocol = verda_api::v1alpha1::Protocol::TerminatedHttps;
    port.tls = Some(verda_api::v1alpha1::ListenerTls {
        secret_name: "web-tls".into(),
        sni_secret_names: None,
    });
    lb
}

/// What `web-tls` holds, wanted under the Barbican name `name`.
fn wanted(name: &str) -> Wanted {
    let crt = include_bytes!("../../../tests/fixtures/tls/web.crt");
    let key = include_bytes!("../../../tests/fixtures/tls/web.key");
    let bundle = crate::tls_bundle::bundle(crt, key, chrono::Utc::now()).expect("fixture");
    Wanted {
        secret: "web-tls".into(),
        name: name.into(),
        bundle: std::sync::Arc::new(bundle),
    }
}

fn secret(name: &str, href: &str) -> StoredSecret {
    StoredSecret {
        secret_ref: href.into(),
        name: Some(name.into()),
    }
}

/// `tree` with its listener terminating TLS with the certificate at `href`.
fn serving(href: &str) -> OctaviaTree {
    let mut observed = tree(&[]);
    let listener = &mut observed.listeners[0];
    listener.protocol = crate::cloud::model::loadbalancing::Protocol::TerminatedHttps;
    listener.options.default_tls_container_ref = Some(href.into());
    listener.options.sni_container_refs = Some(vec![]);
    observed
}

fn plan_tls(observed: &OctaviaTree, certificates: &Certificates) -> Step {
    let facts = Facts {
        tree: observed,
        backends: &[vec![]],
        starting: &[],
        certificates,
    };
    plan_holding(&terminating(), &facts, REPLACE, at(0))
}

#[test]
fn a_certificate_is_stored_before_the_load_balancer_that_serves_it_is_made() {
    let mut certificates = Certificates {
        ports: vec![vec![wanted("verda-lb-u-1-aaaa")]],
        stored: Some(vec![]),
    };
    let nothing = OctaviaTree::default();
    assert_eq!(
        plan_tls(&nothing, &certificates),
        Step::StoreCertificate(wanted("verda-lb-u-1-aaaa"))
    );
    // Found by its name (stored before a crash, say): never stored twice.
    certificates.stored = Some(vec![secret("verda-lb-u-1-aaaa", "https://kms/s-1")]);
    assert!(matches!(plan_tls(&nothing, &certificates), Step::Create(_)));
    assert_eq!(
        certificates.refs(0),
        Some(vec!["https://kms/s-1".to_owned()])
    );
}

#[test]
fn a_renewal_switches_the_listener_before_the_old_secret_is_deleted() {
    let old = secret("verda-lb-u-1-aaaa", "https://kms/s-old");
    let new = secret("verda-lb-u-1-bbbb", "https://kms/s-new");
    let certificates = Certificates {
        ports: vec![vec![wanted("verda-lb-u-1-bbbb")]],
        stored: Some(vec![old.clone(), new.clone()]),
    };
    // Still serving the old one: switch first; the old one is held, so it stays.
    assert_eq!(
        plan_tls(&serving("https://kms/s-old"), &certificates),
        Step::UpdateListener(0, crate::cloud::ids::ListenerId::new("l-80"))
    );
    let update =
        desired::update_listener(&terminating().spec.ports[0], &["https://kms/s-new".into()]);
    assert_eq!(
        update.options.default_tls_container_ref.as_deref(),
        Some("https://kms/s-new")
    );
    assert_eq!(update.options.sni_container_refs, Some(vec![]));
    // Switched: now the old one goes, and then nothing is left to do.
    let switched = serving("https://kms/s-new");
    assert_eq!(
        plan_tls(&switched, &certificates),
        Step::DeleteCertificate(old)
    );
    let done = Certificates {
        stored: Some(vec![new]),
        ..certificates
    };
    assert_eq!(plan_tls(&switched, &done), Step::Converged);
}

#[test]
fn of_two_secrets_with_one_name_the_one_not_served_is_deleted() {
    let first = secret("verda-lb-u-1-aaaa", "https://kms/s-1");
    let second = secret("verda-lb-u-1-aaaa", "https://kms/s-2");
    let certificates = Certificates {
        ports: vec![vec![wanted("verda-lb-u-1-aaaa")]],
        stored: Some(vec![first, second.clone()]),
    };
    assert_eq!(
        plan_tls(&serving("https://kms/s-1"), &certificates),
        Step::DeleteCertificate(second)
    );
}

#[test]
fn a_monitor_takes_its_delay_and_timeout_as_durations_or_seconds() {
    let mut port = published().spec.ports[0].clone();
    let settings = |p: &verda_api::v1alpha1::LoadBalancerPort| {
        let s = desired::monitor_settings(p).expect("a monitor");
        (s.delay, s.timeout)
    };
    assert_eq!(settings(&port), (5, 3), "Octavia's defaults");
    port.monitors[0].delay = Some("1m30s".into());
    port.monitors[0].timeout = Some("10s".into());
    assert_eq!(settings(&port), (90, 10));
    port.monitors[0].delay = None;
    port.monitors[0].delay_seconds = Some(20);
    assert_eq!(settings(&port), (20, 10));
}
