//! Octavia v2 (load-balancer): routing, the request envelope (request ID, WSME fault
//! bodies, no request ID on the middleware 401) and helpers shared by the resources.
//! Objects live in the world (`world::octavia`, their state machine in
//! `world::octavia_lifecycle`), JSON in
//! `views.rs`, request types in `schema.rs`. No L7 policies, TLS containers, quotas or amphora admin APIs.

mod envelope;
mod flavors;
mod listeners;
mod loadbalancers;
mod members;
mod monitors;
mod options;
mod pools;
mod populated;
mod schema;
pub(crate) mod snapshot;
mod tls;
mod views;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
pub(crate) use envelope::SERVICE;
use serde_json::{Value, json};

use super::state::Sim;
use super::wire::{self, JSON};

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    let mut r = r
        .route("/load-balancer", get(versions))
        .route("/load-balancer/", get(versions))
        .route("/load-balancer/v2", get(v2))
        .route("/load-balancer/v2/", get(v2));
    for p in ["/load-balancer/v2/lbaas", "/load-balancer/v2.0/lbaas"] {
        r = loadbalancers::routes(r, p);
        r = listeners::routes(r, p);
        r = pools::routes(r, p);
        r = members::routes(r, p);
        r = monitors::routes(r, p);
        r = flavors::routes(r, p);
    }
    r
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let link = json!([{"href": format!("{}/load-balancer/v2", sim.base), "rel": "self"}]);
    let list: Vec<Value> = (0..=30)
        .map(|i| json!({"id": format!("v2.{i}"), "status": if i == 30 { "CURRENT" } else { "SUPPORTED" }, "updated": "2016-12-11T00:00:00Z", "links": link}))
        .collect();
    wire::respond(
        200,
        Some(JSON),
        &[("x-openstack-request-id", wire::request_id())],
        Some(&json!({"versions": list})),
    )
}

async fn v2(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    wire::respond(
        200,
        Some(JSON),
        &[("x-openstack-request-id", wire::request_id())],
        Some(&json!("v2")),
    )
}
