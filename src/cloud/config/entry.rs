//! What a cloud resolves to: its entry (endpoint, credentials, scope, region, TLS) and
//! the environment it was resolved in. Every secret is a [`Secret`] whose `Debug`
//! prints `<redacted>`.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

/// A password or application-credential secret. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The secret itself: only the Keystone request body calls this.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdOrName {
    Id(String),
    Name(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credentials {
    Password {
        user: IdOrName,
        user_domain: Option<IdOrName>,
        password: Secret,
    },
    /// By ID, or by name together with its user.
    ApplicationCredential {
        id: Option<String>,
        name: Option<String>,
        user: Option<IdOrName>,
        user_domain: Option<IdOrName>,
        secret: Secret,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    Project {
        project: IdOrName,
        domain: Option<IdOrName>,
    },
    Domain(IdOrName),
    /// Application credentials carry their own scope.
    Unscoped,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Interface {
    #[default]
    Public,
    Internal,
    Admin,
}

impl Interface {
    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Public => "public",
            Interface::Internal => "internal",
            Interface::Admin => "admin",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tls {
    /// Extra CA bundle (PEM) trusted besides the system roots.
    pub cacert: Option<PathBuf>,
    /// A CA bundle (PEM) given as data, from a credentials Secret.
    pub ca_bundle: Option<Vec<u8>>,
    /// `verify: false` / `OS_INSECURE=true`: no certificate verification at all.
    pub insecure: bool,
}

/// One fully resolved cloud.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudConfig {
    /// The clouds.yaml entry name, or `envvars` for `OS_*` variables.
    pub name: String,
    pub auth_url: String,
    pub credentials: Credentials,
    pub scope: Scope,
    pub region: Option<String>,
    pub interface: Interface,
    pub tls: Tls,
}

/// What the command line asked for.
#[derive(Clone, Debug, Default)]
pub struct CloudSelection {
    /// `--cloud NAME`; falls back to `OS_CLOUD`.
    pub cloud: Option<String>,
    /// An explicit clouds.yaml path; falls back to `OS_CLIENT_CONFIG_FILE`.
    pub config_file: Option<PathBuf>,
}

// Resolved once at start-up: the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloudSource {
    Configured(CloudConfig),
    /// No cloud name, no `OS_AUTH_URL`, no clouds.yaml anywhere.
    NotConfigured,
}

/// The process environment as resolution sees it (a value, so tests need no globals).
#[derive(Clone, Debug)]
pub struct Environment {
    vars: HashMap<String, String>,
    cwd: PathBuf,
    home: Option<PathBuf>,
    system_dir: PathBuf,
}

impl Environment {
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars().collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            home: std::env::var_os("HOME").map(PathBuf::from),
            system_dir: PathBuf::from("/etc/openstack"),
        }
    }

    /// A synthetic environment; `/etc/openstack` becomes `system_dir`.
    pub fn new<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
        cwd: impl Into<PathBuf>,
        home: Option<PathBuf>,
        system_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            cwd: cwd.into(),
            home,
            system_dir: system_dir.into(),
        }
    }

    pub(crate) fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    pub(super) fn search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.cwd.clone()];
        if let Some(home) = &self.home {
            dirs.push(home.join(".config/openstack"));
        }
        dirs.push(self.system_dir.clone());
        dirs
    }
}
