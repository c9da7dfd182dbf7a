//! Writes a whole status: a JSON patch `add /status` replaces it in one request (no
//! stale fields left behind, no resourceVersion race on the spec).

use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde_json::json;

use crate::runtime::ReconcileError;
use crate::runtime::object::{Managed, object_key};

/// Replaces `obj`'s status with `status`.
pub async fn write_status<K: Managed, S: Serialize>(
    client: &kube::Client,
    obj: &K,
    status: &S,
) -> Result<(), ReconcileError> {
    let key = object_key(obj);
    let api: Api<K> = Api::namespaced(client.clone(), &obj.namespace().unwrap_or_default());
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/status", "value": status}]))
            .map_err(|e| ReconcileError::Finalizer {
                object: key.clone(),
                message: format!("cannot build the status patch: {e}"),
            })?;
    api.patch_status(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::<()>::Json(patch),
    )
    .await
    .map(drop)
    .map_err(ReconcileError::kube("write status", &key))
}
