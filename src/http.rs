//! The operator's HTTP endpoints: `/metrics` (Prometheus text format), `/healthz`
//! (the process is alive) and `/readyz` (connected to Kubernetes and serving).
//!
//! No request here touches the cloud or the Kubernetes API: probes must stay cheap.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::metrics::Metrics;

/// What the endpoints report on.
#[derive(Clone)]
pub struct Health {
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
}

impl Health {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            ready: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Marks the process ready (or not) for `/readyz`.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }
}

/// The router of the three endpoints.
pub fn router(health: Health) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(health)
}

async fn metrics(State(health): State<Health>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        health.metrics.encode(),
    )
}

async fn readyz(State(health): State<Health>) -> impl IntoResponse {
    if health.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

/// Binds `addr`, returning the listener so that a bind error is reported before start.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves the endpoints on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(health))
        .with_graceful_shutdown(shutdown)
        .await
}
