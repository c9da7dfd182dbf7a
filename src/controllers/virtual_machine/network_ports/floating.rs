//! A VirtualMachine's floating IP (`spec.floatingIP`): allocated once with the same
//! owner record as its ports (in the description), put on the first declared port and
//! so kept across every replacement of the server: the port stays, the address with it.

use verda_api::v1alpha1::{Retention, VirtualMachine};

use crate::cloud::Network;
use crate::cloud::ids::{FloatingIpId, NetworkId, PortId};
use crate::cloud::model::network::{CreateFloatingIp, FloatingIp, FloatingIpFilter};
use crate::runtime::ReconcileError;

/// The floating IPs carrying the owner record, and the network they come from.
#[derive(Clone, Debug)]
pub struct Floating {
    pub network: NetworkId,
    pub found: Vec<FloatingIp>,
}

/// What to do about the floating IP.
#[derive(Clone, Debug, PartialEq)]
pub enum FloatingStep {
    Create(CreateFloatingIp),
    Associate(FloatingIpId, PortId),
    /// A crash between create and record made a second one, on no port.
    DeleteDuplicate(FloatingIpId),
}

/// Whether the object has a floating IP to look after: declared, or still reported.
pub fn wanted(vm: &VirtualMachine) -> bool {
    vm.spec.floating_ip.is_some() || vm.status.as_ref().is_some_and(|s| s.floating_ip.is_some())
}

/// Lists the floating IPs carrying `record` (one call) and resolves the network
/// (remembered: no call once known).
pub async fn observe(
    neutron: &dyn Network,
    vm: &VirtualMachine,
    record: &str,
    key: &str,
) -> Result<Option<Floating>, ReconcileError> {
    let Some(spec) = &vm.spec.floating_ip else {
        return Ok(None);
    };
    let network = neutron
        .find_network(&spec.network)
        .await
        .map_err(ReconcileError::cloud("find the floating IP network", key))?;
    let found = listed(neutron, record, key).await?;
    Ok(Some(Floating {
        network: network.id,
        found,
    }))
}

async fn listed(
    neutron: &dyn Network,
    record: &str,
    key: &str,
) -> Result<Vec<FloatingIp>, ReconcileError> {
    let filter = FloatingIpFilter {
        description: Some(record.to_owned()),
        ..FloatingIpFilter::default()
    };
    neutron
        .list_floating_ips(&filter)
        .await
        .map_err(ReconcileError::cloud("list floating IPs", key))
}

/// The floating IP to keep: the one on `port`, else the first.
pub fn kept<'a>(floating: &'a Floating, port: &PortId) -> Option<&'a FloatingIp> {
    let on_port = |f: &&FloatingIp| f.port_id.as_ref() == Some(port);
    floating
        .found
        .iter()
        .find(on_port)
        .or_else(|| floating.found.first())
}

/// The step the floating IP needs, with the first declared port `port` there.
pub fn step(floating: &Floating, port: &PortId, record: &str) -> Option<FloatingStep> {
    let Some(keep) = kept(floating, port) else {
        return Some(FloatingStep::Create(CreateFloatingIp {
            floating_network: floating.network.clone(),
            port: Some(port.clone()),
            description: Some(record.to_owned()),
        }));
    };
    if let Some(extra) = floating
        .found
        .iter()
        .find(|f| f.id != keep.id && f.port_id.is_none())
    {
        return Some(FloatingStep::DeleteDuplicate(extra.id.clone()));
    }
    (keep.port_id.as_ref() != Some(port))
        .then(|| FloatingStep::Associate(keep.id.clone(), port.clone()))
}

/// Carries out `step`; what it did, for an event.
pub async fn run(
    neutron: &dyn Network,
    step: FloatingStep,
    key: &str,
) -> Result<String, ReconcileError> {
    match step {
        FloatingStep::Create(request) => {
            let fip = neutron
                .create_floating_ip(&request)
                .await
                .map_err(ReconcileError::cloud("allocate a floating IP", key))?;
            Ok(format!("floating IP {} allocated", fip.floating_ip_address))
        }
        FloatingStep::Associate(id, port) => {
            neutron
                .update_floating_ip(&id, Some(&port))
                .await
                .map_err(ReconcileError::cloud(
                    "put the floating IP on its port",
                    key,
                ))?;
            Ok(format!("floating IP {id} put on port {port}"))
        }
        FloatingStep::DeleteDuplicate(id) => {
            crate::cloud::ignore_not_found(neutron.delete_floating_ip(&id).await).map_err(
                ReconcileError::cloud("release a duplicate floating IP", key),
            )?;
            Ok(format!("duplicate floating IP {id} released"))
        }
    }
}

/// When the VirtualMachine goes: released, kept, or (detaching) left without the
/// owner record, as its ports are. What became of them, for the event.
pub async fn removal(
    neutron: &dyn Network,
    vm: &VirtualMachine,
    record: &str,
    detach: bool,
    key: &str,
) -> Result<String, ReconcileError> {
    let found = listed(neutron, record, key).await?;
    if found.is_empty() {
        return Ok(String::new());
    }
    let named: Vec<&str> = found
        .iter()
        .map(|f| f.floating_ip_address.as_str())
        .collect();
    let named = named.join(", ");
    let retained = vm.spec.network_retention.unwrap_or_default().when_deleted == Retention::Retain;
    for fip in &found {
        let done = match (detach, retained) {
            (true, _) => neutron
                .set_floating_ip_description(&fip.id, "")
                .await
                .map(drop),
            (false, true) => Ok(()),
            (false, false) => neutron.delete_floating_ip(&fip.id).await,
        };
        crate::cloud::ignore_not_found(done)
            .map_err(ReconcileError::cloud("release a floating IP", key))?;
    }
    Ok(match (detach, retained) {
        (true, _) => format!("floating IP {named} kept without the operator's records"),
        (false, true) => format!("floating IP {named} kept (networkRetention.whenDeleted: Retain)"),
        (false, false) => format!("floating IP {named} released"),
    })
}
