//! `CloudError`: the one classified error every service verb returns.
//!
//! Each error names the failed action and its object ("failed to create server
//! verda-default-web-0: quota exceeded: ...") and carries a [`ErrorKind`] the
//! controllers decide on through [`CloudError::category`] (a stable CamelCase word used
//! as condition reason, event reason and metric label) and [`CloudError::is_terminal`].
//! Turning an HTTP answer into a kind lives in `error_body.rs`; this module does no I/O.
//! A NoValidHost scheduling failure is deliberately *not* an error: Nova answers 202 and
//! the server goes to ERROR with a fault, which `Server::fault` reports.

use std::fmt;
use std::time::Duration;

/// What was being looked up by name when a lookup failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Image,
    Flavor,
    Network,
    Subnet,
    LoadBalancerFlavor,
    Endpoint,
    VolumeType,
    SecurityGroup,
    DnsZone,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Resource::Image => "image",
            Resource::Flavor => "flavor",
            Resource::Network => "network",
            Resource::Subnet => "subnet",
            Resource::LoadBalancerFlavor => "load balancer flavor",
            Resource::Endpoint => "service endpoint",
            Resource::VolumeType => "volume type",
            Resource::SecurityGroup => "security group",
            Resource::DnsZone => "DNS zone",
        })
    }
}

/// The class of a cloud failure. Messages come from OpenStack's own error body.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error("not found: {message}")]
    NotFound { message: String },
    /// 409: Octavia `PENDING_*` immutability, or a duplicate (listener port in use).
    #[error("conflict: {message}")]
    Conflict { message: String, immutable: bool },
    #[error("rate limited{}: {message}", retry_suffix(*retry_after))]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("quota exceeded: {message}")]
    QuotaExceeded { message: String },
    #[error("bad request: {message}")]
    BadRequest { message: String },
    #[error("unauthorized: {message}")]
    Unauthorized { message: String },
    #[error("forbidden: {message}")]
    Forbidden { message: String },
    /// 5xx, 503 with Retry-After, connection failures and timeouts.
    #[error("cloud unavailable{}: {message}", retry_suffix(*retry_after))]
    Unavailable {
        status: Option<u16>,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("{resource} {name:?} not found")]
    LookupNotFound { resource: Resource, name: String },
    #[error("{resource} name {name:?} is ambiguous; candidates: {}", candidates.join(", "))]
    AmbiguousName {
        resource: Resource,
        name: String,
        candidates: Vec<String>,
    },
    #[error("invalid cloud configuration: {message}")]
    Config { message: String },
    #[error("unexpected response: {message}")]
    InvalidResponse { message: String },
}

fn retry_suffix(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(" (retry after {}s)", d.as_secs_f64()),
        None => String::new(),
    }
}

/// A failed service call: the action with its object, and the classified cause.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to {action}: {kind}")]
pub struct CloudError {
    action: String,
    kind: ErrorKind,
}

impl CloudError {
    /// `action` is a verb phrase with its object, e.g. `create server verda-default-web-0`.
    pub fn new(action: impl Into<String>, kind: ErrorKind) -> Self {
        Self {
            action: action.into(),
            kind,
        }
    }

    pub fn action(&self) -> &str {
        &self.action
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Stable CamelCase class: condition reason, event reason and metric label.
    pub fn category(&self) -> &'static str {
        match &self.kind {
            ErrorKind::NotFound { .. } => "NotFound",
            ErrorKind::Conflict { .. } => "Conflict",
            ErrorKind::RateLimited { .. } => "RateLimited",
            ErrorKind::QuotaExceeded { .. } => "QuotaExceeded",
            ErrorKind::BadRequest { .. } => "BadRequest",
            ErrorKind::Unauthorized { .. } => "Unauthorized",
            ErrorKind::Forbidden { .. } => "Forbidden",
            ErrorKind::Unavailable { .. } | ErrorKind::InvalidResponse { .. } => "CloudUnavailable",
            ErrorKind::LookupNotFound { resource, .. } => match resource {
                Resource::Image => "ImageNotFound",
                Resource::Flavor => "FlavorNotFound",
                Resource::Network => "NetworkNotFound",
                Resource::Subnet => "SubnetNotFound",
                Resource::LoadBalancerFlavor => "LoadBalancerFlavorNotFound",
                Resource::Endpoint => "EndpointNotFound",
                Resource::VolumeType => "VolumeTypeNotFound",
                Resource::SecurityGroup => "SecurityGroupNotFound",
                Resource::DnsZone => "ZoneNotFound",
            },
            ErrorKind::AmbiguousName { .. } => "AmbiguousName",
            ErrorKind::Config { .. } => "CloudConfigInvalid",
        }
    }

    /// True when repeating the same call cannot succeed until something changes (the spec,
    /// the cloud's content, quota or credentials): controllers requeue slowly. False for
    /// transient classes (conflict while immutable, rate limit, outage): jittered backoff.
    pub fn is_terminal(&self) -> bool {
        !matches!(
            self.kind,
            ErrorKind::Conflict { .. }
                | ErrorKind::RateLimited { .. }
                | ErrorKind::Unavailable { .. }
                | ErrorKind::InvalidResponse { .. }
        )
    }

    /// The server's Retry-After, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.kind {
            ErrorKind::RateLimited { retry_after, .. }
            | ErrorKind::Unavailable { retry_after, .. } => retry_after,
            _ => None,
        }
    }

    /// The cloud's catalog has no such service (a cloud without Barbican, say).
    pub fn is_missing_service(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::LookupNotFound {
                resource: Resource::Endpoint,
                ..
            }
        )
    }

    /// The object is gone: cleanup code treats this as success.
    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, ErrorKind::NotFound { .. })
    }

    /// Octavia answered 409 because the load balancer is in a `PENDING_*` state.
    pub fn is_immutable(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Conflict {
                immutable: true,
                ..
            }
        )
    }
}

/// Deleting what is already gone is success.
pub fn ignore_not_found(result: Result<(), CloudError>) -> Result<(), CloudError> {
    match result {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ErrorKind) -> CloudError {
        CloudError::new("create server verda-default-web-0", kind)
    }

    #[test]
    fn message_names_the_action_and_the_cause() {
        let e = err(ErrorKind::QuotaExceeded {
            message: "Quota exceeded for instances".into(),
        });
        assert_eq!(
            e.to_string(),
            "failed to create server verda-default-web-0: quota exceeded: Quota exceeded for instances"
        );
        assert_eq!(e.category(), "QuotaExceeded");
        assert!(e.is_terminal());
    }

    #[test]
    fn transient_classes_are_not_terminal() {
        let limited = err(ErrorKind::RateLimited {
            retry_after: Some(Duration::from_secs(2)),
            message: "slow down".into(),
        });
        assert!(!limited.is_terminal());
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(2)));
        assert!(limited.to_string().contains("retry after 2s"));
        let pending = err(ErrorKind::Conflict {
            message: "immutable".into(),
            immutable: true,
        });
        assert!(pending.is_immutable());
        assert_eq!(pending.category(), "Conflict");
        assert!(!pending.is_terminal());
    }

    #[test]
    fn lookups_have_their_own_categories() {
        let image = err(ErrorKind::LookupNotFound {
            resource: Resource::Image,
            name: "centos7".into(),
        });
        assert_eq!(image.category(), "ImageNotFound");
        let ambiguous = err(ErrorKind::AmbiguousName {
            resource: Resource::Flavor,
            name: "small".into(),
            candidates: vec!["1".into(), "2".into()],
        });
        assert_eq!(ambiguous.category(), "AmbiguousName");
        assert!(ambiguous.to_string().ends_with("candidates: 1, 2"));
    }
}
