//! The OpenStack services: one trait per service ([`Compute`], [`BlockStorage`],
//! [`Network`], [`LoadBalancing`]) with one method per API call, gathered per region by
//! [`CloudServices`], the classified [`CloudError`], and the real client
//! [`OpenStackClient`] behind them.
//!
//! Layout: `services` (the traits), `regions` (the traits per region), `model`
//! (request/response types), `ids` (typed IDs), `owner` (how resources record their
//! Kubernetes owner), `orphans` (which resources no owner keeps any more), `config` (clouds.yaml and
//! `OS_*` resolution), `auth` (Keystone v3), `transport` (the single choke point: token,
//! retries, concurrency cap, metrics), `budget` (each project's request budget),
//! `write_log` (which reconcile wrote what), `user_agent` (who calls), `http_clients`/`proxy`/`tls` (the
//! connections), `retry` (backoff rules), `error`/`error_body` (classification), `request`
//! and `client` (the verbs).
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
pub(crate) mod http_clients;
pub mod ids;
pub mod model;
pub mod orphans;
pub mod owner;
pub(crate) mod proxy;
mod regions;
mod request;
pub mod retry;
pub mod services;
mod tls;
mod transport;
pub mod user_agent;
pub mod write_log;

pub use auth::Service;
pub use client::OpenStackClient;
pub use config::{CloudConfig, CloudSelection, CloudSource, ConfigError, Environment, resolve};
pub use error::{CloudError, ErrorKind, Resource, ignore_not_found};
pub use proxy::Proxies;
pub use regions::CloudServices;
pub use retry::RetryPolicy;
pub use services::{
    BlockStorage, CloudFuture, CloudResult, Compute, Dns, Firewalls, LoadBalancing, MetadataMode,
    Network,
};
pub use transport::ClientOptions;
