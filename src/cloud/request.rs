//! One API call as the verb modules describe it ([`Request`]) and a successful answer
//! ([`Reply`]). Plain data: sending, retrying and metering are the transport's.

use http::header::HeaderMap;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use super::auth::Service;
use super::error::ErrorKind;

/// One API call, as the verb modules describe it.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub service: Service,
    pub operation: &'static str,
    pub method: Method,
    /// Relative to the service's versioned root, e.g. `/servers/detail`.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    /// A POST whose repetition is harmless (e.g. a metadata merge).
    pub idempotent: bool,
}

impl Request {
    /// Whether the request changes something (anything but a read).
    pub fn is_write(&self) -> bool {
        !matches!(self.method, Method::GET | Method::HEAD)
    }

    pub fn new(
        service: Service,
        operation: &'static str,
        method: Method,
        path: impl Into<String>,
    ) -> Self {
        Self {
            service,
            operation,
            method,
            path: path.into(),
            query: Vec::new(),
            body: None,
            idempotent: false,
        }
    }

    pub fn query(mut self, key: &str, value: impl Into<String>) -> Self {
        self.query.push((key.to_owned(), value.into()));
        self
    }

    pub fn query_opt(self, key: &str, value: Option<impl Into<String>>) -> Self {
        match value {
            Some(v) => self.query(key, v),
            None => self,
        }
    }

    pub fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }
}

/// A successful answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// As the HTTP client collected it: a page of a large listing is megabytes, and a
    /// copy of it would be held beside it while it is parsed.
    pub body: bytes::Bytes,
}

impl Reply {
    /// The body as `T`, which may borrow from it (a `RawValue` left unparsed).
    pub fn json<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ErrorKind> {
        serde_json::from_slice(&self.body).map_err(|e| ErrorKind::InvalidResponse {
            message: format!("cannot parse the response body: {e}"),
        })
    }
}
