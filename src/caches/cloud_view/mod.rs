//! One view of what the operator owns in the cloud, shared by the controllers, so that
//! the cost of looking at a converged fleet does not grow with it: per refresh period,
//! one paginated list of the `verda-managed` servers and one of the `verda-managed`
//! load balancers per region (plus floating IPs while a public one is recorded), and no
//! call per object.
//!
//! Reconciles read the view only for what is settled and recently confirmed; while
//! anything is on its way (BUILD, PENDING_*, a write of their own) they read the cloud
//! and record what they saw. A create is decided on the cloud itself: on a lookup of
//! the owner, or on a listing of the project (per region, for load balancers) taken
//! during this term that the view vouches for (see [`ServerView`]; the first is taken
//! early, on the first create that needs it, so a burst of creates costs one listing,
//! not a lookup each). A refresh that finds an owner's resources changed, or gone, wakes that
//! owner's reconcile.
//!
//! Why not Nova's `changes-since`: Nova drops a deleted server's tags, so a tag-filtered
//! `changes-since` cannot report a deletion. The full tagged listing can, at one call
//! per 1,000 servers.

mod firewalls;
mod holders;
mod kept_server;
mod listener_stats;
mod load_balancers;
mod members;
mod orphans;
mod port_records;
mod record_sets;
mod server_groups;
mod servers;
mod surroundings;
mod volumes;
mod zones;

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;
use verda_api::v1alpha1::{
    DNSZone, LoadBalancer, SecurityGroup, VirtualMachine, VirtualMachineGroup,
};

pub use firewalls::FirewallView;
pub use holders::Holders;
pub use listener_stats::{ListenerStatsView, Readings};
pub use load_balancers::{Cached, LoadBalancerView, OctaviaTree, QUIET};
pub use members::{MemberMemory, MemberSet};
pub use port_records::PortView;
pub use record_sets::{RecordSetView, Written};
pub use server_groups::{Known as KnownServerGroup, ServerGroupView};
pub use servers::ServerView;
pub use surroundings::Surroundings;
pub use volumes::{VolumeOwner, VolumeView};
pub use zones::ZoneView;

use crate::caches::watch::packed::Packed;
use crate::cloud::CloudServices;
use crate::cloud::model::compute::Server;
use crate::cloud::model::loadbalancing::LbFilter;
use crate::cloud::model::network::{FloatingIpFilter, PortFilter};
use crate::cloud::orphans::ResourceKind;
use crate::cloud::owner::{MANAGED_TAG, Owner, namespace_in, port_owner, server_group_uid};
use crate::lock::Lock;
use crate::tenancy::Tenant;

/// A refresh older than this many periods no longer vouches for anything.
const MAX_AGE_PERIODS: u32 = 3;

/// What the operator owns in the cloud, per project, as last seen.
#[derive(Default)]
pub struct CloudView {
    projects: Lock<HashMap<String, Arc<ProjectView>>>,
    /// The reconciles a refresh wakes, in this term.
    wakers: Lock<Option<Wakers>>,
}

/// The servers and load balancers the operator owns in one project, and the
/// credentials last used there (held weakly: credentials dropped because their Secret
/// changed or went away are not used to refresh).
#[derive(Default)]
pub struct ProjectView {
    pub servers: ServerView,
    /// Data volumes; refreshed only once some object of the project has one.
    pub volumes: VolumeView,
    pub load_balancers: LoadBalancerView,
    /// Declared ports, by owner record; listed only on demand.
    pub network_ports: PortView,
    /// Each LoadBalancer's pool members when it last converged (drift reports).
    pub lb_members: MemberMemory,
    /// Nova's availability zones; listed only for groups that spread over zones.
    pub zones: ZoneView,
    /// Cinder's; listed only to create a volume for a server in a zone.
    pub volume_zones: ZoneView,
    /// Designate's record sets per zone; listed only for objects with DNS names.
    pub record_sets: RecordSetView,
    /// Servers that hold a volume or port a VirtualMachine waits for, seen alive.
    pub holders: Holders,
    /// Statistics of the listeners autoscaled groups read.
    pub listener_stats: ListenerStatsView,
    /// Security groups with their rules; listed only for SecurityGroups.
    pub firewalls: FirewallView,
    /// The VirtualMachineGroups' server groups; listed once per term, on demand.
    pub server_groups: ServerGroupView,
    /// The credentials last used in the project, which a refresh lists with while a
    /// reconcile still holds them.
    services: Lock<Option<Weak<dyn CloudServices>>>,
    /// When a listing of servers was last taken on demand.
    server_listing_tried: Tried,
    /// When the project's ports were last listed on demand.
    port_listing_tried: Tried,
    /// When the project's server groups were last listed on demand.
    server_group_listing_tried: Tried,
    /// When a listing of load balancers was last taken on demand, per region.
    lb_listings_tried: Lock<HashMap<Option<String>, Arc<Tried>>>,
}

impl CloudView {
    /// How long a confirmation stays good, for a refresh every `period`.
    pub fn max_age(period: Duration) -> Duration {
        period * MAX_AGE_PERIODS
    }

    /// The view of `tenant`'s project, refreshed from now on with its credentials.
    pub fn of(&self, tenant: &Tenant) -> Arc<ProjectView> {
        let view = self
            .projects
            .lock()
            .entry(tenant.project.clone())
            .or_default()
            .clone();
        *view.services.lock() = Some(Arc::downgrade(&tenant.services));
        view
    }

    /// `namespace` is handed to another replica: what this view saw of its owners is
    /// dropped, so that, should it come back, nothing seen before answers for it. The
    /// owners it sent creates for stay remembered (they are looked up, not vouched for).
    pub fn forget_namespace(&self, namespace: &str) {
        for (_, project) in self.projects() {
            project.servers.forget_namespace(namespace);
            project.volumes.forget_namespace(namespace);
            project.load_balancers.forget_namespace(namespace);
        }
    }

    /// The namespaces whose owners' servers or volumes the view holds, in any project.
    pub fn namespaces_held(&self) -> std::collections::BTreeSet<String> {
        let projects = self.projects();
        let held = projects.iter().flat_map(|(_, project)| {
            let servers = project.servers.namespaces();
            servers.into_iter().chain(project.volumes.namespaces())
        });
        held.collect()
    }

    /// A new term: nothing seen yet, and these reconciles to wake.
    pub fn start(&self, wakers: Wakers) {
        self.projects.lock().clear();
        *self.wakers.lock() = Some(wakers);
    }

    /// Whether `view` (`tenant`'s project) holds a listing of servers of this term asked
    /// for since `since` (see [`Assignment::since`](crate::leases::assignment::Assignment::since)). If it does
    /// not, lists them first: once per term, the first refresh taken early, by whichever
    /// reconcile asks first while the others wait for it.
    pub async fn servers_listed(
        &self,
        ctx: Surroundings<'_>,
        tenant: &Tenant,
        view: &ProjectView,
        since: Option<Instant>,
    ) -> bool {
        let listed = || view.servers.listed(since);
        let tried = &view.server_listing_tried;
        self.listed_once(
            (ctx, tenant, view),
            tried,
            since,
            listed,
            |project, wakers| async move { project.refresh_servers(&wakers).await },
        )
        .await
    }

    /// As [`CloudView::servers_listed`], for the records of the project's ports (not
    /// refreshed: the view's own creates keep it whole for the term).
    pub async fn ports_listed(
        &self,
        ctx: Surroundings<'_>,
        tenant: &Tenant,
        view: &ProjectView,
        since: Option<Instant>,
    ) -> bool {
        let listed = || view.network_ports.listed(since);
        let tried = &view.port_listing_tried;
        self.listed_once(
            (ctx, tenant, view),
            tried,
            since,
            listed,
            |project, _| async move { project.list_port_records().await },
        )
        .await
    }

    /// As [`CloudView::ports_listed`], for the project's server groups.
    pub async fn server_groups_listed(
        &self,
        ctx: Surroundings<'_>,
        tenant: &Tenant,
        view: &ProjectView,
        since: Option<Instant>,
    ) -> bool {
        let listed = || view.server_groups.listed(since);
        let tried = &view.server_group_listing_tried;
        self.listed_once(
            (ctx, tenant, view),
            tried,
            since,
            listed,
            |project, _| async move { project.list_server_groups().await },
        )
        .await
    }

    /// As [`CloudView::servers_listed`], for the load balancers of `region`.
    pub async fn load_balancers_listed(
        &self,
        ctx: Surroundings<'_>,
        tenant: &Tenant,
        view: &ProjectView,
        region: Option<&str>,
        since: Option<Instant>,
    ) -> bool {
        let tried = {
            let mut listings = view.lb_listings_tried.lock();
            let entry = listings.entry(region.map(str::to_owned)).or_default();
            entry.clone()
        };
        let listed = || view.load_balancers.listed(region, since);
        self.listed_once(
            (ctx, tenant, view),
            &tried,
            since,
            listed,
            |project, wakers| async move {
                project.refresh_load_balancers(&wakers, region, false).await
            },
        )
        .await
    }

    /// Whether `listed` holds; if not, takes `listing` first (see
    /// [`CloudView::servers_listed`]), once since `since` whoever asks.
    async fn listed_once<'a, F>(
        &self,
        (ctx, tenant, view): (Surroundings<'a>, &'a Tenant, &'a ProjectView),
        tried: &Tried,
        since: Option<Instant>,
        listed: impl Fn() -> bool,
        listing: impl FnOnce(Project<'a>, Wakers) -> F,
    ) -> bool
    where
        F: Future<Output = ()>,
    {
        if listed() {
            return true;
        }
        if let Some((project, wakers)) = self.in_term(ctx, tenant, view) {
            list_once_since(tried, since, listing(project, wakers)).await;
        }
        listed()
    }

    /// `tenant`'s project as a refresh sees it, and the reconciles it wakes; none
    /// before the term started.
    fn in_term<'a>(
        &self,
        ctx: Surroundings<'a>,
        tenant: &'a Tenant,
        view: &'a ProjectView,
    ) -> Option<(Project<'a>, Wakers)> {
        let wakers = self.wakers.lock().clone()?;
        let project = Project {
            id: &tenant.project,
            view,
            services: tenant.services.as_ref(),
            ctx,
        };
        Some((project, wakers))
    }

    fn projects(&self) -> Vec<(String, Arc<ProjectView>)> {
        let projects = self.projects.lock();
        projects
            .iter()
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect()
    }
}

/// What a listing of port records asks Neutron for.
const PORT_RECORD_FIELDS: &[&str] = &["id", "network_id", "description"];

/// When a listing was last taken on demand, held while it is taken.
type Tried = tokio::sync::Mutex<Option<Instant>>;

/// Takes `listing` unless one was tried since `since` (at all, when `None`): a burst of
/// creates waits for one listing, and one that failed is not retried by each of them
/// (they look their owners up instead).
async fn list_once_since(tried: &Tried, since: Option<Instant>, listing: impl Future<Output = ()>) {
    let mut tried = tried.lock().await;
    if servers::asked_since(*tried, since) {
        return;
    }
    *tried = Some(Instant::now());
    listing.await;
}

/// The reconciles a refresh (or a changed credentials Secret) wakes.
#[derive(Clone)]
pub struct Wakers {
    pub virtual_machines: mpsc::UnboundedSender<ObjectRef<Packed<VirtualMachine>>>,
    pub groups: mpsc::UnboundedSender<ObjectRef<Packed<VirtualMachineGroup>>>,
    pub load_balancers: mpsc::UnboundedSender<ObjectRef<Packed<LoadBalancer>>>,
    /// A changed credentials Secret only: a refresh has nothing to tell a DNSZone.
    pub dns_zones: mpsc::UnboundedSender<ObjectRef<DNSZone>>,
    /// A changed credentials Secret, or a VirtualMachine that may use the group.
    pub security_groups: mpsc::UnboundedSender<ObjectRef<SecurityGroup>>,
}

/// The streams the controllers take those wake-ups from.
pub struct WakeUps {
    pub virtual_machines: BoxStream<'static, ObjectRef<Packed<VirtualMachine>>>,
    pub groups: BoxStream<'static, ObjectRef<Packed<VirtualMachineGroup>>>,
    pub load_balancers: BoxStream<'static, ObjectRef<Packed<LoadBalancer>>>,
    pub dns_zones: BoxStream<'static, ObjectRef<DNSZone>>,
    pub security_groups: BoxStream<'static, ObjectRef<SecurityGroup>>,
}

pub fn wake_channels() -> (Wakers, WakeUps) {
    let (vm_tx, vm_rx) = mpsc::unbounded_channel();
    let (group_tx, group_rx) = mpsc::unbounded_channel();
    let (lb_tx, lb_rx) = mpsc::unbounded_channel();
    let (zone_tx, zone_rx) = mpsc::unbounded_channel();
    let (sg_tx, sg_rx) = mpsc::unbounded_channel();
    (
        Wakers {
            virtual_machines: vm_tx,
            groups: group_tx,
            load_balancers: lb_tx,
            dns_zones: zone_tx,
            security_groups: sg_tx,
        },
        WakeUps {
            virtual_machines: receive(vm_rx),
            groups: receive(group_rx),
            load_balancers: receive(lb_rx),
            dns_zones: receive(zone_rx),
            security_groups: receive(sg_rx),
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

/// The first refresh comes this soon after the start (or a period, if shorter): the
/// controllers' first reconciles read the cloud anyway, but the orphan gauge has no
/// value until a refresh.
const FIRST_REFRESH: std::time::Duration = std::time::Duration::from_secs(30);

/// Refreshes `view` once soon after the start, then every `period` until the task
/// ends.
pub async fn refresh_forever(
    view: &CloudView,
    ctx: Surroundings<'_>,
    period: Duration,
    wakers: Wakers,
) {
    tokio::time::sleep(period.min(FIRST_REFRESH)).await;
    view.refresh(ctx, &wakers).await;
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The interval's first tick is at once: the refresh above was that one.
    tick.tick().await;
    loop {
        tick.tick().await;
        view.refresh(ctx, &wakers).await;
    }
}

impl CloudView {
    /// One refresh of every project: lists only what the view holds something of, with
    /// the credentials last used in that project.
    pub async fn refresh(&self, ctx: Surroundings<'_>, wakers: &Wakers) {
        for (project, view) in self.projects() {
            let services = view.services.lock().as_ref().and_then(Weak::upgrade);
            let Some(services) = services else {
                tracing::debug!(
                    project,
                    "no live credentials for this project: its view is not refreshed; reconciles read the cloud"
                );
                continue;
            };
            let project = Project {
                id: &project,
                view: &view,
                services: services.as_ref(),
                ctx,
            };
            project.refresh(wakers).await;
        }
    }
}

/// One project's view and the credentials to refresh it with.
struct Project<'a> {
    id: &'a str,
    view: &'a ProjectView,
    services: &'a dyn CloudServices,
    ctx: Surroundings<'a>,
}

impl Project<'_> {
    /// Whether a listing asked for at `asked` is taken in for the resource recording
    /// `metadata`: one of another shard's namespaces is not (its reconciles never ask);
    /// one recording no owner is, for what its tags say.
    fn speaks_for(
        &self,
        metadata: &std::collections::BTreeMap<String, String>,
        asked: Instant,
    ) -> bool {
        namespace_in(metadata).is_none_or(|ns| self.ctx.reach.listing_speaks_for(ns, asked))
    }

    async fn refresh(&self, wakers: &Wakers) {
        if !self.view.servers.is_empty() {
            self.refresh_servers(wakers).await;
        }
        if !self.view.volumes.is_empty() {
            self.refresh_volumes(wakers).await;
        }
        for (region, with_fips) in self.view.load_balancers.regions() {
            self.refresh_load_balancers(wakers, region.as_deref(), with_fips)
                .await;
        }
        for region in self.view.firewalls.regions() {
            self.refresh_firewalls(wakers, region.as_deref()).await;
        }
    }

    /// The project's security groups: the SecurityGroups whose group changed or went
    /// are woken.
    async fn refresh_firewalls(&self, wakers: &Wakers, region: Option<&str>) {
        let neutron = self.services.firewalls(region);
        let list = neutron.all_security_groups();
        match self.view.firewalls.refresh(region, list).await {
            Ok(woken) => {
                for owner in woken {
                    let _ = wakers.security_groups.send(owner);
                }
            }
            Err(e) => tracing::warn!(
                project = self.id,
                error = %e,
                "could not list the project's security groups; drift is found at the SecurityGroups' next look"
            ),
        }
    }

    /// The project's `verda-managed` servers, taken in page by page (at 10,000
    /// servers a listing held whole beside the view raised the operator's peak RSS by
    /// 30–40 MB).
    async fn refresh_servers(&self, wakers: &Wakers) {
        let mut listing = self.view.servers.listing().await;
        let asked = listing.asked();
        let mut orphans = orphans::ServerOrphans::new(self.ctx);
        let mut take = |mut page: Vec<Server>| {
            orphans.add(&page);
            page.retain(|server| self.speaks_for(&server.metadata, asked));
            listing.take(page);
        };
        match self
            .services
            .compute()
            .each_managed_server_page(&mut take)
            .await
        {
            Ok(()) => {
                self.ctx.metrics.set_orphans(
                    self.id,
                    ResourceKind::Server.as_str(),
                    orphans.count(),
                );
                for owner in listing.finish() {
                    let _ = wakers.virtual_machines.send(object_ref(&owner));
                }
            }
            Err(error) => {
                tracing::warn!(project = self.id, %error, "could not refresh the view of servers; reconciles read Nova until the next refresh")
            }
        }
    }

    /// The owner records of the project's ports: one listing of IDs and descriptions.
    async fn list_port_records(&self) {
        let asked = Instant::now();
        let filter = PortFilter {
            project_id: Some(self.id.to_owned()),
            fields: PORT_RECORD_FIELDS,
            ..PortFilter::default()
        };
        match self.services.network(None).list_ports(&filter).await {
            Ok(listed) => {
                let ours = listed.into_iter().filter(|p| {
                    port_owner(&p.description)
                        .is_some_and(|(_, _, c)| c == self.ctx.cluster.as_str())
                });
                let shown = ours.map(|p| p.description).collect();
                self.view.network_ports.listing(shown, asked);
            }
            Err(error) => {
                tracing::warn!(project = self.id, %error, "could not list the project's ports; each new VirtualMachine's ports are looked up instead")
            }
        }
    }

    /// The owners of the project's server groups: one listing (Nova pages it by offset).
    async fn list_server_groups(&self) {
        let asked = Instant::now();
        match self.services.compute().list_server_groups().await {
            Ok(listed) => {
                let shown = listed
                    .iter()
                    .filter_map(|g| server_group_uid(&g.name))
                    .map(str::to_owned)
                    .collect();
                self.view.server_groups.listing(shown, asked);
            }
            Err(error) => {
                tracing::warn!(project = self.id, %error, "could not list the project's server groups; each new VirtualMachineGroup looks for its own instead")
            }
        }
    }

    /// This cluster's data volumes: one paginated list filtered on the cluster key.
    async fn refresh_volumes(&self, wakers: &Wakers) {
        let asked = Instant::now();
        let filter = self.ctx.cluster.volume_filter();
        match self.services.block_storage().list_volumes(&filter).await {
            Ok(mut listed) => {
                let orphans = orphans::count_volumes(self.ctx, &listed);
                listed.retain(|volume| self.speaks_for(&volume.metadata, asked));
                self.ctx
                    .metrics
                    .set_orphans(self.id, ResourceKind::Volume.as_str(), orphans);
                for owner in self.view.volumes.replace(listed, asked) {
                    let (namespace, name) = owner.virtual_machine();
                    let vm = ObjectRef::new(&name).within(&namespace);
                    let _ = wakers.virtual_machines.send(vm);
                }
            }
            Err(error) => {
                tracing::warn!(project = self.id, %error, "could not refresh the view of volumes; reconciles read Cinder until the next refresh")
            }
        }
    }

    /// The `verda-managed` load balancers of `region`, and its floating IPs when a
    /// recorded tree has one.
    async fn refresh_load_balancers(&self, wakers: &Wakers, region: Option<&str>, with_fips: bool) {
        let asked = Instant::now();
        let filter = LbFilter {
            tags: vec![MANAGED_TAG.to_owned()],
            ..LbFilter::default()
        };
        let named = region.unwrap_or("default");
        let listed = match self
            .services
            .load_balancing(region)
            .list_load_balancers(&filter)
            .await
        {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(project = self.id, %error, region = named, "could not refresh the view of load balancers; reconciles read Octavia until the next refresh");
                return;
            }
        };
        let fips = if with_fips {
            let neutron = self.services.network(region);
            match neutron
                .list_floating_ips(&FloatingIpFilter::default())
                .await
            {
                Ok(fips) => Some(fips),
                Err(error) => {
                    tracing::warn!(project = self.id, %error, region = named, "could not refresh the view of floating IPs; reconciles read Neutron until the next refresh");
                    return;
                }
            }
        } else {
            None
        };
        let orphans = orphans::count_load_balancers(self.ctx, &listed);
        let scope = format!("{}/{named}", self.id);
        self.ctx
            .metrics
            .set_orphans(&scope, ResourceKind::LoadBalancer.as_str(), orphans);
        let changed = self
            .view
            .load_balancers
            .confirm(region, &listed, fips.as_deref(), asked);
        for owner in changed {
            let _ = wakers.load_balancers.send(object_ref(&owner));
        }
    }
}
