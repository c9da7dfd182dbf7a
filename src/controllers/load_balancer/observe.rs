//! How a LoadBalancer reconcile sees its Octavia tree: from the shared cloud view when
//! it answers, else from Octavia — after the object's own create or member batch with
//! one call to the status tree (see [`crate::controllers::load_balancer::confirm`]), otherwise the whole tree — and
//! what the view keeps of it afterwards.

use crate::caches::cloud_view::{Cached, LoadBalancerView, OctaviaTree, ProjectView};
use crate::cloud::LoadBalancing;
use crate::cloud::Network;
use crate::cloud::model::loadbalancing::{ListenerTree, LoadBalancer as OsLoadBalancer};
use crate::cloud::owner::Owner;
use crate::controllers::load_balancer::confirm;
use crate::controllers::load_balancer::plan::Step;
use crate::controllers::load_balancer::tree;
use crate::runtime::{Context, ReconcileError};
use crate::tenancy::Tenant;
use verda_api::v1alpha1::{LoadBalancer, VipType};

/// The tree, and where it came from.
pub struct Look {
    pub tree: OctaviaTree,
    pub source: Source,
}

impl Look {
    /// Whether the tree came from the view without a call.
    pub fn from_view(&self) -> bool {
        self.source == Source::View
    }
}

/// Where a look's tree came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Source {
    /// The cloud view, without a call.
    View,
    /// Octavia, read whole.
    Read,
    /// Octavia's status tree, right after the owner's own write.
    AfterWrite,
    /// Octavia's status tree, [`QUIET`](crate::caches::cloud_view::QUIET) after that.
    Quiet,
    /// No load balancer, on the word of this term's listing ([`vouched_none`]).
    Listing,
}

/// Everything a look needs.
pub struct Sources<'a> {
    pub octavia: &'a dyn LoadBalancing,
    pub neutron: &'a dyn Network,
    pub lb: &'a LoadBalancer,
    pub owner: &'a Owner,
}

/// The tree as the view has it, brought up to date where the object wrote last;
/// `health`: its members' operating status read anew even when settled.
pub async fn look(
    from: &Sources<'_>,
    cached: Option<Cached>,
    health: bool,
) -> Result<Look, ReconcileError> {
    match cached {
        Some(Cached::Settled(tree)) if health => members(from, tree, Source::View).await,
        Some(Cached::Settled(tree)) => Ok(Look {
            tree,
            source: Source::View,
        }),
        Some(Cached::Created(lb, trees)) => {
            by_status(from, Some(lb.clone()), Source::AfterWrite, |status| {
                confirm::created(&lb, &trees, status)
            })
            .await
        }
        Some(Cached::MembersWritten(tree, _)) => members(from, tree, Source::AfterWrite).await,
        Some(Cached::Unconfirmed(tree)) => members(from, tree, Source::Quiet).await,
        None => read(from).await,
    }
}

/// Whether the owner has no load balancer on the word of this term's listing of its
/// region (see [`LoadBalancerView`]): only for a private load balancer (a public one's
/// floating IP is Neutron's to tell) that has never recorded one and would create
/// rather than import.
pub async fn vouched_none(
    ctx: &Context,
    tenant: &Tenant,
    view: &ProjectView,
    from: &Sources<'_>,
    creates: bool,
) -> bool {
    let lb = from.lb;
    let recorded = lb
        .status
        .as_ref()
        .is_some_and(|s| s.load_balancer_id.is_some() || s.floating_ip.is_some());
    if !creates || recorded || lb.spec.import.is_some() || lb.spec.vip_type != VipType::Private {
        return false;
    }
    let region = lb.spec.region.as_deref();
    let since = ctx.reach.assignment.since(&from.owner.namespace);
    ctx.view
        .load_balancers_listed(ctx.surroundings(), tenant, view, region, since)
        .await
        && view
            .load_balancers
            .vouches_none(&from.owner.uid, region, since)
}

/// No load balancer, as the listing vouched.
pub fn listed_none() -> Look {
    Look {
        tree: OctaviaTree::default(),
        source: Source::Listing,
    }
}

/// The whole tree, from Octavia itself: what every create is decided on but those the
/// listing vouches for.
pub async fn read(from: &Sources<'_>) -> Result<Look, ReconcileError> {
    Ok(Look {
        tree: tree::read(from.octavia, from.neutron, from.lb, from.owner).await?,
        source: Source::Read,
    })
}

/// `tree` with every pool's members as the status tree shows them.
async fn members(
    from: &Sources<'_>,
    tree: OctaviaTree,
    source: Source,
) -> Result<Look, ReconcileError> {
    let lb = tree.load_balancers.first().cloned();
    by_status(from, lb, source, |status| confirm::members(&tree, status)).await
}

/// One call to the status tree of `lb`, confirmed by `confirm`; the whole tree when the
/// status tree does not confirm it (or the load balancer is gone).
async fn by_status(
    from: &Sources<'_>,
    lb: Option<OsLoadBalancer>,
    source: Source,
    confirm: impl FnOnce(&crate::cloud::model::loadbalancing::StatusTree) -> Option<OctaviaTree>,
) -> Result<Look, ReconcileError> {
    let Some(lb) = lb else {
        return read(from).await;
    };
    let status = match from.octavia.get_status_tree(&lb.id).await {
        Ok(status) => status,
        Err(e) if e.is_not_found() => return read(from).await,
        Err(e) => {
            let key = from.owner.key();
            return Err(ReconcileError::cloud(
                "read the load balancer's status",
                &key,
            )(e));
        }
    };
    match confirm(&status) {
        Some(tree) => Ok(Look { tree, source }),
        None => read(from).await,
    }
}

/// What the view keeps after deciding `step` on `look`: a settled tree read from the
/// cloud, the tree with the members written after a member batch, nothing after any
/// other write (a create is recorded once Octavia answered it: [`remember_created`]).
pub fn remember(
    view: &LoadBalancerView,
    owner: &Owner,
    region: Option<&str>,
    look: &Look,
    step: &Step,
) {
    match step {
        // Nothing existed that a listing could bring back; never vouched for again.
        Step::Create(_) => view.creating(owner),
        Step::ReplaceMembers(_, pool, members) => {
            let mut tree = look.tree.clone();
            let written = members.iter().map(confirm::written_member).collect();
            tree.members.insert(pool.to_string(), written);
            view.record_member_write(owner, region, &tree, vec![pool.clone()]);
        }
        step if step.writes() => view.forget(owner, region),
        step if step.settled() => match look.source {
            Source::View | Source::Listing => {}
            Source::Read => view.record(owner, region, &look.tree),
            Source::AfterWrite => view.record_confirmed(owner, region, &look.tree, true),
            Source::Quiet => view.record_confirmed(owner, region, &look.tree, false),
        },
        _ => {}
    }
}

/// After a create Octavia accepted: the next look confirms the tree asked for with one
/// call to the status tree instead of reading it whole. A public load balancer's floating
/// IPs are the network's to tell, so it is read whole.
pub fn remember_created(
    view: &LoadBalancerView,
    owner: &Owner,
    lb: &LoadBalancer,
    created: OsLoadBalancer,
    trees: Vec<ListenerTree>,
) {
    if lb.spec.vip_type == verda_api::v1alpha1::VipType::Private {
        view.record_created(owner, lb.spec.region.as_deref(), created, trees);
    }
}
