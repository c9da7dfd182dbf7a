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
        Ok(Self {
            controllers: client(&config, Some(IN_FLIGHT), READ_BUFFER)?,
            watches: client(&config, None, WATCH_READ_BUFFER)?,
            lease: client(&config, None, WATCH_READ_BUFFER)?,
        })
    }
}

/// kube's own client stack (connection timeouts, TLS, retry of server errors, auth,
/// impersonation) with connections that read `read_buffer` bytes at a time, sending at
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
        .map_err(tower::BoxError::from)
        .service(connections);
    Ok(ClientBuilder::new(service, config.default_namespace.clone()).build())
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
}
