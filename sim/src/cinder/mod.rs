//! Cinder (block storage API v3) as the real Cinder 29 answers it (`sim/cinder-wire.md`,
//! recorded from `../shared/real-systems`): volumes and their states, metadata, extend
//! (attached only from microversion 3.42), the `volumes` and `gigabytes` quotas, volume
//! types by name or ID. Attach and detach go through Nova (`nova/attachments.rs`); an
//! attachment Nova could not remove is deleted through Cinder's (`attachments.rs`).
//! Deliberately not here: snapshots, backups, transfers, multiattach, admin APIs.

mod attachments;
mod envelope;
mod view;
mod volumes;

use axum::Router;
use axum::response::Response;
use axum::routing::{delete, get, post, put};
pub(crate) use envelope::MAX_MINOR;
use serde_json::json;

use super::state::Sim;
use super::wire::{self, JSON};

const P: &str = "/volume/v3/{project}";

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/volume", get(versions))
        .route("/volume/", get(versions))
        .route(
            &format!("{P}/volumes"),
            get(volumes::list).post(volumes::create),
        )
        .route(&format!("{P}/volumes/detail"), get(volumes::list))
        .route(
            &format!("{P}/volumes/{{id}}"),
            get(volumes::get_one).delete(volumes::delete),
        )
        .route(&format!("{P}/volumes/{{id}}/action"), post(volumes::action))
        .route(
            &format!("{P}/volumes/{{id}}/metadata"),
            put(volumes::set_metadata),
        )
        .route(&format!("{P}/types"), get(volumes::types))
        .route(&format!("{P}/os-availability-zone"), get(volumes::zones))
        .route(
            &format!("{P}/attachments/{{id}}"),
            delete(attachments::delete),
        )
}

/// The version document, with the link clients follow to the API (keystoneauth's
/// discovery cannot use it without one).
async fn versions(axum::extract::State(sim): axum::extract::State<Sim>) -> Response {
    let body = json!({"versions": [{
        "id": "v3.0", "status": "CURRENT", "version": format!("3.{MAX_MINOR}"), "min_version": "3.0",
        "updated": "2023-08-31T00:00:00Z",
        "links": [{"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"},
                  {"rel": "self", "href": format!("{}/volume/v3/", sim.base)}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.volume+json;version=3"}]
    }]});
    wire::respond(300, Some(JSON), &[], Some(&body))
}
