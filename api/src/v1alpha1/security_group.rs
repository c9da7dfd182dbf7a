//! SecurityGroup: a Neutron security group of the project, made (or taken over with
//! `spec.import`) from Kubernetes, whose rules can name the namespace's groups, load
//! balancers and other SecurityGroups; the `securityGroups` of VirtualMachines, group
//! templates and declared ports name it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::credentials::CloudCredentialsRef;
use super::rules::immutable_spec_field;

/// The most rules one SecurityGroup declares (Neutron's default quota is 100 rules
/// per project).
pub const MAX_RULES: usize = 64;

/// The desired state of a Neutron security group.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "verda.linecorp.com",
    version = "v1alpha1",
    kind = "SecurityGroup",
    namespaced,
    doc = "A Neutron security group of the project whose rules may name the namespace's VirtualMachineGroups (their replicas' addresses, kept in step), LoadBalancers and SecurityGroups.",
    shortname = "sg",
    category = "verda",
    status = "SecurityGroupStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"The Ready condition: True, False or Unknown"}"#,
    printcolumn = r#"{"name":"ID","type":"string","jsonPath":".status.id","description":"Neutron's ID of the security group"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1,"description":"Why the object is or is not Ready"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = immutable_spec_field("stateful", "Neutron cannot change it while ports use the group; create a new SecurityGroup instead"),
    validation = immutable_spec_field("region", "a security group cannot move between regions; create a new SecurityGroup instead")
)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupSpec {
    /// Free text kept in the Neutron group's description beside the operator's owner
    /// record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 120))]
    pub description: Option<String>,
    /// Whether Neutron tracks connections (replies are let through); Neutron's default
    /// (true) when absent. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful: Option<bool>,
    /// The traffic the group lets through. With no `egress` rule the group keeps
    /// Neutron's default "any egress" rules (IPv4 and IPv6); with one, egress is what
    /// the rules say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub rules: Vec<SecurityGroupRule>,
    /// OpenStack region of the Neutron the group is in; the cloud's region when absent.
    /// Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub region: Option<String>,
    /// OpenStack credentials for this object: a Secret in the same namespace. Without
    /// it the namespace's default Secret is used, else (where the operator allows it)
    /// the operator's own credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_credentials_ref: Option<CloudCredentialsRef>,
    /// Take over this existing security group of the project (its Neutron ID) instead
    /// of creating one: it gets the owner record and its rules become the declared
    /// ones. The ID cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = super::virtual_machine::import_once())]
    pub import: Option<super::lifecycle::Import>,
}

/// One rule: traffic of a direction, protocol and ports, from (or, for egress, to) a
/// peer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.ports) || (has(self.protocol) && self.protocol in ['tcp', 'udp', 'sctp', 'dccp', 'udplite'])").message("ports are only for protocol tcp, udp, sctp, dccp or udplite").field_path(".ports"))]
pub struct SecurityGroupRule {
    /// `ingress` (to the group's ports) or `egress` (from them).
    pub direction: RuleDirection,
    /// `tcp`, `udp`, `icmp`, `icmpv6`, `sctp`, … or an IP protocol number; any when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16))]
    #[x_kube(validation = kube::core::Rule::new("self.matches('^([a-z0-9]+)$') && (!self.matches('^[0-9]+$') || int(self) <= 255)").message("protocol is a name such as tcp, udp or icmp, or an IP protocol number 0-255"))]
    pub protocol: Option<String>,
    /// A port (`5432`) or an inclusive range (`9100-9110`); every port when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 11))]
    #[x_kube(validation = kube::core::Rule::new("self.matches('^[0-9]{1,5}(-[0-9]{1,5})?$') && self.split('-').all(p, int(p) >= 1 && int(p) <= 65535) && (size(self.split('-')) == 1 || int(self.split('-')[0]) <= int(self.split('-')[1]))").message("ports is a port 1-65535 (5432) or a range low-high (9100-9110)"))]
    pub ports: Option<String>,
    /// `IPv4` or `IPv6`; the CIDR's family with `from.cidr`, else IPv4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ether_type: Option<EtherType>,
    /// The peer: exactly one of `cidr`, `virtualMachineGroup`, `securityGroup` or
    /// `loadBalancer`; anyone when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<RulePeer>,
    /// Free text on the Neutron rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 120))]
    pub description: Option<String>,
}

/// The other end of a rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("[has(self.cidr), has(self.virtualMachineGroup), has(self.securityGroup), has(self.loadBalancer)].filter(x, x).size() == 1").message("from names exactly one of cidr, virtualMachineGroup, securityGroup or loadBalancer"))]
pub struct RulePeer {
    /// An address range (`10.0.0.0/8`, `2001:db8::/32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 43))]
    #[x_kube(validation = kube::core::Rule::new("isCIDR(self)").message("cidr is an address range such as 10.0.0.0/8"))]
    pub cidr: Option<String>,
    /// A VirtualMachineGroup of the namespace: the addresses of all its replicas, kept
    /// in a Neutron address group as they come and go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub virtual_machine_group: Option<String>,
    /// A SecurityGroup of the namespace (this one included), else a Neutron group of
    /// the project of that name: the ports in that group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub security_group: Option<String>,
    /// A LoadBalancer of the namespace: its VIP subnet, where its traffic to members
    /// comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub load_balancer: Option<String>,
}

/// A rule's direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RuleDirection {
    #[default]
    Ingress,
    Egress,
}

/// A rule's address family.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum EtherType {
    #[default]
    IPv4,
    IPv6,
}

/// The group as Neutron has it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupStatus {
    /// Neutron's ID of the security group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The OpenStack project (ID) the group is in, recorded before it is created there.
    #[serde(default, rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// The Neutron rules made for `spec.rules`, in spec order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleStatus>,
    /// The address groups holding the addresses of the groups the rules name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub address_groups: Vec<AddressGroupStatus>,
    /// The generation this status was last written for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` (True once Neutron has every declared rule), with `Reconciling`,
    /// `Stalled` and `Paused` as on every kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// A declared rule as Neutron has it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleStatus {
    /// The rule as Neutron reads it: `ingress IPv4 tcp 5432 from address group web`.
    pub rule: String,
    /// Neutron's ID of the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A Neutron address group the SecurityGroup keeps for a VirtualMachineGroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddressGroupStatus {
    /// The VirtualMachineGroup whose replicas' addresses it holds.
    pub virtual_machine_group: String,
    /// Neutron's ID of the address group.
    pub id: String,
    /// The addresses it holds (`10.0.0.5/32`), as Neutron last answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<String>,
}
