//! The JSON of a volume, key for key as Cinder 29 shows it (`sim/cinder-wire.md`).

use serde_json::{Value, json};

use super::envelope::Cx;
use crate::world::cinder::Volume;

/// Cinder's timestamps: microseconds, no zone.
fn ts(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

pub(super) fn volume(cx: &Cx, v: &Volume) -> Value {
    let attachments: Vec<Value> = v
        .attachment
        .iter()
        .map(|a| {
            json!({
                "id": v.id, "attachment_id": a.id, "volume_id": v.id, "server_id": a.server_id,
                "host_name": null, "device": a.device, "attached_at": ts(a.at)
            })
        })
        .collect();
    json!({
        "id": v.id, "status": v.status.as_str(), "size": v.size, "availability_zone": "nova",
        "created_at": ts(v.created), "updated_at": v.updated.map(ts), "name": v.name,
        "description": null, "volume_type": v.volume_type, "snapshot_id": null, "source_volid": null,
        "metadata": v.metadata, "links": cx.link(&v.id), "user_id": crate::seed::USER_ID,
        "bootable": if v.bootable { "true" } else { "false" }, "encrypted": false,
        "replication_status": null, "consistencygroup_id": null, "multiattach": false,
        "attachments": attachments, "group_id": null,
        "os-vol-tenant-attr:tenant_id": cx.project,
    })
}
