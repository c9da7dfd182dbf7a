//! Neutron ports: list (filters, `fields`), show, and the user's create, update and
//! delete, with fixed IPs, allowed address pairs and security groups, checked in
//! Neutron's order: the body (`port_body.rs`), the network (404, then who may create
//! on it), policy (`policy.rs`), the security groups, then the addresses
//! (`addresses.rs`). Nova and Octavia make their own ports through the world.
//!
//! Deliberately not here: port bindings and their hosts, MAC or device changes by
//! the user, and tags (given at create, Neutron 29 answered `"tags": []`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::envelope::{Cx, enter, list_answer};
use super::port_body::{self, PortBody, WantedPair};
use super::{addresses, networks, policy, schema};
use crate::model::{AddressPair, Network, Port};
use crate::query::Params;
use crate::state::Sim;
use crate::wire;
use crate::world::World;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/ports", get(list).post(create))
        .route(
            "/network/v2.0/ports/{id}",
            get(get_one).put(update).delete(delete),
        )
}

pub(super) fn view(project: &str, p: &Port) -> Value {
    let fixed: Vec<Value> = p
        .fixed_ips
        .iter()
        .map(|f| json!({"subnet_id": f.subnet_id, "ip_address": f.ip.to_string()}))
        .collect();
    let pairs: Vec<Value> = p
        .allowed_address_pairs
        .iter()
        .map(|a| json!({"mac_address": a.mac_address, "ip_address": a.ip_address}))
        .collect();
    // A port is ACTIVE once bound to a device, DOWN before (as recorded).
    let status = if p.device_id.is_empty() {
        "DOWN"
    } else {
        "ACTIVE"
    };
    json!({
        "id": p.id, "name": p.name, "network_id": p.network_id, "tenant_id": project, "project_id": project,
        "mac_address": p.mac, "admin_state_up": true, "status": status, "device_id": p.device_id,
        "device_owner": p.device_owner, "fixed_ips": fixed, "allowed_address_pairs": pairs,
        "extra_dhcp_opts": [], "security_groups": p.security_groups, "description": p.description,
        "binding:vnic_type": "normal", "port_security_enabled": true, "tags": [],
        "created_at": wire::ts_z(p.created), "updated_at": wire::ts_z(p.updated),
        "revision_number": p.revision
    })
}

fn not_found(cx: &Cx, id: &str) -> Response {
    let msg = format!("Port {id} could not be found.");
    cx.err(404, "PortNotFound", &msg)
}

/// `fixed_ips=ip_address=…` / `fixed_ips=subnet_id=…` and `security_groups=<id>`.
fn filter(item: &Value, key: &str, value: &str) -> Option<bool> {
    match key {
        "fixed_ips" => {
            let (k, v) = value.split_once('=')?;
            let ips = item["fixed_ips"].as_array()?;
            Some(ips.iter().any(|ip| ip[k].as_str() == Some(v)))
        }
        "security_groups" => {
            let groups = item["security_groups"].as_array()?;
            Some(groups.iter().any(|g| g.as_str() == Some(value)))
        }
        _ => None,
    }
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_ports", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut ports: Vec<&Port> = w.ports.values().collect();
    ports.sort_by_key(|p| p.seq);
    let items: Vec<Value> = ports.into_iter().map(|p| view(&cx.project, p)).collect();
    drop(w);
    list_answer(&cx, "ports", items, &q, &filter)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_port", &headers).await?;
    match sim.world_of(&cx.project).ports.get(&id) {
        Some(p) => Ok(cx.ok(200, &json!({"port": view(&cx.project, p)}))),
        None => Err(not_found(&cx, &id)),
    }
}

/// The policy rules of the attributes the body sets, on a port of `net`.
fn authorize(cx: &Cx, net: &Network, body: &PortBody, create: bool) -> Result<(), Response> {
    let mut attrs = Vec::new();
    if body.fixed_ips.is_some() {
        let keys = body.fixed_ip_keys.clone();
        attrs.push(policy::fixed_ips(cx, net, keys, create));
    }
    if body.pairs.is_some() {
        attrs.push(policy::address_pairs(cx, net, body.pair_keys.clone()));
    }
    let action = if create { "create_port" } else { "update_port" };
    policy::enforce(cx, action, true, &attrs)
}

/// The groups asked for, each of which must exist; none asked: the project's default.
fn groups(cx: &Cx, w: &World, ids: Option<&[String]>) -> Result<Vec<String>, Response> {
    let Some(ids) = ids else {
        let default = w.security_group("default").map(|g| g.id.clone());
        return Ok(default.into_iter().collect());
    };
    match ids
        .iter()
        .find(|id| !w.security_groups.iter().any(|g| g.id == **id))
    {
        Some(id) => {
            let msg = format!("Security group {id} does not exist");
            Err(cx.err(404, "SecurityGroupNotFound", &msg))
        }
        None => Ok(ids.to_vec()),
    }
}

/// Address pairs without a MAC get the port's.
fn pairs(mac: &str, wanted: Vec<WantedPair>) -> Vec<AddressPair> {
    let pair = |p: WantedPair| AddressPair {
        ip_address: p.ip_address,
        mac_address: p.mac_address.unwrap_or_else(|| mac.to_string()),
    };
    wanted.into_iter().map(pair).collect()
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_port", &headers).await?;
    let req = schema::body(&cx, &bytes, "port")?;
    let body = port_body::check(&cx, &req, true)?;
    let mut w = sim.world_of(&cx.project);
    let net_id = body.network_id.as_deref().unwrap_or_default();
    let net = networks::find(&cx, &w, net_id)?;
    policy::may_create_on(&cx, &net, "port")?;
    authorize(&cx, &net, &body, true)?;
    let groups = groups(&cx, &w, body.security_groups.as_deref())?;
    let fixed_ips = match &body.fixed_ips {
        Some(wanted) => addresses::assign(&cx, &mut w, &net, wanted, &[])?,
        None => addresses::any(&cx, &mut w, &net)?,
    };
    let mut port = w.new_port(&net.id, body.name.as_deref().unwrap_or_default());
    port.fixed_ips = fixed_ips;
    port.description = body.description.unwrap_or_default();
    port.device_id = body.device_id.unwrap_or_default();
    port.device_owner = body.device_owner.unwrap_or_default();
    port.security_groups = groups;
    port.allowed_address_pairs = pairs(&port.mac, body.pairs.unwrap_or_default());
    let answer = json!({"port": view(&cx.project, &port)});
    w.ports.insert(port.id.clone(), port);
    Ok(cx.ok(201, &answer))
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_port", &headers).await?;
    let req = schema::body(&cx, &bytes, "port")?;
    let body = port_body::check(&cx, &req, false)?;
    let mut w = sim.world_of(&cx.project);
    let old = w.ports.get(&id).ok_or_else(|| not_found(&cx, &id))?;
    let (net_id, old_ips) = (old.network_id.clone(), old.fixed_ips.clone());
    let net = networks::find(&cx, &w, &net_id)?;
    authorize(&cx, &net, &body, false)?;
    let groups = match &body.security_groups {
        Some(ids) => Some(groups(&cx, &w, Some(ids))?),
        None => None,
    };
    let fixed_ips = match &body.fixed_ips {
        Some(wanted) => Some(addresses::assign(&cx, &mut w, &net, wanted, &old_ips)?),
        None => None,
    };
    let p = w.ports.get_mut(&id).ok_or_else(|| not_found(&cx, &id))?;
    p.name = body.name.unwrap_or(std::mem::take(&mut p.name));
    p.description = body
        .description
        .unwrap_or(std::mem::take(&mut p.description));
    p.fixed_ips = fixed_ips.unwrap_or(std::mem::take(&mut p.fixed_ips));
    p.security_groups = groups.unwrap_or(std::mem::take(&mut p.security_groups));
    if let Some(wanted) = body.pairs {
        p.allowed_address_pairs = pairs(&p.mac, wanted);
    }
    p.device_id = body.device_id.unwrap_or(std::mem::take(&mut p.device_id));
    p.device_owner = body
        .device_owner
        .unwrap_or(std::mem::take(&mut p.device_owner));
    p.touch();
    Ok(cx.ok(200, &json!({"port": view(&cx.project, p)})))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_port", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    if !w.ports.contains_key(&id) {
        return Err(not_found(&cx, &id));
    }
    w.delete_port(&id);
    Ok(cx.empty())
}
