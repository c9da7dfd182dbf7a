//! How a LoadBalancer reconcile sees its Octavia tree: from the shared cloud view when
//! it answers, else from Octavia — after the object's own member batches by reading only
//! the load balancer and the pools written, otherwise the whole tree — and what the view
//! keeps of it afterwards.

use super::plan::Step;
use super::resolve::{self, Observed, keeper};
use crate::cloud::ids::PoolId;
use crate::cloud::owner::Owner;
use crate::cloud::{LoadBalancing, Network};
use crate::controller::ReconcileError;
use crate::controller::cloud_view::{Cached, LoadBalancerView};
use verda_api::v1alpha1::LoadBalancer;

/// The tree, and whether it came from the view without a call.
pub struct Look {
    pub tree: Observed,
    pub from_view: bool,
}

/// Everything a look needs.
pub struct Sources<'a> {
    pub octavia: &'a dyn LoadBalancing,
    pub neutron: &'a dyn Network,
    pub lb: &'a LoadBalancer,
    pub owner: &'a Owner,
}

/// The tree as the view has it, brought up to date where the object wrote last.
pub async fn look(from: &Sources<'_>, cached: Option<Cached>) -> Result<Look, ReconcileError> {
    match cached {
        Some(Cached::Settled(tree)) => Ok(Look {
            tree,
            from_view: true,
        }),
        Some(Cached::MembersWritten(tree, pools)) => Ok(Look {
            tree: after_member_write(from, tree, &pools).await?,
            from_view: false,
        }),
        None => read(from).await,
    }
}

/// The whole tree, from Octavia itself: what every create is decided on.
pub async fn read(from: &Sources<'_>) -> Result<Look, ReconcileError> {
    Ok(Look {
        tree: resolve::observe(from.octavia, from.neutron, from.lb, from.owner).await?,
        from_view: false,
    })
}

/// Re-reads the kept load balancer and, once it is no longer busy, the members of the
/// pools just written: two or three calls instead of the whole tree.
async fn after_member_write(
    from: &Sources<'_>,
    mut tree: Observed,
    pools: &[PoolId],
) -> Result<Observed, ReconcileError> {
    let key = from.owner.key();
    let Some(kept) = keeper(from.lb, &tree.load_balancers).map(|l| l.id.clone()) else {
        return Ok(read(from).await?.tree);
    };
    let now = match from.octavia.get_load_balancer(&kept).await {
        Ok(now) => now,
        Err(e) if e.is_not_found() => return Ok(read(from).await?.tree),
        Err(e) => return Err(ReconcileError::cloud("read the load balancer", &key)(e)),
    };
    let busy = now.provisioning_status.is_pending();
    for l in tree.load_balancers.iter_mut().filter(|l| l.id == kept) {
        *l = now.clone();
    }
    if busy {
        return Ok(tree);
    }
    for pool in pools {
        let members = from
            .octavia
            .list_members(pool)
            .await
            .map_err(ReconcileError::cloud("list pool members", &key))?;
        tree.members.insert(pool.to_string(), members);
    }
    Ok(tree)
}

/// What the view keeps after deciding `step` on `look`: a settled tree read from the
/// cloud, the tree and the pool after a member batch, nothing after any other write.
pub fn remember(
    view: &LoadBalancerView,
    owner: &Owner,
    region: Option<&str>,
    look: &Look,
    step: &Step,
) {
    match step {
        // Nothing existed that a listing could bring back.
        Step::Create(_) => {}
        Step::ReplaceMembers(_, pool, _) => {
            view.record_member_write(owner, region, &look.tree, vec![pool.clone()]);
        }
        step if step.writes() => view.forget(owner, region),
        step if step.settled() && !look.from_view => view.record(owner, region, &look.tree),
        _ => {}
    }
}
