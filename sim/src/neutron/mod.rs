//! Neutron v2.0: routing, the request envelope (request ID, `NeutronError` bodies)
//! and list answers (exact-match filters, 400 on unknown filters, `fields`, pages with
//! `next`/`previous` links). Networks, subnets and ports are read-only (seeded, or
//! created by Nova/Octavia); floating IPs are read-write. No routers or security groups.

mod envelope;
mod floating_ips;
mod networks;
mod schema;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
pub(crate) use envelope::SERVICE;
use serde_json::json;

use super::state::Sim;
use super::wire::{self, JSON};

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    let r = r
        .route("/network", get(versions))
        .route("/network/", get(versions));
    floating_ips::routes(networks::routes(r))
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let body = json!({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"rel": "self", "href": format!("{}/network/v2.0/", sim.base)}]}]});
    wire::respond(200, Some(JSON), &[], Some(&body))
}
