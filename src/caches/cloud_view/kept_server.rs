//! A server as the view keeps it: without the records of its owner that every server
//! the operator makes carries (its UID, namespace, name and cluster in the metadata,
//! the owner's tags), which are known from the view's entry, and with the rest of its
//! metadata in a list rather than a map (a map allocates a node of eleven entries for
//! one). Those were most of a kept server's heap. They are given back, where they
//! stood, whenever the server leaves the view: kept and whole are the same server, so a
//! drift check reads exactly what Nova showed.

use crate::cloud::model::compute::{Server, ServerStatus};
use crate::cloud::owner::Owner;

/// Where an owner tag stood in a server's tags, when it was not there.
const ABSENT: u8 = u8::MAX;

#[derive(Clone, Debug, PartialEq)]
pub(super) struct KeptServer {
    /// The server without the owner's records, and with no metadata: the rest of it
    /// is in `metadata_rest`.
    server: Server,
    /// The metadata that is not the owner's, in order.
    metadata_rest: Box<[(String, String)]>,
    /// Which of the owner's metadata entries it carried (a bit each, in the order of
    /// [`Owner::metadata_records`]).
    metadata: u8,
    /// Where each of the owner's tags stood (in the order of [`Owner::tags`]), or
    /// [`ABSENT`].
    tags: [u8; TAGS],
}

/// As many as [`Owner::tags`] makes at most.
const TAGS: usize = 3;

impl KeptServer {
    pub(super) fn new(owner: &Owner, mut server: Server) -> Self {
        let records = owner.metadata_records();
        let mut metadata = 0;
        let mut rest = Vec::new();
        for (key, value) in std::mem::take(&mut server.metadata) {
            match records
                .iter()
                .position(|r| *r == (key.as_str(), Some(value.as_str())))
            {
                Some(bit) => metadata |= 1 << bit,
                None => rest.push((key, value)),
            }
        }
        let tags = take_tags(owner, &mut server.tags);
        // A listing decodes its lists without knowing their length (room for four
        // addresses for one, and the tags just taken out leave theirs).
        server.tags.shrink_to_fit();
        server.addresses.shrink_to_fit();
        server.volumes_attached.shrink_to_fit();
        Self {
            server,
            metadata_rest: rest.into_boxed_slice(),
            metadata,
            tags,
        }
    }

    /// The server as Nova showed it.
    pub(super) fn whole(&self, owner: &Owner) -> Server {
        let mut server = self.server.clone();
        server.metadata = self.metadata_rest.iter().cloned().collect();
        for (bit, (key, value)) in owner.metadata_records().into_iter().enumerate() {
            if let Some(value) = value.filter(|_| self.metadata & (1 << bit) != 0) {
                server.metadata.insert(key.to_owned(), value.to_owned());
            }
        }
        let mut at: Vec<(u8, String)> = owner
            .tags()
            .into_iter()
            .zip(self.tags)
            .filter(|(_, at)| *at != ABSENT)
            .map(|(tag, at)| (at, tag))
            .collect();
        at.sort_unstable();
        for (at, tag) in at {
            server
                .tags
                .insert(usize::from(at).min(server.tags.len()), tag);
        }
        server
    }

    /// Nothing is under way that a poll should follow.
    pub(super) fn is_settled(&self) -> bool {
        matches!(
            self.server.status,
            ServerStatus::Active | ServerStatus::Shutoff
        ) && self.server.task_state.is_none()
    }
}

/// Takes the owner's tags (the first of each) out of `tags`, and says where each stood.
/// Only the first 255 places are looked at: a server has at most 50 tags.
fn take_tags(owner: &Owner, tags: &mut Vec<String>) -> [u8; TAGS] {
    let mut at = [ABSENT; TAGS];
    let records = owner.tags();
    let mut index = 0u8;
    tags.retain(|tag| {
        let taken = records
            .iter()
            .zip(at.iter_mut())
            .find(|(record, at)| **at == ABSENT && *record == tag);
        let keep = match taken {
            Some((_, at)) if index < ABSENT => {
                *at = index;
                false
            }
            _ => true,
        };
        index = index.saturating_add(1);
        keep
    });
    tags.shrink_to_fit();
    at
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cloud::ids::ServerId;
    use crate::cloud::model::compute::ServerAddress;
    use crate::cloud::owner::{ClusterId, MANAGED_TAG, META_NAME, META_NAMESPACE};

    fn owner() -> Owner {
        let mut owner = Owner::new("8a1c9d2e-0000-4000-8000-000000000001", "team-a", "db-0");
        owner.cluster = ClusterId::new("prod-1").ok();
        owner
    }

    fn server(metadata: BTreeMap<String, String>, tags: Vec<String>) -> Server {
        Server {
            id: ServerId::new("server-1"),
            name: "db-0".into(),
            status: ServerStatus::Active,
            task_state: None,
            addresses: Vec::new(),
            metadata,
            tags,
            description: None,
            flavor: Some("small".into()),
            image: None,
            fault: None,
            availability_zone: None,
            volumes_attached: vec![],
        }
    }

    #[test]
    fn a_server_the_operator_made_is_kept_without_its_owner_s_records_and_given_back_whole() {
        let owner = owner();
        let mut metadata = owner.server_metadata();
        metadata.insert("role".into(), "primary".into());
        let made = server(metadata, owner.tags_added_to(&["user".to_owned()]));

        let kept = KeptServer::new(&owner, made.clone());

        assert!(kept.server.metadata.is_empty());
        assert_eq!(*kept.metadata_rest, [("role".into(), "primary".into())]);
        assert_eq!(kept.server.tags, vec!["user".to_owned()]);
        assert_eq!(kept.whole(&owner), made);
    }

    #[test]
    fn a_kept_server_holds_its_lists_at_their_length() {
        let owner = owner();
        // As a listing decodes them: room for four where one is held.
        let mut listed = server(
            owner.server_metadata(),
            owner.tags_added_to(&["user".into()]),
        );
        listed.addresses = Vec::with_capacity(4);
        listed.addresses.push(ServerAddress {
            network: "private".into(),
            addr: "10.0.0.3".into(),
            version: 4,
            kind: Some("fixed".into()),
        });
        listed.volumes_attached = Vec::with_capacity(4);

        let kept = KeptServer::new(&owner, listed.clone());

        let server = &kept.server;
        assert_eq!(server.tags.capacity(), server.tags.len());
        assert_eq!(server.addresses.capacity(), 1);
        assert_eq!(server.volumes_attached.capacity(), 0);
        assert_eq!(kept.whole(&owner), listed);
    }

    #[test]
    fn records_edited_away_or_changed_in_the_cloud_stay_as_the_cloud_shows_them() {
        let owner = owner();
        let mut metadata = owner.server_metadata();
        metadata.remove(META_NAME);
        metadata.insert(META_NAMESPACE.into(), "team-b".into());
        let tags = vec![
            MANAGED_TAG.to_owned(),
            "x".to_owned(),
            MANAGED_TAG.to_owned(),
            owner.tag(),
        ];
        let edited = server(metadata, tags);

        let kept = KeptServer::new(&owner, edited.clone());

        assert_eq!(
            *kept.metadata_rest,
            [(META_NAMESPACE.into(), "team-b".into())]
        );
        assert_eq!(
            kept.server.tags,
            vec!["x".to_owned(), MANAGED_TAG.to_owned()]
        );
        assert_eq!(kept.whole(&owner), edited);
        assert_ne!(
            kept,
            KeptServer::new(&owner, server(owner.server_metadata(), owner.tags()))
        );
    }
}
