//! Volume attachments (`/servers/{id}/os-volume_attachments`): attach an `available`
//! Cinder volume to an ACTIVE server (Nova picks the device), list, detach. Worded as
//! the real Nova 34 with Cinder 29 answer (`sim/cinder-wire.md`); with the fake virt
//! driver both complete at once, so the volume is `in-use` (or `available`) when the
//! call returns.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{delete, get};
use chrono::Utc;
use serde_json::{Value, json};

use super::envelope::{Cx, body, enter, not_found_server};
use crate::model::Status;
use crate::state::Sim;
use crate::world::World;
use crate::world::cinder::{Attachment, VolState, Volume};

pub(super) fn routes(r: Router<Sim>, p: &str) -> Router<Sim> {
    r.route(
        &format!("{p}/servers/{{id}}/os-volume_attachments"),
        get(list).post(attach),
    )
    .route(
        &format!("{p}/servers/{{id}}/os-volume_attachments/{{volume}}"),
        delete(detach),
    )
}

/// One attachment as Nova shows it at the request's microversion.
fn view(cx: &Cx, server: &str, v: &Volume) -> Value {
    let a = v.attachment.as_ref();
    let mut out = json!({
        "id": v.id, "serverId": server, "volumeId": v.id,
        "device": a.map(|a| a.device.clone()),
    });
    if cx.at_least(70) {
        out["tag"] = Value::Null;
    }
    if cx.at_least(79) {
        out["delete_on_termination"] = json!(a.is_some_and(|a| a.delete_on_termination));
    }
    out
}

/// The first `/dev/vdX` (from `vdb`; `vda` is the root disk) no volume of the server uses.
fn free_device(w: &World, server: &str) -> String {
    let used: Vec<String> = w
        .cinder
        .attached_to(server)
        .iter()
        .filter_map(|v| v.attachment.as_ref().map(|a| a.device.clone()))
        .collect();
    (b'b'..=b'z')
        .map(|c| format!("/dev/vd{}", c as char))
        .find(|d| !used.contains(d))
        .unwrap_or_else(|| "/dev/vdzz".into())
}

/// Nova attaches to an ACTIVE or a stopped server.
fn attachable(cx: &Cx, w: &World, id: &str) -> Result<(), Response> {
    let server = w.servers.get(id).ok_or_else(|| not_found_server(cx, id))?;
    if matches!(server.status, Status::Active | Status::Shutoff) && !server.deleting {
        return Ok(());
    }
    let state = match server.status {
        Status::Build => "building",
        Status::Error => "error",
        _ => "resized",
    };
    Err(cx.err(
        409,
        &format!("Cannot 'attach_volume' instance {id} while it is in vm_state {state}"),
    ))
}

async fn attach(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "attach_volume", &headers).await?;
    let req = body(&cx, &bytes)?;
    let Some(volume_id) = req
        .pointer("/volumeAttachment/volumeId")
        .and_then(Value::as_str)
    else {
        return Err(cx.err(400, "'volumeId' is a required property"));
    };
    let mut w = sim.world_of(&cx.project);
    attachable(&cx, &w, &id)?;
    let device = free_device(&w, &id);
    let attachment_id = w.uuid();
    let v = w
        .cinder
        .volumes
        .get_mut(volume_id)
        .ok_or_else(|| cx.err(404, &format!("Volume {volume_id} could not be found.")))?;
    if let Some(a) = &v.attachment {
        let on = &a.server_id;
        return Err(cx.err(
            400,
            &format!("Invalid volume: volume {volume_id} is already attached to instances: {on}"),
        ));
    }
    if v.status != VolState::Available {
        let now = v.status.as_str();
        return Err(cx.err(
            400,
            &format!("Invalid volume: Volume {volume_id} status must be available or downloading to reserve, but the current status is {now}."),
        ));
    }
    v.status = VolState::InUse;
    v.updated = Some(Utc::now());
    v.attachment = Some(Attachment {
        id: attachment_id,
        server_id: id.clone(),
        device,
        at: Utc::now(),
        delete_on_termination: false,
    });
    let shown = view(&cx, &id, v);
    Ok(cx.ok(200, &json!({ "volumeAttachment": shown })))
}

async fn list(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_volume_attachments", &headers).await?;
    let w = sim.world_of(&cx.project);
    if !w.servers.contains_key(&id) {
        return Err(not_found_server(&cx, &id));
    }
    let items: Vec<Value> = w
        .cinder
        .attached_to(&id)
        .iter()
        .map(|v| view(&cx, &id, v))
        .collect();
    Ok(cx.ok(200, &json!({ "volumeAttachments": items })))
}

async fn detach(
    State(sim): State<Sim>,
    Path((id, volume_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "detach_volume", &headers).await?;
    let mut w = sim.world_of(&cx.project);
    if !w.servers.contains_key(&id) {
        return Err(not_found_server(&cx, &id));
    }
    let not_attached = || {
        cx.err(
            404,
            &format!("Instance {id} is not attached to volume {volume_id}"),
        )
    };
    let v = w
        .cinder
        .volumes
        .get_mut(&volume_id)
        .ok_or_else(not_attached)?;
    let Some(a) = v.attachment.as_ref().filter(|a| a.server_id == id) else {
        return Err(not_attached());
    };
    if a.delete_on_termination && v.bootable {
        return Err(cx.err(400, "Cannot detach a root device volume"));
    }
    v.attachment = None;
    v.status = VolState::Available;
    v.updated = Some(Utc::now());
    Ok(cx.empty(202))
}
