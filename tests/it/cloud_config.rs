//! How the operator finds its cloud: clouds.yaml search path, explicit path,
//! `OS_CLIENT_CONFIG_FILE`, `--cloud`/`OS_CLOUD`, secure.yaml, `OS_*` variables,
//! TLS switches, and "no cloud configured". Files live in a fresh temporary directory;
//! the environment is a value, so no test touches the process environment.
#![allow(clippy::unwrap_used)]

use crate::cloud_support;

use std::path::{Path, PathBuf};

use cloud_support::temp_dir;
use verda_operator::cloud::config::{Credentials, IdOrName, Interface, Scope};
use verda_operator::cloud::{CloudSelection, CloudSource, ConfigError, Environment, resolve};

const ONE: &str = "clouds:\n  alpha:\n    auth:\n      auth_url: https://keystone.example/v3\n      username: demo\n      password: s3cret-alpha\n      project_name: demo\n    region_name: RegionOne\n";

fn env(dir: &Path, vars: &[(&str, &str)]) -> Environment {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Environment::new(
        vars,
        dir.join("cwd"),
        Some(dir.join("home")),
        dir.join("etc"),
    )
}

fn write(path: PathBuf, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn named(cloud: &str) -> CloudSelection {
    CloudSelection {
        cloud: Some(cloud.into()),
        config_file: None,
    }
}

fn configured(source: Result<CloudSource, ConfigError>) -> verda_operator::cloud::CloudConfig {
    match source.unwrap() {
        CloudSource::Configured(c) => c,
        CloudSource::NotConfigured => panic!("expected a cloud"),
    }
}

#[test]
fn nothing_anywhere_means_no_cloud_configured() {
    let dir = temp_dir("cfg-none");
    assert_eq!(
        resolve(&CloudSelection::default(), &env(&dir, &[])).unwrap(),
        CloudSource::NotConfigured
    );
}

#[test]
fn search_order_is_cwd_then_home_then_etc() {
    let dir = temp_dir("cfg-order");
    let e = env(&dir, &[("OS_CLOUD", "alpha")]);
    write(
        dir.join("etc/clouds.yaml"),
        &ONE.replace("RegionOne", "from-etc"),
    );
    assert_eq!(
        configured(resolve(&CloudSelection::default(), &e))
            .region
            .as_deref(),
        Some("from-etc")
    );
    write(
        dir.join("home/.config/openstack/clouds.yaml"),
        &ONE.replace("RegionOne", "from-home"),
    );
    assert_eq!(
        configured(resolve(&CloudSelection::default(), &e))
            .region
            .as_deref(),
        Some("from-home")
    );
    write(
        dir.join("cwd/clouds.yaml"),
        &ONE.replace("RegionOne", "from-cwd"),
    );
    assert_eq!(
        configured(resolve(&CloudSelection::default(), &e))
            .region
            .as_deref(),
        Some("from-cwd")
    );
}

#[test]
fn explicit_path_beats_os_client_config_file_which_beats_the_search_path() {
    let dir = temp_dir("cfg-explicit");
    write(
        dir.join("cwd/clouds.yaml"),
        &ONE.replace("RegionOne", "from-cwd"),
    );
    let env_file = write(
        dir.join("x/env.yaml"),
        &ONE.replace("RegionOne", "from-env-var"),
    );
    let flag_file = write(
        dir.join("y/flag.yaml"),
        &ONE.replace("RegionOne", "from-flag"),
    );
    let e = env(
        &dir,
        &[("OS_CLIENT_CONFIG_FILE", env_file.to_str().unwrap())],
    );
    assert_eq!(
        configured(resolve(&named("alpha"), &e)).region.as_deref(),
        Some("from-env-var")
    );
    let sel = CloudSelection {
        cloud: Some("alpha".into()),
        config_file: Some(flag_file),
    };
    assert_eq!(
        configured(resolve(&sel, &e)).region.as_deref(),
        Some("from-flag")
    );
    let missing = CloudSelection {
        cloud: None,
        config_file: Some(dir.join("nope.yaml")),
    };
    assert!(matches!(
        resolve(&missing, &e),
        Err(ConfigError::FileMissing { .. })
    ));
}

#[test]
fn cloud_flag_beats_os_cloud_and_unknown_names_list_the_available_ones() {
    let dir = temp_dir("cfg-names");
    let two = format!(
        "{ONE}  beta:\n    auth:\n      auth_url: https://b.example\n      username: u\n      password: p\n    region_name: B\n"
    );
    write(dir.join("cwd/clouds.yaml"), &two);
    let e = env(&dir, &[("OS_CLOUD", "alpha")]);
    assert_eq!(configured(resolve(&named("beta"), &e)).name, "beta");
    assert_eq!(
        configured(resolve(&CloudSelection::default(), &e)).name,
        "alpha"
    );
    let err = resolve(&named("gamma"), &e).unwrap_err();
    assert!(err.to_string().contains("available: alpha, beta"), "{err}");
    let err = resolve(&CloudSelection::default(), &env(&dir, &[])).unwrap_err();
    assert!(matches!(err, ConfigError::ChooseCloud { .. }), "{err}");
}

#[test]
fn a_named_cloud_without_any_clouds_yaml_is_an_error_not_the_simulator() {
    let dir = temp_dir("cfg-named-missing");
    let err = resolve(&named("alpha"), &env(&dir, &[])).unwrap_err();
    assert!(matches!(err, ConfigError::NoCloudsFile { .. }), "{err}");
}

#[test]
fn password_entry_resolves_scope_domains_region_and_interface() {
    let dir = temp_dir("cfg-password");
    let yaml = "clouds:\n  c:\n    auth:\n      auth_url: https://k.example:5000\n      user_id: u-1\n      password: 123456\n      project_id: p-1\n    region_name: tokyo1\n    interface: internal\n    cacert: /etc/ssl/custom.pem\n";
    write(dir.join("cwd/clouds.yaml"), yaml);
    let c = configured(resolve(&named("c"), &env(&dir, &[])));
    assert_eq!(c.auth_url, "https://k.example:5000");
    let Credentials::Password {
        user,
        user_domain,
        password,
    } = &c.credentials
    else {
        panic!()
    };
    assert_eq!(user, &IdOrName::Id("u-1".into()));
    assert_eq!(user_domain, &None, "a user ID needs no domain");
    assert_eq!(
        password.expose(),
        "123456",
        "a numeric YAML password is still a string"
    );
    assert_eq!(
        c.scope,
        Scope::Project {
            project: IdOrName::Id("p-1".into()),
            domain: None
        }
    );
    assert_eq!(c.interface, Interface::Internal);
    assert_eq!(c.tls.cacert, Some(PathBuf::from("/etc/ssl/custom.pem")));
    assert!(!c.tls.insecure);
    assert!(
        !format!("{c:?}").contains("123456"),
        "Debug hides the password"
    );
}

#[test]
fn secure_yaml_next_to_clouds_yaml_supplies_the_password() {
    let dir = temp_dir("cfg-secure");
    write(
        dir.join("cwd/clouds.yaml"),
        &ONE.replace("      password: s3cret-alpha\n", ""),
    );
    write(
        dir.join("cwd/secure.yaml"),
        "clouds:\n  alpha:\n    auth:\n      password: from-secure\n",
    );
    let c = configured(resolve(&named("alpha"), &env(&dir, &[])));
    let Credentials::Password {
        password,
        user,
        user_domain,
    } = &c.credentials
    else {
        panic!()
    };
    assert_eq!(password.expose(), "from-secure");
    assert_eq!(user, &IdOrName::Name("demo".into()));
    assert_eq!(user_domain, &Some(IdOrName::Name("Default".into())));
}

#[test]
fn verify_false_is_the_explicit_insecure_switch() {
    let dir = temp_dir("cfg-insecure");
    write(
        dir.join("cwd/clouds.yaml"),
        &format!("{ONE}    verify: false\n"),
    );
    assert!(
        configured(resolve(&named("alpha"), &env(&dir, &[])))
            .tls
            .insecure
    );
}

#[test]
fn os_variables_describe_a_cloud_without_clouds_yaml() {
    let dir = temp_dir("cfg-env");
    let e = env(
        &dir,
        &[
            ("OS_AUTH_URL", "https://k.example/v3"),
            ("OS_USERNAME", "demo"),
            ("OS_PASSWORD", "env-secret"),
            ("OS_PROJECT_NAME", "demo"),
            ("OS_USER_DOMAIN_NAME", "Users"),
            ("OS_PROJECT_DOMAIN_ID", "default"),
            ("OS_REGION_NAME", "tokyo1"),
            ("OS_INTERFACE", "admin"),
            ("OS_INSECURE", "true"),
        ],
    );
    let c = configured(resolve(&CloudSelection::default(), &e));
    assert_eq!(c.name, "envvars");
    assert_eq!(c.region.as_deref(), Some("tokyo1"));
    assert_eq!(c.interface, Interface::Admin);
    assert!(c.tls.insecure);
    assert_eq!(
        c.scope,
        Scope::Project {
            project: IdOrName::Name("demo".into()),
            domain: Some(IdOrName::Id("default".into()))
        }
    );
    let Credentials::Password { user_domain, .. } = &c.credentials else {
        panic!()
    };
    assert_eq!(user_domain, &Some(IdOrName::Name("Users".into())));
}

#[test]
fn application_credentials_by_id_or_by_name_with_user() {
    let dir = temp_dir("cfg-appcred");
    let by_id = env(
        &dir,
        &[
            ("OS_AUTH_URL", "https://k"),
            ("OS_APPLICATION_CREDENTIAL_ID", "ac-1"),
            ("OS_APPLICATION_CREDENTIAL_SECRET", "sh"),
        ],
    );
    let c = configured(resolve(&CloudSelection::default(), &by_id));
    assert!(
        matches!(&c.credentials, Credentials::ApplicationCredential { id: Some(id), .. } if id == "ac-1")
    );
    assert_eq!(c.scope, Scope::Unscoped);
    let no_user = env(
        &dir,
        &[
            ("OS_AUTH_URL", "https://k"),
            ("OS_APPLICATION_CREDENTIAL_NAME", "op"),
            ("OS_APPLICATION_CREDENTIAL_SECRET", "sh-secret"),
        ],
    );
    let err = resolve(&CloudSelection::default(), &no_user).unwrap_err();
    assert!(
        err.to_string().contains("application_credential_id"),
        "{err}"
    );
    assert!(!err.to_string().contains("sh-secret"));
}

#[test]
fn configuration_errors_name_keys_never_values() {
    let dir = temp_dir("cfg-errors");
    write(
        dir.join("cwd/clouds.yaml"),
        "clouds:\n  c:\n    auth:\n      auth_url: https://k\n      password: leak-me-not\n",
    );
    let err = resolve(&named("c"), &env(&dir, &[])).unwrap_err();
    assert!(err.to_string().contains("username or user_id"), "{err}");
    assert!(!err.to_string().contains("leak-me-not"));
    write(
        dir.join("cwd/clouds.yaml"),
        "clouds:\n  c:\n    auth: [password: leak-me-not\n",
    );
    let err = resolve(&named("c"), &env(&dir, &[])).unwrap_err();
    assert!(!err.to_string().contains("leak-me-not"), "{err}");
}
