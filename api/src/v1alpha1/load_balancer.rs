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

/// A port kept from the last spec keeps its monitor's type (the first monitor's, the one
/// Octavia applies), while it has one.
const MONITOR_TYPE_KEPT: &str = "self.spec.ports.all(p, oldSelf.spec.ports.all(q, q.port != p.port || !has(p.monitors) || !has(q.monitors) || size(p.monitors) == 0 || size(q.monitors) == 0 || p.monitors[0].protocol == q.monitors[0].protocol))";

/// A port kept from the last spec keeps its listener and member protocols.
const PROTOCOLS_KEPT: &str = "self.spec.ports.all(p, oldSelf.spec.ports.all(q, q.port != p.port || (q.protocol == p.protocol && q.realServers.protocol == p.realServers.protocol)))";

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
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"The Ready condition: True, False or Unknown"}"#,
    printcolumn = r#"{"name":"VIP","type":"string","jsonPath":".status.vip"}"#,
    printcolumn = r#"{"name":"External-IP","type":"string","jsonPath":".status.floatingIP","priority":1}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.provisioningStatus"}"#,
    printcolumn = r#"{"name":"Members","type":"string","jsonPath":".status.members","description":"Ready members over all members, every pool"}"#,
    printcolumn = r#"{"name":"Split","type":"string","jsonPath":".status.split","description":"Member weight of each group, for ports that split traffic between groups"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","priority":1,"description":"Why the object is or is not Ready"}"#,
    printcolumn = r#"{"name":"DNS","type":"string","jsonPath":".status.dns[*].name","priority":1,"description":"The DNS names of the VIP"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = immutable_spec_field("region", REPLACE),
    validation = immutable_spec_field("zone", REPLACE),
    validation = immutable_spec_field("vipSubnet", REPLACE),
    validation = immutable_spec_field("availabilityZone", REPLACE),
    validation = immutable_spec_field("serviceType", "Octavia cannot change the flavor of an existing load balancer; create a new LoadBalancer instead"),
    validation = kube::core::Rule::new(MONITOR_TYPE_KEPT).message("the protocol of a port's monitor cannot change (Octavia cannot change a monitor's type): remove the monitor and add it again").field_path(".spec.ports"),
    validation = kube::core::Rule::new(PROTOCOLS_KEPT).message("the protocol and realServers.protocol of a port cannot change (Octavia cannot change a listener's or pool's protocol): remove the port and add it again, or listen on another port").field_path(".spec.ports")
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
    /// Octavia availability zone the load balancer is created in (its
    /// `availability_zone`, as the OpenStack cloud provider's annotation sets it); where
    /// Octavia picks when absent. Not `zone`, which selects the VIP subnet. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub availability_zone: Option<String>,
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
    /// DNS names for the VIP (the floating IP with `vipType: public`): an A or AAAA
    /// record set each, in a Designate zone of the project, kept while the LoadBalancer
    /// lives and deleted with it or when its entry is removed. A name held by a record
    /// set the operator did not make is left as it is and reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    #[x_kube(validation = kube::core::Rule::new("self.all(d, self.exists_one(e, e.zone == d.zone && e.name == d.name))").message("each DNS name (zone and name) may appear only once in spec.dns"))]
    #[x_kube(validation = kube::core::Rule::new("self.all(d, !has(d.address))").message("address chooses a VirtualMachine's address; a LoadBalancer's names hold its VIP (its floating IP with vipType: public)"))]
    pub dns: Vec<super::dns::DnsName>,
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

/// Which member protocols a listener protocol can pass traffic to (Octavia's rule).
const POOL_FOR_LISTENER: &str = "self.protocol == 'http' ? self.realServers.protocol in ['http', 'proxy', 'proxyv2'] : \
self.protocol == 'https' ? self.realServers.protocol in ['https', 'tcp', 'proxy', 'proxyv2'] : \
self.protocol == 'terminated-https' ? self.realServers.protocol in ['http', 'proxy', 'proxyv2'] : \
self.protocol == 'tcp' ? self.realServers.protocol in ['http', 'https', 'tcp', 'proxy', 'proxyv2'] : \
self.protocol == 'udp' ? self.realServers.protocol == 'udp' : false";

/// One listening port and where its traffic goes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("self.protocol != 'proxy' && self.protocol != 'proxyv2'").message("proxy and proxyv2 are protocols of realServers (PROXY protocol to the members), not of a listener: use tcp or http here"))]
#[x_kube(validation = kube::core::Rule::new(POOL_FOR_LISTENER).message("realServers.protocol does not fit the listener's protocol: an http or terminated-https listener passes to http, proxy or proxyv2 members; https to https, tcp, proxy or proxyv2; tcp to any but udp; udp to udp"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.insertHeaders) || self.protocol == 'http' || self.protocol == 'terminated-https'").message("insertHeaders applies only to http and terminated-https listeners: Octavia adds headers only where it reads HTTP"))]
#[x_kube(validation = kube::core::Rule::new("has(self.tls) == (self.protocol == 'terminated-https')").message("tls (the certificate Secret) is required with protocol terminated-https and allowed with it only: https passes TLS through to the members"))]
pub struct LoadBalancerPort {
    /// Port the VIP listens on (1-65535).
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Listener protocol: `http`, `https` (TLS passed through to the members),
    /// `terminated-https` (TLS ends at the load balancer, with the certificate of `tls`),
    /// `tcp` or `udp`. Immutable: Octavia cannot change a listener's protocol.
    pub protocol: Protocol,
    /// The certificates of a `terminated-https` listener, from `kubernetes.io/tls`
    /// Secrets in the LoadBalancer's namespace (such as cert-manager writes). A renewed
    /// Secret is stored anew in Barbican and the listener switched to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ListenerTls>,
    /// The pool members: one source of addresses, and the protocol and port they serve.
    pub real_servers: RealServers,
    /// Health checks for the members. Octavia supports one monitor per pool: the first
    /// is applied, any further ones are reported in the `MonitorsApplied` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub monitors: Vec<HealthMonitor>,
    /// How long the listener waits on clients and members; Octavia's defaults where
    /// absent. Edited in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<ListenerTimeouts>,
    /// Most connections the listener accepts at once; unlimited when absent. Edited in
    /// place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000_000))]
    pub connection_limit: Option<i32>,
    /// Source networks allowed to connect, e.g. `10.0.0.0/8`; every source when absent.
    /// Edited in place.
    #[serde(
        default,
        rename = "allowedCIDRs",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1, max = 64), inner(length(max = 64)))]
    #[x_kube(validation = kube::core::Rule::new("self.all(c, isCIDR(c))").message("allowedCIDRs must be networks such as 10.0.0.0/8 or fd00::/8"))]
    pub allowed_cidrs: Option<Vec<String>>,
    /// Headers the load balancer adds to each request it passes on (`http` listeners
    /// only). Edited in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insert_headers: Option<InsertHeaders>,
}

/// Where a terminated-https listener's certificates come from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.sniSecretNames) || !(self.secretName in self.sniSecretNames)").message("sniSecretNames must not repeat secretName: the default certificate is served already"))]
pub struct ListenerTls {
    /// The default certificate: a `kubernetes.io/tls` Secret (`tls.crt` with its chain,
    /// `tls.key`) in the LoadBalancer's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: String,
    /// More certificates, chosen by the name a client asks for (SNI): Secrets of the
    /// same kind and namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 253)))]
    #[x_kube(validation = kube::core::Rule::new("self.all(n, self.exists_one(m, m == n))").message("each Secret may appear only once in sniSecretNames"))]
    pub sni_secret_names: Option<Vec<String>>,
}

impl ListenerTls {
    /// Every Secret named, the default certificate's first.
    pub fn secret_names(&self) -> Vec<&str> {
        std::iter::once(self.secret_name.as_str())
            .chain(self.sni_secret_names.iter().flatten().map(String::as_str))
            .collect()
    }
}

/// Listener timeouts, as durations such as `50s`, `500ms` or `1m30s` (at most 576h,
/// Octavia's 24 days).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListenerTimeouts {
    /// Inactivity allowed on the client side. Octavia's default is 50s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,11}(ms|s|m|h))+$"), length(max = 32))]
    #[x_kube(validation = timeout_bound())]
    pub client_data: Option<String>,
    /// Time allowed to connect to a member. Octavia's default is 5s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,11}(ms|s|m|h))+$"), length(max = 32))]
    #[x_kube(validation = timeout_bound())]
    pub member_connect: Option<String>,
    /// Inactivity allowed on the member side. Octavia's default is 50s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,11}(ms|s|m|h))+$"), length(max = 32))]
    #[x_kube(validation = timeout_bound())]
    pub member_data: Option<String>,
    /// Time to wait for more TCP content before choosing a member. Octavia's default
    /// is 0s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,11}(ms|s|m|h))+$"), length(max = 32))]
    #[x_kube(validation = timeout_bound())]
    pub tcp_inspect: Option<String>,
}

/// A listener timeout is at most Octavia's longest.
fn timeout_bound() -> kube::core::Rule {
    kube::core::Rule::new("duration(self) <= duration('576h')")
        .message("a listener timeout may be at most 576h (24 days), Octavia's longest")
}

/// The longest listener timeout Octavia takes: 24 days, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 2_073_600_000;

/// A Go-style duration (`50s`, `500ms`, `1m30s`) in milliseconds; `None` when it is
/// not one, or is longer than [`MAX_TIMEOUT_MS`].
pub fn timeout_millis(text: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (1, 2)
        } else {
            match rest.as_bytes().first()? {
                b's' => (1_000, 1),
                b'm' => (60_000, 1),
                b'h' => (3_600_000, 1),
                _ => return None,
            }
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
        rest = &rest[len..];
    }
    (total <= MAX_TIMEOUT_MS).then_some(total)
}

/// Request headers the load balancer inserts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InsertHeaders {
    /// The client's address.
    #[serde(
        default,
        rename = "X-Forwarded-For",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_forwarded_for: Option<bool>,
    /// The listener's port.
    #[serde(
        default,
        rename = "X-Forwarded-Port",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_forwarded_port: Option<bool>,
    /// The client's protocol (`http` or `https`).
    #[serde(
        default,
        rename = "X-Forwarded-Proto",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_forwarded_proto: Option<bool>,
}

impl InsertHeaders {
    /// The names of the headers turned on, in Octavia's spelling.
    pub fn enabled(&self) -> Vec<&'static str> {
        [
            ("X-Forwarded-For", self.x_forwarded_for),
            ("X-Forwarded-Port", self.x_forwarded_port),
            ("X-Forwarded-Proto", self.x_forwarded_proto),
        ]
        .into_iter()
        .filter(|(_, on)| *on == Some(true))
        .map(|(name, _)| name)
        .collect()
    }
}

/// Traffic protocol of a listener or pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Http,
    Https,
    /// Listeners only: TLS ends at the load balancer (`tls` names the certificates).
    #[serde(rename = "terminated-https")]
    TerminatedHttps,
    Tcp,
    Udp,
    /// Members only: TCP with the PROXY protocol (v1) header first.
    Proxy,
    /// Members only: TCP with the PROXY protocol v2 header first.
    Proxyv2,
}

/// The backend servers of a port. Exactly one of `virtualMachineGroupRef`, `groups`,
/// `virtualMachines` or `addresses` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new(
    "[has(self.virtualMachineGroupRef), has(self.groups), has(self.virtualMachines), has(self.addresses)].filter(x, x).size() == 1"
).message("realServers needs exactly one of virtualMachineGroupRef, groups, virtualMachines or addresses"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.sessionPersistence) || self.sessionPersistence.type == 'source-ip' || self.protocol != 'udp'").message("udp members keep sessions by source-ip only"))]
pub struct RealServers {
    /// Protocol the members serve: `http`, `https`, `tcp`, `udp`, or `proxy` /
    /// `proxyv2` (TCP with the PROXY protocol header). Immutable: Octavia cannot change
    /// a pool's protocol.
    pub protocol: Protocol,
    /// Port the members serve on (1-65535).
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// How a member is chosen for a new connection: `round-robin` when absent. Edited
    /// in place.
    // No schema default: a field defaulted inside the atomic `ports` list would make
    // every `kubectl apply` of an unchanged manifest a change, and server-side apply a
    // conflict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    /// Keep a client on the member it first reached. Edited in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<SessionPersistence>,
    /// Several VirtualMachineGroups in the same namespace behind this port, each with
    /// the weight (0-256) of every one of its members: a blue/green or canary split.
    /// Weight 0 keeps the group's members in the pool without new connections; a
    /// group leaves the pool when it leaves this list. Edited in place, in one batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 8))]
    #[x_kube(validation = kube::core::Rule::new("self.all(g, self.exists_one(h, h.name == g.name))").message("each group may appear only once in groups"))]
    pub groups: Option<Vec<WeightedGroup>>,
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

impl RealServers {
    /// The groups this port draws on: `virtualMachineGroupRef` or the names in `groups`.
    pub fn group_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .virtual_machine_group_ref
            .iter()
            .map(String::as_str)
            .collect();
        names.extend(self.groups.iter().flatten().map(|g| g.name.as_str()));
        names
    }

    /// Whether this port draws on the group `name`.
    pub fn draws_on_group(&self, name: &str) -> bool {
        self.group_names().contains(&name)
    }

    /// The member weight `groups` gives the members of `name`; `None` for Octavia's default.
    pub fn weight_of(&self, name: &str) -> Option<u32> {
        self.groups
            .iter()
            .flatten()
            .find(|g| g.name == name)
            .map(|g| g.weight as u32)
    }
}

/// One group of a traffic split.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WeightedGroup {
    /// Name of a VirtualMachineGroup in the same namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Weight of each of its members (0-256): their share of new connections is their
    /// weight over the sum of every member's weight.
    #[schemars(range(min = 0, max = 256))]
    pub weight: i32,
}

/// How the pool chooses a member.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    #[default]
    RoundRobin,
    LeastConnections,
    SourceIp,
}

/// Session persistence of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("self.type == 'app-cookie' ? has(self.cookieName) : !has(self.cookieName)").message("cookieName is required with app-cookie and allowed with it only"))]
pub struct SessionPersistence {
    /// `source-ip`, `http-cookie` (the load balancer sets a cookie) or `app-cookie`
    /// (the application's cookie named `cookieName`).
    #[serde(rename = "type")]
    pub kind: PersistenceType,
    /// The application's cookie (`app-cookie` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 255),
        regex(pattern = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
    )]
    pub cookie_name: Option<String>,
}

/// Session persistence type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PersistenceType {
    #[default]
    SourceIp,
    HttpCookie,
    AppCookie,
}

/// A health check of the members.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("!has(self.timeoutSeconds) || !has(self.delaySeconds) || self.timeoutSeconds <= self.delaySeconds").message("timeoutSeconds must not exceed delaySeconds"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.timeout) || !has(self.delay) || duration(self.timeout) <= duration(self.delay)").message("timeout must not exceed delay"))]
#[x_kube(validation = kube::core::Rule::new("!(has(self.delay) && has(self.delaySeconds)) && !(has(self.timeout) && has(self.timeoutSeconds))").message("delay and delaySeconds (timeout and timeoutSeconds) say the same: give one of them"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.endpoint) || self.protocol == 'http' || self.protocol == 'https'").message("endpoint applies only to http and https monitors"))]
#[x_kube(validation = kube::core::Rule::new("!has(self.httpMethod) || self.protocol == 'http' || self.protocol == 'https'").message("httpMethod applies only to http and https monitors"))]
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
    /// Time between checks as a duration (`5s`, `1m`), in place of `delaySeconds`:
    /// whole seconds, 1s to 1h.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,4}(s|m|h))+$"), length(max = 16))]
    #[x_kube(validation = monitor_period())]
    pub delay: Option<String>,
    /// Time a check may take as a duration, in place of `timeoutSeconds`: whole
    /// seconds, 1s to 1h, at most `delay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,4}(s|m|h))+$"), length(max = 16))]
    #[x_kube(validation = monitor_period())]
    pub timeout: Option<String>,
    /// Consecutive successes before a member is ONLINE (1-10). Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub max_retries: Option<i32>,
    /// HTTP status codes counted as healthy: `200`, `200,202` or `200-204`. Default `200`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]{3}((-[0-9]{3})|(,[0-9]{3})*)$"))]
    pub expected_codes: Option<String>,
    /// Consecutive failures before a member is ERROR (1-10). Default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub max_retries_down: Option<i32>,
    /// Method of http and https checks. Default `GET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_method: Option<HttpMethod>,
}

/// A monitor's delay or timeout lies within Octavia's range, as `delaySeconds` does.
fn monitor_period() -> kube::core::Rule {
    kube::core::Rule::new("duration(self) >= duration('1s') && duration(self) <= duration('1h')")
        .message("a monitor delay or timeout is 1s to 1h")
}

impl HealthMonitor {
    /// Seconds between checks: `delay` or `delaySeconds`, else Octavia's 5.
    pub fn delay_secs(&self) -> u32 {
        seconds(self.delay.as_deref(), self.delay_seconds).unwrap_or(5)
    }

    /// Seconds a check may take: `timeout` or `timeoutSeconds`, else 3.
    pub fn timeout_secs(&self) -> u32 {
        seconds(self.timeout.as_deref(), self.timeout_seconds).unwrap_or(3)
    }
}

/// A duration in whole seconds, else a number of seconds.
fn seconds(duration: Option<&str>, secs: Option<i32>) -> Option<u32> {
    let from_duration = duration
        .and_then(timeout_millis)
        .map(|ms| (ms / 1000) as u32);
    from_duration.or(secs.map(|s| s as u32))
}

/// HTTP method of a health check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    #[default]
    Get,
    Head,
    Post,
    Put,
    Delete,
    Trace,
    Options,
    Patch,
    Connect,
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
    /// The member weight of each group, for ports that split traffic between groups
    /// (e.g. `web-blue=90 web-green=10`; per port, `443: …; 80: …`, when they differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Per port, in the order of `spec.ports`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortStatus>,
    /// The certificates the operator keeps in Barbican for the terminated-https ports,
    /// with the Secret each comes from and when it expires. One no Secret names any
    /// more is deleted once no listener serves it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<CertificateStatus>,
    /// The record sets of `spec.dns`, and of entries removed from it until they are
    /// deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<super::dns::DnsRecordStatus>,
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

/// A certificate stored in Barbican.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// The Barbican secret's URL, as the listener refers to it.
    #[serde(rename = "secretRef")]
    pub secret_ref: String,
    /// The Kubernetes Secret it holds the certificate of; absent for one to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// When the certificate expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
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
    /// The member's weight, where a port splits traffic between groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}
