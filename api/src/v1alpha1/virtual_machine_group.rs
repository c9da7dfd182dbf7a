//! VirtualMachineGroup: a Nova server group plus `replicas` owned VirtualMachines.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::autoscaling::MAX_REPLICAS;
use super::credentials::CloudCredentialsRef;
use super::network_ports::{GroupAddresses, GroupNetworkRetention};
use super::rollout::{AutoHealing, ReplicaHealth, RollingUpdate, RunStrategy};
use super::rules::immutable_spec_field;
use super::virtual_machine::VirtualMachineSpec;
use super::volumes::GroupVolumeRetention;
use super::zones::{GroupZones, ZoneStatus};

/// The desired state of a set of identical servers spread by an HA policy.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "verda.linecorp.com",
    version = "v1alpha1",
    kind = "VirtualMachineGroup",
    namespaced,
    doc = "A set of identical VirtualMachines spread over hypervisors by a Nova server group; scale it with `kubectl scale`.",
    shortname = "vmg",
    category = "verda",
    status = "VirtualMachineGroupStatus",
    derive = "PartialEq",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"The Ready condition: True, False or Unknown"}"#,
    printcolumn = r#"{"name":"Desired","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Current","type":"integer","jsonPath":".status.replicas","description":"VirtualMachines the group has"}"#,
    printcolumn = r#"{"name":"Up-to-date","type":"integer","jsonPath":".status.updatedReplicas"}"#,
    printcolumn = r#"{"name":"Available","type":"integer","jsonPath":".status.availableReplicas"}"#,
    printcolumn = r#"{"name":"Policy","type":"string","jsonPath":".spec.haPolicy"}"#,
    printcolumn = r#"{"name":"Retained","type":"integer","jsonPath":".status.retainedVolumes","description":"Data volumes kept for replicas that do not exist now"}"#,
    printcolumn = r#"{"name":"Ready-Replicas","type":"integer","jsonPath":".status.readyReplicas","priority":1,"description":"VirtualMachines that are Ready"}"#,
    printcolumn = r#"{"name":"Server-Group","type":"string","jsonPath":".status.serverGroupID","priority":1}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1,"description":"Why the object is or is not Ready"}"#,
    printcolumn = r#"{"name":"Zones","type":"string","jsonPath":".status.zoneSummary","priority":1,"description":"Replicas per availability zone"}"#,
    printcolumn = r#"{"name":"DNS","type":"string","jsonPath":".status.dns[*].name","priority":1,"description":"The DNS names of the serving replicas"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = kube::core::Rule::new("!has(self.spec.zones) || !has(self.spec.template.availabilityZone)").message("spec.template.availabilityZone cannot be set with spec.zones: the group places each replica in its zone; list the zones in spec.zones.names").field_path(".spec.template.availabilityZone"),
    validation = kube::core::Rule::new("!has(self.spec.template.floatingIP) || has(self.spec.template.ports) || has(self.spec.addresses)").message("spec.template.floatingIP needs ports for it to stay on: give the template ports, or the group addresses").field_path(".spec.template.floatingIP"),
    validation = immutable_spec_field("addresses", "each replica keeps the address it was given for as long as it lives; create a new VirtualMachineGroup for other addresses"),
    validation = kube::core::Rule::new("!has(self.spec.addresses) || self.spec.addresses.all(a, !has(a.list) || size(a.list) >= self.spec.replicas)").message("spec.addresses: a list needs one address per replica; add addresses before scaling up").field_path(".spec.addresses")
)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineGroupSpec {
    /// Number of VirtualMachines to run (0 to 100; default 1, as a Deployment's).
    /// `kubectl scale` changes it; with `autoscaling`, the operator does.
    #[serde(default = "one_replica")]
    #[schemars(range(min = 0, max = MAX_REPLICAS))]
    pub replicas: i32,
    /// How the servers are spread over hypervisors: `soft` (soft-anti-affinity: spread
    /// where possible), `hard` (anti-affinity: never two on one host; servers that
    /// cannot be placed fail with NoValidHost) or `none` (no server group). Immutable:
    /// Nova cannot change the policy of a server group.
    #[serde(default)]
    #[x_kube(validation = kube::core::Rule::new("self == oldSelf").message("haPolicy is immutable: Nova cannot change a server group's policy; create a new VirtualMachineGroup"))]
    pub ha_policy: HaPolicy,
    /// The VirtualMachine spec every replica is created from. A change rolls out as
    /// `updateStrategy` says. Credentials are the group's (`cloudCredentialsRef`), not
    /// the template's; a template may not import a server (`spec.template.import` is
    /// reported as `TemplateImportNotAllowed`).
    #[x_kube(validation = kube::core::Rule::new("!has(self.cloudCredentialsRef)").message("set cloudCredentialsRef on the group (spec.cloudCredentialsRef), not in its template: every VirtualMachine of a group uses the group's credentials"))]
    #[x_kube(validation = kube::core::Rule::new("!has(self.runStrategy)").message("set runStrategy on the group (spec.runStrategy), not in its template: a change of power is no new template to roll out"))]
    #[x_kube(validation = kube::core::Rule::new("!has(self.networkRetention)").message("set networkRetention on the group (spec.networkRetention: whenScaled, whenDeleted), not in its template: the group decides what becomes of each replica's ports"))]
    #[x_kube(validation = kube::core::Rule::new("!has(self.ports) || self.ports.all(p, !has(p.portID))").message("a template's ports may not take over a port (portID): every replica would claim the same one; give the group spec.addresses for fixed addresses instead"))]
    #[x_kube(validation = kube::core::Rule::new("!has(self.ports) || self.ports.all(p, !has(p.fixedIPs))").message("a template's ports may not carry fixedIPs: every replica would claim the same address; give the group spec.addresses (from, or list) instead"))]
    #[x_kube(validation = kube::core::Rule::new("!has(self.volumeRetention)").message("set volumeRetention on the group (spec.volumeRetention: whenScaled, whenDeleted), not in its template: the group decides what becomes of each replica's volumes"))]
    #[x_kube(validation = kube::core::Rule::new("!has(self.dns)").message("a template may not carry dns: every replica would claim the same names; give the group spec.dns instead"))]
    pub template: VirtualMachineSpec,
    /// Free text describing the group; also the server group's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 255))]
    pub description: Option<String>,
    /// How a template change reaches existing VirtualMachines: `RollingUpdate` (default)
    /// replaces them as `rollingUpdate` says, new ones available (Ready, healthy and in
    /// every load-balancer pool) before old ones are drained and deleted; `OnDelete`
    /// leaves them alone until they are deleted.
    #[serde(default)]
    pub update_strategy: UpdateStrategy,
    /// Surge, unavailability and partition of a rolling update (Deployment's and
    /// StatefulSet's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdate>,
    /// Seconds a new replica must be healthy before it counts as available; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub min_ready_seconds: Option<i32>,
    /// Seconds a rollout may go without progress (a new replica available) before it
    /// stops replacing and reports `Stalled` (`ProgressDeadlineExceeded`); default 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub progress_deadline_seconds: Option<i32>,
    /// The power of every replica's server: `Always` (default: a stopped server is
    /// started again), `Halted` (every server stopped, kept with its volumes and
    /// addresses, out of the load balancers' pools) or `Manual` (left to the user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_strategy: Option<RunStrategy>,
    /// Replace replicas that stay unhealthy (their server not in the state
    /// `runStrategy` wants, or their member reported `ERROR`/`OFFLINE` by a load
    /// balancer drawing on the group). Absent: only servers in ERROR or gone are replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_healing: Option<AutoHealing>,
    /// OpenStack credentials for the group and all its VirtualMachines: a Secret in the same namespace. Without
    /// it the namespace's default Secret is used, else (where the operator allows it)
    /// the operator's own credentials. The cloud resources stay in the project they were
    /// created in: credentials for another project are refused (`ProjectChanged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_credentials_ref: Option<CloudCredentialsRef>,
    /// What becomes of a replica's data volumes (`template.volumes`) when a scale-down
    /// removes it (`whenScaled`) and when the group is deleted (`whenDeleted`); both
    /// default to `Retain`. Retained volumes of index `n` are attached again when a
    /// scale-up brings `<group>-<n>` back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_retention: Option<GroupVolumeRetention>,
    /// Fixed addresses per replica index, per network of the template: replica `n`
    /// boots on a port with address `from + n` (or `list[n]`), kept across every
    /// replacement. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16))]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["network"]))]
    pub addresses: Option<Vec<GroupAddresses>>,
    /// What becomes of a replica's ports (made for `addresses` or `template.ports`) when
    /// a scale-down removes it (`whenScaled`, default `Retain`: a scale-up of the index
    /// gets them back) and when the group is deleted (`whenDeleted`, default `Delete`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_retention: Option<GroupNetworkRetention>,
    /// The Nova availability zones the replicas are spread over, and how strictly each
    /// keeps to its home zone. May be added to a running group: its replicas then move
    /// to their home zones as a rollout replaces them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<GroupZones>,
    /// DNS names for the group, each a record set in a Designate zone of the project
    /// holding the addresses of the replicas that serve: a replica leaves it before it
    /// is drained (scale-down, rollout, healing, `runStrategy: Halted`) and joins it
    /// once it serves; it never goes empty while a replica serves. With `perReplica`,
    /// also `<name>-<n>` per replica. Deleted with the group or when the entry goes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[x_kube(validation = kube::core::Rule::new("self.all(d, self.exists_one(e, e.zone == d.zone && e.name == d.name))").message("each DNS name (zone and name) may appear only once in spec.dns"))]
    pub dns: Vec<super::dns::GroupDnsName>,
    /// Size the group from its load (a listener of a LoadBalancer drawing on it, or
    /// PromQL) and on schedules, between `minReplicas` and `maxReplicas`: the operator
    /// then writes `spec.replicas` (field manager `verda-autoscaler`), and a
    /// `kubectl scale` is undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<super::autoscaling::Autoscaling>,
}

fn one_replica() -> i32 {
    1
}

/// HA policy of the group's Nova server group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HaPolicy {
    /// soft-anti-affinity
    #[default]
    Soft,
    /// anti-affinity
    Hard,
    /// No server group.
    None,
}

/// Roll-out strategy for template changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpdateStrategy {
    /// Replace VirtualMachines one at a time.
    #[default]
    RollingUpdate,
    /// Replace a VirtualMachine only when it is deleted.
    OnDelete,
}

/// The observed state of the group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineGroupStatus {
    /// Number of VirtualMachines that exist for this group.
    #[serde(default)]
    pub replicas: i32,
    /// Number of those whose `Ready` condition is True.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Number of those created from the current template.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Number of replicas healthy for at least `minReadySeconds` (and, where a load
    /// balancer draws on the group, in its pools).
    #[serde(default)]
    pub available_replicas: i32,
    /// Number of replicas judged unhealthy now.
    #[serde(default)]
    pub unhealthy_replicas: i32,
    /// Template hash most of the running replicas were created from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,
    /// Template hash of the current template: what a rollout brings every replica to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_revision: Option<String>,
    /// When the rollout to `updateRevision` last made progress (started, or one more
    /// replica available on it): the progress deadline counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progressed_at: Option<Time>,
    /// Each replica's health: its state, why, and since when.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub replica_health: Vec<ReplicaHealth>,
    /// The OpenStack project (ID) this group's server group lives in, recorded before
    /// anything is created there.
    #[serde(default, rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Nova server group ID (absent with `haPolicy: none`).
    #[serde(
        default,
        rename = "serverGroupID",
        skip_serializing_if = "Option::is_none"
    )]
    pub server_group_id: Option<String>,
    /// Label selector of the group's VirtualMachines, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Conditions: `Ready` says whether every replica is Ready and up to date;
    /// `Stalled` whether a rollout or the healing stopped, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Data volumes kept for replica indices that have no VirtualMachine now (removed by
    /// a scale-down with `whenScaled: Retain`); a scale-up attaches them again.
    #[serde(default)]
    pub retained_volumes: i32,
    /// Replicas per availability zone (with `spec.zones`, every zone named there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub zones: Vec<ZoneStatus>,
    /// `status.zones` in one line for `kubectl get -o wide`: `az-1=2 az-2=2 az-3=2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_summary: Option<String>,
    /// The record sets of `spec.dns` (the serving replicas' names; each replica reports
    /// its own), and of entries removed from it until they are deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<super::dns::DnsRecordStatus>,
    /// What the autoscaler last decided (with `spec.autoscaling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<super::autoscaling::AutoscalingStatus>,
}
