//! `GET /os-availability-zone` as the real Nova 34 answers a project member
//! (`sim/nova-zones.md`): every zone with a compute host, available or not (a zone
//! whose services are all disabled), the available ones first. The detailed listing is
//! an admin's only.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::envelope::enter;
use crate::state::Sim;
use crate::world::World;

pub(super) async fn list(State(sim): State<Sim>, headers: HeaderMap) -> Result<Response, Response> {
    let cx = enter(&sim, "list_availability_zones", &headers).await?;
    let w = sim.world_of(&cx.project);
    Ok(cx.ok(200, &json!({ "availabilityZoneInfo": listing(&w) })))
}

pub(super) async fn detail(
    State(sim): State<Sim>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_availability_zones_detail", &headers).await?;
    Err(cx.err(
        403,
        "Policy doesn't allow os_compute_api:os-availability-zone:detail to be performed.",
    ))
}

fn listing(w: &World) -> Vec<Value> {
    let mut zones: Vec<String> = Vec::new();
    for i in 0..w.hosts {
        if let Some(z) = w.zone_of_host(&format!("compute-{i}"))
            && !zones.contains(&z)
        {
            zones.push(z);
        }
    }
    let (up, down): (Vec<String>, Vec<String>) = zones
        .into_iter()
        .partition(|z| !w.disabled_zones.contains(z));
    let entry = |z: &String, available: bool| json!({"zoneName": z, "zoneState": {"available": available}, "hosts": null});
    up.iter()
        .map(|z| entry(z, true))
        .chain(down.iter().map(|z| entry(z, false)))
        .collect()
}
