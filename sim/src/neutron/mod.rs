//! Neutron v2.0: routing, the request envelope (request ID, `NeutronError` bodies)
//! and list answers (exact-match filters, 400 on unknown filters, `fields`, pages with
//! `next`/`previous` links). Networks, subnets and ports are read-only (seeded, or
//! created by Nova/Octavia); floating IPs are read-write. No routers or security groups.

mod floating_ips;
mod networks;
mod schema;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::gate::{self, Reject};
use super::query::{self, encode_query};
use super::state::Sim;
use super::wire::{self, JSON};

pub(crate) const SERVICE: &str = "network";

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

/// The request context of one Neutron call.
pub(crate) struct Cx {
    rid: String,
    base: String,
    /// The project of the request's token: whose world it sees.
    pub project: String,
}

impl Cx {
    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![("x-openstack-request-id", self.rid.clone())]
    }

    pub fn ok(&self, status: u16, body: &Value) -> Response {
        wire::respond(status, Some(JSON), &self.headers(), Some(body))
    }

    pub fn empty(&self) -> Response {
        wire::respond(204, None, &self.headers(), None)
    }

    pub fn err(&self, status: u16, kind: &str, message: &str) -> Response {
        wire::respond(
            status,
            Some(JSON),
            &self.headers(),
            Some(&wire::neutron_error(kind, message)),
        )
    }

    fn reject(&self, r: Reject) -> Response {
        if r == Reject::Unauthorized {
            let mut h = vec![(
                "www-authenticate",
                format!("Keystone uri=\"{}/identity\"", self.base),
            )];
            h.extend(self.headers());
            return wire::respond(401, Some(JSON), &h, Some(&wire::middleware_401()));
        }
        let kind = match r.status() {
            429 => "HTTPTooManyRequests",
            503 => "HTTPServiceUnavailable",
            s if s >= 500 => "HTTPInternalServerError",
            404 => "HTTPNotFound",
            409 => "HTTPConflict",
            _ => "HTTPBadRequest",
        };
        let mut h = self.headers();
        h.extend(r.retry_after());
        wire::respond(
            r.status(),
            Some(JSON),
            &h,
            Some(&wire::neutron_error(kind, &r.message())),
        )
    }
}

pub(crate) async fn enter(
    sim: &Sim,
    operation: &'static str,
    headers: &HeaderMap,
) -> Result<Cx, Response> {
    let cx = Cx {
        rid: wire::request_id(),
        base: sim.base.clone(),
        project: String::new(),
    };
    let project = gate::enter(sim, SERVICE, operation, headers, true)
        .await
        .map_err(|r| cx.reject(r))?;
    Ok(Cx { project, ..cx })
}

/// Answers a list: filter (400 on unknown attributes), page, project `fields`.
pub(crate) fn list_answer(
    cx: &Cx,
    collection: &str,
    items: Vec<Value>,
    q: &query::Params,
    extra: &dyn Fn(&Value, &str, &str) -> Option<bool>,
) -> Result<Response, Response> {
    let filtered = query::filter(items, q, extra).map_err(|k| {
        cx.err(
            400,
            "HTTPBadRequest",
            &format!("['{k}'] is invalid attribute for filtering"),
        )
    })?;
    let (page, next) = query::paginate(filtered, q).map_err(|m| cx.err(400, "BadRequest", &m))?;
    let mut body = json!({ collection: query::project(page, q) });
    if let Some(l) = q.iter().find(|(k, _)| k == "limit").map(|(_, v)| v.clone()) {
        let marker = next.clone().unwrap_or_default();
        let link = |reverse: bool| {
            let mut p = vec![
                ("limit".to_string(), l.clone()),
                ("marker".to_string(), marker.clone()),
            ];
            if reverse {
                p.push(("page_reverse".into(), "True".into()));
            }
            format!("{}/network/v2.0/{collection}?{}", cx.base, encode_query(&p))
        };
        let mut links = Vec::new();
        if next.is_some() {
            links.push(json!({"rel": "next", "href": link(false)}));
        }
        links.push(json!({"rel": "previous", "href": link(true)}));
        body[format!("{collection}_links")] = Value::Array(links);
    }
    Ok(cx.ok(200, &body))
}
