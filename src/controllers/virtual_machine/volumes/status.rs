//! What the status says of the volumes: each data volume in spec order (ID, size,
//! type, Cinder status, device while attached to the object's server), the boot
//! volume, and `attached/declared` for the VOLUMES column. Pure.

use verda_api::v1alpha1::{VirtualMachine, VirtualMachineStatus, VolumeStatus};

use crate::cloud::ids::ServerId;
use crate::cloud::model::volume::Volume;
use crate::cloud::owner::META_VOLUME;
use crate::controllers::virtual_machine::volumes::Look;

/// Fills the volume fields of `status` from `look`; `server` is the object's server.
pub fn fill(
    status: &mut VirtualMachineStatus,
    vm: &VirtualMachine,
    look: &Look,
    server: Option<&ServerId>,
) {
    let declared = vm.spec.volumes.as_deref().unwrap_or_default();
    let before = std::mem::take(&mut status.volumes);
    status.volumes = declared
        .iter()
        .filter_map(|spec| {
            let mut named = look
                .found
                .iter()
                .filter(|v| v.metadata.get(META_VOLUME) == Some(&spec.name));
            let first = named.clone().next();
            let kept = named.find(|v| server.is_some() && v.attached_to() == server);
            match kept.or(first) {
                Some(v) => Some(shown(&spec.name, v, server)),
                // Gone from Cinder: still shown (as `missing`) until one replaces it, so
                // the replacement is told as the loss it is.
                None => missing(&before, &spec.name),
            }
        })
        .collect();
    let attached = status.volumes.iter().filter(|v| v.device.is_some()).count();
    status.volumes_attached =
        (!declared.is_empty()).then(|| format!("{attached}/{}", declared.len()));
    if let Some(boot) = &look.boot {
        status.boot_volume = Some(Box::new(shown("boot", boot, server)));
    }
    if vm.spec.boot_volume.is_none() {
        status.boot_volume = None;
    }
}

fn missing(before: &[VolumeStatus], name: &str) -> Option<VolumeStatus> {
    let last = before.iter().find(|v| v.name == name)?;
    Some(VolumeStatus {
        status: "missing".to_owned(),
        device: None,
        ..last.clone()
    })
}

fn shown(name: &str, v: &Volume, server: Option<&ServerId>) -> VolumeStatus {
    let device = v
        .attachments
        .iter()
        .find(|a| Some(&a.server_id) == server)
        .and_then(|a| a.device.clone());
    VolumeStatus {
        name: name.to_owned(),
        id: v.id.to_string(),
        size: v.size,
        type_: v.volume_type.clone(),
        status: v.status.word().to_owned(),
        device,
    }
}

/// `name (id), …` of the volumes the status of `vm` reports.
pub fn reported(vm: &VirtualMachine) -> String {
    vm.status
        .iter()
        .flat_map(|s| s.volumes.iter())
        .map(|v| format!("{} ({})", v.name, v.id))
        .collect::<Vec<_>>()
        .join(", ")
}
