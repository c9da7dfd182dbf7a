//! Typed identifiers for every OpenStack object the service traits handle.
//!
//! A `ServerId` cannot be passed where a `PoolId` is expected. The types only wrap the
//! string OpenStack returned; they deliberately do not validate UUID syntax, because Nova
//! flavor IDs (`"10"`) and clouds with custom ID schemes are legal.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! id_types {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }
    )*};
}

/// `a, b, c`: IDs as a message lists them.
pub fn joined<T: fmt::Display>(ids: &[T]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

id_types! {
    /// A Nova server.
    ServerId,
    /// A Nova server group.
    ServerGroupId,
    /// A Nova flavor (not necessarily a UUID: `"10"` is common).
    FlavorId,
    /// A Glance image.
    ImageId,
    /// A Neutron network.
    NetworkId,
    /// A Neutron subnet.
    SubnetId,
    /// A Neutron port.
    PortId,
    /// A Neutron floating IP.
    FloatingIpId,
    /// An Octavia load balancer.
    LoadBalancerId,
    /// An Octavia listener.
    ListenerId,
    /// An Octavia pool.
    PoolId,
    /// An Octavia health monitor.
    HealthMonitorId,
    /// An Octavia pool member.
    MemberId,
    /// An Octavia flavor (load balancer size/topology).
    LbFlavorId,
    /// A Cinder volume.
    VolumeId,
    /// A Cinder attachment of a volume to a server (attachments API, 3.27+).
    AttachmentId,
    /// A Designate zone.
    DnsZoneId,
    /// A Designate record set.
    RecordSetId,
}

/// Whether a user-supplied reference looks like an OpenStack UUID (with or without dashes).
///
/// Used by the `find_*` verbs to decide whether to try a direct GET before a name search.
pub fn looks_like_uuid(s: &str) -> bool {
    let hex: Vec<char> = s.chars().filter(|c| *c != '-').collect();
    let dashes = s.len() - hex.len();
    hex.len() == 32 && (dashes == 0 || dashes == 4) && hex.iter().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_detection_accepts_dashed_and_plain_forms_only() {
        assert!(looks_like_uuid("244965c2-7e98-469d-b7cc-fe423698200a"));
        assert!(looks_like_uuid("244965c27e98469db7ccfe423698200a"));
        assert!(!looks_like_uuid("centos79"));
        assert!(!looks_like_uuid("10"));
        assert!(!looks_like_uuid("244965c2-7e98-469d-b7cc-fe423698200z"));
    }

    #[test]
    fn ids_serialize_as_plain_strings() {
        let id = ServerId::new("abc");
        assert_eq!(serde_json::to_string(&id).ok().as_deref(), Some("\"abc\""));
        assert_eq!(id.to_string(), "abc");
    }
}
