//! The certificates of terminated-https ports: read from the `kubernetes.io/tls`
//! Secrets the ports name, checked, packed, and matched with the owner's Barbican
//! secrets. A Barbican secret's name is the owner's prefix
//! ([`Owner::certificate_prefix`]) and the bundle's fingerprint: a crash after a store
//! finds it again by name instead of storing twice, and a renewed certificate gets a
//! secret of its own.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use verda_api::v1alpha1::{LoadBalancer, Protocol};

use crate::caches::cloud_view::OctaviaTree;
use crate::cloud::LoadBalancing;
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::model::loadbalancing::Listener;
use crate::cloud::owner::Owner;
use crate::runtime::problem::Problem;
use crate::runtime::{Context, ReconcileError};
use crate::tls_bundle::{self, Bundle, BundleError};

/// The Secret type cert-manager writes, with `tls.crt` and `tls.key`.
const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// A certificate a port serves.
#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    /// The Kubernetes Secret it comes from.
    pub secret: String,
    /// Its Barbican name.
    pub name: String,
    pub bundle: Arc<Bundle>,
}

/// What the terminated-https ports serve and what Barbican holds for the owner.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Certificates {
    /// Per port of `spec.ports`, the certificates its listener serves, the default
    /// first; empty for a port without `tls`.
    pub ports: Vec<Vec<Wanted>>,
    /// The owner's Barbican secrets; `None` when Barbican was not asked (nothing of
    /// the owner can be there).
    pub stored: Option<Vec<StoredSecret>>,
}

impl Certificates {
    fn stored(&self) -> &[StoredSecret] {
        self.stored.as_deref().unwrap_or_default()
    }

    /// The Barbican refs of port `index`'s certificates, the default first; `None`
    /// while one is not stored yet.
    pub fn refs(&self, index: usize) -> Option<Vec<String>> {
        let wanted = self.ports.get(index).map_or(&[][..], Vec::as_slice);
        wanted
            .iter()
            .map(|w| self.find(&w.name).map(|s| s.secret_ref.clone()))
            .collect()
    }

    /// A certificate some port serves that Barbican does not hold yet.
    pub fn unstored(&self) -> Option<&Wanted> {
        self.ports
            .iter()
            .flatten()
            .find(|w| self.find(&w.name).is_none())
    }

    /// An owner's secret no port serves and no listener holds: left by a renewal, a
    /// Secret no longer named, or a port gone.
    pub fn unused(&self, listeners: &[Listener]) -> Option<&StoredSecret> {
        let held = |s: &StoredSecret| {
            listeners.iter().any(|l| {
                let o = &l.options;
                o.default_tls_container_ref.as_deref() == Some(&s.secret_ref)
                    || o.sni_container_refs
                        .iter()
                        .flatten()
                        .any(|r| r == &s.secret_ref)
            })
        };
        // Of two secrets of one name (a store Barbican took twice), the first serves.
        let served = |s: &StoredSecret| {
            self.ports.iter().flatten().any(|w| {
                self.find(&w.name)
                    .is_some_and(|f| f.secret_ref == s.secret_ref)
            })
        };
        self.stored().iter().find(|s| !served(s) && !held(s))
    }

    fn find(&self, name: &str) -> Option<&StoredSecret> {
        self.stored()
            .iter()
            .find(|s| s.name.as_deref() == Some(name))
    }
}

/// Whether the owner may have secrets in Barbican: a port terminates TLS, a listener
/// does, or the last status counted some.
pub fn in_use(lb: &LoadBalancer, tree: Option<&OctaviaTree>) -> bool {
    let spec = lb
        .spec
        .ports
        .iter()
        .any(|p| p.protocol == Protocol::TerminatedHttps);
    let listener = tree.is_some_and(|t| {
        t.listeners
            .iter()
            .any(|l| l.options.default_tls_container_ref.is_some())
    });
    let recorded = lb
        .status
        .as_ref()
        .is_some_and(|s| !s.certificates.is_empty());
    spec || listener || recorded
}

/// Reads and checks every Secret the ports name and, where the owner may have any,
/// lists its Barbican secrets. A Secret that cannot be served fails the whole look:
/// nothing is changed in Octavia until it is fixed.
pub async fn read(
    ctx: &Context,
    lb: &LoadBalancer,
    owner: &Owner,
    octavia: &dyn LoadBalancing,
    tree: &OctaviaTree,
    now: DateTime<Utc>,
) -> Result<Certificates, ReconcileError> {
    let key = crate::runtime::object::object_key(lb);
    let namespace = lb.namespace().unwrap_or_default();
    let prefix = owner.certificate_prefix();
    let mut ports = Vec::with_capacity(lb.spec.ports.len());
    for (i, port) in lb.spec.ports.iter().enumerate() {
        let mut wanted = Vec::new();
        for (j, name) in port.tls.iter().flat_map(|t| t.secret_names()).enumerate() {
            let field = match j {
                0 => format!("spec.ports[{i}].tls.secretName"),
                n => format!("spec.ports[{i}].tls.sniSecretNames[{}]", n - 1),
            };
            let secret = ctx.tenancy.secret(&namespace, name).await.map_err(|e| {
                ReconcileError::Credentials {
                    object: key.clone(),
                    source: e,
                    deleting: false,
                }
            })?;
            let bundle =
                checked(secret.as_deref(), name, &field, now).map_err(|(problem, message)| {
                    ReconcileError::Invalid {
                        object: key.clone(),
                        problem,
                        message,
                    }
                })?;
            wanted.push(Wanted {
                secret: name.to_owned(),
                name: format!("{prefix}{}", bundle.fingerprint),
                bundle: Arc::new(bundle),
            });
        }
        ports.push(wanted);
    }
    let stored =
        match in_use(lb, Some(tree)) {
            true => Some(octavia.list_certificates(&prefix).await.map_err(
                ReconcileError::cloud("list the certificates in Barbican", &key),
            )?),
            false => None,
        };
    Ok(Certificates { ports, stored })
}

/// The bundle of Secret `name`, or the problem and a message for the person fixing it.
fn checked(
    secret: Option<&Secret>,
    name: &str,
    field: &str,
    now: DateTime<Utc>,
) -> Result<Bundle, (Problem, String)> {
    let Some(secret) = secret else {
        return Err((
            Problem::TLSSecretNotFound,
            format!(
                "Secret {name} ({field}) not found: create it (cert-manager writes one for a Certificate), or name another"
            ),
        ));
    };
    let kind = secret.type_.as_deref().unwrap_or("Opaque");
    if kind != TLS_SECRET_TYPE {
        return Err((
            Problem::TLSSecretInvalid,
            format!(
                "Secret {name} ({field}) is of type {kind}, not {TLS_SECRET_TYPE} with tls.crt and tls.key"
            ),
        ));
    }
    let field_of = |k: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| b.0.as_slice())
            .unwrap_or_default()
    };
    tls_bundle::bundle(field_of("tls.crt"), field_of("tls.key"), now).map_err(|e| {
        let problem = match e {
            BundleError::KeyMismatch => Problem::TLSKeyMismatch,
            BundleError::Expired(_) | BundleError::NotYetValid(_) => Problem::TLSCertificateExpired,
            _ => Problem::TLSSecretInvalid,
        };
        (problem, format!("Secret {name} ({field}): {e}; nothing is changed in Octavia until the Secret is fixed"))
    })
}
