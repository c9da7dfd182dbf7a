//! The request envelope of the simulated Cinder: the request context (request ID,
//! microversion where the service has one, answers and fault bodies), entering through
//! the gate, and the body and listing helpers every resource uses.

use crate::gate::{self, Reject};
use crate::state::Sim;
use crate::wire::{self, JSON};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

pub(crate) const SERVICE: &str = crate::world::BLOCK_STORAGE;
pub(crate) const MAX_MINOR: u32 = 71;

/// The request context of one Cinder call.
pub(crate) struct Cx {
    pub minor: u32,
    pub rid: String,
    pub base: String,
    /// The project of the request's token: whose world it sees.
    pub project: String,
}

impl Cx {
    pub fn at_least(&self, minor: u32) -> bool {
        self.minor >= minor
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("openstack-api-version", format!("volume 3.{}", self.minor)),
            ("vary", "OpenStack-API-Version".into()),
            ("x-openstack-request-id", self.rid.clone()),
            ("x-compute-request-id", self.rid.clone()),
        ]
    }

    pub fn ok(&self, status: u16, body: &Value) -> Response {
        wire::respond(status, Some(JSON), &self.headers(), Some(body))
    }

    pub fn empty(&self, status: u16) -> Response {
        wire::respond(status, Some(JSON), &self.headers(), None)
    }

    /// Cinder's errors have Nova's shape: `{"badRequest": {"code", "message"}}`.
    pub fn err(&self, status: u16, message: &str) -> Response {
        let mut body = wire::nova_error(status, message);
        if status == 413 {
            body["overLimit"]["retryAfter"] = json!("0");
        }
        wire::respond(status, Some(JSON), &self.headers(), Some(&body))
    }

    fn reject(&self, r: Reject) -> Response {
        if r == Reject::Unauthorized {
            let h = [("x-openstack-request-id", self.rid.clone())];
            return wire::respond(401, Some(JSON), &h, Some(&wire::middleware_401()));
        }
        let mut h = self.headers();
        h.extend(r.retry_after());
        let body = wire::nova_error(r.status(), &r.message());
        wire::respond(r.status(), Some(JSON), &h, Some(&body))
    }

    pub fn link(&self, id: &str) -> Value {
        json!([
            {"rel": "self", "href": format!("{}/volume/v3/{}/volumes/{id}", self.base, self.project)},
            {"rel": "bookmark", "href": format!("{}/volume/{}/volumes/{id}", self.base, self.project)}
        ])
    }
}

/// The minor version of `volume 3.X` in `OpenStack-API-Version` (3.0 without it).
fn microversion(headers: &HeaderMap) -> Result<u32, String> {
    let Some(requested) = headers
        .get("openstack-api-version")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.split(',')
                .find_map(|p| p.trim().strip_prefix("volume ").map(str::trim))
        })
    else {
        return Ok(0);
    };
    if requested == "latest" {
        return Ok(MAX_MINOR);
    }
    match requested.split_once('.') {
        Some(("3", minor)) => match minor.parse::<u32>() {
            Ok(m) if m <= MAX_MINOR => Ok(m),
            _ => Err(format!(
                "Version {requested} is not supported by the API. Minimum is 3.0 and maximum is 3.{MAX_MINOR}."
            )),
        },
        _ => Err(format!("Invalid API version {requested}")),
    }
}

/// Negotiates the microversion, passes the gate, and refuses a URL that names another
/// project than the token's (Cinder 29 answers `400 Malformed request url`).
pub(crate) async fn enter(
    sim: &Sim,
    operation: &'static str,
    headers: &HeaderMap,
    url_project: &str,
) -> Result<Cx, Response> {
    let mut cx = Cx {
        minor: 0,
        rid: wire::request_id(),
        base: sim.base.clone(),
        project: url_project.to_owned(),
    };
    match microversion(headers) {
        Ok(minor) => cx.minor = minor,
        Err(message) => {
            sim.counters.bump(SERVICE, operation);
            return Err(cx.err(406, &message));
        }
    }
    let project = gate::enter(sim, SERVICE, operation, headers, true)
        .await
        .map_err(|r| cx.reject(r))?;
    if project != url_project {
        return Err(cx.err(400, "Malformed request url"));
    }
    Ok(cx)
}

/// The JSON body of a write, or Cinder's 400.
pub(crate) fn body(cx: &Cx, bytes: &[u8]) -> Result<Value, Response> {
    serde_json::from_slice(bytes)
        .map_err(|_| cx.err(400, "Malformed request body"))
        .and_then(|v: Value| match v.is_object() {
            true => Ok(v),
            false => Err(cx.err(400, "Malformed request body")),
        })
}
