//! Classifying a non-2xx OpenStack answer into an [`ErrorKind`], with the message taken
//! from the service's own error body.
//!
//! Body shapes, as the services answer (each one's API reference, error responses):
//! Keystone and keystonemiddleware `{"error": {"message"}}`, Nova
//! `{"badRequest"|"itemNotFound"|...: {"code", "message"}}`, Neutron
//! `{"NeutronError": {"type", "message"}}`, Octavia `{"faultstring"}`, Glance
//! `{"message": "...<br /><br />"}` or an HTML page. Messages are cleaned, stripped of
//! echoed request values (Nova's schema errors repeat the whole request, user data
//! included) and truncated, so they are safe for conditions and events.

use std::time::Duration;

use http::StatusCode;
use http::header::{HeaderMap, RETRY_AFTER};

use super::error::ErrorKind;

const MAX_MESSAGE: usize = 400;

/// Classify a failed answer. `status` is not a success.
pub(crate) fn classify(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> ErrorKind {
    let (message, neutron_type) = extract_message(body);
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        message
    };
    let retry_after = retry_after(headers);
    // Nova words some quota errors without the word: "Maximum number of metadata items
    // exceeds 128" (MetadataLimitExceeded, a QuotaError).
    let quota = message.to_ascii_lowercase().contains("quota")
        || message.starts_with("Maximum number of")
        || neutron_type.as_deref() == Some("OverQuota");
    match status.as_u16() {
        400 => ErrorKind::BadRequest { message },
        401 => ErrorKind::Unauthorized { message },
        403 | 413 if quota => ErrorKind::QuotaExceeded { message },
        403 => ErrorKind::Forbidden { message },
        404 => ErrorKind::NotFound { message },
        409 => {
            let immutable =
                message.contains("immutable") || message.contains("Invalid state PENDING");
            ErrorKind::Conflict { message, immutable }
        }
        413 | 429 => ErrorKind::RateLimited {
            retry_after,
            message,
        },
        code @ 500..=599 => ErrorKind::Unavailable {
            status: Some(code),
            retry_after,
            message,
        },
        _ => ErrorKind::BadRequest { message },
    }
}

/// Retry-After as delta-seconds or an HTTP date; `None` when absent or unparseable.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = date.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// The human message of an error body, and Neutron's exception type when present.
fn extract_message(body: &[u8]) -> (String, Option<String>) {
    let text = String::from_utf8_lossy(body);
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (clean(&strip_html(&text)), None);
    };
    let Some(obj) = json.as_object() else {
        return (clean(&text), None);
    };
    // Octavia (WSME): {"faultcode", "faultstring", "debuginfo"}
    if let Some(s) = obj.get("faultstring").and_then(|v| v.as_str()) {
        return (clean(s), None);
    }
    // Glance: {"message", "code": "404 Not Found", "title"}
    if let Some(s) = obj.get("message").and_then(|v| v.as_str()) {
        return (clean(&strip_html(s)), None);
    }
    // Nova / Keystone / Neutron: a single wrapper object holding "message".
    for inner in obj.values().filter_map(|v| v.as_object()) {
        if let Some(s) = inner.get("message").and_then(|v| v.as_str()) {
            let kind = inner
                .get("type")
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            return (clean(s), kind);
        }
    }
    (String::new(), None)
}

/// Text of an HTML error page (or of a message with `<br />`s). A page repeats its
/// title in `<h1>`; the text after it is the message.
fn strip_html(s: &str) -> String {
    let body = s.find("</h1>").map(|i| &s[i + 5..]).unwrap_or(s);
    let mut out = String::with_capacity(body.len());
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Collapse whitespace, withhold echoed request values, and bound the length.
fn clean(s: &str) -> String {
    let mut msg = s.split_whitespace().collect::<Vec<_>>().join(" ");
    // Nova/Octavia schema errors: "Invalid input for field/attribute X. Value: <echo>. <why>"
    // The echo can hold user data (init scripts from Secrets): never pass it on.
    if let Some(at) = msg.find(". Value: ") {
        let why = ["Additional properties", "Value should be one of"]
            .iter()
            .find_map(|marker| msg.find(marker).map(|i| msg[i..].to_owned()));
        msg.truncate(at);
        msg.push_str(" (value withheld)");
        if let Some(why) = why {
            msg.push_str(". ");
            msg.push_str(&why);
        }
    }
    if msg.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !msg.is_char_boundary(end) {
            end -= 1;
        }
        msg.truncate(end);
        msg.push('…');
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(status: u16, body: &str) -> ErrorKind {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::IM_A_TEAPOT);
        classify(status, &HeaderMap::new(), body.as_bytes())
    }

    #[test]
    fn nova_quota_403_is_quota_exceeded_with_novas_message() {
        let k = kind(
            403,
            r#"{"forbidden": {"code": 403, "message": "Quota exceeded for instances: Requested 1, but already used 5 of 5 instances"}}"#,
        );
        assert_eq!(
            k,
            ErrorKind::QuotaExceeded {
                message:
                    "Quota exceeded for instances: Requested 1, but already used 5 of 5 instances"
                        .into()
            }
        );
    }

    #[test]
    fn nova_metadata_limit_403_is_quota_exceeded() {
        let k = kind(
            403,
            r#"{"forbidden": {"code": 403, "message": "Maximum number of metadata items exceeds 128"}}"#,
        );
        assert!(matches!(k, ErrorKind::QuotaExceeded { .. }));
    }

    #[test]
    fn nova_metadata_key_refusal_is_a_bad_request_without_the_metadata() {
        let k = kind(
            400,
            r#"{"badRequest": {"code": 400, "message": "Invalid input for field/attribute metadata. Value: {'verda.linecorp.com/uid': 'u1'}. 'verda.linecorp.com/uid' does not match any of the regexes: '^[a-zA-Z0-9-_:. ]{1,255}$'"}}"#,
        );
        assert_eq!(
            k,
            ErrorKind::BadRequest {
                message: "Invalid input for field/attribute metadata (value withheld)".into()
            }
        );
    }

    #[test]
    fn neutron_policy_403_is_forbidden() {
        let k = kind(
            403,
            r#"{"NeutronError": {"type": "PolicyNotAuthorized", "message": "rule:delete_network is disallowed by policy", "detail": ""}}"#,
        );
        assert!(
            matches!(k, ErrorKind::Forbidden { message } if message == "rule:delete_network is disallowed by policy")
        );
    }

    #[test]
    fn octavia_pending_409_is_an_immutable_conflict() {
        let k = kind(
            409,
            r#"{"faultcode": "Client", "faultstring": "Load Balancer 0081b055 is immutable and cannot be updated.", "debuginfo": null}"#,
        );
        assert!(matches!(
            k,
            ErrorKind::Conflict {
                immutable: true,
                ..
            }
        ));
        let dup = kind(
            409,
            r#"{"faultcode": "Client", "faultstring": "Another Listener on this Load Balancer is already using protocol HTTP and protocol_port 80", "debuginfo": null}"#,
        );
        assert!(matches!(
            dup,
            ErrorKind::Conflict {
                immutable: false,
                ..
            }
        ));
    }

    #[test]
    fn glance_json_and_html_404_bodies_yield_the_plain_message() {
        let json = kind(
            404,
            r#"{"message": "No image found with ID centos79<br /><br />\n\n\n", "code": "404 Not Found", "title": "Not Found"}"#,
        );
        assert_eq!(
            json,
            ErrorKind::NotFound {
                message: "No image found with ID centos79".into()
            }
        );
        let html = kind(
            404,
            "<html>\n <head>\n  <title>404 Not Found</title>\n </head>\n <body>\n  <h1>404 Not Found</h1>\n  No image found with ID centos79<br /><br />\n\n\n\n </body>\n</html>",
        );
        assert_eq!(
            html,
            ErrorKind::NotFound {
                message: "No image found with ID centos79".into()
            }
        );
    }

    #[test]
    fn keystone_401_is_unauthorized() {
        let k = kind(
            401,
            r#"{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}"#,
        );
        assert!(matches!(k, ErrorKind::Unauthorized { .. }));
    }

    #[test]
    fn echoed_request_values_are_withheld() {
        let k = kind(
            400,
            r#"{"badRequest": {"code": 400, "message": "Invalid input for field/attribute server. Value: {'name': 'x', 'user_data': 'c2VjcmV0'}. Additional properties are not allowed ('tags' was unexpected)"}}"#,
        );
        let ErrorKind::BadRequest { message } = k else {
            panic!("expected bad request");
        };
        assert!(!message.contains("c2VjcmV0"), "{message}");
        assert_eq!(
            message,
            "Invalid input for field/attribute server (value withheld). Additional properties are not allowed ('tags' was unexpected)"
        );
    }

    #[test]
    fn retry_after_accepts_seconds_and_rejects_garbage() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, "3".parse().unwrap_or_else(|_| unreachable!()));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert(
            RETRY_AFTER,
            "soon".parse().unwrap_or_else(|_| unreachable!()),
        );
        assert_eq!(retry_after(&h), None);
        let status = StatusCode::SERVICE_UNAVAILABLE;
        h.insert(RETRY_AFTER, "1".parse().unwrap_or_else(|_| unreachable!()));
        assert!(matches!(
            classify(status, &h, b""),
            ErrorKind::Unavailable { status: Some(503), retry_after: Some(d), .. } if d == Duration::from_secs(1)
        ));
    }
}
