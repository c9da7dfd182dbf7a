//! Octavia's request types (`octavia/api/v2/types/*.py`, checked by WSME) for the
//! bodies the operator sends: mandatory fields, lengths of names, descriptions and
//! tags, protocol, algorithm, monitor type and method enums, port, weight, retry and
//! delay ranges, the health check's URL path and expected codes. A refusal is WSME's
//! `InvalidInput`, `Invalid input for field/attribute <name>. Value: '<value>'. <why>`
//! (Octavia's API reference, "Faults"); WSME stops at the first attribute
//! that fails, in the order the type declares them, which the tables below keep.
//!
//! Deliberately not here: UUID formats, TLS, L7 and other attributes the operator
//! never sends, unknown attributes, and checks that need the cloud's state or more than
//! one field (the handlers and `options.rs` make those).

use std::sync::LazyLock;

use axum::response::Response;
use regex::Regex;
use serde_json::{Map, Value};

use super::envelope::Cx;
use crate::wire::py_str;

pub(super) const LISTENER_PROTOCOLS: &[&str] = &[
    "HTTP",
    "HTTPS",
    "TCP",
    "TERMINATED_HTTPS",
    "UDP",
    "SCTP",
    "PROMETHEUS",
];
const POOL_PROTOCOLS: &[&str] = &["HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP", "UDP", "SCTP"];
/// In the order the recorded refusal lists them.
const ALGORITHMS: &[&str] = &[
    "SOURCE_IP_PORT",
    "LEAST_CONNECTIONS",
    "SOURCE_IP",
    "ROUND_ROBIN",
];
const MONITOR_TYPES: &[&str] = &[
    "HTTP",
    "HTTPS",
    "PING",
    "TCP",
    "TLS-HELLO",
    "UDP-CONNECT",
    "SCTP",
];
const HTTP_METHODS: &[&str] = &[
    "GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "OPTIONS", "PATCH", "CONNECT",
];
const EXPECTED_CODES: &str = r"^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$";
static CODES: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(EXPECTED_CODES).ok());

/// The WSME type of one attribute.
#[derive(Clone, Copy)]
pub(super) enum Type {
    /// `StringType(max_length=…)`.
    Text(usize),
    /// `ArrayType(StringType(max_length=255))`.
    Tags,
    /// `IntegerType(minimum=…, maximum=…)`.
    Int(Option<i64>, Option<i64>),
    /// `Enum(str, …)`.
    OneOf(&'static [&'static str]),
    /// `types.URLPathType`.
    UrlPath,
    /// The `StringType(pattern=…)` of `expected_codes`.
    Codes,
    /// A type not checked here; listed for its `mandatory` flag.
    Other,
}

/// One attribute of a request type.
pub(super) struct Attr {
    name: &'static str,
    kind: Type,
    mandatory: bool,
}

const fn opt(name: &'static str, kind: Type) -> Attr {
    Attr {
        name,
        kind,
        mandatory: false,
    }
}

const fn req(name: &'static str, kind: Type) -> Attr {
    Attr {
        name,
        kind,
        mandatory: true,
    }
}

const NAME: Attr = opt("name", Type::Text(255));
const DESCRIPTION: Attr = opt("description", Type::Text(255));
const TAGS: Attr = opt("tags", Type::Tags);
const PORT: Type = Type::Int(Some(1), Some(65535));
const RETRIES: Type = Type::Int(Some(1), Some(10));

/// `LoadBalancerPOST` and `LoadBalancerPUT` (the operator sends the same fields).
pub(super) const LOAD_BALANCER: &[Attr] = &[
    NAME,
    DESCRIPTION,
    TAGS,
    opt("availability_zone", Type::Text(255)),
];
/// `timeout_*` of a listener: milliseconds, at most 24 days (`constants.MAX_TIMEOUT`).
const TIMEOUT: Type = Type::Int(Some(0), Some(2_073_600_000));
const CONNECTION_LIMIT: Attr = opt("connection_limit", Type::Int(Some(-1), None));
const CLIENT_DATA: Attr = opt("timeout_client_data", TIMEOUT);
const MEMBER_CONNECT: Attr = opt("timeout_member_connect", TIMEOUT);
const MEMBER_DATA: Attr = opt("timeout_member_data", TIMEOUT);
const TCP_INSPECT: Attr = opt("timeout_tcp_inspect", TIMEOUT);
/// Checked in `options.rs`: WSME's `DictType(str, str)` and `[CidrType]`.
const INSERT_HEADERS: Attr = opt("insert_headers", Type::Other);
const ALLOWED_CIDRS: Attr = opt("allowed_cidrs", Type::Other);
/// Checked in `tls.rs` against Barbican.
const DEFAULT_TLS: Attr = opt("default_tls_container_ref", Type::Other);
const SNI: Attr = opt("sni_container_refs", Type::Other);

pub(super) const LISTENER_POST: &[Attr] = &[
    NAME,
    DESCRIPTION,
    req("protocol", Type::OneOf(LISTENER_PROTOCOLS)),
    req("protocol_port", PORT),
    CONNECTION_LIMIT,
    INSERT_HEADERS,
    req("loadbalancer_id", Type::Other),
    CLIENT_DATA,
    MEMBER_CONNECT,
    MEMBER_DATA,
    TCP_INSPECT,
    TAGS,
    ALLOWED_CIDRS,
    DEFAULT_TLS,
    SNI,
];
/// `ListenerSingleCreate`: a listener inside a load balancer create (no parent ID).
pub(super) const LISTENER_SINGLE: &[Attr] = &[
    NAME,
    DESCRIPTION,
    req("protocol", Type::OneOf(LISTENER_PROTOCOLS)),
    req("protocol_port", PORT),
    CONNECTION_LIMIT,
    INSERT_HEADERS,
    CLIENT_DATA,
    MEMBER_CONNECT,
    MEMBER_DATA,
    TCP_INSPECT,
    TAGS,
    ALLOWED_CIDRS,
    DEFAULT_TLS,
    SNI,
];
pub(super) const LISTENER_PUT: &[Attr] = &[
    NAME,
    DESCRIPTION,
    CONNECTION_LIMIT,
    INSERT_HEADERS,
    CLIENT_DATA,
    MEMBER_CONNECT,
    MEMBER_DATA,
    TCP_INSPECT,
    TAGS,
    ALLOWED_CIDRS,
    DEFAULT_TLS,
    SNI,
];
/// Checked in `options.rs`: WSME's `SessionPersistencePOST`.
const SESSION_PERSISTENCE: Attr = opt("session_persistence", Type::Other);
pub(super) const POOL_POST: &[Attr] = &[
    NAME,
    DESCRIPTION,
    req("protocol", Type::OneOf(POOL_PROTOCOLS)),
    req("lb_algorithm", Type::OneOf(ALGORITHMS)),
    SESSION_PERSISTENCE,
    TAGS,
];
pub(super) const POOL_PUT: &[Attr] = &[
    NAME,
    DESCRIPTION,
    opt("lb_algorithm", Type::OneOf(ALGORITHMS)),
    SESSION_PERSISTENCE,
    TAGS,
];
/// `MemberPOST`, also each item of the batch update.
pub(super) const MEMBER_POST: &[Attr] = &[
    NAME,
    req("address", Type::Other),
    req("protocol_port", PORT),
    opt("weight", Type::Int(Some(0), Some(256))),
    opt("monitor_port", PORT),
    TAGS,
];
pub(super) const MEMBER_PUT: &[Attr] = &[
    NAME,
    opt("weight", Type::Int(Some(0), Some(256))),
    opt("monitor_port", PORT),
    TAGS,
];
pub(super) const MONITOR_POST: &[Attr] = &[
    NAME,
    req("type", Type::OneOf(MONITOR_TYPES)),
    req("delay", Type::Int(Some(0), None)),
    req("timeout", Type::Int(Some(0), None)),
    opt("max_retries_down", RETRIES),
    req("max_retries", RETRIES),
    opt("http_method", Type::OneOf(HTTP_METHODS)),
    opt("url_path", Type::UrlPath),
    opt("expected_codes", Type::Codes),
    req("pool_id", Type::Other),
    TAGS,
];
/// `HealthMonitorSingleCreate`: a monitor inside a pool of a load balancer create.
pub(super) const MONITOR_SINGLE: &[Attr] = &[
    NAME,
    req("type", Type::OneOf(MONITOR_TYPES)),
    req("delay", Type::Int(Some(0), None)),
    req("timeout", Type::Int(Some(0), None)),
    opt("max_retries_down", RETRIES),
    req("max_retries", RETRIES),
    opt("http_method", Type::OneOf(HTTP_METHODS)),
    opt("url_path", Type::UrlPath),
    opt("expected_codes", Type::Codes),
    TAGS,
];
pub(super) const MONITOR_PUT: &[Attr] = &[
    NAME,
    opt("delay", Type::Int(Some(0), None)),
    opt("timeout", Type::Int(Some(0), None)),
    opt("max_retries_down", RETRIES),
    opt("max_retries", RETRIES),
    opt("http_method", Type::OneOf(HTTP_METHODS)),
    opt("url_path", Type::UrlPath),
    opt("expected_codes", Type::Codes),
    TAGS,
];

/// Checks a request body against its type, answering WSME's 400 at the first failure.
pub(super) fn check(cx: &Cx, attrs: &[Attr], body: &Map<String, Value>) -> Result<(), Response> {
    refusal(attrs, body).map_or(Ok(()), |msg| Err(cx.err(400, &msg)))
}

/// WSME's message for the first attribute of `body` that fails its type.
fn refusal(attrs: &[Attr], body: &Map<String, Value>) -> Option<String> {
    attrs.iter().find_map(|a| {
        let why = match body.get(a.name).filter(|v| !v.is_null()) {
            None if a.mandatory => Some("Mandatory field missing.".to_string()),
            None => None,
            Some(v) => why(a.kind, v),
        };
        let value = body.get(a.name).map_or("None".to_string(), py_str);
        why.map(|why| {
            format!(
                "Invalid input for field/attribute {}. Value: '{value}'. {why}",
                a.name
            )
        })
    })
}

/// Why `v` is not of type `kind`, in WSME's words.
fn why(kind: Type, v: &Value) -> Option<String> {
    match kind {
        Type::Text(max) => text(v, max),
        Type::Tags => v.as_array()?.iter().find_map(|t| text(t, 255)),
        Type::Int(min, max) => {
            let n = v.as_i64()?;
            match (min, max) {
                (Some(min), _) if n < min => {
                    Some(format!("Value should be greater or equal to {min}"))
                }
                (_, Some(max)) if n > max => {
                    Some(format!("Value should be lower or equal to {max}"))
                }
                _ => None,
            }
        }
        Type::OneOf(allowed) => {
            let ok = v.as_str().is_some_and(|s| allowed.contains(&s));
            (!ok).then(|| format!("Value should be one of: {}", allowed.join(", ")))
        }
        Type::UrlPath => {
            let ok = v.as_str().is_some_and(url_path);
            (!ok).then(|| "Value must be a valid URL path".to_string())
        }
        Type::Codes => text(v, usize::MAX).or_else(|| {
            let ok = v
                .as_str()
                .is_some_and(|s| CODES.as_ref().is_none_or(|re| re.is_match(s)));
            (!ok).then(|| format!("Value should match the pattern {EXPECTED_CODES}"))
        }),
        Type::Other => None,
    }
}

fn text(v: &Value, max: usize) -> Option<String> {
    match v.as_str() {
        None => Some("Value should be string".into()),
        Some(s) if s.chars().count() > max => Some(format!(
            "Value should have a maximum character requirement of {max}"
        )),
        Some(_) => None,
    }
}

/// Octavia's `validate.url_path`: a path alone (no scheme, host or port), from `/`.
fn url_path(s: &str) -> bool {
    s.starts_with('/') && !s.starts_with("//") && !s.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn first(attrs: &[Attr], body: Value) -> Option<String> {
        refusal(attrs, body.as_object()?)
    }

    #[test]
    fn the_first_declared_attribute_that_fails_is_reported() {
        let body = json!({"protocol_port": 0, "protocol": "FTP", "loadbalancer_id": "x"});
        assert_eq!(
            first(LISTENER_POST, body).as_deref(),
            Some(
                "Invalid input for field/attribute protocol. Value: 'FTP'. Value should be one of: HTTP, HTTPS, TCP, TERMINATED_HTTPS, UDP, SCTP, PROMETHEUS"
            )
        );
    }

    #[test]
    fn expected_codes_follow_octavias_pattern() {
        for good in ["200", "200,202", "200 , 204", "200-204"] {
            assert_eq!(why(Type::Codes, &json!(good)), None, "{good}");
        }
        for bad in ["20", "200-", "abc", "200;201"] {
            assert!(why(Type::Codes, &json!(bad)).is_some(), "{bad}");
        }
    }

    #[test]
    fn url_paths_start_with_one_slash() {
        assert!(url_path("/healthz?x=1"));
        assert!(!url_path("healthz"));
        assert!(!url_path("//host/x"));
    }
}
