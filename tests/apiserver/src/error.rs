//! `meta/v1 Status` error bodies exactly as kube-apiserver writes them (see kube-wire `crud-errors.md`).
//!
//! Every failure a handler can produce is an [`ApiError`]: an HTTP code plus the Status body, or the plain-text
//! `404 page not found` the real server answers for unknown paths. This module does not decide *when* an error
//! happens, only how it looks on the wire.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::registry::ResourceType;

/// One `details.causes[]` entry of a Status.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn new(reason: &str, message: impl Into<String>, field: impl Into<String>) -> Self {
        Self {
            reason: reason.to_string(),
            message: message.into(),
            field: field.into(),
        }
    }

    /// `FieldValueInvalid` with the apiserver's `Invalid value: <v>: <msg>` message.
    pub fn invalid(field: impl Into<String>, value: &Value, msg: &str) -> Self {
        Self::new(
            "FieldValueInvalid",
            format!("Invalid value: {}: {msg}", render_value(value)),
            field,
        )
    }

    pub fn required(field: impl Into<String>) -> Self {
        Self::new("FieldValueRequired", "Required value", field)
    }

    pub fn forbidden(field: impl Into<String>, msg: &str) -> Self {
        Self::new("FieldValueForbidden", format!("Forbidden: {msg}"), field)
    }

    fn to_json(&self) -> Value {
        json!({"reason": self.reason, "message": self.message, "field": self.field})
    }
}

/// How Go's field errors print a value: strings quoted, numbers bare, objects as the JSON text.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

/// An error answer: HTTP code + Status body (or the plain-text 404 for unknown paths).
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub body: Option<Value>,
}

impl ApiError {
    pub fn status(
        code: u16,
        reason: &str,
        message: impl Into<String>,
        details: Option<Value>,
    ) -> Self {
        let mut body = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message.into(), "reason": reason,
        });
        if let Some(d) = details {
            body["details"] = d;
        }
        body["code"] = json!(code);
        Self {
            code,
            body: Some(body),
        }
    }

    /// The real server's answer for a path it does not serve: text, not a Status.
    pub fn page_not_found() -> Self {
        Self {
            code: 404,
            body: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::status(400, "BadRequest", message, None)
    }

    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::status(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", rt.qualified()),
            Some(rt.details(name)),
        )
    }

    pub fn namespace_not_found(ns: &str) -> Self {
        Self::status(
            404,
            "NotFound",
            format!("namespaces \"{ns}\" not found"),
            Some(json!({"name": ns, "kind": "namespaces"})),
        )
    }

    /// The NamespaceLifecycle refusal of a create in a namespace being deleted: about the object, with a
    /// `NamespaceTerminating` cause that clients check for.
    pub fn namespace_terminating(rt: &ResourceType, name: &str, ns: &str) -> Self {
        let mut details = rt.details(name);
        details["causes"] = json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {ns} is being terminated"),
            "field": "metadata.namespace",
        }]);
        Self::status(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                rt.qualified()
            ),
            Some(details),
        )
    }

    /// RBAC's refusal of a read in a namespace where the client has no Role.
    pub fn read_forbidden(rt: &ResourceType, verb: &str, ns: &str) -> Self {
        Self::status(
            403,
            "Forbidden",
            format!(
                "{plural} is forbidden: User \"system:serviceaccount:verda-system:verda-operator\" cannot {verb} resource \"{plural}\" in API group \"{group}\" in the namespace \"{ns}\"",
                plural = rt.plural,
                group = rt.group,
            ),
            Some(json!({"kind": rt.plural})),
        )
    }

    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::status(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", rt.qualified()),
            Some(rt.details(name)),
        )
    }

    pub fn conflict(rt: &ResourceType, name: &str) -> Self {
        Self::status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                rt.qualified()
            ),
            Some(rt.details(name)),
        )
    }

    /// 422 whose `details.kind` is the plural (metadata checks such as a missing resourceVersion).
    pub fn invalid_meta(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> Self {
        let prefix = format!("{} \"{name}\" is invalid: ", rt.qualified());
        Self::invalid_with(prefix, rt.details(name), causes)
    }

    /// 422 from schema/CEL validation: `details.kind` is the Kind, message prefix `Kind.group "name"`.
    pub fn invalid_object(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> Self {
        let qualified = if rt.group.is_empty() {
            rt.kind.clone()
        } else {
            format!("{}.{}", rt.kind, rt.group)
        };
        let mut details = json!({"name": name, "kind": rt.kind});
        if !rt.group.is_empty() {
            details["group"] = json!(rt.group);
        }
        Self::invalid_with(
            format!("{qualified} \"{name}\" is invalid: "),
            details,
            causes,
        )
    }

    /// 422 about request options (`ListOptions`, `PatchOptions`), group meta.k8s.io, no name.
    pub fn invalid_options(kind: &str, causes: Vec<Cause>) -> Self {
        let details = json!({"group": "meta.k8s.io", "kind": kind});
        Self::invalid_with(
            format!("{kind}.meta.k8s.io \"\" is invalid: "),
            details,
            causes,
        )
    }

    fn invalid_with(prefix: String, mut details: Value, causes: Vec<Cause>) -> Self {
        let joined: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let message = if joined.len() == 1 {
            format!("{prefix}{}", joined[0])
        } else {
            format!("{prefix}[{}]", joined.join(", "))
        };
        details["causes"] = Value::Array(causes.iter().map(Cause::to_json).collect());
        Self::status(422, "Invalid", message, Some(details))
    }

    /// The generic 422 the server answers for a JSON patch that cannot be applied (failed `test`, bad path).
    pub fn patch_rejected() -> Self {
        Self::status(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            Some(json!({})),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::status(410, "Expired", message, None)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::status(500, "InternalError", message, None)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        match self.body {
            Some(body) => json_response(code, &body, &[]),
            None => {
                let mut r = (code, "404 page not found\n").into_response();
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                r
            }
        }
    }
}

/// A JSON response with optional `Warning: 299 - "..."` headers.
pub fn json_response(code: StatusCode, body: &Value, warnings: &[String]) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut r = (code, bytes).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            r.headers_mut().append("Warning", v);
        }
    }
    r
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("reading CRD file {path}: {source}")]
    ReadCrd {
        path: String,
        source: std::io::Error,
    },
    #[error("parsing CRD file {path}: {message}")]
    ParseCrd { path: String, message: String },
    #[error(
        "CRD directory {0} does not exist (generate the CRDs, or point the server at another directory)"
    )]
    NoCrdDir(String),
    #[error("binding 127.0.0.1: {0}")]
    Bind(std::io::Error),
}
