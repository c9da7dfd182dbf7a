//! Neutron security groups, read-only: list (filters, `fields`) and show. Each
//! project has its `default` group (and the seeded `web`); tests add more through
//! `Simulator::add_security_group`. Ports name groups by ID only (`ports.rs`), so a
//! client resolves names here, as `GET /v2.0/security-groups?name=default` does.
//!
//! Deliberately not here: rules (every group answers with none), create, update and
//! delete.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::envelope::{enter, list_answer};
use crate::model::SecurityGroup;
use crate::query::Params;
use crate::state::Sim;
use crate::wire;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/security-groups", get(list))
        .route("/network/v2.0/security-groups/{id}", get(get_one))
}

fn view(project: &str, g: &SecurityGroup) -> Value {
    json!({
        "id": g.id, "name": g.name, "description": g.description, "project_id": project,
        "tenant_id": project, "stateful": true, "shared": false, "security_group_rules": [],
        "tags": [], "created_at": wire::ts_z(g.created), "updated_at": wire::ts_z(g.created),
        "revision_number": 1
    })
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_security_groups", &headers).await?;
    let w = sim.world_of(&cx.project);
    let items: Vec<Value> = w
        .security_groups
        .iter()
        .map(|g| view(&cx.project, g))
        .collect();
    drop(w);
    list_answer(&cx, "security_groups", items, &q, &|_, _, _| None)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_security_group", &headers).await?;
    let w = sim.world_of(&cx.project);
    match w.security_groups.iter().find(|g| g.id == id) {
        Some(g) => Ok(cx.ok(200, &json!({"security_group": view(&cx.project, g)}))),
        None => {
            let msg = format!("Security group {id} does not exist");
            Err(cx.err(404, "SecurityGroupNotFound", &msg))
        }
    }
}
