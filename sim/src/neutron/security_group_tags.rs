//! Tags of Neutron security groups (`standard-attr-tag`): list, replace all
//! (`PUT …/tags`, answered in the request's order), add one (201, `null`), remove one
//! (404 `TagNotFound` if missing) and remove all. Each change moves the group's
//! revision. Tags cannot be given at create (`security_groups.rs` refuses them, as
//! Neutron does). Tagging a group that does not exist is a 500 on the real Neutron,
//! and so it is here (`neutron-security-groups.md`).
//!
//! Deliberately not here: `GET …/tags/{tag}` and tag length limits. Address groups
//! and rules have no tags on Neutron: their paths are not routed (404 `HTTPNotFound`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, put};
use serde_json::{Value, json};

use super::envelope::{Cx, enter};
use super::security_groups;
use crate::model::SecurityGroup;
use crate::state::Sim;
use crate::wire::{self, py_str};
use crate::world::World;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route(
        "/network/v2.0/security-groups/{id}/tags",
        get(list).put(replace).delete(clear),
    )
    .route(
        "/network/v2.0/security-groups/{id}/tags/{tag}",
        put(add).delete(remove),
    )
}

/// The group to change, or the real Neutron's 500 when there is none.
fn group<'w>(cx: &Cx, w: &'w mut World, id: &str) -> Result<&'w mut SecurityGroup, Response> {
    w.security_group_mut(id).ok_or_else(|| {
        let msg = "Request Failed: internal server error while processing your request.";
        cx.err(500, "HTTPInternalServerError", msg)
    })
}

/// `validate_list_of_unique_strings` of the body's `tags`; a refusal is `InvalidInput`.
fn tags(cx: &Cx, v: &Value) -> Result<Vec<String>, Response> {
    let refuse = |why: String| {
        let msg = format!("Invalid input for operation: {why}.");
        cx.err(400, "InvalidInput", &msg)
    };
    let Some(items) = v.as_array() else {
        return Err(refuse(format!("'{}' is not a list", py_str(v))));
    };
    let tags: Vec<String> = items.iter().map(py_str).collect();
    let mut twice: Vec<&str> = Vec::new();
    for (i, t) in tags.iter().enumerate() {
        if tags[..i].contains(t) && !twice.contains(&t.as_str()) {
            twice.push(t);
        }
    }
    if !twice.is_empty() {
        let why = format!("Duplicate items in the list: '{}'", twice.join(", "));
        return Err(refuse(why));
    }
    Ok(tags)
}

async fn list(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_security_group_tags", &headers).await?;
    let w = sim.world_of(&cx.project);
    let g = w.security_groups.iter().find(|g| g.id == id);
    let g = g.ok_or_else(|| security_groups::not_found(&cx, &id))?;
    let mut tags = g.tags.clone();
    tags.sort();
    Ok(cx.ok(200, &json!({"tags": tags})))
}

async fn replace(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "set_security_group_tags", &headers).await?;
    let req = wire::parse_body(&bytes).unwrap_or(Value::Null);
    let wanted = tags(&cx, req.get("tags").unwrap_or(&Value::Null))?;
    let mut w = sim.world_of(&cx.project);
    let g = group(&cx, &mut w, &id)?;
    g.tags = wanted;
    g.touch();
    Ok(cx.ok(200, &json!({"tags": g.tags})))
}

async fn clear(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "clear_security_group_tags", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let g = group(&cx, &mut w, &id)?;
    if !g.tags.is_empty() {
        g.tags.clear();
        g.touch();
    }
    Ok(cx.empty())
}

async fn add(
    State(sim): State<Sim>,
    Path((id, tag)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "add_security_group_tag", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let g = group(&cx, &mut w, &id)?;
    if !g.tags.contains(&tag) {
        g.tags.push(tag);
        g.touch();
    }
    Ok(cx.ok(201, &Value::Null))
}

async fn remove(
    State(sim): State<Sim>,
    Path((id, tag)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "remove_security_group_tag", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    let g = group(&cx, &mut w, &id)?;
    let Some(i) = g.tags.iter().position(|t| *t == tag) else {
        let msg = format!("Tag {tag} could not be found.");
        return Err(cx.err(404, "TagNotFound", &msg));
    };
    g.tags.remove(i);
    g.touch();
    Ok(cx.empty())
}
