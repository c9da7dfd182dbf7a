//! The data volume writes: create, delete a duplicate, extend, attach; and what a step
//! that writes nothing reports.

use std::time::Duration;

use kube::runtime::events::EventType;
use verda_api::conditions::Status;

use crate::caches::cloud_view::ProjectView;
use crate::cloud::ids::{ServerId, VolumeId};
use crate::cloud::model::volume::CreateVolume;
use crate::cloud::{BlockStorage, Compute};
use crate::controllers::virtual_machine::outcome::{Outcome, PROVISIONING};
use crate::controllers::virtual_machine::volumes::plan::VolumeStep;
use crate::runtime::ReconcileError;

/// The Ready reason of a volume in an error state.
pub const VOLUME_ERROR: &str = "VolumeError";

/// Where a volume step acts: Cinder, Nova and the server volumes attach to.
pub struct Target<'a> {
    pub cinder: &'a dyn BlockStorage,
    /// Where Cinder's zones are listed once per resync, for volumes made in a zone.
    pub view: &'a ProjectView,
    pub resync: Duration,
    pub compute: &'a dyn Compute,
    pub server: Option<ServerId>,
    pub key: &'a str,
    pub poll: Duration,
    pub slow: Duration,
}

/// Carries out `step`.
pub async fn run(t: &Target<'_>, step: VolumeStep) -> Result<Outcome, ReconcileError> {
    let busy = |message: String, event| Outcome {
        server_id: t.server.clone(),
        ready: (Status::False, PROVISIONING, message),
        event,
        requeue: t.poll,
        dns: None,
    };
    Ok(match step {
        VolumeStep::Create { request, was } => {
            let event = create(t, &request, was).await?;
            busy(format!("creating volume {}", request.name), Some(event))
        }
        VolumeStep::DeleteDuplicate { name, id } => {
            crate::cloud::ignore_not_found(t.cinder.delete_volume(&id).await)
                .map_err(ReconcileError::cloud("delete a duplicate volume", t.key))?;
            let note = format!("deleted volume {id}, a second volume {name} never attached");
            busy(
                note.clone(),
                Some((EventType::Warning, "DuplicateDeleted", note)),
            )
        }
        VolumeStep::Extend { name, id, from, to } => {
            t.cinder
                .extend_volume(&id, to)
                .await
                .map_err(ReconcileError::cloud("extend volume", t.key))?;
            let note = format!("extending volume {name} ({id}) from {from} to {to} GiB");
            busy(
                note.clone(),
                Some((EventType::Normal, "VolumeExtended", note)),
            )
        }
        VolumeStep::Attach {
            name,
            id,
            server,
            reattach,
        } => attach(t, &name, &id, &server, reattach).await?,
        // Whether the holder exists is Nova's to say: `stale_holders` carries it out.
        VolumeStep::Held { name, .. } => {
            busy(format!("volume {name} is held by another server"), None)
        }
        VolumeStep::Wait(message) => busy(message, None),
        VolumeStep::Failed(message) => Outcome {
            server_id: t.server.clone(),
            ready: (Status::False, VOLUME_ERROR, message.clone()),
            event: Some((EventType::Warning, VOLUME_ERROR, message)),
            requeue: t.slow,
            dns: None,
        },
    })
}

/// Creates a volume (in its server's zone where Cinder has one of that name); the event
/// says whether it replaces one lost outside Kubernetes, and where it was made.
async fn create(
    t: &Target<'_>,
    request: &CreateVolume,
    was: Option<String>,
) -> Result<(EventType, &'static str, String), ReconcileError> {
    let (request, zoned) = in_cinder_zone(t, request).await;
    let created = t
        .cinder
        .create_volume(&request)
        .await
        .map_err(ReconcileError::cloud("create volume", t.key))?;
    Ok(match was {
        Some(old) => (
            EventType::Warning,
            "VolumeRecreated",
            format!(
                "volume {old} no longer exists (deleted outside Kubernetes?); created volume {} ({}), empty: the data of the old one is gone",
                created.id, request.name
            ),
        ),
        None => (
            EventType::Normal,
            "VolumeCreated",
            format!(
                "created volume {} ({}, {} GiB){zoned}",
                created.id, request.name, request.size
            ),
        ),
    })
}

/// `request` with the zone Cinder can make it in, and a note for the event: the
/// server's zone where Cinder lists one of that name, else Cinder's default zone
/// (said so). A failed listing is taken as no such zone: a volume is never refused
/// for want of a zone.
async fn in_cinder_zone(t: &Target<'_>, request: &CreateVolume) -> (CreateVolume, String) {
    let mut request = request.clone();
    let Some(zone) = request.availability_zone.take() else {
        return (request, String::new());
    };
    let listing = t.cinder.list_availability_zones();
    let note = match t.view.volume_zones.within(t.resync, listing).await {
        Ok(zones) if zones.iter().any(|z| z.name == zone && z.state.available) => {
            let note = format!(" in availability zone {zone}");
            request.availability_zone = Some(zone);
            note
        }
        Ok(_) => format!(
            " in Cinder's default zone: Cinder has no availability zone {zone}, the server's"
        ),
        Err(error) => {
            tracing::warn!(object = t.key, %error, "could not list Cinder's availability zones; the volume is made in Cinder's default zone");
            " in Cinder's default zone: its zones could not be listed".to_owned()
        }
    };
    (request, note)
}

async fn attach(
    t: &Target<'_>,
    name: &str,
    id: &VolumeId,
    server: &ServerId,
    reattach: bool,
) -> Result<Outcome, ReconcileError> {
    let attached = t
        .compute
        .attach_volume(server, id)
        .await
        .map_err(ReconcileError::cloud("attach volume", t.key))?;
    let device = attached.device.unwrap_or_else(|| "a device".into());
    let event = match reattach {
        true => (
            EventType::Warning,
            "DriftCorrected",
            format!(
                "volume {name} ({id}) was detached outside Kubernetes; attached again as {device}"
            ),
        ),
        false => (
            EventType::Normal,
            "VolumeAttached",
            format!("attached volume {name} ({id}) as {device}"),
        ),
    };
    Ok(Outcome {
        server_id: Some(server.clone()),
        ready: (
            Status::False,
            PROVISIONING,
            format!("attaching volume {name}"),
        ),
        event: Some(event),
        requeue: Duration::ZERO,
        dns: None,
    })
}
