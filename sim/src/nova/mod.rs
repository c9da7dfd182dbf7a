//! Nova (compute v2.1): routing, microversion negotiation and the response envelope
//! every Nova answer shares (both microversion headers, two `Vary`, two request IDs).
//! Resources live in the submodules; no admin-only APIs (quotas, hypervisors).

mod actions;
mod attachments;
mod boot_volume;
mod create;
mod envelope;
mod flavors;
mod groups;
mod metadata;
mod nics;
mod scheduler;
mod schema;
mod servers;
mod view;
mod zones;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use envelope::{Cx, enter, microversion};
pub(crate) use envelope::{MAX_MINOR, SERVICE};
use serde_json::{Value, json};

use super::state::Sim;
use super::wire::{self, JSON};

const P: &str = "/compute/v2.1";

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    let r = r
        .route("/compute", get(versions))
        .route("/compute/", get(versions))
        .route(P, get(version))
        .route(&format!("{P}/"), get(version))
        .route(&format!("{P}/flavors"), get(flavors::list))
        .route(&format!("{P}/flavors/detail"), get(flavors::list_detail))
        .route(&format!("{P}/flavors/{{id}}"), get(flavors::get_one))
        .route(
            &format!("{P}/flavors/{{id}}/os-extra_specs"),
            get(flavors::extra_specs),
        )
        .route(&format!("{P}/os-keypairs/{{name}}"), get(flavors::keypair))
        .route(
            &format!("{P}/servers"),
            get(servers::list).post(create::create),
        )
        .route(&format!("{P}/servers/detail"), get(servers::list_detail))
        .route(
            &format!("{P}/servers/{{id}}"),
            get(servers::get_one)
                .put(servers::update)
                .delete(servers::delete),
        )
        .route(&format!("{P}/servers/{{id}}/action"), post(actions::action));
    let r = metadata::routes(r, P);
    let r = attachments::routes(r, P);
    r.route(
        &format!("{P}/os-server-groups"),
        get(groups::list).post(groups::create),
    )
    .route(
        &format!("{P}/os-server-groups/{{id}}"),
        get(groups::get_one).delete(groups::delete),
    )
    .route(&format!("{P}/os-availability-zone"), get(zones::list))
    .route(
        &format!("{P}/os-availability-zone/detail"),
        get(zones::detail),
    )
    .route(
        &format!("{P}/servers/{{id}}/os-instance-actions"),
        get(instance_actions),
    )
}

fn version_doc(base: &str) -> Value {
    json!({
        "id": "v2.1", "status": "CURRENT", "version": format!("2.{MAX_MINOR}"), "min_version": "2.1",
        "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self", "href": format!("{base}/compute/v2.1/")}]
    })
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let v20 = json!({
        "id": "v2.0", "status": "DEPRECATED", "version": "", "min_version": "", "updated": "2025-07-04T12:00:00Z",
        "links": [{"rel": "self", "href": format!("{}/compute/v2/", sim.base)}]
    });
    wire::respond(
        200,
        Some(JSON),
        &[],
        Some(&json!({"versions": [v20, version_doc(&sim.base)]})),
    )
}

async fn version(State(sim): State<Sim>, headers: HeaderMap) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let (minor, echo) = microversion(&headers).unwrap_or((1, "2.1".into()));
    let cx = Cx {
        minor,
        echo,
        rid: wire::request_id(),
        base: sim.base.clone(),
        project: String::new(),
    };
    let mut doc = version_doc(&sim.base);
    doc["links"] = json!([
        {"rel": "self", "href": format!("{}/compute/v2.1/", sim.base)},
        {"rel": "describedby", "type": "text/html", "href": "http://docs.openstack.org/"}
    ]);
    doc["media-types"] = json!([{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}]);
    cx.ok(200, &json!({ "version": doc }))
}

/// Instance actions are not recorded; the list is always empty.
async fn instance_actions(
    State(sim): State<Sim>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_instance_actions", &headers).await?;
    Ok(cx.ok(200, &json!({"instanceActions": []})))
}
