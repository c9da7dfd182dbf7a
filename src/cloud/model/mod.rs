//! Request and response types of the port, per service. Plain data: no I/O.

pub mod compute;
pub mod loadbalancing;
pub mod network;
