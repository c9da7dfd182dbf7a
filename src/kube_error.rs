//! Kubernetes API errors worded for people. kube's own `Display` of an API error appends
//! a `Debug` dump of the whole Status; logs, conditions and events use [`describe`].

use std::fmt;

/// The API server's message, reason and HTTP code; other errors as they display.
pub fn describe(error: &kube::Error) -> Described<'_> {
    Described(error)
}

/// See [`describe`].
pub struct Described<'a>(&'a kube::Error);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            kube::Error::Api(status) => {
                let message = if status.message.is_empty() {
                    "the API server refused the request"
                } else {
                    status.message.as_str()
                };
                match (status.reason.as_str(), status.code) {
                    ("", 0) => write!(f, "{message}"),
                    ("", code) => write!(f, "{message} (HTTP {code})"),
                    (reason, 0) => write!(f, "{message} ({reason})"),
                    (reason, code) => write!(f, "{message} ({reason}, HTTP {code})"),
                }
            }
            other => write!(f, "{other}"),
        }
    }
}

/// The HTTP code of an API error, if the server answered one.
pub fn api_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_error_reads_as_the_servers_message_without_a_debug_dump() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure",
            "message": "namespaces \"verda-system\" not found",
            "reason": "NotFound",
            "code": 404
        }))
        .expect("status");
        let error = kube::Error::Api(Box::new(status));
        assert_eq!(
            describe(&error).to_string(),
            "namespaces \"verda-system\" not found (NotFound, HTTP 404)"
        );
        assert_eq!(api_code(&error), Some(404));
    }
}
