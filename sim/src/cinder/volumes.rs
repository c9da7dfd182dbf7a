//! `/volumes`: create (size, name, type, metadata; the `volumes` and `gigabytes`
//! quotas), list with Cinder's filters (`metadata` as JSON, `name`, `status`) and
//! pagination, show, delete (only when not attached), `os-extend` and metadata.

use std::collections::BTreeMap;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};

use super::envelope::{Cx, SERVICE, body, enter};
use super::view;
use crate::state::Sim;
use crate::world::World;
use crate::world::cinder::{VolState, Volume};

const NOT_DELETABLE: &str = "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.";

fn not_found(cx: &Cx, id: &str) -> Response {
    cx.err(404, &format!("Volume {id} could not be found."))
}

/// What a valid create asks for.
struct Request {
    name: String,
    size: i64,
    type_name: String,
    metadata: BTreeMap<String, String>,
}

pub(super) async fn create(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_volume", &headers, &project).await?;
    let req = body(&cx, &bytes)?;
    let mut w = sim.world_of(&cx.project);
    let request = validate(&cx, &w, &req)?;
    quota(&cx, &w, request.size, 1)?;
    let fails = sim.faults.server_error(SERVICE, "create_volume");
    let volume = new_volume(&mut w, request, fails);
    let view = view::volume(&cx, &volume);
    w.cinder.volumes.insert(volume.id.clone(), volume);
    Ok(cx.ok(202, &json!({ "volume": view })))
}

fn validate(cx: &Cx, w: &World, req: &Value) -> Result<Request, Response> {
    let Some(v) = req.get("volume").and_then(Value::as_object) else {
        return Err(cx.err(400, "Missing required element 'volume' in request body."));
    };
    let size = size(cx, v.get("size"))?;
    let name = match v.get("name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(n)) if n.chars().count() <= 255 => n.clone(),
        Some(other) => return Err(invalid(cx, "name", other, "is too long")),
    };
    let wanted = v.get("volume_type").and_then(Value::as_str);
    let Some((_, type_name)) = w.cinder.volume_type(wanted) else {
        let t = wanted.unwrap_or_default();
        return Err(cx.err(
            404,
            &format!("Volume type with name {t} could not be found."),
        ));
    };
    let type_name = type_name.clone();
    Ok(Request {
        name,
        size,
        type_name,
        // Cinder's create schema takes `metadata: null` (what the openstack CLI sends
        // when none is given), its metadata update does not.
        metadata: match v.get("metadata") {
            Some(Value::Null) => BTreeMap::new(),
            _ => metadata(cx, v)?,
        },
    })
}

fn invalid(cx: &Cx, field: &str, value: &Value, why: &str) -> Response {
    let shown = crate::wire::py_repr(value);
    cx.err(
        400,
        &format!("Invalid input for field/attribute {field}. Value: {shown}. {shown} {why}"),
    )
}

/// A size in GiB: an integer (or a string of one) of at least 1.
fn size(cx: &Cx, v: Option<&Value>) -> Result<i64, Response> {
    let parsed = match v {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    match (parsed, v) {
        (Some(n), _) if n >= 1 => Ok(n),
        (Some(n), _) => Err(cx.err(
            400,
            &format!("Invalid input for field/attribute size. Value: {n}. {n} is less than the minimum of 1"),
        )),
        (None, Some(other)) => Err(invalid(cx, "size", other, "is not of type 'integer', 'string'")),
        (None, None) => Err(cx.err(400, "Invalid input for field/attribute volume. 'size' is a required property")),
    }
}

fn metadata(cx: &Cx, v: &Map<String, Value>) -> Result<BTreeMap<String, String>, Response> {
    let Some(items) = v.get("metadata") else {
        return Ok(BTreeMap::new());
    };
    let Some(items) = items.as_object() else {
        return Err(invalid(cx, "metadata", items, "is not of type 'object'"));
    };
    items
        .iter()
        .map(|(k, val)| match val.as_str() {
            Some(s) if k.len() <= 255 && s.len() <= 255 => Ok((k.clone(), s.to_owned())),
            _ => Err(invalid(cx, "metadata", val, "is not of type 'string'")),
        })
        .collect()
}

/// The `volumes` and `gigabytes` quotas, for `count` more volumes of `gigabytes` more.
fn quota(cx: &Cx, w: &World, gigabytes: i64, count: usize) -> Result<(), Response> {
    let c = &w.cinder;
    if c.volumes.len() + count > c.volume_quota {
        let q = c.volume_quota;
        return Err(cx.err(
            413,
            &format!("VolumeLimitExceeded: Maximum number of volumes allowed ({q}) exceeded for quota 'volumes'."),
        ));
    }
    let used = c.gigabytes();
    if used + gigabytes > c.gigabytes_quota {
        let q = c.gigabytes_quota;
        return Err(cx.err(
            413,
            &format!("VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota. Requested {gigabytes}G, quota is {q}G and {used}G has been consumed."),
        ));
    }
    Ok(())
}

fn new_volume(w: &mut World, r: Request, fails: bool) -> Volume {
    let end = if fails {
        VolState::Error
    } else {
        VolState::Available
    };
    let until = Instant::now() + w.volume_delay;
    w.schedule(until);
    Volume {
        id: w.uuid(),
        seq: w.next_seq(),
        name: r.name,
        size: r.size,
        volume_type: r.type_name,
        status: VolState::Creating,
        until: Some((until, end)),
        extend_to: None,
        metadata: r.metadata,
        attachment: None,
        bootable: false,
        created: Utc::now(),
        updated: None,
    }
}

pub(super) async fn list(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    Query(q): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_volumes", &headers, &project).await?;
    let wanted: BTreeMap<String, String> = match q.get("metadata") {
        Some(m) => serde_json::from_str::<BTreeMap<String, Value>>(m)
            .map_err(|_| cx.err(400, &format!("Invalid filter: metadata {m}")))?
            .into_iter()
            .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect(),
        None => BTreeMap::new(),
    };
    let w = sim.world_of(&cx.project);
    let mut matching: Vec<&Volume> = w
        .cinder
        .volumes
        .values()
        .filter(|v| wanted.iter().all(|(k, val)| v.metadata.get(k) == Some(val)))
        .filter(|v| q.get("name").is_none_or(|n| &v.name == n))
        .filter(|v| q.get("status").is_none_or(|s| v.status.as_str() == s))
        .collect();
    // Newest first, as Cinder sorts by default.
    matching.sort_by_key(|v| std::cmp::Reverse(v.seq));
    if let Some(marker) = q.get("marker") {
        let Some(at) = matching.iter().position(|v| &v.id == marker) else {
            return Err(cx.err(
                400,
                &format!("Invalid input received: marker [{marker}] not found"),
            ));
        };
        matching.drain(..=at);
    }
    let limit = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(usize::MAX)
        .min(w.page_size_max());
    let more = matching.len() > limit;
    matching.truncate(limit);
    let items: Vec<Value> = matching.iter().map(|v| view::volume(&cx, v)).collect();
    let mut body = json!({ "volumes": items });
    if more && let Some(last) = matching.last() {
        let href = format!(
            "{}/volume/v3/{}/volumes/detail?limit={limit}&marker={}",
            cx.base, cx.project, last.id
        );
        body["volumes_links"] = json!([{"rel": "next", "href": href}]);
    }
    Ok(cx.ok(200, &body))
}

pub(super) async fn get_one(
    State(sim): State<Sim>,
    Path((project, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_volume", &headers, &project).await?;
    let w = sim.world_of(&cx.project);
    let v = w
        .cinder
        .volumes
        .get(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    Ok(cx.ok(200, &json!({ "volume": view::volume(&cx, v) })))
}

pub(super) async fn delete(
    State(sim): State<Sim>,
    Path((project, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_volume", &headers, &project).await?;
    let mut w = sim.world_of(&cx.project);
    let delay = w.volume_delay;
    let v = w
        .cinder
        .volumes
        .get_mut(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    let deletable = matches!(v.status, VolState::Available | VolState::Error);
    if !deletable || v.attachment.is_some() {
        return Err(cx.err(400, NOT_DELETABLE));
    }
    let until = Instant::now() + delay;
    v.status = VolState::Deleting;
    v.until = Some((until, VolState::Deleting));
    w.schedule(until);
    Ok(cx.empty(202))
}

pub(super) async fn action(
    State(sim): State<Sim>,
    Path((project, id)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "volume_action", &headers, &project).await?;
    let req = body(&cx, &bytes)?;
    let Some(extend) = req.get("os-extend") else {
        return Err(cx.err(400, "There is no such action: only os-extend is simulated"));
    };
    let mut w = sim.world_of(&cx.project);
    let v = w
        .cinder
        .volumes
        .get(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    let (current, status) = (v.size, v.status);
    let new_size = extend
        .get("new_size")
        .and_then(Value::as_i64)
        .ok_or_else(|| cx.err(400, "Invalid input for field/attribute new_size."))?;
    let allowed = status == VolState::Available || (status == VolState::InUse && cx.at_least(42));
    if !allowed {
        let wanted = match cx.at_least(42) {
            true => "('available', 'in-use')",
            false => "'available'",
        };
        let now = status.as_str();
        return Err(cx.err(
            400,
            &format!("Invalid volume: Volume {id} status must be '{{'status': {wanted}}}' to extend, currently {now}."),
        ));
    }
    if new_size <= current {
        return Err(cx.err(
            400,
            &format!("Invalid input received: New size for extend must be greater than current size. (current: {current}, extended: {new_size})."),
        ));
    }
    quota(&cx, &w, new_size - current, 0)?;
    let until = Instant::now() + w.volume_delay;
    w.schedule(until);
    if let Some(v) = w.cinder.volumes.get_mut(&id) {
        v.status = VolState::Extending;
        v.until = Some((until, status));
        v.extend_to = Some(new_size);
    }
    Ok(cx.empty(202))
}

pub(super) async fn set_metadata(
    State(sim): State<Sim>,
    Path((project, id)): Path<(String, String)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "set_volume_metadata", &headers, &project).await?;
    let req = body(&cx, &bytes)?;
    let metadata = match req.as_object() {
        Some(obj) => metadata(&cx, obj)?,
        None => BTreeMap::new(),
    };
    let mut w = sim.world_of(&cx.project);
    let v = w
        .cinder
        .volumes
        .get_mut(&id)
        .ok_or_else(|| not_found(&cx, &id))?;
    v.metadata = metadata;
    v.updated = Some(Utc::now());
    Ok(cx.ok(200, &json!({ "metadata": v.metadata })))
}

/// Cinder's zones as the real systems' Cinder 29 lists them (`sim/nova-zones.md`): only
/// `nova`, without `hosts`; a volume asked into any other zone is made there too
/// (`allow_availability_zone_fallback`).
pub(super) async fn zones(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_availability_zones", &headers, &project).await?;
    let zone = json!({"zoneName": "nova", "zoneState": {"available": true}});
    Ok(cx.ok(200, &json!({ "availabilityZoneInfo": [zone] })))
}

pub(super) async fn types(
    State(sim): State<Sim>,
    Path(project): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_volume_types", &headers, &project).await?;
    let w = sim.world_of(&cx.project);
    let types: Vec<Value> = w
        .cinder
        .types
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name, "is_public": true, "extra_specs": {}, "os-volume-type-access:is_public": true}))
        .collect();
    Ok(cx.ok(200, &json!({ "volume_types": types })))
}
