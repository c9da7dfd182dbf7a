//! Listeners: create (one per protocol/port on a load balancer), show, statistics, list, update
//! (including `default_pool_id`), delete. Every write locks the load balancer's tree.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, body, enter, list_answer, new_meta, str_field, u64_field, update_meta};
use super::{schema, views};
use crate::query::Params;
use crate::state::Sim;
use crate::world::World;
use crate::world::octavia::{Listener, ListenerOptions, Prov};
use crate::world::octavia_lifecycle as lifecycle;

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(&format!("{p}/listeners"), get(list).post(create))
        .route(
            &format!("{p}/listeners/{{id}}"),
            get(get_one).put(update).delete(delete),
        )
        .route(&format!("{p}/listeners/{{id}}/stats"), get(stats))
}

fn not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Listener {id} not found."))
}

/// A new listener of `lb_id` from a validated request.
pub(super) fn build(w: &mut World, lb_id: &str, req: &Map<String, Value>) -> Listener {
    Listener {
        meta: new_meta(w, req),
        lb_id: lb_id.to_owned(),
        protocol: str_field(req, "protocol").unwrap_or_default(),
        protocol_port: u64_field(req, "protocol_port").unwrap_or_default(),
        connection_limit: req
            .get("connection_limit")
            .and_then(Value::as_i64)
            .unwrap_or(-1),
        default_pool_id: str_field(req, "default_pool_id"),
        options: super::options::listener_options(req, ListenerOptions::default()),
        active_connections: 0,
        total_connections: 0,
    }
}

/// The VIP address of the load balancer `lb_id`.
fn vip_of(w: &World, lb_id: &str) -> String {
    w.octavia
        .lbs
        .get(lb_id)
        .map(|lb| lb.vip_address.clone())
        .unwrap_or_default()
}

/// Octavia's 409 for a second listener on a protocol family and port.
pub(super) fn port_in_use(cx: &Cx, protocol: &str, port: u64) -> Response {
    cx.err(409, &format!("Another Listener on this Load Balancer is already using protocol {protocol} and protocol_port {port}"))
}

pub(super) fn is_udp(p: &str) -> bool {
    matches!(p, "UDP" | "SCTP")
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_listener", &headers).await?;
    let req = body(&cx, &bytes, "listener")?;
    schema::check(&cx, schema::LISTENER_POST, &req)?;
    let lb_id = str_field(&req, "loadbalancer_id").unwrap_or_default();
    let protocol = str_field(&req, "protocol").unwrap_or_default();
    let port = u64_field(&req, "protocol_port").unwrap_or_default();
    let mut w = sim.world_of(&cx.project);
    if !w.octavia.lbs.contains_key(&lb_id) {
        return Err(super::envelope::lb_not_found(&cx, &lb_id));
    }
    super::envelope::ensure_mutable(&cx, &w, &lb_id, None)?;
    super::options::check_listener(&cx, &req, &protocol, &vip_of(&w, &lb_id))?;
    let barbican = crate::barbican::secrets_prefix(&sim);
    super::tls::check(&cx, &w, &barbican, &req, &protocol, true)?;
    let clash = w.octavia.listeners.values().any(|l| {
        l.lb_id == lb_id && l.protocol_port == port && is_udp(&l.protocol) == is_udp(&protocol)
    });
    if clash {
        return Err(port_in_use(&cx, &protocol, port));
    }
    let listener = build(&mut w, &lb_id, &req);
    let body = json!({"listener": views::listener(&w, &listener)});
    w.octavia
        .listeners
        .insert(listener.meta.id.clone(), listener);
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.ok(201, &body))
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_listener", &headers).await?;
    let w = sim.world_of(&cx.project);
    let l = w
        .octavia
        .listeners
        .get(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    Ok(cx.ok(200, &json!({"listener": views::listener(&w, l)})))
}

/// Octavia's `listener_stats`: the counts a test set (`Simulator::set_listener_stats`);
/// bytes and request errors are not modelled (0).
async fn stats(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "listener_stats", &headers).await?;
    let w = sim.world_of(&cx.project);
    let l = w
        .octavia
        .listeners
        .get(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    let stats = json!({
        "active_connections": l.active_connections,
        "total_connections": l.total_connections,
        "bytes_in": 0,
        "bytes_out": 0,
        "request_errors": 0,
    });
    Ok(cx.ok(200, &json!({"stats": stats})))
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_listeners", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut all: Vec<&Listener> = w.octavia.listeners.values().collect();
    all.sort_by_key(|l| l.meta.seq);
    let items: Vec<Value> = all.into_iter().map(|l| views::listener(&w, l)).collect();
    drop(w);
    list_answer(&cx, "listeners", items, &q)
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_listener", &headers).await?;
    let req = body(&cx, &bytes, "listener")?;
    schema::check(&cx, schema::LISTENER_PUT, &req)?;
    let mut w = sim.world_of(&cx.project);
    let (lb_id, protocol) = w
        .octavia
        .listeners
        .get(&id)
        .map(|l| (l.lb_id.clone(), l.protocol.clone()))
        .ok_or_else(|| not_found(&cx, &id))?;
    super::envelope::ensure_mutable(&cx, &w, &lb_id, None)?;
    super::options::check_listener(&cx, &req, &protocol, &vip_of(&w, &lb_id))?;
    let barbican = crate::barbican::secrets_prefix(&sim);
    super::tls::check(&cx, &w, &barbican, &req, &protocol, false)?;
    if let Some(pool) =
        str_field(&req, "default_pool_id").filter(|p| !w.octavia.pools.contains_key(p))
    {
        return Err(cx.err(404, &format!("Pool {pool} not found.")));
    }
    let l = w
        .octavia
        .listeners
        .get_mut(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    update_meta(&mut l.meta, &req);
    if let Some(p) = req.get("default_pool_id") {
        l.default_pool_id = p.as_str().map(str::to_string);
    }
    if let Some(c) = req.get("connection_limit").and_then(Value::as_i64) {
        l.connection_limit = c;
    }
    l.options = super::options::listener_options(&req, l.options.clone());
    lifecycle::lock_tree(&mut w, &lb_id);
    let body = json!({"listener": views::listener(&w, &w.octavia.listeners[&id])});
    Ok(cx.ok(200, &body))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_listener", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let lb_id = w
        .octavia
        .listeners
        .get(&id)
        .map(|l| l.lb_id.clone())
        .ok_or_else(|| not_found(&cx, &id))?;
    super::envelope::ensure_mutable(&cx, &w, &lb_id, None)?;
    if let Some(l) = w.octavia.listeners.get_mut(&id) {
        l.meta.prov = Prov::PendingDelete;
    }
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.empty(204))
}
