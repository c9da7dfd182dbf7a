//! The OpenStack port: one trait per service ([`Compute`], [`Network`],
//! [`LoadBalancing`]) with one method per API call, the classified [`CloudError`], and the
//! real client [`OpenStackClient`] behind them.
//!
//! Layout: `ports` (the traits), `model` (request/response types), `ids` (typed IDs),
//! `owner` (how resources record their Kubernetes owner), `config` (clouds.yaml and
//! `OS_*` resolution), `auth` (Keystone v3), `transport` (the single choke point: token,
//! retries, concurrency cap, metrics), `http_clients`/`proxy`/`tls` (the connections), `retry` (backoff rules), `error`/`error_body`
//! (classification), `client` (the verbs).
//!
//! Deliberately not here: deciding what to create or delete (controllers), and the
//! `openstack` crate — its calls would bypass the choke point's retries, metrics,
//! concurrency cap, microversions and token renewal.

mod auth;
pub mod budget;
pub mod client;
pub mod config;
pub mod error;
mod error_body;
mod http_clients;
pub mod ids;
pub mod model;
pub mod orphans;
pub mod owner;
pub mod ports;
mod proxy;
mod regions;
mod request;
pub mod retry;
mod tls;
mod transport;
pub mod write_log;

pub use auth::Service;
pub use client::OpenStackClient;
pub use config::{CloudConfig, CloudSelection, CloudSource, ConfigError, Environment, resolve};
pub use error::{CloudError, ErrorKind, Resource, ignore_not_found};
pub use ports::{
    BlockStorage, CloudFuture, CloudResult, Compute, LoadBalancing, MetadataMode, Network,
};
pub use proxy::Proxies;
pub use regions::CloudPorts;
pub use retry::RetryPolicy;
pub use transport::ClientOptions;
