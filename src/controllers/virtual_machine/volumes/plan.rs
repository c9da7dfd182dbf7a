//! The next step for a VirtualMachine's data volumes. Pure: spec, the volumes found and
//! the server → one step, or none when every volume is there, large enough and
//! attached in order.
//!
//! Volumes are created before the server (they do not need it), attached once it is
//! ACTIVE, one at a time in spec order so the devices follow it. A volume attached to
//! another server is waited for (it is detached when that server goes), never taken;
//! unless Nova no longer has that server (`stale_holders`).

use verda_api::v1alpha1::{DataVolume, VirtualMachine};

use crate::cloud::ids::{AttachmentId, ServerId, VolumeId};
use crate::cloud::model::compute::{Server, ServerStatus};
use crate::cloud::model::volume::{CreateVolume, Volume, VolumeState};
use crate::cloud::owner::META_VOLUME;
use crate::controllers::virtual_machine::volumes::Look;

/// What to do about the data volumes.
#[derive(Clone, Debug, PartialEq)]
pub enum VolumeStep {
    /// No volume of this name exists for the owner. `was` is the ID the status
    /// recorded: the volume was deleted outside Kubernetes and comes back empty.
    Create {
        request: Box<CreateVolume>,
        was: Option<String>,
    },
    /// A crash between create and record made a second one; it was never attached.
    DeleteDuplicate { name: String, id: VolumeId },
    Extend {
        name: String,
        id: VolumeId,
        from: i32,
        to: i32,
    },
    /// `reattach`: the status showed it attached (it was detached outside Kubernetes).
    Attach {
        name: String,
        id: VolumeId,
        server: ServerId,
        reattach: bool,
    },
    /// Attached to another server: waited for while that server exists, let go of
    /// (its Cinder attachment deleted) once Nova no longer has it.
    Held {
        name: String,
        id: VolumeId,
        holder: ServerId,
        attachment: Option<AttachmentId>,
    },
    /// Cinder or Nova is busy with it: look again soon.
    Wait(String),
    /// It is in an error state: reported, not retried until it changes.
    Failed(String),
}

impl VolumeStep {
    /// What the step would do, for a paused object's message.
    pub fn describe(&self) -> String {
        match self {
            Self::Create { request, .. } => format!("create volume {}", request.name),
            Self::DeleteDuplicate { id, .. } => format!("delete duplicate volume {id}"),
            Self::Extend { name, to, .. } => format!("extend volume {name} to {to} GiB"),
            Self::Attach { name, .. } => format!("attach volume {name}"),
            Self::Held { name, holder, .. } => {
                format!("let volume {name} go from server {holder} if Nova no longer has it")
            }
            Self::Wait(_) | Self::Failed(_) => "change anything".to_owned(),
        }
    }

    pub fn writes(&self) -> bool {
        !matches!(self, Self::Wait(_) | Self::Failed(_))
    }
}

/// The owner's volumes of the spec volume `name`, the one to keep first: attached to
/// `server`, else attached anywhere, else the oldest.
fn candidates<'a>(look: &'a Look, name: &str, server: Option<&Server>) -> Vec<&'a Volume> {
    let mut found: Vec<&Volume> = look
        .found
        .iter()
        .filter(|v| v.metadata.get(META_VOLUME).map(String::as_str) == Some(name))
        .filter(|v| v.status != VolumeState::Deleting)
        .collect();
    let on_server = |v: &Volume| server.is_some_and(|s| v.attached_to() == Some(&s.id));
    found.sort_by_key(|v| {
        (
            !on_server(v),
            v.attached_to().is_none(),
            v.created_at.clone(),
        )
    });
    found
}

/// The create request of spec volume `spec`: named `<VirtualMachine>-<name>`,
/// recording its owner (and replica index).
fn create(vm: &VirtualMachine, look: &Look, spec: &DataVolume) -> CreateVolume {
    let (_, vm_name) = look.owner.virtual_machine();
    let vm_name = if look.owner.index.is_some() {
        vm_name
    } else {
        vm.metadata.name.clone().unwrap_or(vm_name)
    };
    CreateVolume {
        name: format!("{vm_name}-{}", spec.name),
        size: spec.size,
        volume_type: spec.type_.clone(),
        metadata: look
            .owner
            .owner
            .volume_metadata(&spec.name, look.owner.index),
        availability_zone: vm.spec.availability_zone.clone(),
    }
}

/// The ID the status recorded for volume `name`, and whether it showed it attached.
fn recorded(vm: &VirtualMachine, name: &str) -> Option<(String, bool)> {
    let status = vm.status.as_ref()?;
    let v = status.volumes.iter().find(|v| v.name == name)?;
    Some((v.id.clone(), v.device.is_some()))
}

/// What is missing before the server may be created (or while it builds): a volume
/// to create, a duplicate to remove, a volume in error.
pub fn before_server(vm: &VirtualMachine, look: &Look) -> Option<VolumeStep> {
    vm.spec
        .volumes
        .iter()
        .flatten()
        .find_map(|spec| present(vm, look, spec, None).err())
}

/// The next step with the server there, volume by volume in spec order: each one
/// there, alone, large enough and attached (once the server is ACTIVE) before the next.
pub fn with_server(vm: &VirtualMachine, look: &Look, server: &Server) -> Option<VolumeStep> {
    vm.spec
        .volumes
        .iter()
        .flatten()
        .find_map(|spec| match present(vm, look, spec, Some(server)) {
            Err(step) => Some(step),
            Ok(v) => settle(spec, v, server, recorded(vm, &spec.name)),
        })
}

/// The volume to keep for `spec`, or the step that must come first: create it, report
/// it in error, remove a duplicate.
fn present<'a>(
    vm: &VirtualMachine,
    look: &'a Look,
    spec: &DataVolume,
    server: Option<&Server>,
) -> Result<&'a Volume, VolumeStep> {
    let found = candidates(look, &spec.name, server);
    let Some(kept) = found.first() else {
        return Err(VolumeStep::Create {
            request: Box::new(create(vm, look, spec)),
            was: recorded(vm, &spec.name).map(|(id, _)| id),
        });
    };
    if kept.status.is_error() {
        return Err(failed(&spec.name, kept));
    }
    match duplicate(&spec.name, &found) {
        Some(step) => Err(step),
        None => Ok(kept),
    }
}

/// The step one kept volume still needs, if any.
fn settle(
    spec: &DataVolume,
    v: &Volume,
    server: &Server,
    recorded: Option<(String, bool)>,
) -> Option<VolumeStep> {
    let name = spec.name.clone();
    match v.status {
        VolumeState::Available | VolumeState::InUse => {}
        state => {
            return Some(VolumeStep::Wait(format!(
                "volume {name} is {}",
                state.word()
            )));
        }
    }
    if v.size < spec.size {
        return Some(VolumeStep::Extend {
            name,
            id: v.id.clone(),
            from: v.size,
            to: spec.size,
        });
    }
    match v.attached_to() {
        Some(on) if *on == server.id => None,
        Some(other) => Some(VolumeStep::Held {
            name,
            id: v.id.clone(),
            holder: other.clone(),
            attachment: v.attachments.first().and_then(|a| a.attachment_id.clone()),
        }),
        None if server.status != ServerStatus::Active => Some(VolumeStep::Wait(format!(
            "volume {name} is attached once the server is ACTIVE"
        ))),
        None => Some(VolumeStep::Attach {
            name,
            id: v.id.clone(),
            server: server.id.clone(),
            reattach: recorded.is_some_and(|(id, attached)| attached && id == v.id.as_str()),
        }),
    }
}

/// A second volume of `name` (never attached) is removed; one in use is left alone.
fn duplicate(name: &str, found: &[&Volume]) -> Option<VolumeStep> {
    let extra = found
        .iter()
        .skip(1)
        .find(|v| v.status == VolumeState::Available || v.status.is_error())?;
    Some(VolumeStep::DeleteDuplicate {
        name: name.to_owned(),
        id: extra.id.clone(),
    })
}

fn failed(name: &str, v: &Volume) -> VolumeStep {
    VolumeStep::Failed(format!(
        "volume {name} ({}) is in state {} in Cinder: it is neither attached nor replaced; \
         ask the cloud's administrators to repair it, or delete it to get a new empty one",
        v.id,
        v.status.word()
    ))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
