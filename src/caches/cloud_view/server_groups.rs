//! The Nova server groups of the project's VirtualMachineGroups, so that a new group's
//! first round costs no listing of its own (Nova lists server groups whole: one
//! listing per group would grow with the fleet).
//!
//! Two answers, both for a term only (this process's lead, or its hold on the
//! namespace):
//! - *this one*: the group this process created for the owner, from Nova's answer to
//!   the create (a round woken before the status that records it reaches the watch
//!   cache needs it too);
//! - *none*: one listing of the project's server groups asked for during the term did
//!   not show one of the owner, and this process has sent no create for it since (a
//!   create whose answer was lost is never vouched for: the owner's next look lists).
//!
//! Only the leader (or the namespace's shard) creates a server group, so a group made
//! in an earlier term predates the listing and one made in this term is remembered.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::cloud::ids::ServerGroupId;
use crate::lock::Lock;

use super::servers::asked_since;

#[derive(Default)]
struct Groups {
    /// When the latest listing of the project's server groups was asked for.
    listed: Option<Instant>,
    /// The owners whose server groups that listing showed.
    shown: HashSet<String>,
    /// Owners this process sent a create for: the group Nova answered with, or `None`
    /// while the create is on the wire or its answer was lost.
    created: HashMap<String, Option<ServerGroupId>>,
}

/// What the view knows of an owner's server group.
#[derive(Debug, PartialEq)]
pub enum Known {
    /// Created by this process, as Nova answered.
    Created(ServerGroupId),
    /// None, on the word of this term's listing.
    None,
    /// Nova must be asked.
    Unknown,
}

#[derive(Default)]
pub struct ServerGroupView {
    groups: Lock<Groups>,
}

impl ServerGroupView {
    /// The owner's server group as far as the view can answer for it, on a listing asked
    /// for since `since` (the owner's namespace's term, with shards).
    pub fn known(&self, uid: &str, since: Option<Instant>) -> Known {
        let groups = self.groups.lock();
        match groups.created.get(uid) {
            Some(Some(id)) => Known::Created(id.clone()),
            Some(None) => Known::Unknown,
            None if asked_since(groups.listed, since) && !groups.shown.contains(uid) => Known::None,
            None => Known::Unknown,
        }
    }

    /// Before a create is sent: the owner is never again vouched to have none.
    pub fn creating(&self, uid: &str) {
        self.groups.lock().created.insert(uid.to_owned(), None);
    }

    /// Nova answered the owner's create with `id`.
    pub fn created(&self, uid: &str, id: &ServerGroupId) {
        self.groups
            .lock()
            .created
            .insert(uid.to_owned(), Some(id.clone()));
    }

    /// The owner's object is gone, and its server group with it.
    pub fn removed(&self, uid: &str) {
        self.groups.lock().created.remove(uid);
    }

    /// Whether a listing asked for since `since` (any, when `None`) was taken in.
    pub fn listed(&self, since: Option<Instant>) -> bool {
        asked_since(self.groups.lock().listed, since)
    }

    /// Takes in a listing of the project's server groups, asked for at `asked`: the
    /// owners it showed.
    pub fn listing(&self, shown: HashSet<String>, asked: Instant) {
        let mut groups = self.groups.lock();
        groups.shown = shown;
        groups.listed = Some(asked);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_owner_is_vouched_to_have_none_only_by_a_listing_of_this_term_that_did_not_show_it() {
        let view = ServerGroupView::default();
        let term = Instant::now();
        assert_eq!(
            view.known("a", Some(term)),
            Known::Unknown,
            "nothing listed"
        );
        view.listing(
            HashSet::from(["b".to_owned()]),
            term + Duration::from_millis(1),
        );
        assert_eq!(view.known("a", Some(term)), Known::None);
        assert_eq!(view.known("b", Some(term)), Known::Unknown, "b has one");
        let later = term + Duration::from_secs(5);
        assert_eq!(
            view.known("a", Some(later)),
            Known::Unknown,
            "a listing from before the namespace's term vouches for nothing"
        );
    }

    #[test]
    fn a_create_is_known_from_its_answer_and_one_whose_answer_was_lost_is_listed_for() {
        let view = ServerGroupView::default();
        view.listing(HashSet::new(), Instant::now());
        view.creating("a");
        assert_eq!(view.known("a", None), Known::Unknown, "on the wire or lost");
        let id = ServerGroupId::new("sg-1");
        view.created("a", &id);
        assert_eq!(view.known("a", None), Known::Created(id));
        view.removed("a");
        assert_eq!(view.known("a", None), Known::None);
    }
}
