//! A data volume or a declared port that another server holds. A live holder is waited
//! for: Nova lets both go when it deletes the server. A holder Nova no longer has was
//! deleted while Cinder or Neutron could not be told (the service was down), and nothing
//! will ever let go of what it held: the volume's Cinder attachment is deleted, the
//! port's binding cleared, and the VirtualMachine's server takes them.
//!
//! Only a holder Nova answers 404 for is let go of. Nova is asked once per holder; one
//! seen alive is not asked again within a resync period (`ProjectView::holders`), so a
//! replica waiting for its old server costs one lookup, and a healthy object none.

use std::time::Duration;

use kube::runtime::events::EventType;

use crate::caches::cloud_view::{ProjectView, VolumeOwner};
use crate::cloud::ids::{AttachmentId, PortId, ServerId, VolumeId};
use crate::cloud::model::network::UpdatePort;
use crate::cloud::{BlockStorage, Compute, Network, ignore_not_found};
use crate::controllers::virtual_machine::outcome::{Outcome, provisioning};
use crate::runtime::ReconcileError;

/// Where a holder is looked up, and whose look it is.
pub struct Lookup<'a> {
    pub compute: &'a dyn Compute,
    pub view: &'a ProjectView,
    /// How long an answer that the holder exists is believed.
    pub fresh: Duration,
    /// When to look again at what only a person can mend.
    pub retry: Duration,
    pub key: &'a str,
}

impl Lookup<'_> {
    /// Whether Nova no longer has `server`.
    async fn gone(&self, server: &ServerId) -> Result<bool, ReconcileError> {
        if self.view.holders.seen_alive(server, self.fresh) {
            return Ok(false);
        }
        match self.compute.get_server(server).await {
            Ok(_) => {
                self.view.holders.alive(server);
                Ok(false)
            }
            Err(e) if e.is_not_found() => Ok(true),
            Err(e) => Err(ReconcileError::cloud(
                "look up the server holding a volume or port",
                self.key,
            )(e)),
        }
    }
}

/// A data volume attached to `holder`, which the server `kept` waits for.
pub struct HeldVolume {
    pub name: String,
    pub id: VolumeId,
    pub holder: ServerId,
    pub attachment: Option<AttachmentId>,
    pub owner: VolumeOwner,
}

/// Waits for a live holder; deletes the attachment of one Nova no longer has.
pub async fn volume(
    lookup: &Lookup<'_>,
    cinder: &dyn BlockStorage,
    held: HeldVolume,
    (kept, poll): (Option<ServerId>, Duration),
) -> Result<Outcome, ReconcileError> {
    let HeldVolume {
        name, id, holder, ..
    } = &held;
    if !lookup.gone(holder).await? {
        let message = format!(
            "volume {name} ({id}) is attached to server {holder}; it is attached here once that server lets it go"
        );
        return Ok(provisioning(kept, message, poll));
    }
    let Some(attachment) = &held.attachment else {
        let message = format!(
            "volume {name} ({id}) is still attached to server {holder}, which Nova no longer has, and Cinder names no attachment to delete: ask the cloud's administrators to detach it (cinder reset-state --attach-status detached {id})"
        );
        return Ok(Outcome {
            event: Some((EventType::Warning, "StaleAttachment", message.clone())),
            ..provisioning(kept, message, lookup.retry)
        });
    };
    ignore_not_found(cinder.delete_attachment(attachment).await).map_err(ReconcileError::cloud(
        "delete a stale volume attachment",
        lookup.key,
    ))?;
    lookup.view.volumes.forget(&held.owner);
    let note = format!(
        "volume {name} ({id}) was still attached to server {holder}, which Nova no longer has (deleted while Cinder could not be told); deleted its attachment {attachment} so it is attached here"
    );
    Ok(Outcome {
        event: Some((EventType::Warning, "StaleAttachmentCleared", note.clone())),
        ..provisioning(kept, note, Duration::ZERO)
    })
}

/// Waits for a live holder of port `id`; clears the binding to one Nova no longer has.
/// `forget` makes the next look at the port read Neutron.
pub async fn port(
    lookup: &Lookup<'_>,
    neutron: &dyn Network,
    (id, holder): (&PortId, &ServerId),
    forget: impl FnOnce(),
) -> Result<(String, Option<String>), ReconcileError> {
    if !lookup.gone(holder).await? {
        let message = format!(
            "port {id} is still bound to server {holder}; the new server boots on it once Nova lets it go"
        );
        return Ok((message, None));
    }
    let unbind = UpdatePort {
        unbind: true,
        ..UpdatePort::default()
    };
    neutron
        .update_port(id, &unbind)
        .await
        .map_err(ReconcileError::cloud(
            "clear a stale port binding",
            lookup.key,
        ))?;
    forget();
    let note = format!(
        "port {id} was still bound to server {holder}, which Nova no longer has (deleted while Neutron could not be told); cleared its binding so the new server boots on it"
    );
    Ok((note.clone(), Some(note)))
}
