//! The data volumes the operator owns, by volume owner (a VirtualMachine's UID, or a
//! group's UID and replica index): filled by one paginated list of this cluster's
//! volumes per refresh (a metadata filter on the cluster key) and by the controllers'
//! own reads, emptied for an owner by its own writes.
//!
//! Like the server view, it answers only while every volume of the owner is settled
//! (`available` or `in-use`) and recently confirmed; before a volume is created the
//! owner's volumes are always listed from Cinder itself.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::cloud::model::volume::{Volume, VolumeState};
use crate::cloud::owner::{Owner, volume_record};
use crate::lock::Lock;

/// Whose volumes: a VirtualMachine's, or a group's replica `index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeOwner {
    /// The owner recorded on the volumes (the group for a replica).
    pub owner: Owner,
    pub index: Option<u32>,
}

impl VolumeOwner {
    fn key(&self) -> String {
        match self.index {
            Some(i) => format!("{}/{i}", self.owner.uid),
            None => self.owner.uid.clone(),
        }
    }

    /// The VirtualMachine these volumes serve: the owner itself, or `<group>-<index>`.
    pub fn virtual_machine(&self) -> (String, String) {
        let name = match self.index {
            Some(i) => format!("{}-{i}", self.owner.name),
            None => self.owner.name.clone(),
        };
        (self.owner.namespace.clone(), name)
    }
}

struct Entry {
    owner: VolumeOwner,
    volumes: Vec<Volume>,
    confirmed: Instant,
    /// The owner wrote since: the view does not answer until Cinder is read again.
    stale: bool,
}

#[derive(Default)]
pub struct VolumeView {
    owners: Lock<HashMap<String, Entry>>,
}

impl VolumeView {
    /// Drops what the view saw of `namespace`'s owners (see
    /// `ServerView::forget_namespace`).
    pub fn forget_namespace(&self, namespace: &str) {
        self.owners
            .lock()
            .retain(|_, entry| entry.owner.owner.namespace != namespace);
    }

    /// The namespaces of the owners the view holds volumes of.
    pub fn namespaces(&self) -> std::collections::HashSet<String> {
        let owners = self.owners.lock();
        let held = owners.values().filter(|e| !e.volumes.is_empty());
        held.map(|e| e.owner.owner.namespace.clone()).collect()
    }

    /// The owner's volumes, when the view can answer for them.
    pub fn settled(&self, owner: &VolumeOwner, max_age: Duration) -> Option<Vec<Volume>> {
        let owners = self.owners.lock();
        let entry = owners.get(&owner.key())?;
        let fresh = !entry.stale && entry.confirmed.elapsed() <= max_age;
        (fresh && entry.volumes.iter().all(is_settled)).then(|| entry.volumes.clone())
    }

    /// What an authoritative read of the owner's volumes found.
    pub fn record(&self, owner: &VolumeOwner, volumes: &[Volume]) {
        self.owners.lock().insert(
            owner.key(),
            Entry {
                owner: owner.clone(),
                volumes: volumes.to_vec(),
                confirmed: Instant::now(),
                stale: false,
            },
        );
    }

    /// After a write: the next look goes to Cinder, and a listing asked for before
    /// the write cannot bring the old state back.
    pub fn forget(&self, owner: &VolumeOwner) {
        self.record(owner, &[]);
        if let Some(entry) = self.owners.lock().get_mut(&owner.key()) {
            entry.stale = true;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.owners.lock().is_empty()
    }

    /// The volumes the view knows of owner `uid` at replica indices outside `live`,
    /// with their index: a group's retained volumes. No call: from what reads and
    /// refreshes saw.
    pub fn retained(
        &self,
        uid: &str,
        live: &std::collections::BTreeSet<u32>,
    ) -> Vec<(u32, Volume)> {
        self.owners
            .lock()
            .values()
            .filter(|e| e.owner.owner.uid == uid)
            .filter_map(|e| e.owner.index.filter(|i| !live.contains(i)).map(|i| (i, e)))
            .flat_map(|(i, e)| e.volumes.iter().map(move |v| (i, v.clone())))
            .collect()
    }

    /// Takes in a full listing asked for at `asked`; the owners whose volumes changed.
    pub fn replace(&self, listed: Vec<Volume>, asked: Instant) -> Vec<VolumeOwner> {
        let mut fresh: HashMap<String, Entry> = HashMap::new();
        for volume in listed {
            let Some((owner, _, index)) = volume_record(&volume.metadata) else {
                continue;
            };
            let owner = VolumeOwner { owner, index };
            fresh
                .entry(owner.key())
                .or_insert_with(|| Entry {
                    owner,
                    volumes: Vec::new(),
                    confirmed: asked,
                    stale: false,
                })
                .volumes
                .push(volume);
        }
        let mut owners = self.owners.lock();
        let mut changed = Vec::new();
        for (key, entry) in std::mem::take(&mut *owners) {
            if entry.confirmed > asked {
                fresh.insert(key, entry);
                continue;
            }
            let now = fresh.get(&key).map_or(&[][..], |e| e.volumes.as_slice());
            if !same(now, &entry.volumes) {
                changed.push(entry.owner.clone());
            }
            // An owner known with no volume stays known (with none).
            fresh.entry(key).or_insert(Entry {
                volumes: Vec::new(),
                confirmed: asked,
                stale: false,
                ..entry
            });
        }
        *owners = fresh;
        changed
    }
}

fn same(a: &[Volume], b: &[Volume]) -> bool {
    a.len() == b.len() && a.iter().all(|v| b.contains(v))
}

fn is_settled(volume: &Volume) -> bool {
    matches!(volume.status, VolumeState::Available | VolumeState::InUse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::ids::VolumeId;

    fn group() -> VolumeOwner {
        VolumeOwner {
            owner: Owner::new("g-1", "team", "db"),
            index: Some(1),
        }
    }

    fn volume(id: &str, status: VolumeState, size: i32) -> Volume {
        Volume {
            id: VolumeId::new(id),
            name: Some(format!("db-1-{id}")),
            status,
            size,
            volume_type: None,
            metadata: group().owner.volume_metadata("data", Some(1)),
            attachments: vec![],
            created_at: None,
        }
    }

    #[test]
    fn a_refresh_wakes_the_replica_whose_volume_changed_or_went() {
        let view = VolumeView::default();
        let before = Instant::now();
        view.record(&group(), &[volume("v1", VolumeState::InUse, 10)]);
        assert_eq!(group().virtual_machine(), ("team".into(), "db-1".into()));
        let asked = Instant::now();
        assert!(before < asked);
        // The same, listed after the read: nothing to wake.
        let same = view.replace(vec![volume("v1", VolumeState::InUse, 10)], asked);
        assert!(same.is_empty());
        let later = Instant::now();
        assert_eq!(view.replace(vec![], later), vec![group()]);
        assert_eq!(
            view.settled(&group(), Duration::from_secs(60)),
            Some(vec![])
        );
    }

    #[test]
    fn only_settled_recent_volumes_are_vouched_for() {
        let view = VolumeView::default();
        view.record(&group(), &[volume("v1", VolumeState::Creating, 10)]);
        assert_eq!(view.settled(&group(), Duration::from_secs(60)), None);
        view.record(&group(), &[volume("v1", VolumeState::Available, 10)]);
        assert!(view.settled(&group(), Duration::from_secs(60)).is_some());
        view.forget(&group());
        assert_eq!(view.settled(&group(), Duration::from_secs(60)), None);
    }
}
