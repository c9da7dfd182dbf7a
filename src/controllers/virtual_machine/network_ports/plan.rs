//! The next step for a VirtualMachine's declared ports. Pure: spec, the ports found and
//! the server → one step, or none when every port is there, alone, free for the server
//! to boot on (or bound to it) and as the spec edits it.

use kube::ResourceExt;
use verda_api::v1alpha1::VirtualMachine;

use crate::cloud::ids::{NetworkId, PortId, ServerId};
use crate::cloud::model::network::{AddressPair, CreatePort, Port};
use crate::controllers::virtual_machine::network_ports::Look;
use crate::controllers::virtual_machine::network_ports::floating::{self, FloatingStep};

/// What to do about the declared ports.
#[derive(Clone, Debug, PartialEq)]
pub enum PortStep {
    /// No port on this network carries the owner record.
    Create(Box<CreatePort>),
    /// `portID` names the port to take over: it gets the owner record.
    Adopt(Box<Adoption>),
    /// A crash between create and record made a second one; it is bound to nothing.
    DeleteDuplicate(PortId),
    /// `allowedAddressPairs` or `securityGroups` changed in the spec.
    Update {
        id: PortId,
        pairs: Option<Vec<AddressPair>>,
        groups: Option<Vec<String>>,
    },
    /// The port is still bound to another server: the new one boots on it once Nova
    /// lets it go, or once the binding is cleared because Nova no longer has that server.
    Held { id: PortId, holder: ServerId },
    /// Nothing to do until something else changes.
    Wait(String),
    /// Something about the floating IP, once the ports are there.
    Floating(FloatingStep),
}

/// A port named by `ports[].portID`, to take over.
#[derive(Clone, Debug, PartialEq)]
pub struct Adoption {
    pub id: PortId,
    /// The network the spec entry resolved to, and its name there.
    pub network: NetworkId,
    pub entry: String,
    pub record: String,
    /// The VirtualMachine's server, which the port may already be bound to.
    pub server: Option<String>,
}

impl PortStep {
    pub fn describe(&self) -> String {
        match self {
            Self::Create(request) => format!("create port {}", request.name),
            Self::Adopt(adoption) => format!("take over port {}", adoption.id),
            Self::DeleteDuplicate(id) => format!("delete duplicate port {id}"),
            Self::Update { id, .. } => format!("update port {id}"),
            Self::Held { id, holder } => {
                format!("let port {id} go from server {holder} if Nova no longer has it")
            }
            Self::Wait(_) => "change anything".to_owned(),
            Self::Floating(FloatingStep::Create(_)) => "allocate a floating IP".to_owned(),
            Self::Floating(FloatingStep::Associate(id, _)) => {
                format!("put floating IP {id} on its port")
            }
            Self::Floating(FloatingStep::DeleteDuplicate(id)) => {
                format!("release duplicate floating IP {id}")
            }
        }
    }

    pub fn writes(&self) -> bool {
        !matches!(self, Self::Wait(_))
    }
}

/// The address pairs spec entry `i` asks for, as Neutron writes them (a pair without a
/// MAC answers with the port's).
fn wanted_pairs(vm: &VirtualMachine, i: usize, port_mac: &str) -> Vec<AddressPair> {
    let spec = vm.spec.ports.as_ref().and_then(|p| p.get(i));
    let pairs = spec.and_then(|p| p.allowed_address_pairs.as_deref());
    pairs
        .unwrap_or_default()
        .iter()
        .map(|p| AddressPair {
            ip_address: p.ip_address.clone(),
            mac_address: Some(p.mac_address.clone().unwrap_or_else(|| port_mac.to_owned())),
        })
        .collect()
}

/// The create request of spec entry `i`: named `<VirtualMachine>-<network>`; or the
/// takeover of the port it names.
fn create(vm: &VirtualMachine, look: &Look, i: usize, server: Option<&str>) -> Option<PortStep> {
    let spec = vm.spec.ports.as_ref()?.get(i)?;
    let network = look.networks.get(i)?;
    if let Some(id) = &spec.port_id {
        return Some(PortStep::Adopt(Box::new(Adoption {
            id: PortId::new(id.clone()),
            network: network.clone(),
            entry: spec.network.clone(),
            record: look.record.clone(),
            server: server.map(str::to_owned),
        })));
    }
    let request = CreatePort {
        network: network.clone(),
        name: format!("{}-{}", vm.name_any(), spec.network),
        description: look.record.clone(),
        fixed_ips: spec.fixed_ips.clone().unwrap_or_default(),
        allowed_address_pairs: spec
            .allowed_address_pairs
            .iter()
            .flatten()
            .map(|p| AddressPair {
                ip_address: p.ip_address.clone(),
                mac_address: p.mac_address.clone(),
            })
            .collect(),
        security_groups: look.groups.get(i).cloned().flatten(),
    };
    Some(PortStep::Create(Box::new(request)))
}

/// What is missing before the server may be created (or while `building`): a port to
/// create, a duplicate to remove, a port still bound to the server being replaced.
pub fn before_server(vm: &VirtualMachine, look: &Look, building: Option<&str>) -> Option<PortStep> {
    let count = vm.spec.ports.as_ref().map_or(0, Vec::len);
    (0..count)
        .find_map(|i| present(vm, look, i, building).err())
        .or_else(|| floating_step(look, building))
}

/// The floating IP's step, with the first port there.
fn floating_step(look: &Look, server: Option<&str>) -> Option<PortStep> {
    let floating = look.floating.as_ref()?;
    let port = look.kept(0, server)?;
    floating::step(floating, &port.id, &look.record).map(PortStep::Floating)
}

/// With the server there: each port present and as the spec edits it.
pub fn with_server(vm: &VirtualMachine, look: &Look, server: &str) -> Option<PortStep> {
    let count = vm.spec.ports.as_ref().map_or(0, Vec::len);
    (0..count)
        .find_map(|i| match present(vm, look, i, Some(server)) {
            Err(step) => Some(step),
            Ok(port) => edited(vm, look, i, port),
        })
        .or_else(|| floating_step(look, Some(server)))
}

/// The port to keep for entry `i`, or the step that must come first.
fn present<'a>(
    vm: &VirtualMachine,
    look: &'a Look,
    i: usize,
    server: Option<&str>,
) -> Result<&'a Port, PortStep> {
    let found = look.candidates(i, server);
    let Some(kept) = found.first() else {
        let step = create(vm, look, i, server);
        return Err(step.unwrap_or_else(|| PortStep::Wait("no network".into())));
    };
    if let Some(extra) = found.iter().skip(1).find(|p| p.device().is_none()) {
        return Err(PortStep::DeleteDuplicate(extra.id.clone()));
    }
    match kept.device() {
        Some(other) if server != Some(other) => Err(PortStep::Held {
            id: kept.id.clone(),
            holder: ServerId::new(other),
        }),
        _ => Ok(kept),
    }
}

/// An update when the spec's address pairs or security groups differ from the port's.
fn edited(vm: &VirtualMachine, look: &Look, i: usize, port: &Port) -> Option<PortStep> {
    let pairs = wanted_pairs(vm, i, &port.mac_address);
    let pairs_differ = {
        let mut want = pairs.clone();
        let mut have = port.allowed_address_pairs.clone();
        want.sort_by(|a, b| a.ip_address.cmp(&b.ip_address));
        have.sort_by(|a, b| a.ip_address.cmp(&b.ip_address));
        want != have
    };
    let groups = look.groups.get(i).cloned().flatten();
    let groups_differ = groups.as_ref().is_some_and(|want| {
        let mut have = port.security_groups.clone();
        have.sort();
        &have != want
    });
    (pairs_differ || groups_differ).then(|| PortStep::Update {
        id: port.id.clone(),
        pairs: pairs_differ.then_some(pairs),
        groups: groups.filter(|_| groups_differ),
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
