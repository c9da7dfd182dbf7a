//! Assembles the services into one axum router and answers unknown paths with the
//! 404 body of the service the path belongs to.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::Uri;
use axum::middleware::{self, Next};
use axum::response::Response;
use serde_json::json;

use super::state::Sim;
use super::wire::{self, JSON, JSON_UTF8};

pub(crate) fn app(sim: Sim) -> Router {
    let r = Router::new();
    let r = super::keystone::routes(r);
    let r = super::nova::routes(r);
    let r = super::glance::routes(r);
    let r = super::neutron::routes(r);
    let r = super::octavia::routes(r);
    let r = super::cinder::routes(r);
    let r = super::barbican::routes(r);
    let r = super::designate::routes(r);
    r.fallback(not_found)
        .layer(middleware::from_fn_with_state(sim.clone(), latency))
        .with_state(sim)
}

/// Holds every request for the configured latency before it is answered; requests
/// wait side by side, as on a loaded API server, not one after another.
async fn latency(State(sim): State<Sim>, request: Request, next: Next) -> Response {
    let latency = sim.config.latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    next.run(request).await
}

async fn not_found(uri: Uri) -> Response {
    let path = uri.path();
    let msg = "The resource could not be found.";
    let rid = [("x-openstack-request-id", wire::request_id())];
    let service = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    match service {
        "compute" => wire::respond(
            404,
            Some(JSON_UTF8),
            &rid,
            Some(&wire::nova_error(404, msg)),
        ),
        "network" => wire::respond(
            404,
            Some(JSON),
            &rid,
            Some(&wire::neutron_error("HTTPNotFound", msg)),
        ),
        "load-balancer" => {
            wire::respond(404, Some(JSON), &rid, Some(&wire::octavia_error(404, msg)))
        }
        "image" => wire::glance_error(404, msg, &rid, true),
        "volume" => wire::respond(404, Some(JSON), &rid, Some(&wire::nova_error(404, msg))),
        _ => wire::respond(
            404,
            Some(JSON),
            &rid,
            Some(&json!({"error": {"code": 404, "message": msg, "title": "Not Found"}})),
        ),
    }
}
