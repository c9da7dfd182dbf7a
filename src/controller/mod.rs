//! The controllers and what they share. Only the leader runs them.
//!
//! Shared frame: `context` (clients, config, timing), `driver` (finalizer, metrics,
//! failure reporting), `error` (classified errors), `backoff` (retry delays).

pub mod backoff;
pub mod context;
pub mod driver;
pub mod error;
pub mod load_balancer;
pub mod status_patch;
pub mod virtual_machine;
pub mod virtual_machine_group;

use std::sync::Arc;

pub use context::{CloudPorts, Context, Timing};
pub use error::ReconcileError;

/// Runs every controller until the task is aborted.
pub async fn run_all(ctx: Arc<Context>) {
    tracing::info!(
        resync_period_secs = ctx.timing.resync.as_secs(),
        "controllers running"
    );
    tokio::join!(
        virtual_machine::run(ctx.clone()),
        virtual_machine_group::run(ctx.clone()),
        load_balancer::run(ctx),
    );
}
