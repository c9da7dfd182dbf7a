//! A LoadBalancer with every listener, pool and monitor option and a traffic split
//! between two groups on the real Octavia 19, driven with `kubectl` and checked with the
//! `openstack` CLI: built by the one create; 90/10 → 50/50 → 0/100 → green alone, each
//! one member batch per pool; a timeout, the allowed CIDRs and the algorithm edited in
//! place, one Octavia update each. Run by `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use serde_json::Value;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};

use support::real::{Namespace, Operator, Real, context, delete_all, project_inventory, until};

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10s\n";

fn group(name: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: {name}}}\nspec:\n  replicas: 2\n  haPolicy: soft\n  template: {{image: cirros, flavor: m1.tiny}}\n"
    )
}

/// The LoadBalancer with the split `blue`/`green` (a weight of `None` leaves the group
/// out), and the port-80 settings that change between steps.
fn load_balancer(
    blue: Option<u32>,
    green: u32,
    client_data: &str,
    cidrs: &str,
    algorithm: &str,
) -> String {
    let mut groups = String::new();
    if let Some(w) = blue {
        groups.push_str(&format!("        - {{name: web-blue, weight: {w}}}\n"));
    }
    groups.push_str(&format!("        - {{name: web-green, weight: {green}}}\n"));
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {{name: front}}
spec:
  region: tokyo1
  zone: dev
  vipType: private
  serviceType: generic
  ports:
  - port: 80
    protocol: http
    timeouts: {{clientData: {client_data}, memberConnect: 3s, memberData: 1m, tcpInspect: 0s}}
    connectionLimit: 10000
{cidrs}    insertHeaders: {{X-Forwarded-For: true, X-Forwarded-Proto: true}}
    realServers:
      protocol: proxy
      port: 80
      algorithm: {algorithm}
      sessionPersistence: {{type: app-cookie, cookieName: sid}}
      groups:
{groups}    monitors:
    - {{protocol: http, endpoint: /health, delaySeconds: 5, timeoutSeconds: 3, maxRetries: 3, maxRetriesDown: 2, expectedCodes: \"200-204\", httpMethod: HEAD}}
  - port: 443
    protocol: tcp
    timeouts: {{clientData: 2m}}
    realServers:
      protocol: tcp
      port: 443
      algorithm: source-ip
      sessionPersistence: {{type: source-ip}}
      groups:
{groups}"
    )
}

const CIDRS: &str = "    allowedCIDRs: [10.0.0.0/8, 192.168.0.0/16]\n";

fn apply(real: &Real, ns: &Namespace, manifest: &str) {
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
}

fn show(real: &Real, what: &str, id: &str) -> Value {
    real.openstack("osh-demo", &["loadbalancer", what, "show", id])
}

/// The pool's members as Octavia lists them: name → weight.
fn weights(real: &Real, pool: &str) -> BTreeMap<String, u64> {
    let listed = real.openstack("osh-demo", &["loadbalancer", "member", "list", pool]);
    listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let name = m["name"].as_str().unwrap_or_default().to_owned();
            (name, m["weight"].as_u64().unwrap_or_default())
        })
        .collect()
}

fn split(blue: Option<u64>, green: u64) -> BTreeMap<String, u64> {
    let mut want = BTreeMap::new();
    for i in 0..2 {
        if let Some(w) = blue {
            want.insert(format!("web-blue-{i}"), w);
        }
        want.insert(format!("web-green-{i}"), green);
    }
    want
}

/// The LoadBalancer once Ready for its current generation, with `members` in each pool.
async fn settled(lbs: &Api<LoadBalancer>, op: &Operator, members: usize) -> LoadBalancer {
    until("the LoadBalancer is Ready", LIMIT, &context(op), || async {
        let lb = lbs.get("front").await.ok()?;
        let s = lb.status.as_ref()?;
        (s.observed_generation == lb.metadata.generation
            && is_true(&s.conditions, READY)
            && s.ports.len() == 2
            && s.ports.iter().all(|p| p.members.len() == members))
        .then_some(lb)
    })
    .await
}

/// Waits until both pools hold `want`, and says how many Octavia writes it took.
async fn pools_hold(real: &Real, op: &Operator, pools: &[String], want: &BTreeMap<String, u64>) {
    until(
        &format!("both pools hold {want:?}"),
        LIMIT,
        &context(op),
        || async {
            pools
                .iter()
                .all(|p| weights(real, p) == *want)
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn load_balancer_options_and_a_traffic_split_on_the_real_octavia() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-lb-options");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let operator = real.operator("lb-options", &[], Some(CONFIG));
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let started = Instant::now();

    apply(&real, &ns, &group("web-blue"));
    apply(&real, &ns, &group("web-green"));
    until(
        "both groups are Ready",
        LIMIT,
        &context(&operator),
        || async {
            for name in ["web-blue", "web-green"] {
                let s = groups.get(name).await.ok()?.status?;
                (s.ready_replicas == 2).then_some(())?;
            }
            Some(())
        },
    )
    .await;

    let (requests, writes) = (real.octavia_requests(), real.octavia_writes());
    apply(
        &real,
        &ns,
        &load_balancer(Some(90), 10, "40s", CIDRS, "least-connections"),
    );
    let lb = settled(&lbs, &operator, 4).await;
    let status = lb.status.clone().unwrap_or_default();
    let pools: Vec<String> = status
        .ports
        .iter()
        .filter_map(|p| p.pool_id.clone())
        .collect();
    pools_hold(&real, &operator, &pools, &split(Some(90), 10)).await;
    let (calls, written) = (
        real.octavia_requests() - requests,
        real.octavia_writes() - writes,
    );
    eprintln!(
        "two-port LoadBalancer with every option and a 90/10 split Ready in {:.1} s: {calls} Octavia calls, {written} writes",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(written, 1, "every option comes with the one create");
    assert_eq!(status.split.as_deref(), Some("web-blue=90 web-green=10"));
    let table = real.kubectl(&["-n", &ns.name, "get", "lb", "front"]);
    assert!(table.contains("web-blue=90 web-green=10"), "{table}");

    // Octavia holds every option.
    let listener_id = status.ports[0].listener_id.clone().unwrap_or_default();
    let listener = show(&real, "listener", &listener_id);
    assert_eq!(listener["protocol"], "HTTP");
    assert_eq!(listener["timeout_client_data"], 40_000);
    assert_eq!(listener["timeout_member_connect"], 3_000);
    assert_eq!(listener["timeout_member_data"], 60_000);
    assert_eq!(listener["connection_limit"], 10_000);
    let text = |v: &Value| v.to_string();
    assert!(
        text(&listener["allowed_cidrs"]).contains("192.168.0.0/16"),
        "{listener}"
    );
    assert!(
        text(&listener["insert_headers"]).contains("X-Forwarded-Proto"),
        "{listener}"
    );
    let pool = show(&real, "pool", &pools[0]);
    assert_eq!(pool["protocol"], "PROXY");
    assert_eq!(pool["lb_algorithm"], "LEAST_CONNECTIONS");
    assert!(text(&pool["session_persistence"]).contains("sid"), "{pool}");
    let monitor_id = status.ports[0]
        .health_monitor_id
        .clone()
        .unwrap_or_default();
    let monitor = show(&real, "healthmonitor", &monitor_id);
    assert_eq!(monitor["http_method"], "HEAD");
    assert_eq!(monitor["max_retries_down"], 2);
    assert_eq!(show(&real, "pool", &pools[1])["lb_algorithm"], "SOURCE_IP");

    // 90/10 → 50/50 → 0/100: one member batch per pool; then blue leaves the split.
    let steps = [(Some(50), 50), (Some(0), 100), (None, 100)];
    for (blue, green) in steps {
        let writes = real.octavia_writes();
        let t = Instant::now();
        apply(
            &real,
            &ns,
            &load_balancer(blue, green, "40s", CIDRS, "least-connections"),
        );
        let want = split(blue.map(u64::from), u64::from(green));
        pools_hold(&real, &operator, &pools, &want).await;
        settled(&lbs, &operator, want.len()).await;
        let written = real.octavia_writes() - writes;
        let blue = blue.map_or_else(|| "none".to_owned(), |w| w.to_string());
        eprintln!(
            "split blue {blue} / green {green}: {written} Octavia writes, {:.1} s",
            t.elapsed().as_secs_f64()
        );
        assert_eq!(written, 2, "one member batch per pool for {blue}/{green}");
    }

    // Each option edited in place: one Octavia update, nothing re-created.
    let edits = [
        (
            "timeouts.clientData 40s -> 45s",
            load_balancer(None, 100, "45s", CIDRS, "least-connections"),
        ),
        (
            "allowedCIDRs removed",
            load_balancer(None, 100, "45s", "", "least-connections"),
        ),
        (
            "algorithm -> round-robin",
            load_balancer(None, 100, "45s", "", "round-robin"),
        ),
    ];
    for (what, manifest) in edits {
        let writes = real.octavia_writes();
        let generation = lbs
            .get("front")
            .await
            .ok()
            .and_then(|l| l.metadata.generation);
        apply(&real, &ns, &manifest);
        until(
            &format!("{what} applied"),
            LIMIT,
            &context(&operator),
            || async {
                let lb = lbs.get("front").await.ok()?;
                let s = lb.status?;
                (s.observed_generation > generation && is_true(&s.conditions, READY)).then_some(())
            },
        )
        .await;
        let written = real.octavia_writes() - writes;
        eprintln!("{what}: {written} Octavia writes");
        assert_eq!(written, 1, "{what}: one update");
    }
    let listener = show(&real, "listener", &listener_id);
    assert_eq!(listener["timeout_client_data"], 45_000);
    assert!(
        !text(&listener["allowed_cidrs"]).contains("10.0.0.0/8"),
        "{listener}"
    );
    assert_eq!(
        show(&real, "pool", &pools[0])["lb_algorithm"],
        "ROUND_ROBIN"
    );
    let same: Vec<String> = lbs
        .get("front")
        .await
        .ok()
        .and_then(|l| l.status)
        .map(|s| s.ports.iter().filter_map(|p| p.pool_id.clone()).collect())
        .unwrap_or_default();
    assert_eq!(same, pools, "the pools were edited, never re-created");

    let objects = [
        ("loadbalancer", "front"),
        ("virtualmachinegroup", "web-blue"),
        ("virtualmachinegroup", "web-green"),
    ];
    delete_all(&real, &ns, &objects, &baseline);
    eprintln!(
        "load balancer options on the real systems in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
