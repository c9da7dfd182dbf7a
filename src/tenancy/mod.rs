//! Whose OpenStack project an object acts in. Shared clusters give every team its own
//! project: an object uses the credentials its `spec.cloudCredentialsRef` names (a
//! Secret in its own namespace), else its namespace's default Secret, else — where
//! the configuration allows it — the operator's own. The project those credentials
//! act in is recorded in the object's status before anything is created, and
//! credentials that act in another project are refused, so a swapped Secret can
//! neither strand resources in one project nor create duplicates in another.
//!
//! Clients are cached per Secret version: a rotated Secret gets a new client (and
//! token) at its next reconcile, which the Secret's watch triggers at once.

mod origin;
mod secrets;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use tokio::sync::mpsc;
use verda_api::v1alpha1::CloudCredentialsRef;

pub use origin::{CredentialsError, Origin, SecretKey};
use secrets::{Built, SecretWatches};

use crate::cloud::CloudServices;
use crate::cloud::budget::Budgets;
use crate::cloud::config::from_clouds_text;
use crate::cloud::{ClientOptions, OpenStackClient};
use crate::config::CredentialsConfig;
use crate::lock::Lock;
use crate::metrics::Metrics;

/// The key of a Secret's clouds.yaml, as ORC and the OpenStack CLI name it.
pub const CLOUDS_YAML_KEY: &str = "clouds.yaml";
/// The key of a Secret's optional CA bundle.
pub const CACERT_KEY: &str = "cacert";

/// The credentials an object acts with, and the project they act in.
#[derive(Clone)]
pub struct Tenant {
    pub services: Arc<dyn CloudServices>,
    /// The project's ID, as Keystone scoped the credentials' token.
    pub project: String,
    pub origin: Origin,
}

/// Resolves objects' credentials; shared by the controllers.
pub struct Tenancy {
    settings: CredentialsConfig,
    operator: Arc<dyn CloudServices>,
    secrets: SecretWatches,
    metrics: Arc<Metrics>,
    /// The projects' request budgets the clients built here spend from.
    budgets: std::sync::OnceLock<Arc<Budgets>>,
    /// The projects each namespace's objects were last seen acting in.
    acting: Lock<HashMap<String, BTreeSet<String>>>,
}

impl Tenancy {
    pub fn new(
        client: kube::Client,
        settings: CredentialsConfig,
        operator: Arc<dyn CloudServices>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            settings,
            operator,
            secrets: SecretWatches::new(client),
            metrics,
            budgets: std::sync::OnceLock::new(),
            acting: Lock::default(),
        }
    }

    /// From now on, the clients built from credentials Secrets spend from `budgets`.
    pub fn spend_from(&self, budgets: Arc<Budgets>) {
        let _ = self.budgets.set(budgets);
    }

    /// The budgets the clients built here spend from, once set.
    pub fn budgets(&self) -> Option<&Arc<Budgets>> {
        self.budgets.get()
    }

    /// The projects the objects of `namespaces` act in, as far as their credentials
    /// have been resolved.
    pub fn projects_of<'a>(
        &self,
        namespaces: impl IntoIterator<Item = &'a str>,
    ) -> BTreeSet<String> {
        let acting = self.acting.lock();
        namespaces
            .into_iter()
            .filter_map(|namespace| acting.get(namespace))
            .flatten()
            .cloned()
            .collect()
    }

    /// Forgets every Secret and client (controllers starting again); Secret changes
    /// from now on arrive on the returned channel.
    pub fn restart(&self) -> mpsc::UnboundedReceiver<SecretKey> {
        self.secrets.restart()
    }

    /// Secret `name` of `namespace` as its watch last saw it (`None`: it does not exist):
    /// a terminated-https port's certificate. Followed from now on; a change wakes the
    /// objects of the namespace, as a credentials Secret's does.
    pub async fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Secret>>, CredentialsError> {
        let (secret, _) = self.secrets.current(&secret_key(namespace, name)).await?;
        Ok(secret)
    }

    /// The credentials of an object in `namespace` with `reference`, and their project
    /// (remembered as one `namespace` acts in).
    pub async fn resolve(
        &self,
        namespace: &str,
        reference: Option<&CloudCredentialsRef>,
    ) -> Result<Tenant, CredentialsError> {
        let tenant = self.credentials(namespace, reference).await?;
        let mut acting = self.acting.lock();
        if !acting
            .get(namespace)
            .is_some_and(|p| p.contains(&tenant.project))
        {
            let projects = acting.entry(namespace.to_owned()).or_default();
            projects.insert(tenant.project.clone());
        }
        drop(acting);
        Ok(tenant)
    }

    async fn credentials(
        &self,
        namespace: &str,
        reference: Option<&CloudCredentialsRef>,
    ) -> Result<Tenant, CredentialsError> {
        let (key, cloud) = match reference {
            Some(r) => (secret_key(namespace, &r.secret_name), r.cloud_name.clone()),
            None => (
                secret_key(namespace, &self.settings.default_secret_name),
                self.settings.default_cloud_name.clone(),
            ),
        };
        let (secret, built) = self.secrets.current(&key).await?;
        let Some(secret) = secret else {
            return match reference {
                Some(_) => Err(CredentialsError::RefNotFound { secret: key }),
                None if self.settings.allow_operator_credentials => {
                    self.tenant(self.operator.clone(), Origin::Operator).await
                }
                None => Err(CredentialsError::NamespaceDefaultNotFound { secret: key }),
            };
        };
        let services = self.client_for(&key, &secret, cloud, &built)?;
        self.tenant(services, Origin::Secret(key)).await
    }

    async fn tenant(
        &self,
        services: Arc<dyn CloudServices>,
        origin: Origin,
    ) -> Result<Tenant, CredentialsError> {
        match services.project_id().await {
            Ok(project) => Ok(Tenant {
                services,
                project,
                origin,
            }),
            Err(source) => Err(CredentialsError::Cloud {
                origin,
                source: Box::new(source),
            }),
        }
    }

    /// The client of this version of the Secret, built at its first use.
    fn client_for(
        &self,
        key: &SecretKey,
        secret: &Secret,
        cloud: Option<String>,
        built: &secrets::BuiltSlot,
    ) -> Result<Arc<dyn CloudServices>, CredentialsError> {
        let version = kube::ResourceExt::resource_version(secret).unwrap_or_default();
        let mut slot = built.lock();
        if let Some(b) = slot.as_ref()
            && b.resource_version == version
            && b.cloud == cloud
        {
            return Ok(b.services.clone());
        }
        let invalid = |problem: String| CredentialsError::Invalid {
            secret: key.clone(),
            problem,
        };
        let data = secret.data.as_ref();
        let text = data.and_then(|d| d.get(CLOUDS_YAML_KEY)).ok_or_else(|| {
            invalid(format!(
                "has no key {CLOUDS_YAML_KEY}; put the clouds.yaml there"
            ))
        })?;
        let text = std::str::from_utf8(&text.0)
            .map_err(|_| invalid(format!("key {CLOUDS_YAML_KEY} is not UTF-8 text")))?;
        let mut config =
            from_clouds_text(text, cloud.as_deref(), CLOUDS_YAML_KEY).map_err(|e| {
                invalid(match e {
                    crate::cloud::ConfigError::ChooseCloud { available, .. } => format!(
                        "{CLOUDS_YAML_KEY} defines several clouds ({}); name one in cloudName",
                        available.join(", ")
                    ),
                    other => other.to_string(),
                })
            })?;
        config.tls.ca_bundle = data.and_then(|d| d.get(CACERT_KEY)).map(|b| b.0.clone());
        let options = ClientOptions {
            budgets: self.budgets.get().cloned(),
            ..ClientOptions::default()
        };
        let client = OpenStackClient::new(config, self.metrics.clone(), options)
            .map_err(|e| invalid(e.to_string()))?;
        let services: Arc<dyn CloudServices> = Arc::new(client);
        *slot = Some(Built {
            resource_version: version,
            cloud,
            services: services.clone(),
        });
        Ok(services)
    }
}

fn secret_key(namespace: &str, name: &str) -> SecretKey {
    SecretKey {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}
