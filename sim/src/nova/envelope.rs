//! The request envelope of the simulated Nova: the request context (request ID,
//! microversion where the service has one, answers and fault bodies), entering through
//! the gate, and the body and listing helpers every resource uses.

use crate::gate::{self, Reject};
use crate::state::Sim;
use crate::wire::{self, JSON, JSON_UTF8};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

pub(crate) const SERVICE: &str = "compute";
pub(crate) const MAX_MINOR: u32 = 104;

/// The request context of one Nova call: its microversion and request ID.
pub(crate) struct Cx {
    pub minor: u32,
    pub echo: String,
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
            ("openstack-api-version", format!("compute {}", self.echo)),
            ("x-openstack-nova-api-version", self.echo.clone()),
            ("vary", "OpenStack-API-Version".into()),
            ("vary", "X-OpenStack-Nova-API-Version".into()),
            ("x-openstack-request-id", self.rid.clone()),
            ("x-compute-request-id", self.rid.clone()),
        ]
    }

    pub fn ok(&self, status: u16, body: &Value) -> Response {
        wire::respond(status, Some(JSON), &self.headers(), Some(body))
    }

    pub fn ok_with(&self, status: u16, body: &Value, extra: (&'static str, String)) -> Response {
        let mut h = vec![extra];
        h.extend(self.headers());
        wire::respond(status, Some(JSON), &h, Some(body))
    }

    pub fn empty(&self, status: u16) -> Response {
        wire::respond(status, Some(JSON), &self.headers(), None)
    }

    pub fn err(&self, status: u16, message: &str) -> Response {
        wire::respond(
            status,
            Some(JSON_UTF8),
            &self.headers(),
            Some(&wire::nova_error(status, message)),
        )
    }

    fn reject(&self, r: Reject) -> Response {
        if r == Reject::Unauthorized {
            let h = [
                (
                    "www-authenticate",
                    format!("Keystone uri=\"{}/identity\"", self.base),
                ),
                ("x-openstack-request-id", self.rid.clone()),
                ("x-compute-request-id", self.rid.clone()),
            ];
            return wire::respond(401, Some(JSON), &h, Some(&wire::middleware_401()));
        }
        let mut h = self.headers();
        h.extend(r.retry_after());
        let mut body = wire::nova_error(r.status(), &r.message());
        if let Reject::RateLimited(secs) = r {
            body["overLimit"]["retryAfter"] = json!(secs.to_string());
        }
        wire::respond(r.status(), Some(JSON_UTF8), &h, Some(&body))
    }

    pub fn link(&self, kind: &str, id: &str) -> Value {
        json!([
            {"rel": "self", "href": format!("{}/compute/v2.1/{kind}/{id}", self.base)},
            {"rel": "bookmark", "href": format!("{}/compute/{kind}/{id}", self.base)}
        ])
    }

    pub fn bookmark(&self, kind: &str, id: &str) -> Value {
        json!([{"rel": "bookmark", "href": format!("{}/compute/{kind}/{id}", self.base)}])
    }
}

/// Reads the requested microversion: `Ok(minor, echo)`, or the 400/406 message.
pub(crate) fn microversion(headers: &HeaderMap) -> Result<(u32, String), (u16, String)> {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    let modern = header("openstack-api-version").and_then(|v| {
        v.split(',')
            .map(str::trim)
            .find_map(|part| part.strip_prefix("compute ").map(str::trim))
    });
    let Some(requested) = modern.or_else(|| header("x-openstack-nova-api-version")) else {
        return Ok((1, "2.1".into()));
    };
    if requested == "latest" {
        return Ok((MAX_MINOR, format!("2.{MAX_MINOR}")));
    }
    let parsed = requested
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    match parsed {
        Some((2, minor)) if (1..=MAX_MINOR).contains(&minor) => Ok((minor, requested.to_string())),
        Some(_) => Err((
            406,
            format!(
                "Version {requested} is not supported by the API. Minimum is 2.1 and maximum is 2.{MAX_MINOR}."
            ),
        )),
        None => Err((
            400,
            format!(
                "API Version String {requested} is of invalid format. Must be of format MajorNum.MinorNum."
            ),
        )),
    }
}

/// Negotiates the microversion, then passes the gate (count, faults, token).
pub(crate) async fn enter(
    sim: &Sim,
    operation: &'static str,
    headers: &HeaderMap,
) -> Result<Cx, Response> {
    let (minor, echo, bad) = match microversion(headers) {
        Ok((minor, echo)) => (minor, echo, None),
        Err((status, msg)) => {
            let echo = headers
                .get("x-openstack-nova-api-version")
                .or_else(|| headers.get("openstack-api-version"))
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim_start_matches("compute ").to_string())
                .unwrap_or_default();
            (1, echo, Some((status, msg)))
        }
    };
    let cx = Cx {
        minor,
        echo,
        rid: wire::request_id(),
        base: sim.base.clone(),
        project: String::new(),
    };
    if let Some((status, msg)) = bad {
        sim.counters.bump(SERVICE, operation);
        return Err(cx.err(status, &msg));
    }
    let project = gate::enter(sim, SERVICE, operation, headers, true)
        .await
        .map_err(|r| cx.reject(r))?;
    Ok(Cx { project, ..cx })
}

/// Parses a JSON body or answers Nova's 400.
pub(crate) fn body(cx: &Cx, bytes: &[u8]) -> Result<Value, Response> {
    wire::parse_body(bytes).ok_or_else(|| cx.err(400, "Malformed request body"))
}

/// Nova's schema error for a missing property.
pub(crate) fn required(cx: &Cx, field: &str, value: &Value, key: &str) -> Response {
    let msg = format!(
        "Invalid input for field/attribute {field}. Value: {}. '{key}' is a required property",
        wire::py_repr(value)
    );
    cx.err(400, &msg)
}

pub(crate) fn not_found_server(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Instance {id} could not be found."))
}
