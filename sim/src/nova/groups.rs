//! Server groups (`/os-server-groups`): create (200, `policy`/`rules` from 2.64,
//! `policies` before; body checked by `schema.rs`), show, list (`limit`/`offset`),
//! delete (204). Membership is maintained by server create/delete; the policy is
//! enforced in `scheduler.rs`.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::envelope::{Cx, body, enter};
use super::schema;
use crate::model::ServerGroup;
use crate::seed::USER_ID;
use crate::state::Sim;

fn view(cx: &Cx, g: &ServerGroup) -> Value {
    let mut v = json!({"id": g.id, "name": g.name, "members": g.members});
    if cx.at_least(64) {
        v["policy"] = json!(g.policy);
        v["rules"] = match g.max_server_per_host {
            Some(n) => json!({ "max_server_per_host": n }),
            None => json!({}),
        };
    } else {
        v["policies"] = json!([g.policy]);
        v["metadata"] = json!({});
    }
    if cx.at_least(13) {
        v["project_id"] = json!(cx.project);
        v["user_id"] = json!(USER_ID);
    }
    v
}

fn not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Instance group {id} could not be found."))
}

/// Policy and `max_server_per_host` of a body that passed its schema, in the request's
/// microversion dialect; rules are Nova's own check after the schema.
fn policy_of(cx: &Cx, g: &Value) -> Result<(String, Option<u64>), Response> {
    let policy = match cx.at_least(64) {
        true => &g["policy"],
        false => &g["policies"][0],
    };
    let policy = policy.as_str().unwrap_or_default().to_string();
    let max = g
        .pointer("/rules/max_server_per_host")
        .filter(|_| cx.at_least(64));
    let max = match max {
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        Some(n) => n.as_u64(),
        None => None,
    };
    if max.is_some() && policy != "anti-affinity" {
        return Err(cx.err(400, "Only anti-affinity policy supports rules."));
    }
    Ok((policy, max))
}

pub(super) async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_server_group", &headers).await?;
    let req = body(&cx, &bytes)?;
    schema::server_group(cx.minor, &req).map_err(|m| cx.err(400, &m))?;
    let g = &req["server_group"];
    let name = g["name"].as_str().unwrap_or_default();
    let (policy, max_server_per_host) = policy_of(&cx, g)?;
    let mut w = sim.world_of(&cx.project);
    let group = ServerGroup {
        id: w.uuid(),
        seq: w.next_seq(),
        name: name.to_string(),
        policy,
        max_server_per_host,
        members: vec![],
    };
    let body = json!({"server_group": view(&cx, &group)});
    w.groups.insert(group.id.clone(), group);
    Ok(cx.ok(200, &body))
}

pub(super) async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_server_group", &headers).await?;
    let w = sim.world_of(&cx.project);
    let g = w.groups.get(&id).ok_or_else(|| not_found(&cx, &id))?;
    Ok(cx.ok(200, &json!({"server_group": view(&cx, g)})))
}

pub(super) async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Vec<(String, String)>>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_server_groups", &headers).await?;
    let num = |k: &str| {
        q.iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.parse::<usize>().ok())
    };
    let w = sim.world_of(&cx.project);
    let mut groups: Vec<&ServerGroup> = w.groups.values().collect();
    groups.sort_by_key(|g| g.seq);
    let limit = num("limit")
        .unwrap_or(w.page_size_max())
        .min(w.page_size_max());
    let items: Vec<Value> = groups
        .iter()
        .skip(num("offset").unwrap_or(0))
        .take(limit)
        .map(|g| view(&cx, g))
        .collect();
    Ok(cx.ok(200, &json!({ "server_groups": items })))
}

pub(super) async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_server_group", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    w.groups.remove(&id).ok_or_else(|| not_found(&cx, &id))?;
    for s in w
        .servers
        .values_mut()
        .filter(|s| s.group.as_deref() == Some(id.as_str()))
    {
        s.group = None;
    }
    Ok(cx.empty(204))
}
