//! Boot from volume (`block_device_mapping_v2` with an image source and a volume
//! destination): the checks Nova makes before accepting the create (the image exists,
//! the volume is at least the image's `min_disk`, the volume type exists, the type only
//! from microversion 2.67), and the boot volume it then makes in Cinder, attached as
//! the root disk and deleted with the server. Worded as the real Nova 34 answers
//! (`sim/cinder-wire.md`). An image source with a `local` destination is the image
//! boot itself, as the `openstack` CLI spells it beside `imageRef`. Other mappings
//! (volume or snapshot sources, several disks) are refused: the operator never sends
//! them.

use chrono::Utc;
use serde_json::Value;

use super::envelope::Cx;
use crate::world::World;
use crate::world::cinder::{Attachment, VolState, Volume};

/// The boot volume a create asks for.
#[derive(Clone, Debug)]
pub(super) struct Boot {
    pub image_id: String,
    /// GiB.
    pub size: i64,
    pub type_name: String,
}

const GIB: u64 = 1 << 30;

/// The image boot spelt out beside `imageRef`, as python-openstackclient sends it: the
/// server boots on the hypervisor's disk, no volume is made.
fn local_image(
    cx: &Cx,
    w: &World,
    image_id: &str,
) -> Result<Option<Boot>, axum::response::Response> {
    if !w.images.iter().any(|i| i.id == image_id) {
        return Err(cx.err(400, &format!("Image {image_id} could not be found.")));
    }
    Ok(None)
}

/// The boot volume of `mapping`, if the request has one, or Nova's 400.
pub(super) fn requested(
    cx: &Cx,
    w: &World,
    mapping: Option<&Value>,
) -> Result<Option<Boot>, axum::response::Response> {
    let Some(mapping) = mapping else {
        return Ok(None);
    };
    let only = mapping.as_array().filter(|m| m.len() == 1).map(|m| &m[0]);
    let Some(bdm) = only else {
        return Err(cx.err(
            400,
            "Only one block device mapping (the boot volume) is simulated.",
        ));
    };
    if bdm.get("volume_type").is_some() && !cx.at_least(67) {
        return Err(cx.err(
            400,
            "Invalid input for field/attribute block_device_mapping_v2. Additional properties are not allowed ('volume_type' was unexpected)",
        ));
    }
    let field = |k: &str| bdm.get(k).and_then(Value::as_str).unwrap_or_default();
    if field("source_type") == "image" && field("destination_type") == "local" {
        return local_image(cx, w, field("uuid"));
    }
    if field("source_type") != "image" || field("destination_type") != "volume" {
        return Err(cx.err(
            400,
            "Only an image source with a volume destination is simulated.",
        ));
    }
    let image_id = field("uuid").to_owned();
    let Some(image) = w.images.iter().find(|i| i.id == image_id) else {
        return Err(cx.err(400, &format!("Image {image_id} could not be found.")));
    };
    let size = bdm.get("volume_size").and_then(Value::as_i64).unwrap_or(0);
    let min = image.min_disk;
    if (size.max(0) as u64) < min {
        let (have, need) = (size.max(0) as u64 * GIB, min * GIB);
        return Err(cx.err(
            400,
            &format!("Volume is smaller than the minimum size specified in image metadata. Volume size is {have} bytes, minimum size is {need} bytes."),
        ));
    }
    let wanted = bdm.get("volume_type").and_then(Value::as_str);
    let Some((_, type_name)) = w.cinder.volume_type(wanted) else {
        let t = wanted.unwrap_or_default();
        return Err(cx.err(400, &format!("Volume type {t} could not be found.")));
    };
    Ok(Some(Boot {
        image_id,
        size,
        type_name: type_name.clone(),
    }))
}

/// Makes the boot volume of server `server`, attached as its root disk; why the build
/// fails instead, when Cinder's quota leaves no room for it.
pub(super) fn make(w: &mut World, server: &str, boot: &Boot) -> Option<String> {
    let c = &w.cinder;
    if c.volumes.len() >= c.volume_quota || c.gigabytes() + boot.size > c.gigabytes_quota {
        return Some(format!(
            "Build of instance {server} aborted: VolumeLimitExceeded: the project's volumes or gigabytes quota leaves no room for a {}G boot volume",
            boot.size
        ));
    }
    let now = Utc::now();
    let volume = Volume {
        id: w.uuid(),
        seq: w.next_seq(),
        name: String::new(),
        size: boot.size,
        volume_type: boot.type_name.clone(),
        status: VolState::InUse,
        until: None,
        extend_to: None,
        metadata: Default::default(),
        attachment: Some(Attachment {
            id: w.uuid(),
            server_id: server.to_owned(),
            device: "/dev/vda".into(),
            at: now,
            delete_on_termination: true,
        }),
        bootable: true,
        created: now,
        updated: Some(now),
    };
    w.cinder.volumes.insert(volume.id.clone(), volume);
    None
}
