//! Records of the simulated block storage: volumes with their state machine, the
//! project's volume types and quotas. Transitions are due by time, like servers'.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, Utc};

/// Cinder volume `status` (the states the simulator reaches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VolState {
    Creating,
    Available,
    InUse,
    Extending,
    Deleting,
    Error,
}

impl VolState {
    pub fn as_str(self) -> &'static str {
        match self {
            VolState::Creating => "creating",
            VolState::Available => "available",
            VolState::InUse => "in-use",
            VolState::Extending => "extending",
            VolState::Deleting => "deleting",
            VolState::Error => "error",
        }
    }
}

/// Where a volume is attached (Cinder allows one attachment without multiattach).
#[derive(Debug, Clone)]
pub(crate) struct Attachment {
    pub id: String,
    pub server_id: String,
    pub device: String,
    pub at: DateTime<Utc>,
    /// A boot volume made by Nova goes with its server.
    pub delete_on_termination: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Volume {
    pub id: String,
    pub seq: u64,
    pub name: String,
    pub size: i64,
    pub volume_type: String,
    pub status: VolState,
    /// When the current transition (create, extend, delete) completes, and the state
    /// it ends in.
    pub until: Option<(Instant, VolState)>,
    /// The size an extend in progress ends with.
    pub extend_to: Option<i64>,
    pub metadata: BTreeMap<String, String>,
    pub attachment: Option<Attachment>,
    pub bootable: bool,
    pub created: DateTime<Utc>,
    pub updated: Option<DateTime<Utc>>,
}

/// A project's block storage.
#[derive(Debug, Clone)]
pub(crate) struct Cinder {
    pub volumes: BTreeMap<String, Volume>,
    /// `(id, name)`; the first is the default type.
    pub types: Vec<(String, String)>,
    /// `volumes` quota.
    pub volume_quota: usize,
    /// `gigabytes` quota.
    pub gigabytes_quota: i64,
}

impl Default for Cinder {
    fn default() -> Self {
        Cinder {
            volumes: BTreeMap::new(),
            types: Vec::new(),
            volume_quota: 100,
            gigabytes_quota: 1000,
        }
    }
}

impl Cinder {
    /// The type named (or with the ID) `name_or_id`; `None` asks for the default.
    pub fn volume_type(&self, name_or_id: Option<&str>) -> Option<&(String, String)> {
        match name_or_id {
            None => self.types.first(),
            Some(t) => self.types.iter().find(|(id, name)| id == t || name == t),
        }
    }

    /// Gigabytes held by every volume.
    pub fn gigabytes(&self) -> i64 {
        self.volumes.values().map(|v| v.size).sum()
    }

    /// Applies the transitions due at `now`; the instants of those still to come.
    pub fn settle(&mut self, now: Instant) -> Vec<Instant> {
        let mut later = Vec::new();
        let mut gone = Vec::new();
        for v in self.volumes.values_mut() {
            match v.until {
                Some((t, next)) if t <= now => {
                    v.until = None;
                    v.updated = Some(Utc::now());
                    if v.status == VolState::Deleting {
                        gone.push(v.id.clone());
                    } else {
                        v.status = next;
                        v.size = v.extend_to.take().unwrap_or(v.size);
                    }
                }
                Some((t, _)) => later.push(t),
                None => {}
            }
        }
        for id in gone {
            self.volumes.remove(&id);
        }
        later
    }

    /// The volumes attached to `server`, in the order they were attached.
    pub fn attached_to(&self, server: &str) -> Vec<&Volume> {
        let mut attached: Vec<&Volume> = self
            .volumes
            .values()
            .filter(|v| v.attachment.as_ref().is_some_and(|a| a.server_id == server))
            .collect();
        attached.sort_by_key(|v| v.attachment.as_ref().map(|a| a.at));
        attached
    }

    /// A server is gone: its boot volume goes with it, its data volumes are detached
    /// (`available`), as Nova does on delete.
    pub fn server_gone(&mut self, server: &str) {
        self.volumes.retain(|_, v| {
            !v.attachment
                .as_ref()
                .is_some_and(|a| a.server_id == server && a.delete_on_termination)
        });
        for v in self.volumes.values_mut() {
            if v.attachment.as_ref().is_some_and(|a| a.server_id == server) {
                v.attachment = None;
                v.status = VolState::Available;
                v.updated = Some(Utc::now());
            }
        }
    }
}
