//! The `/scale` subresource (autoscaling/v1 `Scale`) of custom resources declaring one: GET builds the Scale
//! from `specReplicasPath`/`statusReplicasPath`/`labelSelectorPath`; PUT and PATCH write `specReplicasPath`
//! of the object (so its generation moves) under the object's resourceVersion.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::write::{ctx, current};
use super::{Query, Target, parse_body};
use crate::error::{ApiError, json_response};
use crate::ops;
use crate::patch::{json as json_patch, merge};
use crate::registry::ScaleSpec;
use crate::state::AppState;
use crate::validation::{set_at_path, value_at_path};

fn spec(t: &Target) -> Result<&ScaleSpec, ApiError> {
    t.rt.scale.as_ref().ok_or_else(ApiError::page_not_found)
}

fn scale_of(sc: &ScaleSpec, obj: &Value) -> Value {
    let m = &obj["metadata"];
    let mut meta = json!({});
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(k) {
            meta[k] = v.clone();
        }
    }
    let mut status =
        json!({"replicas": value_at_path(obj, &sc.status_replicas).cloned().unwrap_or(json!(0))});
    if let Some(sel) = sc
        .label_selector
        .as_deref()
        .and_then(|p| value_at_path(obj, p))
    {
        status["selector"] = sel.clone();
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta,
        "spec": {"replicas": value_at_path(obj, &sc.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": status,
    })
}

pub fn get(state: &AppState, t: &Target) -> Result<Response, ApiError> {
    let sc = spec(t)?;
    let obj = current(&state.lock(), t)?;
    Ok(json_response(StatusCode::OK, &scale_of(sc, &obj), &[]))
}

/// Writes `replicas` into the object after checking the Scale's resourceVersion precondition.
fn write_replicas(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    make_scale: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Response, ApiError> {
    let sc = spec(t)?;
    let mut store = state.lock();
    let old = &current(&store, t)?;
    let new_scale = make_scale(old)?;
    if let Some(rv) = new_scale["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        && Some(rv) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::conflict(&t.rt, t.name()));
    }
    let replicas = new_scale["spec"]["replicas"].clone();
    let mut candidate = old.clone();
    set_at_path(&mut candidate, &sc.spec_replicas, replicas);
    let mut wctx = ctx(t, q, headers);
    wctx.sub = None;
    let mut out = ops::update(&mut store, &t.rt, old, candidate, &wctx)?;
    // The write went through the main resource's path; record it as the scale subresource, like the server.
    if let Some(mf) = out.object["metadata"]["managedFields"].as_array_mut() {
        for e in mf.iter_mut().filter(|e| {
            e["manager"] == json!(wctx.manager)
                && e["operation"] == "Update"
                && e.get("subresource").is_none()
        }) {
            e["subresource"] = json!("scale");
        }
    }
    Ok(json_response(
        StatusCode::OK,
        &scale_of(sc, &out.object),
        &out.warnings,
    ))
}

pub fn put(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let new_scale = parse_body(&t.rt, body)?;
    write_replicas(state, t, q, headers, |_| Ok(new_scale))
}

pub fn patch(
    state: &AppState,
    t: &Target,
    q: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let sc = spec(t)?;
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    write_replicas(state, t, q, headers, |old| {
        let mut doc = scale_of(sc, old);
        if ct.starts_with("application/json-patch+json") {
            json_patch::apply(&mut doc, body)?;
        } else {
            let p: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            merge::merge(&mut doc, &p);
        }
        // The Scale's own resourceVersion is the object's; a patch does not carry a precondition.
        Ok(doc)
    })
}
