//! What a replica running as one of several shards (`--shards`) holds: the namespaces
//! it reconciles, the members of its ring, and the objects its watch caches hold. Zero
//! in the leader-elected mode.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::labels::KindLabels;

#[derive(Default)]
pub struct ShardMetrics {
    /// Namespaces this replica holds the claim of and reconciles.
    pub namespaces: Gauge,
    /// Members of the ring alive as this replica sees them, itself included.
    pub members: Gauge,
    /// Objects in this replica's watch caches, by kind.
    pub objects: Family<KindLabels, Gauge>,
}

impl ShardMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "shard_namespaces",
            "With --shards: namespaces this replica holds the claim of and reconciles",
            self.namespaces.clone(),
        );
        registry.register(
            "shard_members",
            "With --shards: members of the ring alive as this replica sees them, itself included",
            self.members.clone(),
        );
        registry.register(
            "shard_objects",
            "With --shards: objects in this replica's watch caches (its namespaces'), by kind",
            self.objects.clone(),
        );
    }
}
