//! The LoadBalancer plan: spec + the Octavia tree found for it → the one next write.
//!
//! Pure. One write per reconcile: every Octavia write puts the load balancer in
//! `PENDING_UPDATE`, during which a second write would only meet 409.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use verda_api::v1alpha1::{LoadBalancer, LoadBalancerPort, VipType};

use crate::caches::cloud_view::OctaviaTree;
use crate::cloud::ids::{
    FloatingIpId, HealthMonitorId, ListenerId, LoadBalancerId, PoolId, PortId,
};
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::model::loadbalancing::{
    LoadBalancer as OctaviaLoadBalancer, MemberSpec, Pool, ProvisioningStatus,
};
use crate::controllers::load_balancer::certificates::{Certificates, Wanted};
use crate::controllers::load_balancer::desired::{self, Backend, MonitorSettings};
use crate::controllers::load_balancer::tree::{keeper, live};
use crate::runtime::keeper::{InError, duplicates, in_error};

/// The next thing to do for one LoadBalancer.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// No load balancer carries this owner's tag: create it with every port's listener,
    /// pool, monitor and these members (per port) in one call.
    Create(Vec<Vec<MemberSpec>>),
    /// A crash between create and status write left more than one: keep one.
    DeleteDuplicates(Vec<LoadBalancerId>),
    /// The load balancer is in ERROR: report it, replace it once the delay passed.
    ReportError {
        first: bool,
        retry_in: Duration,
    },
    ReplaceErrored(LoadBalancerId),
    /// Octavia is busy with the last write (`PENDING_*`).
    Wait(ProvisioningStatus),
    /// A listener for the port at this index, on this load balancer.
    CreateListener(usize, LoadBalancerId),
    /// The listener's settings (timeouts, limits, sources, headers) differ from the port's.
    UpdateListener(usize, ListenerId),
    CreatePool(usize, ListenerId),
    /// The pool's algorithm or session persistence differs from the port's.
    UpdatePool(usize, PoolId),
    CreateMonitor(usize, PoolId, MonitorSettings),
    UpdateMonitor(usize, HealthMonitorId, MonitorSettings),
    DeleteMonitor(HealthMonitorId),
    /// A pool whose protocol changed, or of a port no longer in the spec.
    DeletePool(PoolId),
    DeleteListener(ListenerId),
    /// The batch update that makes the pool's members those of the port.
    ReplaceMembers(usize, PoolId, Vec<MemberSpec>),
    /// Members are to be added while this many VirtualMachines of the port's group are
    /// still starting: wait for them, so the pools change once rather than per server.
    HoldMembers(usize),
    /// No load balancer yet, and this many VirtualMachines of a port's group are still
    /// starting: wait for them, so the create carries its members (one write, not a
    /// create and a member batch per pool).
    HoldCreate(usize),
    CreateFloatingIp(PortId),
    AssociateFloatingIp(FloatingIpId, PortId),
    DeleteFloatingIp(FloatingIpId),
    /// The load balancer lacks some of the tags that record its owner (made by an
    /// earlier version, or retagged by hand): its whole tag set becomes these.
    RecordOwner(LoadBalancerId, Vec<String>),
    /// A certificate a terminated-https port serves is not in Barbican yet.
    StoreCertificate(Wanted),
    /// A Barbican secret of the owner that nothing serves or holds any more.
    DeleteCertificate(StoredSecret),
    Converged,
}

impl Step {
    /// What the step would do, for a person reading why a paused object differs.
    pub fn describe(&self) -> String {
        match self {
            Step::Create(_) => "create the load balancer".to_owned(),
            Step::DeleteDuplicates(ids) => format!(
                "delete duplicate load balancers {}",
                crate::cloud::ids::joined(ids)
            ),
            Step::ReplaceErrored(id) => format!("replace load balancer {id}, which is in ERROR"),
            Step::CreateListener(i, _) => format!("create the listener of spec.ports[{i}]"),
            Step::UpdateListener(i, _) => format!("update the listener of spec.ports[{i}]"),
            Step::CreatePool(i, _) => format!("create the pool of spec.ports[{i}]"),
            Step::UpdatePool(i, _) => format!("update the pool of spec.ports[{i}]"),
            Step::CreateMonitor(i, ..) => format!("create the health monitor of spec.ports[{i}]"),
            Step::UpdateMonitor(i, ..) => format!("update the health monitor of spec.ports[{i}]"),
            Step::DeleteMonitor(id) => format!("delete health monitor {id}"),
            Step::DeletePool(id) => format!("delete pool {id}"),
            Step::DeleteListener(id) => format!("delete listener {id}"),
            Step::ReplaceMembers(i, _, members) => format!(
                "set the members of the pool of spec.ports[{i}] to {}",
                member_list(wanted_addresses(members))
            ),
            Step::CreateFloatingIp(_) => "create the floating IP".to_owned(),
            Step::AssociateFloatingIp(id, _) => format!("associate floating IP {id}"),
            Step::DeleteFloatingIp(id) => format!("release floating IP {id}"),
            Step::RecordOwner(id, _) => format!("tag load balancer {id} with its owner"),
            Step::StoreCertificate(w) => format!(
                "store the certificate of Secret {} in Barbican as {}",
                w.secret, w.name
            ),
            Step::DeleteCertificate(s) => format!(
                "delete Barbican secret {}",
                s.name.as_deref().unwrap_or(&s.secret_ref)
            ),
            Step::ReportError { .. }
            | Step::Wait(_)
            | Step::HoldMembers(_)
            | Step::HoldCreate(_)
            | Step::Converged => "change anything".to_owned(),
        }
    }

    /// Whether carrying the step out writes to the cloud.
    pub fn writes(&self) -> bool {
        !matches!(
            self,
            Step::ReportError { .. }
                | Step::Wait(_)
                | Step::HoldMembers(_)
                | Step::HoldCreate(_)
                | Step::Converged
        )
    }

    /// Whether the tree it was decided on is settled: nothing to write, nothing busy.
    pub fn settled(&self) -> bool {
        matches!(
            self,
            Step::HoldMembers(_) | Step::HoldCreate(_) | Step::Converged
        )
    }
}

/// `address:port, …` of members (wanted or found), or `none`.
pub fn member_list<'a>(members: impl IntoIterator<Item = (&'a str, u16)>) -> String {
    let listed: Vec<String> = members
        .into_iter()
        .map(|(address, port)| format!("{address}:{port}"))
        .collect();
    if listed.is_empty() {
        return "none".to_owned();
    }
    listed.join(", ")
}

/// What [`member_list`] takes from wanted members.
pub fn wanted_addresses(members: &[MemberSpec]) -> impl Iterator<Item = (&str, u16)> {
    members
        .iter()
        .map(|m| (m.address.as_str(), m.protocol_port))
}

/// `step`, unless the tree is otherwise converged and the kept load balancer lacks
/// some of `owner_tags`: then adding them (to its own tags) is the next write.
pub fn recording_owner(
    step: Step,
    lb: &LoadBalancer,
    tree: &OctaviaTree,
    owner_tags: &[String],
) -> Step {
    let Some(kept) = keeper(lb, &tree.load_balancers).filter(|_| step == Step::Converged) else {
        return step;
    };
    let missing: Vec<&String> = owner_tags
        .iter()
        .filter(|t| !kept.tags.contains(t))
        .collect();
    if missing.is_empty() {
        return step;
    }
    let mut tags = kept.tags.clone();
    tags.extend(missing.into_iter().cloned());
    Step::RecordOwner(kept.id.clone(), tags)
}

/// Decides the next write.
pub fn plan(
    lb: &LoadBalancer,
    tree: &OctaviaTree,
    backends: &[Vec<Backend>],
    error_replace: Duration,
    now: Timestamp,
) -> Step {
    let certificates = Certificates::default();
    let facts = Facts {
        tree,
        backends,
        starting: &[],
        certificates: &certificates,
    };
    plan_holding(lb, &facts, error_replace, now)
}

/// What a plan is decided on: the Octavia tree, the backends of each port, how many
/// VirtualMachines of each port's group are still starting, the certificates.
pub struct Facts<'a> {
    pub tree: &'a OctaviaTree,
    pub backends: &'a [Vec<Backend>],
    pub starting: &'a [usize],
    pub certificates: &'a Certificates,
}

/// As [`plan`], holding back member additions of a port while `starting[port]`
/// VirtualMachines of its group are still on their way (removals are never held), and
/// the create itself while any are (it then carries them).
/// Certificates are stored before anything that serves them is made, and deleted only
/// once no listener holds them.
pub fn plan_holding(
    lb: &LoadBalancer,
    facts: &Facts<'_>,
    error_replace: Duration,
    now: Timestamp,
) -> Step {
    let Facts {
        tree,
        backends,
        starting,
        certificates,
    } = *facts;
    if let Some(wanted) = certificates.unstored() {
        return Step::StoreCertificate(wanted.clone());
    }
    let kept = match usable_load_balancer(lb, tree, backends, error_replace, now) {
        Ok(kept) => kept,
        Err(Step::Create(members)) => {
            let waiting = starting.iter().copied().max().unwrap_or(0);
            return match waiting > 0 && lb.spec.import.is_none() {
                true => Step::HoldCreate(waiting),
                false => Step::Create(members),
            };
        }
        Err(step) => return step,
    };
    let mut held = 0;
    for (index, port) in lb.spec.ports.iter().enumerate() {
        let tls = certificates.refs(index).unwrap_or_default();
        let pool = match port_tree(index, port, &tls, &kept.id, tree) {
            Ok(pool) => pool,
            Err(step) => return step,
        };
        let wanted = desired::members(port, backends.get(index).map_or(&[], Vec::as_slice));
        let existing = tree
            .members
            .get(pool.id.as_str())
            .map_or(&[][..], Vec::as_slice);
        if !desired::members_match(&wanted, existing) {
            let waiting = starting.get(index).copied().unwrap_or(0);
            if waiting > 0 && desired::only_adds(&wanted, existing) {
                held = held.max(waiting);
                continue;
            }
            return Step::ReplaceMembers(index, pool.id.clone(), wanted);
        }
    }
    if let Some(step) = stale_listener(lb, tree) {
        return step;
    }
    if let Some(unused) = certificates.unused(&tree.listeners) {
        return Step::DeleteCertificate(unused.clone());
    }
    match floating_ip_step(lb, tree, kept.vip_port_id.as_ref()) {
        Step::Converged if held > 0 => Step::HoldMembers(held),
        step => step,
    }
}

/// The one load balancer to program, once it exists alone and is neither in ERROR nor
/// busy; otherwise the step that gets it there.
fn usable_load_balancer<'a>(
    lb: &LoadBalancer,
    tree: &'a OctaviaTree,
    backends: &[Vec<Backend>],
    error_replace: Duration,
    now: Timestamp,
) -> Result<&'a OctaviaLoadBalancer, Step> {
    let Some(kept) = keeper(lb, &tree.load_balancers) else {
        let members = lb
            .spec
            .ports
            .iter()
            .enumerate()
            .map(|(i, port)| desired::members(port, backends.get(i).map_or(&[], Vec::as_slice)))
            .collect();
        return Err(Step::Create(members));
    };
    let found = &tree.load_balancers;
    let extra: Vec<LoadBalancerId> = duplicates(found, kept.id.as_str(), |l| l.id.as_str(), live)
        .into_iter()
        .map(|l| l.id.clone())
        .collect();
    if !extra.is_empty() {
        return Err(Step::DeleteDuplicates(extra));
    }
    match kept.provisioning_status {
        ProvisioningStatus::Error => Err(error_step(lb, &kept.id, error_replace, now)),
        s if s.is_pending() => Err(Step::Wait(s)),
        _ => Ok(kept),
    }
}

/// The pool of the port at `index` once its listener, pool and monitor are as the
/// spec says; otherwise the step that fixes the first that is not.
fn port_tree<'a>(
    index: usize,
    port: &LoadBalancerPort,
    tls: &[String],
    lb_id: &LoadBalancerId,
    tree: &'a OctaviaTree,
) -> Result<&'a Pool, Step> {
    let Some(listener) = tree
        .listeners
        .iter()
        .find(|l| i32::from(l.protocol_port) == port.port)
    else {
        return Err(Step::CreateListener(index, lb_id.clone()));
    };
    let pool = listener
        .default_pool_id
        .as_ref()
        .and_then(|id| tree.pools.iter().find(|p| &p.id == id));
    if listener.protocol != desired::protocol(port.protocol) {
        // Octavia cannot change a listener's protocol: remove it (pool first) and
        // create it anew.
        return Err(match pool {
            Some(p) => Step::DeletePool(p.id.clone()),
            None => Step::DeleteListener(listener.id.clone()),
        });
    }
    if !desired::listener_matches(port, tls, listener) {
        return Err(Step::UpdateListener(index, listener.id.clone()));
    }
    let Some(pool) = pool else {
        return Err(Step::CreatePool(index, listener.id.clone()));
    };
    if pool.protocol != desired::protocol(port.real_servers.protocol) {
        return Err(Step::DeletePool(pool.id.clone()));
    }
    if !desired::pool_matches(port, pool) {
        return Err(Step::UpdatePool(index, pool.id.clone()));
    }
    let monitor = pool
        .healthmonitor_id
        .as_ref()
        .and_then(|id| tree.monitors.iter().find(|m| &m.id == id));
    match (desired::monitor_settings(port), monitor) {
        (None, Some(m)) => Err(Step::DeleteMonitor(m.id.clone())),
        (Some(s), None) => Err(Step::CreateMonitor(index, pool.id.clone(), s)),
        (Some(s), Some(m)) if m.kind != s.kind => Err(Step::DeleteMonitor(m.id.clone())),
        (Some(s), Some(m)) if !desired::monitor_matches(&s, m) => {
            Err(Step::UpdateMonitor(index, m.id.clone(), s))
        }
        _ => Ok(pool),
    }
}

/// A listener of a port no longer in the spec: its pool goes first, then it.
fn stale_listener(lb: &LoadBalancer, tree: &OctaviaTree) -> Option<Step> {
    let stale = tree.listeners.iter().find(|l| {
        !lb.spec
            .ports
            .iter()
            .any(|p| p.port == i32::from(l.protocol_port))
    })?;
    let pool = stale
        .default_pool_id
        .as_ref()
        .filter(|id| tree.pools.iter().any(|p| &p.id == *id));
    Some(match pool {
        Some(id) => Step::DeletePool(id.clone()),
        None => Step::DeleteListener(stale.id.clone()),
    })
}

/// `vipType: public` wants exactly one floating IP on the VIP port; `private` none.
fn floating_ip_step(lb: &LoadBalancer, tree: &OctaviaTree, vip_port: Option<&PortId>) -> Step {
    let fips = &tree.floating_ips;
    if lb.spec.vip_type == VipType::Private {
        return match fips.first() {
            Some(f) => Step::DeleteFloatingIp(f.id.clone()),
            None => Step::Converged,
        };
    }
    let Some(vip_port) = vip_port else {
        return Step::Converged;
    };
    // Keep the one on the VIP port, else the first; release the rest.
    let kept = fips
        .iter()
        .find(|f| f.port_id.as_ref() == Some(vip_port))
        .or_else(|| fips.first());
    if let Some(extra) = fips.iter().find(|f| Some(&f.id) != kept.map(|k| &k.id)) {
        return Step::DeleteFloatingIp(extra.id.clone());
    }
    match kept {
        None => Step::CreateFloatingIp(vip_port.clone()),
        Some(f) if f.port_id.as_ref() != Some(vip_port) => {
            Step::AssociateFloatingIp(f.id.clone(), vip_port.clone())
        }
        Some(_) => Step::Converged,
    }
}

/// A load balancer in ERROR is reported first and replaced `error_replace` after it
/// was first seen so.
fn error_step(
    lb: &LoadBalancer,
    id: &LoadBalancerId,
    error_replace: Duration,
    now: Timestamp,
) -> Step {
    let since = lb
        .status
        .as_ref()
        .filter(|s| s.load_balancer_id.as_deref() == Some(id.as_str()))
        .and_then(|s| s.error_since.as_ref());
    match in_error(since.map(|s| s.0), error_replace, now) {
        InError::Replace => Step::ReplaceErrored(id.clone()),
        InError::Report { first, retry_in } => Step::ReportError { first, retry_in },
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
