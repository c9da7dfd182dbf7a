//! One view of what the operator owns in the cloud, shared by the controllers, so that
//! the cost of looking at a converged fleet does not grow with it: per refresh period,
//! one paginated list of the `verda-managed` servers and one of the `verda-managed`
//! load balancers per region (plus floating IPs while a public one is recorded), and no
//! call per object.
//!
//! Reconciles read the view only for what is settled and recently confirmed; while
//! anything is on its way (BUILD, PENDING_*, a write of their own) they read the cloud
//! and record what they saw. Before any create the owner is always looked up in the
//! cloud itself, never in the view, so a stale view cannot make a duplicate. A refresh
//! that finds an owner's resources changed, or gone, wakes that owner's reconcile.
//!
//! Why not Nova's `changes-since`: Nova drops a deleted server's tags, so a tag-filtered
//! `changes-since` cannot report a deletion. The full tagged listing can, at one call
//! per 1,000 servers.

mod load_balancers;
mod servers;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine};

pub use load_balancers::{Cached, LoadBalancerView, OctaviaTree};
pub use servers::ServerView;

use super::Context;
use crate::cloud::model::loadbalancing::LbFilter;
use crate::cloud::model::network::FloatingIpFilter;
use crate::cloud::owner::{MANAGED_TAG, Owner};

/// A refresh older than this many periods no longer vouches for anything.
const MAX_AGE_PERIODS: u32 = 3;

/// The servers and load balancers the operator owns, as last seen.
#[derive(Default)]
pub struct CloudView {
    pub servers: ServerView,
    pub load_balancers: LoadBalancerView,
}

impl CloudView {
    /// How long a confirmation stays good, for a refresh every `period`.
    pub fn max_age(period: Duration) -> Duration {
        period * MAX_AGE_PERIODS
    }

    pub fn clear(&self) {
        self.servers.clear();
        self.load_balancers.clear();
    }
}

/// The reconciles a refresh wakes.
pub struct Wakers {
    virtual_machines: mpsc::UnboundedSender<ObjectRef<VirtualMachine>>,
    load_balancers: mpsc::UnboundedSender<ObjectRef<LoadBalancer>>,
}

/// The streams the controllers take their refresh wake-ups from.
pub struct WakeUps {
    pub virtual_machines: BoxStream<'static, ObjectRef<VirtualMachine>>,
    pub load_balancers: BoxStream<'static, ObjectRef<LoadBalancer>>,
}

pub fn wake_channels() -> (Wakers, WakeUps) {
    let (vm_tx, vm_rx) = mpsc::unbounded_channel();
    let (lb_tx, lb_rx) = mpsc::unbounded_channel();
    (
        Wakers {
            virtual_machines: vm_tx,
            load_balancers: lb_tx,
        },
        WakeUps {
            virtual_machines: receive(vm_rx),
            load_balancers: receive(lb_rx),
        },
    )
}

fn receive<T: Send + 'static>(rx: mpsc::UnboundedReceiver<T>) -> BoxStream<'static, T> {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) }).boxed()
}

fn object_ref<K>(owner: &Owner) -> ObjectRef<K>
where
    K: kube::Resource<DynamicType = ()>,
{
    ObjectRef::new(&owner.name).within(&owner.namespace)
}

/// Refreshes the view every resync period until the task ends.
pub async fn refresh_forever(ctx: Arc<Context>, wakers: Wakers) {
    let mut tick = tokio::time::interval(ctx.timing.resync);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is at once; the controllers' first reconciles read the cloud anyway.
    tick.tick().await;
    loop {
        tick.tick().await;
        refresh(&ctx, &wakers).await;
    }
}

/// One refresh: lists only what the view holds something of.
pub async fn refresh(ctx: &Context, wakers: &Wakers) {
    if !ctx.view.servers.is_empty() {
        refresh_servers(ctx, wakers).await;
    }
    for (region, with_fips) in ctx.view.load_balancers.regions() {
        refresh_load_balancers(ctx, wakers, region.as_deref(), with_fips).await;
    }
}

async fn refresh_servers(ctx: &Context, wakers: &Wakers) {
    let asked = Instant::now();
    match ctx.cloud.compute().list_managed_servers().await {
        Ok(listed) => {
            for owner in ctx.view.servers.replace(listed, asked) {
                let _ = wakers.virtual_machines.send(object_ref(&owner));
            }
        }
        Err(error) => {
            tracing::warn!(%error, "could not refresh the view of servers; reconciles read Nova until the next refresh")
        }
    }
}

/// The `verda-managed` load balancers of `region`, and its floating IPs when a recorded
/// tree has one.
async fn refresh_load_balancers(
    ctx: &Context,
    wakers: &Wakers,
    region: Option<&str>,
    with_fips: bool,
) {
    let asked = Instant::now();
    let filter = LbFilter {
        tags: vec![MANAGED_TAG.to_owned()],
        ..LbFilter::default()
    };
    let named = region.unwrap_or("default");
    let listed = match ctx
        .cloud
        .load_balancing(region)
        .list_load_balancers(&filter)
        .await
    {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!(%error, region = named, "could not refresh the view of load balancers; reconciles read Octavia until the next refresh");
            return;
        }
    };
    let fips = if with_fips {
        let neutron = ctx.cloud.network(region);
        match neutron
            .list_floating_ips(&FloatingIpFilter::default())
            .await
        {
            Ok(fips) => Some(fips),
            Err(error) => {
                tracing::warn!(%error, region = named, "could not refresh the view of floating IPs; reconciles read Neutron until the next refresh");
                return;
            }
        }
    } else {
        None
    };
    let changed = ctx
        .view
        .load_balancers
        .confirm(region, &listed, fips.as_deref(), asked);
    for owner in changed {
        let _ = wakers.load_balancers.send(object_ref(&owner));
    }
}

/// A mutex whose poisoning (a panic elsewhere while holding it) does not matter: the
/// view is a cache, and every entry is whole.
#[derive(Default)]
pub struct Lock<T>(Mutex<T>);

impl<T> Lock<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
