//! verda-operator: keeps OpenStack servers, server groups and Octavia load balancers
//! converged on the VirtualMachine, VirtualMachineGroup and LoadBalancer objects of a
//! Kubernetes cluster.
#![forbid(unsafe_code)]

pub mod autoscaler;
pub mod caches;
pub mod cloud;
pub mod config;
pub mod controllers;
pub mod crdgen;
pub mod embedded_cloud;
pub mod fnv;
pub mod http;
pub mod kube_clients;
pub mod kube_error;
pub mod leases;
pub mod lock;
pub mod metrics;
pub mod orphans;
pub mod run;
pub mod runtime;
pub mod tenancy;
pub mod tls_bundle;
/// The OpenStack simulator (its own crate, `sim/`): the embedded default cloud.
#[cfg(feature = "embedded-sim")]
pub use verda_sim as sim;
pub mod telemetry;
