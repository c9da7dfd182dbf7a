//! Assembles the services into one axum router and answers unknown paths with the
//! 404 body of the service the path belongs to.

use axum::Router;
use axum::http::Uri;
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
    r.fallback(not_found).with_state(sim)
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
