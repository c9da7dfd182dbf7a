//! The write semantics shared by every verb: create, update (PUT, patches, /status, /scale, apply) and delete,
//! as the real apiserver applies them to custom resources and the built-ins served here.
//!
//! Covered: uid/creationTimestamp/generateName stamping, resourceVersion preconditions, generation bumps on
//! non-metadata/non-status changes, status/spec separation, no-op writes, managedFields tracking, admission
//! (prune/default/validate), finalizers and deletionTimestamp, propagationPolicy finalizers. Callers hold the
//! store lock; nothing here does I/O.

use chrono::Utc;
use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::events;
use crate::patch::managed;
use crate::registry::{ResourceType, View};
use crate::state::NAMESPACES;
use crate::store::Store;
use crate::validation::{self, FieldValidation};

/// Who writes and how (from the query: `fieldManager`, `fieldValidation`; from the path: subresource).
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub manager: String,
    pub fv: FieldValidation,
    pub sub: Option<String>,
    /// managedFields were computed by server-side apply; do not track this write as an Update.
    pub preset_managed: bool,
}

/// A successful write: the object as answered, and the unknown-field / rule warnings.
#[derive(Debug)]
pub struct Outcome {
    pub object: Value,
    pub warnings: Vec<String>,
}

pub fn now() -> String {
    Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generate_suffix() -> String {
    uuid::Uuid::new_v4().as_bytes()[..5]
        .iter()
        .map(|b| GENERATE_ALPHABET[*b as usize % GENERATE_ALPHABET.len()] as char)
        .collect()
}

fn meta_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable!("metadata was just made an object"),
    }
}

fn str_at<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"][key].as_str().unwrap_or_default()
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(String::from))
        .collect()
}

fn check_kind(rt: &ResourceType, obj: &mut Value, name: &str) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {})",
            rt.kind
        )));
    }
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if k != rt.kind => {
            let mut as_kind = rt.clone();
            as_kind.kind = k.to_string();
            let cause = Cause::invalid("kind", &json!(k), &format!("must be {}", rt.kind));
            return Err(ApiError::invalid_object(&as_kind, name, vec![cause]));
        }
        _ => {}
    }
    obj["kind"] = json!(rt.kind);
    obj["apiVersion"] = json!(rt.api_version());
    Ok(())
}

/// Creates an object (body in this resource's wire shape) in namespace `ns` ("" for cluster-scoped).
pub fn create(
    store: &mut Store,
    rt: &ResourceType,
    ns: &str,
    mut obj: Value,
    ctx: &WriteCtx,
) -> Result<Outcome, ApiError> {
    let body_name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    check_kind(rt, &mut obj, &body_name)?;
    let body_ns = str_at(&obj, "namespace").to_string();
    if rt.namespaced {
        if !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let Some(nsobj) = store.get(NAMESPACES, "", ns) else {
            return Err(ApiError::namespace_not_found(ns));
        };
        if !nsobj["metadata"]["deletionTimestamp"].is_null() {
            return Err(ApiError::status(
                403,
                "Forbidden",
                format!(
                    "{} \"{body_name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    rt.qualified()
                ),
                Some(rt.details(&body_name)),
            ));
        }
    }
    let mut name = body_name;
    if name.is_empty() {
        let prefix = str_at(&obj, "generateName").to_string();
        if prefix.is_empty() {
            let cause = Cause::new(
                "FieldValueRequired",
                "Required value: name or generateName is required",
                "metadata.name",
            );
            return Err(ApiError::invalid_object(rt, "", vec![cause]));
        }
        name = format!("{prefix}{}", generate_suffix());
    }
    {
        let m = meta_mut(&mut obj);
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "selfLink",
        ] {
            m.remove(k);
        }
        if !ctx.preset_managed {
            m.remove("managedFields");
        }
        m.insert("name".into(), json!(name));
        if rt.namespaced {
            m.insert("namespace".into(), json!(ns));
        } else {
            m.remove("namespace");
        }
    }
    if rt.status
        && rt.custom
        && let Some(o) = obj.as_object_mut()
    {
        o.remove("status");
    }
    if rt.view == View::EventsV1 {
        let causes = events::validate_events_v1(&obj);
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
    if rt.storage == NAMESPACES {
        obj["spec"] = json!({"finalizers": ["kubernetes"]});
        obj["status"] = json!({"phase": "Active"});
    }
    let mut warnings = validation::prune_and_default(rt, &mut obj, ctx.fv)?;
    warnings.extend(validation::validate(rt, &obj, None)?);
    let store_ns = if rt.namespaced { ns } else { "" };
    if store.get(&rt.storage, store_ns, &name).is_some() {
        return Err(ApiError::already_exists(rt, &name));
    }
    {
        let m = meta_mut(&mut obj);
        m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        m.insert("creationTimestamp".into(), json!(now()));
        if rt.has_generation() {
            m.insert("generation".into(), json!(1));
        }
    }
    if !ctx.preset_managed {
        managed::track_update(None, &mut obj, rt.schema.as_ref(), &ctx.manager, None);
    }
    let stored = store.put(&rt.storage, store_ns, &name, rt.to_storage(obj));
    Ok(Outcome {
        object: rt.to_view(&stored),
        warnings,
    })
}

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
    let mut warnings = validation::prune_and_default(rt, &mut new, ctx.fv)?;
    warnings.extend(validation::validate(rt, &new, Some(old))?);
    if without_volatile(&new) == without_volatile(old) {
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
            rt.schema.as_ref(),
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
