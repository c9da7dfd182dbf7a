//! HTTP entry point: one fallback handler that parses the Kubernetes URL space (`/api/v1/...`,
//! `/apis/<group>/<version>/...`, namespaced or not, subresources) and the query, then hands the request to
//! the verb handlers. Unknown paths answer the plain-text `404 page not found`, like the real server.

pub mod patch;
pub mod read;
pub mod scale;
pub mod write;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::discovery;
use crate::error::{ApiError, json_response};
use crate::registry::ResourceType;
use crate::state::AppState;
use crate::table::IncludeObject;
use crate::validation::FieldValidation;
use crate::watch;

/// The decoded query string; kube-rs's leading `?&` (empty pairs) is ignored like the real server does.
#[derive(Debug, Clone, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    pub fn parse(q: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(q.unwrap_or_default().as_bytes())
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        Self(pairs)
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    pub fn field_validation(&self) -> FieldValidation {
        FieldValidation::parse(self.get("fieldValidation"))
    }

    /// The field manager of an Update: `fieldManager`, else the User-Agent's program name, else `unknown`.
    pub fn manager(&self, headers: &HeaderMap) -> String {
        if let Some(m) = self.get("fieldManager") {
            return m.to_string();
        }
        headers
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
            .and_then(|ua| ua.split('/').next())
            .filter(|s| !s.is_empty())
            .map(String::from)
            .unwrap_or_else(|| "unknown".to_string())
    }
}

/// The representation a read asks for through `Accept` (`as=Table` from kubectl get, `as=PartialObjectMetadata`
/// from kube's metadata watchers), else the object itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    Object,
    Table(IncludeObject),
    Metadata,
}

impl Render {
    pub fn from_request(accept: &str, q: &Query) -> Self {
        if accept.contains("as=Table") {
            Self::Table(IncludeObject::parse(q.get("includeObject")))
        } else if accept.contains("as=PartialObjectMetadata") {
            Self::Metadata
        } else {
            Self::Object
        }
    }

    /// One object (wire shape) in this representation.
    pub fn one(self, rt: &ResourceType, v: Value) -> Value {
        match self {
            Self::Object => v,
            Self::Metadata => partial(&v),
            Self::Table(include) => {
                let rv = v["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                crate::table::render(rt, &[v], &rv, include)
            }
        }
    }
}

pub fn partial(v: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": v["metadata"]})
}

/// The resource a request addresses.
#[derive(Debug, Clone)]
pub struct Target {
    pub rt: ResourceType,
    /// Namespace from the path; `None` for cluster-scoped resources and all-namespaces collections.
    pub ns: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
}

impl Target {
    pub fn ns(&self) -> &str {
        self.ns.as_deref().unwrap_or_default()
    }
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }
}

fn resolve(state: &AppState, group: &str, version: &str, rest: &[&str]) -> Option<Target> {
    let find = |p: &str| state.registry.find(group, version, p).cloned();
    let t = |rt, ns: Option<&str>, name: Option<&str>, sub: Option<&str>| Target {
        rt,
        ns: ns.map(String::from),
        name: name.map(String::from),
        sub: sub.map(String::from),
    };
    if rest.len() >= 3
        && rest[0] == "namespaces"
        && let Some(rt) = find(rest[2]).filter(|r| r.namespaced)
    {
        return match rest.len() {
            3 => Some(t(rt, Some(rest[1]), None, None)),
            4 => Some(t(rt, Some(rest[1]), Some(rest[3]), None)),
            5 => Some(t(rt, Some(rest[1]), Some(rest[3]), Some(rest[4]))),
            _ => None,
        };
    }
    let rt = find(rest.first()?)?;
    match (rest.len(), rt.namespaced) {
        (1, _) => Some(t(rt, None, None, None)),
        (2, false) => Some(t(rt, None, Some(rest[1]), None)),
        (3, false) => Some(t(rt, None, Some(rest[1]), Some(rest[2]))),
        _ => None,
    }
}

/// Whether reads of this resource in this namespace are denied (`ApiServer::deny_reads`).
fn denied(state: &AppState, t: &Target) -> bool {
    let denied = state.denied.lock().unwrap_or_else(|e| e.into_inner());
    !denied.is_empty() && denied.contains(&(t.rt.plural.clone(), t.ns().to_owned()))
}

pub async fn dispatch(
    State(state): State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let q = Query::parse(uri.query());
    let segs: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let accept = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let target = match segs.as_slice() {
        ["healthz" | "livez" | "readyz"] => return (StatusCode::OK, "ok").into_response(),
        ["version"] => return json_response(StatusCode::OK, &version(), &[]),
        ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _] | ["openapi", ..] => {
            return discovery::serve(&state.registry, &segs, &accept);
        }
        ["api", "v1", rest @ ..] => resolve(&state, "", "v1", rest),
        ["apis", g, v, rest @ ..] => resolve(&state, g, v, rest),
        _ => None,
    };
    let Some(t) = target else {
        return ApiError::page_not_found().into_response();
    };
    if let Some(sub) = t.sub.as_deref() {
        let ok = (sub == "status" && t.rt.status) || (sub == "scale" && t.rt.scale.is_some());
        if !ok {
            return ApiError::page_not_found().into_response();
        }
    }
    let render = Render::from_request(&accept, &q);
    if method == Method::GET && denied(&state, &t) {
        let verb = match (t.name.is_some(), q.flag("watch")) {
            (true, _) => "get",
            (false, true) => "watch",
            (false, false) => "list",
        };
        return ApiError::read_forbidden(&t.rt, verb, t.ns()).into_response();
    }
    let result = match (method.as_str(), t.name.is_some(), t.sub.as_deref()) {
        ("GET", false, _) if q.flag("watch") => return watch::serve(state, t, q, render).await,
        ("GET", false, _) => read::list(&state, &t, &q, render),
        ("GET", true, Some("scale")) => scale::get(&state, &t),
        ("GET", true, _) => read::get(&state, &t, render),
        ("POST", false, _) => write::create(&state, &t, &q, &headers, &body),
        ("PUT", true, Some("scale")) => scale::put(&state, &t, &q, &headers, &body),
        ("PUT", true, _) => write::replace(&state, &t, &q, &headers, &body),
        ("PATCH", true, Some("scale")) => scale::patch(&state, &t, &q, &headers, &body),
        ("PATCH", true, _) => patch::patch(&state, &t, &q, &headers, &body),
        ("DELETE", true, None) => write::delete(&state, &t, &body),
        ("DELETE", false, None) => write::delete_collection(&state, &t, &q, &body),
        _ => Err(ApiError::status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            None,
        )),
    };
    match result {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

fn version() -> Value {
    json!({
        "major": "1", "minor": "33", "gitVersion": "v1.33.0-verda-test", "gitCommit": "", "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64",
    })
}

/// Decodes a JSON request body with the apiserver's 400 message.
pub fn parse_body(rt: &ResourceType, body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let head: String = String::from_utf8_lossy(body).chars().take(30).collect();
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {e} ({head} ...)",
            rt.kind
        ))
    })
}

/// A write answer: 200/201 + object + warnings.
pub fn written(code: StatusCode, out: crate::ops::Outcome) -> Response {
    json_response(code, &out.object, &out.warnings)
}

/// Wakes the garbage collector after a write that may orphan or release dependents.
pub fn wake_gc(state: &AppState) {
    state.gc.notify_one();
}
