//! Block storage of a VirtualMachine: a boot volume that belongs to its server, data
//! volumes that outlive servers, and what happens to them when the object goes.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Largest volume size accepted, in GiB (16 TiB): a guard against a typo exhausting
/// the project's gigabytes quota, not a limit of Cinder.
pub const MAX_VOLUME_GIB: i32 = 16_384;

/// Boot the server from a new Cinder volume made from `spec.image` instead of the
/// hypervisor's disk. It belongs to the server: created with it, deleted with it (Nova's
/// `delete_on_termination`), made anew for a replacement server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootVolume {
    /// Size in GiB; at least the image's `min_disk`.
    #[schemars(range(min = 1, max = MAX_VOLUME_GIB))]
    pub size: i32,
    /// Cinder volume type (the cloud's default when absent).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub type_: Option<String>,
}

/// A data volume: created once, attached to the server in list order, kept across every
/// replacement of the server. In Cinder it is named `<VirtualMachine>-<name>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.type) == has(oldSelf.type) && (!has(self.type) || self.type == oldSelf.type)").message("volumes[].type is immutable: Cinder cannot change a volume's type here; add a volume under a new name instead"))]
pub struct DataVolume {
    /// Unique in the list: a DNS label (lowercase letters, digits and `-`, at most 63).
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,
    /// Size in GiB. It can grow (the volume is extended, attached or not) but never
    /// shrink.
    #[schemars(range(min = 1, max = MAX_VOLUME_GIB))]
    #[x_kube(validation = kube::core::Rule::new("self >= oldSelf").message("volumes[].size can grow, never shrink: Cinder cannot shrink a volume"))]
    pub size: i32,
    /// Cinder volume type (the cloud's default when absent). Immutable.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub type_: Option<String>,
}

/// What becomes of data volumes when they are no longer wanted. The words of a
/// StatefulSet's `persistentVolumeClaimRetentionPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Retention {
    /// Keep them (the default): data is never deleted unless asked for.
    #[default]
    Retain,
    /// Delete them once their server is gone.
    Delete,
}

/// A VirtualMachine's data volumes when it is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeRetention {
    /// `Retain` (default) or `Delete`. A group sets it on its VirtualMachines as it
    /// decides their fate.
    #[serde(default)]
    pub when_deleted: Retention,
}

/// A group's data volumes, per replica index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupVolumeRetention {
    /// When a scale-down removes a replica: `Retain` (default) keeps its volumes for a
    /// later scale-up of the same index, `Delete` deletes them.
    #[serde(default)]
    pub when_scaled: Retention,
    /// When the group is deleted: `Retain` (default) or `Delete`.
    #[serde(default)]
    pub when_deleted: Retention,
}

/// One volume as the cloud has it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeStatus {
    /// `spec.volumes[].name`, or `boot` for the boot volume.
    pub name: String,
    /// Cinder volume ID.
    #[serde(rename = "id")]
    pub id: String,
    /// Size in GiB.
    pub size: i32,
    /// Cinder volume type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Cinder status: creating, available, in-use, extending, error, …
    pub status: String,
    /// Device name on the server while attached (e.g. `/dev/vdb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}
