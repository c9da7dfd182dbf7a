//! A LoadBalancer with every listener, pool and monitor option and a traffic split
//! between two groups, applied as `kubectl apply` would: built by the one create, each
//! option edited in place with one update, weights changed in one member batch.
#![allow(clippy::unwrap_used)]

use crate::support;
use support::merge;

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use support::e2e::{Env, calls_since, eventually, watch_only_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::cloud::model::loadbalancing::LbFilter;
use verda_operator::sim::{SimConfig, SimLoadBalancer};

const LIMIT: Duration = Duration::from_secs(60);

fn group(name: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: {name}}}\n\
         spec: {{replicas: 2, template: {{image: centos79, flavor: n3-1vcpu-2gb}}}}\n"
    )
}

const SPLIT_LB: &str = r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {name: web}
spec:
  ports:
    - port: 80
      protocol: http
      timeouts: {clientData: 40s, memberConnect: 3s, memberData: 1m, tcpInspect: 0s}
      connectionLimit: 10000
      allowedCIDRs: [10.0.0.0/8]
      insertHeaders: {X-Forwarded-For: true, X-Forwarded-Proto: true}
      realServers:
        protocol: proxy
        port: 8080
        algorithm: least-connections
        sessionPersistence: {type: app-cookie, cookieName: sid}
        groups:
          - {name: web-blue, weight: 90}
          - {name: web-green, weight: 10}
      monitors:
        - {protocol: http, endpoint: /health, delaySeconds: 5, timeoutSeconds: 3, maxRetries: 3, maxRetriesDown: 2, expectedCodes: "200-204", httpMethod: HEAD}
    - port: 443
      protocol: tcp
      timeouts: {clientData: 2m}
      realServers:
        protocol: tcp
        port: 8443
        algorithm: source-ip
        sessionPersistence: {type: source-ip}
        groups:
          - {name: web-blue, weight: 90}
          - {name: web-green, weight: 10}
      monitors:
        - {protocol: tcp}
"#;

fn the_lb(env: &Env) -> Option<SimLoadBalancer> {
    env.sim.load_balancers().pop()
}

/// Member name → weight, per pool in listener order.
fn weights(lb: &SimLoadBalancer) -> Vec<Vec<(String, u64)>> {
    lb.pools
        .iter()
        .map(|p| {
            let mut w: Vec<(String, u64)> = p
                .members
                .iter()
                .map(|m| (m.name.clone(), m.weight))
                .collect();
            w.sort();
            w
        })
        .collect()
}

fn split(blue: u64, green: u64) -> Vec<(String, u64)> {
    vec![
        ("web-blue-0".to_owned(), blue),
        ("web-blue-1".to_owned(), blue),
        ("web-green-0".to_owned(), green),
        ("web-green-1".to_owned(), green),
    ]
}

async fn wait_weights(env: &Env, want: Vec<(String, u64)>) {
    eventually(&format!("both pools hold {want:?}"), LIMIT, || async {
        let lb = the_lb(env)?;
        (lb.provisioning_status == "ACTIVE" && weights(&lb).iter().all(|p| *p == want))
            .then_some(())
    })
    .await;
}

/// The Octavia writes made since `before`, by operation.
fn writes_since(
    env: &Env,
    before: &std::collections::BTreeMap<(String, String), u64>,
) -> Vec<(String, u64)> {
    calls_since(&env.sim, before)
        .into_iter()
        .filter(|(op, _)| {
            op.starts_with("load-balancer/") && !op.contains("/list_") && !op.contains("/get_")
        })
        .collect()
}

async fn patch_lb(env: &Env, patch: Value) {
    env.api::<LoadBalancer>()
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// The listeners as Octavia shows them, by port.
async fn listeners(env: &Env) -> Vec<Value> {
    let octavia = env.cloud().load_balancing(None);
    let mut found = octavia.list_listeners(&LbFilter::default()).await.unwrap();
    found.sort_by_key(|l| l.protocol_port);
    found
        .iter()
        .map(|l| serde_json::to_value(&l.options).unwrap())
        .collect()
}

#[tokio::test]
async fn every_option_is_built_by_the_create_and_each_edit_is_one_update() {
    let env = Env::start(SimConfig::fast(), watch_only_timing()).await;
    for name in ["web-blue", "web-green"] {
        let _: VirtualMachineGroup = env.create_from_yaml(&group(name)).await;
    }
    let groups = env.api::<VirtualMachineGroup>();
    eventually("both groups have 2 Ready replicas", LIMIT, || async {
        for name in ["web-blue", "web-green"] {
            let s = groups.get(name).await.ok()?.status?;
            (s.ready_replicas == 2).then_some(())?;
        }
        Some(())
    })
    .await;

    let before = env.sim.request_counts();
    let _: LoadBalancer = env.create_from_yaml(SPLIT_LB).await;
    wait_weights(&env, split(90, 10)).await;
    let lb = env.load_balancer_ready("web", "8/8").await;
    let status = lb.status.unwrap();
    assert_eq!(status.split.as_deref(), Some("web-blue=90 web-green=10"));
    assert_eq!(status.ports[0].members[0].weight, Some(90));
    let octavia_calls: u64 = calls_since(&env.sim, &before)
        .into_iter()
        .filter(|(op, _)| op.starts_with("load-balancer/"))
        .map(|(_, n)| n)
        .sum();
    println!("two-port LoadBalancer with every option: {octavia_calls} Octavia calls to Ready");
    assert!(
        octavia_calls <= 8,
        "{octavia_calls} Octavia calls to converge a two-port LoadBalancer with every option"
    );
    assert_eq!(
        writes_since(&env, &before),
        [("load-balancer/create_load_balancer".to_owned(), 1)],
        "every option comes with the create"
    );
    let shown = listeners(&env).await;
    assert_eq!(
        shown[0],
        json!({"connection_limit": 10000, "timeout_client_data": 40000,
            "timeout_member_connect": 3000, "timeout_member_data": 60000, "timeout_tcp_inspect": 0,
            "allowed_cidrs": ["10.0.0.0/8"],
            "insert_headers": {"X-Forwarded-For": "true", "X-Forwarded-Proto": "true"},
            "sni_container_refs": []})
    );
    assert_eq!(shown[1]["timeout_client_data"], 120_000);
    let sim_lb = the_lb(&env).unwrap();
    assert_eq!(sim_lb.pools[0].protocol, "PROXY");
    assert_eq!(sim_lb.pools[0].lb_algorithm, "LEAST_CONNECTIONS");
    assert_eq!(sim_lb.pools[1].lb_algorithm, "SOURCE_IP");

    // 90/10 → 50/50 → 0/100: one member batch per pool each time.
    for (blue, green) in [(50, 50), (0, 100)] {
        let before = env.sim.request_counts();
        let groups =
            json!([{"name": "web-blue", "weight": blue}, {"name": "web-green", "weight": green}]);
        let port = |p: i32| json!({"port": p, "realServers": {"groups": groups}});
        let mut ports = lb_ports(&env).await;
        for (i, p) in [80, 443].into_iter().enumerate() {
            merge(&mut ports[i], &port(p));
        }
        patch_lb(&env, json!({"spec": {"ports": ports}})).await;
        wait_weights(&env, split(blue, green)).await;
        env.load_balancer_ready("web", "8/8").await;
        assert_eq!(
            writes_since(&env, &before),
            [("load-balancer/replace_members".to_owned(), 2)],
            "{blue}/{green}: one batch per pool"
        );
    }
    // At weight 0 the blue members stay; they leave when blue leaves the split.
    let before = env.sim.request_counts();
    let mut ports = lb_ports(&env).await;
    for port in &mut ports {
        port["realServers"]["groups"] = json!([{"name": "web-green", "weight": 100}]);
    }
    patch_lb(&env, json!({"spec": {"ports": ports}})).await;
    wait_weights(&env, split(0, 100).split_off(2)).await;
    env.load_balancer_ready("web", "4/4").await;
    assert_eq!(
        writes_since(&env, &before),
        [("load-balancer/replace_members".to_owned(), 2)]
    );

    // Each option edited in place: one update of the one object it belongs to.
    let edits: [(&str, Value, &str); 4] = [
        (
            "timeouts",
            json!({"timeouts": {"clientData": "45s"}}),
            "update_listener",
        ),
        (
            "allowedCIDRs",
            json!({"allowedCIDRs": null}),
            "update_listener",
        ),
        (
            "algorithm",
            json!({"realServers": {"algorithm": "round-robin"}}),
            "update_pool",
        ),
        (
            "httpMethod",
            json!({"monitors": [{"protocol": "http", "endpoint": "/health", "httpMethod": "GET"}]}),
            "update_health_monitor",
        ),
    ];
    for (what, patch, op) in edits {
        let before = env.sim.request_counts();
        let mut ports = lb_ports(&env).await;
        merge(&mut ports[0], &patch);
        let generation = lb_generation(&env).await;
        patch_lb(&env, json!({"spec": {"ports": ports}})).await;
        settled_after(&env, generation).await;
        assert_eq!(
            writes_since(&env, &before),
            [(format!("load-balancer/{op}"), 1)],
            "editing {what}"
        );
    }
    let shown = listeners(&env).await;
    assert_eq!(shown[0]["timeout_client_data"], 45_000);
    assert_eq!(shown[0]["allowed_cidrs"], Value::Null);
    assert_eq!(the_lb(&env).unwrap().pools[0].lb_algorithm, "ROUND_ROBIN");
}

async fn lb_ports(env: &Env) -> Vec<Value> {
    let lb = env.api::<LoadBalancer>().get("web").await.unwrap();
    serde_json::to_value(&lb.spec.ports)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

async fn lb_generation(env: &Env) -> i64 {
    let lb = env.api::<LoadBalancer>().get("web").await.unwrap();
    lb.metadata.generation.unwrap_or_default()
}

/// Waits until the status describes a generation after `generation`, Ready.
async fn settled_after(env: &Env, generation: i64) {
    let api = env.api::<LoadBalancer>();
    eventually("the edit is applied and Ready", LIMIT, || async {
        let lb = api.get("web").await.ok()?;
        let s = lb.status?;
        (s.observed_generation? > generation
            && verda_api::conditions::is_true(&s.conditions, verda_api::conditions::READY))
        .then_some(())
    })
    .await;
}
