//! Cinder (block storage API v3) request and response types, and their wire mapping.
//! Shapes as the real Cinder 29 answers them (`sim/cinder-wire.md`); responses are
//! read leniently, absent keys defaulted.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::cloud::ids::{AttachmentId, ServerId, VolumeId};

/// Cinder volume `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VolumeState {
    Creating,
    Available,
    Reserved,
    Attaching,
    Detaching,
    InUse,
    Maintenance,
    Deleting,
    AwaitingTransfer,
    Error,
    ErrorDeleting,
    BackingUp,
    RestoringBackup,
    ErrorBackingUp,
    ErrorRestoring,
    ErrorExtending,
    Downloading,
    Uploading,
    Retyping,
    Extending,
    #[serde(other)]
    Unknown,
}

impl VolumeState {
    /// Cinder's word for it, as `status` shows it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Creating => "creating",
            Self::Available => "available",
            Self::Reserved => "reserved",
            Self::Attaching => "attaching",
            Self::Detaching => "detaching",
            Self::InUse => "in-use",
            Self::Maintenance => "maintenance",
            Self::Deleting => "deleting",
            Self::AwaitingTransfer => "awaiting-transfer",
            Self::Error => "error",
            Self::ErrorDeleting => "error_deleting",
            Self::BackingUp => "backing-up",
            Self::RestoringBackup => "restoring-backup",
            Self::ErrorBackingUp => "error_backing-up",
            Self::ErrorRestoring => "error_restoring",
            Self::ErrorExtending => "error_extending",
            Self::Downloading => "downloading",
            Self::Uploading => "uploading",
            Self::Retyping => "retyping",
            Self::Extending => "extending",
            Self::Unknown => "unknown",
        }
    }

    /// A state Cinder will not leave by itself: reported, not waited for.
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Self::Error
                | Self::ErrorDeleting
                | Self::ErrorBackingUp
                | Self::ErrorRestoring
                | Self::ErrorExtending
        )
    }
}

/// Where a volume is attached.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Attachment {
    pub server_id: ServerId,
    /// Cinder's own record of it (volume API 3.27+), by which it can be deleted when
    /// Nova could not tell Cinder that the server went.
    #[serde(default)]
    pub attachment_id: Option<AttachmentId>,
    #[serde(default)]
    pub device: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Volume {
    pub id: VolumeId,
    #[serde(default)]
    pub name: Option<String>,
    pub status: VolumeState,
    /// GiB.
    pub size: i32,
    #[serde(default)]
    pub volume_type: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    #[serde(default)]
    pub created_at: Option<String>,
}

impl Volume {
    /// The server it is attached to, if any.
    pub fn attached_to(&self) -> Option<&ServerId> {
        self.attachments.first().map(|a| &a.server_id)
    }
}

/// `POST /volumes`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CreateVolume {
    pub name: String,
    /// GiB.
    pub size: i32,
    pub volume_type: Option<String>,
    /// Include [`crate::cloud::owner::Owner::volume_metadata`].
    pub metadata: BTreeMap<String, String>,
    /// Cinder's availability zone; its default zone when absent.
    pub availability_zone: Option<String>,
}

impl CreateVolume {
    pub(crate) fn to_wire(&self) -> Value {
        let mut volume = json!({"name": self.name, "size": self.size, "metadata": self.metadata});
        if let (Some(t), Some(obj)) = (&self.volume_type, volume.as_object_mut()) {
            obj.insert("volume_type".into(), json!(t));
        }
        if let (Some(z), Some(obj)) = (&self.availability_zone, volume.as_object_mut()) {
            obj.insert("availability_zone".into(), json!(z));
        }
        json!({ "volume": volume })
    }
}

/// The boot volume of a server booted from volume (Nova's block device mapping v2: made
/// from the server's image, deleted with the server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootVolumeRequest {
    /// GiB.
    pub size: i32,
    pub volume_type: Option<String>,
}

/// Attachments of a server, as Nova's `os-volume_attachments` lists them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct VolumeAttachment {
    #[serde(rename = "volumeId")]
    pub volume_id: VolumeId,
    #[serde(default)]
    pub device: Option<String>,
}
