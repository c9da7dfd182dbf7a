//! Octavia v2 (load-balancer): routing and the request envelope (request ID, WSME
//! fault bodies). Objects live in `model.rs`, their state machine in `lifecycle.rs`.

pub(crate) mod lifecycle;
pub(crate) mod model;

use axum::Router;

use super::snapshot::SimLoadBalancer;
use super::state::{Sim, World};

pub(crate) const SERVICE: &str = "load-balancer";

pub(crate) fn routes(r: Router<Sim>) -> Router<Sim> {
    r
}

pub(crate) fn snapshot(_w: &World) -> Vec<SimLoadBalancer> {
    Vec::new()
}
