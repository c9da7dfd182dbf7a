//! The end-to-end harness: the Kubernetes API test server (or a real cluster), the
//! OpenStack simulator, and the real controllers in-process, talking over loopback HTTP
//! exactly as they would in a cluster.

use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use kube::api::{Api, PostParams};
use serde::de::DeserializeOwned;
use verda_operator::cloud::CloudServices;
use verda_operator::cloud::budget::{BudgetSpec, Budgets};
use verda_operator::cloud::{ClientOptions, OpenStackClient};
use verda_operator::config::Config;
use verda_operator::controllers;
use verda_operator::embedded_cloud::simulator_cloud;
use verda_operator::leases::assignment::{Assignment, OwnedNamespaces};
use verda_operator::metrics::Metrics;
use verda_operator::runtime::{Context, Timing};
use verda_operator::sim::{SimConfig, Simulator};
use verda_test_apiserver::TestCluster;

/// A cluster, a cloud and the controllers running against them.
pub struct Env {
    pub cluster: TestCluster,
    pub sim: Simulator,
    pub ctx: Arc<Context>,
    pub ns: String,
    controllers: tokio::task::JoinHandle<()>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.controllers.abort();
    }
}

/// [`test_timing`] with a resync far beyond the test: whatever happens, a watch made
/// it happen.
pub fn watch_only_timing() -> Timing {
    Timing {
        resync: Duration::from_secs(600),
        ..test_timing()
    }
}

/// Timing for tests: quick polls, a short resync.
pub fn test_timing() -> Timing {
    Timing {
        resync: Duration::from_secs(2),
        poll: Duration::from_millis(100),
        terminal_retry: Duration::from_secs(20),
        error_replace: Duration::from_millis(500),
        drain_timeout: Duration::from_secs(10),
    }
}

impl Env {
    pub async fn start(sim_config: SimConfig, timing: Timing) -> Self {
        Self::start_with(sim_config, timing, |client| Arc::new(client)).await
    }

    /// As [`Env::start`], with the operator configuration `config`.
    pub async fn start_configured(sim_config: SimConfig, timing: Timing, config: Config) -> Self {
        let settings = (timing, config, None, Assignment::All);
        Self::launch(sim_config, settings, |client| Arc::new(client)).await
    }

    /// As [`Env::start`], the operator's requests spending from `budgets`, as the
    /// operator binary's do.
    pub async fn start_budgeted(
        sim_config: SimConfig,
        timing: Timing,
        budgets: Arc<Budgets>,
    ) -> Self {
        let wrap = |client| Arc::new(client) as Arc<dyn CloudServices>;
        let settings = (timing, Config::default(), Some(budgets), Assignment::All);
        Self::launch(sim_config, settings, wrap).await
    }

    /// As [`Env::start`], the controllers seeing the cloud through the services `wrap`
    /// builds around the real client.
    pub async fn start_with(
        sim_config: SimConfig,
        timing: Timing,
        wrap: impl FnOnce(OpenStackClient) -> Arc<dyn CloudServices>,
    ) -> Self {
        let settings = (timing, Config::default(), None, Assignment::All);
        Self::launch(sim_config, settings, wrap).await
    }

    /// As [`Env::start`], the controllers reconciling only the namespaces `scope` admits
    /// (as one of several shards does).
    pub async fn start_scoped(sim_config: SimConfig, timing: Timing, scope: Assignment) -> Self {
        let settings = (timing, Config::default(), None, scope);
        Self::launch(sim_config, settings, |client| Arc::new(client)).await
    }

    async fn launch(
        sim_config: SimConfig,
        settings: Settings,
        wrap: impl FnOnce(OpenStackClient) -> Arc<dyn CloudServices>,
    ) -> Self {
        let cluster = TestCluster::from_env_or_start().await.expect("a cluster");
        let ns = cluster.namespace("e2e").await.expect("a namespace");
        let sim = Simulator::start(sim_config).await.expect("simulator");
        let ctx = context_with(&cluster, &ns, &sim, settings, wrap).await;
        let controllers = tokio::spawn(controllers::run_all(ctx.clone()));
        Env {
            cluster,
            sim,
            ctx,
            ns,
            controllers,
        }
    }

    /// Stops the controllers as a crash would (every reconcile in flight is dropped
    /// where it stands) and starts new ones, with a fresh context and the real client,
    /// on the same cluster and cloud.
    pub async fn restart(&mut self) {
        self.controllers.abort();
        // Gone only once the task has dropped everything it held.
        let _ = (&mut self.controllers).await;
        self.ctx = context(
            &self.cluster,
            &self.ns,
            &self.sim,
            self.ctx.timing,
            |client| Arc::new(client),
        )
        .await;
        self.controllers = tokio::spawn(controllers::run_all(self.ctx.clone()));
    }

    /// The simulator's cloud as the operator's own credentials reach it, for a test to
    /// change things behind the operator's back.
    pub fn cloud(&self) -> Arc<dyn CloudServices> {
        cloud_of(&self.sim)
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.cluster.client(), &self.ns)
    }

    /// Waits (30 s at most) until the VirtualMachine `name` is Ready, and returns it.
    pub async fn ready_vm(&self, name: &str) -> verda_api::v1alpha1::VirtualMachine {
        let api = self.api::<verda_api::v1alpha1::VirtualMachine>();
        eventually(
            &format!("{name} is Ready"),
            Duration::from_secs(30),
            || async {
                let vm = api.get(name).await.ok()?;
                verda_api::conditions::is_true(
                    &vm.status.as_ref()?.conditions,
                    verda_api::conditions::READY,
                )
                .then_some(vm)
            },
        )
        .await
    }

    /// Waits for an event with `reason` in the test namespace: an event is written
    /// after the status it tells of, so it may come a moment later.
    pub async fn event_seen(&self, reason: &str) {
        self.event_seen_within(reason, Duration::from_secs(30))
            .await;
    }

    /// As [`Env::event_seen`], waiting at most `limit`.
    pub async fn event_seen_within(&self, reason: &str, limit: Duration) {
        eventually(&format!("a {reason} event"), limit, || async {
            self.event_reasons()
                .await
                .iter()
                .any(|r| r == reason)
                .then_some(())
        })
        .await;
    }

    /// The reason of every event in the test namespace.
    pub async fn event_reasons(&self) -> Vec<String> {
        let events: Api<k8s_openapi::api::core::v1::Event> = self.api();
        let list = events
            .list(&kube::api::ListParams::default())
            .await
            .expect("events");
        list.items.into_iter().filter_map(|e| e.reason).collect()
    }

    /// `kubectl scale vmg/<group> --replicas=<replicas>`: a patch of the scale
    /// subresource.
    pub async fn scale(&self, group: &str, replicas: i32) {
        self.api::<verda_api::v1alpha1::VirtualMachineGroup>()
            .patch_scale(
                group,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&serde_json::json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("scale accepted");
    }

    /// Waits until the LoadBalancer `name` is Ready with `members` ("ready/total").
    pub async fn load_balancer_ready(
        &self,
        name: &str,
        members: &str,
    ) -> verda_api::v1alpha1::LoadBalancer {
        let api = self.api::<verda_api::v1alpha1::LoadBalancer>();
        eventually(
            &format!("{name} is Ready with {members} members"),
            Duration::from_secs(60),
            || async {
                let lb = api.get(name).await.ok()?;
                let s = lb.status.as_ref()?;
                (verda_api::conditions::is_true(&s.conditions, verda_api::conditions::READY)
                    && s.members.as_deref() == Some(members))
                .then_some(lb)
            },
        )
        .await
    }

    /// Creates the first document of `yaml` of kind K in the test namespace, as
    /// `kubectl apply` of a new object does.
    pub async fn create_from_yaml<K>(&self, yaml: &str) -> K
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + DeserializeOwned,
    {
        let mut obj: K = serde_saphyr::from_str(yaml).expect("valid manifest");
        obj.meta_mut().namespace = Some(self.ns.clone());
        self.api::<K>()
            .create(&PostParams::default(), &obj)
            .await
            .expect("created")
    }
}

/// Controllers scoped to the test's namespace, so that tests sharing a real cluster never
/// reconcile each other's objects.
async fn context(
    cluster: &TestCluster,
    ns: &str,
    sim: &Simulator,
    timing: Timing,
    wrap: impl FnOnce(OpenStackClient) -> Arc<dyn CloudServices>,
) -> Arc<Context> {
    let settings = (timing, Config::default(), None, Assignment::All);
    context_with(cluster, ns, sim, settings, wrap).await
}

/// The simulator's cloud as the operator's own credentials reach it, for a test to
/// change things behind the operator's back.
pub fn cloud_of(sim: &Simulator) -> Arc<dyn CloudServices> {
    let options = ClientOptions::default();
    let client = OpenStackClient::new(simulator_cloud(sim), Metrics::new(), options);
    Arc::new(client.expect("cloud client"))
}

/// A context for one of several shards: its own metrics and cloud client on `sim`,
/// reconciling the namespaces `owned` holds.
pub async fn shard_context(
    cluster: &TestCluster,
    sim: &Simulator,
    identity: &str,
    owned: Arc<OwnedNamespaces>,
) -> Context {
    // Each replica with budgets of its own, as each process has.
    let budgets = Budgets::new(BudgetSpec::default());
    let settings = (
        test_timing(),
        Config::default(),
        Some(budgets),
        Assignment::Owned(owned),
    );
    let ctx = context_with(cluster, "unused", sim, settings, |client| Arc::new(client)).await;
    let ctx = Arc::into_inner(ctx).expect("not shared yet");
    ctx.watching(None).reporting_as(identity)
}

/// How the controllers of a test run: timing, configuration, request budgets, and the
/// namespaces they reconcile.
type Settings = (Timing, Config, Option<Arc<Budgets>>, Assignment);

async fn context_with(
    cluster: &TestCluster,
    ns: &str,
    sim: &Simulator,
    (timing, config, budgets, scope): Settings,
    wrap: impl FnOnce(OpenStackClient) -> Arc<dyn CloudServices>,
) -> Arc<Context> {
    let metrics = Metrics::new();
    let options = ClientOptions {
        budgets: budgets.clone(),
        ..ClientOptions::default()
    };
    let client =
        OpenStackClient::new(simulator_cloud(sim), metrics.clone(), options).expect("cloud client");
    // Named as the operator names it: the cluster's kube-system UID (real or test).
    let id = verda_operator::runtime::cluster::identify(&cluster.client(), &config)
        .await
        .expect("the cluster's identity");
    let ctx = Context::new(cluster.client(), config, metrics, wrap(client), timing, id)
        .watching(Some(ns.to_owned()))
        .scoped(scope);
    Arc::new(match budgets {
        Some(budgets) => ctx.with_budgets(budgets),
        None => ctx,
    })
}

/// Polls `check` every 50 ms until it gives `Some`, for at most `limit`.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    match within(limit, check).await {
        Some(value) => value,
        None => panic!("timed out after {limit:?} waiting until {what}"),
    }
}

/// As [`eventually`], `None` past `limit`: for a caller that says more when it fails.
pub async fn within<T, F, Fut>(limit: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The calls `sim` received since the counts `before`, by `service/operation`.
pub fn calls_since(
    sim: &Simulator,
    before: &std::collections::BTreeMap<(String, String), u64>,
) -> std::collections::BTreeMap<String, u64> {
    sim.request_counts()
        .into_iter()
        .filter_map(|((service, op), n)| {
            let d = n - before
                .get(&(service.clone(), op.clone()))
                .copied()
                .unwrap_or(0);
            (d > 0).then(|| (format!("{service}/{op}"), d))
        })
        .collect()
}

/// A published sample manifest, read from `samples/`.
pub fn sample(name: &str) -> String {
    std::fs::read_to_string(super::crd_schema::repo_root().join("samples").join(name))
        .expect("sample exists")
}
