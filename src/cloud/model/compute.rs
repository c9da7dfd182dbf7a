//! Nova and Glance request and response types, and their wire mapping.
//!
//! Responses are read leniently (unknown keys ignored, absent keys defaulted): Nova's
//! reduced server view after `PUT /servers/{id}` and the BUILD/ERROR views lack keys the
//! ACTIVE view has (Compute API reference, "Show Server Details" and "Update Server").

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::volume::BootVolumeRequest;
use crate::cloud::ids::{FlavorId, ImageId, NetworkId, PortId, ServerGroupId, ServerId, VolumeId};

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Flavor {
    pub id: FlavorId,
    pub name: String,
    #[serde(default)]
    pub vcpus: Option<u32>,
    /// MiB.
    #[serde(default)]
    pub ram: Option<u64>,
    /// GiB.
    #[serde(default)]
    pub disk: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Image {
    pub id: ImageId,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub status: String,
    /// GiB a disk or boot volume made from it needs at least.
    #[serde(default)]
    pub min_disk: Option<u64>,
}

/// Nova user data (cloud-init). May come from a Secret: `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct UserData(pub String);

impl fmt::Debug for UserData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserData(<{} bytes>)", self.0.len())
    }
}

/// `POST /servers`: everything a VirtualMachine spec can ask for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CreateServer {
    pub name: String,
    pub image: ImageId,
    pub flavor: FlavorId,
    pub networks: Vec<NetworkId>,
    /// Declared ports the server boots on, in place of `networks` when not empty (their
    /// security groups are the ports' own: Nova ignores the request's for them).
    pub ports: Vec<PortId>,
    pub user_data: Option<UserData>,
    pub key_name: Option<String>,
    pub security_groups: Vec<String>,
    pub availability_zone: Option<String>,
    /// Include [`crate::cloud::owner::Owner::server_metadata`].
    pub metadata: BTreeMap<String, String>,
    /// Include [`crate::cloud::owner::Owner::tag`].
    pub tags: Vec<String>,
    pub description: Option<String>,
    /// The `group` scheduler hint.
    pub server_group: Option<ServerGroupId>,
    /// Boot from a new volume made from `image` instead of the hypervisor's disk.
    pub boot_volume: Option<BootVolumeRequest>,
}

impl CreateServer {
    fn nics(&self) -> Vec<Value> {
        if self.ports.is_empty() {
            let nic = |n: &NetworkId| serde_json::json!({"uuid": n});
            return self.networks.iter().map(nic).collect();
        }
        let nic = |p: &PortId| serde_json::json!({"port": p});
        self.ports.iter().map(nic).collect()
    }

    pub(crate) fn to_wire(&self) -> Value {
        let mut server = serde_json::json!({
            "name": self.name,
            "flavorRef": self.flavor,
            "networks": self.nics(),
        });
        let set = |server: &mut Value, key: &str, value: Value| {
            if let Some(obj) = server.as_object_mut() {
                obj.insert(key.to_owned(), value);
            }
        };
        match &self.boot_volume {
            // The image goes into the volume; Nova takes no imageRef then.
            Some(boot) => set(
                &mut server,
                "block_device_mapping_v2",
                boot_mapping(&self.image, boot),
            ),
            None => set(&mut server, "imageRef", serde_json::json!(self.image)),
        }
        if let Some(ud) = &self.user_data {
            set(
                &mut server,
                "user_data",
                Value::String(base64(ud.0.as_bytes())),
            );
        }
        if let Some(key) = &self.key_name {
            set(&mut server, "key_name", Value::String(key.clone()));
        }
        if !self.security_groups.is_empty() && self.ports.is_empty() {
            let groups = self
                .security_groups
                .iter()
                .map(|g| serde_json::json!({"name": g}))
                .collect();
            set(&mut server, "security_groups", Value::Array(groups));
        }
        if let Some(az) = &self.availability_zone {
            set(&mut server, "availability_zone", Value::String(az.clone()));
        }
        if !self.metadata.is_empty() {
            set(&mut server, "metadata", serde_json::json!(self.metadata));
        }
        if !self.tags.is_empty() {
            set(&mut server, "tags", serde_json::json!(self.tags));
        }
        if let Some(d) = &self.description {
            set(&mut server, "description", Value::String(d.clone()));
        }
        let mut body = serde_json::json!({ "server": server });
        if let (Some(group), Some(obj)) = (&self.server_group, body.as_object_mut()) {
            obj.insert(
                "os:scheduler_hints".into(),
                serde_json::json!({"group": group}),
            );
        }
        body
    }
}

/// Block device mapping v2 of a boot volume: from the image, deleted with the server
/// (volume type at microversion 2.67).
fn boot_mapping(image: &ImageId, boot: &BootVolumeRequest) -> Value {
    let mut mapping = serde_json::json!({
        "boot_index": 0,
        "uuid": image,
        "source_type": "image",
        "destination_type": "volume",
        "volume_size": boot.size,
        "delete_on_termination": true,
    });
    if let (Some(t), Some(obj)) = (&boot.volume_type, mapping.as_object_mut()) {
        obj.insert("volume_type".into(), serde_json::json!(t));
    }
    serde_json::json!([mapping])
}

/// Nova server `status`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServerStatus {
    Active,
    Build,
    Error,
    Shutoff,
    Resize,
    VerifyResize,
    RevertResize,
    Reboot,
    HardReboot,
    Deleted,
    SoftDeleted,
    Migrating,
    Paused,
    Suspended,
    Rescue,
    Shelved,
    ShelvedOffloaded,
    Rebuild,
    Password,
    #[serde(other)]
    Unknown,
}

/// Why a server is in ERROR; `No valid host was found` is a scheduling failure.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ServerFault {
    pub code: u16,
    #[serde(default)]
    pub message: String,
}

impl ServerFault {
    /// Nova's NoValidHost, and MaxRetriesExceeded (its subclass: every host tried
    /// failed the build).
    pub fn is_no_valid_host(&self) -> bool {
        self.message.contains("No valid host")
            || self
                .message
                .starts_with("Exceeded maximum number of retries")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerAddress {
    pub network: String,
    pub addr: String,
    pub version: u8,
    /// `fixed` or `floating`, when Nova says.
    pub kind: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    pub id: ServerId,
    pub name: String,
    pub status: ServerStatus,
    pub task_state: Option<String>,
    pub addresses: Vec<ServerAddress>,
    pub metadata: BTreeMap<String, String>,
    pub tags: Vec<String>,
    pub description: Option<String>,
    /// The flavor's name (embedded flavor, 2.47+), or its ID in the reduced view.
    pub flavor: Option<String>,
    pub image: Option<ImageId>,
    pub fault: Option<ServerFault>,
    pub availability_zone: Option<String>,
    /// Volumes attached to it (`os-extended-volumes:volumes_attached`), boot volume
    /// included.
    pub volumes_attached: Vec<VolumeId>,
}

impl Server {
    /// The first fixed IPv4 address, else the first address.
    pub fn primary_ip(&self) -> Option<&str> {
        let fixed_v4 = self
            .addresses
            .iter()
            .find(|a| a.version == 4 && a.kind.as_deref() != Some("floating"));
        fixed_v4.or(self.addresses.first()).map(|a| a.addr.as_str())
    }
}

#[derive(Deserialize)]
pub(crate) struct ServerWire {
    id: ServerId,
    #[serde(default)]
    name: String,
    #[serde(default = "unknown_status")]
    status: ServerStatus,
    #[serde(rename = "OS-EXT-STS:task_state", default)]
    task_state: Option<String>,
    #[serde(default)]
    addresses: BTreeMap<String, Vec<AddressWire>>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    tags: Option<Vec<String>>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    flavor: Option<RefWire>,
    /// `""` for boot-from-volume servers, an object otherwise.
    #[serde(default)]
    image: Option<RefWire>,
    #[serde(default)]
    fault: Option<ServerFault>,
    #[serde(rename = "OS-EXT-AZ:availability_zone", default)]
    availability_zone: Option<String>,
    #[serde(rename = "os-extended-volumes:volumes_attached", default)]
    volumes_attached: Vec<AttachedWire>,
}

/// A server's flavor or image: an object naming it (its links and extra specs are
/// skipped, not kept as a `Value` for every server of a list), or anything else
/// (a boot-from-volume server's image is `""`).
#[derive(Deserialize)]
#[serde(untagged)]
enum RefWire {
    Named {
        #[serde(default)]
        original_name: Option<String>,
        #[serde(default)]
        id: Option<String>,
    },
    Unnamed(serde::de::IgnoredAny),
}

impl RefWire {
    /// A flavor's name (2.47 and later), else its id.
    fn name(self) -> Option<String> {
        match self {
            RefWire::Named { original_name, id } => original_name.or(id),
            RefWire::Unnamed(_) => None,
        }
    }

    fn id(self) -> Option<String> {
        match self {
            RefWire::Named { id, .. } => id,
            RefWire::Unnamed(_) => None,
        }
    }
}

#[derive(Deserialize)]
struct AttachedWire {
    id: VolumeId,
}

fn unknown_status() -> ServerStatus {
    ServerStatus::Unknown
}

#[derive(Deserialize)]
struct AddressWire {
    addr: String,
    #[serde(default = "four")]
    version: u8,
    #[serde(rename = "OS-EXT-IPS:type", default)]
    kind: Option<String>,
}

fn four() -> u8 {
    4
}

impl From<ServerWire> for Server {
    fn from(w: ServerWire) -> Self {
        let addresses = w
            .addresses
            .into_iter()
            .flat_map(|(network, list)| {
                list.into_iter().map(move |a| ServerAddress {
                    network: network.clone(),
                    addr: a.addr,
                    version: a.version,
                    kind: a.kind,
                })
            })
            .collect();
        Server {
            id: w.id,
            name: w.name,
            status: w.status,
            task_state: w.task_state,
            addresses,
            metadata: w.metadata,
            tags: w.tags.unwrap_or_default(),
            description: w.description,
            flavor: w.flavor.and_then(RefWire::name),
            image: w.image.and_then(RefWire::id).map(ImageId::new),
            fault: w.fault,
            availability_zone: w.availability_zone.filter(|az| !az.is_empty()),
            volumes_attached: w.volumes_attached.into_iter().map(|v| v.id).collect(),
        }
    }
}

/// Nova server group policy (microversion 2.64 `policy` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerGroupPolicy {
    AntiAffinity,
    SoftAntiAffinity,
    Affinity,
    SoftAffinity,
    #[serde(other)]
    Unknown,
}

/// One entry of `GET /os-availability-zone`: a zone Nova offers the project, and
/// whether it can take servers now (a zone whose compute services are all disabled is
/// listed as not available).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct AvailabilityZone {
    #[serde(rename = "zoneName")]
    pub name: String,
    #[serde(rename = "zoneState")]
    pub state: ZoneState,
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
pub struct ZoneState {
    pub available: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ServerGroup {
    pub id: ServerGroupId,
    pub name: String,
    #[serde(default = "unknown_policy")]
    pub policy: ServerGroupPolicy,
    #[serde(default)]
    pub members: Vec<ServerId>,
}

impl Flavor {
    /// Whether a server's `flavor` field (the name, or the ID in Nova's reduced view)
    /// names this flavor.
    pub fn is_named_by(&self, server_flavor: &str) -> bool {
        self.name == server_flavor || self.id.as_str() == server_flavor
    }
}

fn unknown_policy() -> ServerGroupPolicy {
    ServerGroupPolicy::Unknown
}

/// Standard base64 with padding (Nova `user_data`); small enough not to need a crate.
pub(crate) fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_recorded_user_data() {
        assert_eq!(
            base64(b"#cloud-config\nruncmd:\n  - echo hello\n"),
            "I2Nsb3VkLWNvbmZpZwpydW5jbWQ6CiAgLSBlY2hvIGhlbGxvCg=="
        );
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b""), "");
    }

    #[test]
    fn scheduler_hint_is_a_sibling_of_server() {
        let req = CreateServer {
            name: "web-0".into(),
            image: ImageId::new("img"),
            flavor: FlavorId::new("10"),
            networks: vec![NetworkId::new("net")],
            server_group: Some(ServerGroupId::new("grp")),
            tags: vec!["verda-uid-1".into()],
            ..CreateServer::default()
        };
        let body = req.to_wire();
        assert_eq!(body["os:scheduler_hints"]["group"], "grp");
        assert_eq!(body["server"]["tags"][0], "verda-uid-1");
        assert_eq!(body["server"]["networks"][0]["uuid"], "net");
        assert!(body["server"].get("user_data").is_none());
    }

    #[test]
    fn no_valid_host_fault_is_read_from_an_error_server() {
        let wire: ServerWire = serde_json::from_value(serde_json::json!({
            "id": "8c84", "name": "wire-aa-4", "status": "ERROR", "addresses": {},
            "flavor": {"original_name": "n3-1vcpu-2gb"}, "image": {"id": "2449"},
            "fault": {"code": 500, "created": "2026-11-21T06:37:15Z",
                      "message": "No valid host was found. There are not enough hosts available."},
            "OS-EXT-AZ:availability_zone": ""
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let server = Server::from(wire);
        assert_eq!(server.status, ServerStatus::Error);
        assert!(
            server
                .fault
                .as_ref()
                .is_some_and(ServerFault::is_no_valid_host)
        );
        assert_eq!(server.flavor.as_deref(), Some("n3-1vcpu-2gb"));
        assert_eq!(server.availability_zone, None);
        assert_eq!(server.primary_ip(), None);
    }

    #[test]
    fn flavor_and_image_are_read_from_every_shape_nova_answers() {
        let server = |flavor: serde_json::Value, image: serde_json::Value| {
            let wire: ServerWire = serde_json::from_value(serde_json::json!({
                "id": "8c84", "status": "ACTIVE", "flavor": flavor, "image": image,
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            Server::from(wire)
        };
        // 2.47 and later: the flavor by name, with its extra specs.
        let named = server(
            serde_json::json!({"original_name": "m1.small", "vcpus": 1, "extra_specs": {"a": "b"}}),
            serde_json::json!({"id": "2449", "links": [{"rel": "bookmark", "href": "x"}]}),
        );
        assert_eq!(named.flavor.as_deref(), Some("m1.small"));
        assert_eq!(named.image.as_ref().map(ImageId::as_str), Some("2449"));
        // Before 2.47: the flavor by id. Boot from volume: the image is "".
        let by_id = server(
            serde_json::json!({"id": "42", "links": []}),
            serde_json::json!(""),
        );
        assert_eq!(by_id.flavor.as_deref(), Some("42"));
        assert_eq!(by_id.image, None);
    }

    #[test]
    fn user_data_is_hidden_from_debug_output() {
        let ud = UserData("password=hunter2".into());
        assert!(!format!("{ud:?}").contains("hunter2"));
    }
}
