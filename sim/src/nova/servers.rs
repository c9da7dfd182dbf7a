//! Server show, list (summary and detail, with Nova's filters and marker pagination),
//! delete (204, then `deleting` until it is gone) and update (name, description; body
//! checked by `schema.rs`).

use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Value, json};

use super::envelope::{Cx, body, enter, not_found_server};
use super::{schema, view};
use crate::model::Server;
use crate::query::{encode_query, split_list};
use crate::state::Sim;
use crate::world::World;

type Params = Query<Vec<(String, String)>>;

pub(super) async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_server", &headers).await?;
    let w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    Ok(cx.ok(200, &json!({"server": view::server(&cx, &w, s)})))
}

pub(super) async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Params,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_servers", &headers).await?;
    let w = sim.world_of(&cx.project);
    page(&cx, &w, &q, "servers", &|s| view::summary(&cx, s))
}

pub(super) async fn list_detail(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Params,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_servers", &headers).await?;
    let w = sim.world_of(&cx.project);
    page(&cx, &w, &q, "servers/detail", &|s| view::server(&cx, &w, s))
}

fn param<'a>(q: &'a [(String, String)], key: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Whether a server passes Nova's filters (`name` is a regular expression searched
/// anywhere in the name; `tags` = all of, `tags-any` = one of).
fn matches(s: &Server, q: &[(String, String)], name_re: Option<&regex::Regex>) -> bool {
    if let Some(re) = name_re
        && !re.is_match(&s.name)
    {
        return false;
    }
    let has = |t: &str| s.tags.contains(t);
    let checks = [
        param(q, "tags").is_none_or(|v| split_list(v).iter().all(|t| has(t))),
        param(q, "tags-any").is_none_or(|v| split_list(v).iter().any(|t| has(t))),
        param(q, "not-tags").is_none_or(|v| !split_list(v).iter().all(|t| has(t))),
        param(q, "not-tags-any").is_none_or(|v| !split_list(v).iter().any(|t| has(t))),
        param(q, "status").is_none_or(|v| v.eq_ignore_ascii_case(s.status.as_str())),
    ];
    checks.iter().all(|c| *c)
}

fn page(
    cx: &Cx,
    w: &World,
    q: &[(String, String)],
    path: &str,
    render: &dyn Fn(&Server) -> Value,
) -> Result<Response, Response> {
    let name_re = match param(q, "name") {
        Some(n) => Some(
            regex::Regex::new(n)
                .or_else(|_| regex::Regex::new(&regex::escape(n)))
                .map_err(|_| cx.err(400, "Invalid name filter"))?,
        ),
        None => None,
    };
    let mut all: Vec<&Server> = w
        .servers
        .values()
        .filter(|s| matches(s, q, name_re.as_ref()))
        .collect();
    all.sort_by_key(|s| std::cmp::Reverse(s.seq));
    let start = match param(q, "marker") {
        Some(m) => all
            .iter()
            .position(|s| s.id == m)
            .map(|i| i + 1)
            .ok_or_else(|| cx.err(400, &format!("marker [{m}] not found")))?,
        None => 0,
    };
    let max = w.page_size_max();
    let limit = match param(q, "limit") {
        Some(l) => l.parse::<usize>().map_err(|_| cx.err(400, &format!("Invalid input for query parameters limit. Value: {l}. '{l}' does not match '^[0-9]*$'")))?.min(max),
        None => max,
    };
    let items: Vec<&Server> = all.iter().skip(start).take(limit).copied().collect();
    let mut body = json!({"servers": items.iter().map(|s| render(s)).collect::<Vec<_>>()});
    if let Some(last) = items.last().filter(|_| items.len() == limit) {
        let mut params: Vec<(String, String)> =
            q.iter().filter(|(k, _)| k != "marker").cloned().collect();
        params.push(("marker".into(), last.id.clone()));
        params.sort();
        let href = format!("{}/compute/v2.1/{path}?{}", cx.base, encode_query(&params));
        body["servers_links"] = json!([{"rel": "next", "href": href}]);
    }
    Ok(cx.ok(200, &body))
}

pub(super) async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_server", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let until = Instant::now() + w.build_delay;
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    if !s.deleting {
        s.deleting = true;
        s.until = Some(until);
        w.schedule(until);
    }
    Ok(cx.empty(204))
}

pub(super) async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_server", &headers).await?;
    let req = body(&cx, &bytes)?;
    schema::update(cx.minor, &req).map_err(|m| cx.err(400, &m))?;
    let fields = req
        .get("server")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    if let Some(name) = fields.get("name").and_then(Value::as_str) {
        s.name = name.to_string();
    }
    if let Some(d) = fields.get("description") {
        s.description = d.as_str().map(str::to_string);
    }
    s.updated = Utc::now();
    let s = s.clone();
    Ok(cx.ok(200, &json!({"server": view::updated(&cx, &w, &s)})))
}
