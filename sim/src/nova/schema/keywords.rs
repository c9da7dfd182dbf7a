//! The jsonschema keywords Nova's schemas use, each failing with jsonschema's own
//! message (`jsonschema/_keywords.py`), and the error Nova builds from the first one
//! (`nova/api/validation/validators.py`): `Invalid input for field/attribute <last path
//! element>. Value: <str(value)>. <message>`, or the bare message at the body's root.

use serde_json::{Map, Value};

use crate::wire::{py_repr, py_str};

/// The first schema error of a request body.
pub(super) enum Invalid {
    /// At a property: (last path element, its value, jsonschema's message).
    At(String, Value, String),
    /// At the body's root, or a format checker's own message (`InvalidName`).
    Bare(String),
}

impl Invalid {
    pub(super) fn message(self) -> String {
        match self {
            Invalid::At(at, value, why) => format!(
                "Invalid input for field/attribute {at}. Value: {}. {why}",
                py_str(&value)
            ),
            Invalid::Bare(why) => why,
        }
    }
}

pub(super) type Check = Result<(), Invalid>;

/// Where an object sits: its path element and value, `None` for the body itself.
pub(super) type Within<'a> = Option<(&'a str, &'a Value)>;

pub(super) fn fail(at: &str, v: &Value, why: String) -> Invalid {
    Invalid::At(at.to_string(), v.clone(), why)
}

fn fail_within(within: Within, why: String) -> Invalid {
    match within {
        Some((at, v)) => fail(at, v, why),
        None => Invalid::Bare(why),
    }
}

/// `type: object` of the body itself.
pub(super) fn root(body: &Value) -> Result<&Map<String, Value>, Invalid> {
    let why = || format!("{} is not of type 'object'", py_repr(body));
    body.as_object().ok_or_else(|| Invalid::Bare(why()))
}

pub(super) fn object<'a>(at: &str, v: &'a Value) -> Result<&'a Map<String, Value>, Invalid> {
    let why = || format!("{} is not of type 'object'", py_repr(v));
    v.as_object().ok_or_else(|| fail(at, v, why()))
}

pub(super) fn array<'a>(at: &str, v: &'a Value) -> Result<&'a Vec<Value>, Invalid> {
    let why = || format!("{} is not of type 'array'", py_repr(v));
    v.as_array().ok_or_else(|| fail(at, v, why()))
}

pub(super) fn string<'a>(at: &str, v: &'a Value) -> Result<&'a str, Invalid> {
    let why = || format!("{} is not of type 'string'", py_repr(v));
    v.as_str().ok_or_else(|| fail(at, v, why()))
}

/// `minLength: 1`, `minItems: 1` and `minProperties: 1` share this wording.
pub(super) fn non_empty(at: &str, v: &Value, empty: bool) -> Check {
    match empty {
        true => Err(fail(at, v, format!("{} should be non-empty", py_repr(v)))),
        false => Ok(()),
    }
}

/// `maxLength` (in characters, as Python counts them) and `maxItems` share this wording.
pub(super) fn too_long(at: &str, v: &Value, over: bool) -> Check {
    match over {
        true => Err(fail(at, v, format!("{} is too long", py_repr(v)))),
        false => Ok(()),
    }
}

pub(super) fn max_length(at: &str, v: &Value, s: &str, max: usize) -> Check {
    too_long(at, v, s.chars().count() > max)
}

pub(super) fn pattern(at: &str, v: &Value, matches: bool, pattern: &str) -> Check {
    match matches {
        true => Ok(()),
        false => Err(fail(
            at,
            v,
            format!("{} does not match '{pattern}'", py_repr(v)),
        )),
    }
}

pub(super) fn one_of(at: &str, v: &Value, allowed: &[&str]) -> Check {
    if v.as_str().is_some_and(|s| allowed.contains(&s)) {
        return Ok(());
    }
    let list: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
    let why = format!("{} is not one of [{}]", py_repr(v), list.join(", "));
    Err(fail(at, v, why))
}

pub(super) fn required(within: Within, obj: &Map<String, Value>, keys: &[&str]) -> Check {
    match keys.iter().find(|k| !obj.contains_key(**k)) {
        Some(missing) => Err(fail_within(
            within,
            format!("'{missing}' is a required property"),
        )),
        None => Ok(()),
    }
}

/// `additionalProperties: false`: every unexpected key, sorted.
pub(super) fn no_extra(within: Within, obj: &Map<String, Value>, keys: &[&str]) -> Check {
    let extras = quoted(obj.keys().filter(|k| !keys.contains(&k.as_str())));
    if extras.is_empty() {
        return Ok(());
    }
    let verb = if extras.len() == 1 { "was" } else { "were" };
    let why = format!(
        "Additional properties are not allowed ({} {verb} unexpected)",
        extras.join(", ")
    );
    Err(fail_within(within, why))
}

/// `patternProperties` with `additionalProperties: false`: the keys matching no pattern.
pub(super) fn no_other_keys(at: &str, v: &Value, others: Vec<&String>, regex: &str) -> Check {
    let others = quoted(others.into_iter());
    if others.is_empty() {
        return Ok(());
    }
    let verb = if others.len() == 1 { "does" } else { "do" };
    let why = format!(
        "{} {verb} not match any of the regexes: '{regex}'",
        others.join(", ")
    );
    Err(fail(at, v, why))
}

fn quoted<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<String> {
    keys.map(|k| py_repr(&Value::from(k.as_str()))).collect()
}
