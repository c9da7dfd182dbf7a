//! Barbican secrets: the PKCS#12 bundles terminated-https listeners read.

use serde::Deserialize;

/// A secret as Barbican lists it (the payload is never read back).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct StoredSecret {
    /// The secret's URL: what a listener's `default_tls_container_ref` holds.
    pub secret_ref: String,
    #[serde(default)]
    pub name: Option<String>,
}

impl StoredSecret {
    /// The secret's UUID, the last segment of its URL.
    pub fn uuid(&self) -> &str {
        self.secret_ref
            .rsplit('/')
            .next()
            .unwrap_or(&self.secret_ref)
    }
}
