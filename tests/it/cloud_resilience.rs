//! Contract tests of the choke point against the simulator's fault injection: token
//! expiry mid-run, 429 with Retry-After, 5xx bursts, non-idempotent creates, every error
//! class, the concurrency cap, metrics, and that no secret reaches errors, logs or metrics.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use std::time::{Duration, Instant};

use cloud_support::{fast_retries, harness, harness_with};
use verda_operator::cloud::ids::{FlavorId, ImageId, NetworkId};
use verda_operator::cloud::model::compute::CreateServer;
use verda_operator::cloud::{ClientOptions, Compute};
use verda_operator::sim::{Fault, FaultKind, SimConfig};

fn fault(service: &str, operation: &str, kind: FaultKind) -> Fault {
    Fault::new(service, Some(operation), kind)
}

#[tokio::test]
async fn expired_tokens_are_renewed_mid_run_without_failing_the_caller() {
    let h = harness(SimConfig::fast()).await;
    h.client.list_flavors().await.unwrap();
    assert_eq!(h.calls("identity", "issue_token"), 1);
    h.sim.expire_tokens();
    h.client.list_flavors().await.unwrap();
    h.client.get_flavor(&FlavorId::new("10")).await.unwrap();
    assert_eq!(
        h.calls("identity", "issue_token"),
        2,
        "one renewal after the 401"
    );
    assert_eq!(h.counted("compute", "list_flavors", "401"), 1);
    assert_eq!(h.counted("compute", "list_flavors", "200"), 2);
    h.report("token_expiry");
}

/// A password change revokes every token of the user, and Keystone compares issue times
/// in whole seconds: a token renewed in that same second is refused too. The second
/// renewal waits for the next second instead of failing the caller as Unauthorized.
#[tokio::test]
async fn a_token_renewed_in_the_second_of_a_revocation_is_renewed_again() {
    let h = harness(SimConfig::fast()).await;
    h.client.list_flavors().await.unwrap();
    h.sim.revoke_tokens();
    h.client.list_flavors().await.unwrap();
    assert_eq!(
        h.calls("identity", "issue_token"),
        3,
        "the first token, one renewed in the revocation's second, one after it"
    );
    assert_eq!(h.counted("compute", "list_flavors", "401"), 2);
    assert_eq!(h.counted("compute", "list_flavors", "200"), 2);
}

/// Two callers refused across one revocation: the second is refused with the token the
/// first renewed, and renews again in the revocation's second while the first waits for
/// the next one. Neither may come back with that token: both wait for the second to
/// pass, and one renews for both.
#[tokio::test]
async fn callers_refused_across_a_revocation_wait_for_one_token_of_the_next_second() {
    let h = harness(SimConfig::fast()).await;
    h.client.list_flavors().await.unwrap();
    // Early in a second, so that both renewals fall in the revocation's second.
    while chrono::Utc::now().timestamp_subsec_millis() > 100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    h.sim.revoke_tokens();
    let first = h.client.list_flavors();
    let second = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        h.client.list_flavors().await
    };
    let (first, second) = tokio::join!(first, second);
    first.expect("the first caller gets its flavors");
    second.expect("the second caller gets its flavors");
    // On a loaded machine the second caller may start before the first renewed: then
    // it renews nothing in the revocation's second.
    let issued = h.calls("identity", "issue_token");
    assert!(
        (3..=4).contains(&issued),
        "the first token, one renewal by each caller in the revocation's second, one \
         after it for both: {issued}"
    );
    assert!(h.counted("compute", "list_flavors", "401") <= 4);
}

#[tokio::test]
async fn short_lived_tokens_are_renewed_before_they_expire() {
    let h = harness(SimConfig {
        token_lifetime: Duration::from_millis(300),
        ..SimConfig::fast()
    })
    .await;
    for _ in 0..4 {
        h.client.list_flavors().await.unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    let renewals = h.calls("identity", "issue_token");
    assert!(
        (2..=4).contains(&renewals),
        "renewed ahead of expiry, not per request: {renewals}"
    );
    assert_eq!(
        h.counted("compute", "list_flavors", "401"),
        0,
        "never used an expired token"
    );
    h.report("token_lifetime");
}

#[tokio::test]
async fn rate_limited_requests_wait_at_least_retry_after_and_then_succeed() {
    let h = harness(SimConfig::fast()).await;
    h.client.list_flavors().await.unwrap();
    h.sim.inject(
        fault(
            "compute",
            "list_flavors",
            FaultKind::RateLimited {
                retry_after_secs: 1,
            },
        )
        .times(1),
    );
    let started = Instant::now();
    h.client.list_flavors().await.unwrap();
    let gap = started.elapsed();
    println!("429 Retry-After: 1 s; measured gap before success {gap:?}");
    assert!(
        gap >= Duration::from_secs(1),
        "retried after {gap:?}, sooner than Retry-After"
    );
    assert!(
        gap < Duration::from_millis(1500),
        "waited far longer than asked: {gap:?}"
    );
    assert_eq!(h.counted("compute", "list_flavors", "429"), 1);
    assert_eq!(h.calls("compute", "list_flavors"), 3);
    h.report("rate_limited");
}

#[tokio::test]
async fn a_retry_after_beyond_the_budget_is_returned_to_the_caller_at_once() {
    let h = harness(SimConfig::fast()).await;
    h.sim.inject(fault(
        "compute",
        "list_flavors",
        FaultKind::RateLimited {
            retry_after_secs: 60,
        },
    ));
    let started = Instant::now();
    let err = h.client.list_flavors().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(err.category(), "RateLimited");
    assert_eq!(
        err.retry_after(),
        Some(Duration::from_secs(60)),
        "the controller requeues after it"
    );
    assert!(!err.is_terminal());
    assert_eq!(h.calls("compute", "list_flavors"), 1);
    h.report("rate_limited_beyond_budget");
}

#[tokio::test]
async fn a_burst_of_server_errors_is_absorbed_by_backoff() {
    let h = harness(SimConfig::fast()).await;
    h.sim
        .inject(fault("compute", "list_flavors", FaultKind::Status(500)).times(2));
    h.sim
        .inject(fault("compute", "list_flavors", FaultKind::Status(503)).times(1));
    let flavors = h.client.list_flavors().await.unwrap();
    assert!(!flavors.is_empty());
    assert_eq!(h.calls("compute", "list_flavors"), 4);
    assert_eq!(h.counted("compute", "list_flavors", "500"), 2);
    assert_eq!(h.counted("compute", "list_flavors", "503"), 1);
    assert_eq!(h.counted("compute", "list_flavors", "200"), 1);
    let histogram = h.metrics.encode();
    assert!(
        histogram.contains("verda_cloud_request_duration_seconds_count{service=\"compute\",operation=\"list_flavors\"} 1"),
        "one duration sample per call, retries included:\n{histogram}"
    );
    h.report("5xx_burst");
}

#[tokio::test]
async fn a_persistent_outage_gives_up_after_the_attempt_budget() {
    let h = harness(SimConfig::fast()).await;
    h.sim
        .inject(fault("network", "list_networks", FaultKind::Status(502)));
    let err = verda_operator::cloud::Network::list_networks(&h.client, None)
        .await
        .unwrap_err();
    assert_eq!(err.category(), "CloudUnavailable");
    assert!(!err.is_terminal());
    assert_eq!(
        h.calls("network", "list_networks"),
        u64::from(fast_retries().max_attempts)
    );
    h.report("persistent_outage");
}

fn create_request() -> CreateServer {
    CreateServer {
        name: "verda-default-once-0".into(),
        image: ImageId::new("244965c2-7e98-469d-b7cc-fe423698200a"),
        flavor: FlavorId::new("10"),
        networks: vec![NetworkId::new("89908bff-e0fe-45be-b92d-5828f5ddc763")],
        ..CreateServer::default()
    }
}

#[tokio::test]
async fn a_create_is_not_repeated_after_a_500_but_is_after_a_503() {
    let h = harness(SimConfig::fast()).await;
    h.sim
        .inject(fault("compute", "create_server", FaultKind::Status(500)).times(1));
    let err = h.client.create_server(&create_request()).await.unwrap_err();
    assert_eq!(err.category(), "CloudUnavailable");
    assert_eq!(
        h.calls("compute", "create_server"),
        1,
        "a 500 on POST may have created it: no blind retry"
    );

    h.sim
        .inject(fault("compute", "create_server", FaultKind::Status(503)).times(1));
    h.client.create_server(&create_request()).await.unwrap();
    assert_eq!(
        h.calls("compute", "create_server"),
        3,
        "503 means refused: retried once"
    );
    assert_eq!(h.sim.servers().len(), 1);
    h.report("create_not_repeated");
}

#[tokio::test]
async fn every_error_status_maps_to_its_class() {
    let h = harness(SimConfig::fast()).await;
    let cases: [(u16, &str, bool); 5] = [
        (400, "BadRequest", true),
        (403, "Forbidden", true),
        (404, "NotFound", true),
        (409, "Conflict", false),
        (401, "Unauthorized", true),
    ];
    for (status, category, terminal) in cases {
        h.sim.clear_faults();
        h.sim
            .inject(fault("compute", "get_flavor", FaultKind::Status(status)));
        let err = h.client.get_flavor(&FlavorId::new("10")).await.unwrap_err();
        assert_eq!(err.category(), category, "status {status}: {err}");
        assert_eq!(err.is_terminal(), terminal, "status {status}");
        assert!(
            err.to_string().starts_with("failed to get flavor 10: "),
            "{err}"
        );
    }
    assert_eq!(
        h.calls("compute", "get_flavor"),
        7,
        "each once; the 401 twice more, after each of two renewals"
    );
    h.report("error_classes");
}

#[tokio::test]
async fn concurrent_requests_are_capped_per_cloud() {
    let options = ClientOptions {
        retry: fast_retries(),
        max_concurrency: 2,
        ..ClientOptions::default()
    };
    let h = harness_with(SimConfig::fast(), "verda-sim", options).await;
    h.client.list_flavors().await.unwrap();
    h.sim.inject(fault(
        "compute",
        "get_flavor",
        FaultKind::Latency(Duration::from_millis(100)),
    ));
    let started = Instant::now();
    let id = FlavorId::new("10");
    let calls = (0..8).map(|_| h.client.get_flavor(&id));
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    let elapsed = started.elapsed();
    println!("8 calls of 100 ms with max_concurrency 2 took {elapsed:?}");
    assert!(
        elapsed >= Duration::from_millis(400),
        "at most 2 in flight: {elapsed:?}"
    );
    h.report("concurrency_cap");
}

#[tokio::test]
async fn application_credentials_authenticate() {
    let h = harness_with(
        SimConfig::fast(),
        "verda-sim-appcred",
        ClientOptions::default(),
    )
    .await;
    h.client.authenticate().await.unwrap();
    assert!(!h.client.list_flavors().await.unwrap().is_empty());
    h.report("application_credential");
}

#[tokio::test]
async fn another_region_is_reached_through_the_same_token_and_unknown_regions_are_named() {
    let h = harness(SimConfig::fast()).await;
    assert_eq!(h.client.region(), Some("RegionOne"));
    let tokyo = h.client.with_region("tokyo1");
    assert_eq!(tokyo.region(), Some("tokyo1"));
    assert!(!tokyo.list_flavors().await.unwrap().is_empty());
    h.client.list_flavors().await.unwrap();
    assert_eq!(
        h.calls("identity", "issue_token"),
        1,
        "regions share the token"
    );
    let err = h
        .client
        .with_region("osaka9")
        .list_flavors()
        .await
        .unwrap_err();
    assert_eq!(err.category(), "EndpointNotFound");
    assert!(err.to_string().contains("region osaka9"), "{err}");
    h.report("regions");
}

#[tokio::test]
async fn an_unusable_cacert_is_a_configuration_error_at_construction() {
    let h = harness(SimConfig::fast()).await;
    let dir = cloud_support::temp_dir("cacert");
    let yaml = format!(
        "{}    cacert: {}\n",
        h.sim
            .clouds_yaml()
            .split("  verda-sim-appcred:")
            .next()
            .unwrap(),
        dir.join("missing.pem").display()
    );
    let config = cloud_support::cloud_config(&dir, &yaml, "verda-sim");
    assert!(config.tls.cacert.is_some());
    let metrics = verda_operator::metrics::Metrics::new();
    let err = verda_operator::cloud::OpenStackClient::new(
        config.clone(),
        metrics.clone(),
        ClientOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.category(), "CloudConfigInvalid");
    assert!(err.to_string().contains("missing.pem"), "{err}");
    std::fs::write(dir.join("missing.pem"), "not a certificate").unwrap();
    let err =
        verda_operator::cloud::OpenStackClient::new(config, metrics, ClientOptions::default())
            .unwrap_err();
    assert_eq!(err.category(), "CloudConfigInvalid");
}

/// A client of the simulator's cloud in the project of `credentials`, with `tls` changed
/// by `adjust`.
fn client_of(
    sim: &verda_operator::sim::Simulator,
    credentials: &verda_operator::sim::SimCredentials,
    adjust: impl FnOnce(&mut verda_operator::cloud::CloudConfig),
) -> verda_operator::cloud::OpenStackClient {
    let dir = cloud_support::temp_dir("project");
    let mut config =
        cloud_support::cloud_config(&dir, &sim.clouds_yaml_of(credentials), "verda-sim");
    adjust(&mut config);
    let options = ClientOptions {
        retry: fast_retries(),
        ..ClientOptions::default()
    };
    verda_operator::cloud::OpenStackClient::new(
        config,
        verda_operator::metrics::Metrics::new(),
        options,
    )
    .unwrap()
}

#[tokio::test]
async fn projects_of_one_cloud_share_its_kept_alive_connections() {
    let sim = verda_operator::sim::Simulator::start(SimConfig {
        tenants: 6,
        ..SimConfig::fast()
    })
    .await
    .unwrap();
    let projects: Vec<_> = sim
        .tenant_credentials()
        .iter()
        .map(|c| client_of(&sim, c, |_| {}))
        .collect();
    for _round in 0..2 {
        for project in &projects {
            project.list_flavors().await.unwrap();
            // The connection goes back to the pool once its answer is read.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(
        sim.requests("identity", "issue_token"),
        6,
        "each project has its own token"
    );
    assert_eq!(
        sim.connections_accepted(),
        1,
        "six projects' tokens and calls, one after another, over one connection"
    );
    // A project that trusts other certificates never rides on a connection verified
    // under the others' trust.
    let unverified = client_of(&sim, &sim.tenant_credentials()[0], |c| {
        c.tls.insecure = true
    });
    unverified.list_flavors().await.unwrap();
    assert_eq!(sim.connections_accepted(), 2);
}

/// A TLS front for the simulator's plain port at `plain` (an auth_url), holding the test
/// CA's certificate for `localhost` (`cloud_support/tls`, valid until 2126): the same
/// auth_url through it. Only Keystone is reached through it: the catalog names the plain
/// port.
async fn tls_front(plain: &str) -> String {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/cloud_support/tls");
    let certs = CertificateDer::pem_file_iter(fixtures.join("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(fixtures.join("server.key")).unwrap();
    let provider = std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let rest = plain.strip_prefix("http://").unwrap();
    let (backend, path) = rest.split_once('/').unwrap();
    let backend = backend.to_owned();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut plain = tokio::net::TcpStream::connect(backend).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    format!("https://localhost:{port}/{path}")
}

#[tokio::test]
async fn a_keystone_behind_tls_is_trusted_through_its_cacert_or_verify_false_only() {
    let sim = verda_operator::sim::Simulator::start(SimConfig {
        tenants: 1,
        ..SimConfig::fast()
    })
    .await
    .unwrap();
    let credentials = &sim.tenant_credentials()[0];
    let mut plain = String::new();
    client_of(&sim, credentials, |c| plain = c.auth_url.clone());
    let front = tls_front(&plain).await;
    let ca =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/cloud_support/tls/ca.pem");

    let trusted = client_of(&sim, credentials, |c| {
        c.auth_url = front.clone();
        c.tls.cacert = Some(ca.clone());
    });
    trusted.list_flavors().await.unwrap();
    assert_eq!(sim.requests("identity", "issue_token"), 1);

    // The system's roots alone do not know the test CA: refused before any request.
    let untrusted = client_of(&sim, credentials, |c| c.auth_url = front.clone());
    let err = untrusted.list_flavors().await.unwrap_err();
    assert_eq!(err.category(), "CloudUnavailable", "{err}");
    assert!(err.to_string().contains("certificate"), "{err}");
    assert_eq!(sim.requests("identity", "issue_token"), 1);

    let unverified = client_of(&sim, credentials, |c| {
        c.auth_url = front.clone();
        c.tls.insecure = true;
    });
    unverified.list_flavors().await.unwrap();
    assert_eq!(sim.requests("identity", "issue_token"), 2);
}
