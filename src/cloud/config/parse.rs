//! Turning one clouds.yaml entry, or the `OS_*` variables, into a [`CloudConfig`].
//! Errors name keys and files, never values.

use std::path::PathBuf;

use serde_json::Value;

use super::Mapping;

use super::entry::{
    CloudConfig, Credentials, Environment, IdOrName, Interface, Scope, Secret, Tls,
};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("clouds.yaml {path} does not exist")]
    FileMissing { path: PathBuf },
    #[error(
        "cloud {cloud:?} was requested but no clouds.yaml was found (searched {})",
        display_paths(searched)
    )]
    NoCloudsFile {
        cloud: String,
        searched: Vec<PathBuf>,
    },
    #[error("cloud {cloud:?} is not in {}; available: {}", file.display(), available.join(", "))]
    NoSuchCloud {
        cloud: String,
        file: PathBuf,
        available: Vec<String>,
    },
    #[error("{} defines several clouds ({}); choose one with --cloud or OS_CLOUD", file.display(), available.join(", "))]
    ChooseCloud {
        file: PathBuf,
        available: Vec<String>,
    },
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("cloud {cloud:?}: {problem}")]
    Invalid { cloud: String, problem: String },
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Key lookup shared by clouds.yaml entries and the environment.
trait Source {
    fn get(&self, key: &str) -> Option<String>;
}

struct Yaml<'a>(&'a Mapping);

impl Source for Yaml<'_> {
    fn get(&self, key: &str) -> Option<String> {
        // Scalars of any type: `password: 123456` is a string to Keystone.
        match self.0.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
        .filter(|s| !s.is_empty())
    }
}

/// `OS_FOO_BAR` for key `foo_bar`.
struct Env<'a>(&'a Environment);

impl Source for Env<'_> {
    fn get(&self, key: &str) -> Option<String> {
        let var = format!("OS_{}", key.to_ascii_uppercase());
        self.0.var(&var).map(str::to_owned)
    }
}

pub(super) fn from_entry(name: &str, entry: &Mapping) -> Result<CloudConfig, ConfigError> {
    let empty = Mapping::new();
    let auth = entry
        .get("auth")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let top = Yaml(entry);
    let verify = entry.get("verify").and_then(Value::as_bool);
    let insecure = verify
        .map(|v| !v)
        .or_else(|| top.get("insecure").map(|v| truthy(&v)));
    build(name, &Yaml(auth), &top, insecure.unwrap_or(false))
}

pub(super) fn from_env(env: &Environment) -> Result<CloudConfig, ConfigError> {
    let source = Env(env);
    let insecure = source.get("insecure").is_some_and(|v| truthy(&v));
    build("envvars", &source, &source, insecure)
}

fn build(
    name: &str,
    auth: &dyn Source,
    top: &dyn Source,
    insecure: bool,
) -> Result<CloudConfig, ConfigError> {
    let invalid = |problem: &str| ConfigError::Invalid {
        cloud: name.to_owned(),
        problem: problem.to_owned(),
    };
    let auth_url = auth
        .get("auth_url")
        .ok_or_else(|| invalid("auth_url is missing"))?;
    let (credentials, scope) = credentials(auth, top).map_err(|p| invalid(&p))?;
    Ok(CloudConfig {
        name: name.to_owned(),
        auth_url,
        credentials,
        scope,
        region: top.get("region_name"),
        interface: interface(top).map_err(|p| invalid(&p))?,
        tls: Tls {
            cacert: top.get("cacert").map(PathBuf::from),
            ca_bundle: None,
            insecure,
        },
    })
}

/// The credentials `auth_type` names (an application credential's secret implies its
/// type), and the scope they ask for; `Err` says what is wrong.
fn credentials(auth: &dyn Source, top: &dyn Source) -> Result<(Credentials, Scope), String> {
    let auth_type = top.get("auth_type").unwrap_or_else(|| {
        let app = auth.get("application_credential_secret").is_some();
        if app {
            "v3applicationcredential"
        } else {
            "password"
        }
        .to_owned()
    });
    let user_domain = id_or_name(auth, "user_domain_id", "user_domain_name")
        .or_else(|| id_or_name(auth, "default_domain_id", "default_domain_name"));
    let user = id_or_name(auth, "user_id", "username");
    match auth_type.as_str() {
        "password" | "v3password" => {
            let user = user.ok_or("password auth needs username or user_id")?;
            let password = auth
                .get("password")
                .ok_or("password auth needs a password")?;
            let user_domain = default_domain(&user, user_domain);
            let credentials = Credentials::Password {
                user,
                user_domain,
                password: Secret::new(password),
            };
            Ok((credentials, scope(auth)))
        }
        "v3applicationcredential" | "applicationcredential" => {
            application_credential(auth, user, user_domain).map(|c| (c, Scope::Unscoped))
        }
        other => Err(format!(
            "auth_type {other:?} is not supported (use password or v3applicationcredential)"
        )),
    }
}

fn application_credential(
    auth: &dyn Source,
    user: Option<IdOrName>,
    user_domain: Option<IdOrName>,
) -> Result<Credentials, String> {
    let secret = auth
        .get("application_credential_secret")
        .ok_or("application credential auth needs application_credential_secret")?;
    let id = auth.get("application_credential_id");
    let name = auth.get("application_credential_name");
    if id.is_none() && (name.is_none() || user.is_none()) {
        return Err(
            "application credential auth needs application_credential_id, or its name \
                    with username or user_id"
                .to_owned(),
        );
    }
    let user_domain = user.as_ref().and_then(|u| default_domain(u, user_domain));
    Ok(Credentials::ApplicationCredential {
        id,
        name,
        user,
        user_domain,
        secret: Secret::new(secret),
    })
}

/// The endpoint interface (`interface`, or the older `endpoint_type`).
fn interface(top: &dyn Source) -> Result<Interface, String> {
    match top
        .get("interface")
        .or_else(|| top.get("endpoint_type"))
        .as_deref()
    {
        None | Some("public") | Some("publicURL") => Ok(Interface::Public),
        Some("internal") | Some("internalURL") => Ok(Interface::Internal),
        Some("admin") | Some("adminURL") => Ok(Interface::Admin),
        Some(other) => Err(format!(
            "interface {other:?} is not public, internal or admin"
        )),
    }
}

fn id_or_name(source: &dyn Source, id_key: &str, name_key: &str) -> Option<IdOrName> {
    source
        .get(id_key)
        .map(IdOrName::Id)
        .or_else(|| source.get(name_key).map(IdOrName::Name))
}

/// A user or project named (not identified) needs a domain; like keystoneauth and osauth,
/// default to the `Default` domain.
fn default_domain(subject: &IdOrName, domain: Option<IdOrName>) -> Option<IdOrName> {
    match subject {
        IdOrName::Id(_) => domain,
        IdOrName::Name(_) => domain.or_else(|| Some(IdOrName::Name("Default".to_owned()))),
    }
}

fn scope(auth: &dyn Source) -> Scope {
    let project = id_or_name(auth, "project_id", "project_name")
        .or_else(|| id_or_name(auth, "tenant_id", "tenant_name"));
    if let Some(project) = project {
        let domain = id_or_name(auth, "project_domain_id", "project_domain_name")
            .or_else(|| id_or_name(auth, "default_domain_id", "default_domain_name"));
        let domain = default_domain(&project, domain);
        return Scope::Project { project, domain };
    }
    match id_or_name(auth, "domain_id", "domain_name") {
        Some(domain) => Scope::Domain(domain),
        None => Scope::Unscoped,
    }
}

fn truthy(v: &str) -> bool {
    matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}
