//! The custom resource types of verda-operator, API group `verda.linecorp.com`.
//!
//! Types, their schema (including the `x-kubernetes-validations` rules that refuse bad
//! input at `kubectl apply`) and the condition helper. Deliberately no I/O and no
//! OpenStack knowledge: the operator crate interprets these types.
#![forbid(unsafe_code)]

pub mod conditions;
pub mod v1alpha1;

/// The API group of every kind in this crate.
pub const GROUP: &str = "verda.linecorp.com";
