//! What this replica watches and reconciles: one namespace or all of them, of those the
//! ones its [`Assignment`] admits, and the client its watches list and watch through.
//! The watch caches start their feeds from it; the cloud view takes in a listing only
//! for the owners it reaches.

use std::time::Instant;

use crate::leases::Assignment;

/// The namespaces this replica covers and how it watches them.
#[derive(Clone)]
pub struct Reach {
    /// The watch caches' client (the controllers' own unless given connections of its own).
    pub client: kube::Client,
    /// The only namespace the controllers watch; `None` watches every namespace.
    pub namespace: Option<String>,
    /// The namespaces this replica reconciles: all, or as a shard those it owns.
    pub assignment: Assignment,
}

impl Reach {
    /// Every namespace, watched through `client`.
    pub fn everywhere(client: kube::Client) -> Self {
        Self {
            client,
            namespace: None,
            assignment: Assignment::All,
        }
    }

    /// Whether a listing of the cloud asked for at `asked` is taken in for the owners of
    /// `namespace`: those this replica reconciles (see [`Assignment::speaks_for`]).
    pub fn listing_speaks_for(&self, namespace: &str, asked: Instant) -> bool {
        self.namespace.as_ref().is_none_or(|ns| ns == namespace)
            && self.assignment.speaks_for(namespace, asked)
    }

    /// The API the controllers watch `K` through: one namespace or all of them.
    pub fn watched<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match &self.namespace {
            Some(ns) => kube::Api::namespaced(self.client.clone(), ns),
            None => kube::Api::all(self.client.clone()),
        }
    }
}
