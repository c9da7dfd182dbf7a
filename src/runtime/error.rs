//! The error of a reconcile step, classified once: its `category()` is the condition
//! reason, the event reason and the metric label; `is_terminal()` picks a slow retry
//! over a jittered backoff.

use std::time::Duration;

use crate::cloud::CloudError;
use crate::runtime::problem::Problem;
use crate::tenancy::{CredentialsError, Origin};

/// Why a reconcile step failed. Messages name the action and the object.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The cloud refused or failed a call; its message already names the action and
    /// the cloud resource (`failed to create server verda-…: quota exceeded: …`).
    #[error("{object}: {source}")]
    Cloud {
        action: &'static str,
        object: String,
        source: CloudError,
    },
    #[error("failed to {action} for {object}: {}", crate::kube_error::describe(.source))]
    Kube {
        action: &'static str,
        object: String,
        source: kube::Error,
    },
    /// Something the user must fix (a missing ConfigMap key, …).
    #[error("{object}: {message}")]
    Invalid {
        object: String,
        problem: Problem,
        message: String,
    },
    #[error("finalizer of {object}: {message}")]
    Finalizer { object: String, message: String },
    #[error("{object}: {source}{}", if *deleting { "; the object keeps its finalizer and its cloud resources stay until its credentials are back (to abandon them instead, remove the finalizer by hand)" } else { "" })]
    Credentials {
        object: String,
        source: CredentialsError,
        /// Whether the object is being deleted (its resources cannot be).
        deleting: bool,
    },
    /// The credentials act in another project than the one the object's resources are in.
    #[error(
        "{object}: its cloud resources are in project {recorded}, but {origin} act in project {now}; nothing is created or deleted in either until the credentials are for project {recorded} again (to move to another project, create a new object)"
    )]
    ProjectChanged {
        object: String,
        recorded: String,
        now: String,
        origin: Origin,
    },
}

/// The categories of the errors that are never terminal (see `is_terminal`).
const TRANSIENT_CATEGORIES: &[&str] = &[
    "KubernetesApiError",
    "FinalizerError",
    "Conflict",
    "RateLimited",
    "CloudUnavailable",
    "CredentialsUnreadable",
];

impl ReconcileError {
    pub fn cloud<'a>(
        action: &'static str,
        object: &'a str,
    ) -> impl FnOnce(CloudError) -> Self + 'a {
        move |source| Self::Cloud {
            action,
            object: object.to_owned(),
            source,
        }
    }

    pub fn kube<'a>(
        action: &'static str,
        object: &'a str,
    ) -> impl FnOnce(kube::Error) -> Self + 'a {
        move |source| Self::Kube {
            action,
            object: object.to_owned(),
            source,
        }
    }

    /// Stable CamelCase word for conditions, events and metrics.
    pub fn category(&self) -> &'static str {
        match self {
            Self::Cloud { source, .. } => source.category(),
            Self::Kube { source, .. } => match crate::kube_error::api_code(source) {
                Some(403) => "KubernetesForbidden",
                Some(422) => "KubernetesInvalid",
                _ => "KubernetesApiError",
            },
            Self::Invalid { problem, .. } => problem.reason(),
            Self::Finalizer { .. } => "FinalizerError",
            Self::Credentials { source, .. } => source.category(),
            Self::ProjectChanged { .. } => "ProjectChanged",
        }
    }

    /// Whether retrying soon cannot help (the user or the cloud's admin must act).
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Cloud { source, .. } => source.is_terminal(),
            Self::Invalid { .. } | Self::ProjectChanged { .. } => true,
            Self::Credentials { source, .. } => source.is_terminal(),
            // Missing RBAC or a write the API server refuses as invalid does not heal
            // by itself; a conflict or an unreachable API server does.
            Self::Kube { source, .. } => {
                matches!(crate::kube_error::api_code(source), Some(403 | 422))
            }
            Self::Finalizer { .. } => false,
        }
    }

    /// Whether `reason`, a Ready reason, is the category of an error that heals by
    /// itself (`!is_terminal()`): the object is held up, not failed.
    pub fn heals_by_itself(reason: &str) -> bool {
        TRANSIENT_CATEGORIES.contains(&reason)
    }

    /// The server's Retry-After, when it gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Cloud { source, .. } => source.retry_after(),
            Self::Credentials { source, .. } => source.cloud().and_then(CloudError::retry_after),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kube_error(code: u16) -> ReconcileError {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "message": "refused", "reason": "Refused", "code": code
        }))
        .expect("status");
        ReconcileError::kube("write status", "ns/web")(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn missing_rbac_is_terminal_and_a_conflict_is_not() {
        let forbidden = kube_error(403);
        assert_eq!(
            (forbidden.category(), forbidden.is_terminal()),
            ("KubernetesForbidden", true)
        );
        let invalid = kube_error(422);
        assert_eq!(
            (invalid.category(), invalid.is_terminal()),
            ("KubernetesInvalid", true)
        );
        let conflict = kube_error(409);
        assert_eq!(
            (conflict.category(), conflict.is_terminal()),
            ("KubernetesApiError", false)
        );
    }

    #[test]
    fn the_transient_categories_are_those_of_the_errors_that_are_not_terminal() {
        use crate::cloud::ErrorKind as K;
        let message = || "m".to_owned();
        let resource = crate::cloud::Resource::Image;
        let kinds = [
            K::NotFound { message: message() },
            K::Conflict {
                message: message(),
                immutable: true,
            },
            K::RateLimited {
                retry_after: None,
                message: message(),
            },
            K::QuotaExceeded { message: message() },
            K::BadRequest { message: message() },
            K::Unauthorized { message: message() },
            K::Forbidden { message: message() },
            K::Unavailable {
                status: Some(503),
                retry_after: None,
                message: message(),
            },
            K::LookupNotFound {
                resource,
                name: message(),
            },
            K::AmbiguousName {
                resource,
                name: message(),
                candidates: vec![],
            },
            K::Config { message: message() },
            K::InvalidResponse { message: message() },
        ];
        let mut errors: Vec<ReconcileError> = kinds
            .into_iter()
            .map(|kind| {
                ReconcileError::cloud("create server", "team/web")(CloudError::new(
                    "create server",
                    kind,
                ))
            })
            .collect();
        errors.extend([403, 409, 422, 500].map(kube_error));
        errors.push(ReconcileError::Finalizer {
            object: "team/web".into(),
            message: message(),
        });
        let secret = crate::tenancy::SecretKey {
            namespace: "team".into(),
            name: "cloud".into(),
        };
        for source in [
            CredentialsError::Unreadable {
                secret: secret.clone(),
                reason: message(),
            },
            CredentialsError::Forbidden { secret },
        ] {
            errors.push(ReconcileError::Credentials {
                object: "team/web".into(),
                source,
                deleting: false,
            });
        }
        for error in &errors {
            assert_eq!(
                ReconcileError::heals_by_itself(error.category()),
                !error.is_terminal(),
                "{}",
                error.category()
            );
        }
        let transient: std::collections::BTreeSet<&str> = errors
            .iter()
            .filter(|e| !e.is_terminal())
            .map(ReconcileError::category)
            .collect();
        assert_eq!(transient.len(), TRANSIENT_CATEGORIES.len(), "{transient:?}");
        assert!(!ReconcileError::heals_by_itself("Provisioning"));
    }

    #[test]
    fn a_cloud_failure_names_its_action_once() {
        let source = CloudError::new(
            "create server verda-team-web",
            crate::cloud::ErrorKind::QuotaExceeded {
                message: "Quota exceeded for instances".into(),
            },
        );
        let error = ReconcileError::cloud("create server", "team/web")(source);
        assert_eq!(
            error.to_string(),
            "team/web: failed to create server verda-team-web: quota exceeded: Quota exceeded for instances"
        );
    }
}
