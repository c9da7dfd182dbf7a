//! The operator's clients of the Kubernetes API server: the controllers' one, which
//! sends at most [`IN_FLIGHT`] requests at once, the watch caches' and the leader
//! lease's.
//!
//! kube's client opens an HTTP/1.1 connection per concurrent request, and a controller
//! reconciles every changed object at once: a 5,000-VM apply held 8,400 connections to
//! the API server and its requests began to fail (a real kube-apiserver answers 429
//! past `--max-requests-inflight`, 400 by default, shared by every client of the
//! cluster). Requests beyond the cap wait their turn in order (tower's limit is a fair
//! semaphore). A watch holds its slot only until the API server answers its headers,
//! so long-running watches never use the slots up. The lease has connections of its
//! own: a renewal must never queue behind a fleet's status writes. So do the watch
//! caches: a relist of 10,000 objects queued behind the writes its own backlog causes
//! would fall behind the watch history again.
//!
//! Every connection reads into a buffer of fixed size. hyper's default grows a
//! connection's buffer to 400 KB while a large listing streams in and keeps it for the
//! connection's life; a shard holds a watch connection per namespace and kind, and
//! those buffers were 9 MB of a 100 MB replica. The controllers' connections read
//! [`READ_BUFFER`] at a time; the watches' and the lease's, mostly idle, read
//! [`WATCH_READ_BUFFER`].
//!
//! kube's builder has no setting for the buffer, so the stack is built here as kube
//! builds it: the same layers in the same order, kube's `HTTP` tracing span around each
//! request, and the expiry of a client certificate from an exec plugin as the clients'
//! `valid_until`. Through a proxy (a kubeconfig's `proxy-url` or `HTTPS_PROXY`, less
//! `NO_PROXY`), kube's own stack as it is, without the fixed buffer.

use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::{ClientBuilder, ConfigExt, retry::RetryPolicy};
use tower::ServiceBuilder;
use tower::limit::ConcurrencyLimitLayer;
use tower::retry::RetryLayer;

/// Requests the controllers have at the API server at once.
pub const IN_FLIGHT: usize = 32;

/// What a connection reads at a time: a watch event or a Lease fits whole; a listing
/// is read in many reads of it.
pub const READ_BUFFER: usize = 16 * 1024;

/// What a watch or lease connection reads at a time: a watch event of the operator's
/// kinds or a Lease fits whole, a listing is read in more reads. A response's head must
/// fit too (hyper refuses a longer one), so this is hyper's own smallest buffer, not
/// less: the API server's heads are a few hundred bytes, warnings included.
pub const WATCH_READ_BUFFER: usize = 8 * 1024;

/// Three clients of one API server.
#[derive(Clone)]
pub struct KubeClients {
    /// Every controller's reads and writes, at most [`IN_FLIGHT`] at once.
    pub controllers: kube::Client,
    /// The watch caches' lists and watches.
    pub watches: kube::Client,
    /// The leader lease's renewals.
    pub lease: kube::Client,
}

impl KubeClients {
    pub fn new(config: kube::Config) -> Result<Self, kube::Error> {
        // kube reads a certificate's expiry where only its own builder can: that builder
        // runs the exec plugin once more, so only when there is one. Without a proxy:
        // reading the expiry needs no connection.
        let valid_until = match config.auth_info.exec {
            Some(_) => {
                let mut without_proxy = config.clone();
                without_proxy.proxy_url = None;
                let kubes = ClientBuilder::try_from(without_proxy)?.build();
                *kubes.valid_until()
            }
            None => None,
        };
        let made = |in_flight, read_buffer| {
            client(&config, in_flight, read_buffer).map(|c| c.with_valid_until(valid_until))
        };
        Ok(Self {
            controllers: made(Some(IN_FLIGHT), READ_BUFFER)?,
            watches: made(None, WATCH_READ_BUFFER)?,
            lease: made(None, WATCH_READ_BUFFER)?,
        })
    }
}

/// kube's own client stack (connection timeouts, TLS, retry of server errors, auth,
/// impersonation, tracing) with connections that read `read_buffer` bytes at a time, sending at
/// most `in_flight` requests at once when given. Through a proxy, kube's stack as it is.
fn client(
    config: &kube::Config,
    in_flight: Option<usize>,
    read_buffer: usize,
) -> Result<kube::Client, kube::Error> {
    let limit = in_flight.map(ConcurrencyLimitLayer::new);
    if config.proxy_url.is_some() {
        let builder = ClientBuilder::try_from(config.clone())?;
        return Ok(builder
            .with_layer(&tower::util::option_layer(limit))
            .build());
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let mut connector = TimeoutConnector::new(config.rustls_https_connector_with_connector(http)?);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let connections = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .http1_read_buf_exact_size(read_buffer)
        .build(connector);
    let retry = config
        .default_retry
        .then(|| RetryLayer::new(RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .option_layer(limit)
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .layer(trace::layer())
        .map_err(tower::BoxError::from)
        .service(connections);
    Ok(ClientBuilder::new(service, config.default_namespace.clone()).build())
}

/// kube's tracing of its requests, as its builder sets it up (`kube-client`'s
/// `client/builder.rs`): a `debug` span `HTTP` per request with OpenTelemetry's
/// attribute names, its status recorded, failures logged.
mod trace {
    use std::time::Duration;

    use http::{HeaderMap, Request, Response};
    use hyper::body::Incoming;
    use kube::client::Body;
    use tower_http::classify::{
        ServerErrorsAsFailures, ServerErrorsFailureClass, SharedClassifier,
    };
    use tower_http::trace::TraceLayer;
    use tracing::Span;

    type Layer = TraceLayer<
        SharedClassifier<ServerErrorsAsFailures>,
        fn(&Request<Body>) -> Span,
        fn(&Request<Body>, &Span),
        fn(&Response<Incoming>, Duration, &Span),
        (),
        fn(Option<&HeaderMap>, Duration, &Span),
        fn(ServerErrorsFailureClass, Duration, &Span),
    >;

    pub(super) fn layer() -> Layer {
        TraceLayer::new_for_http()
            .make_span_with(span as fn(&Request<Body>) -> Span)
            .on_request(requesting as fn(&Request<Body>, &Span))
            .on_response(answered as fn(&Response<Incoming>, Duration, &Span))
            .on_body_chunk(())
            .on_eos(closed as fn(Option<&HeaderMap>, Duration, &Span))
            .on_failure(failed as fn(ServerErrorsFailureClass, Duration, &Span))
    }

    fn span(request: &Request<Body>) -> Span {
        tracing::debug_span!(
            "HTTP",
            http.method = %request.method(),
            http.url = %request.uri(),
            http.status_code = tracing::field::Empty,
            otel.name = request.extensions().get::<&'static str>().unwrap_or(&"HTTP"),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
        )
    }

    fn requesting(_: &Request<Body>, _: &Span) {
        tracing::debug!("requesting");
    }

    fn answered(response: &Response<Incoming>, _: Duration, span: &Span) {
        let status = response.status();
        span.record("http.status_code", status.as_u16());
        if status.is_client_error() || status.is_server_error() {
            span.record("otel.status_code", "ERROR");
        }
    }

    fn closed(_: Option<&HeaderMap>, _: Duration, _: &Span) {
        tracing::debug!("stream closed");
    }

    fn failed(class: ServerErrorsFailureClass, _: Duration, span: &Span) {
        span.record("otel.status_code", "ERROR");
        match class {
            ServerErrorsFailureClass::StatusCode(status) => {
                span.record("http.status_code", status.as_u16());
                tracing::error!("failed with status {}", status)
            }
            ServerErrorsFailureClass::Error(err) => {
                tracing::error!("failed with error {}", err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use axum::Router;
    use axum::extract::State;
    use axum::routing::get;
    use tokio::sync::Notify;

    use super::*;

    /// An API server that holds `/slow` until released and counts the requests it holds.
    #[derive(Clone, Default)]
    struct Server {
        held: Arc<AtomicUsize>,
        most_held: Arc<AtomicUsize>,
        release: Arc<Notify>,
    }

    async fn slow(State(s): State<Server>) -> &'static str {
        let now = s.held.fetch_add(1, Ordering::SeqCst) + 1;
        s.most_held.fetch_max(now, Ordering::SeqCst);
        let released = s.release.notified();
        tokio::time::timeout(Duration::from_secs(2), released)
            .await
            .ok();
        s.held.fetch_sub(1, Ordering::SeqCst);
        "slow"
    }

    async fn serve(server: Server) -> kube::Config {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let app = Router::new()
            .route("/slow", get(slow))
            .route("/quick", get(|| async { "quick" }))
            .route("/large", get(large))
            .with_state(server);
        tokio::spawn(async move { axum::serve(listener, app).await });
        kube::Config::new(url.parse().expect("a URL"))
    }

    /// A listing many times a watch connection's buffer, behind a head of 6 KB of warnings.
    async fn large() -> ([(&'static str, String); 1], String) {
        let warnings = vec!["299 - \"a deprecation warning\""; 200].join(", ");
        assert!(warnings.len() > 6 * 1024);
        ([("warning", warnings)], "x".repeat(256 * 1024))
    }

    fn get_request(path: &str) -> http::Request<Vec<u8>> {
        http::Request::get(path)
            .body(Vec::new())
            .expect("a request")
    }

    #[tokio::test]
    async fn the_controllers_wait_their_turn_and_the_lease_and_watches_do_not_wait_for_them() {
        let server = Server::default();
        let clients = KubeClients::new(serve(server.clone()).await).expect("clients");
        let many = IN_FLIGHT * 3;
        let requests: Vec<_> = (0..many)
            .map(|_| {
                let client = clients.controllers.clone();
                tokio::spawn(async move { client.request_text(get_request("/slow")).await })
            })
            .collect();
        while server.held.load(Ordering::SeqCst) < IN_FLIGHT {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Every slot is taken: a lease renewal and a relist still go through at once.
        for (who, client) in [("lease", &clients.lease), ("watches", &clients.watches)] {
            let request = client.request_text(get_request("/quick"));
            let answer = tokio::time::timeout(Duration::from_millis(500), request).await;
            let answer = answer.unwrap_or_else(|_| panic!("the {who} client is queued"));
            assert_eq!(answer.expect("answered"), "quick");
        }
        // Release the held requests until every one was answered.
        let mut answered = 0;
        for request in requests {
            while !request.is_finished() {
                server.release.notify_waiters();
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            assert_eq!(request.await.expect("joined").expect("answered"), "slow");
            answered += 1;
        }
        assert_eq!(answered, many);
        assert_eq!(server.most_held.load(Ordering::SeqCst), IN_FLIGHT);
    }

    #[tokio::test]
    async fn watch_connections_read_listings_and_heads_larger_than_their_buffer() {
        let clients = KubeClients::new(serve(Server::default()).await).expect("clients");
        for (who, client) in [("watches", &clients.watches), ("lease", &clients.lease)] {
            let body = client.request_text(get_request("/large")).await;
            let body = body.unwrap_or_else(|e| panic!("the {who} client: {e}"));
            assert_eq!(
                body.len(),
                256 * 1024,
                "the {who} client read the whole listing"
            );
        }
    }

    /// The spans opened while it lives: each one's name and its `http.url`.
    #[derive(Clone, Default)]
    struct Spans(Arc<std::sync::Mutex<Vec<(String, String)>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
        fn on_new_span(
            &self,
            attributes: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut url = Url::default();
            attributes.record(&mut url);
            let name = attributes.metadata().name().to_owned();
            self.0.lock().expect("spans").push((name, url.0));
        }
    }

    #[derive(Default)]
    struct Url(String);

    impl tracing::field::Visit for Url {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "http.url" {
                self.0 = format!("{value:?}");
            }
        }
    }

    /// The spans of the whole test binary, from a global subscriber set once: a
    /// thread's own (`set_default`) can miss spans while other tests run beside it, as
    /// tracing caches whether a span site is wanted across every thread.
    fn global_spans() -> Spans {
        use tracing_subscriber::layer::SubscriberExt;
        static SPANS: std::sync::OnceLock<Spans> = std::sync::OnceLock::new();
        SPANS
            .get_or_init(|| {
                let spans = Spans::default();
                let subscriber = tracing_subscriber::registry().with(spans.clone());
                tracing::subscriber::set_global_default(subscriber)
                    .expect("no other global subscriber in the unit tests");
                spans
            })
            .clone()
    }

    #[tokio::test]
    async fn every_clients_requests_are_traced_in_kubes_http_span() {
        let spans = global_spans();
        let config = serve(Server::default()).await;
        // This test's server (its own port): other tests' spans are in the same list.
        let quick = format!("{}quick", config.cluster_url);
        let clients = KubeClients::new(config).expect("clients");
        let each = [&clients.controllers, &clients.watches, &clients.lease];
        for client in each {
            let answer = client.request_text(get_request("/quick")).await;
            assert_eq!(answer.expect("answered"), "quick");
        }
        let spans = spans.0.lock().expect("spans").clone();
        let traced: Vec<_> = spans
            .iter()
            .filter(|(name, url)| name == "HTTP" && url.trim_matches('"') == quick)
            .collect();
        assert_eq!(traced.len(), each.len(), "{quick} in {spans:?}");
    }

    /// An exec plugin answering with a client certificate that expires at `expiry`.
    fn certificate_plugin(dir: &std::path::Path, expiry: &str) -> kube::config::ExecConfig {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/cloud_support/tls");
        let read = |name: &str| std::fs::read_to_string(fixtures.join(name)).expect(name);
        let credential = serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "kind": "ExecCredential",
            "status": {
                "expirationTimestamp": expiry,
                "clientCertificateData": read("server.pem"),
                "clientKeyData": read("server.key"),
            }
        });
        let answer = dir.join("credential.json");
        std::fs::write(&answer, credential.to_string()).expect("written");
        serde_json::from_value(serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "cat",
            "args": [answer],
        }))
        .expect("an exec configuration")
    }

    #[tokio::test]
    async fn a_client_certificate_that_expires_is_every_clients_valid_until() {
        let dir = std::env::temp_dir().join(format!("verda-kube-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let mut config = serve(Server::default()).await;
        config.auth_info.exec = Some(certificate_plugin(&dir, "2030-01-01T00:00:00Z"));
        let clients = KubeClients::new(config);
        std::fs::remove_dir_all(&dir).expect("removed");
        let clients = clients.expect("clients");
        for client in [&clients.controllers, &clients.watches, &clients.lease] {
            let valid_until = client.valid_until().map(|t| t.to_string());
            assert_eq!(valid_until.as_deref(), Some("2030-01-01T00:00:00Z"));
            let answer = client.request_text(get_request("/quick")).await;
            assert_eq!(answer.expect("answered"), "quick");
        }
        let plain = KubeClients::new(serve(Server::default()).await).expect("clients");
        assert_eq!(*plain.controllers.valid_until(), None);
    }
}
