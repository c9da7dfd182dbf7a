//! Wire details shared by the services: request IDs, timestamp formats, JSON responses
//! and each service's error body shape (as each one's API reference documents it).
//! Service-specific headers (Nova microversions) are added by the service modules.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

pub(crate) const JSON: &str = "application/json";
pub(crate) const JSON_UTF8: &str = "application/json; charset=UTF-8";
pub(crate) const UNAUTHORIZED_MSG: &str = "The request you have made requires authentication.";

/// A fresh `req-<uuid>` request ID.
pub(crate) fn request_id() -> String {
    format!("req-{}", uuid::Uuid::new_v4())
}

/// `2026-11-21T06:36:59Z` (Nova, Neutron, Glance).
pub(crate) fn ts_z(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `2026-11-21T06:36:29.000000Z` (Keystone).
pub(crate) fn ts_micro_z(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// `2026-11-21T06:37:29` (Octavia: no zone, no fraction).
pub(crate) fn ts_naive(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// `2026-11-21T06:37:01.000000` (Nova `launched_at`).
pub(crate) fn ts_micro_naive(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// A response with a body (JSON serialised compactly) and the given headers.
pub(crate) fn respond(
    status: u16,
    content_type: Option<&str>,
    headers: &[(&str, String)],
    body: Option<&Value>,
) -> Response {
    let mut map = HeaderMap::new();
    if let Some(ct) = content_type {
        insert(&mut map, "content-type", ct);
    }
    for (k, v) in headers {
        append(&mut map, k, v);
    }
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap_or_default())
        .unwrap_or_default();
    raw(status, map, Body::from(bytes))
}

/// A response with a non-JSON body (Glance HTML pages).
pub(crate) fn respond_text(
    status: u16,
    content_type: &str,
    headers: &[(&str, String)],
    text: String,
) -> Response {
    let mut map = HeaderMap::new();
    insert(&mut map, "content-type", content_type);
    for (k, v) in headers {
        append(&mut map, k, v);
    }
    raw(status, map, Body::from(text))
}

fn raw(status: u16, headers: HeaderMap, body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    *resp.headers_mut() = headers;
    resp
}

fn insert(map: &mut HeaderMap, k: &str, v: &str) {
    if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
        map.insert(k, v);
    }
}

fn append(map: &mut HeaderMap, k: &str, v: &str) {
    if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
        map.append(k, v);
    }
}

/// Reason phrase used in bodies (`"title"`, Glance `"code"`).
pub(crate) fn title(status: u16) -> &'static str {
    StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}

/// Keystone's own errors: `{"error": {"code", "message", "title"}}`.
pub(crate) fn keystone_error(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "title": title(status)}})
}

/// keystonemiddleware's 401 body, as every service but Glance sends it.
pub(crate) fn middleware_401() -> Value {
    json!({"error": {"code": 401, "title": "Unauthorized", "message": UNAUTHORIZED_MSG}})
}

/// Nova: `{"<wrapper>": {"code", "message"}}`, the wrapper chosen by status.
pub(crate) fn nova_error(status: u16, message: &str) -> Value {
    let wrapper = match status {
        400 => "badRequest",
        403 => "forbidden",
        404 => "itemNotFound",
        409 => "conflictingRequest",
        413 | 429 => "overLimit",
        _ => "computeFault",
    };
    json!({ wrapper: {"code": status, "message": message} })
}

/// Neutron: `{"NeutronError": {"type", "message", "detail": ""}}`.
pub(crate) fn neutron_error(kind: &str, message: &str) -> Value {
    json!({"NeutronError": {"type": kind, "message": message, "detail": ""}})
}

/// Octavia (WSME): `{"faultcode", "faultstring", "debuginfo": null}`.
pub(crate) fn octavia_error(status: u16, message: &str) -> Value {
    let code = if status >= 500 { "Server" } else { "Client" };
    json!({"faultcode": code, "faultstring": message, "debuginfo": null})
}

/// Glance (webob): JSON with a string `code` and HTML line breaks, only when asked for JSON.
pub(crate) fn glance_error(
    status: u16,
    message: &str,
    headers: &[(&str, String)],
    accept_json: bool,
) -> Response {
    let title = title(status);
    if accept_json {
        let body = json!({"message": format!("{message}<br /><br />\n\n\n"), "code": format!("{status} {title}"), "title": title});
        return respond(status, Some(JSON), headers, Some(&body));
    }
    let html = format!(
        "<html>\n <head>\n  <title>{status} {title}</title>\n </head>\n <body>\n  <h1>{status} {title}</h1>\n  {message}<br /><br />\n\n\n\n </body>\n</html>"
    );
    respond_text(status, "text/html; charset=UTF-8", headers, html)
}

/// Python `str` of a JSON value: a string as it is, anything else as its `repr`.
pub(crate) fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python `repr` of a JSON value, as Nova's schema errors echo the request.
pub(crate) fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_repr_str(s),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// Python's `repr` of a string: single quotes unless only double quotes avoid escaping.
fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Parses a JSON request body; `None` when it is not JSON.
pub(crate) fn parse_body(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() {
        return Some(Value::Null);
    }
    serde_json::from_slice(bytes).ok()
}

/// Whether the client asked for JSON (`Accept: application/json`).
pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_repr_matches_nova_schema_messages() {
        let v = json!({"description": "x", "n": 1, "ok": true, "none": null, "l": ["a"]});
        assert_eq!(
            py_repr(&v),
            "{'description': 'x', 'l': ['a'], 'n': 1, 'none': None, 'ok': True}"
        );
    }

    #[test]
    fn python_repr_quotes_strings_like_python() {
        assert_eq!(py_repr(&json!("it's")), "\"it's\"");
        assert_eq!(py_repr(&json!("a'b\"c")), "'a\\'b\"c'");
        assert_eq!(py_repr(&json!("a\nb")), "'a\\nb'");
        assert_eq!(py_str(&json!("plain")), "plain");
    }

    #[test]
    fn nova_error_wrapper_follows_status() {
        assert_eq!(nova_error(403, "q")["forbidden"]["code"], 403);
        assert_eq!(nova_error(406, "v")["computeFault"]["message"], "v");
    }
}
