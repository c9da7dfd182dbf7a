//! Where an object's credentials come from (a Secret, or the operator's own), and why
//! it may have none.
use crate::cloud::CloudError;

/// A Secret by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SecretKey {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Where credentials came from, as messages name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Secret(SecretKey),
    Operator,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Secret(key) => write!(f, "Secret {key}"),
            Origin::Operator => f.write_str("the operator's own credentials"),
        }
    }
}

/// Why an object has no usable credentials. Messages name the Secret and what to do;
/// they never hold a value from it.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error(
        "Secret {secret} named by spec.cloudCredentialsRef does not exist; create it with the key clouds.yaml (kubectl -n {} create secret generic {} --from-file=clouds.yaml)",
        secret.namespace, secret.name
    )]
    RefNotFound { secret: SecretKey },
    #[error(
        "no OpenStack credentials: spec.cloudCredentialsRef is not set, the namespace has no Secret {secret}, and the operator does not lend its own credentials; create that Secret with the key clouds.yaml or set spec.cloudCredentialsRef"
    )]
    NamespaceDefaultNotFound { secret: SecretKey },
    #[error("Secret {secret}: {problem}")]
    Invalid { secret: SecretKey, problem: String },
    #[error("cannot read Secret {secret}: {reason}")]
    Unreadable { secret: SecretKey, reason: String },
    #[error(
        "the operator may not read Secret {secret}: its RBAC forbids reading Secrets in namespace {ns}; grant it get, list and watch on Secrets there (Helm chart: add {ns} to secretAccess.namespaces)",
        ns = secret.namespace
    )]
    Forbidden { secret: SecretKey },
    #[error("credentials from {origin}: {source}")]
    Cloud {
        origin: Origin,
        source: Box<CloudError>,
    },
}

impl CredentialsError {
    /// The condition reason.
    pub fn category(&self) -> &'static str {
        match self {
            Self::RefNotFound { .. } | Self::NamespaceDefaultNotFound { .. } => {
                "CredentialsNotFound"
            }
            Self::Invalid { .. } => "CredentialsInvalid",
            Self::Unreadable { .. } => "CredentialsUnreadable",
            Self::Forbidden { .. } => "CredentialsForbidden",
            Self::Cloud { source, .. } => source.category(),
        }
    }

    /// Whether only a change by someone (to the Secret, the spec, the cloud's users)
    /// can help; the Secret's watch wakes the object when it changes.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Unreadable { .. } => false,
            Self::Cloud { source, .. } => source.is_terminal(),
            _ => true,
        }
    }

    /// No Secret where one was looked for (and no operator credentials to fall back on).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::RefNotFound { .. } | Self::NamespaceDefaultNotFound { .. }
        )
    }

    pub fn cloud(&self) -> Option<&CloudError> {
        match self {
            Self::Cloud { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
