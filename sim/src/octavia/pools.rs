//! Pools: create (on a listener, becoming its default pool, or on a load balancer),
//! show, list, update, delete (members and health monitor go with it).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::envelope::{
    Cx, body, enter, list_answer, new_meta, pool_not_found, str_field, update_meta,
};
use super::{schema, views};
use crate::query::Params;
use crate::state::Sim;
use crate::world::World;
use crate::world::octavia::{Pool, Prov};
use crate::world::octavia_lifecycle as lifecycle;
use crate::world::octavia_lifecycle::Operating;

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(&format!("{p}/pools"), get(list).post(create))
        .route(
            &format!("{p}/pools/{{id}}"),
            get(get_one).put(update).delete(delete),
        )
}

/// A new pool of `lb_id` (default pool of `listener_id`) from a validated request,
/// without members or monitor.
pub(super) fn build(
    w: &mut World,
    lb_id: &str,
    listener_id: Option<String>,
    req: &Map<String, Value>,
) -> Pool {
    Pool {
        meta: new_meta(w, req),
        lb_id: lb_id.to_owned(),
        listener_id,
        protocol: str_field(req, "protocol").unwrap_or_default(),
        lb_algorithm: str_field(req, "lb_algorithm").unwrap_or_default(),
        session_persistence: req
            .get("session_persistence")
            .filter(|v| !v.is_null())
            .cloned(),
        members: vec![],
        monitor_id: None,
    }
}

/// The load balancer a new pool belongs to (through its listener, if given).
fn owner(
    cx: &Cx,
    w: &World,
    listener_id: Option<&str>,
    lb_id: Option<String>,
) -> Result<String, Response> {
    match (listener_id, lb_id) {
        (Some(l), _) => {
            let listener = w
                .octavia
                .listeners
                .get(l)
                .ok_or_else(|| cx.err(404, &format!("Listener {l} not found.")))?;
            if listener.default_pool_id.is_some() {
                return Err(cx.err(409, &format!("Listener {l} already has a default pool.")));
            }
            Ok(listener.lb_id.clone())
        }
        (None, Some(lb)) if w.octavia.lbs.contains_key(&lb) => Ok(lb),
        (None, Some(lb)) => Err(super::envelope::lb_not_found(cx, &lb)),
        (None, None) => Err(cx.err(
            400,
            "Validation failure: loadbalancer_id or listener_id must be specified.",
        )),
    }
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_pool", &headers).await?;
    let req = body(&cx, &bytes, "pool")?;
    schema::check(&cx, schema::POOL_POST, &req)?;
    let listener_id = str_field(&req, "listener_id");
    let mut w = sim.world_of(&cx.project);
    let lb_id = owner(
        &cx,
        &w,
        listener_id.as_deref(),
        str_field(&req, "loadbalancer_id"),
    )?;
    let listener_protocol = listener_id
        .as_ref()
        .and_then(|l| w.octavia.listeners.get(l))
        .map(|l| l.protocol.clone());
    super::options::check_pool(&cx, &req, listener_protocol.as_deref())?;
    super::envelope::ensure_mutable(&cx, &w, &lb_id, None)?;
    let pool = build(&mut w, &lb_id, listener_id.clone(), &req);
    if let Some(l) = listener_id.and_then(|l| w.octavia.listeners.get_mut(&l)) {
        l.default_pool_id = Some(pool.meta.id.clone());
        lifecycle::touch(&mut l.meta.prov);
    }
    let body = json!({"pool": views::pool(&Operating::of(&w), &pool)});
    w.octavia.pools.insert(pool.meta.id.clone(), pool);
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.ok(201, &body))
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_pool", &headers).await?;
    let w = sim.world_of(&cx.project);
    let p = w
        .octavia
        .pools
        .get(&id)
        .ok_or_else(|| pool_not_found(&cx, &id))?;
    Ok(cx.ok(200, &json!({"pool": views::pool(&Operating::of(&w), p)})))
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_pools", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut all: Vec<&Pool> = w.octavia.pools.values().collect();
    all.sort_by_key(|p| p.meta.seq);
    let op = Operating::of(&w);
    let items: Vec<Value> = all.into_iter().map(|p| views::pool(&op, p)).collect();
    drop(w);
    list_answer(&cx, "pools", items, &q)
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_pool", &headers).await?;
    let req = body(&cx, &bytes, "pool")?;
    schema::check(&cx, schema::POOL_PUT, &req)?;
    let algorithm = str_field(&req, "lb_algorithm");
    let mut w = sim.world_of(&cx.project);
    let lb_id = w
        .octavia
        .pools
        .get(&id)
        .map(|p| p.lb_id.clone())
        .ok_or_else(|| pool_not_found(&cx, &id))?;
    super::envelope::ensure_mutable(&cx, &w, &lb_id, Some(&id))?;
    let p = w
        .octavia
        .pools
        .get_mut(&id)
        .ok_or_else(|| pool_not_found(&cx, &id))?;
    super::options::check_persistence(&cx, &req, &p.protocol)?;
    update_meta(&mut p.meta, &req);
    if let Some(a) = algorithm {
        p.lb_algorithm = a;
    }
    if let Some(sp) = req.get("session_persistence") {
        p.session_persistence = (!sp.is_null()).then(|| sp.clone());
    }
    lifecycle::lock_tree(&mut w, &lb_id);
    let body = json!({"pool": views::pool(&Operating::of(&w), &w.octavia.pools[&id])});
    Ok(cx.ok(200, &body))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_pool", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let lb_id = w
        .octavia
        .pools
        .get(&id)
        .map(|p| p.lb_id.clone())
        .ok_or_else(|| pool_not_found(&cx, &id))?;
    super::envelope::ensure_mutable(&cx, &w, &lb_id, Some(&id))?;
    if let Some(p) = w.octavia.pools.get_mut(&id) {
        p.meta.prov = Prov::PendingDelete;
    }
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.empty(204))
}
