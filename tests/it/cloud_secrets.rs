//! No password, application-credential secret or token reaches an error message, a log
//! line, a `Debug` rendering or a metric — checked against the simulator with tracing at
//! TRACE level captured in memory.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use cloud_support::{cloud_config, harness, temp_dir};
use verda_operator::cloud::{ClientOptions, Compute, OpenStackClient};
use verda_operator::metrics::Metrics;
use verda_operator::sim::{Fault, FaultKind, SimConfig};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn secrets_never_reach_errors_logs_debug_output_or_metrics() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // With one subscriber in the whole binary, tracing decides whether a log site is
    // wanted on the thread that reaches it first, and other tests run beside this one:
    // a second one makes it ask every live subscriber, this one included.
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());

    let h = harness(SimConfig::fast()).await;
    let creds = h.sim.credentials();
    h.sim
        .inject(Fault::new("compute", Some("list_flavors"), FaultKind::Status(503)).times(1));
    h.client.list_flavors().await.unwrap();
    h.sim.expire_tokens();
    h.client.list_flavors().await.unwrap();

    // A wrong password: the error must not echo it.
    let dir = temp_dir("secrets");
    let wrong = "wrong-Pa55word-that-must-not-leak";
    let yaml = h.sim.clouds_yaml().replace(&creds.password, wrong);
    let config = cloud_config(&dir, &yaml, "verda-sim");
    let config_debug = format!("{config:?}");
    let metrics = Metrics::new();
    let bad = OpenStackClient::new(config, metrics.clone(), ClientOptions::default()).unwrap();
    let err = bad.authenticate().await.unwrap_err();
    assert_eq!(err.category(), "Unauthorized");

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("retrying cloud request"),
        "the capture works: {logs}"
    );
    let everything = [
        logs.clone(),
        err.to_string(),
        format!("{err:?}"),
        format!("{:?}", h.client),
        config_debug,
        h.metrics.encode(),
        metrics.encode(),
    ];
    for text in &everything {
        for secret in [
            creds.password.as_str(),
            creds.application_credential_secret.as_str(),
            wrong,
        ] {
            assert!(!text.contains(secret), "secret leaked into: {text}");
        }
        assert!(
            !text.to_ascii_lowercase().contains("x-auth-token:"),
            "a token header was printed: {text}"
        );
        assert!(
            !text.to_ascii_lowercase().contains("x-subject-token:"),
            "a token header was printed: {text}"
        );
    }
    h.report("secrets");
}
