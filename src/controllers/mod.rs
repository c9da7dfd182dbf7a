//! The controllers, one folder per kind, and what starts them together: the watch
//! caches' feeds, the cloud view's refreshes and the wake-ups on credentials changes.
//! Only the leader (or, as a shard, each replica for its namespaces) runs them.
//!
//! What every kind shares (the driver, errors, events, backoff) is the runtime's
//! (`crate::runtime`); what they read (watch caches, cloud view) is the caches'.

pub mod dns_records;
pub mod dns_zone;
pub mod load_balancer;
mod ring_follower;
pub mod security_group;
pub mod virtual_machine;
pub mod virtual_machine_group;

pub use ring_follower::RingFollower;

use std::sync::Arc;

use crate::caches::{cloud_view, watch};
use crate::leases::assignment;
use crate::runtime::Context;
use crate::tenancy;

/// Runs every controller until the task is aborted.
pub async fn run_all(ctx: Arc<Context>) {
    tracing::info!(
        resync_period_secs = ctx.timing.resync.as_secs(),
        "controllers running"
    );
    // `verda_leader` is 1 exactly while this future runs: losing the lease drops it.
    // Shards hold no leader Lease (their gauges are verda_shard_*).
    let _leading = matches!(ctx.reach.assignment, assignment::Assignment::All)
        .then(|| Leading::mark(&ctx.metrics));
    let _following = Following::mark(&ctx.metrics);
    // Fresh caches first: the controllers read them from the start. The cloud view
    // starts empty too: another replica may have led in between.
    let writers = ctx.caches.renew();
    let (wakers, wake_ups) = cloud_view::wake_channels();
    ctx.view.start(wakers.clone());
    let secret_changes = ctx.tenancy.restart();
    let mut feeds = watch::Feeds::default();
    let vms = virtual_machine::run(ctx.clone(), &mut feeds, wake_ups.virtual_machines);
    let groups = virtual_machine_group::run(ctx.clone(), &mut feeds, wake_ups.groups);
    let lbs = load_balancer::run(ctx.clone(), &mut feeds, wake_ups.load_balancers);
    let zones = dns_zone::run(ctx.clone(), &mut feeds, wake_ups.dns_zones);
    let security_groups = security_group::run(ctx.clone(), &mut feeds, wake_ups.security_groups);
    tokio::join!(
        vms,
        groups,
        lbs,
        zones,
        security_groups,
        feeds.run(&ctx.reach, writers),
        cloud_view::refresh_forever(
            &ctx.view,
            ctx.surroundings(),
            ctx.timing.resync,
            wakers.clone()
        ),
        wake_on_secret_changes(ctx.clone(), secret_changes, wakers),
    );
}

/// Holds `verda_leader` at 1 while the controllers run; when dropped, back to 0 and
/// the per-object series go (the next leader exports its own).
struct Leading(Arc<crate::metrics::Metrics>);

impl Leading {
    fn mark(metrics: &Arc<crate::metrics::Metrics>) -> Self {
        metrics.leader.set(1);
        Self(metrics.clone())
    }
}

impl Drop for Leading {
    fn drop(&mut self) {
        self.0.leader.set(0);
        self.0.forget_objects();
    }
}

/// Lets reconciles write object series exactly while this future runs: one still
/// finishing after the controllers stopped writes none.
struct Following(Arc<crate::metrics::Metrics>);

impl Following {
    fn mark(metrics: &Arc<crate::metrics::Metrics>) -> Self {
        metrics.set_following(true);
        Self(metrics.clone())
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.0.set_following(false);
    }
}

/// A Secret objects refer to changed (credentials rotated, a certificate renewed;
/// created, deleted): every object of its namespace reconciles now, with what the
/// Secret holds now.
async fn wake_on_secret_changes(
    ctx: Arc<Context>,
    mut changes: tokio::sync::mpsc::UnboundedReceiver<tenancy::SecretKey>,
    wakers: cloud_view::Wakers,
) {
    while let Some(secret) = changes.recv().await {
        let caches = ctx.caches.current();
        let ns = &secret.namespace;
        // A refusal held until its retry (an Unauthorized, say) may heal with these.
        ctx.backoff.release_namespace(ns);
        wake_namespace(&caches.virtual_machines, ns, &wakers.virtual_machines).await;
        wake_namespace(&caches.groups, ns, &wakers.groups).await;
        wake_namespace(&caches.load_balancers, ns, &wakers.load_balancers).await;
        wake_namespace(&caches.dns_zones, ns, &wakers.dns_zones).await;
        wake_namespace(&caches.security_groups, ns, &wakers.security_groups).await;
    }
}

/// Wakes every object of `namespace` in `cache`.
async fn wake_namespace<K>(
    cache: &watch::Cache<K>,
    namespace: &str,
    waker: &tokio::sync::mpsc::UnboundedSender<kube::runtime::reflector::ObjectRef<K>>,
) where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    for obj in watch::in_namespace(cache, namespace).await {
        let _ = waker.send(kube::runtime::reflector::ObjectRef::from_obj(&*obj));
    }
}
