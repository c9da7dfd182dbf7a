//! A security group rule's create body as Neutron reads it: required attributes, the
//! converters of its attribute map in their order (`direction`, `convert_protocol`,
//! `convert_validate_port_value`, `convert_ethertype_to_case_insensitive`,
//! `convert_ip_prefix_to_cidr`), then `_validate_security_group_rule`'s checks that
//! need no world: the whole port range of TCP dropped, the port range for the
//! protocol, the prefix's family against `ethertype`, one remote at most. Each refusal
//! is the exception Neutron raises, with its words (`neutron-security-groups.md`).
//!
//! Deliberately not here: what needs the world (the groups named, duplicates; the
//! handler's, `security_group_rules.rs`), `ipv6-icmp`'s canonical names and the
//! ethertype/protocol conflicts of IPv6 ICMP. Also the rule's view, alone or in its group's.

use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};

use super::envelope::Cx;
use super::prefixes::Prefix;
use super::schema::{self, Spec};
use crate::model::SecurityGroupRule;
use crate::wire::{self, py_str};
use crate::world::security_groups::{PROTOCOLS, protocol_number};

const SPEC: Spec = Spec {
    required: &["security_group_id", "direction"],
    read_only: &[
        "id",
        "normalized_cidr",
        "belongs_to_default_sg",
        "created_at",
        "updated_at",
        "revision_number",
    ],
    create_only: &[],
    modelled: &[
        "remote_group_id",
        "protocol",
        "port_range_min",
        "port_range_max",
        "ethertype",
        "remote_ip_prefix",
        "remote_address_group_id",
        "description",
    ],
    other: &["tenant_id", "project_id"],
};

/// The protocols that take a port range: TCP, UDP, DCCP, SCTP, UDPLITE.
const PORT_PROTOCOLS: &[u8] = &[6, 17, 33, 132, 136];
/// ICMP and IPv6 ICMP: the range is a type and a code.
const ICMP_PROTOCOLS: &[u8] = &[1, 58];

/// Checks a create body: the rule it asks for (no ID yet), or Neutron's refusal.
pub(super) fn check(cx: &Cx, req: &Map<String, Value>) -> Result<SecurityGroupRule, Response> {
    schema::attributes(cx, req, &SPEC, true)?;
    let text = |k: &str| req.get(k).and_then(Value::as_str).map(str::to_string);
    let group = text("security_group_id").unwrap_or_default();
    let direction = direction(cx, req.get("direction").unwrap_or(&Value::Null))?;
    let mut rule = SecurityGroupRule::open(&group, &direction, "IPv4", Utc::now());
    rule.remote_group_id = text("remote_group_id");
    rule.protocol = protocol(cx, req.get("protocol"))?;
    rule.port_range_min = port(cx, req.get("port_range_min"))?;
    rule.port_range_max = port(cx, req.get("port_range_max"))?;
    if let Some(e) = req.get("ethertype") {
        rule.ethertype = ethertype(cx, e)?;
    }
    let prefix = prefix(cx, req.get("remote_ip_prefix"))?;
    rule.remote_ip_prefix = prefix.map(Prefix::text);
    rule.normalized_cidr = prefix.map(Prefix::network);
    rule.remote_address_group_id = text("remote_address_group_id");
    rule.description = Some(schema::text(cx, req, "description")?.unwrap_or_default());
    schema::unknown(cx, req, &SPEC)?;
    validate(cx, rule, prefix)
}

/// `type:values` of `direction`.
fn direction(cx: &Cx, v: &Value) -> Result<String, Response> {
    match v.as_str() {
        Some(d @ ("ingress" | "egress")) => Ok(d.to_string()),
        _ => {
            let why = format!("{} is not in valid_values", py_str(v));
            Err(schema::invalid(cx, "direction", &why))
        }
    }
}

/// `convert_protocol`: a name (any case, stored lower-cased) or a number 0-255 (kept
/// as written, as a string); `any` and null are any protocol.
fn protocol(cx: &Cx, v: Option<&Value>) -> Result<Option<String>, Response> {
    let text = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => py_str(v),
    };
    let lower = text.to_ascii_lowercase();
    if lower == "any" {
        return Ok(None);
    }
    if PROTOCOLS.iter().any(|(name, _)| *name == lower) {
        return Ok(Some(lower));
    }
    if text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u8>().is_ok() {
        return Ok(Some(text));
    }
    let names: Vec<String> = PROTOCOLS.iter().map(|(n, _)| format!("'{n}'")).collect();
    let msg = format!(
        "Security group rule protocol {text} not supported. Only protocol values (None, 'any', {}) and integer representations [0 to 255] are supported.",
        names.join(", ")
    );
    Err(cx.err(400, "SecurityGroupRuleInvalidProtocol", &msg))
}

/// `convert_validate_port_value`: 0-65535, a number or its digits.
fn port(cx: &Cx, v: Option<&Value>) -> Result<Option<u32>, Response> {
    let shown = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => py_str(v),
    };
    match shown.parse::<u32>() {
        Ok(p) if p <= 65535 && shown.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(p)),
        _ => Err(bad_port(cx, &shown)),
    }
}

fn bad_port(cx: &Cx, shown: &str) -> Response {
    let msg = format!("Invalid value for port {shown}");
    cx.err(400, "SecurityGroupInvalidPortValue", &msg)
}

/// `convert_ethertype_to_case_insensitive` and its values.
fn ethertype(cx: &Cx, v: &Value) -> Result<String, Response> {
    let shown = py_str(v);
    match shown.to_ascii_lowercase().as_str() {
        "ipv4" => Ok("IPv4".into()),
        "ipv6" => Ok("IPv6".into()),
        _ => {
            let msg = format!(
                "Security group rule for ethertype '{shown}' not supported. Allowed values are ['IPv4', 'IPv6']."
            );
            Err(cx.err(400, "SecurityGroupRuleInvalidEtherType", &msg))
        }
    }
}

/// `convert_ip_prefix_to_cidr`: a prefix, host bits kept, or a bare address.
fn prefix(cx: &Cx, v: Option<&Value>) -> Result<Option<Prefix>, Response> {
    let shown = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => py_str(v),
    };
    match Prefix::parse(&shown) {
        Some(p) => Ok(Some(p)),
        None => {
            let msg = format!("Invalid CIDR {shown} given as IP prefix.");
            Err(cx.err(400, "InvalidCIDR", &msg))
        }
    }
}

/// `_validate_security_group_rule`'s checks that need no world.
fn validate(
    cx: &Cx,
    mut rule: SecurityGroupRule,
    prefix: Option<Prefix>,
) -> Result<SecurityGroupRule, Response> {
    // `_make_canonical_port_range`: the whole range is no range.
    if (rule.port_range_min, rule.port_range_max) == (Some(1), Some(65535)) {
        (rule.port_range_min, rule.port_range_max) = (None, None);
    }
    port_range(cx, &rule)?;
    if let Some(p) = prefix.filter(|p| p.ethertype() != rule.ethertype) {
        let msg = format!(
            "Conflicting value ethertype {} for CIDR {}",
            rule.ethertype,
            p.text()
        );
        return Err(cx.err(400, "SecurityGroupRuleParameterConflict", &msg));
    }
    let remotes = [
        rule.remote_ip_prefix.is_some(),
        rule.remote_group_id.is_some(),
        rule.remote_address_group_id.is_some(),
    ];
    if remotes.iter().filter(|r| **r).count() > 1 {
        let msg = "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided.";
        return Err(cx.err(400, "SecurityGroupMultipleRemoteEntites", msg));
    }
    Ok(rule)
}

/// `_validate_port_range`.
fn port_range(cx: &Cx, rule: &SecurityGroupRule) -> Result<(), Response> {
    let (min, max) = (rule.port_range_min, rule.port_range_max);
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    let Some(protocol) = rule.protocol.as_deref() else {
        let msg = "Must also specify protocol if port range is given.";
        return Err(cx.err(400, "SecurityGroupProtocolRequiredWithPorts", msg));
    };
    let number = protocol_number(protocol).unwrap_or_default();
    if PORT_PROTOCOLS.contains(&number) {
        if min == Some(0) || max == Some(0) {
            return Err(bad_port(cx, "0"));
        }
        return match (min, max) {
            (Some(low), Some(high)) if low <= high => Ok(()),
            _ => {
                let msg = "For TCP/UDP protocols, port_range_min must be <= port_range_max";
                Err(cx.err(400, "SecurityGroupInvalidPortRange", msg))
            }
        };
    }
    if ICMP_PROTOCOLS.contains(&number) {
        return icmp(cx, min, max);
    }
    let msg = format!(
        "Ports cannot be specified for protocol {number}. Ports are only supported for DCCP, SCTP, TCP, UDP, UDPLITE."
    );
    Err(cx.err(400, "SecurityGroupInvalidProtocolForPort", &msg))
}

/// An ICMP rule's type (`port_range_min`) and code (`port_range_max`).
fn icmp(cx: &Cx, min: Option<u32>, max: Option<u32>) -> Result<(), Response> {
    for (value, field, attr) in [
        (min, "type", "port_range_min"),
        (max, "code", "port_range_max"),
    ] {
        if let Some(v) = value.filter(|v| *v > 255) {
            let msg = format!("Invalid value for ICMP {field} ({attr}) {v}. It must be 0 to 255.");
            return Err(cx.err(400, "SecurityGroupInvalidIcmpValue", &msg));
        }
    }
    if let (None, Some(code)) = (min, max) {
        let msg = format!(
            "ICMP code (port-range-max) {code} is provided but ICMP type (port-range-min) is missing."
        );
        return Err(cx.err(400, "SecurityGroupMissingIcmpType", &msg));
    }
    Ok(())
}

/// A rule as Neutron shows it (alone; inside its group's view with `tags` too).
pub(super) fn view(project: &str, r: &SecurityGroupRule) -> Value {
    json!({
        "id": r.id, "project_id": project, "security_group_id": r.security_group_id,
        "ethertype": r.ethertype, "direction": r.direction, "protocol": r.protocol,
        "port_range_min": r.port_range_min, "port_range_max": r.port_range_max,
        "remote_ip_prefix": r.remote_ip_prefix, "remote_address_group_id": r.remote_address_group_id,
        "normalized_cidr": r.normalized_cidr, "remote_group_id": r.remote_group_id,
        "belongs_to_default_sg": r.belongs_to_default_sg, "description": r.description,
        "created_at": wire::ts_z(r.created), "updated_at": wire::ts_z(r.created),
        "revision_number": 0, "tenant_id": project
    })
}
