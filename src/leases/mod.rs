//! Who acts: the leader Lease (one replica runs the controllers) and the shards' ring
//! (each replica runs them for the namespaces it claims), and the [`Assignment`] they
//! give the controllers: which namespaces may be reconciled now, admitted one reconcile
//! at a time.
//!
//! Deliberately not here: what a replica does with its namespaces (the controllers) and
//! what watches them (the caches, told through [`assignment::Coverage`]).

pub mod assignment;
pub mod leader;
pub mod liveness;
pub mod shards;

pub use assignment::Assignment;
