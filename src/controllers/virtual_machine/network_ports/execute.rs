//! Carries out a [`PortStep`]: the only Neutron port writes of a VirtualMachine.

use crate::caches::cloud_view::PortView;
use crate::cloud::Network;
use crate::cloud::model::network::UpdatePort;
use crate::controllers::virtual_machine::network_ports::plan::PortStep;
use crate::runtime::ReconcileError;

/// Carries out `step`; what it did, for an event. `view` learns of the port created, or
/// that the record's next look goes to Neutron.
pub async fn run(
    neutron: &dyn Network,
    (view, record): (&PortView, &str),
    step: PortStep,
    key: &str,
) -> Result<Option<String>, ReconcileError> {
    if !matches!(step, PortStep::Create(_)) && step.writes() {
        view.forget(record);
    }
    let mut done = None;
    match step {
        PortStep::Create(request) => {
            let created = neutron.create_port(&request).await;
            let port = created
                .inspect_err(|_| view.forget(record))
                .map_err(ReconcileError::cloud("create a port", key))?;
            view.created(record, port.clone());
            done = Some(format!(
                "port {} ({}) created on network {} for the server to boot on",
                port.id,
                port.addresses().join(", "),
                request.network
            ));
        }
        PortStep::Adopt(adoption) => {
            done = Some(super::adoption::adopt(neutron, &adoption, key).await?);
        }
        PortStep::DeleteDuplicate(id) => {
            crate::cloud::ignore_not_found(neutron.delete_port(&id).await)
                .map_err(ReconcileError::cloud("delete a duplicate port", key))?;
            done = Some(format!("duplicate port {id} deleted"));
        }
        PortStep::Update { id, pairs, groups } => {
            let request = UpdatePort {
                allowed_address_pairs: pairs,
                security_groups: groups,
                ..UpdatePort::default()
            };
            neutron
                .update_port(&id, &request)
                .await
                .map_err(ReconcileError::cloud("update a port", key))?;
            done = Some(format!("port {id} updated as the spec now says"));
        }
        // Whether the holder exists is Nova's to say: `stale_holders` carries it out.
        PortStep::Held { .. } | PortStep::Wait(_) => {}
        PortStep::Floating(step) => {
            done = Some(super::floating::run(neutron, step, key).await?);
        }
    }
    Ok(done)
}
