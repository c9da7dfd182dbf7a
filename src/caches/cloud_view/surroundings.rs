//! What a refresh of the cloud view reads besides the cloud.

use crate::caches::Reach;
use crate::caches::watch::CacheSlot;
use crate::cloud::owner::ClusterId;
use crate::metrics::Metrics;

/// What a refresh reads besides the cloud: the live objects (for the orphan gauges),
/// the cluster its resources record, what this replica reaches, and the gauges it sets.
#[derive(Clone, Copy)]
pub struct Surroundings<'a> {
    pub metrics: &'a Metrics,
    pub cluster: &'a ClusterId,
    pub caches: &'a CacheSlot,
    pub reach: &'a Reach,
}
