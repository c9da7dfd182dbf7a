//! Support code shared by the integration tests.
#![allow(dead_code)]

pub mod crash;
pub mod crd_schema;
pub mod e2e;
pub mod gitops;
pub mod prometheus;
pub mod real;
