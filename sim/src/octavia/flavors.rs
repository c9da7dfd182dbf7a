//! Octavia flavors (read-only, seeded): list with filters and show, for name lookup.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::envelope::{enter, list_answer};
use crate::query::Params;
use crate::state::Sim;
use crate::world::octavia::LbFlavor;

const PROFILE: &str = "5f9a2c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8";

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(&format!("{p}/flavors"), get(list))
        .route(&format!("{p}/flavors/{{id}}"), get(get_one))
}

fn view(f: &LbFlavor) -> Value {
    json!({"id": f.id, "name": f.name, "description": f.description, "enabled": true, "flavor_profile_id": PROFILE})
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_lb_flavors", &headers).await?;
    let items: Vec<Value> = sim
        .world_of(&cx.project)
        .octavia
        .flavors
        .iter()
        .map(view)
        .collect();
    list_answer(&cx, "flavors", items, &q)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_lb_flavor", &headers).await?;
    let w = sim.world_of(&cx.project);
    match w.octavia.flavors.iter().find(|f| f.id == id) {
        Some(f) => Ok(cx.ok(200, &json!({"flavor": view(f)}))),
        None => Err(cx.err(404, &format!("Flavor {id} not found."))),
    }
}
