//! PATCH of an object or its `/status`: merge patch, JSON patch, server-side apply (an upsert), and the
//! apiserver's refusals (415 strategic merge on custom resources, 422 `PatchOptions` for `force` on non-apply
//! patches or apply without `fieldManager`, 409 apply conflicts with the `FieldManagerConflict` body).

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::write::{ctx, current};
use super::{Query, Target, wake_gc, written};
use crate::error::{ApiError, Cause};
use crate::ops;
use crate::patch::fields::{self, OWNED_METADATA};
use crate::patch::managed::{self, Conflict};
use crate::patch::{json as json_patch, merge};
use crate::state::AppState;

fn content_type(headers: &HeaderMap) -> String {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    ct.split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn unsupported() -> ApiError {
    ApiError::status(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        None,
    )
}

pub fn patch(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let ct = content_type(headers);
    let is_apply = ct == "application/apply-patch+yaml";
    if q.flag("force") && !is_apply {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            vec![Cause::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        ));
    }
    let res = match ct.as_str() {
        "application/apply-patch+yaml" => apply(state, t, q, headers, body),
        "application/merge-patch+json" | "application/json-patch+json" => {
            classic(state, t, q, headers, body, &ct)
        }
        // Built-ins accept strategic merge; for the kinds served here (no merge keys in use) it is a merge patch.
        "application/strategic-merge-patch+json" if !t.rt.custom => {
            classic(state, t, q, headers, body, "application/merge-patch+json")
        }
        _ => Err(unsupported()),
    };
    wake_gc(state);
    res
}

fn classic(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
    ct: &str,
) -> Result<Response, ApiError> {
    let mut store = state.lock();
    let old = current(&store, t)?;
    let mut doc = old.clone();
    if ct == "application/json-patch+json" {
        json_patch::apply(&mut doc, body)?;
    } else {
        let p: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        merge::merge(&mut doc, &p);
    }
    ops::check_rv(&t.rt, t.name(), &old, &doc, false)?;
    let out = ops::update(&mut store, &t.rt, &old, doc, &ctx(t, q, headers))?;
    Ok(written(StatusCode::OK, out))
}

/// Parses an apply body: JSON (what kube-rs and kubectl send) or YAML.
fn parse_apply(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    serde_saphyr::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// Keeps what an apply may own: labels/annotations/finalizers/ownerReferences of metadata, and either the
/// status (on `/status`) or everything but the status (main resource with a status subresource).
fn applied_part(t: &Target, body: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(t.rt.api_version()));
    out.insert("kind".into(), json!(t.rt.kind));
    let mut meta = Map::new();
    for k in OWNED_METADATA {
        if let Some(v) = body["metadata"].get(k) {
            meta.insert(k.into(), v.clone());
        }
    }
    if t.sub.as_deref() == Some("status") {
        if let Some(s) = body.get("status") {
            out.insert("status".into(), s.clone());
        }
        return Value::Object(out);
    }
    out.insert("metadata".into(), Value::Object(meta));
    for (k, v) in body.as_object().into_iter().flatten() {
        let skip = matches!(k.as_str(), "apiVersion" | "kind" | "metadata")
            || (k == "status" && t.rt.status);
        if !skip {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    let who = |c: &Conflict| {
        if c.operation == "Update" {
            format!("\"{}\" using {}", c.manager, c.api_version)
        } else {
            format!("\"{}\"", c.manager)
        }
    };
    let message = if let [c] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            who(c),
            fields::display_path(&c.path)
        )
    } else {
        let lines: Vec<String> = conflicts
            .iter()
            .map(|c| {
                format!(
                    "conflict with {}: {}",
                    who(c),
                    fields::display_path(&c.path)
                )
            })
            .collect();
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", who(c)), "field": fields::display_path(&c.path)}))
        .collect();
    ApiError::status(409, "Conflict", message, Some(json!({"causes": causes})))
}

fn apply(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let Some(manager) = q.get("fieldManager").map(String::from) else {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            vec![Cause::new(
                "FieldValueRequired",
                "Required value: is required for apply patch",
                "fieldManager",
            )],
        ));
    };
    let body = parse_apply(body)?;
    if !body.is_object() {
        return Err(ApiError::bad_request("apply patch must be an object"));
    }
    let body_name = body["metadata"]["name"].as_str().unwrap_or_default();
    if !body_name.is_empty() && body_name != t.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            t.name()
        )));
    }
    if let Some(k) = body["kind"].as_str().filter(|k| *k != t.rt.kind) {
        let mut as_kind = t.rt.clone();
        as_kind.kind = k.to_string();
        return Err(ApiError::invalid_object(
            &as_kind,
            t.name(),
            vec![Cause::invalid(
                "kind",
                &json!(k),
                &format!("must be {}", t.rt.kind),
            )],
        ));
    }
    let applied = applied_part(t, &body);
    let force = q.flag("force");
    let mut wctx = ctx(t, q, headers);
    wctx.manager = manager.clone();
    wctx.preset_managed = true;
    let sub = t.sub.as_deref();
    let mut store = state.lock();
    let old = match current(&store, t) {
        Ok(o) => o,
        Err(e) if sub.is_some() => return Err(e),
        Err(_) => {
            let mut obj = managed::apply(
                &json!({"metadata": {}}),
                &applied,
                t.rt.schema.as_deref(),
                &manager,
                None,
                force,
            )
            .map_err(|c| conflict_error(&c))?;
            obj["metadata"]["name"] = json!(t.name());
            let out = ops::create(&mut store, &t.rt, t.ns(), obj, &wctx)?;
            return Ok(written(StatusCode::CREATED, out));
        }
    };
    ops::check_rv(&t.rt, t.name(), &old, &body, false)?;
    let merged = managed::apply(&old, &applied, t.rt.schema.as_deref(), &manager, sub, force)
        .map_err(|c| conflict_error(&c))?;
    let out = ops::update(&mut store, &t.rt, &old, merged, &wctx)?;
    Ok(written(StatusCode::OK, out))
}
