//! `POST /servers/{id}/action`: resize (→ RESIZE, then VERIFY_RESIZE after the build
//! delay), confirmResize (→ ACTIVE with the new flavor), revertResize, and the power
//! actions os-stop (ACTIVE, task_state `powering-off` for the build delay, then
//! SHUTOFF) and os-start (the reverse, `powering-on`), as the real Nova's fake driver
//! does within a second; each from another state or during a task is Nova's 409.
//! Other actions (reboot, rebuild, …) answer 400.

use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use serde_json::Value;

use super::envelope::{Cx, body, not_found_server};
use crate::model::Status;
use crate::state::Sim;
use crate::world::World;

pub(super) async fn action(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let raw = crate::wire::parse_body(&bytes).unwrap_or(Value::Null);
    let name = raw
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default();
    let op = match name.as_str() {
        "resize" => "resize_server",
        "confirmResize" => "confirm_resize",
        "revertResize" => "revert_resize",
        "os-stop" => "stop_server",
        "os-start" => "start_server",
        _ => "server_action",
    };
    let cx = super::envelope::enter(&sim, op, &headers).await?;
    let req = body(&cx, &bytes)?;
    let mut w = sim.world_of(&cx.project);
    if !w.servers.contains_key(&id) {
        return Err(not_found_server(&cx, &id));
    }
    match name.as_str() {
        "resize" => resize(&cx, &mut w, &id, &req["resize"]),
        "confirmResize" => finish(&cx, &mut w, &id, true),
        "revertResize" => finish(&cx, &mut w, &id, false),
        "os-stop" => power(
            &cx,
            &mut w,
            &id,
            Status::Active,
            Status::PoweringOff,
            "stop",
        ),
        "os-start" => power(
            &cx,
            &mut w,
            &id,
            Status::Shutoff,
            Status::PoweringOn,
            "start",
        ),
        other => Err(cx.err(400, &format!("There is no such action: {other}"))),
    }
}

fn conflict(cx: &Cx, action: &str, id: &str, vm_state: &str) -> Response {
    cx.err(
        409,
        &format!("Cannot '{action}' instance {id} while it is in vm_state {vm_state}"),
    )
}

fn resize(cx: &Cx, w: &mut World, id: &str, args: &Value) -> Result<Response, Response> {
    let Some(flavor_ref) = args.get("flavorRef").and_then(Value::as_str) else {
        return Err(super::envelope::required(cx, "resize", args, "flavorRef"));
    };
    let flavor_id = flavor_ref
        .rsplit('/')
        .next()
        .unwrap_or(flavor_ref)
        .to_string();
    if !w.flavors.iter().any(|f| f.id == flavor_id) {
        return Err(cx.err(400, &format!("Flavor {flavor_id} could not be found.")));
    }
    let until = Instant::now() + w.build_delay;
    let s = w
        .servers
        .get_mut(id)
        .ok_or_else(|| not_found_server(cx, id))?;
    if s.status != Status::Active || s.deleting {
        return Err(conflict(cx, "resize", id, vm_state(s.status)));
    }
    if s.flavor_id == flavor_id {
        return Err(cx.err(400, "When resizing, instances must change flavor!"));
    }
    s.resize_to = Some(std::mem::replace(&mut s.flavor_id, flavor_id));
    s.status = Status::Resize;
    s.until = Some(until);
    s.updated = Utc::now();
    w.schedule(until);
    Ok(cx.empty(202))
}

/// Confirm keeps the new flavor; revert restores the old one (kept in `resize_to`).
fn finish(cx: &Cx, w: &mut World, id: &str, confirm: bool) -> Result<Response, Response> {
    let s = w
        .servers
        .get_mut(id)
        .ok_or_else(|| not_found_server(cx, id))?;
    if s.status != Status::VerifyResize {
        let action = if confirm {
            "confirmResize"
        } else {
            "revertResize"
        };
        return Err(conflict(cx, action, id, vm_state(s.status)));
    }
    let old = s.resize_to.take();
    if !confirm && let Some(old) = old {
        s.flavor_id = old;
    }
    s.status = Status::Active;
    s.updated = Utc::now();
    Ok(cx.empty(if confirm { 204 } else { 202 }))
}

/// os-stop and os-start: 202 from `from` (the server is `busy` for the build delay),
/// Nova's 409 (as recorded on the real Nova) from any other state or during a task.
fn power(
    cx: &Cx,
    w: &mut World,
    id: &str,
    from: Status,
    busy: Status,
    action: &str,
) -> Result<Response, Response> {
    let until = Instant::now() + w.build_delay;
    let s = w
        .servers
        .get_mut(id)
        .ok_or_else(|| not_found_server(cx, id))?;
    let task = match s.status {
        Status::PoweringOff => Some("powering-off"),
        Status::PoweringOn => Some("powering-on"),
        _ => None,
    };
    if let Some(task) = task {
        return Err(cx.err(
            409,
            &format!("Cannot '{action}' instance {id} while it is in task_state {task}"),
        ));
    }
    if s.status != from || s.deleting {
        return Err(conflict(cx, action, id, vm_state(s.status)));
    }
    s.status = busy;
    s.until = Some(until);
    s.updated = Utc::now();
    w.schedule(until);
    Ok(cx.empty(202))
}

fn vm_state(st: Status) -> &'static str {
    match st {
        Status::Build => "building",
        Status::Error => "error",
        Status::VerifyResize => "resized",
        Status::Shutoff => "stopped",
        _ => "active",
    }
}
