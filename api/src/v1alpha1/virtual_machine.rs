//! VirtualMachine: one Nova server.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::credentials::CloudCredentialsRef;
use super::init_script::InitScript;
use super::lifecycle::Import;
use super::network_ports::{FloatingIpSpec, NetworkRetention, PortSpec, PortStatus};
use super::rollout::RunStrategy;
use super::rules::immutable_spec_field;
use super::volumes::{BootVolume, DataVolume, VolumeRetention, VolumeStatus};

/// `spec.import.id` cannot change: what it names is the object's from then on. (CEL
/// reserves the word `import`, so the rule sits on the field, where `self` needs no name.)
pub(crate) fn import_once() -> kube::core::Rule {
    kube::core::Rule::new("self == oldSelf").message(kube::core::Message::Message(
        "spec.import is immutable: the resource it names is this object's; to take over another, create a new object".into(),
    ))
}
const RECREATE: &str =
    "Nova cannot change it on an existing server; create a new VirtualMachine instead";

/// The desired state of one OpenStack server.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "verda.linecorp.com",
    version = "v1alpha1",
    kind = "VirtualMachine",
    namespaced,
    doc = "A Nova server declared in Kubernetes: image, flavor, networks and init script in `spec`; server ID, state and addresses in `status`.",
    shortname = "vm",
    category = "verda",
    status = "VirtualMachineStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"The Ready condition: True, False or Unknown"}"#,
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".status.state","description":"Nova server status"}"#,
    printcolumn = r#"{"name":"IP","type":"string","jsonPath":".status.primaryIP","description":"Primary fixed IP address"}"#,
    printcolumn = r#"{"name":"Flavor","type":"string","jsonPath":".spec.flavor"}"#,
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"Volumes","type":"string","jsonPath":".status.volumesAttached","description":"Data volumes attached / declared"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1,"description":"Why the object is or is not Ready"}"#,
    printcolumn = r#"{"name":"Zone","type":"string","jsonPath":".status.availabilityZone","priority":1,"description":"The availability zone Nova placed the server in"}"#,
    printcolumn = r#"{"name":"DNS","type":"string","jsonPath":".status.dns[*].name","priority":1,"description":"The DNS names of the server's address"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = immutable_spec_field("image", RECREATE),
    validation = immutable_spec_field("initScript", "user data is read only when the server is created; create a new VirtualMachine to run a different script"),
    validation = immutable_spec_field("networks", RECREATE),
    validation = kube::core::Rule::new("!has(self.spec.ports) || !has(self.spec.networks)").message("give either spec.networks or spec.ports, not both: ports replace networks").field_path(".spec.ports"),
    validation = kube::core::Rule::new("!has(self.spec.floatingIP) || has(self.spec.ports)").message("spec.floatingIP needs spec.ports: the floating IP stays on the first declared port, which outlives the server").field_path(".spec.floatingIP"),
    validation = immutable_spec_field("floatingIP", "the floating IP is allocated once for the VirtualMachine; create a new VirtualMachine for another"),
    validation = kube::core::Rule::new("has(self.spec.ports) == has(oldSelf.spec.ports) && (!has(self.spec.ports) || self.spec.ports.map(p, p.network) == oldSelf.spec.ports.map(p, p.network))").message("the networks of spec.ports are immutable: a server's ports are made with it; allowedAddressPairs and securityGroups may change").field_path(".spec.ports"),
    validation = kube::core::Rule::new("!has(self.spec.ports) || !has(oldSelf.spec.ports) || self.spec.ports.map(p, has(p.portID) ? p.portID : '') == oldSelf.spec.ports.map(p, has(p.portID) ? p.portID : '')").message("portID is immutable: a port taken over is the VirtualMachine's; create a new VirtualMachine to take over another").field_path(".spec.ports"),
    validation = immutable_spec_field("keyName", RECREATE),
    validation = immutable_spec_field("securityGroups", RECREATE),
    validation = immutable_spec_field("availabilityZone", RECREATE),
    validation = immutable_spec_field("bootVolume", "a boot volume is made with its server; create a new VirtualMachine to boot another way")
)]
#[serde(rename_all = "camelCase")]
// The fields most objects leave unset and that are larger than a pointer are boxed:
// every VirtualMachine the watch cache holds, and every group's template, would
// otherwise hold their room.
pub struct VirtualMachineSpec {
    /// Image to boot from: a Glance image name or UUID. Immutable.
    #[schemars(length(min = 1, max = 255))]
    pub image: String,
    /// Nova flavor: a name or ID. Changing it resizes the server (the resize is
    /// confirmed automatically).
    #[schemars(length(min = 1, max = 255))]
    pub flavor: String,
    /// Script passed to the server as user data when it is created. `${VERDA_NAME}`
    /// becomes the VirtualMachine's name and `${VERDA_INDEX}` a group replica's index
    /// (empty outside a group); `$${` is a literal `${`. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_script: Option<Box<InitScript>>,
    /// Free text shown as the server's description in OpenStack: at most 255
    /// characters, no control characters such as newlines or tabs (Nova refuses them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 255), regex(pattern = r"^[^\x00-\x1F\x7F]*$"))]
    pub description: Option<String>,
    /// Networks to attach, by name or UUID, in order (the first gives the primary IP).
    /// Defaults to the operator's configured networks. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 255)))]
    pub networks: Option<Vec<String>>,
    /// Neutron ports made before the server and kept across every replacement of it:
    /// the same addresses and MACs whatever replaced the server. In place of
    /// `networks` (not both), in order (the first gives the primary IP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["network"]))]
    pub ports: Option<Vec<PortSpec>>,
    /// A floating IP from this external network on the first declared port: allocated
    /// once (per replica index in a group), kept across every replacement. Needs
    /// `ports`. Immutable.
    #[serde(
        default,
        rename = "floatingIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub floating_ip: Option<Box<FloatingIpSpec>>,
    /// Name of the Nova key pair injected into the server. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub key_name: Option<String>,
    /// Security groups of the server's ports, by name. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 255)))]
    pub security_groups: Option<Vec<String>>,
    /// Availability zone to place the server in. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub availability_zone: Option<String>,
    /// Extra Nova metadata for the server, at most 124 items (Nova's default of 128 less
    /// the operator's 4). Keys: 1-255 letters, digits, `-`, `_`, `:`, `.` or spaces (no
    /// `/`), not starting with `verda.linecorp.com:`, which the operator uses; values at
    /// most 255 characters. Changes are applied in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = kube::core::Rule::new("self.all(k, k.matches('^[-a-zA-Z0-9_:. ]{1,255}$'))").message("metadata keys must be 1-255 letters, digits, '-', '_', ':', '.' or spaces (Nova refuses '/' and other characters)"))]
    #[x_kube(validation = kube::core::Rule::new("self.all(k, !k.startsWith('verda.linecorp.com:'))").message("metadata keys starting with verda.linecorp.com: are reserved for the operator"))]
    #[schemars(schema_with = "nova_metadata")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// OpenStack credentials for this object (a group sets its own on its VirtualMachines): a Secret in the same namespace. Without
    /// it the namespace's default Secret is used, else (where the operator allows it)
    /// the operator's own credentials. The cloud resources stay in the project they were
    /// created in: credentials for another project are refused (`ProjectChanged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_credentials_ref: Option<CloudCredentialsRef>,
    /// Take over this existing Nova server instead of creating one: it gets the
    /// operator's ownership records and is managed from then on, keeping the metadata it
    /// had (keys removed from `metadata` are not removed from it). A server whose image or
    /// flavor differs from the spec is reported (`ImportMismatch`), never replaced or
    /// resized. Read when the object has no server; the ID cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = import_once())]
    pub import: Option<Box<Import>>,
    /// Boot from a new Cinder volume made from `image` (deleted with the server).
    /// Immutable on a VirtualMachine; in a group's template a change rolls out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_volume: Option<Box<BootVolume>>,
    /// Data volumes, attached in this order (at most 16). They outlive the server: a
    /// replacement server gets the same volumes back. A group's replica `<group>-<n>`
    /// keeps its volumes per index, across scale-downs and template changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub volumes: Option<Vec<DataVolume>>,
    /// The server's power: `Always` (default: a server found SHUTOFF is started again),
    /// `Halted` (stopped, kept with its volumes and addresses, out of the load
    /// balancers' pools first) or `Manual` (`openstack server stop/start` is the
    /// user's). A group sets its own on its VirtualMachines; a template may not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_strategy: Option<RunStrategy>,
    /// What happens to the data volumes when this VirtualMachine is deleted (default:
    /// retained). A group sets it on its VirtualMachines; a template may not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_retention: Option<VolumeRetention>,
    /// What happens to the declared ports (`ports`) when this VirtualMachine is deleted
    /// (default: deleted). A group sets it on its VirtualMachines; a template may not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_retention: Option<NetworkRetention>,
    /// DNS names for the server's address: an A or AAAA record set each, in a Designate
    /// zone of the project, kept while the VirtualMachine lives (following a
    /// replacement's address) and deleted with it or when its entry is removed. A name
    /// held by a record set the operator did not make is left as it is and reported.
    /// A group sets its own on its VirtualMachines (`perReplica`); a template may not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[x_kube(validation = kube::core::Rule::new("self.all(d, self.exists_one(e, e.zone == d.zone && e.name == d.name))").message("each DNS name (zone and name) may appear only once in spec.dns"))]
    pub dns: Vec<super::dns::DnsName>,
}

/// Nova's limits on server metadata: 128 items (less the operator's 4), values of at
/// most 255 characters. Written out because schemars' length rules do not reach a
/// map's size or its values.
fn nova_metadata(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "nullable": true,
        "maxProperties": 124,
        "additionalProperties": {"type": "string", "maxLength": 255},
    })
}

/// The observed state of the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineStatus {
    /// The OpenStack project (ID) this object's cloud resources live in, recorded
    /// before anything is created there.
    #[serde(default, rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Nova server ID.
    #[serde(default, rename = "serverID", skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// Nova server status: BUILD, ACTIVE, ERROR, VERIFY_RESIZE, SHUTOFF, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The first fixed address of the first network.
    #[serde(default, rename = "primaryIP", skip_serializing_if = "Option::is_none")]
    pub primary_ip: Option<String>,
    /// Every address of the server, per network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<VirtualMachineAddress>,
    /// The flavor the server currently runs with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
    /// The availability zone Nova placed the server in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_zone: Option<String>,
    /// Conditions: `Ready` says whether the server is ACTIVE and matches the spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The latest server that went to ERROR, kept until a server is ACTIVE again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<Box<ServerFailure>>,
    /// The spec's image, flavor and networks as resolved to OpenStack IDs, recorded
    /// before the server is created: a retry creates from these, so an image renamed
    /// in between cannot change what is built, and the flavor is not looked up again
    /// while the spec names the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<ResolvedReferences>,
    /// The boot volume Nova made for the server (`spec.bootVolume`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_volume: Option<Box<VolumeStatus>>,
    /// The data volumes, in `spec.volumes` order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VolumeStatus>,
    /// `attached/declared` data volumes, e.g. `2/2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes_attached: Option<String>,
    /// The declared ports (`spec.ports`), in spec order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortStatus>,
    /// The floating IP (`spec.floatingIP`), once allocated.
    #[serde(
        default,
        rename = "floatingIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub floating_ip: Option<String>,
    /// The record sets of `spec.dns`, and of entries removed from it until they are
    /// deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<super::dns::DnsRecordStatus>,
}

/// References of the spec, resolved to OpenStack IDs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedReferences {
    /// `spec.image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Resolution>,
    /// `spec.flavor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavor: Option<Resolution>,
    /// `spec.networks` (or the operator's default networks), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<Resolution>,
}

/// A name or ID as the spec gives it, and what it resolved to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// As the spec (or the configuration) wrote it.
    pub requested: String,
    /// The OpenStack ID it resolved to.
    #[serde(rename = "id")]
    pub id: String,
    /// The resource's name when it was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A server that went to ERROR. It is replaced after a delay that doubles with every
/// failure in a row, so a cloud that cannot place the server is not hammered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerFailure {
    /// The Nova server that failed.
    #[serde(rename = "serverID")]
    pub server_id: String,
    /// `NoValidHost` when Nova found no host for it, else `ServerError`.
    pub reason: String,
    /// Nova's fault message.
    pub message: String,
    /// When the operator first saw this server in ERROR.
    pub since: Time,
    /// Servers that failed in a row, this one included.
    pub count: i32,
}

/// One address of a server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineAddress {
    /// Network the address belongs to.
    pub network: String,
    /// The IP address.
    pub address: String,
    /// `fixed` or `floating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}
