//! What Octavia should hold for a LoadBalancer spec: the requests that create each
//! object and the comparisons that say whether an existing one still matches. Pure.

use verda_api::v1alpha1::{
    HealthMonitor as MonitorSpec, LoadBalancer, LoadBalancerPort, MonitorProtocol, Protocol,
};

use crate::cloud::ids::{ListenerId, LoadBalancerId, PoolId};
use crate::cloud::model::loadbalancing as os;
use crate::cloud::model::word;
use crate::cloud::owner::Owner;

/// Octavia's protocol for ours (`https` is passed through, not terminated).
pub fn protocol(p: Protocol) -> os::Protocol {
    match p {
        Protocol::Http => os::Protocol::Http,
        Protocol::Https => os::Protocol::Https,
        Protocol::Tcp => os::Protocol::Tcp,
        Protocol::Udp => os::Protocol::Udp,
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

pub fn listener(owner: &Owner, lb: &LoadBalancerId, port: &LoadBalancerPort) -> os::CreateListener {
    os::CreateListener {
        loadbalancer_id: lb.clone(),
        protocol: protocol(port.protocol),
        protocol_port: port.port as u16,
        name: port_name(owner, port),
        description: None,
        default_pool_id: None,
        tags: vec![owner.tag()],
    }
}

/// The pool, created as the listener's default pool so it can never be left detached.
pub fn pool(owner: &Owner, listener: &ListenerId, port: &LoadBalancerPort) -> os::CreatePool {
    os::CreatePool {
        listener_id: Some(listener.clone()),
        loadbalancer_id: None,
        protocol: protocol(port.real_servers.protocol),
        lb_algorithm: os::LbAlgorithm::RoundRobin,
        name: port_name(owner, port),
        description: None,
        tags: vec![owner.tag()],
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
}

pub fn monitor_settings(port: &LoadBalancerPort) -> Option<MonitorSettings> {
    let m: &MonitorSpec = port.monitors.first()?;
    let http = matches!(m.protocol, MonitorProtocol::Http | MonitorProtocol::Https);
    Some(MonitorSettings {
        kind: monitor_type(m.protocol),
        delay: m.delay_seconds.unwrap_or(5) as u32,
        timeout: m.timeout_seconds.unwrap_or(3) as u32,
        max_retries: m.max_retries.unwrap_or(3) as u32,
        url_path: http.then(|| m.endpoint.clone().unwrap_or_else(|| "/".to_owned())),
        expected_codes: http.then(|| m.expected_codes.clone().unwrap_or_else(|| "200".to_owned())),
    })
}

/// Whether an existing monitor has these settings.
pub fn monitor_matches(settings: &MonitorSettings, existing: &os::HealthMonitor) -> bool {
    existing.kind == settings.kind
        && existing.delay == settings.delay
        && existing.timeout == settings.timeout
        && existing.max_retries == settings.max_retries
        && (settings.url_path.is_none() || existing.url_path == settings.url_path)
        && (settings.expected_codes.is_none() || existing.expected_codes == settings.expected_codes)
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
        max_retries_down: None,
        url_path: s.url_path.clone(),
        expected_codes: s.expected_codes.clone(),
        http_method: None,
        name: port_name(owner, port),
        tags: vec![owner.tag()],
    }
}

/// A port's listener, default pool, members and monitor for the fully populated create
/// (the parent IDs stay empty: the nesting says them).
pub fn listener_tree(
    owner: &Owner,
    port: &LoadBalancerPort,
    members: Vec<os::MemberSpec>,
) -> os::ListenerTree {
    os::ListenerTree {
        listener: listener(owner, &LoadBalancerId::default(), port),
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
        max_retries_down: None,
        url_path: s.url_path.clone(),
        expected_codes: s.expected_codes.clone(),
        http_method: None,
    }
}

/// A pool member: a name (the VirtualMachine, or the address itself) and an address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Backend {
    pub name: String,
    pub address: String,
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
            weight: None,
            tags: vec![],
        })
        .collect()
}

/// What makes two members the same: name, address and ports.
type MemberKey<'a> = (&'a str, &'a str, u16, Option<u16>);

fn wanted_key(m: &os::MemberSpec) -> MemberKey<'_> {
    (&m.name, &m.address, m.protocol_port, m.monitor_port)
}

fn existing_key(m: &os::Member) -> MemberKey<'_> {
    (&m.name, &m.address, m.protocol_port, m.monitor_port)
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
