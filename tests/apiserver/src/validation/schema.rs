//! Structural-schema handling of a CRD's `openAPIV3Schema`: pruning of unknown fields, defaulting, and the
//! OpenAPI checks (type, required, enum, minimum/maximum, minLength/maxLength, minItems/maxItems, pattern,
//! minProperties/maxProperties), with the apiserver's cause reasons and messages.
//!
//! Not covered: `format` checks, `oneOf/anyOf/allOf/not`, `uniqueItems`, and `x-kubernetes-validations` (see `cel`).

use serde_json::{Map, Value};

use crate::error::{Cause, render_value};

fn preserves(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Removes fields the schema does not declare, recording their paths (`spec.colour`) in `unknown`.
/// At the root, `apiVersion`, `kind` and `metadata` are always kept.
pub fn prune(value: &mut Value, schema: &Value, path: &str, unknown: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let embedded = schema
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true);
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let is_meta = (path.is_empty() || embedded)
                    && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                if is_meta {
                    continue;
                }
                let sub = props.and_then(|p| p.get(&k)).or(additional);
                match (sub, map.get_mut(&k)) {
                    (Some(s), Some(v)) => prune(v, s, &join(path, &k), unknown),
                    (None, _) if !preserves(schema) => {
                        map.remove(&k);
                        unknown.push(join(path, &k));
                    }
                    _ => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, it) in items.iter_mut().enumerate() {
                    prune(it, s, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Fills `default`s of absent properties, recursively (defaults are themselves defaulted, like the server).
pub fn default(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    if !map.contains_key(k)
                        && let Some(d) = s.get("default")
                    {
                        map.insert(k.clone(), d.clone());
                    }
                    if let Some(v) = map.get_mut(k) {
                        default(v, s);
                    }
                }
            } else if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for v in map.values_mut() {
                    default(v, add);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                items.iter_mut().for_each(|it| default(it, s));
            }
        }
        _ => {}
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(want: &str, v: &Value, schema: &Value) -> bool {
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return matches!(v, Value::String(_)) || v.is_i64() || v.is_u64();
    }
    match want {
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

/// Validates `value` at `path` against `schema`, pushing every violation (the apiserver reports all at once).
pub fn validate(value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    if value.is_null() {
        if schema.get("nullable").and_then(Value::as_bool) != Some(true)
            && schema.get("type").is_some()
        {
            let t = schema["type"].as_str().unwrap_or_default();
            causes.push(Cause::new(
                "FieldValueTypeInvalid",
                format!(
                    "Invalid value: \"null\": {} in body must be of type {t}: \"null\"",
                    last(path)
                ),
                path,
            ));
        }
        return;
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str)
        && !type_ok(t, value, schema)
    {
        let got = type_name(value);
        causes.push(Cause::new(
            "FieldValueTypeInvalid",
            format!(
                "Invalid value: \"{got}\": {} in body must be of type {t}: \"{got}\"",
                last(path)
            ),
            path,
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(render_value).collect();
        causes.push(Cause::new(
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {}",
                render_value(value),
                list.join(", ")
            ),
            path,
        ));
    }
    match value {
        Value::Number(n) => numbers(n.as_f64().unwrap_or_default(), value, schema, path, causes),
        Value::String(s) => strings(s, value, schema, path, causes),
        Value::Array(items) => arrays(items, schema, path, causes),
        Value::Object(map) => objects(map, schema, path, causes),
        _ => {}
    }
}

fn last(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

fn numbers(n: f64, value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let excl = |k: &str| schema.get(k).and_then(Value::as_bool) == Some(true);
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let (bad, word) = if excl("exclusiveMinimum") {
            (n <= min, "greater than")
        } else {
            (n < min, "greater than or equal to")
        };
        if bad {
            causes.push(Cause::invalid(
                path,
                value,
                &format!("{path} in body should be {word} {}", schema["minimum"]),
            ));
        }
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let (bad, word) = if excl("exclusiveMaximum") {
            (n >= max, "less than")
        } else {
            (n > max, "less than or equal to")
        };
        if bad {
            causes.push(Cause::invalid(
                path,
                value,
                &format!("{path} in body should be {word} {}", schema["maximum"]),
            ));
        }
    }
}

fn strings(s: &str, value: &Value, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let len = s.chars().count() as u64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        causes.push(Cause::new(
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} bytes"),
            path,
        ));
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        causes.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str)
        && super::pattern::is_match(p, s) == Some(false)
    {
        causes.push(Cause::invalid(
            path,
            value,
            &format!("{path} in body should match '{p}'"),
        ));
    }
}

fn arrays(items: &[Value], schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    let n = items.len() as u64;
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && n > max
    {
        causes.push(Cause::new(
            "FieldValueTooMany",
            format!("Too many: {n}: must have at most {max} items"),
            path,
        ));
    }
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && n < min
    {
        causes.push(Cause::invalid(
            path,
            &Value::from(n),
            &format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(s) = schema.get("items") {
        for (i, it) in items.iter().enumerate() {
            validate(it, s, &format!("{path}[{i}]"), causes);
        }
    }
}

fn objects(map: &Map<String, Value>, schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            if let Some(v) = map.get(k)
                && !(path.is_empty() && k == "metadata")
            {
                validate(v, s, &join(path, k), causes);
            }
        }
    } else if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        for (k, v) in map {
            validate(v, add, &join(path, k), causes);
        }
    }
    for r in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(k) = r.as_str()
            && !map.contains_key(k)
        {
            causes.push(Cause::required(join(path, k)));
        }
    }
    let n = map.len() as u64;
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
        && n > max
    {
        causes.push(Cause::new(
            "FieldValueTooMany",
            format!("Too many: {n}: must have at most {max} items"),
            path,
        ));
    }
    if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
        && n < min
    {
        causes.push(Cause::invalid(
            path,
            &Value::from(n),
            &format!("{path} in body should have at least {min} properties"),
        ));
    }
}
