//! TLS termination on the real Octavia 19 and Barbican 23, driven as a user drives it:
//! `kubectl create secret tls` (what cert-manager writes), `kubectl apply` of a
//! terminated-https LoadBalancer, checked with the `openstack` CLI. The listener is
//! TERMINATED_HTTPS with the project's Barbican secrets (a default and an SNI
//! certificate); a renewed Secret is stored anew, the listener switched to it and the
//! old secret deleted; bad Secrets are reported and change nothing; the monitor takes
//! its delay and timeout as durations; deleting the LoadBalancer leaves no Barbican
//! secret. Run by `hack/real-systems.sh`.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use serde_json::Value;
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::LoadBalancer;

use support::real::{Namespace, Operator, Real, context, nothing_left, project_inventory, until};

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10m\n";
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

const LB: &str = "apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {name: secure}
spec:
  region: tokyo1
  zone: dev
  vipType: private
  serviceType: generic
  ports:
  - port: 443
    protocol: terminated-https
    tls: {secretName: web-tls, sniSecretNames: [api-tls]}
    insertHeaders: {X-Forwarded-For: true, X-Forwarded-Proto: true}
    realServers: {protocol: http, port: 80, addresses: [198.51.100.20]}
    monitors:
    - {protocol: http, port: 80, endpoint: /health, delay: 7s, timeout: 2s, maxRetries: 3, maxRetriesDown: 3, expectedCodes: \"200-204\", httpMethod: GET}
";

/// `kubectl create secret tls` (or its replacement, through `apply`) from a fixture.
fn secret_tls(real: &Real, ns: &Namespace, name: &str, crt: &str, key: &str) {
    let (crt, key) = (
        format!("{FIXTURES}/{crt}.crt"),
        format!("{FIXTURES}/{key}.key"),
    );
    let args = [
        "-n", &ns.name, "create", "secret", "tls", name, "--cert", &crt, "--key", &key,
    ];
    let manifest = real.kubectl(&[&args[..], &["--dry-run=client", "-o", "yaml"]].concat());
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifest));
}

/// A Secret kubectl would refuse to make (its key is another certificate's).
fn mismatched_secret(real: &Real, ns: &Namespace, name: &str) {
    let b64 = |file: &str| {
        use base64::Engine;
        let bytes = std::fs::read(format!("{FIXTURES}/{file}")).expect("fixture");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    };
    let manifest = format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}}}\ntype: kubernetes.io/tls\ndata:\n  tls.crt: {}\n  tls.key: {}\n",
        b64("web.crt"),
        b64("api.key")
    );
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifest));
}

/// The project's Barbican secrets of the LoadBalancer `uid`: name → href.
fn stored(real: &Real, uid: &str) -> Vec<(String, String)> {
    let listed = real.openstack(
        "osh-demo",
        &["secret", "list", "--name", &format!("verda-%.tls-{uid}-%")],
    );
    let mut found: Vec<(String, String)> = listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let field = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
            (field("Name"), field("Secret href"))
        })
        .collect();
    found.sort();
    found
}

fn listener(real: &Real, id: &str) -> Value {
    real.openstack("osh-demo", &["loadbalancer", "listener", "show", id])
}

/// The LoadBalancer once its Ready condition has `reason` for its current generation.
async fn ready_reason(lbs: &Api<LoadBalancer>, op: &Operator, reason: &str) -> LoadBalancer {
    until(
        &format!("Ready has reason {reason}"),
        LIMIT,
        &context(op),
        || async {
            let lb = lbs.get("secure").await.ok()?;
            let s = lb.status.as_ref()?;
            (s.observed_generation == lb.metadata.generation
                && find_condition(&s.conditions, READY)?.reason == reason)
                .then_some(lb)
        },
    )
    .await
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn tls_termination_from_secrets_on_the_real_octavia_and_barbican() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-lb-tls");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let operator = real.operator("lb-tls", &[], Some(CONFIG));
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    secret_tls(&real, &ns, "web-tls", "web", "web");
    secret_tls(&real, &ns, "api-tls", "api", "api");

    let started = Instant::now();
    let (octavia, writes, barbican) = (
        real.octavia_requests(),
        real.octavia_writes(),
        real.barbican_writes(),
    );
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(LB));
    let lb = ready_reason(&lbs, &operator, "Active").await;
    eprintln!(
        "terminated-https LoadBalancer (default + SNI certificate) Ready in {:.1} s: {} Octavia calls, {} Octavia writes, {} Barbican writes",
        started.elapsed().as_secs_f64(),
        real.octavia_requests() - octavia,
        real.octavia_writes() - writes,
        real.barbican_writes() - barbican,
    );
    assert_eq!(real.octavia_writes() - writes, 1, "one create");
    assert_eq!(
        real.barbican_writes() - barbican,
        2,
        "one store per certificate"
    );
    let uid = lb.metadata.uid.clone().unwrap_or_default();
    let held = stored(&real, &uid);
    assert_eq!(held.len(), 2, "{held:?}");
    let status = lb.status.clone().unwrap_or_default();
    let listener_id = status.ports[0].listener_id.clone().unwrap_or_default();
    let shown = listener(&real, &listener_id);
    assert_eq!(shown["protocol"], "TERMINATED_HTTPS");
    let default = shown["default_tls_container_ref"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let sni = shown["sni_container_refs"].to_string();
    assert!(held.iter().any(|(_, href)| *href == default), "{shown}");
    assert!(
        held.iter()
            .any(|(_, href)| sni.contains(href.as_str()) && *href != default),
        "{shown}"
    );
    // The monitor's delay and timeout, given as durations.
    let monitor_id = status.ports[0]
        .health_monitor_id
        .clone()
        .unwrap_or_default();
    let monitor = real.openstack(
        "osh-demo",
        &["loadbalancer", "healthmonitor", "show", &monitor_id],
    );
    assert_eq!(
        (monitor["delay"].as_u64(), monitor["timeout"].as_u64()),
        (Some(7), Some(2))
    );
    let table = real.kubectl(&["-n", &ns.name, "get", "lb", "secure", "-o", "yaml"]);
    assert!(
        table.contains("secretName: web-tls") && table.contains("notAfter"),
        "{table}"
    );

    // cert-manager renews web-tls: a new secret, the listener switched, the old one gone.
    let t = Instant::now();
    let (writes, barbican) = (real.octavia_writes(), real.barbican_writes());
    secret_tls(&real, &ns, "web-tls", "web-renewed", "web-renewed");
    let renewed = until(
        "the listener serves the renewed certificate",
        LIMIT,
        &context(&operator),
        || async {
            let now = listener(&real, &listener_id);
            let href = now["default_tls_container_ref"].as_str()?.to_owned();
            let after = stored(&real, &uid);
            (href != default && after.len() == 2 && after.iter().any(|(_, h)| *h == href))
                .then_some(href)
        },
    )
    .await;
    ready_reason(&lbs, &operator, "Active").await;
    eprintln!(
        "renewal: listener switched and old secret deleted in {:.1} s: {} Octavia writes, {} Barbican writes",
        t.elapsed().as_secs_f64(),
        real.octavia_writes() - writes,
        real.barbican_writes() - barbican,
    );
    assert_eq!(real.octavia_writes() - writes, 1, "one listener update");
    assert_eq!(
        real.barbican_writes() - barbican,
        2,
        "one store, one delete"
    );
    assert!(
        !stored(&real, &uid).iter().any(|(_, h)| *h == default),
        "the old secret is deleted"
    );

    // Bad Secrets: reported, nothing written to Octavia or Barbican.
    let (writes, barbican) = (real.octavia_writes(), real.barbican_writes());
    mismatched_secret(&real, &ns, "web-tls");
    ready_reason(&lbs, &operator, "TLSKeyMismatch").await;
    secret_tls(&real, &ns, "web-tls", "expired", "expired");
    ready_reason(&lbs, &operator, "TLSCertificateExpired").await;
    assert_eq!(real.octavia_writes() - writes, 0);
    assert_eq!(real.barbican_writes() - barbican, 0);
    assert_eq!(
        listener(&real, &listener_id)["default_tls_container_ref"],
        renewed.as_str()
    );
    secret_tls(&real, &ns, "web-tls", "web-renewed", "web-renewed");
    ready_reason(&lbs, &operator, "Active").await;

    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "lb",
        "secure",
        "--wait=true",
        "--timeout=240s",
    ]);
    assert_eq!(stored(&real, &uid), [], "no Barbican secret is left");
    nothing_left(&real, &baseline);
}
