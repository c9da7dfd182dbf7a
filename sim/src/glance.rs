//! Glance v2, read-only: image list (filters `name`, `status`, `visibility`, `id`;
//! `limit`/`marker` with a `next` link) and image show, for lookups by name or ID.
//! No uploads or image CRUD. Errors are HTML unless the client accepts JSON.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::gate::{self, Reject};
use super::model::Image;
use super::query::{self, encode_query};
use super::seed::ADMIN_PROJECT_ID;
use super::state::Sim;
use super::wire::{self, JSON};

const SERVICE: &str = "image";

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/image", get(versions))
        .route("/image/", get(versions))
        .route("/image/v2/images", get(list))
        .route("/image/v2/images/{id}", get(get_one))
}

async fn versions(State(sim): State<Sim>) -> Response {
    sim.counters.bump(SERVICE, "versions");
    let v = |id: &str, status: &str| json!({"id": id, "status": status, "links": [{"rel": "self", "href": format!("{}/image/v2/", sim.base)}]});
    let body = json!({"versions": [v("v2.16", "CURRENT"), v("v2.15", "SUPPORTED"), v("v2.0", "SUPPORTED")]});
    wire::respond(300, Some(JSON), &[], Some(&body))
}

fn reject(sim: &Sim, headers: &HeaderMap, r: Reject) -> Response {
    let json = wire::accepts_json(headers);
    if r == Reject::Unauthorized {
        let h = [(
            "www-authenticate",
            format!("Keystone uri=\"{}/identity\"", sim.base),
        )];
        let msg = "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.";
        return wire::glance_error(401, msg, &h, json);
    }
    let mut h = vec![("x-openstack-request-id", wire::request_id())];
    h.extend(r.retry_after());
    wire::glance_error(r.status(), &r.message(), &h, json)
}

fn view(i: &Image) -> Value {
    json!({
        "owner_specified.openstack.md5": "", "owner_specified.openstack.sha256": "",
        "owner_specified.openstack.object": format!("images/{}", i.name),
        "name": i.name, "disk_format": "raw", "container_format": "bare", "visibility": "public",
        "size": i.size, "virtual_size": i.size, "status": "active",
        "checksum": "0f343b0931126a20f133d67c2b018a3b", "protected": false, "min_ram": 0, "min_disk": i.min_disk,
        "owner": ADMIN_PROJECT_ID, "os_hidden": false, "os_hash_algo": "sha512", "os_hash_value": "",
        "id": i.id, "created_at": wire::ts_z(i.created), "updated_at": wire::ts_z(i.created), "tags": [],
        "self": format!("/v2/images/{}", i.id), "file": format!("/v2/images/{}/file", i.id),
        "schema": "/v2/schemas/image", "stores": "fs"
    })
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<query::Params>,
) -> Response {
    if let Err(r) = gate::enter(&sim, SERVICE, "list_images", &headers, true).await {
        return reject(&sim, &headers, r);
    }
    let rid = [("x-openstack-request-id", wire::request_id())];
    let items: Vec<Value> = sim.world().images.iter().map(view).collect();
    // `id=in:a,b` / `name=in:a,b` is how openstacksdk resolves image IDs to names.
    let known = |item: &Value, key: &str, value: &str| match (key, value.strip_prefix("in:")) {
        ("id" | "name", Some(list)) => Some(list.split(',').any(|v| item[key] == v)),
        ("member_status" | "owner" | "os_hidden" | "sort" | "sort_key" | "sort_dir", _) => {
            Some(true)
        }
        _ => None,
    };
    let filtered = query::filter(items, &q, &known).unwrap_or_default();
    let (page, next) = match query::paginate(filtered, &q) {
        Ok(p) => p,
        Err(msg) => return wire::glance_error(400, &msg, &rid, wire::accepts_json(&headers)),
    };
    let mut body = json!({"images": page, "first": format!("/v2/images?{}", encode_query(&q)), "schema": "/v2/schemas/images"});
    if q.is_empty() {
        body["first"] = json!("/v2/images");
    }
    if let Some(marker) = next {
        let mut p: Vec<(String, String)> =
            q.iter().filter(|(k, _)| k != "marker").cloned().collect();
        p.push(("marker".into(), marker));
        body["next"] = json!(format!("/v2/images?{}", encode_query(&p)));
    }
    wire::respond(200, Some(JSON), &rid, Some(&body))
}

async fn get_one(State(sim): State<Sim>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = gate::enter(&sim, SERVICE, "get_image", &headers, true).await {
        return reject(&sim, &headers, r);
    }
    let rid = [("x-openstack-request-id", wire::request_id())];
    match sim.world().images.iter().find(|i| i.id == id) {
        Some(i) => wire::respond(200, Some(JSON), &rid, Some(&view(i))),
        None => wire::glance_error(
            404,
            &format!("No image found with ID {id}"),
            &rid,
            wire::accepts_json(&headers),
        ),
    }
}
