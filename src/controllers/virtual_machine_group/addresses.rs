//! A replica's network identity: the template's ports, with replica `n`'s fixed
//! address from `spec.addresses` on each network it names; and what becomes of a
//! removed replica's ports (`networkRetention`). The ports themselves are the
//! VirtualMachine's to make: it records the group and the index on them, so whatever
//! VirtualMachine holds index `n` next boots on the same ports.

use verda_api::v1alpha1::{
    GroupNetworkRetention, NetworkRetention, PortSpec, Retention, VirtualMachineGroup,
    VirtualMachineSpec,
};

use crate::cloud::Network;
use crate::cloud::model::network::{FloatingIpFilter, PortFilter};
use crate::cloud::owner::{ClusterId, port_owner};
use crate::runtime::ReconcileError;
use crate::runtime::object::object_key;
use crate::runtime::problem::Problem;

/// Whether the replicas have declared ports (kept per index).
pub fn has_ports(group: &VirtualMachineGroup) -> bool {
    group.spec.addresses.is_some() || group.spec.template.ports.is_some()
}

/// The template's ports with replica `index`'s addresses: the template's `networks`
/// become ports when `addresses` names one of them.
pub fn replica_ports(
    group: &VirtualMachineGroup,
    index: u32,
) -> Result<Option<Vec<PortSpec>>, String> {
    let template = &group.spec.template;
    let Some(addresses) = &group.spec.addresses else {
        return Ok(template.ports.clone());
    };
    let mut ports = match (&template.ports, &template.networks) {
        (Some(ports), _) => ports.clone(),
        (None, Some(networks)) => networks
            .iter()
            .map(|n| PortSpec {
                network: n.clone(),
                ..PortSpec::default()
            })
            .collect(),
        (None, None) => {
            return Err("spec.addresses needs the template to name its networks \
                        (template.ports or template.networks)"
                .to_owned());
        }
    };
    for a in addresses {
        let port = ports
            .iter_mut()
            .find(|p| p.network == a.network)
            .ok_or_else(|| {
                format!(
                    "spec.addresses names network {}, which is not one of the template's; \
                 name it as the template does",
                    a.network
                )
            })?;
        port.fixed_ips = Some(vec![a.of(index)?]);
    }
    Ok(Some(ports))
}

/// The spec of replica `index`: the template with its ports, and its ports kept when
/// the VirtualMachine goes (the group decides their fate, not the VirtualMachine).
pub fn replica_spec(group: &VirtualMachineGroup, index: u32) -> Result<VirtualMachineSpec, String> {
    let mut spec = group.spec.template.clone();
    if has_ports(group) {
        let ports = replica_ports(group, index)?;
        spec.networks = None;
        spec.ports = ports;
        spec.network_retention = Some(NetworkRetention {
            when_deleted: Retention::Retain,
        });
    }
    Ok(spec)
}

/// Refuses addresses the replicas cannot have, before any is created.
pub fn validate(group: &VirtualMachineGroup) -> Result<(), ReconcileError> {
    if group.spec.addresses.is_none() {
        return Ok(());
    }
    let replicas = u32::try_from(group.spec.replicas).unwrap_or(0);
    (0..replicas.max(1))
        .try_for_each(|i| replica_ports(group, i).map(drop))
        .map_err(|message| ReconcileError::Invalid {
            object: object_key(group),
            problem: Problem::AddressesInvalid,
            message,
        })
}

/// What becomes of the ports of replica `index` when the group deletes its
/// VirtualMachine: kept for a replacement (below `replicas`), as `whenScaled` says for
/// a scale-down.
pub fn port_fate(group: &VirtualMachineGroup, index: Option<u32>) -> Retention {
    let retention = retention(group);
    match index.and_then(|i| i32::try_from(i).ok()) {
        Some(i) if i >= group.spec.replicas => retention.when_scaled,
        _ => Retention::Retain,
    }
}

pub fn retention(group: &VirtualMachineGroup) -> GroupNetworkRetention {
    group
        .spec
        .network_retention
        .unwrap_or(GroupNetworkRetention {
            when_scaled: Retention::Retain,
            when_deleted: Retention::Delete,
        })
}

/// With every VirtualMachine of the group gone: the ports (and floating IPs) kept for
/// indices that had none (earlier scale-downs), deleted when `whenDeleted: Delete`. One
/// listing of the project's ports and one of its floating IPs, only when the group is
/// deleted (Neutron filters descriptions by
/// exact match only). Returns whether one is still bound and must be waited for.
pub async fn delete_retained(
    neutron: &dyn Network,
    group: &VirtualMachineGroup,
    cluster: &ClusterId,
    key: &str,
) -> Result<bool, ReconcileError> {
    if !has_ports(group) || retention(group).when_deleted != Retention::Delete {
        return Ok(false);
    }
    let uid = kube::ResourceExt::uid(group).unwrap_or_default();
    let all = neutron
        .list_ports(&PortFilter::default())
        .await
        .map_err(ReconcileError::cloud("list ports", key))?;
    let replica = |(owner, index, c): (&str, Option<u32>, &str)| {
        owner == uid && index.is_some() && c == cluster.as_str()
    };
    let mine: Vec<_> = all
        .iter()
        .filter(|p| port_owner(&p.description).is_some_and(replica))
        .collect();
    if mine.iter().any(|p| p.device().is_some()) {
        return Ok(true);
    }
    let floating = neutron
        .list_floating_ips(&FloatingIpFilter::default())
        .await
        .map_err(ReconcileError::cloud("list floating IPs", key))?;
    for fip in floating
        .iter()
        .filter(|f| port_owner(&f.description).is_some_and(replica))
    {
        crate::cloud::ignore_not_found(neutron.delete_floating_ip(&fip.id).await)
            .map_err(ReconcileError::cloud("release a retained floating IP", key))?;
    }
    for port in mine {
        crate::cloud::ignore_not_found(neutron.delete_port(&port.id).await)
            .map_err(ReconcileError::cloud("delete a retained port", key))?;
    }
    Ok(false)
}
