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

mod delete;
mod update;

pub use delete::{Deleted, delete};
pub use update::{check_rv, update};

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

pub(crate) fn meta_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable!("metadata was just made an object"),
    }
}

pub(crate) fn str_at<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"][key].as_str().unwrap_or_default()
}

pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(String::from))
        .collect()
}

pub(crate) fn check_kind(rt: &ResourceType, obj: &mut Value, name: &str) -> Result<(), ApiError> {
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

/// The NamespaceLifecycle admission plugin on a create: the namespace must exist (404 about the namespace, not
/// the object; kube-wire `crud-errors.md`) and must not be `Terminating` (403 with a `NamespaceTerminating`
/// cause). It runs before name generation and validation, so it names the object by `generateName` when
/// there is no name yet, and `Unknown` when there is neither, as the plugin does.
fn admit_namespace(
    store: &Store,
    rt: &ResourceType,
    ns: &str,
    obj: &Value,
) -> Result<(), ApiError> {
    let Some(namespace) = store.get(NAMESPACES, "", ns) else {
        return Err(ApiError::namespace_not_found(ns));
    };
    if namespace["status"]["phase"] != "Terminating" {
        return Ok(());
    }
    let name = [str_at(obj, "name"), str_at(obj, "generateName")]
        .into_iter()
        .find(|n| !n.is_empty())
        .unwrap_or("Unknown");
    Err(ApiError::namespace_terminating(rt, name, ns))
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
        admit_namespace(store, rt, ns, &obj)?;
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
    let mut meta_causes = validation::meta::name(&name, rt.storage == NAMESPACES);
    meta_causes.extend(validation::meta::labels(&obj));
    if !meta_causes.is_empty() {
        return Err(ApiError::invalid_object(rt, &name, meta_causes));
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
        managed::track_update(None, &mut obj, rt.schema.as_deref(), &ctx.manager, None);
    }
    let stored = store.put(&rt.storage, store_ns, &name, rt.to_storage(obj));
    Ok(Outcome {
        object: rt.to_view(&stored),
        warnings,
    })
}
