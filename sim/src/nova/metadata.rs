//! Server metadata (`/servers/{id}/metadata[/{key}]`: replace, merge, one key; bodies
//! checked by `schema.rs`, then the `metadata_items` quota) and server tags
//! (`/servers/{id}/tags[/{tag}]`, 2.26+), with the recorded status codes.

use std::collections::BTreeMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use chrono::Utc;
use serde_json::{Value, json};

use super::envelope::{Cx, body, enter, not_found_server};
use super::schema;
use crate::state::Sim;

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(
        &format!("{p}/servers/{{id}}/metadata"),
        get(get_all).put(replace).post(merge),
    )
    .route(
        &format!("{p}/servers/{{id}}/metadata/{{key}}"),
        get(get_key).put(put_key).delete(delete_key),
    )
    .route(
        &format!("{p}/servers/{{id}}/tags"),
        get(tags).put(replace_tags).delete(delete_tags),
    )
    .route(
        &format!("{p}/servers/{{id}}/tags/{{tag}}"),
        get(check_tag).put(add_tag).delete(delete_tag),
    )
}

/// Nova's default `metadata_items` quota (the recorded `quota_set`), counted over the
/// server's whole metadata after the write.
const METADATA_ITEMS: usize = 128;

/// The metadata quota: over it Nova answers 403 `MetadataLimitExceeded`, for server
/// create and metadata writes alike.
pub(super) fn quota(cx: &Cx, items: usize) -> Result<(), Response> {
    if items <= METADATA_ITEMS {
        return Ok(());
    }
    let msg = format!("Maximum number of metadata items exceeds {METADATA_ITEMS}");
    Err(cx.err(403, &msg))
}

/// The string map under `field` of a body that passed its schema.
fn string_map(req: &Value, field: &str) -> BTreeMap<String, String> {
    let items = req
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten();
    items
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

async fn get_all(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_server_metadata", &headers).await?;
    let w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    Ok(cx.ok(200, &json!({"metadata": s.metadata})))
}

async fn write_all(
    sim: Sim,
    id: String,
    headers: HeaderMap,
    bytes: Bytes,
    merge: bool,
) -> Result<Response, Response> {
    let cx = enter(&sim, "set_server_metadata", &headers).await?;
    let req = body(&cx, &bytes)?;
    schema::metadata_set(&req).map_err(|m| cx.err(400, &m))?;
    let new = string_map(&req, "metadata");
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    let kept = s.metadata.keys().filter(|k| merge && !new.contains_key(*k));
    quota(&cx, kept.count() + new.len())?;
    if !merge {
        s.metadata.clear();
    }
    s.metadata.extend(new);
    s.updated = Utc::now();
    Ok(cx.ok(200, &json!({"metadata": s.metadata})))
}

async fn replace(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    write_all(sim, id, headers, bytes, false).await
}

async fn merge(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    write_all(sim, id, headers, bytes, true).await
}

async fn get_key(
    State(sim): State<Sim>,
    Path((id, key)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_server_metadata", &headers).await?;
    let w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    let v = s
        .metadata
        .get(&key)
        .ok_or_else(|| cx.err(404, "Metadata item was not found"))?;
    Ok(cx.ok(200, &json!({"meta": {key: v}})))
}

async fn put_key(
    State(sim): State<Sim>,
    Path((id, key)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "set_server_metadata_item", &headers).await?;
    let req = body(&cx, &bytes)?;
    schema::metadata_item(&req).map_err(|m| cx.err(400, &m))?;
    let meta = string_map(&req, "meta");
    if !meta.contains_key(&key) {
        return Err(cx.err(400, "Request body and URI mismatch"));
    }
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    let after = s.metadata.len() + usize::from(!s.metadata.contains_key(&key));
    quota(&cx, after)?;
    s.metadata.extend(meta.clone());
    s.updated = Utc::now();
    Ok(cx.ok(200, &json!({ "meta": meta })))
}

async fn delete_key(
    State(sim): State<Sim>,
    Path((id, key)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_server_metadata_item", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    s.metadata
        .remove(&key)
        .ok_or_else(|| cx.err(404, "Metadata item was not found"))?;
    Ok(cx.empty(204))
}

fn need_tags(cx: &Cx) -> Result<(), Response> {
    match cx.at_least(26) {
        true => Ok(()),
        false => Err(cx.err(404, "The resource could not be found.")),
    }
}

async fn tags(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_server_tags", &headers).await?;
    need_tags(&cx)?;
    let w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    Ok(cx.ok(200, &json!({"tags": s.tags})))
}

async fn replace_tags(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "replace_server_tags", &headers).await?;
    need_tags(&cx)?;
    let req = body(&cx, &bytes)?;
    let Some(list) = req.get("tags").and_then(Value::as_array) else {
        return Err(cx.err(400, "'tags' is a required property"));
    };
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    s.tags = list
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    Ok(cx.ok(200, &json!({"tags": s.tags})))
}

async fn delete_tags(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_server_tags", &headers).await?;
    need_tags(&cx)?;
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    s.tags.clear();
    Ok(cx.empty(204))
}

async fn check_tag(
    State(sim): State<Sim>,
    Path((id, tag)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "check_server_tag", &headers).await?;
    need_tags(&cx)?;
    let w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    match s.tags.contains(&tag) {
        true => Ok(cx.empty(204)),
        false => Err(cx.err(404, &format!("Server {id} has no tag '{tag}'"))),
    }
}

async fn add_tag(
    State(sim): State<Sim>,
    Path((id, tag)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "add_server_tag", &headers).await?;
    need_tags(&cx)?;
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    if !s.tags.insert(tag.clone()) {
        return Ok(cx.empty(204));
    }
    let location = format!("{}/compute/v2.1/servers/{id}/tags/{tag}", cx.base);
    let mut resp = cx.empty(201);
    if let Ok(v) = location.parse() {
        resp.headers_mut().insert("Location", v);
    }
    resp.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("text/html; charset=UTF-8"),
    );
    Ok(resp)
}

async fn delete_tag(
    State(sim): State<Sim>,
    Path((id, tag)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_server_tag", &headers).await?;
    need_tags(&cx)?;
    let mut w = sim.world_of(&cx.project);
    let s = w
        .servers
        .get_mut(&id)
        .ok_or_else(|| not_found_server(&cx, &id))?;
    match s.tags.remove(&tag) {
        true => Ok(cx.empty(204)),
        false => Err(cx.err(404, &format!("Instance {id} has no tag '{tag}'"))),
    }
}
