//! A VirtualMachine's block storage: its data volumes (created once, found again by
//! their owner record, attached in spec order, extended when the spec grows them,
//! kept across every replacement of the server) and the boot volume Nova makes with
//! the server.
//!
//! The volumes of a group's replica `<group>-<n>` record the group and the index, not
//! the VirtualMachine: a scale-down deletes the VirtualMachine, and a later
//! VirtualMachine of the same index must find them. `observe` reads them (from the
//! cloud view while settled), `plan` decides the next step (pure), `execute` carries
//! it out, `status` reports them and `removal` keeps or deletes them as the object's
//! `volumeRetention` says.

pub mod execute;
pub mod plan;
pub mod removal;
pub mod status;

use verda_api::v1alpha1::VirtualMachine;

use crate::caches::cloud_view::{VolumeOwner, VolumeView};
use crate::cloud::BlockStorage;
use crate::cloud::ids::VolumeId;
use crate::cloud::model::compute::Server;
use crate::cloud::model::volume::Volume;
use crate::cloud::owner::Owner;
use crate::runtime::object::group_replica;
use crate::runtime::{Context, ReconcileError};

/// The volumes as this VirtualMachine sees them.
#[derive(Clone, Debug)]
pub struct Look {
    pub owner: VolumeOwner,
    /// Every data volume of the owner (of its replica index), in no particular order.
    pub found: Vec<Volume>,
    /// Whether they come from the shared cloud view rather than from Cinder now.
    pub from_view: bool,
    /// The server's boot volume, when it has one the status does not describe yet.
    pub boot: Option<Volume>,
}

/// Whose volumes a VirtualMachine's are: its group's, at its index, when a group
/// controls it; else its own.
pub fn volume_owner(ctx: &Context, vm: &VirtualMachine, owner: &Owner) -> VolumeOwner {
    match group_replica(vm) {
        Some((g, index)) => VolumeOwner {
            owner: Owner::new(g.uid.clone(), owner.namespace.clone(), g.name.clone())
                .in_cluster(&ctx.cluster),
            index: Some(index),
        },
        None => VolumeOwner {
            owner: owner.clone(),
            index: None,
        },
    }
}

/// Whether the object has volumes to look after: declared, or still reported.
pub fn wanted(vm: &VirtualMachine) -> bool {
    let declared = vm.spec.volumes.as_ref().is_some_and(|v| !v.is_empty());
    let reported = vm.status.as_ref().is_some_and(|s| !s.volumes.is_empty());
    declared || reported || vm.spec.boot_volume.is_some()
}

/// Reads the owner's data volumes — from the view when `use_view` and it answers,
/// else from Cinder (recorded in the view) — and the boot volume of `server` when the
/// status does not describe it yet.
pub async fn observe(
    ctx: &Context,
    cinder: &dyn BlockStorage,
    view: &VolumeView,
    vm: &VirtualMachine,
    owner: VolumeOwner,
    server: Option<&Server>,
    use_view: bool,
) -> Result<Look, ReconcileError> {
    let key = owner.owner.key();
    let cached = use_view
        .then(|| view.settled(&owner, ctx.view_max_age()))
        .flatten();
    let (found, from_view) = match cached {
        Some(found) => (found, true),
        None => {
            let filter = owner.owner.volume_filter(owner.index);
            let found = cinder
                .list_volumes(&filter)
                .await
                .map_err(ReconcileError::cloud("list volumes", &key))?;
            view.record(&owner, &found);
            (found, false)
        }
    };
    let boot = match boot_volume_id(vm, server, &found) {
        Some(id) => Some(
            cinder
                .get_volume(&id)
                .await
                .map_err(ReconcileError::cloud("read the boot volume", &key))?,
        ),
        None => None,
    };
    Ok(Look {
        owner,
        found,
        from_view,
        boot,
    })
}

/// The server's boot volume, when the spec asks for one and the status does not show
/// it yet: the volume attached to the server that is none of the data volumes.
fn boot_volume_id(
    vm: &VirtualMachine,
    server: Option<&Server>,
    data: &[Volume],
) -> Option<VolumeId> {
    vm.spec.boot_volume.as_ref()?;
    let server = server?;
    let boot = server
        .volumes_attached
        .iter()
        .find(|id| !data.iter().any(|v| &v.id == *id))?;
    let known = vm
        .status
        .as_ref()
        .and_then(|s| s.boot_volume.as_ref())
        .is_some_and(|b| b.id == boot.as_str());
    (!known).then(|| boot.clone())
}
