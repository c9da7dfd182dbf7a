//! DELETE of one object: uid/resourceVersion preconditions, propagationPolicy (`foregroundDeletion` and
//! `orphan` finalizers for the garbage collector), deletionTimestamp while finalizers are pending, the
//! `Status` answer once gone, and Namespaces turning `Terminating`.

use serde_json::{Value, json};

use super::{finalizers, meta_mut, now, str_at};
use crate::error::ApiError;
use crate::registry::ResourceType;
use crate::state::NAMESPACES;
use crate::store::Store;
/// Result of a DELETE: still present (finalizers pending) or gone (a `Status` answer).
#[derive(Debug)]
pub enum Deleted {
    Pending(Value),
    Gone(Value),
}

/// Deletes an object per `DeleteOptions` (preconditions, propagationPolicy).
pub fn delete(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    opts: &Value,
) -> Result<Deleted, ApiError> {
    let store_ns = if rt.namespaced { ns } else { "" };
    let Some(stored) = store.get(&rt.storage, store_ns, name) else {
        return Err(ApiError::not_found(rt, name));
    };
    let old = rt.to_view(stored);
    let uid = str_at(&old, "uid").to_string();
    if let Some(want) = opts["preconditions"]["uid"].as_str()
        && want != uid
    {
        let qualified = if rt.group.is_empty() {
            rt.kind.clone()
        } else {
            format!("{}.{}", rt.kind, rt.group)
        };
        let mut details = json!({"name": name, "kind": rt.kind});
        if !rt.group.is_empty() {
            details["group"] = json!(rt.group);
        }
        return Err(ApiError::status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {qualified} \"{name}\": the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ),
            Some(details),
        ));
    }
    if let Some(want) = opts["preconditions"]["resourceVersion"].as_str()
        && want != str_at(&old, "resourceVersion")
    {
        return Err(ApiError::conflict(rt, name));
    }
    if !old["metadata"]["deletionTimestamp"].is_null() {
        return Ok(Deleted::Pending(old));
    }
    let policy = match (
        opts["propagationPolicy"].as_str(),
        opts["orphanDependents"].as_bool(),
    ) {
        (Some(p), _) => p.to_string(),
        (None, Some(true)) => "Orphan".to_string(),
        _ => "Background".to_string(),
    };
    let mut fins = finalizers(&old);
    let extra = match policy.as_str() {
        "Foreground" => Some("foregroundDeletion"),
        "Orphan" => Some("orphan"),
        _ => None,
    };
    if let Some(f) = extra
        && !fins.iter().any(|x| x == f)
    {
        fins.push(f.to_string());
    }
    if fins.is_empty() && rt.storage != NAMESPACES {
        store.remove(&rt.storage, store_ns, name);
        let mut details = rt.details(name);
        details["uid"] = json!(uid);
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
        return Ok(Deleted::Gone(status));
    }
    let mut new = old.clone();
    {
        let m = meta_mut(&mut new);
        if !fins.is_empty() {
            m.insert("finalizers".into(), json!(fins));
        }
        m.insert("deletionTimestamp".into(), json!(now()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        if rt.has_generation() {
            let g = m.get("generation").and_then(Value::as_i64).unwrap_or(1);
            m.insert("generation".into(), json!(g + 1));
        }
    }
    if rt.storage == NAMESPACES {
        new["status"] = json!({"phase": "Terminating"});
    }
    let stored = store.put(&rt.storage, store_ns, name, rt.to_storage(new));
    Ok(Deleted::Pending(rt.to_view(&stored)))
}
