//! A terminated-https LoadBalancer whose certificates come from `kubernetes.io/tls`
//! Secrets, as cert-manager writes them: stored in Barbican before the listener that
//! serves them is made, a renewal stored anew and the listener switched before the old
//! secret goes, a bad Secret reported with nothing changed in the cloud, and nothing
//! left in Barbican once the LoadBalancer is deleted.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::e2e::{Env, calls_since, eventually, test_timing, watch_only_timing};
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::LoadBalancer;
use verda_operator::cloud::model::loadbalancing::{LbFilter, Listener};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(60);

const TLS_LB: &str = r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {name: web}
spec:
  ports:
    - port: 443
      protocol: terminated-https
      tls: {secretName: web-tls, sniSecretNames: [api-tls]}
      insertHeaders: {X-Forwarded-For: true, X-Forwarded-Proto: true}
      realServers: {protocol: http, port: 8080, addresses: [10.0.0.10]}
"#;

/// A test fixture's certificate (with its chain) and key.
pub fn fixture(name: &str) -> (Vec<u8>, Vec<u8>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    let read = |ext: &str| std::fs::read(format!("{dir}/{name}.{ext}")).unwrap();
    (read("crt"), read("key"))
}

/// A `kubernetes.io/tls` Secret as cert-manager writes it.
pub fn tls_secret(name: &str, (crt, key): (Vec<u8>, Vec<u8>)) -> Secret {
    let mut secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name}, "type": "kubernetes.io/tls"
    }))
    .unwrap();
    secret.data = Some(BTreeMap::from([
        ("tls.crt".to_owned(), ByteString(crt)),
        ("tls.key".to_owned(), ByteString(key)),
    ]));
    secret
}

async fn listener(env: &Env) -> Listener {
    let octavia = env.cloud().load_balancing(None);
    let mut found = octavia.list_listeners(&LbFilter::default()).await.unwrap();
    assert_eq!(found.len(), 1);
    found.pop().unwrap()
}

/// The Barbican secrets of the LoadBalancer's owner: name → URL.
async fn stored(env: &Env) -> BTreeMap<String, String> {
    let octavia = env.cloud().load_balancing(None);
    let found = octavia.list_certificates("verda-").await.unwrap();
    found
        .into_iter()
        .map(|s| (s.name.unwrap_or_default(), s.secret_ref))
        .collect()
}

/// The cloud writes made since `before` (Octavia and Barbican), by operation.
fn writes_since(env: &Env, before: &BTreeMap<(String, String), u64>) -> Vec<(String, u64)> {
    calls_since(&env.sim, before)
        .into_iter()
        .filter(|(op, _)| {
            (op.starts_with("load-balancer/") || op.starts_with("key-manager/"))
                && !op.contains("/list_")
                && !op.contains("/get_")
        })
        .collect()
}

/// Waits until the LoadBalancer's Ready condition has `reason`; returns its message.
async fn ready_reason(env: &Env, reason: &str) -> String {
    let api = env.api::<LoadBalancer>();
    eventually(&format!("Ready with reason {reason}"), LIMIT, || async {
        let lb = api.get("web").await.ok()?;
        let c = find_condition(&lb.status?.conditions, READY)?.clone();
        (c.reason == reason).then_some(c.message)
    })
    .await
}

async fn replace_secret(env: &Env, name: &str, fixture_pair: (Vec<u8>, Vec<u8>)) {
    let secret = tls_secret(name, fixture_pair);
    env.api::<Secret>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": secret.data})),
        )
        .await
        .unwrap();
}

/// Waits until the listener serves `default` (a stored name) and nothing is left to
/// delete: Barbican holds exactly `names`.
async fn serving(env: &Env, default: &str, names: &[&str]) -> Listener {
    eventually(&format!("the listener serves {default}"), LIMIT, || async {
        let held = stored(env).await;
        let l = listener(env).await;
        let want: Vec<&str> = names.to_vec();
        let have: Vec<&str> = held.keys().map(String::as_str).collect();
        (l.options.default_tls_container_ref.as_ref() == held.get(default) && have == want)
            .then_some(l)
    })
    .await
}

/// `web-tls` and `api-tls`, the Secrets `TLS_LB` names, in the test namespace.
async fn web_and_api_secrets(env: &Env) -> kube::Api<Secret> {
    let secrets = env.api::<Secret>();
    for (name, pair) in [("web-tls", fixture("web")), ("api-tls", fixture("api"))] {
        secrets
            .create(&PostParams::default(), &tls_secret(name, pair))
            .await
            .unwrap();
    }
    secrets
}

#[tokio::test]
async fn certificates_come_from_secrets_are_renewed_in_place_and_leave_with_the_load_balancer() {
    let env = Env::start(SimConfig::fast(), watch_only_timing()).await;
    let secrets = web_and_api_secrets(&env).await;
    let before = env.sim.request_counts();
    let made: LoadBalancer = env.create_from_yaml(TLS_LB).await;
    let uid = made.metadata.uid.unwrap();
    ready_reason(&env, "Active").await;

    // Both certificates stored first, then the one create that serves them.
    let mut writes = writes_since(&env, &before);
    writes.sort();
    assert_eq!(
        writes,
        [
            ("key-manager/store_secret".to_owned(), 2),
            ("load-balancer/create_load_balancer".to_owned(), 1)
        ]
    );
    let held = stored(&env).await;
    assert_eq!(held.len(), 2, "{held:?}");
    // Named for the cluster and the owner: `verda-<cluster mark>.tls-<uid>-<fingerprint>`.
    let named = |n: &String| n.starts_with("verda-") && n.contains(&format!(".tls-{uid}-"));
    assert!(held.keys().all(named), "{held:?}");
    let l = listener(&env).await;
    assert_eq!(format!("{:?}", l.protocol), "TerminatedHttps");
    let default = l.options.default_tls_container_ref.clone().unwrap();
    let sni = l.options.sni_container_refs.clone().unwrap();
    assert_eq!(sni.len(), 1);
    assert!(held.values().any(|r| *r == default) && held.values().any(|r| *r == sni[0]));
    assert_ne!(default, sni[0]);
    let status = env
        .api::<LoadBalancer>()
        .get("web")
        .await
        .unwrap()
        .status
        .unwrap();
    let mut from: Vec<_> = status
        .certificates
        .iter()
        .map(|c| (c.secret_name.clone().unwrap(), c.secret_ref == default))
        .collect();
    from.sort();
    assert_eq!(
        from,
        [("api-tls".to_owned(), false), ("web-tls".to_owned(), true)]
    );
    assert!(status.certificates.iter().all(|c| c.not_after.is_some()));
    env.event_seen("CertificateStored").await;

    // cert-manager renews web-tls: stored anew, the listener switched, the old one gone.
    let old_name = held.iter().find(|(_, r)| **r == default).unwrap().0.clone();
    let api_name = held.iter().find(|(_, r)| **r == sni[0]).unwrap().0.clone();
    let before = env.sim.request_counts();
    replace_secret(&env, "web-tls", fixture("web-renewed")).await;
    let renewed = eventually("the renewal is stored", LIMIT, || async {
        stored(&env)
            .await
            .into_keys()
            .find(|n| *n != old_name && *n != api_name)
    })
    .await;
    let mut names = [renewed.as_str(), api_name.as_str()];
    names.sort();
    let l = serving(&env, &renewed, &names).await;
    assert_eq!(l.options.sni_container_refs, Some(sni.clone()), "SNI kept");
    ready_reason(&env, "Active").await;
    let mut writes = writes_since(&env, &before);
    writes.sort();
    assert_eq!(
        writes,
        [
            ("key-manager/delete_secret".to_owned(), 1),
            ("key-manager/store_secret".to_owned(), 1),
            ("load-balancer/update_listener".to_owned(), 1)
        ],
        "a renewal: one store, one listener update, one delete"
    );
    env.event_seen("CertificateDeleted").await;

    // Bad Secrets are reported, and nothing changes in the cloud meanwhile.
    let cases = [
        (
            "web-tls",
            (fixture("web").0, fixture("api").1),
            "TLSKeyMismatch",
        ),
        ("web-tls", fixture("expired"), "TLSCertificateExpired"),
        (
            "api-tls",
            (b"not a certificate".to_vec(), fixture("api").1),
            "TLSSecretInvalid",
        ),
    ];
    for (name, pair, reason) in cases {
        let before = env.sim.request_counts();
        let good = secrets.get(name).await.unwrap().data;
        replace_secret(&env, name, pair).await;
        let message = ready_reason(&env, reason).await;
        assert!(message.contains(&format!("Secret {name}")), "{message}");
        assert!(
            !message.contains("BEGIN"),
            "no Secret contents in: {message}"
        );
        assert_eq!(writes_since(&env, &before), [], "{reason}: nothing written");
        secrets
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"data": good})),
            )
            .await
            .unwrap();
        ready_reason(&env, "Active").await;
    }
    let before = env.sim.request_counts();
    secrets
        .delete("api-tls", &DeleteParams::default())
        .await
        .unwrap();
    let message = ready_reason(&env, "TLSSecretNotFound").await;
    assert!(
        message.contains("spec.ports[0].tls.sniSecretNames[0]"),
        "{message}"
    );
    assert_eq!(writes_since(&env, &before), []);
    secrets
        .create(
            &PostParams::default(),
            &tls_secret("api-tls", fixture("api")),
        )
        .await
        .unwrap();
    ready_reason(&env, "Active").await;
    assert_eq!(
        serving(&env, &renewed, &names)
            .await
            .options
            .sni_container_refs,
        Some(sni)
    );

    // Deleted: the load balancer, then every Barbican secret of the owner.
    env.api::<LoadBalancer>()
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("nothing is left in Barbican", LIMIT, || async {
        let gone = env
            .api::<LoadBalancer>()
            .get_opt("web")
            .await
            .ok()?
            .is_none();
        (gone && stored(&env).await.is_empty()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn certificates_of_a_load_balancer_left_behind_are_orphans_the_inventory_deletes() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    web_and_api_secrets(&env).await;
    let _: LoadBalancer = env.create_from_yaml(TLS_LB).await;
    ready_reason(&env, "Active").await;
    // Deleted with reconcile-policy skip: the load balancer and its secrets stay.
    let skip = json!({"metadata": {"annotations": {
        verda_api::v1alpha1::annotations::RECONCILE_POLICY: "skip"}}});
    let lbs = env.api::<LoadBalancer>();
    lbs.patch("web", &PatchParams::default(), &Patch::Merge(&skip))
        .await
        .unwrap();
    eventually("the Paused condition", LIMIT, || async {
        let lb = lbs.get("web").await.ok()?;
        find_condition(&lb.status?.conditions, "Paused").map(drop)
    })
    .await;
    lbs.delete("web", &DeleteParams::default()).await.unwrap();
    eventually("the LoadBalancer is gone", LIMIT, || async {
        lbs.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(stored(&env).await.len(), 2);

    let cluster = &env.ctx.cluster;
    let listing = verda_operator::orphans::list(env.cloud().as_ref(), cluster)
        .await
        .unwrap();
    let orphans = verda_operator::orphans::classify(&listing, cluster, &Default::default());
    let mut kinds: Vec<&str> = orphans.iter().map(|o| o.kind.as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        ["certificate", "certificate", "load-balancer"],
        "{orphans:?}"
    );
    let deleted = verda_operator::orphans::delete(env.cloud().as_ref(), &orphans).await;
    assert!(deleted.iter().all(|(_, r)| r.is_ok()), "{deleted:?}");
    assert_eq!(stored(&env).await.len(), 0, "no Barbican secret is left");
}

/// The controllers stop right after the `k`th create (a store in Barbican counts: the
/// first two are the certificates, the third the load balancer) and fresh ones start:
/// each certificate is stored once, whatever the crash.
#[tokio::test]
async fn a_crash_after_any_store_or_create_leaves_no_duplicate_secret() {
    use std::sync::Arc;
    use support::crash::{CrashingCloud, Tripwire};
    for k in 1..=3 {
        let wire = Tripwire::armed(k);
        let mut env = Env::start_with(SimConfig::fast(), test_timing(), |client| {
            Arc::new(CrashingCloud::new(client, wire.clone()))
        })
        .await;
        web_and_api_secrets(&env).await;
        let _: LoadBalancer = env.create_from_yaml(TLS_LB).await;
        let op = wire.tripped().await;
        env.restart().await;
        ready_reason(&env, "Active").await;
        let held = stored(&env).await;
        println!(
            "CRASH tls k={k} after {op}: {} Barbican secrets",
            held.len()
        );
        assert_eq!(held.len(), 2, "k={k} after {op}: {held:?}");
        assert_eq!(env.sim.load_balancers().len(), 1, "k={k}");
        let l = listener(&env).await;
        assert!(
            held.values()
                .any(|r| Some(r) == l.options.default_tls_container_ref.as_ref())
        );
    }
}
