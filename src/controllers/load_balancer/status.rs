//! The LoadBalancer status: IDs, VIP, floating IP, Octavia's statuses, every port's
//! members with their operating status, and the Ready and MonitorsApplied conditions.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use verda_api::conditions::{NewCondition, READY, Status, set_condition};
use verda_api::v1alpha1::{
    CertificateStatus, LoadBalancer, LoadBalancerStatus, MemberStatus, PortStatus, VipType,
};

use crate::caches::cloud_view::OctaviaTree;
use crate::cloud::model::loadbalancing::{
    LoadBalancer as OctaviaLoadBalancer, OperatingStatus, ProvisioningStatus,
};
use crate::cloud::model::word;
use crate::controllers::load_balancer::certificates::Certificates;
use crate::controllers::load_balancer::desired::{self, ignored_monitors};
use crate::controllers::load_balancer::execute::{LOAD_BALANCER_ERROR, Outcome};

pub const MONITORS_APPLIED: &str = "MonitorsApplied";
pub const GROUP_NOT_FOUND: &str = "GroupNotFound";

/// Members that take traffic (ONLINE, or NO_MONITOR: nothing checks them) and all
/// members, over every port: the MEMBERS column and the member gauges.
pub fn member_counts(ports: &[PortStatus]) -> (usize, usize) {
    let all = ports.iter().flat_map(|p| &p.members);
    let ready = all
        .clone()
        .filter(|m| matches!(m.operating_status.as_deref(), Some("ONLINE" | "NO_MONITOR")))
        .count();
    (ready, all.count())
}

/// The status after `outcome`, from the tree observed before it.
pub fn next_status(
    lb: &LoadBalancer,
    tree: &OctaviaTree,
    outcome: &Outcome,
    missing_groups: &[String],
    certificates: &Certificates,
    now: Timestamp,
) -> LoadBalancerStatus {
    let mut status = lb.status.clone().unwrap_or_default();
    let recorded = match &outcome.recorded {
        Some(id) => id.clone(),
        None => crate::controllers::load_balancer::tree::keeper(lb, &tree.load_balancers)
            .map(|l| l.id.clone()),
    };
    let kept = recorded
        .as_ref()
        .and_then(|id| tree.load_balancers.iter().find(|l| &l.id == id));
    let same_lb = status.load_balancer_id.as_deref() == recorded.as_ref().map(|id| id.as_str());
    status.error_since = match kept.map(|l| l.provisioning_status) {
        Some(ProvisioningStatus::Error) if same_lb => status.error_since.or(Some(Time(now))),
        Some(ProvisioningStatus::Error) => Some(Time(now)),
        _ => None,
    };
    status.load_balancer_id = recorded.as_ref().map(ToString::to_string);
    status.vip = kept.and_then(|l| l.vip_address.clone());
    status.provisioning_status = kept.and_then(|l| word(l.provisioning_status));
    status.operating_status = kept.and_then(|l| word(l.operating_status));
    status.floating_ip = kept.and_then(|l| floating_ip(l, tree));
    if let Some(kept) = &outcome.dns {
        status.dns = kept.statuses.clone();
    }
    status.ports = if kept.is_some() {
        port_statuses(lb, tree)
    } else {
        Vec::new()
    };
    let (ready, total) = member_counts(&status.ports);
    status.members = Some(format!("{ready}/{total}"));
    status.split = split(lb);
    status.certificates = certificate_statuses(certificates);
    set_conditions(&mut status.conditions, lb, outcome, missing_groups, now);
    status.observed_generation = lb.metadata.generation;
    status
}

/// The floating IP associated with the load balancer's VIP.
fn floating_ip(kept: &OctaviaLoadBalancer, tree: &OctaviaTree) -> Option<String> {
    let vip_port = kept.vip_port_id.as_ref()?;
    tree.floating_ips
        .iter()
        .find(|f| f.port_id.as_ref() == Some(vip_port))
        .map(|f| f.floating_ip_address.clone())
}

/// The address `spec.dns` names: the VIP, or its floating IP with `vipType: public`.
pub fn dns_address(lb: &LoadBalancer, tree: &OctaviaTree) -> Option<String> {
    let kept = crate::controllers::load_balancer::tree::keeper(lb, &tree.load_balancers)?;
    match lb.spec.vip_type {
        VipType::Public => floating_ip(kept, tree),
        VipType::Private => kept.vip_address.clone(),
    }
}

/// Ready (from the step's outcome, unless a referenced group is missing) and
/// MonitorsApplied (whether every port's monitor could be applied).
fn set_conditions(
    conditions: &mut Vec<Condition>,
    lb: &LoadBalancer,
    outcome: &Outcome,
    missing_groups: &[String],
    now: Timestamp,
) {
    let (ready, reason, message) = &outcome.ready;
    let (ready, reason, message) = if !missing_groups.is_empty() && *reason != LOAD_BALANCER_ERROR {
        (
            Status::False,
            GROUP_NOT_FOUND,
            format!(
                "VirtualMachineGroup {} not found in this namespace; its ports have no members until it exists",
                missing_groups.join(", ")
            ),
        )
    } else {
        (*ready, *reason, message.clone())
    };
    let generation = lb.metadata.generation;
    set_condition(
        conditions,
        NewCondition {
            type_: READY,
            status: ready,
            reason,
            message,
        },
        generation,
        now,
    );
    let ignored = ignored_monitors(lb);
    let monitors = if ignored.is_empty() {
        NewCondition {
            type_: MONITORS_APPLIED,
            status: Status::True,
            reason: "AllMonitorsApplied",
            message: "every port's monitor is applied".into(),
        }
    } else {
        NewCondition {
            type_: MONITORS_APPLIED,
            status: Status::False,
            reason: "ExtraMonitorsIgnored",
            message: format!(
                "an Octavia pool takes one health monitor, so only the first monitor of each port is applied; \
                 not applied: {}",
                ignored.join("; ")
            ),
        }
    };
    set_condition(conditions, monitors, generation, now);
}

/// Per spec port: the listener, pool and monitor IDs and the pool's members.
fn port_statuses(lb: &LoadBalancer, tree: &OctaviaTree) -> Vec<PortStatus> {
    lb.spec
        .ports
        .iter()
        .map(|port| {
            let listener = tree
                .listeners
                .iter()
                .find(|l| i32::from(l.protocol_port) == port.port);
            let pool = listener
                .and_then(|l| l.default_pool_id.as_ref())
                .and_then(|id| tree.pools.iter().find(|p| &p.id == id));
            let mut members: Vec<MemberStatus> = pool
                .and_then(|p| tree.members.get(p.id.as_str()))
                .map(|ms| {
                    ms.iter()
                        .map(|m| MemberStatus {
                            name: m.name.clone(),
                            address: m.address.clone(),
                            port: i32::from(m.protocol_port),
                            operating_status: match m.operating_status {
                                OperatingStatus::Unknown => None,
                                s => word(s),
                            },
                            weight: port
                                .real_servers
                                .groups
                                .is_some()
                                .then(|| desired::member_weight(m.weight)),
                        })
                        .collect()
                })
                .unwrap_or_default();
            members.sort_by(|a, b| a.name.cmp(&b.name));
            PortStatus {
                port: port.port,
                listener_id: listener.map(|l| l.id.to_string()),
                pool_id: pool.map(|p| p.id.to_string()),
                health_monitor_id: pool
                    .and_then(|p| p.healthmonitor_id.as_ref().map(ToString::to_string)),
                members,
            }
        })
        .collect()
}

/// The owner's Barbican secrets, each with the Secret it serves (if any) and expiry.
fn certificate_statuses(certificates: &Certificates) -> Vec<CertificateStatus> {
    let stored = certificates.stored.iter().flatten();
    stored
        .map(|s| {
            let wanted = certificates
                .ports
                .iter()
                .flatten()
                .find(|w| s.name.as_ref() == Some(&w.name));
            CertificateStatus {
                secret_ref: s.secret_ref.clone(),
                secret_name: wanted.map(|w| w.secret.clone()),
                not_after: wanted
                    .and_then(|w| Timestamp::from_second(w.bundle.not_after.timestamp()).ok())
                    .map(Time),
            }
        })
        .collect()
}

/// `web-blue=90 web-green=10` for the ports that split traffic between groups; per port
/// (`443: …; 8443: …`) when their splits differ; `None` when no port splits.
pub fn split(lb: &LoadBalancer) -> Option<String> {
    let per_port: Vec<(i32, String)> = lb
        .spec
        .ports
        .iter()
        .filter_map(|p| {
            let groups = p.real_servers.groups.as_ref()?;
            let text: Vec<String> = groups
                .iter()
                .map(|g| format!("{}={}", g.name, g.weight))
                .collect();
            Some((p.port, text.join(" ")))
        })
        .collect();
    let first = per_port.first()?;
    if per_port.iter().all(|(_, text)| *text == first.1) {
        return Some(first.1.clone());
    }
    let listed: Vec<String> = per_port
        .iter()
        .map(|(port, text)| format!("{port}: {text}"))
        .collect();
    Some(listed.join("; "))
}
