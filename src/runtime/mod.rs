//! The framework every controller runs on: the driver (finalizer, admission, metrics,
//! failure reporting), the [`Reconciler`](reconciler::Reconciler) shape each kind fills
//! in (validate → observe → plan → execute → status), progress and lifecycle
//! conditions, backoff, the status patch, events and classified errors, and the
//! [`Context`] built from its parts.
//!
//! Deliberately not here: any kind's logic (the controllers' folders), what the controllers
//! read (`crate::caches`), whose credentials an object acts with (`crate::tenancy`).

pub mod backoff;
pub mod cluster;
pub mod context;
pub mod driver;
pub mod error;
pub mod events;
pub mod keeper;
pub mod lifecycle;
pub mod object;
pub mod problem;
pub mod progress;
pub mod reconcile_task;
pub mod reconciler;
#[cfg(test)]
pub(crate) mod scripted_api;
pub mod status_patch;

pub use context::{Context, Timing};
pub use error::ReconcileError;
