//! Which cloud the operator talks to, resolved the way every OpenStack tool does it.
//!
//! Order: the cloud name comes from `--cloud` or `OS_CLOUD`; the `clouds.yaml` file from
//! an explicit path, else `OS_CLIENT_CONFIG_FILE`, else the first of `./clouds.yaml`,
//! `~/.config/openstack/clouds.yaml`, `/etc/openstack/clouds.yaml`; a `secure.yaml` next
//! to it (or `OS_CLIENT_SECURE_FILE`) is merged in. Without a cloud name, `OS_AUTH_URL`
//! and the other `OS_*` variables describe the cloud; else a clouds.yaml with exactly one
//! cloud is used. Nothing of that: [`CloudSource::NotConfigured`], on which `run` starts
//! the embedded simulator.
//!
//! YAML is read as untyped values and picked apart by hand so that no parse error can
//! echo a password; every secret is a [`Secret`] whose `Debug` prints `<redacted>`.
//! Not here: talking to Keystone (`auth.rs`).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// A YAML mapping of a clouds.yaml, read into JSON's model: its keys are names.
type Mapping = Map<String, Value>;

mod entry;
mod parse;

pub use entry::*;
pub use parse::ConfigError;

/// Resolve the cloud to use; see the module documentation for the order.
pub fn resolve(selection: &CloudSelection, env: &Environment) -> Result<CloudSource, ConfigError> {
    let cloud = selection
        .cloud
        .clone()
        .or_else(|| env.var("OS_CLOUD").map(str::to_owned));
    let explicit = selection
        .config_file
        .clone()
        .or_else(|| env.var("OS_CLIENT_CONFIG_FILE").map(PathBuf::from));
    if cloud.is_none() && env.var("OS_AUTH_URL").is_some() {
        return parse::from_env(env).map(CloudSource::Configured);
    }
    let file = match &explicit {
        Some(path) if path.is_file() => Some(path.clone()),
        Some(path) => return Err(ConfigError::FileMissing { path: path.clone() }),
        None => find_file(env, "clouds.yaml"),
    };
    let Some(file) = file else {
        return match cloud {
            Some(name) => Err(ConfigError::NoCloudsFile {
                cloud: name,
                searched: env
                    .search_dirs()
                    .iter()
                    .map(|d| d.join("clouds.yaml"))
                    .collect(),
            }),
            None => Ok(CloudSource::NotConfigured),
        };
    };
    let mut clouds = read_clouds(&file)?;
    let secure = env
        .var("OS_CLIENT_SECURE_FILE")
        .map(PathBuf::from)
        .or_else(|| file.parent().map(|d| d.join("secure.yaml")))
        .filter(|p| p.is_file());
    if let Some(secure) = secure {
        merge(&mut clouds, read_clouds(&secure)?);
    }
    pick_cloud(&clouds, cloud.as_deref(), &file).map(CloudSource::Configured)
}

/// The cloud `cloud` of `clouds` (read from `file`), or its only one.
fn pick_cloud(
    clouds: &Mapping,
    cloud: Option<&str>,
    file: &Path,
) -> Result<CloudConfig, ConfigError> {
    let name = match cloud {
        Some(name) => name.to_owned(),
        None => single_cloud_name(clouds, file)?,
    };
    let Some(entry) = clouds.get(name.as_str()).and_then(Value::as_object) else {
        return Err(ConfigError::NoSuchCloud {
            cloud: name,
            file: file.to_owned(),
            available: cloud_names(clouds),
        });
    };
    parse::from_entry(&name, entry)
}

fn find_file(env: &Environment, file: &str) -> Option<PathBuf> {
    env.search_dirs()
        .into_iter()
        .map(|d| d.join(file))
        .find(|p| p.is_file())
}

/// The `clouds:` mapping of a clouds.yaml or secure.yaml.
fn read_clouds(path: &Path) -> Result<Mapping, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    parse_clouds(&text, path)
}

fn parse_clouds(text: &str, origin: &Path) -> Result<Mapping, ConfigError> {
    let unreadable = |reason: String| ConfigError::Read {
        path: origin.to_owned(),
        reason,
    };
    // Syntax errors carry a position, never a scalar value.
    let root: Value = serde_saphyr::from_str(text).map_err(|e| {
        unreadable(e.location().map_or_else(
            || "not valid YAML".to_owned(),
            |l| format!("not valid YAML at line {} column {}", l.line(), l.column()),
        ))
    })?;
    match root.get("clouds") {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => Err(unreadable("no `clouds:` mapping".to_owned())),
    }
}

/// One cloud of a clouds.yaml given as text (a credentials Secret's), named by `cloud`
/// or the file's only one; `origin` names the text in errors. A `cacert` path is
/// refused: such a file would be read from the operator's own file system.
pub fn from_clouds_text(
    text: &str,
    cloud: Option<&str>,
    origin: &str,
) -> Result<CloudConfig, ConfigError> {
    let origin = PathBuf::from(origin);
    let config = pick_cloud(&parse_clouds(text, &origin)?, cloud, &origin)?;
    if config.tls.cacert.is_some() {
        return Err(ConfigError::Invalid {
            cloud: config.name,
            problem:
                "`cacert` names a file; put the CA bundle in the Secret's `cacert` key instead"
                    .to_owned(),
        });
    }
    Ok(config)
}

fn cloud_names(clouds: &Mapping) -> Vec<String> {
    clouds.keys().cloned().collect()
}

fn single_cloud_name(clouds: &Mapping, file: &Path) -> Result<String, ConfigError> {
    match cloud_names(clouds).as_slice() {
        [only] => Ok(only.clone()),
        names => Err(ConfigError::ChooseCloud {
            file: file.to_owned(),
            available: names.to_vec(),
        }),
    }
}

/// Deep-merge `overlay` into `base` (secure.yaml over clouds.yaml).
fn merge(base: &mut Mapping, overlay: Mapping) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
