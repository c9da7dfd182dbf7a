//! Shared set-up of the cloud contract tests: a simulator, a clouds.yaml for it on disk,
//! the real client resolved from that file, and the call-count report each scenario
//! prints (`cargo test --test cloud_... -- --nocapture`).
#![allow(dead_code, clippy::unwrap_used)]

pub mod proxy;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use verda_operator::cloud::{
    ClientOptions, CloudConfig, CloudSelection, CloudSource, Environment, OpenStackClient,
    RetryPolicy, resolve,
};
use verda_operator::metrics::Metrics;
use verda_operator::sim::{SimConfig, Simulator};

pub struct Harness {
    pub sim: Simulator,
    pub client: OpenStackClient,
    pub metrics: Arc<Metrics>,
    pub dir: ScratchDir,
}

/// Fast retries so fault scenarios take milliseconds, not seconds.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(100),
        max_elapsed: Duration::from_secs(10),
    }
}

/// A directory of a test's own under the system's temporary one, removed with what it
/// holds (clouds.yaml files with the simulator's passwords) when the test drops it.
pub struct ScratchDir(PathBuf);

impl std::ops::Deref for ScratchDir {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn temp_dir(tag: &str) -> ScratchDir {
    let dir = std::env::temp_dir().join(format!("verda-cloud-{tag}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    ScratchDir(dir)
}

/// An environment with no `OS_*` variables whose directories are all `dir`.
pub fn empty_env(dir: &std::path::Path) -> Environment {
    Environment::new(
        Vec::<(String, String)>::new(),
        dir,
        Some(dir.join("home")),
        dir.join("etc"),
    )
}

pub async fn harness(config: SimConfig) -> Harness {
    harness_with(
        config,
        "verda-sim",
        ClientOptions {
            retry: fast_retries(),
            ..ClientOptions::default()
        },
    )
    .await
}

/// Cloud `cloud` of the clouds.yaml `yaml`, written into `dir` and resolved with no
/// `OS_*` variables.
pub fn cloud_config(dir: &std::path::Path, yaml: &str, cloud: &str) -> CloudConfig {
    let file = dir.join("clouds.yaml");
    std::fs::write(&file, yaml).unwrap();
    let selection = CloudSelection {
        cloud: Some(cloud.to_owned()),
        config_file: Some(file),
    };
    let CloudSource::Configured(config) = resolve(&selection, &empty_env(dir)).unwrap() else {
        panic!("the clouds.yaml did not resolve to cloud {cloud}");
    };
    config
}

pub async fn harness_with(config: SimConfig, cloud: &str, options: ClientOptions) -> Harness {
    let sim = Simulator::start(config).await.unwrap();
    let dir = temp_dir("harness");
    let config = cloud_config(&dir, &sim.clouds_yaml(), cloud);
    let metrics = Metrics::new();
    let client = OpenStackClient::new(config, metrics.clone(), options).unwrap();
    Harness {
        sim,
        client,
        metrics,
        dir,
    }
}

impl Harness {
    /// Print the simulator calls of a scenario, for the closing note.
    pub fn report(&self, scenario: &str) {
        let counts = self.sim.request_counts();
        let detail: Vec<String> = counts
            .iter()
            .map(|((s, o), n)| format!("{s}/{o}={n}"))
            .collect();
        println!(
            "SCENARIO {scenario}: {} simulator requests [{}]",
            self.sim.total_requests(),
            detail.join(" ")
        );
    }

    pub fn calls(&self, service: &str, operation: &str) -> u64 {
        self.sim.requests(service, operation)
    }

    /// `verda_cloud_requests_total` for one label set.
    pub fn counted(&self, service: &'static str, operation: &'static str, code: &str) -> u64 {
        let labels = verda_operator::metrics::CloudRequestLabels {
            service,
            operation,
            code: code.to_owned(),
        };
        self.metrics.cloud_requests.get_or_create(&labels).get()
    }
}

/// Poll `probe` every 5 ms until it yields `Some`, for at most 5 s.
pub async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Retry an Octavia write while the load balancer is immutable (409), as controllers do
/// with a requeue; returns the result and how many 409s were seen.
pub async fn while_immutable<T, F, Fut>(mut write: F) -> (T, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, verda_operator::cloud::CloudError>>,
{
    let mut conflicts = 0;
    loop {
        match write().await {
            Ok(v) => return (v, conflicts),
            Err(e) if e.is_immutable() && conflicts < 1000 => {
                conflicts += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}
