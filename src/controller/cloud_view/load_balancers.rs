//! The Octavia trees of converged LoadBalancers, by owner UID, confirmed by one list of
//! the `verda-managed` load balancers per region and refresh.
//!
//! A tree is recorded only from an authoritative read that found nothing to do, and it
//! is forgotten by the owner's next write. Every write to a listener, pool, monitor or
//! member passes its load balancer through `PENDING_UPDATE`, which moves the load
//! balancer's `updated_at`; member health moves its `operating_status`. So a refresh
//! that finds a load balancer's status and `updated_at` as recorded confirms the whole
//! tree, and one that does not sends its owner back to the cloud. Floating IPs are
//! listed too while any recorded tree has one.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::Lock;
use crate::cloud::ids::PoolId;
use crate::cloud::model::loadbalancing::{
    HealthMonitor, Listener, LoadBalancer, Member, OperatingStatus, Pool, ProvisioningStatus,
};
use crate::cloud::model::network::FloatingIp;
use crate::cloud::owner::{Owner, uid_from_tags};

/// The Octavia objects of one LoadBalancer, found by its owner tag.
#[derive(Clone, Debug, Default)]
pub struct OctaviaTree {
    /// Every load balancer carrying the owner tag (more than one only after a crash).
    pub load_balancers: Vec<LoadBalancer>,
    /// The children of the kept load balancer.
    pub listeners: Vec<Listener>,
    pub pools: Vec<Pool>,
    pub monitors: Vec<HealthMonitor>,
    /// Pool ID → members.
    pub members: BTreeMap<String, Vec<Member>>,
    /// Floating IPs recording this owner.
    pub floating_ips: Vec<FloatingIp>,
}

/// Octavia's `updated_at` has whole seconds, so a second change within the second of the
/// last one leaves it as it was: a tree read that soon after its load balancer changed
/// could be vouched for by an unchanged mark while it is already stale (a member edited
/// outside Kubernetes right after the operator's own write would never be seen). Such a
/// tree is used, but the first listing asked for `QUIET` after it was read sends its
/// owner to Octavia once more instead of vouching for it (one read per change, not per
/// period); `QUIET` also absorbs two seconds of clock difference.
pub const QUIET: Duration = Duration::from_secs(3);

/// Whether a load balancer of `tree` changed less than [`QUIET`] before `now` (or in
/// the future, by our clock).
fn changed_lately(tree: &OctaviaTree, now: chrono::DateTime<chrono::Utc>) -> bool {
    tree.load_balancers.iter().any(|l| {
        let Some(at) = l.updated_at.as_deref() else {
            return false;
        };
        chrono::NaiveDateTime::parse_from_str(at.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S%.f")
            .map(|t| {
                let age = now.signed_duration_since(t.and_utc());
                age < chrono::Duration::from_std(QUIET).unwrap_or_default()
            })
            .unwrap_or(false)
    })
}

/// What a load balancer listing says of one load balancer.
#[derive(Clone, Debug, PartialEq)]
struct Mark {
    id: String,
    provisioning: ProvisioningStatus,
    operating: OperatingStatus,
    updated_at: Option<String>,
}

fn marks<'a>(lbs: impl Iterator<Item = &'a LoadBalancer>) -> Vec<Mark> {
    let mut marks: Vec<Mark> = lbs
        .map(|l| Mark {
            id: l.id.to_string(),
            provisioning: l.provisioning_status,
            operating: l.operating_status,
            updated_at: l.updated_at.clone(),
        })
        .collect();
    marks.sort_by(|a, b| a.id.cmp(&b.id));
    marks
}

/// Floating IPs as a refresh compares them: ID, address and port.
fn fip_marks<'a>(fips: impl Iterator<Item = &'a FloatingIp>) -> Vec<String> {
    let mut marks: Vec<String> = fips
        .map(|f| format!("{} {} {:?}", f.id, f.floating_ip_address, f.port_id))
        .collect();
    marks.sort();
    marks
}

struct Entry {
    owner: Owner,
    region: Option<String>,
    /// `None` after a write: known, but to be read from the cloud.
    tree: Option<OctaviaTree>,
    /// Pools whose members the owner just replaced: the tree is right but for these
    /// pools' members and the load balancer's status.
    written_pools: Vec<PoolId>,
    confirmed: Instant,
    /// Set when the tree was read within [`QUIET`] of its load balancer's last change:
    /// a listing asked for after this instant does not vouch for it, but sends the owner
    /// to Octavia once more.
    recheck_after: Option<Instant>,
}

/// What the view holds for an owner.
pub enum Cached {
    /// The tree as the cloud last showed it, with nothing under way.
    Settled(OctaviaTree),
    /// The tree after the owner's own member batches to these pools: reading the load
    /// balancer and those pools' members brings it up to date.
    MembersWritten(OctaviaTree, Vec<PoolId>),
}

#[derive(Default)]
pub struct LoadBalancerView {
    owners: Lock<HashMap<String, Entry>>,
}

impl LoadBalancerView {
    /// What the view holds for the owner, when recorded and recently confirmed.
    pub fn cached(&self, uid: &str, max_age: Duration) -> Option<Cached> {
        let owners = self.owners.lock();
        let entry = owners.get(uid)?;
        if entry.confirmed.elapsed() > max_age {
            return None;
        }
        let tree = entry.tree.clone()?;
        Some(if entry.written_pools.is_empty() {
            Cached::Settled(tree)
        } else {
            Cached::MembersWritten(tree, entry.written_pools.clone())
        })
    }

    /// A tree read from the cloud with nothing left to do.
    pub fn record(&self, owner: &Owner, region: Option<&str>, tree: &OctaviaTree) {
        self.insert(owner, region, Some(tree.clone()), Vec::new());
        if changed_lately(tree, chrono::Utc::now())
            && let Some(entry) = self.owners.lock().get_mut(&owner.uid)
        {
            entry.recheck_after = Some(entry.confirmed + QUIET);
        }
    }

    /// The owner replaced `pool`'s members (on top of `tree`, as far as known).
    pub fn record_member_write(
        &self,
        owner: &Owner,
        region: Option<&str>,
        tree: &OctaviaTree,
        pools: Vec<PoolId>,
    ) {
        self.insert(owner, region, Some(tree.clone()), pools);
    }

    /// After a write: the next look goes to the cloud, and a listing asked for before
    /// the write cannot bring the old tree back.
    pub fn forget(&self, owner: &Owner, region: Option<&str>) {
        self.insert(owner, region, None, Vec::new());
    }

    fn insert(
        &self,
        owner: &Owner,
        region: Option<&str>,
        tree: Option<OctaviaTree>,
        written_pools: Vec<PoolId>,
    ) {
        self.owners.lock().insert(
            owner.uid.clone(),
            Entry {
                owner: owner.clone(),
                region: region.map(str::to_owned),
                tree,
                written_pools,
                confirmed: Instant::now(),
                recheck_after: None,
            },
        );
    }

    pub fn clear(&self) {
        self.owners.lock().clear();
    }

    /// The regions a refresh lists, and whether each needs its floating IPs too.
    pub fn regions(&self) -> Vec<(Option<String>, bool)> {
        let owners = self.owners.lock();
        let mut regions: BTreeMap<Option<String>, bool> = BTreeMap::new();
        for entry in owners.values() {
            let fips = entry
                .tree
                .as_ref()
                .is_some_and(|t| !t.floating_ips.is_empty());
            *regions.entry(entry.region.clone()).or_default() |= fips;
        }
        regions.into_iter().collect()
    }

    /// Takes in the `verda-managed` load balancers of `region` (and its floating IPs,
    /// when listed) asked for at `asked`. Returns the owners whose tree changed.
    pub fn confirm(
        &self,
        region: Option<&str>,
        listed: &[LoadBalancer],
        fips: Option<&[FloatingIp]>,
        asked: Instant,
    ) -> Vec<Owner> {
        let mut by_owner: HashMap<&str, Vec<&LoadBalancer>> = HashMap::new();
        for lb in listed {
            if let Some(uid) = uid_from_tags(&lb.tags) {
                by_owner.entry(uid).or_default().push(lb);
            }
        }
        let mut owners = self.owners.lock();
        let mut changed = Vec::new();
        owners.retain(|uid, entry| {
            if entry.region.as_deref() != region || entry.confirmed > asked {
                return true;
            }
            let Some(tree) = entry
                .tree
                .as_ref()
                .filter(|_| entry.written_pools.is_empty())
            else {
                // A write older than the listing: the owner's reconcile reads anyway.
                return false;
            };
            let now = by_owner
                .get(uid.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            let same_lbs = marks(now.iter().copied()) == marks(tree.load_balancers.iter());
            let tag = entry.owner.tag();
            let same_fips = fips.is_none_or(|fips| {
                fip_marks(fips.iter().filter(|f| f.description == tag))
                    == fip_marks(tree.floating_ips.iter())
            });
            let vouchable = entry.recheck_after.is_none_or(|t| asked < t);
            if same_lbs && same_fips && vouchable {
                entry.confirmed = asked;
                true
            } else {
                changed.push(entry.owner.clone());
                false
            }
        });
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::ids::LoadBalancerId;

    fn owner(name: &str) -> Owner {
        Owner::new(format!("uid-{name}"), "ns", name)
    }

    fn lb(owner: &Owner, updated_at: &str) -> LoadBalancer {
        LoadBalancer {
            id: LoadBalancerId::new(format!("lb-{}", owner.name)),
            name: owner.name.clone(),
            description: String::new(),
            provisioning_status: ProvisioningStatus::Active,
            operating_status: OperatingStatus::Online,
            vip_address: None,
            vip_port_id: None,
            vip_subnet_id: None,
            vip_network_id: None,
            flavor_id: None,
            availability_zone: None,
            tags: owner.tags(),
            listeners: Vec::new(),
            pools: Vec::new(),
            updated_at: Some(updated_at.into()),
        }
    }

    fn tree(lbs: Vec<LoadBalancer>) -> OctaviaTree {
        OctaviaTree {
            load_balancers: lbs,
            ..OctaviaTree::default()
        }
    }

    const AGE: Duration = Duration::from_secs(60);

    #[test]
    fn a_listing_as_recorded_confirms_the_tree_and_a_moved_one_forgets_it() {
        let view = LoadBalancerView::default();
        let (a, b, c) = (owner("a"), owner("b"), owner("c"));
        view.record(&a, None, &tree(vec![lb(&a, "t1")]));
        view.record(&b, None, &tree(vec![lb(&b, "t1")]));
        view.record(&c, None, &tree(vec![lb(&c, "t1")]));
        let mut degraded = lb(&c, "t1");
        degraded.operating_status = OperatingStatus::Degraded;
        let asked = Instant::now();
        let changed = view.confirm(None, &[lb(&a, "t1"), lb(&b, "t2"), degraded], None, asked);
        let names: Vec<&str> = changed.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.contains(&"b") && names.contains(&"c"));
        assert!(matches!(
            view.cached("uid-a", AGE),
            Some(Cached::Settled(_))
        ));
        assert!(view.cached("uid-b", AGE).is_none());
    }

    #[test]
    fn a_tree_read_within_seconds_of_its_last_change_is_read_again_once() {
        let view = LoadBalancerView::default();
        let (a, b) = (owner("a"), owner("b"));
        let now = chrono::Utc::now();
        let stamp = |ago: i64| {
            (now - chrono::Duration::seconds(ago))
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string()
        };
        view.record(&a, None, &tree(vec![lb(&a, &stamp(1))]));
        view.record(&b, None, &tree(vec![lb(&b, &stamp(30))]));
        assert!(matches!(
            view.cached("uid-a", AGE),
            Some(Cached::Settled(_))
        ));
        // A listing asked for within QUIET vouches for both, as before.
        let soon = Instant::now();
        let listed = [lb(&a, &stamp(1)), lb(&b, &stamp(30))];
        assert!(view.confirm(None, &listed, None, soon).is_empty());
        // Later, the same marks no longer vouch for a's tree: a reads Octavia once more.
        let later = Instant::now() + QUIET;
        assert_eq!(view.confirm(None, &listed, None, later), vec![a]);
        assert!(view.cached("uid-a", AGE).is_none());
        assert!(matches!(
            view.cached("uid-b", AGE),
            Some(Cached::Settled(_))
        ));
    }

    #[test]
    fn a_load_balancer_deleted_outside_wakes_its_owner() {
        let view = LoadBalancerView::default();
        let a = owner("a");
        view.record(&a, None, &tree(vec![lb(&a, "t1")]));
        let changed = view.confirm(None, &[], None, Instant::now());
        assert_eq!(changed, vec![a]);
    }

    #[test]
    fn a_write_after_the_listing_was_asked_for_keeps_the_owner_away_from_the_view() {
        let view = LoadBalancerView::default();
        let a = owner("a");
        view.record(&a, None, &tree(vec![lb(&a, "t1")]));
        let asked = Instant::now();
        view.forget(&a, None);
        assert!(view.confirm(None, &[lb(&a, "t1")], None, asked).is_empty());
        assert!(view.cached("uid-a", AGE).is_none());
    }

    #[test]
    fn after_a_member_batch_the_view_says_which_pools_to_read_again() {
        let view = LoadBalancerView::default();
        let a = owner("a");
        let pool = PoolId::new("pool-1".to_owned());
        view.record_member_write(&a, None, &tree(vec![lb(&a, "t1")]), vec![pool.clone()]);
        match view.cached("uid-a", AGE) {
            Some(Cached::MembersWritten(_, pools)) => assert_eq!(pools, vec![pool]),
            _ => panic!("expected the written pools"),
        }
        // A refresh does not vouch for a tree with a write under way.
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(
            view.confirm(None, &[lb(&a, "t1")], None, later),
            Vec::<Owner>::new()
        );
        assert!(view.cached("uid-a", AGE).is_none());
    }

    #[test]
    fn other_regions_are_left_to_their_own_listing() {
        let view = LoadBalancerView::default();
        let a = owner("a");
        view.record(&a, Some("east"), &tree(vec![lb(&a, "t1")]));
        assert!(view.confirm(None, &[], None, Instant::now()).is_empty());
        assert!(view.cached("uid-a", AGE).is_some());
        assert_eq!(view.regions(), vec![(Some("east".to_owned()), false)]);
    }
}
