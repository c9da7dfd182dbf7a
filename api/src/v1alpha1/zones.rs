//! Availability zones: how a group spreads its replicas over Nova's zones, and what it
//! reports per zone.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The Nova availability zones a group spreads its replicas over.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupZones {
    /// Nova availability zones, in order: replica `n`'s home zone is
    /// `names[n mod len(names)]`.
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 255)))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub names: Vec<String>,
    /// `Balanced` (default): a replica whose home zone cannot take it is placed in the
    /// least-loaded zone that can, and moved back, surge first, once its home zone can
    /// again. `Even`: a replica lives in its home zone only; while that zone cannot take
    /// it, it stays pending (reported) and the others keep serving. A replica with data
    /// volumes or a floating IP is never moved: its data lives in its zone.
    #[serde(default)]
    pub spread: ZoneSpread,
}

/// How strictly replicas keep to their home zones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ZoneSpread {
    /// Home zone when it can take the replica, else the least-loaded zone that can.
    #[default]
    Balanced,
    /// Home zone always.
    Even,
}

/// One zone of the group, as the group sees it now.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneStatus {
    /// The Nova availability zone.
    pub name: String,
    /// VirtualMachines of the group in this zone.
    #[serde(default)]
    pub replicas: i32,
    /// Of those, the Ready ones.
    #[serde(default)]
    pub ready: i32,
    /// Of those, the available ones (as `status.availableReplicas` counts).
    #[serde(default)]
    pub available: i32,
    /// Whether Nova lists the zone as available to this project now.
    #[serde(default)]
    pub zone_available: bool,
    /// When Nova last found no valid host here for a replica of the group (a full
    /// zone, or one whose hosts are down while Nova still lists it). With `Balanced`,
    /// the zone takes no replica for 10 minutes after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_valid_host_at: Option<Time>,
}
