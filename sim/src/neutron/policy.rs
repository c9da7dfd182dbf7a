//! Neutron's policy, for the rules a project member meets on networks, subnets and
//! ports: who may create on a network (`OwnershipValidationHook`), and the
//! attribute rules (`create_port:fixed_ips:ip_address`, ...) that only a network's
//! owner passes. A refusal is worded as `neutron.policy._build_match_rule` builds the
//! rule: the action, then each policy-enforced attribute the body sets (in the
//! attribute map's order), with a sub-rule per key of each item of a list of dicts.
//!
//! Deliberately not here: admin and service roles (the simulator's users are members),
//! and which rule failed (Neutron's message names the whole rule it built).

use axum::response::Response;

use super::envelope::Cx;
use crate::model::Network;

/// A policy-enforced attribute the body sets.
pub(super) struct Attr {
    pub name: &'static str,
    /// The keys of its items, when it is a list of dicts (each item's, in order).
    pub keys: Vec<String>,
    /// Whether the caller passes the attribute's rule and every key's.
    pub allowed: bool,
}

/// Answers 403 unless the caller passes `action` and every attribute's rule.
pub(super) fn enforce(
    cx: &Cx,
    action: &str,
    action_allowed: bool,
    attrs: &[Attr],
) -> Result<(), Response> {
    if action_allowed && attrs.iter().all(|a| a.allowed) {
        return Ok(());
    }
    let mut rule = format!("rule:{action}");
    for a in attrs {
        let mut attr = format!("rule:{action}:{}", a.name);
        if !a.keys.is_empty() {
            let keys: Vec<String> = a
                .keys
                .iter()
                .map(|k| format!("rule:{action}:{}:{k}", a.name))
                .collect();
            attr = format!("({attr} and ({}))", keys.join(" and "));
        }
        rule = format!("({rule} and {attr})");
    }
    let msg = format!("{rule} is disallowed by policy");
    Err(cx.err(403, "PolicyNotAuthorized", &msg))
}

/// Whether the caller's project owns the network (`rule:network_owner`).
pub(super) fn owns(cx: &Cx, net: &Network) -> bool {
    net.project_id == cx.project
}

/// `OwnershipValidationHook`: a port or subnet may be created on a shared network or
/// on one's own.
pub(super) fn may_create_on(cx: &Cx, net: &Network, resource: &str) -> Result<(), Response> {
    if net.shared || owns(cx, net) {
        return Ok(());
    }
    let msg = format!(
        "Tenant {} not allowed to create {resource} on this network",
        cx.project
    );
    Err(cx.err(403, "HTTPForbidden", &msg))
}

/// `fixed_ips` on a port of `net`: `ip_address` needs the network's owner,
/// `subnet_id` (and the attribute itself, at create) a shared network or the owner.
pub(super) fn fixed_ips(cx: &Cx, net: &Network, keys: Vec<String>, create: bool) -> Attr {
    let owner = owns(cx, net);
    let shared_ok = owner || net.shared;
    let key_ok = |k: &String| match k.as_str() {
        "subnet_id" => shared_ok,
        _ => owner,
    };
    let allowed = (owner || (create && net.shared)) && keys.iter().all(key_ok);
    Attr {
        name: "fixed_ips",
        keys,
        allowed,
    }
}

/// `allowed_address_pairs` (and each key of the pairs) needs the network's owner.
pub(super) fn address_pairs(cx: &Cx, net: &Network, keys: Vec<String>) -> Attr {
    Attr {
        name: "allowed_address_pairs",
        keys,
        allowed: owns(cx, net),
    }
}
