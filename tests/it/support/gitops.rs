//! What GitOps tools conclude from our objects: Argo CD's health (our Lua check, run in
//! Lua 5.1) and kstatus, the status rules Flux and kpt apply to custom resources.

use mlua::serde::ser::Options as SerializeOptions;
use mlua::{Lua, LuaSerdeExt, Table};
use serde_json::Value;

/// The Argo CD health check the operator ships.
pub const HEALTH_LUA: &str = include_str!("../../../config/argocd/health.lua");

/// Argo CD's verdict: `status` (Healthy, Progressing, Degraded, Suspended, …) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub status: String,
    pub message: String,
}

/// Runs the health check on `obj` (the object as the API server returns it) the way
/// Argo CD does: the object is the global `obj`, the script returns a table.
pub fn argo_health(obj: &Value) -> Health {
    let lua = Lua::new();
    // Argo CD's objects have no JSON nulls: absent fields are nil.
    let options = SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    let value = lua
        .to_value_with(obj, options)
        .expect("the object converts to Lua");
    lua.globals().set("obj", value).expect("obj is set");
    let hs: Table = lua
        .load(HEALTH_LUA)
        .set_name("health.lua")
        .eval()
        .unwrap_or_else(|e| panic!("health.lua failed on {obj}: {e}"));
    Health {
        status: hs.get("status").expect("hs.status is a string"),
        message: hs
            .get::<Option<String>>("message")
            .expect("hs.message")
            .unwrap_or_default(),
    }
}

/// kstatus's result for a custom resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KStatus {
    InProgress,
    Current,
    Failed,
    Terminating,
}

/// kstatus's generic rules (sigs.k8s.io/cli-utils `checkGenericProperties`, which is
/// all it applies to a custom resource): deletion → Terminating; an observedGeneration
/// behind metadata.generation → InProgress; `Reconciling=True` → InProgress;
/// `Stalled=True` → Failed; otherwise Current.
pub fn kstatus(obj: &Value) -> KStatus {
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return KStatus::Terminating;
    }
    if let Some(observed) = obj
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64)
        && Some(observed) != obj.pointer("/metadata/generation").and_then(Value::as_i64)
    {
        return KStatus::InProgress;
    }
    let conditions = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in &conditions {
        match (c["type"].as_str(), c["status"].as_str()) {
            (Some("Reconciling"), Some("True")) => return KStatus::InProgress,
            (Some("Stalled"), Some("True")) => return KStatus::Failed,
            _ => {}
        }
    }
    KStatus::Current
}

/// Both verdicts, for assertions that name what was expected of each.
pub fn verdicts(obj: &Value) -> (String, KStatus) {
    (argo_health(obj).status, kstatus(obj))
}
