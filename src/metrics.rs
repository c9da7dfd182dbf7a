//! The operator's Prometheus metrics: one registry, created once and shared.
//!
//! Call sites never build label strings themselves: every family takes a typed label
//! set, so a metric label can never be assembled from `Debug` output or carry a secret.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of one OpenStack API request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudRequestLabels {
    /// `compute`, `load-balancer`, `network` or `identity`.
    pub service: &'static str,
    /// The port verb, e.g. `create_server`.
    pub operation: &'static str,
    /// HTTP status code, or `error` when no response arrived.
    pub code: String,
}

/// Labels of one OpenStack API operation, without its outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CloudOperationLabels {
    pub service: &'static str,
    pub operation: &'static str,
}

/// Every metric family the operator exports.
pub struct Metrics {
    registry: Registry,
    pub cloud_requests: Family<CloudRequestLabels, Counter>,
    pub cloud_request_duration: Family<CloudOperationLabels, Histogram>,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("verda");
        let cloud_requests = Family::<CloudRequestLabels, Counter>::default();
        registry.register(
            "cloud_requests",
            "OpenStack API requests by service, operation and HTTP status code",
            cloud_requests.clone(),
        );
        let cloud_request_duration =
            Family::<CloudOperationLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.005, 2.0, 12))
            });
        registry.register(
            "cloud_request_duration_seconds",
            "Duration of OpenStack API requests, retries included",
            cloud_request_duration.clone(),
        );
        Arc::new(Self {
            registry,
            cloud_requests,
            cloud_request_duration,
        })
    }

    /// The registry in the Prometheus text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
