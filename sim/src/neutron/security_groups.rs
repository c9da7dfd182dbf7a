//! Neutron security groups: create (with the two egress rules Neutron gives every new
//! group), list (filters on any attribute and tags, `fields`), show with their rules
//! (`fields` too), update (`name`, `description`, `stateful`) and delete (refused
//! while a port uses the group, and for the project's `default`, which can neither be
//! renamed nor have a namesake; a group's rules go with it, and so do the other
//! groups' rules that name it as their remote). Each project has its `default` group
//! (with Neutron's four rules) and the seeded `web`; tests add more through
//! `Simulator::add_security_group`. Ports name groups by ID only (`ports.rs`), so a
//! client resolves names here, as `GET /v2.0/security-groups?name=default` does.
//! Tags: `security_group_tags.rs`; rules: `security_group_rules.rs`; the real
//! answers: `neutron-security-groups.md`.
//!
//! Deliberately not here: sharing groups (RBAC), other projects' groups, the
//! admin's default rules (`security-group-default-rules`) and quotas.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, enter, list_answer, show};
use super::rule_body;
use super::schema::{self, Spec};
use crate::model::{SecurityGroup, SecurityGroupRule};
use crate::query::Params;
use crate::state::Sim;
use crate::wire;
use crate::world::security_groups::DEFAULT;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/security-groups", get(list).post(create))
        .route(
            "/network/v2.0/security-groups/{id}",
            get(get_one).put(update).delete(delete),
        )
}

const SPEC: Spec = Spec {
    required: &[],
    read_only: &[
        "id",
        "security_group_rules",
        "shared",
        "tags",
        "created_at",
        "updated_at",
        "revision_number",
    ],
    create_only: &[],
    modelled: &["name", "description", "stateful"],
    other: &["tenant_id", "project_id"],
};

/// A rule as a group's view nests it.
fn nested(project: &str, r: &SecurityGroupRule) -> Value {
    let mut v = rule_body::view(project, r);
    v["standard_attr_id"] = json!(r.seq);
    v["tags"] = json!([]);
    v
}

fn view(project: &str, g: &SecurityGroup) -> Value {
    let rules: Vec<Value> = g.rules.iter().map(|r| nested(project, r)).collect();
    let mut tags = g.tags.clone();
    tags.sort();
    json!({
        "id": g.id, "name": g.name, "stateful": g.stateful, "tenant_id": project,
        "project_id": project, "description": g.description, "shared": false,
        "security_group_rules": rules, "tags": tags, "created_at": wire::ts_z(g.created),
        "updated_at": wire::ts_z(g.updated), "revision_number": g.revision
    })
}

pub(super) fn not_found(cx: &Cx, id: &str) -> Response {
    let msg = format!("Security group {id} does not exist");
    cx.err(404, "SecurityGroupNotFound", &msg)
}

fn in_use(cx: &Cx, id: &str) -> Response {
    let msg = format!("Security Group {id} in use.");
    cx.err(409, "SecurityGroupInUse", &msg)
}

fn default_exists(cx: &Cx) -> Response {
    let msg = "Default security group already exists.";
    cx.err(409, "SecurityGroupDefaultAlreadyExists", msg)
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_security_groups", &headers).await?;
    let w = sim.world_of(&cx.project);
    let groups = w.security_groups.iter();
    let items: Vec<Value> = groups.map(|g| view(&cx.project, g)).collect();
    drop(w);
    list_answer(&cx, "security_groups", items, &q, &|_, _, _| None)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_security_group", &headers).await?;
    let w = sim.world_of(&cx.project);
    match w.security_groups.iter().find(|g| g.id == id) {
        Some(g) => Ok(show(&cx, "security_group", view(&cx.project, g), &q)),
        None => Err(not_found(&cx, &id)),
    }
}

/// What a create or update body sets.
struct GroupBody {
    name: Option<String>,
    description: Option<String>,
    stateful: Option<bool>,
}

fn check(cx: &Cx, req: &Map<String, Value>, create: bool) -> Result<GroupBody, Response> {
    schema::attributes(cx, req, &SPEC, create)?;
    let name = schema::text(cx, req, "name")?;
    let description = schema::text(cx, req, "description")?;
    let stateful = match req.get("stateful") {
        Some(v) => Some(schema::boolean(cx, v)?),
        None => None,
    };
    schema::unknown(cx, req, &SPEC)?;
    Ok(GroupBody {
        name,
        description,
        stateful,
    })
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_security_group", &headers).await?;
    let req = schema::body(&cx, &bytes, "security_group")?;
    let body = check(&cx, &req, true)?;
    let name = body.name.unwrap_or_default();
    if name == DEFAULT {
        return Err(default_exists(&cx));
    }
    let description = body.description.unwrap_or_default();
    let stateful = body.stateful.unwrap_or(true);
    let g = sim
        .world_of(&cx.project)
        .create_security_group(&name, &description, stateful);
    Ok(cx.ok(201, &json!({"security_group": view(&cx.project, &g)})))
}

/// Neutron's refusals of an update: `stateful` changed while a port uses the group,
/// a group renamed `default`, the `default` group renamed.
fn may_update(cx: &Cx, g: &SecurityGroup, body: &GroupBody, used: bool) -> Result<(), Response> {
    if body.stateful.is_some_and(|s| s != g.stateful) && used {
        return Err(in_use(cx, &g.id));
    }
    match body.name.as_deref() {
        Some(DEFAULT) if g.name != DEFAULT => Err(default_exists(cx)),
        Some(_) if g.name == DEFAULT => {
            let msg = "Updating default security group not allowed.";
            Err(cx.err(409, "SecurityGroupCannotUpdateDefault", msg))
        }
        _ => Ok(()),
    }
}

async fn update(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "update_security_group", &headers).await?;
    let req = schema::body(&cx, &bytes, "security_group")?;
    let body = check(&cx, &req, false)?;
    let mut w = sim.world_of(&cx.project);
    let used = w.security_group_in_use(&id);
    let g = w
        .security_group_mut(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    may_update(&cx, g, &body, used)?;
    if let Some(name) = body.name {
        g.name = name;
    }
    if let Some(description) = body.description {
        g.description = description;
    }
    g.stateful = body.stateful.unwrap_or(g.stateful);
    g.touch();
    Ok(cx.ok(200, &json!({"security_group": view(&cx.project, g)})))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_security_group", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    if w.security_group_in_use(&id) {
        return Err(in_use(&cx, &id));
    }
    let g = w.security_groups.iter().find(|g| g.id == id);
    let g = g.ok_or_else(|| not_found(&cx, &id))?;
    if g.name == DEFAULT {
        let msg = "Insufficient rights for removing default security group.";
        return Err(cx.err(409, "SecurityGroupCannotRemoveDefault", msg));
    }
    w.delete_security_group(&id);
    Ok(cx.empty())
}
