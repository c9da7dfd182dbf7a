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
//! trustworthy (the PEM bundles themselves, not a digest of them, and `verify: false`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::error::ErrorKind;
use super::lock;

/// Distinct trust settings whose clients are shared; past them (a cluster whose
/// Secrets name this many different CA bundles), a connection has a client of its own,
/// so that no tenant's Secrets can make the operator keep clients without bound.
const SHARED_AT_MOST: usize = 8;

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
}

/// The client for `settings`: the one already built for the same settings if there is
/// one, else a new one (kept for the next connection while fewer than
/// [`SHARED_AT_MOST`] settings are).
pub(crate) fn client(settings: &Settings) -> Result<reqwest::Client, ErrorKind> {
    static SHARED: OnceLock<Mutex<HashMap<Settings, reqwest::Client>>> = OnceLock::new();
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

fn build(settings: &Settings) -> Result<reqwest::Client, ErrorKind> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("verda-operator/", env!("CARGO_PKG_VERSION")))
        .timeout(settings.request_timeout)
        .connect_timeout(settings.connect_timeout);
    for (origin, pem) in &settings.roots {
        for cert in root_certificates(origin, pem)? {
            builder = builder.add_root_certificate(cert);
        }
    }
    if settings.insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    builder.build().map_err(|e| ErrorKind::Config {
        message: format!("cannot build the HTTP client: {e}"),
    })
}

/// The certificates of a PEM bundle; an unreadable or empty one is a configuration error.
fn root_certificates(origin: &str, pem: &[u8]) -> Result<Vec<reqwest::Certificate>, ErrorKind> {
    let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|_| ErrorKind::Config {
        message: format!("{origin} is not a PEM certificate bundle"),
    })?;
    if certs.is_empty() {
        return Err(ErrorKind::Config {
            message: format!("{origin} holds no PEM certificate"),
        });
    }
    Ok(certs)
}
