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
//!
//! As for servers ([`crate::caches::cloud_view::ServerView`]), it vouches that an owner has no load balancer
//! in a region when a listing of that region taken during this term did not show one,
//! the view has heard nothing of the owner since, and this process sent no create for
//! it (Octavia records a load balancer and its tags before it answers the create).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use super::servers::asked_since;
use crate::cloud::ids::PoolId;
use crate::cloud::model::loadbalancing::{
    HealthMonitor, Listener, ListenerTree, LoadBalancer, Member, OperatingStatus, Pool,
    ProvisioningStatus,
};
use crate::cloud::model::network::FloatingIp;
use crate::cloud::owner::{Owner, uid_from_tags};
use crate::lock::Lock;

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

type WallClock = chrono::DateTime<chrono::Utc>;

/// Octavia's `updated_at` (UTC, no zone), when it reads.
fn updated_at(l: &LoadBalancer) -> Option<WallClock> {
    let at = l.updated_at.as_deref()?;
    chrono::NaiveDateTime::parse_from_str(at.trim_end_matches('Z'), "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

fn quiet() -> chrono::Duration {
    chrono::Duration::from_std(QUIET).unwrap_or_default()
}

/// Whether a load balancer of `tree` changed less than [`QUIET`] before `now` (or in
/// the future, by our clock).
fn changed_lately(tree: &OctaviaTree, now: WallClock) -> bool {
    tree.load_balancers
        .iter()
        .filter_map(updated_at)
        .any(|t| now.signed_duration_since(t) < quiet())
}

/// A tree confirmed by Octavia's status tree, which has no `updated_at`: the first
/// listing whose load balancer last changed at least [`QUIET`] before the confirming
/// read supplies the mark.
#[derive(Clone, Copy)]
struct Unmarked {
    read_at: WallClock,
    /// The read came right after the owner's own write; the owner reads once more
    /// `QUIET` later, and listings before that neither vouch nor wake it.
    quiet_read_due: bool,
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
    /// The load balancer the owner just created and the tree it asked for.
    created: Option<(LoadBalancer, Vec<ListenerTree>)>,
    unmarked: Option<Unmarked>,
}

/// What the view holds for an owner.
pub enum Cached {
    /// The tree as the cloud last showed it, with nothing under way.
    Settled(OctaviaTree),
    /// The tree after the owner's own member batches to these pools (their members as
    /// written): Octavia's status tree confirms it.
    MembersWritten(OctaviaTree, Vec<PoolId>),
    /// The load balancer just created and the tree asked for: Octavia's status tree
    /// gives the IDs of its listeners, pools and monitors.
    Created(LoadBalancer, Vec<ListenerTree>),
    /// A tree confirmed right after the owner's write, due for its read [`QUIET`] later.
    Unconfirmed(OctaviaTree),
}

#[derive(Default)]
pub struct LoadBalancerView {
    owners: Lock<HashMap<String, Entry>>,
    vouching: Lock<Vouching>,
}

/// What a vouch that an owner has no load balancer rests on.
#[derive(Default)]
struct Vouching {
    /// Regions listed during this term, each with when its latest listing was asked
    /// for and the owners it showed.
    listed: HashMap<Option<String>, (Instant, HashSet<String>)>,
    /// Owners this process has sent a create for, until they are removed.
    created: HashSet<String>,
}

impl LoadBalancerView {
    /// Whether the owner has no load balancer in `region`, on the word of a listing of
    /// this term asked for since `since` (see the module's comment, and
    /// `ServerView::vouches_none`).
    pub fn vouches_none(&self, uid: &str, region: Option<&str>, since: Option<Instant>) -> bool {
        let vouching = self.vouching.lock();
        let listed = vouching.listed.get(&region.map(str::to_owned));
        listed
            .is_some_and(|(asked, shown)| asked_since(Some(*asked), since) && !shown.contains(uid))
            && !vouching.created.contains(uid)
            && !self.owners.lock().contains_key(uid)
    }

    /// Whether `region` was listed during this term, asked for since `since`.
    pub fn listed(&self, region: Option<&str>, since: Option<Instant>) -> bool {
        let region = region.map(str::to_owned);
        let asked = self
            .vouching
            .lock()
            .listed
            .get(&region)
            .map(|(asked, _)| *asked);
        asked_since(asked, since)
    }

    /// Drops what the view saw of `namespace`'s owners (see
    /// `ServerView::forget_namespace`).
    pub fn forget_namespace(&self, namespace: &str) {
        self.owners
            .lock()
            .retain(|_, entry| entry.owner.namespace != namespace);
    }

    /// Before a create is sent: the owner is never again vouched for.
    pub fn creating(&self, owner: &Owner) {
        self.vouching.lock().created.insert(owner.uid.clone());
    }

    /// The owner's object is gone, and its load balancers with it.
    pub fn removed(&self, uid: &str) {
        self.vouching.lock().created.remove(uid);
    }

    /// What the view holds for the owner, when recorded and recently confirmed.
    pub fn cached(&self, uid: &str, max_age: Duration) -> Option<Cached> {
        let owners = self.owners.lock();
        let entry = owners.get(uid)?;
        // A tree awaiting its owner's quiet read is as fresh as that read makes it.
        let awaiting_quiet_read = entry.unmarked.is_some_and(|u| u.quiet_read_due);
        if entry.confirmed.elapsed() > max_age && !awaiting_quiet_read {
            return None;
        }
        if let Some((lb, trees)) = &entry.created {
            return Some(Cached::Created(lb.clone(), trees.clone()));
        }
        let tree = entry.tree.clone()?;
        let quiet_read_due = entry
            .unmarked
            .is_some_and(|u| u.quiet_read_due && chrono::Utc::now() >= u.read_at + quiet());
        Some(if !entry.written_pools.is_empty() {
            Cached::MembersWritten(tree, entry.written_pools.clone())
        } else if quiet_read_due {
            Cached::Unconfirmed(tree)
        } else {
            Cached::Settled(tree)
        })
    }

    /// How long until the owner's read `QUIET` after its write is due, while one is.
    pub fn quiet_read_in(&self, uid: &str) -> Option<Duration> {
        let owners = self.owners.lock();
        let unmarked = owners.get(uid)?.unmarked.filter(|u| u.quiet_read_due)?;
        let due = unmarked.read_at + quiet() - chrono::Utc::now();
        Some(due.to_std().unwrap_or_default())
    }

    /// The owner created `lb` asking for `trees`.
    pub fn record_created(
        &self,
        owner: &Owner,
        region: Option<&str>,
        lb: LoadBalancer,
        trees: Vec<ListenerTree>,
    ) {
        self.insert(owner, region, None, Vec::new());
        if let Some(entry) = self.owners.lock().get_mut(&owner.uid) {
            entry.created = Some((lb, trees));
        }
    }

    /// A tree confirmed by Octavia's status tree with nothing left to do; `after_write`
    /// when the owner's own write came just before.
    pub fn record_confirmed(
        &self,
        owner: &Owner,
        region: Option<&str>,
        tree: &OctaviaTree,
        after_write: bool,
    ) {
        self.insert(owner, region, Some(tree.clone()), Vec::new());
        if let Some(entry) = self.owners.lock().get_mut(&owner.uid) {
            entry.unmarked = Some(Unmarked {
                read_at: chrono::Utc::now(),
                quiet_read_due: after_write,
            });
        }
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
                created: None,
                unmarked: None,
            },
        );
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
        let by_owner = by_owner(listed);
        let changed = self.confirm_entries(region, &by_owner, fips, asked);
        let shown = by_owner.keys().map(|uid| uid.to_string()).collect();
        let mut vouching = self.vouching.lock();
        let region = region.map(str::to_owned);
        // Of two listings taken in out of order, the one asked for later speaks.
        let latest = vouching
            .listed
            .get(&region)
            .is_none_or(|(at, _)| *at <= asked);
        if latest {
            vouching.listed.insert(region, (asked, shown));
        }
        changed
    }

    fn confirm_entries(
        &self,
        region: Option<&str>,
        by_owner: &HashMap<&str, Vec<&LoadBalancer>>,
        fips: Option<&[FloatingIp]>,
        asked: Instant,
    ) -> Vec<Owner> {
        let mut owners = self.owners.lock();
        let mut changed = Vec::new();
        owners.retain(|uid, entry| {
            if entry.region.as_deref() != region || entry.confirmed > asked {
                return true;
            }
            // The owner's own write under way: its next look confirms the tree from the
            // status tree (and reads it whole if the load balancer is gone).
            if entry.created.is_some() || !entry.written_pools.is_empty() {
                return true;
            }
            let Some(tree) = entry.tree.as_ref() else {
                // A write older than the listing: the owner's reconcile reads anyway.
                return false;
            };
            let now = by_owner
                .get(uid.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            if let Some(unmarked) = entry.unmarked {
                let adoption = adopt(tree, now, unmarked);
                let keep = !matches!(adoption, Adopt::Changed);
                if let Adopt::Marked(marked) = adoption {
                    entry.tree = Some(marked);
                    entry.unmarked = None;
                    entry.confirmed = asked;
                } else if !keep {
                    changed.push(entry.owner.clone());
                }
                return keep;
            }
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

/// A listing's load balancers by the owner their tags record.
fn by_owner(listed: &[LoadBalancer]) -> HashMap<&str, Vec<&LoadBalancer>> {
    let mut by_owner: HashMap<&str, Vec<&LoadBalancer>> = HashMap::new();
    for lb in listed {
        if let Some(uid) = uid_from_tags(&lb.tags) {
            by_owner.entry(uid).or_default().push(lb);
        }
    }
    by_owner
}

/// What a listing makes of a tree without `updated_at`.
enum Adopt {
    /// The same load balancer and state, last changed well before the confirming read:
    /// the tree, with the listing's `updated_at`, is vouched for from now on.
    Marked(OctaviaTree),
    /// The owner's own read `QUIET` after its write is still to come.
    NotYet,
    Changed,
}

fn adopt(tree: &OctaviaTree, listed: &[&LoadBalancer], unmarked: Unmarked) -> Adopt {
    let state = |l: &LoadBalancer| (l.id.clone(), l.provisioning_status, l.operating_status);
    let mut was: Vec<_> = tree.load_balancers.iter().map(state).collect();
    let mut now: Vec<_> = listed.iter().map(|l| state(l)).collect();
    was.sort_by(|a, b| a.0.cmp(&b.0));
    now.sort_by(|a, b| a.0.cmp(&b.0));
    if was != now {
        return Adopt::Changed;
    }
    let settled_before_read = !listed.is_empty()
        && listed
            .iter()
            .all(|l| updated_at(l).is_some_and(|t| t + quiet() <= unmarked.read_at));
    if settled_before_read {
        let mut marked = tree.clone();
        for l in &mut marked.load_balancers {
            l.updated_at = listed
                .iter()
                .find(|n| n.id == l.id)
                .and_then(|n| n.updated_at.clone());
        }
        return Adopt::Marked(marked);
    }
    if unmarked.quiet_read_due {
        Adopt::NotYet
    } else {
        Adopt::Changed
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
    fn only_a_listing_of_the_region_in_this_term_vouches_that_an_owner_has_none() {
        let view = LoadBalancerView::default();
        let (a, b) = (owner("a"), owner("b"));
        assert!(
            !view.vouches_none("uid-a", None, None),
            "nothing listed yet"
        );
        view.confirm(None, &[lb(&b, "t1")], None, Instant::now());
        assert!(view.vouches_none("uid-a", None, None), "listed, not there");
        assert!(!view.vouches_none("uid-b", None, None), "listed with one");
        assert!(
            !view.vouches_none("uid-a", Some("east"), None),
            "another region"
        );
        view.creating(&a);
        view.confirm(None, &[lb(&b, "t1")], None, Instant::now());
        assert!(!view.vouches_none("uid-a", None, None), "a create was sent");
        view.removed("uid-a");
        assert!(
            view.vouches_none("uid-a", None, None),
            "forgotten once removed"
        );
        view.forget(&a, None);
        assert!(!view.vouches_none("uid-a", None, None), "heard of since");
        let view = LoadBalancerView::default();
        assert!(
            !view.vouches_none("uid-a", None, None),
            "a new term lists again"
        );
        view.confirm(None, &[], None, Instant::now());
        let term = Instant::now();
        assert!(
            !view.listed(None, Some(term)),
            "asked before the namespace's term"
        );
        assert!(!view.vouches_none("uid-a", None, Some(term)));
        view.confirm(None, &[], None, Instant::now());
        assert!(view.vouches_none("uid-a", None, Some(term)), "asked since");
        let stale = term - Duration::from_millis(1);
        view.confirm(None, &[lb(&a, "t1")], None, stale);
        assert!(
            view.vouches_none("uid-a", None, Some(term)),
            "an older listing taken in late does not replace the latest"
        );
    }

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

    /// A tree confirmed by the status tree at `read_ago` seconds ago (no `updated_at`).
    fn unmarked(view: &LoadBalancerView, a: &Owner, read_ago: i64, after_write: bool) {
        let mut confirmed = lb(a, "");
        confirmed.updated_at = None;
        view.record_confirmed(a, None, &tree(vec![confirmed]), after_write);
        let mut owners = view.owners.lock();
        let entry = owners.get_mut(&a.uid).expect("recorded");
        let u = entry.unmarked.as_mut().expect("unmarked");
        u.read_at -= chrono::Duration::seconds(read_ago);
    }

    fn stamp(ago: i64) -> String {
        (chrono::Utc::now() - chrono::Duration::seconds(ago))
            .format("%Y-%m-%dT%H:%M:%S")
            .to_string()
    }

    #[test]
    fn a_tree_confirmed_right_after_a_write_waits_for_its_own_quiet_read() {
        let view = LoadBalancerView::default();
        let a = owner("a");
        unmarked(&view, &a, 0, true);
        assert!(view.quiet_read_in("uid-a").is_some_and(|d| d <= QUIET));
        // Changed in the second of the read: a listing neither vouches nor wakes it.
        let asked = Instant::now() + Duration::from_millis(10);
        assert!(
            view.confirm(None, &[lb(&a, &stamp(0))], None, asked)
                .is_empty()
        );
        assert!(matches!(
            view.cached("uid-a", AGE),
            Some(Cached::Settled(_))
        ));
        // Its quiet read is due once QUIET has passed since the read.
        unmarked(&view, &a, 4, true);
        assert!(matches!(
            view.cached("uid-a", AGE),
            Some(Cached::Unconfirmed(_))
        ));
    }

    #[test]
    fn a_listing_marks_a_tree_read_well_after_its_last_change_and_vouches_from_then_on() {
        let view = LoadBalancerView::default();
        let a = owner("a");
        unmarked(&view, &a, 0, false);
        let listed = [lb(&a, &stamp(10))];
        let asked = Instant::now() + Duration::from_millis(10);
        assert!(view.confirm(None, &listed, None, asked).is_empty());
        assert_eq!(view.quiet_read_in("uid-a"), None);
        match view.cached("uid-a", AGE) {
            Some(Cached::Settled(t)) => {
                assert_eq!(
                    t.load_balancers[0].updated_at.as_deref(),
                    Some(stamp(10).as_str())
                );
            }
            _ => panic!("a settled tree"),
        }
        // From then on it is compared as any other: a later change wakes the owner.
        let later = asked + Duration::from_millis(10);
        assert_eq!(
            view.confirm(None, &[lb(&a, &stamp(0))], None, later),
            vec![a]
        );
    }

    #[test]
    fn an_unmarked_tree_changed_after_its_read_or_in_another_state_wakes_its_owner() {
        let view = LoadBalancerView::default();
        let (a, b) = (owner("a"), owner("b"));
        unmarked(&view, &a, 0, false);
        unmarked(&view, &b, 0, true);
        let mut degraded = lb(&b, &stamp(0));
        degraded.operating_status = OperatingStatus::Degraded;
        let asked = Instant::now() + Duration::from_millis(10);
        let changed = view.confirm(None, &[lb(&a, &stamp(0)), degraded], None, asked);
        assert_eq!(changed.len(), 2, "{changed:?}");
        assert!(view.cached("uid-a", AGE).is_none() && view.cached("uid-b", AGE).is_none());
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
        // A refresh neither vouches for a tree with a write under way nor drops it: the
        // owner's next look confirms it.
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(
            view.confirm(None, &[lb(&a, "t1")], None, later),
            Vec::<Owner>::new()
        );
        assert!(matches!(
            view.cached("uid-a", AGE),
            Some(Cached::MembersWritten(..))
        ));
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
