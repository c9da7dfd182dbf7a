//! LoadBalancer: one Octavia load balancer with a listener, pool and health monitor per
//! port, its members drawn from a VirtualMachineGroup, VirtualMachines or addresses.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::credentials::CloudCredentialsRef;
use super::rules::immutable_spec_field;

const REPLACE: &str =
    "Octavia cannot move an existing load balancer; create a new LoadBalancer instead";

/// The desired state of an Octavia load balancer.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[kube(
    group = "verda.linecorp.com",
    version = "v1alpha1",
    kind = "LoadBalancer",
    namespaced,
    doc = "An Octavia load balancer: per port a listener, a pool whose members come from a VirtualMachineGroup, VirtualMachines or addresses, and a health monitor.",
    shortname = "lb",
    category = "verda",
    status = "LoadBalancerStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"VIP","type":"string","jsonPath":".status.vip"}"#,
    printcolumn = r#"{"name":"External-IP","type":"string","jsonPath":".status.floatingIP","priority":1}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.provisioningStatus"}"#,
    printcolumn = r#"{"name":"Members","type":"string","jsonPath":".status.members","description":"Ready members over all members, every pool"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = immutable_spec_field("region", REPLACE),
    validation = immutable_spec_field("zone", REPLACE),
    validation = immutable_spec_field("vipSubnet", REPLACE),
    validation = immutable_spec_field("serviceType", "Octavia cannot change the flavor of an existing load balancer; create a new LoadBalancer instead")
)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerSpec {
    /// Free text shown as the Octavia load balancer's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 255))]
    pub description: Option<String>,
    /// OpenStack region to create the load balancer in; the cloud's region when absent.
    /// Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub region: Option<String>,
    /// Availability zone (with `region` and `vipType`, selects the VIP subnet from the
    /// operator's configuration). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub zone: Option<String>,
    /// `private`: the VIP is an address on the VIP subnet. `public`: a floating IP on the
    /// external network is associated with the VIP as well.
    #[serde(default)]
    pub vip_type: VipType,
    /// Service class, mapped to an Octavia flavor by the operator's configuration.
    /// Immutable.
    #[serde(default = "default_service_type")]
    #[schemars(length(min = 1, max = 63))]
    pub service_type: String,
    /// Subnet (name or ID) for the VIP, overriding the configured choice. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub vip_subnet: Option<String>,
    /// Ports the load balancer listens on: one listener, pool and health monitor each.
    #[schemars(length(min = 1, max = 32))]
    #[x_kube(validation = kube::core::Rule::new("self.all(p, self.exists_one(q, q.port == p.port))").message("each port may appear only once in spec.ports"))]
    pub ports: Vec<LoadBalancerPort>,
    /// OpenStack credentials for this object: a Secret in the same namespace. Without
    /// it the namespace's default Secret is used, else (where the operator allows it)
    /// the operator's own credentials. The cloud resources stay in the project they were
    /// created in: credentials for another project are refused (`ProjectChanged`); members come only from VirtualMachines of the same project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_credentials_ref: Option<CloudCredentialsRef>,
    /// Take over this existing Octavia load balancer instead of creating one: it gets
    /// the operator's ownership tags and is managed from then on (listeners and pools
    /// follow `ports`). One whose VIP subnet differs from the spec's is reported
    /// (`ImportMismatch`), never replaced. Read when the object has no load balancer;
    /// the ID cannot be changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = super::virtual_machine::import_once())]
    pub import: Option<super::lifecycle::Import>,
}

fn default_service_type() -> String {
    "generic".to_owned()
}

/// Whether the VIP is reachable from outside the private network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VipType {
    #[default]
    Private,
    Public,
}

/// One listening port and where its traffic goes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerPort {
    /// Port the VIP listens on (1-65535).
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Listener protocol: `http`, `https` (TLS passed through to the members), `tcp` or
    /// `udp`.
    pub protocol: Protocol,
    /// The pool members: one source of addresses, and the protocol and port they serve.
    pub real_servers: RealServers,
    /// Health checks for the members. Octavia supports one monitor per pool: the first
    /// is applied, any further ones are reported in the `MonitorsApplied` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub monitors: Vec<HealthMonitor>,
}

/// Traffic protocol of a listener or pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Http,
    Https,
    Tcp,
    Udp,
}

/// The backend servers of a port. Exactly one of `virtualMachineGroupRef`,
/// `virtualMachines` or `addresses` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new(
    "[has(self.virtualMachineGroupRef), has(self.virtualMachines), has(self.addresses)].filter(x, x).size() == 1"
).message("realServers needs exactly one of virtualMachineGroupRef, virtualMachines or addresses"))]
pub struct RealServers {
    /// Protocol the members serve.
    pub protocol: Protocol,
    /// Port the members serve on (1-65535).
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Name of a VirtualMachineGroup in the same namespace: its Ready VirtualMachines
    /// are the members, and scaling the group updates them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub virtual_machine_group_ref: Option<String>,
    /// Names of VirtualMachines in the same namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256), inner(length(min = 1, max = 253)))]
    pub virtual_machines: Option<Vec<String>>,
    /// Literal member IP addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256), inner(length(max = 45)))]
    #[x_kube(validation = kube::core::Rule::new("self.all(a, isIP(a))").message("addresses must be IPv4 or IPv6 addresses"))]
    pub addresses: Option<Vec<String>>,
}

/// A health check of the members.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.timeoutSeconds) || !has(self.delaySeconds) || self.timeoutSeconds <= self.delaySeconds").message("timeoutSeconds must not exceed delaySeconds"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.endpoint) || self.protocol == 'http' || self.protocol == 'https'").message("endpoint applies only to http and https monitors"))]
pub struct HealthMonitor {
    /// Check type: `http`, `https`, `tcp`, `udp-connect`, `tls-hello` or `ping`.
    pub protocol: MonitorProtocol,
    /// Member port the check connects to (1-65535); the member's own port when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// URL path requested by http and https checks, e.g. `/health`. Default `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048), regex(pattern = r"^/"))]
    pub endpoint: Option<String>,
    /// Seconds between checks. Default 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub delay_seconds: Option<i32>,
    /// Seconds a check may take. Default 3; at most `delaySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: Option<i32>,
    /// Consecutive successes before a member is ONLINE (1-10). Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub max_retries: Option<i32>,
    /// HTTP status codes counted as healthy: `200`, `200,202` or `200-204`. Default `200`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]{3}((-[0-9]{3})|(,[0-9]{3})*)$"))]
    pub expected_codes: Option<String>,
}

/// Health monitor type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MonitorProtocol {
    #[default]
    Http,
    Https,
    Tcp,
    UdpConnect,
    TlsHello,
    Ping,
}

/// The observed state of the load balancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerStatus {
    /// The OpenStack project (ID) this object's cloud resources live in, recorded
    /// before anything is created there.
    #[serde(default, rename = "projectID", skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    /// Octavia load balancer ID.
    #[serde(
        default,
        rename = "loadBalancerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub load_balancer_id: Option<String>,
    /// The VIP address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vip: Option<String>,
    /// The floating IP associated with the VIP (`vipType: public`).
    #[serde(
        default,
        rename = "floatingIP",
        skip_serializing_if = "Option::is_none"
    )]
    pub floating_ip: Option<String>,
    /// Octavia provisioning status: ACTIVE, PENDING_CREATE, PENDING_UPDATE, ERROR, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_status: Option<String>,
    /// Octavia operating status: ONLINE, DEGRADED, ERROR, OFFLINE, NO_MONITOR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operating_status: Option<String>,
    /// Ready members over all members, summed over every pool (e.g. `2/3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<String>,
    /// Per port, in the order of `spec.ports`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortStatus>,
    /// When the load balancer was first seen in ERROR; it is deleted and created anew
    /// after a delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_since: Option<Time>,
    /// Conditions: `Ready`, and `MonitorsApplied` when some monitors could not be applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The Octavia objects of one port.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// The listening port.
    pub port: i32,
    /// Octavia listener ID.
    #[serde(
        default,
        rename = "listenerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub listener_id: Option<String>,
    /// Octavia pool ID.
    #[serde(default, rename = "poolID", skip_serializing_if = "Option::is_none")]
    pub pool_id: Option<String>,
    /// Octavia health monitor ID.
    #[serde(
        default,
        rename = "healthMonitorID",
        skip_serializing_if = "Option::is_none"
    )]
    pub health_monitor_id: Option<String>,
    /// The pool's members.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberStatus>,
}

/// One pool member.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberStatus {
    /// The VirtualMachine (or address) behind the member.
    pub name: String,
    /// Member address.
    pub address: String,
    /// Member port.
    pub port: i32,
    /// Octavia operating status: ONLINE, OFFLINE, ERROR, NO_MONITOR, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operating_status: Option<String>,
}
