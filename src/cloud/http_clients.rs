//! The HTTP clients of the cloud connections, shared between projects: every project's
//! connection that trusts the same certificates reuses one pool of kept-alive
//! connections to the cloud's endpoints, as gophercloud's clients share Go's default
//! transport. A pool per project kept each project's busiest moment open: one replica
//! of 30 projects held 175 connections to the cloud after converging 10,000 VMs
//! (`hack/shards_memory.py`), each with the read buffer its largest listing had grown.
//!
//! Requests never share anything but the connection: each carries its own project's
//! token. Connections verified under one set of trusted certificates are never reused
//! under another: the pool is chosen by everything that makes a connection
//! trustworthy (the PEM bundles themselves, not a digest of them, and `verify: false`)
//! and by the proxies it goes through.
//!
//! Each connection reads the cloud's answers [`READ_BUFFER`] bytes at a time: hyper's
//! default (and reqwest's, which has no setting for it) grows a connection's buffer to
//! 400 KB while a listing streams in and keeps it for the connection's life. So the
//! connections are hyper's own (HTTP/1.1; TLS in [`super::tls`]), directly or through
//! the proxies the environment names ([`super::proxy`]): one stack, whatever the route.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::CONTENT_LENGTH;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::error::ErrorKind;
use super::proxy::{Connector, Proxies};
use super::request::Reply;
use super::tls;
use crate::lock::guard as lock;

/// Distinct trust settings whose clients are shared; past them (a cluster whose
/// Secrets name this many different CA bundles), a connection has a client of its own,
/// so that no tenant's Secrets can make the operator keep clients without bound.
const SHARED_AT_MOST: usize = 8;

/// What a connection reads at a time: most answers fit whole; a listing is read in many
/// reads of it.
pub(crate) const READ_BUFFER: usize = 16 * 1024;

/// The most a body's announced length reserves at once; a longer one grows as it comes.
const MOST_RESERVED: usize = 16 * 1024 * 1024;

/// How long a kept-alive connection may stay idle (as long as reqwest's and Go's
/// default transport keep theirs).
const IDLE: Duration = Duration::from_secs(90);

/// What a client is built from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Settings {
    /// Each extra CA bundle trusted besides the system roots: where it came from (for
    /// errors) and its PEM text.
    pub roots: Vec<(String, Vec<u8>)>,
    /// `verify: false`: no certificate verification at all.
    pub insecure: bool,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// The proxies requests go through, read from the environment where the settings
    /// are made ([`Proxies::from_env`]).
    pub proxies: Proxies,
}

type Pool = hyper_util::client::legacy::Client<HttpsConnector<Connector>, Full<Bytes>>;

/// One pool of connections to the cloud, and how long a request may take on it.
#[derive(Clone)]
pub(crate) struct HttpClient {
    pool: Pool,
    connector: Connector,
    timeout: Duration,
}

/// No whole answer came: why, for the person reading it (never the URL: an auth_url may
/// carry user info).
#[derive(Debug)]
pub(crate) struct NoAnswer {
    /// The connection was never made: the request surely did not reach the cloud.
    pub connect: bool,
    pub message: String,
}

impl HttpClient {
    /// Sends `request` and reads its whole answer, within the request timeout.
    pub async fn send(&self, mut request: Request<Bytes>) -> Result<Reply, NoAnswer> {
        self.connector.prepare(&mut request);
        let exchange = async {
            let response = self
                .pool
                .request(request.map(Full::new))
                .await
                .map_err(|e| no_answer(e.is_connect(), &e))?;
            let (parts, body) = response.into_parts();
            let body = read_whole(&parts.headers, body).await?;
            Ok(Reply {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(timed_out()))
    }
}

/// A body read into one buffer of the length it announces (to at most
/// [`MOST_RESERVED`]), each chunk let go as it is copied: collecting the chunks and
/// joining them held a listing twice.
async fn read_whole(headers: &HeaderMap, mut body: Incoming) -> Result<Bytes, NoAnswer> {
    let announced = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let mut read = BytesMut::with_capacity(announced.unwrap_or(0).min(MOST_RESERVED));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| no_answer(false, &e))?;
        if let Ok(data) = frame.into_data() {
            read.extend_from_slice(&data);
        }
    }
    Ok(read.freeze())
}

fn timed_out() -> NoAnswer {
    NoAnswer {
        connect: false,
        message: "timed out".to_owned(),
    }
}

/// What `error`'s causes say (or, with none, itself: hyper's own words are
/// "client error (Connect)" over the cause), under what it means for the request.
fn no_answer(connect: bool, error: &(dyn std::error::Error + 'static)) -> NoAnswer {
    let what = if connect {
        "cannot connect"
    } else {
        "no complete response"
    };
    let mut causes = Vec::new();
    let mut cause = error.source();
    while let Some(e) = cause {
        causes.push(e.to_string());
        cause = e.source();
    }
    if causes.is_empty() {
        causes.push(error.to_string());
    }
    let message = format!("{what}: {}", causes.join(": "));
    NoAnswer { connect, message }
}

/// The client for `settings`: the one already built for the same settings if there is
/// one, else a new one (kept for the next connection while fewer than
/// [`SHARED_AT_MOST`] settings are).
pub(crate) fn client(settings: &Settings) -> Result<HttpClient, ErrorKind> {
    static SHARED: OnceLock<Mutex<HashMap<Settings, HttpClient>>> = OnceLock::new();
    let shared = SHARED.get_or_init(Mutex::default);
    if let Some(client) = lock(shared).get(settings) {
        return Ok(client.clone());
    }
    let client = build(settings)?;
    let mut shared = lock(shared);
    if shared.len() < SHARED_AT_MOST {
        // Two connections may have built one at once: the first kept is the one shared.
        return Ok(shared.entry(settings.clone()).or_insert(client).clone());
    }
    Ok(client)
}

fn build(settings: &Settings) -> Result<HttpClient, ErrorKind> {
    let tls = tls::client_config(&settings.roots, settings.insecure)?;
    let connector = Connector::new(&settings.proxies, tls.clone(), settings.connect_timeout)?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(connector.clone());
    let pool = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(IDLE)
        .http1_read_buf_exact_size(READ_BUFFER)
        .build(https);
    Ok(HttpClient {
        pool,
        connector,
        timeout: settings.request_timeout,
    })
}
