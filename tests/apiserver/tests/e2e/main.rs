//! Semantics of the test apiserver, one test per documented kube-apiserver behaviour (kube-wire recordings),
//! driven through kube's client where it exposes the behaviour and through raw HTTP where the wire shape
//! (Status bodies, headers, watch framing) is the point.

#![allow(clippy::unwrap_used)]

mod builtins;
mod crud;
mod deletion;
mod discovery;
mod kubectl;
mod namespaces;
mod patches;
mod subresources;
mod support;
mod validation;
mod watch;
