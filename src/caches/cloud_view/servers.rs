//! The servers the operator owns, by owner UID: filled by one paginated list of the
//! `verda-managed` tag per refresh (taken in page by page, see [`Listing`]) and by the
//! controllers' own reads, emptied for an owner by its own writes (read-your-writes).
//!
//! It answers for an owner whose servers are all settled (ACTIVE or SHUTOFF, no task
//! running) and recently confirmed; anything else — a BUILD, a resize, a view not
//! refreshed for a while — is read from Nova itself.
//!
//! It also vouches that an owner has **no** server, so that a create needs no lookup of
//! its own, when a listing of the project asked for during this term (this process's
//! lead: the view is new with each) did not show one, the view has heard nothing of the
//! owner since, and this process has sent no create for it. That holds because only the
//! leader creates (or, with shards, the owner of the namespace, and only a listing asked
//! for since it took the namespace vouches): a server made in an earlier term predates the listing (Nova's
//! tag-filtered listing shows a server from the moment its create is answered, build
//! requests included), and one made in this term is remembered
//! ([`ServerView::creating`]) until its owner is removed — not by entries a later
//! listing could drop.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use super::kept_server::KeptServer;
use crate::cloud::model::compute::Server;
use crate::cloud::owner::{Owner, uid_from_tags};
use crate::lock::Lock;

struct Entry {
    owner: Owner,
    /// Exactly as many as there are (an entry made from a listing's growing vector
    /// kept its spare room: a server's worth of bytes, or three).
    servers: Box<[KeptServer]>,
    /// When the cloud last showed this (an authoritative read or a refresh).
    confirmed: Instant,
}

#[derive(Default)]
pub struct ServerView {
    owners: Lock<Owners>,
    listing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Owners {
    by_uid: HashMap<String, Entry>,
    /// When the latest full listing taken in was asked for.
    listed: Option<Instant>,
    /// The owners whose tags that listing showed (metadata can be edited away), by a
    /// digest of the UID keyed in this process (`digests`): two UIDs sharing one cost at
    /// most a lookup the listing could have spared.
    shown: HashSet<u64>,
    digests: RandomState,
    /// Owners this process has sent a create for, until they are removed.
    created: HashSet<String>,
}

impl ServerView {
    /// The owner's servers, when the view can answer for them.
    pub fn settled(&self, uid: &str, max_age: Duration) -> Option<Vec<Server>> {
        let owners = self.owners.lock();
        let entry = owners.by_uid.get(uid)?;
        let fresh = entry.confirmed.elapsed() <= max_age;
        let settled = entry.servers.iter().all(KeptServer::is_settled);
        (fresh && !entry.servers.is_empty() && settled).then(|| {
            entry
                .servers
                .iter()
                .map(|s| s.whole(&entry.owner))
                .collect()
        })
    }

    /// Whether the owner has no server, on the word of a listing of this term (see the
    /// module's comment): true only when one asked for since `since` (the owner's
    /// namespace's term, when this replica is one of several shards) was taken in and
    /// neither it nor anything since has shown, written or looked up a server of the
    /// owner, and no create was sent for it.
    pub fn vouches_none(&self, uid: &str, since: Option<Instant>) -> bool {
        let owners = self.owners.lock();
        asked_since(owners.listed, since)
            && !owners.shown.contains(&owners.digests.hash_one(uid))
            && !owners.by_uid.contains_key(uid)
            && !owners.created.contains(uid)
    }

    /// Before a create is sent: the owner is never again vouched for (its next look
    /// goes to the cloud), whatever a listing shows or misses.
    pub fn creating(&self, owner: &Owner) {
        self.forget(owner);
        self.owners.lock().created.insert(owner.uid.clone());
    }

    /// The owner's object is gone, and its servers with it.
    pub fn removed(&self, uid: &str) {
        self.owners.lock().created.remove(uid);
    }

    /// Whether a full listing asked for since `since` (any, when `None`) has been taken in.
    pub fn listed(&self, since: Option<Instant>) -> bool {
        asked_since(self.owners.lock().listed, since)
    }

    /// What an authoritative read of the owner's servers found.
    pub fn record(&self, owner: &Owner, servers: &[Server]) {
        self.owners.lock().by_uid.insert(
            owner.uid.clone(),
            Entry {
                owner: owner.clone(),
                servers: servers
                    .iter()
                    .map(|s| KeptServer::new(owner, s.clone()))
                    .collect(),
                confirmed: Instant::now(),
            },
        );
    }

    /// After a write: the next look goes to the cloud. The owner stays known with no
    /// server, so a listing asked for before the write cannot bring the old state back.
    pub fn forget(&self, owner: &Owner) {
        self.record(owner, &[]);
    }

    pub fn is_empty(&self) -> bool {
        self.owners.lock().by_uid.is_empty()
    }

    /// Drops what the view saw of `namespace`'s owners: another replica reconciles them
    /// now, and what it writes would not reach this view.
    pub fn forget_namespace(&self, namespace: &str) {
        let mut owners = self.owners.lock();
        owners
            .by_uid
            .retain(|_, entry| entry.owner.namespace != namespace);
    }

    /// The namespaces of the owners the view holds servers of.
    pub fn namespaces(&self) -> HashSet<String> {
        let owners = self.owners.lock();
        let held = owners.by_uid.values().filter(|e| !e.servers.is_empty());
        held.map(|e| e.owner.namespace.clone()).collect()
    }

    /// Starts taking in a full listing of the project, asked for now; one at a time
    /// (a refresh and a first listing wait for each other).
    pub async fn listing(&self) -> Listing<'_> {
        let one_at_a_time = self.listing.lock().await;
        Listing::new(self, one_at_a_time, Instant::now())
    }
}

/// A full listing being taken in page by page, so that the view never holds the
/// listing beside itself: a server the view already has as listed is dropped at
/// once, and only what changed is kept aside. Until [`Listing::finish`] the view
/// answers as before it; a listing dropped unfinished (a page failed) changes nothing.
pub struct Listing<'a> {
    view: &'a ServerView,
    _one_at_a_time: tokio::sync::MutexGuard<'a, ()>,
    asked: Instant,
    /// The digests of the owners whose tags the listing showed.
    shown: HashSet<u64>,
    /// What the listing showed of each owner, by UID.
    taken: HashMap<String, Taken>,
}

/// One owner's servers as a listing shows them, against the view's entry.
#[derive(Default)]
struct Taken {
    /// Which of the entry's servers the listing showed unchanged.
    same: Vec<bool>,
    /// Servers the entry does not have as listed (new, or changed), kept for `owner`.
    other: Vec<KeptServer>,
    /// The owner `other` is kept for: the entry's when the listing first showed one
    /// of its servers (an entry replaced since is newer than the listing and stays as
    /// it is, so `other` joins only the entry it was kept for), else as that server's
    /// metadata records it.
    owner: Option<Owner>,
    /// Whether the view had no entry for the owner then.
    new: bool,
}

impl<'a> Listing<'a> {
    fn new(
        view: &'a ServerView,
        one_at_a_time: tokio::sync::MutexGuard<'a, ()>,
        asked: Instant,
    ) -> Self {
        Self {
            view,
            _one_at_a_time: one_at_a_time,
            asked,
            shown: HashSet::new(),
            taken: HashMap::new(),
        }
    }

    /// When the listing was asked for.
    pub fn asked(&self) -> Instant {
        self.asked
    }

    /// Takes in one page.
    pub fn take(&mut self, page: Vec<Server>) {
        let owners = self.view.owners.lock();
        for server in page {
            if let Some(uid) = uid_from_tags(&server.tags) {
                self.shown.insert(owners.digests.hash_one(uid));
            }
            let Some(owner) = Owner::from_metadata(&server.metadata) else {
                continue;
            };
            let entry = owners.by_uid.get(&owner.uid);
            // Recorded since the listing was asked for: newer than what it shows.
            if entry.is_some_and(|e| e.confirmed > self.asked) {
                continue;
            }
            let taken = self.taken.entry(owner.uid.clone()).or_default();
            if taken.owner.is_none() {
                taken.new = entry.is_none();
            }
            let kept_for = taken
                .owner
                .get_or_insert_with(|| entry.map_or(owner, |e| e.owner.clone()));
            let server = KeptServer::new(kept_for, server);
            let Some(entry) = entry.filter(|_| !taken.new) else {
                taken.other.push(server);
                continue;
            };
            taken.same.resize(entry.servers.len(), false);
            let unchanged =
                (0..entry.servers.len()).find(|&i| !taken.same[i] && entry.servers[i] == server);
            match unchanged {
                Some(i) => taken.same[i] = true,
                None => taken.other.push(server),
            }
        }
    }

    /// Takes the listing in as a whole. Entries recorded since it was asked for are
    /// newer and stay. Returns the owners whose servers changed (appeared, went, or
    /// differ), whose reconcile should look again.
    pub fn finish(mut self) -> Vec<Owner> {
        let asked = self.asked;
        let mut owners = self.view.owners.lock();
        owners.listed = owners.listed.max(Some(asked));
        owners.shown = std::mem::take(&mut self.shown);
        let mut changed = Vec::new();
        owners.by_uid.retain(|uid, entry| {
            if entry.confirmed > asked {
                return true;
            }
            let Some(taken) = self.taken.remove(uid) else {
                changed.push(entry.owner.clone());
                return false;
            };
            let mut same = taken.same.iter().copied();
            let before = entry.servers.len();
            let mut servers = std::mem::take(&mut entry.servers).into_vec();
            servers.retain(|_| same.next().unwrap_or(false));
            if servers.len() != before || !taken.other.is_empty() {
                changed.push(entry.owner.clone());
            }
            servers.extend(taken.other);
            entry.servers = servers.into_boxed_slice();
            entry.confirmed = asked;
            true
        });
        // Servers of owners the view did not know: their controllers read the cloud
        // themselves, so nothing to wake; they are known from now on.
        // (One recorded since is newer, and stays.)
        for (uid, taken) in self.taken.drain() {
            if let Some(owner) = taken.owner.filter(|_| taken.new) {
                owners.by_uid.entry(uid).or_insert(Entry {
                    owner,
                    servers: taken.other.into_boxed_slice(),
                    confirmed: asked,
                });
            }
        }
        changed
    }
}

/// Whether a listing asked for at `asked` speaks for a term begun at `since` (for the
/// view's whole life, when `None`).
pub(super) fn asked_since(asked: Option<Instant>, since: Option<Instant>) -> bool {
    asked.is_some_and(|asked| since.is_none_or(|since| asked >= since))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cloud::ids::ServerId;
    use crate::cloud::model::compute::ServerStatus;
    use crate::cloud::owner::META_NAME;

    fn owner(name: &str) -> Owner {
        Owner::new(format!("uid-{name}"), "ns", name)
    }

    fn server(owner: &Owner, status: ServerStatus) -> Server {
        Server {
            id: ServerId::new(format!("server-{}", owner.name)),
            name: owner.name.clone(),
            status,
            task_state: None,
            addresses: Vec::new(),
            metadata: owner.server_metadata(),
            tags: owner.tags(),
            description: None,
            flavor: Some("small".into()),
            image: None,
            fault: None,
            availability_zone: None,
            volumes_attached: vec![],
        }
    }

    const AGE: Duration = Duration::from_secs(60);

    /// A listing asked for at `asked`, taken in as one page.
    fn replace(view: &ServerView, listed: Vec<Server>, asked: Instant) -> Vec<Owner> {
        let mut listing = listing_asked_at(view, asked);
        listing.take(listed);
        listing.finish()
    }

    fn listing_asked_at(view: &ServerView, asked: Instant) -> Listing<'_> {
        let one_at_a_time = view.listing.try_lock().expect("one listing at a time");
        Listing::new(view, one_at_a_time, asked)
    }

    #[test]
    fn a_server_comes_back_from_the_view_as_the_cloud_showed_it() {
        let view = ServerView::default();
        let (a, b) = (owner("a"), owner("b"));
        let mut a_s = server(&a, ServerStatus::Active);
        a_s.metadata.insert("role".into(), "primary".into());
        a_s.tags.insert(0, "team".into());
        // Renamed in the cloud: the record no longer matches its owner.
        let mut b_s = server(&b, ServerStatus::Active);
        b_s.metadata.insert(META_NAME.into(), "renamed".into());
        view.record(&b, std::slice::from_ref(&b_s));
        replace(&view, vec![a_s.clone(), b_s.clone()], Instant::now());

        assert_eq!(view.settled("uid-a", AGE), Some(vec![a_s.clone()]));
        assert_eq!(view.settled("uid-b", AGE), Some(vec![b_s.clone()]));
        let changed = replace(&view, vec![b_s, a_s], Instant::now());
        assert!(changed.is_empty(), "listed as they are kept: unchanged");
    }

    #[test]
    fn a_listing_is_taken_in_page_by_page_and_only_as_a_whole() {
        let view = ServerView::default();
        let (a, b, c) = (owner("a"), owner("b"), owner("c"));
        let mut first_of_b = server(&b, ServerStatus::Active);
        first_of_b.id = ServerId::new("server-b-1");
        replace(
            &view,
            vec![
                server(&a, ServerStatus::Active),
                first_of_b.clone(),
                server(&b, ServerStatus::Active),
            ],
            Instant::now(),
        );

        let mut listing = listing_asked_at(&view, Instant::now());
        listing.take(vec![server(&a, ServerStatus::Active), first_of_b]);
        listing.take(vec![server(&c, ServerStatus::Active)]);
        assert_eq!(
            view.settled("uid-b", AGE).map(|s| s.len()),
            Some(2),
            "answers as before until finished"
        );
        assert!(
            view.settled("uid-c", AGE).is_none(),
            "nor knows a new owner yet"
        );
        let changed = listing.finish();
        let names: Vec<&str> = changed.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["b"], "a server of b went; a is unchanged, c is new");
        assert_eq!(view.settled("uid-a", AGE).map(|s| s.len()), Some(1));
        assert_eq!(
            view.settled("uid-b", AGE).map(|s| s[0].id.to_string()),
            Some("server-b-1".into())
        );
        assert!(view.settled("uid-c", AGE).is_some());

        let mut listing = listing_asked_at(&view, Instant::now());
        listing.take(Vec::new());
        drop(listing);
        assert!(
            view.settled("uid-a", AGE).is_some(),
            "a listing that failed midway changes nothing"
        );
    }

    #[test]
    fn a_read_recorded_while_a_listing_is_taken_in_is_newer_than_it() {
        let view = ServerView::default();
        let (a, b) = (owner("a"), owner("b"));
        replace(
            &view,
            vec![server(&a, ServerStatus::Active)],
            Instant::now(),
        );
        let mut listing = listing_asked_at(&view, Instant::now());
        listing.take(vec![server(&b, ServerStatus::Active)]);
        view.record(&a, &[server(&a, ServerStatus::Build)]);
        view.record(&b, &[server(&b, ServerStatus::Build)]);
        listing.take(vec![server(&a, ServerStatus::Active)]);
        assert!(listing.finish().is_empty());
        assert!(view.settled("uid-a", AGE).is_none(), "the read saw BUILD");
        assert!(view.settled("uid-b", AGE).is_none(), "the read saw BUILD");
    }

    #[test]
    fn answers_only_for_settled_recently_confirmed_servers() {
        let view = ServerView::default();
        let (a, b) = (owner("a"), owner("b"));
        view.record(&a, &[server(&a, ServerStatus::Active)]);
        view.record(&b, &[server(&b, ServerStatus::Build)]);
        assert_eq!(view.settled("uid-a", AGE).map(|s| s.len()), Some(1));
        assert!(view.settled("uid-b", AGE).is_none(), "BUILD is polled");
        assert!(view.settled("uid-c", AGE).is_none(), "unknown is read");
        assert!(view.settled("uid-a", Duration::ZERO).is_none(), "too old");
        view.forget(&a);
        assert!(view.settled("uid-a", AGE).is_none(), "a write forgets");
    }

    #[test]
    fn no_server_is_never_an_answer_so_a_create_always_asks_the_cloud() {
        let view = ServerView::default();
        view.record(&owner("a"), &[]);
        assert!(view.settled("uid-a", AGE).is_none());
    }

    #[test]
    fn a_refresh_reports_owners_whose_servers_changed_or_went() {
        let view = ServerView::default();
        let (a, b, c) = (owner("a"), owner("b"), owner("c"));
        view.record(&a, &[server(&a, ServerStatus::Active)]);
        view.record(&b, &[server(&b, ServerStatus::Active)]);
        let mut drifted = server(&a, ServerStatus::Active);
        drifted.metadata = BTreeMap::from([("k".into(), "v".into())]);
        drifted.metadata.extend(a.server_metadata());
        let asked = Instant::now();
        let changed = replace(
            &view,
            vec![drifted, server(&c, ServerStatus::Active)],
            asked,
        );
        let names: Vec<&str> = changed.iter().map(|o| o.name.as_str()).collect();
        assert!(names.contains(&"a") && names.contains(&"b"), "{names:?}");
        assert!(
            !names.contains(&"c"),
            "an owner new to the view wakes nobody"
        );
        assert!(view.settled("uid-b", AGE).is_none(), "deleted outside");
        assert!(view.settled("uid-c", AGE).is_some(), "known from now on");
    }

    #[test]
    fn a_listing_asked_for_before_a_write_does_not_bring_the_old_state_back() {
        let view = ServerView::default();
        let a = owner("a");
        view.record(&a, &[server(&a, ServerStatus::Active)]);
        let asked = Instant::now();
        view.forget(&a);
        replace(&view, vec![server(&a, ServerStatus::Active)], asked);
        assert!(view.settled("uid-a", AGE).is_none());
    }

    #[test]
    fn a_listing_older_than_a_recorded_read_does_not_replace_it() {
        let view = ServerView::default();
        let a = owner("a");
        let asked = Instant::now();
        view.record(&a, &[server(&a, ServerStatus::Active)]);
        let changed = replace(&view, Vec::new(), asked);
        assert!(changed.is_empty());
        assert!(view.settled("uid-a", AGE).is_some());
    }

    #[test]
    fn only_a_listing_of_this_term_vouches_that_an_owner_has_no_server() {
        let view = ServerView::default();
        let (a, b) = (owner("a"), owner("b"));
        assert!(!view.vouches_none("uid-a", None), "nothing listed yet");
        replace(
            &view,
            vec![server(&b, ServerStatus::Active)],
            Instant::now(),
        );
        assert!(view.vouches_none("uid-a", None), "listed, not there");
        assert!(!view.vouches_none("uid-b", None), "listed with a server");
        let view = ServerView::default();
        assert!(!view.vouches_none("uid-a", None), "a new term lists again");
        replace(&view, Vec::new(), Instant::now());
        view.record(&a, &[server(&a, ServerStatus::Build)]);
        assert!(!view.vouches_none("uid-a", None), "looked up since");
        let mut bare = server(&b, ServerStatus::Active);
        bare.metadata.clear();
        let view = ServerView::default();
        replace(&view, vec![bare], Instant::now());
        assert!(!view.vouches_none("uid-b", None), "its owner tag shows it");
    }

    #[test]
    fn a_listing_asked_for_before_a_namespace_s_term_does_not_vouch_for_it() {
        let view = ServerView::default();
        let before = Instant::now();
        replace(&view, Vec::new(), before);
        // This shard took the owner's namespace after that listing was asked for:
        // another replica may have created for it meanwhile.
        let term = Instant::now();
        assert!(
            view.vouches_none("uid-a", None),
            "for the view's whole life"
        );
        assert!(!view.listed(Some(term)));
        assert!(
            !view.vouches_none("uid-a", Some(term)),
            "asked before the term"
        );
        replace(&view, Vec::new(), Instant::now());
        assert!(view.listed(Some(term)));
        assert!(view.vouches_none("uid-a", Some(term)), "asked since");
    }

    #[test]
    fn a_namespace_handed_over_is_forgotten_and_others_kept() {
        let view = ServerView::default();
        let (a, mut b) = (owner("a"), owner("b"));
        b.namespace = "other".into();
        view.record(&a, &[server(&a, ServerStatus::Active)]);
        view.record(&b, &[server(&b, ServerStatus::Active)]);
        view.forget_namespace(&a.namespace);
        assert!(
            view.settled("uid-a", AGE).is_none(),
            "read again if it comes back"
        );
        assert!(view.settled("uid-b", AGE).is_some());
    }

    #[test]
    fn a_create_is_never_vouched_for_by_a_listing_that_could_have_missed_it() {
        let view = ServerView::default();
        let a = owner("a");
        replace(&view, Vec::new(), Instant::now());
        let asked_before_the_create = Instant::now();
        view.creating(&a);
        replace(&view, Vec::new(), asked_before_the_create);
        assert!(
            !view.vouches_none("uid-a", None),
            "a listing asked for before the create does not speak for it"
        );
        replace(&view, Vec::new(), Instant::now());
        assert!(
            !view.vouches_none("uid-a", None),
            "nor one that missed it: the owner is looked up from now on"
        );
        view.removed("uid-a");
        replace(&view, Vec::new(), Instant::now());
        assert!(
            view.vouches_none("uid-a", None),
            "forgotten once its object is gone"
        );
    }
}
