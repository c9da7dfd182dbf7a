//! Nova's request-body schemas (`nova/api/openstack/compute/schemas/servers.py`,
//! `server_metadata.py`, `server_groups.py`) for the bodies the operator sends: server
//! create and update, server metadata, server group create. A refusal is Nova's 400
//! for the first jsonschema error (`keywords.rs`; Nova's `validation` module words
//! it); checks run in the schemas' property and keyword
//! order so that the error reported is the one Nova reports first.
//!
//! Deliberately not here: fields the operator never sends (block devices, network
//! items, scheduler hints, access IPs) and checks that need the cloud's state (quotas,
//! flavors, images, groups), which the handlers make after these.

mod keywords;
mod parameter_types;

use serde_json::Value;

use crate::wire::py_repr;
use keywords::{
    Check, Invalid, array, fail, no_extra, non_empty, object, one_of, required, root, string,
    too_long,
};
use parameter_types::{base64, description, metadata, name, tag};

/// `instance.MAX_TAG_COUNT`.
const MAX_TAGS: usize = 50;
const MAX_USER_DATA: usize = 65535;
const POLICIES: [&str; 4] = [
    "anti-affinity",
    "affinity",
    "soft-anti-affinity",
    "soft-affinity",
];

/// A body wrapping one object under `key` (and no other top-level key but `also`): the
/// object is checked by `inner` first, as Nova's `properties` come before `required`
/// and `additionalProperties`.
fn wrapped(
    body: &Value,
    key: &str,
    also: &[&str],
    inner: impl FnOnce(&Value) -> Check,
) -> Result<(), String> {
    let check = || {
        let top = root(body)?;
        if let Some(v) = top.get(key) {
            inner(v)?;
        }
        required(None, top, &[key])?;
        let allowed: Vec<&str> = std::iter::once(key).chain(also.iter().copied()).collect();
        no_extra(None, top, &allowed)
    };
    check().map_err(Invalid::message)
}

/// `POST /servers` at microversion 2.`minor`.
pub(super) fn create(minor: u32, body: &Value) -> Result<(), String> {
    let hints = ["os:scheduler_hints", "OS-SCH-HNT:scheduler_hints"];
    wrapped(body, "server", &hints, |v| server_create(minor, v))
}

fn server_create(minor: u32, v: &Value) -> Check {
    let s = object("server", v)?;
    if let Some(x) = s.get("name") {
        name("name", x)?;
    }
    if let Some(x) = s.get("metadata") {
        metadata("metadata", x)?;
    }
    for key in ["availability_zone", "key_name"] {
        if let Some(x) = s.get(key) {
            name(key, x)?;
        }
    }
    if let Some(x) = s.get("security_groups") {
        security_groups(x)?;
    }
    if let Some(x) = s.get("user_data") {
        let ud = string("user_data", x)?;
        base64("user_data", x, ud)?;
        too_long("user_data", x, ud.chars().count() > MAX_USER_DATA)?;
    }
    if let Some(x) = s.get("description").filter(|_| minor >= 19) {
        description(x)?;
    }
    if let Some(x) = s.get("tags").filter(|_| minor >= 52) {
        let list = array("tags", x)?;
        for (i, t) in list.iter().enumerate() {
            tag(&i.to_string(), t)?;
        }
        too_long("tags", x, list.len() > MAX_TAGS)?;
    }
    let needed: &[&str] = match minor >= 37 {
        true => &["name", "flavorRef", "networks"],
        false => &["name", "flavorRef"],
    };
    required(Some(("server", v)), s, needed)?;
    no_extra(Some(("server", v)), s, &create_keys(minor))
}

/// The `server` properties of the create schema at microversion 2.`minor`.
fn create_keys(minor: u32) -> Vec<&'static str> {
    let mut keys = vec![
        "name",
        "imageRef",
        "flavorRef",
        "adminPass",
        "metadata",
        "networks",
        "OS-DCF:diskConfig",
        "accessIPv4",
        "accessIPv6",
        "availability_zone",
        "block_device_mapping",
        "block_device_mapping_v2",
        "config_drive",
        "key_name",
        "min_count",
        "max_count",
        "return_reservation_id",
        "security_groups",
        "user_data",
    ];
    let versioned = [
        ("personality", 1, 56),
        ("description", 19, u32::MAX),
        ("tags", 52, u32::MAX),
        ("trusted_image_certificates", 63, u32::MAX),
        ("host", 74, u32::MAX),
        ("hypervisor_hostname", 74, u32::MAX),
        ("hostname", 90, u32::MAX),
    ];
    let present = versioned
        .into_iter()
        .filter(|(_, from, to)| (*from..=*to).contains(&minor));
    keys.extend(present.map(|(k, _, _)| k));
    keys
}

/// `security_groups`: a list of `{"name": <name>}`.
fn security_groups(v: &Value) -> Check {
    for (i, item) in array("security_groups", v)?.iter().enumerate() {
        let at = i.to_string();
        let g = object(&at, item)?;
        if let Some(n) = g.get("name") {
            name("name", n)?;
        }
        no_extra(Some((&at, item)), g, &["name"])?;
    }
    Ok(())
}

/// `PUT /servers/{id}` at microversion 2.`minor`.
pub(super) fn update(minor: u32, body: &Value) -> Result<(), String> {
    wrapped(body, "server", &[], |v| server_update(minor, v))
}

fn server_update(minor: u32, v: &Value) -> Check {
    let s = object("server", v)?;
    if let Some(x) = s.get("name") {
        name("name", x)?;
    }
    if let Some(x) = s.get("description").filter(|_| minor >= 19) {
        description(x)?;
    }
    let mut keys = vec!["name", "OS-DCF:diskConfig", "accessIPv4", "accessIPv6"];
    let versioned = [("description", 19), ("hostname", 90)].into_iter();
    keys.extend(versioned.filter(|(_, m)| minor >= *m).map(|(k, _)| k));
    no_extra(Some(("server", v)), s, &keys)
}

/// `PUT` and `POST /servers/{id}/metadata`: `{"metadata": {...}}`.
pub(super) fn metadata_set(body: &Value) -> Result<(), String> {
    wrapped(body, "metadata", &[], |v| metadata("metadata", v).map(drop))
}

/// `PUT /servers/{id}/metadata/{key}`: `{"meta": {key: value}}`, exactly one item.
pub(super) fn metadata_item(body: &Value) -> Result<(), String> {
    wrapped(body, "meta", &[], |v| {
        let m = metadata("meta", v)?;
        non_empty("meta", v, m.is_empty())?;
        if m.len() > 1 {
            let why = format!("{} has too many properties", py_repr(v));
            return Err(fail("meta", v, why));
        }
        Ok(())
    })
}

/// `POST /os-server-groups` at microversion 2.`minor`: `policy` and `rules` from 2.64,
/// a one-item `policies` list before, soft policies from 2.15.
pub(super) fn server_group(minor: u32, body: &Value) -> Result<(), String> {
    wrapped(body, "server_group", &[], |v| group(minor, v))
}

fn group(minor: u32, v: &Value) -> Check {
    let g = object("server_group", v)?;
    if let Some(x) = g.get("name") {
        name("name", x)?;
    }
    let keys: &[&str] = if minor >= 64 {
        if let Some(x) = g.get("policy") {
            one_of("policy", x, &POLICIES)?;
        }
        if let Some(x) = g.get("rules") {
            rules(x)?;
        }
        &["name", "policy", "rules"]
    } else {
        if let Some(x) = g.get("policies") {
            policies(minor, x)?;
        }
        &["name", "policies"]
    };
    required(Some(("server_group", v)), g, &keys[..2])?;
    no_extra(Some(("server_group", v)), g, keys)
}

/// `policies` before 2.64: exactly one known policy.
fn policies(minor: u32, v: &Value) -> Check {
    let list = array("policies", v)?;
    if let Some(first) = list.first() {
        string("0", first)?;
        one_of("0", first, &POLICIES[..if minor >= 15 { 4 } else { 2 }])?;
    }
    if list.iter().enumerate().any(|(i, p)| list[..i].contains(p)) {
        let why = format!("{} has non-unique elements", py_repr(v));
        return Err(fail("policies", v, why));
    }
    non_empty("policies", v, list.is_empty())?;
    too_long("policies", v, list.len() > 1)
}

/// `rules`: only `max_server_per_host`, a `positive_integer` (an integer, or a string
/// of digits that Nova compares with the minimum as the number it spells).
fn rules(v: &Value) -> Check {
    let r = object("rules", v)?;
    if let Some(x) = r.get("max_server_per_host") {
        let at = "max_server_per_host";
        let number = match x {
            Value::Number(n) if n.is_i64() || n.is_u64() => n.as_i64(),
            Value::String(s) => {
                let digits = s.chars().all(|c| c.is_ascii_digit());
                keywords::pattern(at, x, digits, "^[0-9]*$")?;
                non_empty(at, x, s.is_empty())?;
                s.parse::<i64>().ok()
            }
            _ => {
                let why = format!("{} is not of type 'integer', 'string'", py_repr(x));
                return Err(fail(at, x, why));
            }
        };
        if let Some(n) = number.filter(|n| *n < 1) {
            return Err(fail(at, x, format!("{n} is less than the minimum of 1")));
        }
    }
    no_extra(Some(("rules", v)), r, &["max_server_per_host"])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn several_unexpected_properties_are_listed_sorted() {
        let msg = update(64, &json!({"server": {"b": 1, "a": 2}})).err();
        assert_eq!(
            msg.as_deref(),
            Some(
                "Invalid input for field/attribute server. Value: {'a': 2, 'b': 1}. Additional properties are not allowed ('a', 'b' were unexpected)"
            )
        );
    }

    #[test]
    fn a_string_max_server_per_host_is_compared_as_a_number() {
        let body = |n: Value| json!({"server_group": {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": n}}});
        assert_eq!(server_group(64, &body(json!("2"))), Ok(()));
        assert_eq!(
            server_group(64, &body(json!("0"))).err().as_deref(),
            Some(
                "Invalid input for field/attribute max_server_per_host. Value: 0. 0 is less than the minimum of 1"
            )
        );
    }

    #[test]
    fn policies_before_2_64_is_one_known_policy() {
        let body = |p: Value| json!({"server_group": {"name": "g", "policies": p}});
        assert_eq!(server_group(14, &body(json!(["affinity"]))), Ok(()));
        assert!(server_group(14, &body(json!(["soft-affinity"]))).is_err());
        assert_eq!(server_group(15, &body(json!(["soft-affinity"]))), Ok(()));
        assert!(server_group(15, &body(json!(["affinity", "anti-affinity"]))).is_err());
    }
}
