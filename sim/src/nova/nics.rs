//! A server's NICs, as `POST /servers` asks for them in `networks`: `auto` (the
//! shared `private` network), `none`, or a list mixing `{"uuid": network}` and
//! `{"port": id}`. Checked against the project's networks and ports with Nova's
//! answers (`neutron-ports.md`), then made at build: a port of Nova's own on each
//! network, with the request's security groups, and the user's ports bound as they
//! are (the request's security groups do not apply to them, as recorded).
//!
//! Deliberately not here: `fixed_ip` and `tag` on a NIC, and a port's network
//! checked against a `uuid` given with it.

use axum::response::Response;
use serde_json::Value;

use super::envelope::Cx;
use crate::model::Nic;
use crate::world::World;
use crate::world::neutron::COMPUTE_OWNER;

/// One requested NIC.
pub(super) enum Wanted {
    Network(String),
    Port(String),
}

/// The NICs `networks` asks for, each checked.
pub(super) fn requested(
    cx: &Cx,
    w: &World,
    requested: Option<&Value>,
) -> Result<Vec<Wanted>, Response> {
    let private = || {
        let nets = w.networks.iter().filter(|n| n.name == "private");
        nets.map(|n| Wanted::Network(n.id.clone())).collect()
    };
    let list = match requested {
        None => return Ok(private()),
        Some(Value::String(s)) if s == "auto" => return Ok(private()),
        Some(Value::String(s)) if s == "none" => return Ok(vec![]),
        Some(Value::Array(list)) => list,
        Some(other) => {
            let msg = format!(
                "Invalid input for field/attribute networks. Value: {}.",
                crate::wire::py_repr(other)
            );
            return Err(cx.err(400, &msg));
        }
    };
    list.iter().map(|n| one(cx, w, n)).collect()
}

fn one(cx: &Cx, w: &World, n: &Value) -> Result<Wanted, Response> {
    if let Some(id) = n.get("port").and_then(Value::as_str) {
        return port(cx, w, id).map(|()| Wanted::Port(id.to_string()));
    }
    let Some(uuid) = n.get("uuid").and_then(Value::as_str) else {
        let msg = "Only networks given by uuid or port are supported by the simulator.";
        return Err(cx.err(400, msg));
    };
    match w.networks.iter().find(|net| net.id == uuid) {
        Some(net) => Ok(Wanted::Network(net.id.clone())),
        None => Err(cx.err(400, &format!("Network {uuid} could not be found."))),
    }
}

/// A user's port: it must exist, be free and have an address.
fn port(cx: &Cx, w: &World, id: &str) -> Result<(), Response> {
    let Some(p) = w.ports.get(id) else {
        return Err(cx.err(400, &format!("Port id {id} could not be found.")));
    };
    if !p.device_id.is_empty() {
        return Err(cx.err(409, &format!("Port {id} is still in use.")));
    }
    if p.fixed_ips.is_empty() {
        let msg = format!("Port {id} requires a FixedIP in order to be used.");
        return Err(cx.err(400, &msg));
    }
    Ok(())
}

/// Makes the NICs of server `server_id`; `groups` (names or IDs) go to Nova's ports.
pub(super) fn attach(
    w: &mut World,
    wanted: &[Wanted],
    server_id: &str,
    groups: &[String],
) -> Vec<Nic> {
    let nic = |w: &World, network_id: &str, port_id: String| Nic {
        network_name: w
            .networks
            .iter()
            .find(|n| n.id == network_id)
            .map(|n| n.name.clone())
            .unwrap_or_default(),
        port_id,
    };
    let mut nics = Vec::new();
    for x in wanted {
        let (network_id, port_id) = match x {
            Wanted::Network(net) => (net.clone(), nova_port(w, net, server_id, groups)),
            Wanted::Port(p) => {
                w.bind_port(p, server_id);
                let net = w.ports.get(p).map(|p| p.network_id.clone());
                (net.unwrap_or_default(), p.clone())
            }
        };
        nics.push(nic(w, &network_id, port_id));
    }
    nics
}

/// Nova's own port on `network_id`, deleted with the server; its ID.
fn nova_port(w: &mut World, network_id: &str, server_id: &str, groups: &[String]) -> String {
    let ids = groups.iter().filter_map(|g| w.security_group(g));
    let ids: Vec<String> = ids.map(|g| g.id.clone()).collect();
    let mut port = w.new_port(network_id, "");
    port.fixed_ips = w.allocate_on_network(network_id);
    port.device_id = server_id.to_string();
    port.device_owner = COMPUTE_OWNER.to_string();
    port.security_groups = ids;
    port.by_nova = true;
    let id = port.id.clone();
    w.ports.insert(id.clone(), port);
    id
}
