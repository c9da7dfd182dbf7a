//! The servers the operator owns, by owner UID: filled by one paginated list of the
//! `verda-managed` tag per refresh and by the controllers' own reads, emptied for an
//! owner by its own writes (read-your-writes).
//!
//! It answers for an owner whose servers are all settled (ACTIVE or SHUTOFF, no task
//! running) and recently confirmed; anything else — a BUILD, a resize, a view not
//! refreshed for a while — is read from Nova itself.
//!
//! It also vouches that an owner has **no** server, so that a create needs no lookup of
//! its own, when a listing of the project asked for during this term (this process's
//! lead: the view is new with each) did not show one, the view has heard nothing of the
//! owner since, and this process has sent no create for it. That holds because only the
//! leader creates: a server made in an earlier term predates the listing (Nova's
//! tag-filtered listing shows a server from the moment its create is answered, build
//! requests included), and one made in this term is remembered
//! ([`ServerView::creating`]) until its owner is removed — not by entries a later
//! listing could drop.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::Lock;
use crate::cloud::model::compute::{Server, ServerStatus};
use crate::cloud::owner::{Owner, uid_from_tags};

struct Entry {
    owner: Owner,
    servers: Vec<Server>,
    /// When the cloud last showed this (an authoritative read or a refresh).
    confirmed: Instant,
}

#[derive(Default)]
pub struct ServerView {
    owners: Lock<Owners>,
}

#[derive(Default)]
struct Owners {
    by_uid: HashMap<String, Entry>,
    /// When the latest full listing taken in was asked for.
    listed: Option<Instant>,
    /// The owners whose tags that listing showed (metadata can be edited away).
    shown: HashSet<String>,
    /// Owners this process has sent a create for, until they are removed.
    created: HashSet<String>,
}

impl ServerView {
    /// The owner's servers, when the view can answer for them.
    pub fn settled(&self, uid: &str, max_age: Duration) -> Option<Vec<Server>> {
        let owners = self.owners.lock();
        let entry = owners.by_uid.get(uid)?;
        let fresh = entry.confirmed.elapsed() <= max_age;
        (fresh && !entry.servers.is_empty() && entry.servers.iter().all(is_settled))
            .then(|| entry.servers.clone())
    }

    /// Whether the owner has no server, on the word of a listing of this term (see the
    /// module's comment): true only when one was taken in and neither it nor anything
    /// since has shown, written or looked up a server of the owner, and no create was
    /// sent for it.
    pub fn vouches_none(&self, uid: &str) -> bool {
        let owners = self.owners.lock();
        owners.listed.is_some()
            && !owners.shown.contains(uid)
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

    /// Whether a full listing has been taken in.
    pub fn listed(&self) -> bool {
        self.owners.lock().listed.is_some()
    }

    /// What an authoritative read of the owner's servers found.
    pub fn record(&self, owner: &Owner, servers: &[Server]) {
        self.owners.lock().by_uid.insert(
            owner.uid.clone(),
            Entry {
                owner: owner.clone(),
                servers: servers.to_vec(),
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

    /// Takes in a full listing asked for at `asked`. Entries recorded since then are
    /// newer than the listing and stay. Returns the owners whose servers changed
    /// (appeared, went, or differ), whose reconcile should look again.
    pub fn replace(&self, listed: Vec<Server>, asked: Instant) -> Vec<Owner> {
        let shown = listed
            .iter()
            .filter_map(|s| uid_from_tags(&s.tags).map(str::to_owned))
            .collect();
        let mut fresh: HashMap<String, Entry> = HashMap::new();
        for server in listed {
            let Some(owner) = Owner::from_metadata(&server.metadata) else {
                continue;
            };
            fresh
                .entry(owner.uid.clone())
                .or_insert_with(|| Entry {
                    owner,
                    servers: Vec::new(),
                    confirmed: asked,
                })
                .servers
                .push(server);
        }
        let mut owners = self.owners.lock();
        owners.listed = owners.listed.max(Some(asked));
        owners.shown = shown;
        let mut changed = Vec::new();
        for (uid, entry) in std::mem::take(&mut owners.by_uid) {
            if entry.confirmed > asked {
                fresh.insert(uid, entry);
                continue;
            }
            match fresh.get(&uid) {
                Some(now) if same_servers(&now.servers, &entry.servers) => {}
                _ => changed.push(entry.owner),
            }
        }
        // Servers of owners the view did not know: their controllers read the cloud
        // themselves, so nothing to wake; they are known from now on.
        owners.by_uid = fresh;
        changed
    }
}

fn same_servers(a: &[Server], b: &[Server]) -> bool {
    a.len() == b.len() && a.iter().all(|s| b.contains(s))
}

/// Nothing is under way that a poll should follow.
fn is_settled(server: &Server) -> bool {
    matches!(server.status, ServerStatus::Active | ServerStatus::Shutoff)
        && server.task_state.is_none()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cloud::ids::ServerId;

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
        let changed = view.replace(vec![drifted, server(&c, ServerStatus::Active)], asked);
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
        view.replace(vec![server(&a, ServerStatus::Active)], asked);
        assert!(view.settled("uid-a", AGE).is_none());
    }

    #[test]
    fn a_listing_older_than_a_recorded_read_does_not_replace_it() {
        let view = ServerView::default();
        let a = owner("a");
        let asked = Instant::now();
        view.record(&a, &[server(&a, ServerStatus::Active)]);
        let changed = view.replace(Vec::new(), asked);
        assert!(changed.is_empty());
        assert!(view.settled("uid-a", AGE).is_some());
    }

    #[test]
    fn only_a_listing_of_this_term_vouches_that_an_owner_has_no_server() {
        let view = ServerView::default();
        let (a, b) = (owner("a"), owner("b"));
        assert!(!view.vouches_none("uid-a"), "nothing listed yet");
        view.replace(vec![server(&b, ServerStatus::Active)], Instant::now());
        assert!(view.vouches_none("uid-a"), "listed, not there");
        assert!(!view.vouches_none("uid-b"), "listed with a server");
        let view = ServerView::default();
        assert!(!view.vouches_none("uid-a"), "a new term lists again");
        view.replace(Vec::new(), Instant::now());
        view.record(&a, &[server(&a, ServerStatus::Build)]);
        assert!(!view.vouches_none("uid-a"), "looked up since");
        let mut bare = server(&b, ServerStatus::Active);
        bare.metadata.clear();
        let view = ServerView::default();
        view.replace(vec![bare], Instant::now());
        assert!(!view.vouches_none("uid-b"), "its owner tag shows it");
    }

    #[test]
    fn a_create_is_never_vouched_for_by_a_listing_that_could_have_missed_it() {
        let view = ServerView::default();
        let a = owner("a");
        view.replace(Vec::new(), Instant::now());
        let asked_before_the_create = Instant::now();
        view.creating(&a);
        view.replace(Vec::new(), asked_before_the_create);
        assert!(
            !view.vouches_none("uid-a"),
            "a listing asked for before the create does not speak for it"
        );
        view.replace(Vec::new(), Instant::now());
        assert!(
            !view.vouches_none("uid-a"),
            "nor one that missed it: the owner is looked up from now on"
        );
        view.removed("uid-a");
        view.replace(Vec::new(), Instant::now());
        assert!(
            view.vouches_none("uid-a"),
            "forgotten once its object is gone"
        );
    }
}
