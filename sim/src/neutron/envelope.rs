//! The request envelope of the simulated Neutron: the request context (request ID,
//! microversion where the service has one, answers and fault bodies), entering through
//! the gate, and the listing helper every resource uses (bodies: `schema.rs`).

use crate::gate::{self, Reject};
use crate::query::{self, encode_query};
use crate::state::Sim;
use crate::wire::{self, JSON};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

pub(crate) const SERVICE: &str = crate::world::NETWORK;

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

/// 400 on a tag filter for a resource that has no tags (rules, address groups), as
/// on any other unknown filter.
pub(crate) fn no_tag_filters(cx: &Cx, q: &query::Params) -> Result<(), Response> {
    match q.iter().find(|(k, _)| query::TAGS.contains(&k.as_str())) {
        Some((k, _)) => {
            let msg = format!("['{k}'] is invalid attribute for filtering");
            Err(cx.err(400, "HTTPBadRequest", &msg))
        }
        None => Ok(()),
    }
}

/// Answers a show: `{"<key>": item}`, only the `fields` asked if any.
pub(crate) fn show(cx: &Cx, key: &str, item: Value, q: &query::Params) -> Response {
    let shown = query::project(vec![item], q).pop().unwrap_or_default();
    cx.ok(200, &json!({ key: shown }))
}
