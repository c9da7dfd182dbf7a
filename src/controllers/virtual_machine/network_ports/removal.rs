//! What deleting a VirtualMachine does to its declared ports, once its server is gone:
//! `networkRetention.whenDeleted: Delete` (the default) deletes them, `Retain` keeps
//! them (a group's replica gets them back at its index), and `detach-on-delete` takes
//! the owner record off them. A port still bound to a server is waited for.

use verda_api::v1alpha1::{Retention, VirtualMachine};

use crate::cloud::Network;
use crate::cloud::model::network::{Port, PortFilter, UpdatePort};
use crate::runtime::ReconcileError;

/// Where the ports stand: `None` while Nova still holds one; else what became of them
/// (empty: there were none).
pub async fn ports(
    neutron: &dyn Network,
    vm: &VirtualMachine,
    record: String,
    detach: bool,
    key: &str,
) -> Result<Option<String>, ReconcileError> {
    let floating = super::floating::removal(neutron, vm, &record, detach, key).await?;
    let filter = PortFilter {
        descriptions: vec![record],
        ..PortFilter::default()
    };
    let found = neutron
        .list_ports(&filter)
        .await
        .map_err(ReconcileError::cloud("list ports", key))?;
    if found.is_empty() {
        return Ok(Some(floating));
    }
    let retained = vm.spec.network_retention.unwrap_or_default().when_deleted == Retention::Retain;
    let named = listed(&found);
    if retained && !detach {
        return Ok(Some(format!(
            "ports {named} kept (networkRetention.whenDeleted: Retain)"
        )));
    }
    if detach {
        // Without the owner record nothing finds them again: they are the user's.
        let clear = UpdatePort {
            description: Some(String::new()),
            ..UpdatePort::default()
        };
        for port in &found {
            crate::cloud::ignore_not_found(neutron.update_port(&port.id, &clear).await.map(drop))
                .map_err(ReconcileError::cloud(
                "take the owner record off a port",
                key,
            ))?;
        }
        return Ok(Some(format!(
            "ports {named} kept without the operator's records"
        )));
    }
    if found.iter().any(|p| p.device().is_some()) {
        return Ok(None);
    }
    for port in &found {
        crate::cloud::ignore_not_found(neutron.delete_port(&port.id).await)
            .map_err(ReconcileError::cloud("delete a port", key))?;
    }
    Ok(Some(joined(&floating, format!("ports {named} deleted"))))
}

fn joined(floating: &str, ports: String) -> String {
    if floating.is_empty() {
        ports
    } else {
        format!("{floating}; {ports}")
    }
}

fn listed(ports: &[Port]) -> String {
    ports
        .iter()
        .map(|p| format!("{} ({})", p.id, p.addresses().join(", ")))
        .collect::<Vec<_>>()
        .join(", ")
}
