//! Updates of a stored object (PUT, patches, `/status`, `/scale`, apply): resourceVersion preconditions,
//! status/spec separation, immutable metadata, no new finalizers while deleting, admission, no-op detection,
//! generation, managedFields, and the last-finalizer-removed deletion.

use serde_json::{Value, json};

use super::{Outcome, WriteCtx, check_kind, finalizers, meta_mut, str_at};
use crate::error::{ApiError, Cause};
use crate::events;
use crate::patch::managed;
use crate::registry::{ResourceType, View};
use crate::state::NAMESPACES;
use crate::store::Store;
use crate::validation;
/// Everything outside metadata and status: a change there bumps `generation`.
fn spec_part(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        for k in ["metadata", "status", "apiVersion", "kind"] {
            m.remove(k);
        }
    }
    o
}

fn without_volatile(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    o
}

/// managedFields without their timestamps.
fn ownership(obj: &Value) -> Vec<Value> {
    let mut entries: Vec<Value> = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for e in entries.iter_mut().filter_map(Value::as_object_mut) {
        e.remove("time");
    }
    entries
}

/// Checks `metadata.resourceVersion` of the request against the stored one.
pub fn check_rv(
    rt: &ResourceType,
    name: &str,
    old: &Value,
    candidate: &Value,
    required: bool,
) -> Result<(), ApiError> {
    match candidate["metadata"]["resourceVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        Some(rv) if rv != str_at(old, "resourceVersion") => Err(ApiError::conflict(rt, name)),
        None if required => Err(ApiError::invalid_meta(
            rt,
            name,
            vec![Cause::invalid(
                "metadata.resourceVersion",
                &json!(0),
                "must be specified for an update",
            )],
        )),
        _ => Ok(()),
    }
}

/// Replaces the stored object `old` (wire shape) by `candidate`; the caller has checked preconditions.
pub fn update(
    store: &mut Store,
    rt: &ResourceType,
    old: &Value,
    candidate: Value,
    ctx: &WriteCtx,
) -> Result<Outcome, ApiError> {
    let name = str_at(old, "name").to_string();
    let ns = str_at(old, "namespace").to_string();
    let mut new = match ctx.sub.as_deref() {
        Some("status") => {
            let mut n = old.clone();
            match candidate.get("status") {
                Some(s) => n["status"] = s.clone(),
                None => {
                    if let Some(o) = n.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
            if let Some(mf) = candidate["metadata"].get("managedFields") {
                n["metadata"]["managedFields"] = mf.clone();
            }
            n
        }
        _ => {
            let mut n = candidate;
            check_kind(rt, &mut n, &name)?;
            if rt.status && rt.storage != NAMESPACES {
                match old.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        if let Some(o) = n.as_object_mut() {
                            o.remove("status");
                        }
                    }
                }
            }
            n
        }
    };
    {
        let m = meta_mut(&mut new);
        for k in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
        ] {
            match old["metadata"].get(k) {
                Some(v) => m.insert(k.to_string(), v.clone()),
                None => m.remove(k),
            };
        }
        if !m.contains_key("managedFields")
            && let Some(mf) = old["metadata"].get("managedFields")
        {
            m.insert("managedFields".into(), mf.clone());
        }
    }
    if !old["metadata"]["deletionTimestamp"].is_null() {
        let before = finalizers(old);
        let added: Vec<String> = finalizers(&new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            let msg = format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                list.join(", ")
            );
            let cause = Cause::forbidden("metadata.finalizers", &msg);
            return Err(ApiError::invalid_object(
                rt,
                &name,
                vec![cause.clone(), cause],
            ));
        }
    }
    if rt.view == View::EventsV1 {
        let causes = events::validate_events_v1(&new);
        if !causes.is_empty() {
            return Err(ApiError::invalid_object(
                &ResourceType {
                    group: String::new(),
                    ..rt.clone()
                },
                &name,
                causes,
            ));
        }
    }
    let label_causes = validation::meta::labels(&new);
    if !label_causes.is_empty() {
        return Err(ApiError::invalid_object(rt, &name, label_causes));
    }
    let mut warnings = validation::prune_and_default(rt, &mut new, ctx.fv)?;
    warnings.extend(validation::validate(rt, &new, Some(old))?);
    // An apply that only changes ownership is still a write (the real server records the new owner);
    // any other write that changes nothing is a no-op.
    let ownership_changed = ctx.preset_managed && ownership(&new) != ownership(old);
    if without_volatile(&new) == without_volatile(old) && !ownership_changed {
        return Ok(Outcome {
            object: old.clone(),
            warnings,
        });
    }
    if rt.has_generation() && spec_part(&new) != spec_part(old) {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(1);
        meta_mut(&mut new).insert("generation".into(), json!(g + 1));
    }
    if !ctx.preset_managed {
        managed::track_update(
            Some(old),
            &mut new,
            rt.schema.as_deref(),
            &ctx.manager,
            ctx.sub.as_deref(),
        );
    }
    let store_ns = if rt.namespaced { ns.as_str() } else { "" };
    if !new["metadata"]["deletionTimestamp"].is_null()
        && finalizers(&new).is_empty()
        && rt.storage != NAMESPACES
    {
        // The update became the deletion: watchers see the last stored state as DELETED; the caller gets the
        // object it asked for with the pre-write resourceVersion (kube-wire deletion.md).
        store.remove(&rt.storage, store_ns, &name);
        return Ok(Outcome {
            object: new,
            warnings,
        });
    }
    let stored = store.put(&rt.storage, store_ns, &name, rt.to_storage(new));
    Ok(Outcome {
        object: rt.to_view(&stored),
        warnings,
    })
}
