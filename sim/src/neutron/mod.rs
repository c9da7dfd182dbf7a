//! Neutron v2.0: routing, the request envelope (request ID, `NeutronError` bodies)
//! and list answers (exact-match filters, repeated ones meaning any of the values, 400
//! on unknown filters, `fields`, pages with `next`/`previous` links). Networks and
//! subnets are seeded (the admin's) or created by the project; ports are created by
//! the user (fixed IPs, allowed address pairs, security groups; `neutron-ports.md`),
//! by Nova or by Octavia; floating IPs are read-write; security groups are listed
//! (each project's `default`, and those a test adds). Body checks follow Neutron's
//! validators (`schema.rs`, `port_body.rs`), refusals its policy (`policy.rs`).
//!
//! Deliberately not here: routers, security group rules, network and subnet update
//! or delete, IPv6 subnets, and the admin's view of other projects.

mod addresses;
mod envelope;
mod floating_ips;
mod ipv4;
mod networks;
mod policy;
mod port_body;
mod ports;
mod schema;
mod security_groups;
mod subnets;

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
    let r = subnets::routes(networks::routes(r));
    let r = security_groups::routes(ports::routes(r));
    floating_ips::routes(r)
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let body = json!({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"rel": "self", "href": format!("{}/network/v2.0/", sim.base)}]}]});
    wire::respond(200, Some(JSON), &[], Some(&body))
}
