//! Health monitors: create (one per pool), show, list, update, delete.

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
use crate::world::octavia::{Monitor, Prov};
use crate::world::octavia_lifecycle as lifecycle;

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(&format!("{p}/healthmonitors"), get(list).post(create))
        .route(
            &format!("{p}/healthmonitors/{{id}}"),
            get(get_one).put(update).delete(delete),
        )
}

fn not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Health Monitor {id} not found."))
}

/// A new health monitor of `pool_id` from a validated request.
pub(super) fn build(w: &mut World, pool_id: &str, req: &Map<String, Value>) -> Monitor {
    let kind = str_field(req, "type").unwrap_or_default();
    let num = |f: &str| u64_field(req, f).unwrap_or_default();
    let http = kind.starts_with("HTTP");
    let http_field = |f: &str, default: &str| {
        http.then(|| str_field(req, f).unwrap_or_else(|| default.to_string()))
    };
    Monitor {
        meta: new_meta(w, req),
        pool_id: pool_id.to_owned(),
        delay: num("delay"),
        timeout: num("timeout"),
        max_retries: num("max_retries"),
        max_retries_down: u64_field(req, "max_retries_down").unwrap_or(3),
        http_method: http_field("http_method", "GET"),
        url_path: http_field("url_path", "/"),
        expected_codes: http_field("expected_codes", "200"),
        kind,
    }
}

/// The one rule across fields (ranges are the schema's).
pub(super) fn check_timing(cx: &Cx, delay: u64, timeout: u64) -> Result<(), Response> {
    if timeout > delay {
        return Err(cx.err(400, &format!("Validation failure: The request delay value {delay} should be larger than the request timeout value {timeout}.")));
    }
    Ok(())
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_health_monitor", &headers).await?;
    let req = body(&cx, &bytes, "healthmonitor")?;
    schema::check(&cx, schema::MONITOR_POST, &req)?;
    let pool_id = str_field(&req, "pool_id").unwrap_or_default();
    let num = |f: &str| u64_field(&req, f).unwrap_or_default();
    check_timing(&cx, num("delay"), num("timeout"))?;
    let mut w = sim.world_of(&cx.project);
    let pool = w
        .octavia
        .pools
        .get(&pool_id)
        .ok_or_else(|| super::envelope::pool_not_found(&cx, &pool_id))?;
    if pool.monitor_id.is_some() {
        return Err(cx.err(409, &format!("Pool {pool_id} already has a health monitor")));
    }
    let lb_id = pool.lb_id.clone();
    super::envelope::ensure_mutable(&cx, &w, &lb_id, Some(&pool_id))?;
    let monitor = build(&mut w, &pool_id, &req);
    if let Some(p) = w.octavia.pools.get_mut(&pool_id) {
        p.monitor_id = Some(monitor.meta.id.clone());
        lifecycle::touch(&mut p.meta.prov);
    }
    let body = json!({"healthmonitor": views::monitor(&w, &monitor)});
    w.octavia.monitors.insert(monitor.meta.id.clone(), monitor);
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.ok(201, &body))
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_health_monitor", &headers).await?;
    let w = sim.world_of(&cx.project);
    let m = w
        .octavia
        .monitors
        .get(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    Ok(cx.ok(200, &json!({"healthmonitor": views::monitor(&w, m)})))
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_health_monitors", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut all: Vec<&Monitor> = w.octavia.monitors.values().collect();
    all.sort_by_key(|m| m.meta.seq);
    let items: Vec<Value> = all.into_iter().map(|m| views::monitor(&w, m)).collect();
    drop(w);
    list_answer(&cx, "healthmonitors", items, &q)
}

/// The monitor's pool and load balancer, checked mutable.
fn owners(cx: &Cx, w: &World, id: &str) -> Result<(String, String), Response> {
    let m = w
        .octavia
        .monitors
        .get(id)
        .ok_or_else(|| not_found(cx, id))?;
    let lb_id = w
        .octavia
        .pools
        .get(&m.pool_id)
        .map(|p| p.lb_id.clone())
        .unwrap_or_default();
    super::envelope::ensure_mutable(cx, w, &lb_id, Some(&m.pool_id))?;
    Ok((m.pool_id.clone(), lb_id))
}

fn apply(m: &mut Monitor, req: &Map<String, Value>) {
    update_meta(&mut m.meta, req);
    let set = |target: &mut u64, f: &str| {
        if let Some(v) = u64_field(req, f) {
            *target = v;
        }
    };
    set(&mut m.delay, "delay");
    set(&mut m.timeout, "timeout");
    set(&mut m.max_retries, "max_retries");
    set(&mut m.max_retries_down, "max_retries_down");
    for (target, f) in [
        (&mut m.http_method, "http_method"),
        (&mut m.url_path, "url_path"),
        (&mut m.expected_codes, "expected_codes"),
    ] {
        if let Some(v) = str_field(req, f) {
            *target = Some(v);
        }
    }
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_health_monitor", &headers).await?;
    let req = body(&cx, &bytes, "healthmonitor")?;
    schema::check(&cx, schema::MONITOR_PUT, &req)?;
    let mut w = sim.world_of(&cx.project);
    let (pool_id, lb_id) = owners(&cx, &w, &id)?;
    let m = w
        .octavia
        .monitors
        .get_mut(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    let mut candidate = m.clone();
    apply(&mut candidate, &req);
    check_timing(&cx, candidate.delay, candidate.timeout)?;
    *m = candidate;
    if let Some(p) = w.octavia.pools.get_mut(&pool_id) {
        lifecycle::touch(&mut p.meta.prov);
    }
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.ok(
        200,
        &json!({"healthmonitor": views::monitor(&w, &w.octavia.monitors[&id])}),
    ))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_health_monitor", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let (pool_id, lb_id) = owners(&cx, &w, &id)?;
    if let Some(m) = w.octavia.monitors.get_mut(&id) {
        m.meta.prov = Prov::PendingDelete;
    }
    if let Some(p) = w.octavia.pools.get_mut(&pool_id) {
        lifecycle::touch(&mut p.meta.prov);
    }
    lifecycle::lock_tree(&mut w, &lb_id);
    Ok(cx.empty(204))
}
