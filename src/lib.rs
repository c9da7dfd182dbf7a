//! verda-operator: keeps OpenStack servers, server groups and Octavia load balancers
//! converged on the VirtualMachine, VirtualMachineGroup and LoadBalancer objects of a
//! Kubernetes cluster.
#![forbid(unsafe_code)]

pub mod cloud;
pub mod crdgen;
pub mod metrics;
pub mod sim;
