//! GET of one object and LIST of a collection: label/field selectors, `limit`/`continue` pages with
//! `remainingItemCount`, resourceVersion semantics (`0` ignores limit, `Exact` on a compacted RV is 410,
//! `NotOlderThan` in the future is 504), and the server-side Table when kubectl asks for it.
//!
//! Pages are not a frozen snapshot: a continued page reads current data after the last key, stamped with the
//! first page's resourceVersion (enough for clients, which never compare page contents across writes).

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use serde_json::{Value, json};

use super::{Query, Render, Target, partial};
use crate::error::{ApiError, Cause, json_response};
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::state::AppState;
use crate::table;

pub fn get(state: &AppState, t: &Target, render: Render) -> Result<Response, ApiError> {
    let store = state.lock();
    let ns = if t.rt.namespaced { t.ns() } else { "" };
    let obj = store
        .get(&t.rt.storage, ns, t.name())
        .map(|o| t.rt.to_view(o))
        .ok_or_else(|| ApiError::not_found(&t.rt, t.name()))?;
    Ok(json_response(StatusCode::OK, &render.one(&t.rt, obj), &[]))
}

/// The field labels a resource supports in `fieldSelector`.
pub fn field_allowed(rt: &ResourceType, field: &str) -> bool {
    if matches!(field, "metadata.name" | "metadata.namespace") {
        return true;
    }
    match (rt.custom, rt.plural.as_str()) {
        (false, "events") => true,
        (false, "namespaces") => field == "status.phase",
        (false, "secrets") => field == "type",
        _ => false,
    }
}

/// Parsed selectors of a list or watch.
pub fn selectors(rt: &ResourceType, q: &Query) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").unwrap_or_default())
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(q.get("fieldSelector").unwrap_or_default(), |f| {
        field_allowed(rt, f)
    })
    .map_err(ApiError::bad_request)?;
    Ok((labels, fields))
}

fn encode_continue(rv: u64, start: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{start}\u{0}")});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> Option<(u64, String)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        v["rv"].as_u64()?,
        v["start"].as_str()?.trim_end_matches('\u{0}').to_string(),
    ))
}

/// Keys are `namespace/name`; compare as tuples so pages follow the store's (namespace, name) order.
fn key_tuple(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

fn check_list_options(q: &Query) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    if q.get("resourceVersionMatch").is_some() && q.get("resourceVersion").is_none() {
        causes.push(Cause::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if q.flag("sendInitialEvents") {
        causes.push(Cause::forbidden(
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        ));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_options("ListOptions", causes))
    }
}

pub fn list(state: &AppState, t: &Target, q: &Query, render: Render) -> Result<Response, ApiError> {
    check_list_options(q)?;
    let (labels, fields) = selectors(&t.rt, q)?;
    let store = state.lock();
    let current = store.rv();
    let rv_param = q.get("resourceVersion");
    let rv_num = rv_param.and_then(|r| r.parse::<u64>().ok());
    match (q.get("resourceVersionMatch"), rv_num) {
        (Some("Exact"), Some(rv)) if rv < store.compacted_rv() || rv == 0 => {
            return Err(ApiError::gone(
                "The resourceVersion for the provided list is too old.",
            ));
        }
        (Some("NotOlderThan") | None, Some(rv)) if rv > current => {
            return Err(ApiError::status(
                504,
                "Timeout",
                format!("Timeout: Too large resource version: {rv}, current: {current}"),
                Some(
                    json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
                ),
            ));
        }
        _ => {}
    }
    let (list_rv, start) = match q.get("continue") {
        Some(token) => {
            let (rv, start) = decode_continue(token).ok_or_else(|| {
                ApiError::bad_request("continue key is not valid: invalid continue token")
            })?;
            if rv < store.compacted_rv() {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                ));
            }
            (rv, Some(start))
        }
        None => (current, None),
    };
    let limit = if rv_param == Some("0") {
        None
    } else {
        q.get("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|l| *l > 0)
    };
    let ns = if t.rt.namespaced {
        t.ns.as_deref()
    } else {
        None
    };
    let matching: Vec<(String, Value)> = store
        .list(&t.rt.storage, ns)
        .map(|o| {
            (
                format!(
                    "{}/{}",
                    o["metadata"]["namespace"].as_str().unwrap_or_default(),
                    o["metadata"]["name"].as_str().unwrap_or_default()
                ),
                t.rt.to_view(o),
            )
        })
        .filter(|(key, _)| start.as_ref().is_none_or(|s| key_tuple(key) > key_tuple(s)))
        .filter(|(_, o)| labels.matches(o) && fields.matches(o))
        .collect();
    drop(store);
    let total = matching.len();
    let take = limit.unwrap_or(total).min(total);
    let last_key = if take > 0 {
        matching[take - 1].0.clone()
    } else {
        String::new()
    };
    let mut items: Vec<Value> = matching.into_iter().take(take).map(|(_, o)| o).collect();
    let rv_str = list_rv.to_string();
    if let Render::Table(include) = render {
        return Ok(json_response(
            StatusCode::OK,
            &table::render(&t.rt, &items, &rv_str, include),
            &[],
        ));
    }
    let (api_version, list_kind) = if render == Render::Metadata {
        items = items.iter().map(partial).collect();
        (
            "meta.k8s.io/v1".to_string(),
            "PartialObjectMetadataList".to_string(),
        )
    } else {
        (t.rt.api_version(), t.rt.list_kind.clone())
    };
    if !t.rt.custom && render == Render::Object {
        for it in items.iter_mut().filter_map(Value::as_object_mut) {
            it.remove("apiVersion");
            it.remove("kind");
        }
    }
    let mut meta = json!({"resourceVersion": rv_str});
    if take < total {
        meta["continue"] = json!(encode_continue(list_rv, &last_key));
        meta["remainingItemCount"] = json!(total - take);
    } else if t.rt.custom {
        meta["continue"] = json!("");
    }
    let body =
        json!({"apiVersion": api_version, "items": items, "kind": list_kind, "metadata": meta});
    Ok(json_response(StatusCode::OK, &body, &[]))
}
