//! What Octavia should hold for a LoadBalancer spec: the requests that create each
//! object and the comparisons that say whether an existing one still matches. Pure.

use std::collections::BTreeMap;

use verda_api::v1alpha1::{
    Algorithm, HealthMonitor as MonitorSpec, HttpMethod, LoadBalancer, LoadBalancerPort,
    MonitorProtocol, PersistenceType, Protocol, RealServers, timeout_millis,
};

use crate::cloud::ids::{ListenerId, LoadBalancerId, PoolId};
use crate::cloud::model::loadbalancing as os;
use crate::cloud::model::word;
use crate::cloud::owner::Owner;

/// Octavia's protocol for ours (`https` is passed through, `terminated-https` ends TLS).
pub fn protocol(p: Protocol) -> os::Protocol {
    match p {
        Protocol::Http => os::Protocol::Http,
        Protocol::Https => os::Protocol::Https,
        Protocol::TerminatedHttps => os::Protocol::TerminatedHttps,
        Protocol::Tcp => os::Protocol::Tcp,
        Protocol::Udp => os::Protocol::Udp,
        Protocol::Proxy => os::Protocol::Proxy,
        Protocol::Proxyv2 => os::Protocol::ProxyV2,
    }
}

fn monitor_type(p: MonitorProtocol) -> os::MonitorType {
    match p {
        MonitorProtocol::Http => os::MonitorType::Http,
        MonitorProtocol::Https => os::MonitorType::Https,
        MonitorProtocol::Tcp => os::MonitorType::Tcp,
        MonitorProtocol::UdpConnect => os::MonitorType::UdpConnect,
        MonitorProtocol::TlsHello => os::MonitorType::TlsHello,
        MonitorProtocol::Ping => os::MonitorType::Ping,
    }
}

/// The Octavia name of a port's listener, pool and monitor: the load balancer's and the port.
fn port_name(owner: &Owner, port: &LoadBalancerPort) -> String {
    format!("{}-{}", owner.load_balancer_name(), port.port)
}

/// `tls`: the Barbican refs of a terminated-https port's certificates, the default
/// first (empty for other ports).
pub fn listener(
    owner: &Owner,
    lb: &LoadBalancerId,
    port: &LoadBalancerPort,
    tls: &[String],
) -> os::CreateListener {
    os::CreateListener {
        loadbalancer_id: lb.clone(),
        protocol: protocol(port.protocol),
        protocol_port: port.port as u16,
        name: port_name(owner, port),
        description: None,
        default_pool_id: None,
        tags: vec![owner.tag()],
        options: listener_options(port, tls),
    }
}

/// Octavia's defaults for the listener settings a port leaves out (ms; -1 is no limit).
const DEFAULT_CONNECTION_LIMIT: i64 = -1;
const DEFAULT_CLIENT_DATA: u64 = 50_000;
const DEFAULT_MEMBER_CONNECT: u64 = 5_000;
const DEFAULT_MEMBER_DATA: u64 = 50_000;
const DEFAULT_TCP_INSPECT: u64 = 0;

/// The listener settings the port declares, and only those: a create leaves the rest
/// to Octavia's defaults.
pub fn listener_options(port: &LoadBalancerPort, tls: &[String]) -> os::ListenerOptions {
    let timeouts = port.timeouts.clone().unwrap_or_default();
    let ms = |t: &Option<String>| t.as_deref().and_then(timeout_millis);
    os::ListenerOptions {
        connection_limit: port.connection_limit.map(i64::from),
        timeout_client_data: ms(&timeouts.client_data),
        timeout_member_connect: ms(&timeouts.member_connect),
        timeout_member_data: ms(&timeouts.member_data),
        timeout_tcp_inspect: ms(&timeouts.tcp_inspect),
        allowed_cidrs: port.allowed_cidrs.clone(),
        insert_headers: port.insert_headers.as_ref().map(|h| {
            h.enabled()
                .into_iter()
                .map(|name| (name.to_owned(), "true".to_owned()))
                .collect()
        }),
        default_tls_container_ref: tls.first().cloned(),
        sni_container_refs: (tls.len() > 1).then(|| tls[1..].to_vec()),
    }
}

/// Every listener setting, Octavia's default where the port declares none: what an
/// update sends, so that a setting taken out of the spec goes back to its default.
pub fn listener_settings(port: &LoadBalancerPort, tls: &[String]) -> os::ListenerOptions {
    let declared = listener_options(port, tls);
    let terminates = port.protocol == Protocol::TerminatedHttps;
    let http = port.protocol == Protocol::Http || terminates;
    os::ListenerOptions {
        connection_limit: Some(
            declared
                .connection_limit
                .unwrap_or(DEFAULT_CONNECTION_LIMIT),
        ),
        timeout_client_data: Some(declared.timeout_client_data.unwrap_or(DEFAULT_CLIENT_DATA)),
        timeout_member_connect: Some(
            declared
                .timeout_member_connect
                .unwrap_or(DEFAULT_MEMBER_CONNECT),
        ),
        timeout_member_data: Some(declared.timeout_member_data.unwrap_or(DEFAULT_MEMBER_DATA)),
        timeout_tcp_inspect: Some(declared.timeout_tcp_inspect.unwrap_or(DEFAULT_TCP_INSPECT)),
        allowed_cidrs: Some(declared.allowed_cidrs.unwrap_or_default()),
        // Octavia refuses insert_headers, even empty, on a listener that is not HTTP.
        insert_headers: http.then(|| declared.insert_headers.unwrap_or_default()),
        default_tls_container_ref: declared.default_tls_container_ref,
        // An empty list takes every SNI certificate off; Octavia refuses the field on a
        // listener that does not terminate TLS.
        sni_container_refs: terminates.then(|| declared.sni_container_refs.unwrap_or_default()),
    }
}

/// Whether an existing listener has the port's settings. A number Octavia did not show
/// (a tree confirmed from a create that left it to the default) is taken as matching.
pub fn listener_matches(port: &LoadBalancerPort, tls: &[String], existing: &os::Listener) -> bool {
    let want = listener_settings(port, tls);
    let have = &existing.options;
    // A number Octavia did not show matches, the others must equal.
    fn same<T: PartialEq>(want: Option<T>, have: Option<T>) -> bool {
        have.is_none() || have == want
    }
    let cidrs = |c: &Option<Vec<String>>| {
        let mut c: Vec<String> = c.iter().flatten().map(|c| network(c)).collect();
        c.sort();
        c.dedup();
        c
    };
    let headers = |h: &Option<BTreeMap<String, String>>| -> Vec<String> {
        h.iter()
            .flatten()
            .filter(|(_, v)| v.eq_ignore_ascii_case("true"))
            .map(|(k, _)| k.to_ascii_lowercase())
            .collect()
    };
    same(want.connection_limit, have.connection_limit)
        && same(want.timeout_client_data, have.timeout_client_data)
        && same(want.timeout_member_connect, have.timeout_member_connect)
        && same(want.timeout_member_data, have.timeout_member_data)
        && same(want.timeout_tcp_inspect, have.timeout_tcp_inspect)
        && cidrs(&want.allowed_cidrs) == cidrs(&have.allowed_cidrs)
        && headers(&want.insert_headers) == headers(&have.insert_headers)
        && want.default_tls_container_ref == have.default_tls_container_ref
        && refs(&want.sni_container_refs) == refs(&have.sni_container_refs)
}

/// SNI refs as a set: Octavia keeps them in no particular order.
fn refs(r: &Option<Vec<String>>) -> Vec<&str> {
    let mut r: Vec<&str> = r.iter().flatten().map(String::as_str).collect();
    r.sort_unstable();
    r
}

/// The network a CIDR names, written canonically (`10.1.2.3/8` is `10.0.0.0/8`), so
/// that however Octavia keeps what it was given, the same networks compare equal.
fn network(cidr: &str) -> String {
    let (address, prefix) = cidr.split_once('/').unwrap_or((cidr, ""));
    let Ok(ip) = address.parse::<std::net::IpAddr>() else {
        return cidr.to_owned();
    };
    let bits: u32 = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = prefix.parse::<u32>().unwrap_or(bits).min(bits);
    let keep = |value: u128| match bits - prefix {
        128 => 0,
        host => value >> host << host,
    };
    match ip {
        std::net::IpAddr::V4(v4) => {
            let masked = keep(u128::from(u32::from(v4))) as u32;
            format!("{}/{prefix}", std::net::Ipv4Addr::from(masked))
        }
        std::net::IpAddr::V6(v6) => {
            format!(
                "{}/{prefix}",
                std::net::Ipv6Addr::from(keep(u128::from(v6)))
            )
        }
    }
}

/// The one listener update that gives it every setting of the port.
pub fn update_listener(port: &LoadBalancerPort, tls: &[String]) -> os::UpdateListener {
    os::UpdateListener {
        options: listener_settings(port, tls),
        ..os::UpdateListener::default()
    }
}

/// The pool's algorithm: the port's, round-robin when it names none.
fn algorithm(rs: &RealServers) -> os::LbAlgorithm {
    match rs.algorithm.unwrap_or_default() {
        Algorithm::RoundRobin => os::LbAlgorithm::RoundRobin,
        Algorithm::LeastConnections => os::LbAlgorithm::LeastConnections,
        Algorithm::SourceIp => os::LbAlgorithm::SourceIp,
    }
}

fn persistence(rs: &RealServers) -> Option<os::SessionPersistence> {
    let sp = rs.session_persistence.as_ref()?;
    Some(os::SessionPersistence {
        kind: match sp.kind {
            PersistenceType::SourceIp => os::PersistenceType::SourceIp,
            PersistenceType::HttpCookie => os::PersistenceType::HttpCookie,
            PersistenceType::AppCookie => os::PersistenceType::AppCookie,
        },
        cookie_name: sp.cookie_name.clone(),
    })
}

/// Whether an existing pool chooses members and keeps sessions as the port says.
pub fn pool_matches(port: &LoadBalancerPort, existing: &os::Pool) -> bool {
    let rs = &port.real_servers;
    existing.lb_algorithm == algorithm(rs) && existing.session_persistence == persistence(rs)
}

/// The one pool update that gives it the port's algorithm and session persistence.
pub fn update_pool(port: &LoadBalancerPort) -> os::UpdatePool {
    let rs = &port.real_servers;
    os::UpdatePool {
        lb_algorithm: Some(algorithm(rs)),
        session_persistence: Some(persistence(rs)),
        ..os::UpdatePool::default()
    }
}

/// The pool, created as the listener's default pool so it can never be left detached.
pub fn pool(owner: &Owner, listener: &ListenerId, port: &LoadBalancerPort) -> os::CreatePool {
    os::CreatePool {
        listener_id: Some(listener.clone()),
        loadbalancer_id: None,
        protocol: protocol(port.real_servers.protocol),
        lb_algorithm: algorithm(&port.real_servers),
        name: port_name(owner, port),
        description: None,
        tags: vec![owner.tag()],
        session_persistence: persistence(&port.real_servers),
    }
}

/// The settings of the one monitor Octavia applies: the port's first.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorSettings {
    pub kind: os::MonitorType,
    pub delay: u32,
    pub timeout: u32,
    pub max_retries: u32,
    pub url_path: Option<String>,
    pub expected_codes: Option<String>,
    pub max_retries_down: u32,
    pub http_method: Option<HttpMethod>,
}

pub fn monitor_settings(port: &LoadBalancerPort) -> Option<MonitorSettings> {
    let m: &MonitorSpec = port.monitors.first()?;
    let http = matches!(m.protocol, MonitorProtocol::Http | MonitorProtocol::Https);
    Some(MonitorSettings {
        kind: monitor_type(m.protocol),
        delay: m.delay_secs(),
        timeout: m.timeout_secs(),
        max_retries: m.max_retries.unwrap_or(3) as u32,
        url_path: http.then(|| m.endpoint.clone().unwrap_or_else(|| "/".to_owned())),
        expected_codes: http.then(|| m.expected_codes.clone().unwrap_or_else(|| "200".to_owned())),
        max_retries_down: m.max_retries_down.unwrap_or(3) as u32,
        http_method: http.then(|| m.http_method.unwrap_or_default()),
    })
}

/// The monitor's HTTP method as Octavia spells it.
fn method_word(s: &MonitorSettings) -> Option<String> {
    s.http_method.and_then(word)
}

/// Whether an existing monitor has these settings.
pub fn monitor_matches(settings: &MonitorSettings, existing: &os::HealthMonitor) -> bool {
    existing.kind == settings.kind
        && existing.delay == settings.delay
        && existing.timeout == settings.timeout
        && existing.max_retries == settings.max_retries
        && (settings.url_path.is_none() || existing.url_path == settings.url_path)
        && (settings.expected_codes.is_none() || existing.expected_codes == settings.expected_codes)
        && existing
            .max_retries_down
            .is_none_or(|d| d == settings.max_retries_down)
        && (settings.http_method.is_none()
            || existing.http_method.is_none()
            || existing.http_method == method_word(settings))
}

pub fn create_monitor(
    owner: &Owner,
    pool: &PoolId,
    port: &LoadBalancerPort,
    s: &MonitorSettings,
) -> os::CreateHealthMonitor {
    os::CreateHealthMonitor {
        pool_id: pool.clone(),
        kind: s.kind,
        delay: s.delay,
        timeout: s.timeout,
        max_retries: s.max_retries,
        max_retries_down: Some(s.max_retries_down),
        url_path: s.url_path.clone(),
        expected_codes: s.expected_codes.clone(),
        http_method: method_word(s),
        name: port_name(owner, port),
        tags: vec![owner.tag()],
    }
}

/// A port's listener, default pool, members and monitor for the fully populated create
/// (the parent IDs stay empty: the nesting says them).
pub fn listener_tree(
    owner: &Owner,
    port: &LoadBalancerPort,
    tls: &[String],
    members: Vec<os::MemberSpec>,
) -> os::ListenerTree {
    os::ListenerTree {
        listener: listener(owner, &LoadBalancerId::default(), port, tls),
        pool: pool(owner, &ListenerId::default(), port),
        members,
        monitor: monitor_settings(port)
            .map(|s| create_monitor(owner, &PoolId::default(), port, &s)),
    }
}

pub fn update_monitor(s: &MonitorSettings) -> os::UpdateHealthMonitor {
    os::UpdateHealthMonitor {
        delay: Some(s.delay),
        timeout: Some(s.timeout),
        max_retries: Some(s.max_retries),
        max_retries_down: Some(s.max_retries_down),
        url_path: s.url_path.clone(),
        expected_codes: s.expected_codes.clone(),
        http_method: method_word(s),
    }
}

/// A pool member: a name (the VirtualMachine, or the address itself) and an address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Backend {
    pub name: String,
    pub address: String,
    /// The member weight a traffic split gives it; Octavia's default (1) when `None`.
    pub weight: Option<u32>,
}

/// The batch member set of a port's pool. The monitor checks `monitor_port` only when
/// it differs from the serving port.
pub fn members(port: &LoadBalancerPort, backends: &[Backend]) -> Vec<os::MemberSpec> {
    let protocol_port = port.real_servers.port as u16;
    let monitor_port = port
        .monitors
        .first()
        .and_then(|m| m.port)
        .map(|p| p as u16)
        .filter(|p| *p != protocol_port);
    backends
        .iter()
        .map(|b| os::MemberSpec {
            address: b.address.clone(),
            protocol_port,
            monitor_port,
            name: b.name.clone(),
            subnet_id: None,
            weight: b.weight,
            tags: vec![],
        })
        .collect()
}

/// A member's weight: the one given, else Octavia's default.
pub fn member_weight(weight: Option<u32>) -> u32 {
    weight.unwrap_or(1)
}

/// What makes two members the same: name, address, ports and weight.
type MemberKey<'a> = (&'a str, &'a str, u16, Option<u16>, u32);

fn wanted_key(m: &os::MemberSpec) -> MemberKey<'_> {
    let weight = member_weight(m.weight);
    (&m.name, &m.address, m.protocol_port, m.monitor_port, weight)
}

fn existing_key(m: &os::Member) -> MemberKey<'_> {
    let weight = member_weight(m.weight);
    (&m.name, &m.address, m.protocol_port, m.monitor_port, weight)
}

/// Whether `wanted` keeps every existing member and only adds to them.
pub fn only_adds(wanted: &[os::MemberSpec], existing: &[os::Member]) -> bool {
    existing
        .iter()
        .all(|e| wanted.iter().any(|w| wanted_key(w) == existing_key(e)))
}

/// Whether the pool's members are exactly `wanted` (order aside).
pub fn members_match(wanted: &[os::MemberSpec], existing: &[os::Member]) -> bool {
    let mut w: Vec<_> = wanted.iter().map(wanted_key).collect();
    let mut e: Vec<_> = existing.iter().map(existing_key).collect();
    w.sort();
    e.sort();
    w == e
}

/// "port 80: not applied: https /health/ready" for every monitor beyond the first.
pub fn ignored_monitors(lb: &LoadBalancer) -> Vec<String> {
    lb.spec
        .ports
        .iter()
        .filter(|p| p.monitors.len() > 1)
        .map(|p| {
            let rest: Vec<String> = p.monitors[1..]
                .iter()
                .map(|m| {
                    let kind = word(m.protocol).unwrap_or_default();
                    match &m.endpoint {
                        Some(path) => format!("{kind} {path}"),
                        None => kind,
                    }
                })
                .collect();
            format!("port {}: {}", p.port, rest.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::network;

    #[test]
    fn cidrs_compare_as_the_networks_they_name() {
        assert_eq!(network("10.1.2.3/8"), "10.0.0.0/8");
        assert_eq!(network("10.0.0.0/8"), "10.0.0.0/8");
        assert_eq!(network("192.168.7.9"), "192.168.7.9/32");
        assert_eq!(network("0.0.0.0/0"), "0.0.0.0/0");
        assert_eq!(network("fd00::1/8"), "fd00::/8");
        assert_eq!(network("::/0"), "::/0");
        assert_eq!(network("not-a-cidr"), "not-a-cidr");
    }
}
