//! `verda-operator run`: connect to Kubernetes, serve the health and metrics endpoints,
//! and run the controllers while holding the leader lease, until SIGTERM or SIGINT.
//!
//! Every start-up failure is one [`RunError`] whose message is the single line the user
//! sees; nothing here panics on bad input.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::watch;

use crate::cloud::CloudSelection;
use crate::cloud::CloudServices;
use crate::cloud::budget::Budgets;
use crate::config::{Config, ConfigError};
use crate::controllers;
use crate::embedded_cloud::{self, CloudSetupError};
use crate::http::{self, Health};
use crate::kube_clients::KubeClients;
use crate::leases::assignment::{Assignment, OwnedNamespaces};
use crate::leases::leader::{FatalLeaseError, LeaderElector, run_elected};
use crate::leases::shards::{self, ShardOptions};
use crate::metrics::Metrics;
use crate::runtime::{Context, Timing};

/// Options of the `run` command.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Explicit kubeconfig; otherwise `KUBECONFIG`, `~/.kube/config` or in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use.
    pub context: Option<String>,
    pub listen: SocketAddr,
    pub config: Option<PathBuf>,
    /// The only namespace to watch; `None` watches every namespace.
    pub namespace: Option<String>,
    /// Whether to hold a Lease before running the controllers (several replicas).
    pub leader_elect: bool,
    /// Whether to run as one of several shards dividing the namespaces (overrides
    /// `leader_elect`).
    pub shards: bool,
    /// With `shards`: only the namespaces with these labels (a label selector).
    pub shard_namespace_selector: Option<String>,
    pub lease_namespace: String,
    pub lease_name: String,
    pub identity: String,
    pub lease_duration: Duration,
    /// Which OpenStack cloud (`--cloud`, `OS_CLOUD`, clouds.yaml path).
    pub cloud: CloudSelection,
    /// The simulator started when no cloud is configured.
    pub embedded_simulator: embedded_cloud::SimulatorSettings,
}

/// Why `run` stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "no usable Kubernetes configuration ({0}); set KUBECONFIG, pass --kubeconfig, or run in a cluster"
    )]
    KubeConfig(String),
    #[error("cannot reach the Kubernetes API at {url}: {reason}")]
    KubeUnreachable { url: String, reason: String },
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Cloud(#[from] CloudSetupError),
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("leader election: {0}")]
    Lease(#[from] FatalLeaseError),
    #[error(transparent)]
    Cluster(#[from] crate::runtime::cluster::ClusterIdError),
}

/// How long the API server has to answer the start-up check.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the operator until a termination signal arrives.
pub async fn run(options: RunOptions) -> Result<(), RunError> {
    let config = Config::load(options.config.as_deref())?;
    let metrics = Metrics::new();
    // One budget per cloud project, for the operator's own client and every tenant's.
    let budgets = Budgets::new(config.request_budget.spec());
    // Before the embedded simulator binds its ephemeral ports, one of which could
    // otherwise take the port just chosen for --listen.
    let listener = http::bind(options.listen)
        .await
        .map_err(|source| RunError::Listen {
            addr: options.listen,
            source,
        })?;
    // Before anything logs, so that the embedded simulator's start is the first log line.
    let (selection, sim) = (&options.cloud, &options.embedded_simulator);
    let cloud =
        embedded_cloud::connect(selection, sim, metrics.clone(), Some(budgets.clone())).await?;
    let clients = connect(options.kubeconfig.as_deref(), options.context.as_deref()).await?;
    let client = clients.controllers.clone();
    let health = Health::new(metrics.clone());
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = tokio::spawn(http::serve(
        listener,
        health.clone(),
        stopped(stop_rx.clone()),
    ));
    health.set_ready(true);
    tracing::info!(listen = %options.listen, identity = %options.identity, "operator started");

    let timing = Timing::from_config(&config);
    let services: Arc<dyn CloudServices> = Arc::new(cloud.client.clone());
    let cluster = crate::runtime::cluster::identify(&client, &config).await?;
    crate::cloud::user_agent::name_cluster(&cluster);
    tracing::info!(%cluster, "cloud resources and cloud calls' user agent record this cluster");
    let owned = options.shards.then(Arc::<OwnedNamespaces>::default);
    let scope = owned.clone().map_or(Assignment::All, Assignment::Owned);
    let ctx = Arc::new(
        Context::new(client.clone(), config, metrics, services, timing, cluster)
            .watching(options.namespace.clone())
            .watching_through(clients.watches.clone())
            .reporting_as(&options.identity)
            .with_budgets(budgets)
            .scoped(scope),
    );
    let elected = match owned {
        Some(owned) => run_shard(&options, clients.lease, ctx, owned).await,
        None => run_controllers(&options, clients.lease, ctx).await,
    };
    tracing::info!("shutting down");
    health.set_ready(false);
    let _ = stop_tx.send(true);
    if let Ok(Err(error)) = server.await {
        tracing::warn!(%error, "metrics server stopped with an error");
    }
    drop(cloud);
    elected
}

/// Runs the controllers until a termination signal: once elected when
/// `--leader-elect`, else at once.
async fn run_controllers(
    options: &RunOptions,
    lease_client: kube::Client,
    ctx: Arc<Context>,
) -> Result<(), RunError> {
    let signals = termination_signal()?;
    if !options.leader_elect {
        tracing::info!(
            "leader election off: running the controllers now (pass --leader-elect to run several replicas)"
        );
        let controllers = tokio::spawn(controllers::run_all(ctx.clone()));
        signals.await;
        controllers.abort();
        let _ = controllers.await;
        return Ok(());
    }
    let elector = LeaderElector::new(
        lease_client,
        &options.lease_namespace,
        &options.lease_name,
        &options.identity,
        options.lease_duration,
    );
    let retry_every = options.lease_duration / 3;
    run_elected(&elector, retry_every, signals, || {
        tokio::spawn(controllers::run_all(ctx.clone()))
    })
    .await
    .map_err(RunError::from)
}

/// Runs the controllers as one shard until a termination signal: they reconcile the
/// namespaces this replica holds claims on, which it hands back before it stops.
async fn run_shard(
    options: &RunOptions,
    lease_client: kube::Client,
    ctx: Arc<Context>,
    owned: Arc<OwnedNamespaces>,
) -> Result<(), RunError> {
    let signals = termination_signal()?;
    tracing::info!(
        identity = %options.identity,
        ring = %options.lease_name,
        "running as one of several shards: reconciling the namespaces this replica claims"
    );
    let controllers = tokio::spawn(controllers::run_all(ctx.clone()));
    let shard = ShardOptions {
        lease_namespace: options.lease_namespace.clone(),
        ring: options.lease_name.clone(),
        identity: options.identity.clone(),
        lease_duration: options.lease_duration,
        namespace_selector: options.shard_namespace_selector.clone(),
        sweep_after: options.lease_duration * ShardOptions::SWEEP_AFTER_LEASES,
    };
    let follower = Arc::new(controllers::RingFollower(ctx));
    let ran = shards::run(follower, owned, lease_client, shard, signals).await;
    controllers.abort();
    let _ = controllers.await;
    ran.map_err(RunError::from)
}

/// Builds the Kubernetes clients (from `kubeconfig`, else `KUBECONFIG`, `~/.kube/config`
/// or in-cluster) and checks that the API server answers.
pub async fn connect(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<KubeClients, RunError> {
    let kube_options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let bad = |e: &dyn std::fmt::Display| RunError::KubeConfig(e.to_string());
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
                RunError::KubeConfig(format!("cannot read kubeconfig {}: {e}", path.display()))
            })?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube_options)
                .await
                .map_err(|e| bad(&e))?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&kube_options)
            .await
            .map_err(|e| bad(&e))?,
        None => kube::Config::infer().await.map_err(|e| bad(&e))?,
    };
    let url = config.cluster_url.to_string();
    let clients = KubeClients::new(config).map_err(|e| RunError::KubeUnreachable {
        url: url.clone(),
        reason: e.to_string(),
    })?;
    match tokio::time::timeout(CONNECT_TIMEOUT, clients.controllers.apiserver_version()).await {
        Ok(Ok(version)) => {
            tracing::debug!(url, version = %version.git_version, "connected to Kubernetes");
            Ok(clients)
        }
        Ok(Err(e)) => Err(RunError::KubeUnreachable {
            url,
            reason: crate::kube_error::describe(&e).to_string(),
        }),
        Err(_) => Err(RunError::KubeUnreachable {
            url,
            reason: format!("no answer within {}s", CONNECT_TIMEOUT.as_secs()),
        }),
    }
}

/// Resolves when the watch flips to true (or its sender is gone).
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

/// Resolves on SIGTERM or SIGINT.
fn termination_signal() -> Result<impl Future<Output = ()>, RunError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(RunError::Signals)?;
    let mut int = signal(SignalKind::interrupt()).map_err(RunError::Signals)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("received SIGTERM"),
            _ = int.recv() => tracing::info!("received SIGINT"),
        }
    })
}
