//! Neutron floating IPs: allocate on an external network, associate to a port (the
//! load balancer VIP) with PUT `port_id`, show, list with filters, tags, release.
//! No router model: association needs no gateway, `router_id` is a fixed fake ID.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, put};
use chrono::Utc;
use serde_json::{Value, json};

use super::envelope::{Cx, enter, list_answer};
use super::schema;
use crate::model::FloatingIp;
use crate::query::Params;
use crate::state::Sim;
use crate::wire;
use crate::world::World;

const ROUTER_ID: &str = "0b6c1f6e-2d4a-4f3e-9c8b-7a6d5e4f3a21";

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/floatingips", get(list).post(create))
        .route(
            "/network/v2.0/floatingips/{id}",
            get(get_one).put(update).delete(delete),
        )
        .route("/network/v2.0/floatingips/{id}/tags", put(replace_tags))
        .route("/network/v2.0/floatingips/{id}/tags/{tag}", put(add_tag))
}

fn view(w: &World, f: &FloatingIp) -> Value {
    let port = f.port_id.as_ref().and_then(|p| w.ports.get(p));
    let details = port.map(|p| {
        json!({"name": p.name, "network_id": p.network_id, "mac_address": p.mac, "admin_state_up": true,
               "status": "ACTIVE", "device_id": p.device_id, "device_owner": p.device_owner})
    });
    json!({
        "id": f.id, "tenant_id": w.project_id, "project_id": w.project_id,
        "floating_ip_address": f.address.to_string(), "floating_network_id": f.network_id,
        "router_id": f.port_id.as_ref().map(|_| ROUTER_ID), "port_id": f.port_id,
        "fixed_ip_address": f.fixed_ip.map(|ip| ip.to_string()),
        "status": if f.port_id.is_some() { "ACTIVE" } else { "DOWN" },
        "description": f.description, "port_details": details, "tags": f.tags,
        "created_at": wire::ts_z(f.created), "updated_at": wire::ts_z(f.updated), "revision_number": f.revision
    })
}

fn not_found(cx: &Cx, id: &str) -> Response {
    cx.err(
        404,
        "FloatingIPNotFound",
        &format!("Floating IP {id} could not be found"),
    )
}

/// Binds `fip` to `port_id` (or unbinds with `None`), checking the port.
fn associate(cx: &Cx, w: &mut World, fip_id: &str, port_id: Option<&str>) -> Result<(), Response> {
    let fixed = match port_id {
        None => None,
        Some(p) => {
            let port = w.ports.get(p).ok_or_else(|| {
                cx.err(
                    404,
                    "PortNotFound",
                    &format!("Port {p} could not be found."),
                )
            })?;
            let ip = port.ip().ok_or_else(|| {
                cx.err(
                    400,
                    "BadRequest",
                    &format!(
                        "Bad floatingip request: Port {p} does not have any fixed IPv4 addresses."
                    ),
                )
            })?;
            if let Some(other) = w
                .fips
                .values()
                .find(|f| f.port_id.as_deref() == Some(p) && f.id != fip_id)
            {
                let msg = format!(
                    "Cannot associate floating IP {} ({}) with port {p} using fixed IP {ip}, as that fixed IP already has a floating IP on external network {}.",
                    fip_id, other.address, other.network_id
                );
                return Err(cx.err(409, "FloatingIPPortAlreadyAssociated", &msg));
            }
            Some(ip)
        }
    };
    if let Some(f) = w.fips.get_mut(fip_id) {
        f.port_id = port_id.map(str::to_string);
        f.fixed_ip = fixed;
    }
    Ok(())
}

/// Checks a create request as Neutron does (attributes allowed in POST, required ones,
/// their values, then policy): the external network to allocate from.
fn check_create(cx: &Cx, req: &serde_json::Map<String, Value>) -> Result<String, Response> {
    if req.contains_key("tags") {
        return Err(cx.err(
            400,
            "HTTPBadRequest",
            "Attribute 'tags' not allowed in POST",
        ));
    }
    let msg = "Failed to parse request. Required attribute 'floating_network_id' not specified";
    let net = req.get("floating_network_id").and_then(Value::as_str);
    let net = net.ok_or_else(|| cx.err(400, "HTTPBadRequest", msg))?;
    schema::floating_ip(cx, req)?;
    if req.contains_key("floating_ip_address") {
        let msg = "(rule:create_floatingip and rule:create_floatingip:floating_ip_address) is disallowed by policy";
        return Err(cx.err(403, "PolicyNotAuthorized", msg));
    }
    Ok(net.to_string())
}

/// Allocates an address on the external network's subnet: (subnet ID, address).
fn allocate(
    cx: &Cx,
    w: &mut World,
    net_id: &str,
) -> Result<(String, std::net::Ipv4Addr), Response> {
    let net = w.networks.iter().find(|n| n.id == net_id).cloned();
    let net = net.ok_or_else(|| {
        cx.err(
            404,
            "NetworkNotFound",
            &format!("Network {net_id} could not be found."),
        )
    })?;
    let subnet = net
        .subnets
        .first()
        .filter(|_| net.external)
        .cloned()
        .ok_or_else(|| {
            let msg = format!(
                "Bad floatingip request: Network {net_id} is not a valid external network."
            );
            cx.err(400, "BadRequest", &msg)
        })?;
    let address = w.allocate_ip(&subnet).ok_or_else(|| {
        let msg = format!("No more IP addresses available on network {net_id}.");
        cx.err(409, "IpAddressGenerationFailure", &msg)
    })?;
    Ok((subnet, address))
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_floating_ip", &headers).await?;
    let req = schema::body(&cx, &bytes, "floatingip")?;
    let net_id = check_create(&cx, &req)?;
    let mut w = sim.world_of(&cx.project);
    let (subnet, address) = allocate(&cx, &mut w, &net_id)?;
    let now = Utc::now();
    let fip = FloatingIp {
        id: w.uuid(),
        seq: w.next_seq(),
        address,
        network_id: net_id,
        port_id: None,
        fixed_ip: None,
        description: req
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        tags: vec![],
        revision: 0,
        created: now,
        updated: now,
    };
    let id = fip.id.clone();
    w.fips.insert(id.clone(), fip);
    if let Some(port) = req.get("port_id").and_then(Value::as_str)
        && let Err(e) = associate(&cx, &mut w, &id, Some(port))
    {
        w.fips.remove(&id);
        w.release_ip(&subnet, address);
        return Err(e);
    }
    let body = json!({"floatingip": view(&w, &w.fips[&id])});
    Ok(cx.ok(201, &body))
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_floating_ip", &headers).await?;
    let w = sim.world_of(&cx.project);
    let f = w.fips.get(&id).ok_or_else(|| not_found(&cx, &id))?;
    Ok(cx.ok(200, &json!({"floatingip": view(&w, f)})))
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_floating_ips", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut fips: Vec<&FloatingIp> = w.fips.values().collect();
    fips.sort_by_key(|f| f.seq);
    let items: Vec<Value> = fips.into_iter().map(|f| view(&w, f)).collect();
    drop(w);
    list_answer(&cx, "floatingips", items, &q, &|_, _, _| None)
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_floating_ip", &headers).await?;
    let req = schema::body(&cx, &bytes, "floatingip")?;
    schema::floating_ip(&cx, &req)?;
    let mut w = sim.world_of(&cx.project);
    if !w.fips.contains_key(&id) {
        return Err(not_found(&cx, &id));
    }
    if let Some(port) = req.get("port_id") {
        associate(&cx, &mut w, &id, port.as_str())?;
    }
    let f = w.fips.get_mut(&id).ok_or_else(|| not_found(&cx, &id))?;
    if let Some(d) = req.get("description").and_then(Value::as_str) {
        f.description = d.to_string();
    }
    f.updated = Utc::now();
    f.revision += 1;
    let body = json!({"floatingip": view(&w, &w.fips[&id])});
    Ok(cx.ok(200, &body))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_floating_ip", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let f = w.fips.remove(&id).ok_or_else(|| not_found(&cx, &id))?;
    let subnet = w
        .networks
        .iter()
        .find(|n| n.id == f.network_id)
        .and_then(|n| n.subnets.first().cloned());
    if let Some(s) = subnet {
        w.release_ip(&s, f.address);
    }
    Ok(cx.empty())
}

async fn add_tag(
    State(sim): State<Sim>,
    Path((id, tag)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "set_floating_ip_tags", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let f = w.fips.get_mut(&id).ok_or_else(|| not_found(&cx, &id))?;
    if !f.tags.contains(&tag) {
        f.tags.push(tag);
        f.tags.sort();
        f.revision += 1;
    }
    Ok(cx.ok(201, &Value::Null))
}

async fn replace_tags(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "set_floating_ip_tags", &headers).await?;
    let req = wire::parse_body(&bytes).unwrap_or(Value::Null);
    let mut w = sim.world_of(&cx.project);
    let f = w.fips.get_mut(&id).ok_or_else(|| not_found(&cx, &id))?;
    f.tags = req["tags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    f.revision += 1;
    Ok(cx.ok(200, &json!({"tags": f.tags})))
}
