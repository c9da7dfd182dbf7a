//! Nova flavors (list, detail, show, extra specs) and key pair show. Nova has no
//! lookup by name on `/flavors/{id}`: clients list and filter, as the recording shows.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::envelope::{Cx, enter};
use crate::model::Flavor;
use crate::state::Sim;

fn summary(cx: &Cx, f: &Flavor) -> Value {
    json!({"id": f.id, "name": f.name, "links": cx.link("flavors", &f.id), "description": null})
}

pub(super) fn detail(cx: &Cx, f: &Flavor) -> Value {
    let swap = if cx.at_least(75) { json!(0) } else { json!("") };
    json!({
        "id": f.id, "name": f.name, "ram": f.ram, "disk": f.disk, "swap": swap,
        "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false, "vcpus": f.vcpus,
        "os-flavor-access:is_public": true, "rxtx_factor": 1.0,
        "links": cx.link("flavors", &f.id), "description": null, "extra_specs": {}
    })
}

pub(super) async fn list(State(sim): State<Sim>, headers: HeaderMap) -> Result<Response, Response> {
    let cx = enter(&sim, "list_flavors", &headers).await?;
    let w = sim.world_of(&cx.project);
    let flavors: Vec<Value> = w.flavors.iter().map(|f| summary(&cx, f)).collect();
    Ok(cx.ok(200, &json!({ "flavors": flavors })))
}

pub(super) async fn list_detail(
    State(sim): State<Sim>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_flavors", &headers).await?;
    let w = sim.world_of(&cx.project);
    let flavors: Vec<Value> = w.flavors.iter().map(|f| detail(&cx, f)).collect();
    Ok(cx.ok(200, &json!({ "flavors": flavors })))
}

pub(super) async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_flavor", &headers).await?;
    let w = sim.world_of(&cx.project);
    match w.flavors.iter().find(|f| f.id == id) {
        Some(f) => Ok(cx.ok(200, &json!({"flavor": detail(&cx, f)}))),
        None => Err(cx.err(404, &format!("Flavor {id} could not be found."))),
    }
}

pub(super) async fn extra_specs(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_flavor", &headers).await?;
    let w = sim.world_of(&cx.project);
    match w.flavors.iter().any(|f| f.id == id) {
        true => Ok(cx.ok(200, &json!({"extra_specs": {}}))),
        false => Err(cx.err(404, &format!("Flavor {id} could not be found."))),
    }
}

pub(super) async fn keypair(
    State(sim): State<Sim>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_keypair", &headers).await?;
    let w = sim.world_of(&cx.project);
    if !w.keypairs.contains(&name) {
        return Err(cx.err(
            404,
            &format!("Keypair {name} not found for user {}", crate::seed::USER_ID),
        ));
    }
    Ok(cx.ok(
        200,
        &json!({"keypair": {
            "name": name, "type": "ssh", "user_id": crate::seed::USER_ID, "deleted": false,
            "public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheVerdaSimulator verda-sim",
            "fingerprint": "5c:0f:6f:1b:5d:0a:6e:77:3e:6b:0c:9d:1a:8e:2f:44"
        }}),
    ))
}
