//! POST (create), PUT (replace, also of `/status`), DELETE of one object and of a collection.
//!
//! Custom resources have no unconditional PUT (422 without `metadata.resourceVersion`) and no create-on-update
//! (404); built-ins here accept a PUT without resourceVersion. DELETE answers the object while finalizers are
//! pending and a `Status` once it is gone (kube-wire `deletion.md`).

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::{Query, Target, parse_body, wake_gc, written};
use crate::error::{ApiError, json_response};
use crate::ops::{self, Deleted, WriteCtx};
use crate::state::AppState;

pub fn ctx(t: &Target, q: &Query, headers: &HeaderMap) -> WriteCtx {
    WriteCtx {
        manager: q.manager(headers),
        fv: q.field_validation(),
        sub: t.sub.clone(),
        preset_managed: false,
    }
}

pub fn create(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let obj = parse_body(&t.rt, body)?;
    let mut store = state.lock();
    let out = ops::create(&mut store, &t.rt, t.ns(), obj, &ctx(t, q, headers))?;
    drop(store);
    wake_gc(state);
    Ok(written(StatusCode::CREATED, out))
}

/// The stored object in wire shape, or 404.
pub fn current(store: &crate::store::Store, t: &Target) -> Result<Value, ApiError> {
    let ns = if t.rt.namespaced { t.ns() } else { "" };
    store
        .get(&t.rt.storage, ns, t.name())
        .map(|o| t.rt.to_view(o))
        .ok_or_else(|| ApiError::not_found(&t.rt, t.name()))
}

pub fn replace(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let obj = parse_body(&t.rt, body)?;
    let body_name = obj["metadata"]["name"].as_str().unwrap_or_default();
    if !body_name.is_empty() && body_name != t.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            t.name()
        )));
    }
    let mut store = state.lock();
    let old = current(&store, t)?;
    ops::check_rv(&t.rt, t.name(), &old, &obj, t.rt.custom)?;
    let out = ops::update(&mut store, &t.rt, &old, obj, &ctx(t, q, headers))?;
    drop(store);
    wake_gc(state);
    Ok(written(StatusCode::OK, out))
}

/// DeleteOptions from the body (kube-rs always sends one; kubectl too; curl may not).
fn delete_options(body: &Bytes) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))
}

pub fn delete(state: &AppState, t: &Target, body: &Bytes) -> Result<Response, ApiError> {
    let opts = delete_options(body)?;
    let mut store = state.lock();
    let res = ops::delete(&mut store, &t.rt, t.ns(), t.name(), &opts)?;
    drop(store);
    wake_gc(state);
    Ok(match res {
        Deleted::Pending(obj) => json_response(StatusCode::OK, &obj, &[]),
        Deleted::Gone(status) => json_response(StatusCode::OK, &status, &[]),
    })
}

/// DELETE on a collection: deletes every selected object, answers the list of what was selected.
pub fn delete_collection(
    state: &AppState,
    t: &Target,
    q: &Query,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let opts = delete_options(body)?;
    let (labels, fields) = super::read::selectors(&t.rt, q)?;
    let mut store = state.lock();
    let ns = if t.rt.namespaced {
        t.ns.as_deref()
    } else {
        None
    };
    let names: Vec<(String, String)> = store
        .list(&t.rt.storage, ns)
        .map(|o| t.rt.to_view(o))
        .filter(|o| labels.matches(o) && fields.matches(o))
        .map(|o| {
            (
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let mut items = Vec::new();
    for (ns, name) in names {
        if let Ok(obj) = store
            .get(&t.rt.storage, &ns, &name)
            .map(|o| t.rt.to_view(o))
            .ok_or(())
        {
            items.push(obj);
        }
        ops::delete(&mut store, &t.rt, &ns, &name, &opts)?;
    }
    let rv = store.rv().to_string();
    drop(store);
    wake_gc(state);
    let body = json!({"apiVersion": t.rt.api_version(), "items": items, "kind": t.rt.list_kind, "metadata": {"continue": "", "resourceVersion": rv}});
    Ok(json_response(StatusCode::OK, &body, &[]))
}
