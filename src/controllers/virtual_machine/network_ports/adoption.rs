//! Taking over the port `ports[].portID` names, as `spec.import` takes over a server:
//! checked (there, on the entry's network, nobody else's, free or on this
//! VirtualMachine's server), then given the owner record in one update, after which it
//! is found and kept like a port the operator created. One write: a crash on either
//! side of it leaves the port found by its record, or still the user's.

use crate::cloud::Network;
use crate::cloud::model::network::{Port, UpdatePort};
use crate::cloud::owner::port_owner;
use crate::controllers::virtual_machine::network_ports::plan::Adoption;
use crate::runtime::ReconcileError;
use crate::runtime::problem::Problem;

/// Takes the port over; what happened, for an event.
pub async fn adopt(
    neutron: &dyn Network,
    adoption: &Adoption,
    key: &str,
) -> Result<String, ReconcileError> {
    let Adoption { id, entry, .. } = adoption;
    let refuse = |problem, message: String| ReconcileError::Invalid {
        object: key.to_owned(),
        problem,
        message: format!("spec.ports[network={entry}].portID: port {id} {message}"),
    };
    let port = match neutron.get_port(id).await {
        Ok(port) => port,
        Err(e) if e.is_not_found() => {
            return Err(refuse(
                Problem::ImportNotFound,
                format!(
                    "does not exist in the VirtualMachine's project; check the ID with `openstack port show {id}`"
                ),
            ));
        }
        Err(e) => return Err(ReconcileError::cloud("read the port to take over", key)(e)),
    };
    if let Some((problem, why)) = refusal(&port, adoption) {
        return Err(refuse(problem, why));
    }
    let record = UpdatePort {
        description: Some(adoption.record.clone()),
        ..UpdatePort::default()
    };
    neutron
        .update_port(id, &record)
        .await
        .map_err(ReconcileError::cloud(
            "record the owner on the port taken over",
            key,
        ))?;
    Ok(format!(
        "port {id} ({}) taken over for the server to boot on",
        port.addresses().join(", ")
    ))
}

/// Why the port may not be taken over, if it may not.
fn refusal(port: &Port, adoption: &Adoption) -> Option<(Problem, String)> {
    if port.network_id != adoption.network {
        return Some((
            Problem::ImportMismatch,
            format!(
                "is on network {}, not on {} ({}); name the port's network",
                port.network_id, adoption.entry, adoption.network
            ),
        ));
    }
    if port_owner(&port.description).is_some() && port.description != adoption.record {
        return Some((
            Problem::ImportOwnedByAnother,
            format!(
                "belongs to another object (its description records `{}`); it is not taken over",
                port.description
            ),
        ));
    }
    match port.device() {
        Some(device) if adoption.server.as_deref() != Some(device) => Some((
            Problem::ImportMismatch,
            format!(
                "is bound to {device} ({}); free it first (`openstack server remove port`), the server boots on it then",
                if port.device_owner.is_empty() {
                    "another device"
                } else {
                    &port.device_owner
                }
            ),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::ids::{NetworkId, PortId};

    fn adoption() -> Adoption {
        Adoption {
            id: PortId::new("p-1"),
            network: NetworkId::new("net-1"),
            entry: "db-net".into(),
            record: "verda-uid-u-1 verda-cluster-c".into(),
            server: None,
        }
    }

    fn port(network: &str, description: &str, device: &str) -> Port {
        Port {
            id: PortId::new("p-1"),
            name: "mine".into(),
            network_id: NetworkId::new(network),
            device_id: device.into(),
            device_owner: if device.is_empty() {
                ""
            } else {
                "compute:nova"
            }
            .into(),
            fixed_ips: vec![],
            status: "DOWN".into(),
            description: description.into(),
            mac_address: "fa:16:3e:00:00:01".into(),
            allowed_address_pairs: vec![],
            security_groups: vec![],
        }
    }

    #[test]
    fn a_free_port_of_the_entrys_network_is_taken_over_whatever_it_describes() {
        assert_eq!(refusal(&port("net-1", "", ""), &adoption()), None);
        assert_eq!(refusal(&port("net-1", "the db VIP", ""), &adoption()), None);
        let again = port("net-1", &adoption().record, "");
        assert_eq!(refusal(&again, &adoption()), None, "already ours");
    }

    #[test]
    fn another_network_another_owner_or_another_server_is_refused() {
        let refused = |p: Port| refusal(&p, &adoption()).map(|(problem, _)| problem);
        assert_eq!(
            refused(port("net-2", "", "")),
            Some(Problem::ImportMismatch)
        );
        let theirs = port("net-1", "verda-uid-u-2 verda-cluster-c", "");
        assert_eq!(refused(theirs), Some(Problem::ImportOwnedByAnother));
        assert_eq!(
            refused(port("net-1", "", "s-9")),
            Some(Problem::ImportMismatch)
        );
        let ours = Adoption {
            server: Some("s-9".into()),
            ..adoption()
        };
        assert_eq!(refusal(&port("net-1", "", "s-9"), &ours), None);
    }
}
