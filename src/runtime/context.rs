//! What every reconcile shares, built from parts: the Kubernetes client, the
//! configuration and timing, metrics, the event recorder, the retry bookkeeping, whose
//! credentials each object acts with ([`Tenancy`]), what the controllers read (the watch
//! caches and the cloud view) and what this replica covers ([`Reach`]). Each part takes
//! only what it uses; the context only holds them together for the controllers.

use std::sync::Arc;
use std::time::Duration;

use crate::autoscaler::Autoscaler;
use crate::caches::Reach;
use crate::caches::cloud_view::{CloudView, Surroundings};
use crate::caches::watch::CacheSlot;
use crate::cloud::CloudServices;
use crate::cloud::budget::Budgets;
use crate::cloud::owner::{ClusterId, Owner};
use crate::config::Config;
use crate::leases::Assignment;
use crate::metrics::Metrics;
use crate::runtime::backoff::Backoff;
use crate::runtime::events::{Recorder, Reporter};
use crate::tenancy::Tenancy;

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
            error_replace: config.error_replace_delay,
            drain_timeout: Duration::from_secs(120),
        }
    }
}

/// The controller name events are reported by.
const CONTROLLER: &str = "verda-operator";

/// Shared by every reconcile.
pub struct Context {
    pub client: kube::Client,
    pub config: Config,
    pub metrics: Arc<Metrics>,
    /// Whose credentials each object acts with.
    pub tenancy: Tenancy,
    pub recorder: Recorder,
    pub backoff: Backoff,
    pub timing: Timing,
    /// The watch caches of the running controllers.
    pub caches: CacheSlot,
    /// What the operator owns in the cloud, as last seen.
    pub view: CloudView,
    /// The cluster recorded on every cloud resource the operator creates.
    pub cluster: ClusterId,
    /// The namespaces this replica watches and reconciles.
    pub reach: Reach,
    /// Autoscaled groups' Prometheus answers and recent proposals.
    pub autoscaler: Autoscaler,
}

impl Context {
    pub fn new(
        client: kube::Client,
        config: Config,
        metrics: Arc<Metrics>,
        cloud: Arc<dyn CloudServices>,
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
            reach: Reach::everywhere(client.clone()),
            autoscaler: Autoscaler::new(config.prometheus.as_ref()),
            client,
            config,
            metrics,
            timing,
            caches: CacheSlot::new(),
            view: CloudView::default(),
            cluster,
        }
    }

    /// The same context, reconciling only the namespaces `assignment` admits.
    pub fn scoped(mut self, assignment: Assignment) -> Self {
        self.reach.assignment = assignment;
        self
    }

    /// The owner record of `obj`'s cloud resources (its UID, namespace and name),
    /// naming this cluster.
    pub fn owner_of<K: kube::Resource>(&self, obj: &K) -> Owner {
        use kube::ResourceExt;
        let (uid, namespace) = (obj.uid(), obj.namespace());
        Owner::new(
            uid.unwrap_or_default(),
            namespace.unwrap_or_default(),
            obj.name_any(),
        )
        .in_cluster(&self.cluster)
    }

    /// The same context, its watch caches listing and watching through `client`.
    pub fn watching_through(mut self, client: kube::Client) -> Self {
        self.reach.client = client;
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
        self.reach.namespace = namespace;
        self
    }

    /// How long a refresh of the cloud view vouches for what it saw.
    pub fn view_max_age(&self) -> Duration {
        CloudView::max_age(self.timing.resync)
    }

    /// What the cloud view reads besides the cloud when it refreshes.
    pub fn surroundings(&self) -> Surroundings<'_> {
        Surroundings {
            metrics: &self.metrics,
            cluster: &self.cluster,
            caches: &self.caches,
            reach: &self.reach,
        }
    }
}
