//! What deleting a VirtualMachine does to its data volumes, once its server is gone
//! (Nova detached them): `volumeRetention.whenDeleted: Delete` deletes them, `Retain`
//! (the default) keeps them, and `detach-on-delete` takes the operator's records off
//! them. A volume still attached somewhere is waited for, never forced off.

use verda_api::v1alpha1::{Retention, VirtualMachine};

use crate::caches::cloud_view::VolumeOwner;
use crate::cloud::BlockStorage;
use crate::cloud::model::volume::{Volume, VolumeState};
use crate::cloud::owner::without_owner_metadata;
use crate::controllers::virtual_machine::volumes::status::reported;
use crate::runtime::ReconcileError;

/// Where the volumes stand.
pub enum Left {
    /// Nothing more to do; what became of them, for the event (empty: there were none).
    Done(String),
    /// Deletes are under way.
    Wait,
}

/// Deletes, keeps or detaches the owner's volumes, as `vm` and `detach` say.
pub async fn volumes(
    cinder: &dyn BlockStorage,
    vm: &VirtualMachine,
    owner: &VolumeOwner,
    detach: bool,
    key: &str,
) -> Result<Left, ReconcileError> {
    let found = cinder
        .list_volumes(&owner.owner.volume_filter(owner.index))
        .await
        .map_err(ReconcileError::cloud("list volumes", key))?;
    if found.is_empty() {
        return Ok(Left::Done(deleted(vm)));
    }
    let names = listed(&found);
    if detach {
        for v in &found {
            let kept = without_owner_metadata(&v.metadata);
            crate::cloud::ignore_not_found(
                cinder.set_volume_metadata(&v.id, &kept).await.map(drop),
            )
            .map_err(ReconcileError::cloud(
                "remove the owner metadata of a volume",
                key,
            ))?;
        }
        return Ok(Left::Done(format!(
            "volumes {names} stay without the operator's records"
        )));
    }
    let retention = vm.spec.volume_retention.unwrap_or_default().when_deleted;
    if retention == Retention::Retain {
        return Ok(Left::Done(format!(
            "volumes {names} are retained (volumeRetention.whenDeleted: Retain)"
        )));
    }
    for v in &found {
        if matches!(v.status, VolumeState::Available) || v.status.is_error() {
            crate::cloud::ignore_not_found(cinder.delete_volume(&v.id).await)
                .map_err(ReconcileError::cloud("delete volume", key))?;
        }
    }
    Ok(Left::Wait)
}

/// What the event says once no volume is left: the ones the status showed, deleted.
fn deleted(vm: &VirtualMachine) -> String {
    let deleting = vm.spec.volume_retention.unwrap_or_default().when_deleted == Retention::Delete;
    let shown = reported(vm);
    match deleting && !shown.is_empty() {
        true => format!("volumes {shown} deleted"),
        false => String::new(),
    }
}

/// `name (id), …` of the volumes.
fn listed(found: &[Volume]) -> String {
    found
        .iter()
        .map(|v| format!("{} ({})", v.name.as_deref().unwrap_or("?"), v.id))
        .collect::<Vec<_>>()
        .join(", ")
}
