//! `x-kubernetes-validations` rules of a CRD schema, evaluated with kube's CEL validator
//! (`kube::core::cel`), including transition rules (`oldSelf`) on updates.
//!
//! Failures become `422` causes shaped like the apiserver's (`Invalid value: <value>: <message>` at the field
//! carrying the rule; objects print no value). A rule kube-cel cannot compile or does not support is reported as
//! a warning, not a rejection: the real apiserver would have refused the CRD itself, so such a gap is the
//! evaluator's, not the object's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use kube::core::cel::{CompiledSchema, ErrorKind, Validator, compile_schema};
use serde_json::Value;

use crate::error::Cause;

/// Looks up `spec.ports[1].port` in an object.
fn value_at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, idx) = match part.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        if let Some(i) = idx {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

fn reason_prefix(reason: Option<&str>) -> (&'static str, &'static str) {
    match reason {
        Some("FieldValueForbidden") => ("FieldValueForbidden", "Forbidden"),
        Some("FieldValueRequired") => ("FieldValueRequired", "Required value"),
        Some("FieldValueDuplicate") => ("FieldValueDuplicate", "Duplicate value"),
        _ => ("FieldValueInvalid", "Invalid value"),
    }
}

thread_local! {
    /// Schemas compiled on this thread, by where the schema lives, with the schema they
    /// were compiled from (a schema dropped and another stored at its address is told
    /// apart by comparing): a thousand applied objects otherwise parse every rule a
    /// thousand times.
    static COMPILED: RefCell<HashMap<usize, (Value, Rc<CompiledSchema>)>> =
        RefCell::new(HashMap::new());
}

/// A CRD version seldom changes; more than this many schemas means they do, so the
/// cache starts over rather than keeping every past one.
const COMPILED_KEPT: usize = 64;

/// `schema` with its rules compiled, from this thread's cache when it was seen before.
fn compiled(schema: &Value) -> Rc<CompiledSchema> {
    let at = std::ptr::from_ref(schema) as usize;
    COMPILED.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some((seen, done)) = cache.get(&at)
            && seen == schema
        {
            return done.clone();
        }
        if cache.len() >= COMPILED_KEPT {
            cache.clear();
        }
        let done = Rc::new(compile_schema(schema));
        cache.insert(at, (schema.clone(), done.clone()));
        done
    })
}

/// Evaluates every rule; returns (causes, warnings).
pub fn check(schema: &Value, obj: &Value, old: Option<&Value>) -> (Vec<Cause>, Vec<String>) {
    let mut causes = Vec::new();
    let mut warnings = Vec::new();
    let Err(errors) = Validator::new().validate_compiled(&compiled(schema), obj, old) else {
        return (causes, warnings);
    };
    for e in errors.into_vec() {
        let field = e.field_path.trim_start_matches('.').to_string();
        match e.kind {
            ErrorKind::ValidationFailure => {
                let (reason, word) = reason_prefix(e.reason.as_deref());
                let message = match (word, value_at(obj, &field)) {
                    ("Invalid value", Some(v)) if !v.is_object() && !v.is_array() => {
                        format!(
                            "Invalid value: {}: {}",
                            crate::error::render_value(v),
                            e.message
                        )
                    }
                    _ => format!("{word}: {}", e.message),
                };
                causes.push(Cause::new(
                    reason,
                    message,
                    if field.is_empty() {
                        "<nil>".to_string()
                    } else {
                        field
                    },
                ));
            }
            ErrorKind::EvaluationError | ErrorKind::InvalidResult => {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    format!("Invalid value: \"object\": {}", e.message),
                    field,
                ));
            }
            _ => warnings.push(format!(
                "validation rule {:?} not evaluated: {}",
                e.rule, e.message
            )),
        }
    }
    (causes, warnings)
}

/// Whether a schema declares any rule (the apiserver then mentions skipped rules when the schema check fails).
pub fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("x-kubernetes-validations") || m.values().any(has_rules),
        Value::Array(a) => a.iter().any(has_rules),
        _ => false,
    }
}
