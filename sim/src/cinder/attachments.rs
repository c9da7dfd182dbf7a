//! The attachments API (`/attachments/{id}`, volume API 3.27+), only its delete: what
//! a volume's owner uses to let go of an attachment to a server Nova deleted while
//! Cinder could not be told. Answers as Cinder 29 does (`sim/cinder-wire.md`): 200 with
//! the volume's remaining attachments (none: multiattach is not modelled), the volume
//! `available` at once; below 3.27 the route does not exist.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::Utc;
use serde_json::json;

use super::envelope::enter;
use crate::state::Sim;
use crate::world::cinder::VolState;

/// The first microversion with the attachments API.
const ATTACHMENTS: u32 = 27;

pub(super) async fn delete(
    State(sim): State<Sim>,
    Path((project, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_attachment", &headers, &project).await?;
    if !cx.at_least(ATTACHMENTS) {
        return Err(cx.err(404, "The resource could not be found."));
    }
    let mut w = sim.world_of(&cx.project);
    let held = w
        .cinder
        .volumes
        .values_mut()
        .find(|v| v.attachment.as_ref().is_some_and(|a| a.id == id));
    let Some(v) = held else {
        let msg =
            format!("Volume attachment could not be found with filter: attachment_id = {id}.");
        return Err(cx.err(404, &msg));
    };
    v.attachment = None;
    v.status = VolState::Available;
    v.updated = Some(Utc::now());
    Ok(cx.ok(200, &json!({"attachments": []})))
}
