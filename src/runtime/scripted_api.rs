//! A scripted Kubernetes API server for unit tests: a kube client whose every request
//! is recorded and answered by a closure, so a test states what the server says and
//! reads back what the code sent.

use std::sync::{Arc, Mutex};

use kube::client::Body;
use serde_json::Value;

/// A request the API server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub body: Value,
}

/// The answer to a request, by method, path and body: status code and body.
type Reply = Arc<dyn Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync>;

/// Answers every request with `reply(method, path, body)` and records it.
#[derive(Clone)]
pub struct ApiServer {
    seen: Arc<Mutex<Vec<Seen>>>,
    reply: Reply,
}

impl ApiServer {
    pub fn new(reply: impl Fn(&str, &str, &Value) -> (u16, Value) + Send + Sync + 'static) -> Self {
        Self {
            seen: Arc::default(),
            reply: Arc::new(reply),
        }
    }

    pub fn client(&self) -> kube::Client {
        let server = self.clone();
        let service = tower::service_fn(move |request: http::Request<Body>| {
            let server = server.clone();
            async move {
                let (parts, body) = request.into_parts();
                let bytes = body.collect_bytes().await?;
                let seen = Seen {
                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    method: parts.method.to_string(),
                    path: parts.uri.path().to_owned(),
                };
                let (code, answer) = (server.reply)(&seen.method, &seen.path, &seen.body);
                server.seen.lock().expect("the request log").push(seen);
                let response = http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(Body::from(answer.to_string().into_bytes()))
                    .expect("a response");
                Ok::<_, kube::Error>(response)
            }
        });
        kube::Client::new(service, "default")
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("the request log").clone()
    }

    /// The requests other than events, as `METHOD path`.
    pub fn writes(&self) -> Vec<String> {
        self.seen()
            .iter()
            .filter(|s| !s.path.contains("/events"))
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }

    pub fn events(&self) -> Vec<Value> {
        self.seen()
            .into_iter()
            .filter(|s| s.path.contains("/events"))
            .map(|s| s.body)
            .collect()
    }
}
