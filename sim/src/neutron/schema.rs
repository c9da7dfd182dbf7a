//! Neutron's request-body checks (`neutron.api.v2.base.prepare_request_body` with
//! `neutron_lib.api.validators`, run on every POST and PUT): required attributes,
//! attributes not allowed in POST or read-only in PUT, each value's validator in the
//! attribute map's order, then attributes Neutron does not know. A refusal is
//! `HTTPBadRequest`, a value's worded `Invalid input for <attribute>. Reason:
//! <validator's message>.`, in the recorded `NeutronError` body.
//!
//! Attributes Neutron knows but the simulator does not model (provider networks,
//! bindings, DHCP options, ...) are refused with a 400 that says so, rather than
//! silently ignored. Deliberately not here: checks that need the cloud's state (the
//! handlers make them after these) and policy (`policy.rs`).

use std::net::IpAddr;

use axum::response::Response;
use serde_json::{Map, Value};

use super::envelope::Cx;
use super::ipv4::{self, Cidr};
use crate::wire::py_str;

/// `DESCRIPTION_FIELD_SIZE` and `NAME_MAX_LEN`.
const FIELD_SIZE: usize = 255;

/// What Neutron's attribute map says of one resource's attributes, and which of
/// them the simulator models.
pub(super) struct Spec {
    /// Required in POST (no default).
    pub required: &'static [&'static str],
    /// Not allowed in POST and read-only in PUT (`id`, `status`, ...).
    pub read_only: &'static [&'static str],
    /// Allowed in POST only.
    pub create_only: &'static [&'static str],
    /// Modelled by the simulator.
    pub modelled: &'static [&'static str],
    /// Known to Neutron, not modelled by the simulator.
    pub other: &'static [&'static str],
}

fn bad(cx: &Cx, msg: &str) -> Response {
    cx.err(400, "HTTPBadRequest", msg)
}

/// `{"<key>": {...}}`: the object, or Neutron's 400.
pub(super) fn body(cx: &Cx, bytes: &[u8], key: &str) -> Result<Map<String, Value>, Response> {
    let v =
        crate::wire::parse_body(bytes).ok_or_else(|| bad(cx, "Failed to parse request body"))?;
    v.get(key)
        .and_then(Value::as_object)
        .cloned()
        .ok_or_else(|| bad(cx, "Resource body required"))
}

/// The checks before the values': required attributes, then those not allowed.
pub(super) fn attributes(
    cx: &Cx,
    req: &Map<String, Value>,
    spec: &Spec,
    create: bool,
) -> Result<(), Response> {
    if create {
        if let Some(k) = spec.required.iter().find(|k| !req.contains_key(**k)) {
            let msg = format!("Failed to parse request. Required attribute '{k}' not specified");
            return Err(bad(cx, &msg));
        }
        if let Some(k) = spec.read_only.iter().find(|k| req.contains_key(**k)) {
            return Err(bad(cx, &format!("Attribute '{k}' not allowed in POST")));
        }
        return Ok(());
    }
    let fixed = spec.read_only.iter().chain(spec.create_only);
    match fixed.into_iter().find(|k| req.contains_key(**k)) {
        Some(k) => Err(bad(cx, &format!("Cannot update read-only attribute {k}"))),
        None => Ok(()),
    }
}

/// The checks after the values': attributes Neutron does not know, then those the
/// simulator does not model.
pub(super) fn unknown(cx: &Cx, req: &Map<String, Value>, spec: &Spec) -> Result<(), Response> {
    let known = |k: &str| spec.modelled.contains(&k) || spec.other.contains(&k);
    let listed = |k: &&String| spec.required.contains(&k.as_str()) || known(k);
    let strange: Vec<&str> = req
        .keys()
        .filter(|k| !listed(k) && !spec.read_only.contains(&k.as_str()))
        .map(String::as_str)
        .collect();
    if !strange.is_empty() {
        let msg = format!("Unrecognized attribute(s) '{}'", strange.join(", "));
        return Err(bad(cx, &msg));
    }
    match req.keys().find(|k| spec.other.contains(&k.as_str())) {
        Some(k) => Err(bad(
            cx,
            &format!("Attribute '{k}' is not modelled by the simulator."),
        )),
        None => Ok(()),
    }
}

/// `Invalid input for <attribute>. Reason: <why>.`
pub(super) fn invalid(cx: &Cx, attribute: &str, why: &str) -> Response {
    bad(
        cx,
        &format!("Invalid input for {attribute}. Reason: {why}."),
    )
}

/// [`invalid`] for `attribute`, to map a validator's message with.
pub(super) fn invalid_for<'a>(
    cx: &'a Cx,
    attribute: &'a str,
) -> impl FnOnce(String) -> Response + 'a {
    move |why| invalid(cx, attribute, &why)
}

/// `type:string` of at most 255 characters (`name`, `description`), if given.
pub(super) fn text(
    cx: &Cx,
    req: &Map<String, Value>,
    attribute: &str,
) -> Result<Option<String>, Response> {
    let Some(v) = req.get(attribute) else {
        return Ok(None);
    };
    match string(v, FIELD_SIZE) {
        Some(why) => Err(invalid(cx, attribute, &why)),
        None => Ok(v.as_str().map(str::to_string)),
    }
}

/// A floating IP body (create or update): `description`.
pub(super) fn floating_ip(cx: &Cx, body: &Map<String, Value>) -> Result<(), Response> {
    text(cx, body, "description").map(|_| ())
}

/// `validate_string(data, max_len)`.
fn string(data: &Value, max_len: usize) -> Option<String> {
    let shown = py_str(data);
    match data.as_str() {
        None => Some(format!("'{shown}' is not a valid string")),
        Some(s) if s.chars().count() > max_len => {
            Some(format!("'{shown}' exceeds maximum length of {max_len}"))
        }
        Some(_) => None,
    }
}

/// `validate_uuid`.
pub(super) fn uuid(data: &Value) -> Result<String, String> {
    let s = data.as_str().unwrap_or_default();
    match uuid::Uuid::try_parse(s) {
        Ok(_) => Ok(s.to_string()),
        Err(_) => Err(format!("'{}' is not a valid UUID", py_str(data))),
    }
}

/// `validate_uuid_list` (`security_groups`).
pub(super) fn uuid_list(data: &Value) -> Result<Vec<String>, String> {
    let Some(items) = data.as_array() else {
        return Err(format!("'{}' is not a list", py_str(data)));
    };
    let ids = items.iter().map(uuid).collect::<Result<Vec<_>, _>>()?;
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    match unique.len() == ids.len() {
        true => Ok(ids),
        false => Err(format!("Duplicate items in the list: '{}'", ids.join(", "))),
    }
}

/// `validate_ip_address` of a JSON value.
pub(super) fn ip(data: &Value) -> Result<IpAddr, String> {
    match data.as_str() {
        Some(s) => ipv4::ip_address(s),
        None => Err(format!("'{}' is not a valid IP address", py_str(data))),
    }
}

/// `validate_subnet` of a JSON value (an IPv4 CIDR).
pub(super) fn cidr(data: &Value) -> Result<Cidr, String> {
    match data.as_str() {
        Some(s) => ipv4::subnet(s),
        None => Err(format!("'{}' is not a valid IP subnet", py_str(data))),
    }
}

/// `validate_mac_address`: six colon-separated pairs of hex digits.
pub(super) fn mac(data: &Value) -> Result<String, String> {
    let s = data.as_str().unwrap_or_default();
    let pairs: Vec<&str> = s.split([':', '-']).collect();
    let ok = pairs.len() == 6
        && pairs
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
    match ok {
        true => Ok(s.replace('-', ":").to_ascii_lowercase()),
        false => Err(format!("'{}' is not a valid MAC address", py_str(data))),
    }
}

/// `convert_to_boolean`: a JSON boolean or its usual spellings. A converter, not a
/// validator: its refusal is `InvalidInput` for the whole operation.
pub(super) fn boolean(cx: &Cx, data: &Value) -> Result<bool, Response> {
    match data {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") || s == "1" => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") || s == "0" => Ok(false),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
        other => {
            let msg = format!(
                "Invalid input for operation: '{}' cannot be converted to boolean.",
                py_str(other)
            );
            Err(cx.err(400, "InvalidInput", &msg))
        }
    }
}
