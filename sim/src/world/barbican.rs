//! Barbican's records: a project's secrets.

use std::collections::BTreeMap;

/// One stored secret. The payload is kept as Barbican decrypts it for a reader.
#[derive(Debug, Clone)]
pub(crate) struct StoredSecret {
    pub id: String,
    pub name: Option<String>,
    pub secret_type: String,
    pub content_type: String,
    pub payload: Vec<u8>,
    pub created: String,
    /// Creation order: lists come out oldest first, as Barbican's `created` sort.
    pub seq: u64,
}

/// A project's secrets by ID.
#[derive(Debug, Default)]
pub(crate) struct Barbican {
    pub secrets: BTreeMap<String, StoredSecret>,
}
