//! The listener and pool settings WSME's types do not check alone: inserted headers
//! (known names, HTTP listeners only), allowed CIDRs, session persistence, and which
//! pool protocols a listener passes traffic to. Octavia's words, as the real service
//! answered them (`sim/octavia-options.md`).

use std::net::IpAddr;

use axum::response::Response;
use serde_json::{Map, Value};

use super::envelope::Cx;
use crate::wire::py_str;
use crate::world::octavia::ListenerOptions;

/// `constants.SUPPORTED_HTTP_HEADERS` and `SUPPORTED_SSL_HEADERS`.
const HTTP_HEADERS: &[&str] = &["X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto"];
const SSL_HEADERS: &[&str] = &[
    "X-SSL-Client-Verify",
    "X-SSL-Client-Has-Cert",
    "X-SSL-Client-DN",
    "X-SSL-Client-CN",
    "X-SSL-Issuer",
    "X-SSL-Client-SHA1",
    "X-SSL-Client-Not-Before",
    "X-SSL-Client-Not-After",
];
/// In the order the recorded refusal lists them.
const PERSISTENCE_TYPES: &[&str] = &["HTTP_COOKIE", "SOURCE_IP", "APP_COOKIE"];

/// `constants.VALID_LISTENER_POOL_PROTOCOL_MAP`.
fn pool_protocols(listener: &str) -> &'static [&'static str] {
    match listener {
        "TCP" => &["HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"],
        "HTTP" | "TERMINATED_HTTPS" => &["HTTP", "PROXY", "PROXYV2"],
        "HTTPS" => &["HTTPS", "PROXY", "PROXYV2", "TCP"],
        "UDP" => &["UDP"],
        "SCTP" => &["SCTP"],
        _ => &[],
    }
}

/// The settings a listener request gives, over `base`.
pub(super) fn listener_options(req: &Map<String, Value>, base: ListenerOptions) -> ListenerOptions {
    let ms = |field: &str, old: u64| req.get(field).and_then(Value::as_u64).unwrap_or(old);
    ListenerOptions {
        timeout_client_data: ms("timeout_client_data", base.timeout_client_data),
        timeout_member_connect: ms("timeout_member_connect", base.timeout_member_connect),
        timeout_member_data: ms("timeout_member_data", base.timeout_member_data),
        timeout_tcp_inspect: ms("timeout_tcp_inspect", base.timeout_tcp_inspect),
        allowed_cidrs: match req.get("allowed_cidrs") {
            Some(v) => strings(v),
            None => base.allowed_cidrs,
        },
        insert_headers: match req.get("insert_headers") {
            Some(Value::Object(h)) => h.clone(),
            Some(_) => Map::new(),
            None => base.insert_headers,
        },
        default_tls_container_ref: match req.get("default_tls_container_ref") {
            Some(r) => r.as_str().map(str::to_owned),
            None => base.default_tls_container_ref,
        },
        sni_container_refs: match req.get("sni_container_refs") {
            Some(v) => strings(v),
            None => base.sni_container_refs,
        },
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// Inserted headers and allowed CIDRs of a listener of `protocol` on a load balancer
/// whose VIP is `vip` (create or update).
pub(super) fn check_listener(
    cx: &Cx,
    req: &Map<String, Value>,
    protocol: &str,
    vip: &str,
) -> Result<(), Response> {
    if let Some(cidrs) = req.get("allowed_cidrs").filter(|v| !v.is_null()) {
        check_cidrs(cx, cidrs, vip)?;
    }
    let Some(headers) = req.get("insert_headers").and_then(Value::as_object) else {
        return Ok(());
    };
    if headers.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = headers.keys().map(String::as_str).collect();
    let unknown: Vec<&str> = names
        .iter()
        .copied()
        .filter(|h| !HTTP_HEADERS.contains(h) && !SSL_HEADERS.contains(h))
        .collect();
    if !unknown.is_empty() {
        // Octavia formats the set difference of the keys as Python prints it.
        let shown = format!("dict_keys({})", py_list(&unknown));
        return Err(invalid_option(cx, &shown, "insert_headers"));
    }
    if !matches!(protocol, "HTTP" | "TERMINATED_HTTPS") {
        return Err(invalid_option(
            cx,
            "insert-headers",
            &format!("a {protocol} protocol listener."),
        ));
    }
    let ssl: Vec<&str> = names
        .iter()
        .copied()
        .filter(|h| SSL_HEADERS.contains(h))
        .collect();
    if protocol != "TERMINATED_HTTPS" && !ssl.is_empty() {
        return Err(invalid_option(
            cx,
            &py_list(&ssl),
            &format!("{protocol} protocol listener."),
        ));
    }
    Ok(())
}

/// Allowed CIDRs: each a network, of the VIP's IP version.
fn check_cidrs(cx: &Cx, cidrs: &Value, vip: &str) -> Result<(), Response> {
    if strings(cidrs).iter().any(|c| !is_cidr(c)) {
        return Err(cx.err(
            400,
            &format!(
                "Invalid input for field/attribute allowed_cidrs. Value: '{}'. Value should be IPv4 or IPv6 CIDR format",
                py_str(cidrs)
            ),
        ));
    }
    let v4 = |a: &str| a.split('/').next().is_some_and(|ip| ip.contains('.'));
    match strings(cidrs).into_iter().find(|c| v4(c) != v4(vip)) {
        Some(other) => Err(cx.err(
            400,
            &format!(
                "Validation failure: CIDR {other} IP version incompatible with all VIPs ['{vip}'] IP version."
            ),
        )),
        None => Ok(()),
    }
}

/// A pool of `req` on a listener of `listener` (when it has one): the protocol the
/// listener can pass to, and the session persistence.
pub(super) fn check_pool(
    cx: &Cx,
    req: &Map<String, Value>,
    listener: Option<&str>,
) -> Result<(), Response> {
    let protocol = req.get("protocol").and_then(Value::as_str).unwrap_or("");
    if let Some(listener) = listener
        && !pool_protocols(listener).contains(&protocol)
    {
        return Err(cx.err(
            400,
            &format!(
                "Validation failure: The pool protocol '{protocol}' is invalid while the listener protocol is '{listener}'."
            ),
        ));
    }
    check_persistence(cx, req, protocol)
}

/// The session persistence of a pool request for a pool of `protocol`.
pub(super) fn check_persistence(
    cx: &Cx,
    req: &Map<String, Value>,
    protocol: &str,
) -> Result<(), Response> {
    let Some(sp) = req.get("session_persistence").filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let kind = sp.get("type").and_then(Value::as_str).unwrap_or("");
    if !PERSISTENCE_TYPES.contains(&kind) {
        return Err(cx.err(
            400,
            &format!(
                "Invalid input for field/attribute type. Value: '{kind}'. Value should be one of: {}",
                PERSISTENCE_TYPES.join(", ")
            ),
        ));
    }
    let cookie = sp.get("cookie_name").filter(|v| !v.is_null());
    let why = match (kind, cookie) {
        (_, _) if matches!(protocol, "UDP" | "SCTP") && kind != "SOURCE_IP" => format!(
            "Session persistence of type {kind} is not supported for UDP/SCTP protocol pools."
        ),
        ("APP_COOKIE", None) => "Field \"cookie_name\" must be specified when using the \"APP_COOKIE\" session persistence type.".to_owned(),
        ("SOURCE_IP" | "HTTP_COOKIE", Some(_)) => "Field \"cookie_name\" can only be specified with session persistence of type \"APP_COOKIE\".".to_owned(),
        _ => return Ok(()),
    };
    Err(cx.err(400, &format!("Validation failure: {why}")))
}

/// Octavia's `InvalidOption`: "<value> is not a valid option for <option>".
fn invalid_option(cx: &Cx, value: &str, option: &str) -> Response {
    cx.err(400, &format!("{value} is not a valid option for {option}"))
}

/// A Python list of strings, as Octavia formats one into a message.
fn py_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// `netaddr.IPNetwork` accepts it: an address and a prefix length that fits it.
fn is_cidr(text: &str) -> bool {
    let (address, prefix) = text.split_once('/').unwrap_or((text, ""));
    let Ok(ip) = address.parse::<IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    prefix.is_empty() || prefix.parse::<u8>().is_ok_and(|p| p <= max)
}
