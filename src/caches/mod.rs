//! What the controllers read instead of asking again: the watch caches of the
//! operator's kinds (one store and index per kind, fed by one watch per namespace or
//! over the cluster) and the cloud view (what the operator owns in the cloud, one
//! listing per project and refresh period).
//!
//! Deliberately not here: deciding anything from what is cached (the controllers).

pub mod cloud_view;
mod reach;
pub mod watch;

pub use reach::Reach;
