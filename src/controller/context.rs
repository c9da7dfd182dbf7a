//! What every controller shares: the Kubernetes client, the cloud ports, the
//! configuration, metrics, the event recorder and the retry bookkeeping.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::backoff::Backoff;
use super::cloud_view::CloudView;
use super::events::{Recorder, Reporter};
use super::scope::Scope;
use super::tenancy::Tenancy;
use super::watch_cache::CacheSlot;
use crate::cloud::budget::Budgets;
use crate::cloud::owner::{ClusterId, Owner};
use crate::cloud::{BlockStorage, CloudFuture, Compute, LoadBalancing, Network, OpenStackClient};
use crate::config::Config;
use crate::metrics::Metrics;

/// The cloud, per region. VirtualMachines use the cloud's own region; a LoadBalancer
/// may name another.
pub trait CloudPorts: Send + Sync {
    fn compute(&self) -> Arc<dyn Compute>;
    fn network(&self, region: Option<&str>) -> Arc<dyn Network>;
    fn load_balancing(&self, region: Option<&str>) -> Arc<dyn LoadBalancing>;
    /// Cinder, in the cloud's own region (where the VirtualMachines are).
    fn block_storage(&self) -> Arc<dyn BlockStorage>;
    /// The ID of the project these credentials act in (from their token).
    fn project_id(&self) -> CloudFuture<'_, String>;
}

impl CloudPorts for OpenStackClient {
    fn compute(&self) -> Arc<dyn Compute> {
        Arc::new(self.clone())
    }

    fn network(&self, region: Option<&str>) -> Arc<dyn Network> {
        Arc::new(in_region(self, region))
    }

    fn load_balancing(&self, region: Option<&str>) -> Arc<dyn LoadBalancing> {
        Arc::new(in_region(self, region))
    }

    fn block_storage(&self) -> Arc<dyn BlockStorage> {
        Arc::new(self.clone())
    }

    fn project_id(&self) -> CloudFuture<'_, String> {
        Box::pin(OpenStackClient::project_id(self))
    }
}

fn in_region(client: &OpenStackClient, region: Option<&str>) -> OpenStackClient {
    match region {
        Some(region) => client.with_region(region),
        None => client.clone(),
    }
}

/// How soon the controllers look again.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Drift check of an object that is converged.
    pub resync: Duration,
    /// While the cloud is busy (BUILD, PENDING_*, 409 immutable).
    pub poll: Duration,
    /// Retry period of terminal failures (ImageNotFound, QuotaExceeded, …).
    pub terminal_retry: Duration,
    /// Delay before replacing a server or load balancer in ERROR.
    pub error_replace: Duration,
    /// How long a scale-down waits for load balancers to drain a member.
    pub drain_timeout: Duration,
}

impl Timing {
    pub fn from_config(config: &Config) -> Self {
        Self {
            resync: config.resync_period,
            poll: Duration::from_secs(2),
            terminal_retry: Duration::from_secs(120),
            error_replace: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(120),
        }
    }
}

/// The controller name events are reported by.
const CONTROLLER: &str = "verda-operator";

/// Shared by every reconcile.
pub struct Context {
    pub client: kube::Client,
    /// The watch caches' client (the same as `client` unless given its own connections).
    pub watch_client: kube::Client,
    pub config: Config,
    pub metrics: Arc<Metrics>,
    /// Whose credentials each object acts with.
    pub tenancy: Tenancy,
    pub recorder: Recorder,
    pub backoff: Backoff,
    pub timing: Timing,
    /// The only namespace the controllers watch; `None` watches every namespace.
    pub watch_namespace: Option<String>,
    /// The watch caches of the running controllers.
    pub caches: CacheSlot,
    /// What the operator owns in the cloud, as last seen.
    pub view: CloudView,
    /// The cluster recorded on every cloud resource the operator creates.
    pub cluster: ClusterId,
    /// The namespaces this replica reconciles: all, or as a shard those it owns.
    pub scope: Scope,
}

impl Context {
    pub fn new(
        client: kube::Client,
        config: Config,
        metrics: Arc<Metrics>,
        cloud: Arc<dyn CloudPorts>,
        timing: Timing,
        cluster: ClusterId,
    ) -> Self {
        let reporter = Reporter {
            controller: CONTROLLER.into(),
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| CONTROLLER.into()),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            backoff: Backoff::new(timing.terminal_retry),
            tenancy: Tenancy::new(
                client.clone(),
                config.credentials.clone(),
                cloud,
                metrics.clone(),
            ),
            watch_client: client.clone(),
            client,
            config,
            metrics,
            timing,
            watch_namespace: None,
            caches: CacheSlot::new(),
            view: CloudView::default(),
            cluster,
            scope: Scope::All,
        }
    }

    /// The same context, reconciling only the namespaces `scope` admits.
    pub fn scoped(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// The owner record of `obj`'s cloud resources, naming this cluster.
    pub fn owner_of<K: kube::Resource>(&self, obj: &K) -> Owner {
        super::object::owner_of(obj).in_cluster(&self.cluster)
    }

    /// The same context, its watch caches listing and watching through `client`.
    pub fn watching_through(mut self, client: kube::Client) -> Self {
        self.watch_client = client;
        self
    }

    /// The same context, its events reported by the replica `identity`.
    pub fn reporting_as(mut self, identity: &str) -> Self {
        let reporter = Reporter {
            controller: CONTROLLER.into(),
            instance: identity.to_owned(),
        };
        self.recorder = Recorder::new(self.client.clone(), reporter);
        self
    }

    /// The same context, every tenant's client spending from `budgets`.
    pub fn with_budgets(self, budgets: Arc<Budgets>) -> Self {
        self.tenancy.spend_from(budgets);
        self
    }

    /// The same context, its controllers watching only `namespace`.
    pub fn watching(mut self, namespace: Option<String>) -> Self {
        self.watch_namespace = namespace;
        self
    }

    /// Whether a listing of the cloud asked for at `asked` is taken in for the owners of
    /// `namespace`: those this replica reconciles (see [`Scope::speaks_for`]).
    pub fn listing_speaks_for(&self, namespace: &str, asked: Instant) -> bool {
        self.watch_namespace
            .as_ref()
            .is_none_or(|ns| ns == namespace)
            && self.scope.speaks_for(namespace, asked)
    }

    /// How long a refresh of the cloud view vouches for what it saw.
    pub fn view_max_age(&self) -> Duration {
        CloudView::max_age(self.timing.resync)
    }

    /// The API the controllers watch `K` through: one namespace or all of them.
    pub fn watched<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match &self.watch_namespace {
            Some(ns) => kube::Api::namespaced(self.watch_client.clone(), ns),
            None => kube::Api::all(self.watch_client.clone()),
        }
    }
}
