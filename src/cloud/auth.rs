//! Keystone v3: the token request body, the token, and endpoint selection from its
//! service catalog.
//!
//! Why not osauth at run time (it is what the team planned to use): in osauth 0.5
//! `Internal::refresh(force = true)` re-checks `token_alive` after taking the write lock,
//! so a forced refresh is a no-op while the cached token's `expires_at` lies in the future
//! — a revoked token (401) can never be replaced; it renews only when fewer than 10
//! minutes remain, which re-authenticates before *every* request on clouds (or the
//! simulator) with short token lifetimes; its Keystone calls happen inside the crate, past
//! our choke point (no metrics, retries or concurrency cap); `Password` takes user and
//! domain by name only and scopes only to projects; and `CloudConfig`'s fields are
//! private, so `verify: false` and `OS_CLIENT_CONFIG_FILE` cannot be layered on top. The
//! request itself is small, so it is built here and sent through `transport.rs`.
//!
//! Not here: caching and renewal policy (transport), config resolution (config).

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::config::{CloudConfig, Credentials, IdOrName, Interface, Scope, Secret};
use super::error::{ErrorKind, Resource};

/// The OpenStack services the client calls, with their catalog type and metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    Identity,
    Compute,
    Image,
    Network,
    LoadBalancer,
    BlockStorage,
    /// Barbican, where terminated-https listeners' certificates are stored.
    KeyManager,
    /// Designate: the record sets of `spec.dns`.
    Dns,
}

impl Service {
    /// Catalog `type`, also the metric `service` label.
    pub fn label(self) -> &'static str {
        match self {
            Service::Identity => "identity",
            Service::Compute => "compute",
            Service::Image => "image",
            Service::Network => "network",
            Service::LoadBalancer => "load-balancer",
            Service::BlockStorage => "block-storage",
            Service::KeyManager => "key-manager",
            Service::Dns => "dns",
        }
    }

    /// Catalog types that name this service: Cinder is `block-storage` in current
    /// catalogs, `volumev3` in older ones (and in both, where deployments keep both).
    fn catalog_types(self) -> &'static [&'static str] {
        match self {
            Service::Identity => &["identity"],
            Service::Compute => &["compute"],
            Service::Image => &["image"],
            Service::Network => &["network"],
            Service::LoadBalancer => &["load-balancer"],
            Service::BlockStorage => &["block-storage", "volumev3"],
            Service::KeyManager => &["key-manager"],
            Service::Dns => &["dns"],
        }
    }

    /// Version path clients append to the catalog URL (Nova's URL already has `/v2.1`).
    fn version_suffix(self) -> &'static [&'static str] {
        match self {
            Service::Identity | Service::Compute | Service::BlockStorage => &[],
            Service::Image => &["/v2"],
            Service::Network => &["/v2.0"],
            Service::LoadBalancer => &["/v2", "/v2.0"],
            Service::KeyManager => &["/v1"],
            Service::Dns => &["/v2"],
        }
    }
}

/// A Keystone token with its catalog. `Debug` never shows the value.
pub(crate) struct Token {
    value: Secret,
    pub(crate) generation: u64,
    /// When it was asked for, on this host's clock: a token asked for before a
    /// revocation's second ended may be refused (see `transport.rs`).
    pub(crate) requested: tokio::time::Instant,
    issued_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    catalog: Vec<CatalogEntry>,
    /// The ID of the project the token acts in.
    pub(crate) project_id: Option<String>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("value", &self.value)
            .field("generation", &self.generation)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize)]
struct CatalogEntry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    endpoints: Vec<Endpoint>,
}

#[derive(Debug, Deserialize)]
struct Endpoint {
    interface: String,
    #[serde(default)]
    region: Option<String>,
    #[serde(default)]
    region_id: Option<String>,
    url: String,
}

#[derive(Deserialize)]
struct TokenBody {
    token: TokenInner,
}

#[derive(Deserialize)]
struct TokenInner {
    expires_at: DateTime<Utc>,
    issued_at: Option<DateTime<Utc>>,
    #[serde(default)]
    catalog: Vec<CatalogEntry>,
    /// The project the token is scoped to (application credentials carry their own).
    #[serde(default)]
    project: Option<TokenProject>,
}

#[derive(Deserialize)]
struct TokenProject {
    id: String,
}

impl Token {
    /// Parse Keystone's 201: the value is only in `X-Subject-Token`.
    pub(crate) fn from_response(
        subject_token: Option<&str>,
        body: &[u8],
        generation: u64,
        requested: tokio::time::Instant,
    ) -> Result<Token, ErrorKind> {
        let value = subject_token.ok_or_else(|| ErrorKind::InvalidResponse {
            message: "Keystone answered without X-Subject-Token".into(),
        })?;
        let parsed: TokenBody =
            serde_json::from_slice(body).map_err(|e| ErrorKind::InvalidResponse {
                message: format!("Keystone token body: {e}"),
            })?;
        let t = parsed.token;
        Ok(Token {
            value: Secret::new(value),
            generation,
            requested,
            issued_at: t.issued_at.unwrap_or_else(Utc::now),
            expires_at: t.expires_at,
            catalog: t.catalog,
            project_id: t.project.map(|p| p.id),
        })
    }

    pub(crate) fn value(&self) -> &str {
        self.value.expose()
    }

    /// Usable for a while yet: renew when less than a tenth of the lifetime (at most 30 s)
    /// remains, so short-lived tokens are not renewed before every request.
    pub(crate) fn is_fresh(&self, now: DateTime<Utc>) -> bool {
        let lifetime = (self.expires_at - self.issued_at)
            .to_std()
            .unwrap_or(Duration::ZERO);
        let margin = (lifetime / 10).min(Duration::from_secs(30));
        match (self.expires_at - now).to_std() {
            Ok(left) => left > margin,
            Err(_) => false,
        }
    }

    /// The versioned base URL of `service`, by interface and region. Without a region the
    /// lexically first region wins (catalog order is not stable, so never "the first one").
    pub(crate) fn endpoint(
        &self,
        service: Service,
        interface: Interface,
        region: Option<&str>,
    ) -> Result<String, ErrorKind> {
        let mut candidates: Vec<&Endpoint> = self
            .catalog
            .iter()
            .filter(|e| service.catalog_types().contains(&e.kind.as_str()))
            .flat_map(|e| e.endpoints.iter())
            .filter(|e| e.interface == interface.as_str())
            .filter(|e| {
                region.is_none_or(|r| {
                    e.region_id.as_deref() == Some(r) || e.region.as_deref() == Some(r)
                })
            })
            .collect();
        candidates.sort_by(|a, b| a.region_id.cmp(&b.region_id).then(a.region.cmp(&b.region)));
        let Some(endpoint) = candidates.first() else {
            return Err(ErrorKind::LookupNotFound {
                resource: Resource::Endpoint,
                name: format!(
                    "{} ({} interface{})",
                    service.label(),
                    interface.as_str(),
                    region.map(|r| format!(", region {r}")).unwrap_or_default()
                ),
            });
        };
        let base = endpoint.url.trim_end_matches('/');
        let versions = service.version_suffix();
        if versions.is_empty() || versions.iter().any(|v| base.ends_with(v)) {
            Ok(base.to_owned())
        } else {
            Ok(format!("{base}{}", versions[0]))
        }
    }
}

/// `POST {auth_url}/v3/auth/tokens`'s URL (auth_url may or may not end in `/v3`).
pub(crate) fn token_url(config: &CloudConfig) -> String {
    let base = config.auth_url.trim_end_matches('/');
    if base.ends_with("/v3") {
        format!("{base}/auth/tokens")
    } else {
        format!("{base}/v3/auth/tokens")
    }
}

/// The Keystone request body. It holds the secret: built per request, never logged.
pub(crate) fn token_request(config: &CloudConfig) -> Value {
    let identity = match &config.credentials {
        Credentials::Password {
            user,
            user_domain,
            password,
        } => {
            let mut user = subject(user, user_domain.as_ref());
            user["password"] = json!(password.expose());
            json!({"methods": ["password"], "password": {"user": user}})
        }
        Credentials::ApplicationCredential {
            id,
            name,
            user,
            user_domain,
            secret,
        } => {
            let mut cred = json!({"secret": secret.expose()});
            if let Some(id) = id {
                cred["id"] = json!(id);
            } else {
                cred["name"] = json!(name);
                if let Some(user) = user {
                    cred["user"] = subject(user, user_domain.as_ref());
                }
            }
            json!({"methods": ["application_credential"], "application_credential": cred})
        }
    };
    let mut auth = json!({"identity": identity});
    match &config.scope {
        Scope::Project { project, domain } => {
            auth["scope"] = json!({"project": subject(project, domain.as_ref())});
        }
        Scope::Domain(domain) => auth["scope"] = json!({"domain": id_or_name(domain)}),
        Scope::Unscoped => {}
    }
    json!({"auth": auth})
}

fn id_or_name(v: &IdOrName) -> Value {
    match v {
        IdOrName::Id(id) => json!({"id": id}),
        IdOrName::Name(name) => json!({"name": name}),
    }
}

/// A user or project: by ID alone, or by name within its domain.
fn subject(v: &IdOrName, domain: Option<&IdOrName>) -> Value {
    let mut out = id_or_name(v);
    if let (IdOrName::Name(_), Some(domain)) = (v, domain) {
        out["domain"] = id_or_name(domain);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::config::Tls;

    fn config(credentials: Credentials, scope: Scope) -> CloudConfig {
        CloudConfig {
            name: "t".into(),
            auth_url: "https://k.example:5000/v3/".into(),
            credentials,
            scope,
            region: None,
            interface: Interface::Public,
            tls: Tls::default(),
        }
    }

    fn password() -> Credentials {
        Credentials::Password {
            user: IdOrName::Name("demo".into()),
            user_domain: Some(IdOrName::Name("Default".into())),
            password: Secret::new("pw"),
        }
    }

    #[test]
    fn password_body_scopes_to_a_named_project_in_its_domain() {
        let scope = Scope::Project {
            project: IdOrName::Name("demo".into()),
            domain: Some(IdOrName::Id("default".into())),
        };
        let c = config(password(), scope);
        assert_eq!(token_url(&c), "https://k.example:5000/v3/auth/tokens");
        assert_eq!(
            token_request(&c),
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {"name": "demo", "domain": {"name": "Default"}, "password": "pw"}}},
                "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}
            }})
        );
    }

    #[test]
    fn application_credential_bodies_carry_no_scope() {
        let by_id = Credentials::ApplicationCredential {
            id: Some("ac".into()),
            name: None,
            user: None,
            user_domain: None,
            secret: Secret::new("s"),
        };
        let body = token_request(&config(by_id, Scope::Unscoped));
        assert_eq!(
            body,
            json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "ac", "secret": "s"}}}})
        );
        let by_name = Credentials::ApplicationCredential {
            id: None,
            name: Some("op".into()),
            user: Some(IdOrName::Id("u1".into())),
            user_domain: None,
            secret: Secret::new("s"),
        };
        let body = token_request(&config(by_name, Scope::Domain(IdOrName::Name("d".into()))));
        assert_eq!(
            body["auth"]["identity"]["application_credential"]["user"],
            json!({"id": "u1"})
        );
        assert_eq!(body["auth"]["scope"], json!({"domain": {"name": "d"}}));
    }

    fn token(lifetime_secs: i64, catalog: Value) -> Token {
        let issued = Utc::now();
        let body = json!({"token": {
            "issued_at": issued.to_rfc3339(),
            "expires_at": (issued + chrono::Duration::seconds(lifetime_secs)).to_rfc3339(),
            "catalog": catalog,
        }});
        Token::from_response(
            Some("tok-value"),
            body.to_string().as_bytes(),
            1,
            tokio::time::Instant::now(),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn endpoints_are_chosen_by_type_interface_and_region_with_the_version_appended() {
        let catalog = json!([
            {"type": "network", "endpoints": [
                {"interface": "public", "region_id": "tokyo1", "region": "tokyo1", "url": "http://tokyo:9696"},
                {"interface": "internal", "region_id": "RegionOne", "region": "RegionOne", "url": "http://internal:9696"},
                {"interface": "public", "region_id": "RegionOne", "region": "RegionOne", "url": "http://one:9696/"}
            ]},
            {"type": "load-balancer", "endpoints": [
                {"interface": "public", "region_id": "RegionOne", "url": "http://lb:9876/v2.0"}
            ]},
            {"type": "compute", "endpoints": [
                {"interface": "public", "region_id": "RegionOne", "url": "http://nova:8774/v2.1"}
            ]}
        ]);
        let t = token(3600, catalog);
        let ep = |s, i, r| t.endpoint(s, i, r);
        assert_eq!(
            ep(Service::Network, Interface::Public, Some("tokyo1")),
            Ok("http://tokyo:9696/v2.0".into())
        );
        assert_eq!(
            ep(Service::Network, Interface::Public, None),
            Ok("http://one:9696/v2.0".into())
        );
        assert_eq!(
            ep(Service::Network, Interface::Internal, None),
            Ok("http://internal:9696/v2.0".into())
        );
        assert_eq!(
            ep(Service::LoadBalancer, Interface::Public, None),
            Ok("http://lb:9876/v2.0".into())
        );
        assert_eq!(
            ep(Service::Compute, Interface::Public, None),
            Ok("http://nova:8774/v2.1".into())
        );
        let missing = ep(Service::Image, Interface::Public, Some("RegionOne"));
        assert!(matches!(
            missing,
            Err(ErrorKind::LookupNotFound {
                resource: Resource::Endpoint,
                ..
            })
        ));
    }

    #[test]
    fn tokens_renew_ahead_of_expiry_and_never_print_their_value() {
        let long = token(24 * 3600, json!([]));
        assert!(long.is_fresh(Utc::now()));
        assert!(!long.is_fresh(Utc::now() + chrono::Duration::seconds(24 * 3600 - 20)));
        let short = token(2, json!([]));
        assert!(
            short.is_fresh(Utc::now()),
            "a 2 s token is not renewed at once"
        );
        assert!(!short.is_fresh(Utc::now() + chrono::Duration::milliseconds(1850)));
        assert!(!format!("{long:?}").contains("tok-value"));
        assert!(Token::from_response(None, b"{}", 1, tokio::time::Instant::now()).is_err());
    }
}
