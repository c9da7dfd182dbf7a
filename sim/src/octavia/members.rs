//! Pool members: list, show, create and delete one, and the batch update
//! `PUT /pools/{id}/members` that makes the body the pool's full member set (matched
//! by address and port; `additive_only=true` keeps unlisted members).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::envelope::{
    Cx, enter, list_answer, mandatory, new_meta, str_field, u64_field, update_meta,
};
use super::{schema, views};
use crate::query::Params;
use crate::state::Sim;
use crate::wire;
use crate::world::World;
use crate::world::octavia::{Member, Pool, Prov};
use crate::world::octavia_lifecycle as lifecycle;
use crate::world::octavia_lifecycle::Operating;

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(
        &format!("{p}/pools/{{id}}/members"),
        get(list).post(create).put(replace),
    )
    .route(
        &format!("{p}/pools/{{id}}/members/{{member}}"),
        get(get_one).put(update).delete(delete),
    )
}

fn pool_of<'a>(cx: &Cx, w: &'a World, id: &str) -> Result<&'a Pool, Response> {
    w.octavia
        .pools
        .get(id)
        .ok_or_else(|| super::envelope::pool_not_found(cx, id))
}

fn member_not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Member {id} not found."))
}

/// Fields of a member from a request (address and port are mandatory).
pub(super) fn fill(
    cx: &Cx,
    w: &mut World,
    req: &Map<String, Value>,
    old: Option<&Member>,
) -> Result<Member, Response> {
    let address = mandatory(cx, req, "address")?
        .as_str()
        .unwrap_or_default()
        .to_string();
    let protocol_port = mandatory(cx, req, "protocol_port")?
        .as_u64()
        .unwrap_or_default();
    let meta = match old {
        Some(m) => {
            let mut meta = m.meta.clone();
            update_meta(&mut meta, req);
            meta.name = str_field(req, "name").unwrap_or_default();
            meta
        }
        None => new_meta(w, req),
    };
    Ok(Member {
        meta,
        address,
        protocol_port,
        monitor_port: u64_field(req, "monitor_port"),
        monitor_address: str_field(req, "monitor_address"),
        weight: u64_field(req, "weight").unwrap_or(1),
        backup: req.get("backup").and_then(Value::as_bool).unwrap_or(false),
        subnet_id: str_field(req, "subnet_id").or_else(|| old.and_then(|m| m.subnet_id.clone())),
    })
}

/// Checks the tree is mutable, then locks it with the pool (and its listener) touched.
fn lock_pool(cx: &Cx, w: &mut World, pool_id: &str) -> Result<(), Response> {
    let pool = pool_of(cx, w, pool_id)?;
    let (lb_id, listener) = (pool.lb_id.clone(), pool.listener_id.clone());
    super::envelope::ensure_mutable(cx, w, &lb_id, Some(pool_id))?;
    if let Some(p) = w.octavia.pools.get_mut(pool_id) {
        lifecycle::touch(&mut p.meta.prov);
    }
    if let Some(l) = listener.and_then(|l| w.octavia.listeners.get_mut(&l)) {
        lifecycle::touch(&mut l.meta.prov);
    }
    lifecycle::lock_tree(w, &lb_id);
    Ok(())
}

async fn list(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_members", &headers).await?;
    let w = sim.world_of(&cx.project);
    let pool = pool_of(&cx, &w, &id)?;
    let op = Operating::of(&w);
    let items: Vec<Value> = pool
        .members
        .iter()
        .map(|m| views::member(&op, pool, m))
        .collect();
    drop(w);
    list_answer(&cx, "members", items, &q)
}

async fn get_one(
    State(sim): State<Sim>,
    Path((id, member)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_member", &headers).await?;
    let w = sim.world_of(&cx.project);
    let pool = pool_of(&cx, &w, &id)?;
    let m = pool
        .members
        .iter()
        .find(|m| m.meta.id == member)
        .ok_or_else(|| member_not_found(&cx, &member))?;
    Ok(cx.ok(
        200,
        &json!({"member": views::member(&Operating::of(&w), pool, m)}),
    ))
}

async fn create(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_member", &headers).await?;
    let req = super::envelope::body(&cx, &bytes, "member")?;
    schema::check(&cx, schema::MEMBER_POST, &req)?;
    let mut w = sim.world_of(&cx.project);
    let member = fill(&cx, &mut w, &req, None)?;
    let pool = pool_of(&cx, &w, &id)?;
    if pool
        .members
        .iter()
        .any(|m| m.address == member.address && m.protocol_port == member.protocol_port)
    {
        let msg = format!(
            "Another member on this pool is already using ip {} on protocol_port {}",
            member.address, member.protocol_port
        );
        return Err(cx.err(409, &msg));
    }
    lock_pool(&cx, &mut w, &id)?;
    let pool = pool_of(&cx, &w, &id)?;
    let body = json!({"member": views::member(&Operating::of(&w), pool, &member)});
    if let Some(p) = w.octavia.pools.get_mut(&id) {
        p.members.push(member);
    }
    Ok(cx.ok(201, &body))
}

async fn update(
    State(sim): State<Sim>,
    Path((id, member)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_member", &headers).await?;
    let mut req = super::envelope::body(&cx, &bytes, "member")?;
    schema::check(&cx, schema::MEMBER_PUT, &req)?;
    let mut w = sim.world_of(&cx.project);
    let old = pool_of(&cx, &w, &id)?
        .members
        .iter()
        .find(|m| m.meta.id == member)
        .cloned();
    let old = old.ok_or_else(|| member_not_found(&cx, &member))?;
    // Address and port cannot change; unset fields keep their values.
    req.insert("address".into(), json!(old.address));
    req.insert("protocol_port".into(), json!(old.protocol_port));
    for (k, v) in [
        ("name", json!(old.meta.name)),
        ("weight", json!(old.weight)),
        ("monitor_port", json!(old.monitor_port)),
    ] {
        req.entry(k).or_insert(v);
    }
    let updated = fill(&cx, &mut w, &req, Some(&old))?;
    lock_pool(&cx, &mut w, &id)?;
    let pool = pool_of(&cx, &w, &id)?;
    let body = json!({"member": views::member(&Operating::of(&w), pool, &updated)});
    if let Some(m) = w
        .octavia
        .pools
        .get_mut(&id)
        .and_then(|p| p.members.iter_mut().find(|m| m.meta.id == member))
    {
        *m = updated;
    }
    Ok(cx.ok(200, &body))
}

async fn delete(
    State(sim): State<Sim>,
    Path((id, member)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_member", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    if !pool_of(&cx, &w, &id)?
        .members
        .iter()
        .any(|m| m.meta.id == member)
    {
        return Err(member_not_found(&cx, &member));
    }
    lock_pool(&cx, &mut w, &id)?;
    if let Some(m) = w
        .octavia
        .pools
        .get_mut(&id)
        .and_then(|p| p.members.iter_mut().find(|m| m.meta.id == member))
    {
        m.meta.prov = Prov::PendingDelete;
    }
    Ok(cx.empty(204))
}

/// The batch update: 202 with no body; every member of the pool goes pending.
async fn replace(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "replace_members", &headers).await?;
    let additive = q
        .iter()
        .any(|(k, v)| k == "additive_only" && v.eq_ignore_ascii_case("true"));
    let req = wire::parse_body(&bytes).ok_or_else(|| cx.err(400, "Invalid JSON body"))?;
    let wanted = req.get("members").and_then(Value::as_array).ok_or_else(|| cx.err(400, "Invalid input for field/attribute members. Value: 'None'. Mandatory field missing."))?;
    for item in wanted {
        schema::check(
            &cx,
            schema::MEMBER_POST,
            item.as_object().unwrap_or(&Map::new()),
        )?;
    }
    let mut w = sim.world_of(&cx.project);
    let current = pool_of(&cx, &w, &id)?.members.clone();
    let mut next = Vec::new();
    for item in wanted {
        let req = item.as_object().cloned().unwrap_or_default();
        let old = current.iter().find(|m| {
            Some(m.address.as_str()) == item["address"].as_str()
                && Some(m.protocol_port) == item["protocol_port"].as_u64()
        });
        let mut member = fill(&cx, &mut w, &req, old)?;
        if old.is_none() {
            member.meta.prov = Prov::PendingCreate;
        }
        next.push(member);
    }
    for old in &current {
        if !next.iter().any(|m| m.meta.id == old.meta.id) {
            let mut kept = old.clone();
            kept.meta.prov = if additive {
                Prov::PendingUpdate
            } else {
                Prov::PendingDelete
            };
            next.push(kept);
        }
    }
    lock_pool(&cx, &mut w, &id)?;
    if let Some(p) = w.octavia.pools.get_mut(&id) {
        p.members = next;
    }
    Ok(cx.empty(202))
}
