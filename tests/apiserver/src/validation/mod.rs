//! Admission of custom-resource writes: pruning, defaulting, schema validation, scale-path check and CEL
//! rules, in the apiserver's order, producing its `422 Invalid` body or the unknown-field warnings/400.

pub mod cel;
pub mod meta;
pub mod pattern;
pub mod schema;

use serde_json::Value;

use crate::error::{ApiError, Cause};
use crate::registry::ResourceType;

/// `fieldValidation` query value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("Strict") => Self::Strict,
            Some("Ignore") => Self::Ignore,
            _ => Self::Warn,
        }
    }
}

/// Prunes unknown fields (warnings, or 400 when Strict) and applies defaults. Returns the warnings.
pub fn prune_and_default(
    rt: &ResourceType,
    obj: &mut Value,
    fv: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let Some(schema) = &rt.schema else {
        return Ok(vec![]);
    };
    let mut unknown = Vec::new();
    schema::prune(obj, schema, "", &mut unknown);
    schema::default(obj, schema);
    let msgs: Vec<String> = unknown
        .iter()
        .map(|u| format!("unknown field \"{u}\""))
        .collect();
    match fv {
        FieldValidation::Strict if !msgs.is_empty() => Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
            msgs.join(", "),
            kind = rt.kind,
            v = rt.version
        ))),
        FieldValidation::Ignore => Ok(vec![]),
        _ => Ok(msgs),
    }
}

/// Schema, scale and CEL validation of the object about to be stored. Returns CEL warnings.
pub fn validate(
    rt: &ResourceType,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let Some(schema) = &rt.schema else {
        return Ok(vec![]);
    };
    let mut causes = Vec::new();
    schema::validate(obj, schema, "", &mut causes);
    if let Some(scale) = &rt.scale
        && let Some(v) = value_at_path(obj, &scale.spec_replicas)
        && v.as_i64().is_some_and(|n| n < 0)
    {
        causes.push(Cause::invalid(
            scale.spec_replicas.clone(),
            v,
            "should be a non-negative integer",
        ));
    }
    if !causes.is_empty() {
        if cel::has_rules(schema) {
            causes.push(Cause::invalid(
                "<nil>",
                &Value::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        }
        return Err(ApiError::invalid_object(rt, name, causes));
    }
    let (causes, warnings) = cel::check(schema, obj, old);
    if !causes.is_empty() {
        return Err(ApiError::invalid_object(rt, name, causes));
    }
    Ok(warnings)
}

/// `.spec.replicas`-style path lookup.
pub fn value_at_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .filter(|p| !p.is_empty())
        .try_fold(obj, |cur, p| cur.get(p))
}

/// Sets a `.spec.replicas`-style path, creating intermediate objects.
pub fn set_at_path(obj: &mut Value, path: &str, v: Value) {
    let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let mut cur = obj;
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Default::default());
        }
        let Some(m) = cur.as_object_mut() else { return };
        if i + 1 == parts.len() {
            m.insert(p.to_string(), v);
            return;
        }
        cur = m
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}
