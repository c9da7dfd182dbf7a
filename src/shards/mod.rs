//! Active-active shards (`--shards`, not wired yet): replicas divide the cluster's
//! namespaces among themselves through Leases in the API server.

pub mod claim;
pub mod ring;
