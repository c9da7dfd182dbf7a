//! Property tests of what people write by hand: the configuration file and a
//! credentials Secret's clouds.yaml. Whatever the text, parsing gives a value within
//! range or an error, never a panic, and a password never shows in an error.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use verda_operator::cloud::config::from_clouds_text;
use verda_operator::config::Config;
use verda_operator::config::duration::RESYNC_PERIOD;

/// Values of every YAML shape, including ones no key takes.
fn yaml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_owned()),
        Just("-1".to_owned()),
        Just("\"0\"".to_owned()),
        Just("1e400".to_owned()),
        Just(".nan".to_owned()),
        Just("~".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("[a, {b: c}]".to_owned()),
        Just("18446744073709551616".to_owned()),
        "[0-9]{1,22}",
        "[0-9]{1,6}(ms|s|m|h|d| minutes|y)",
        "\"[ -~]{0,12}\"",
        "[a-z*/_-]{0,12}",
    ]
}

/// A configuration file of known and unknown keys, nested one level deep.
fn config_text() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("resyncPeriod"),
        Just("clusterName"),
        Just("defaults"),
        Just("loadBalancer"),
        Just("credentials"),
        Just("requestBudget"),
        Just("unknownKey"),
    ];
    let inner = prop_oneof![
        Just("networks"),
        Just("vipSubnets"),
        Just("floatingNetwork"),
        Just("flavors"),
        Just("requestsPerSecond"),
        Just("burst"),
        Just("defaultSecretName"),
        Just("allowOperatorCredentials"),
        Just("subnet"),
    ];
    let entry = (key, prop::option::of((inner, yaml_value())), yaml_value()).prop_map(
        |(key, nested, value)| match nested {
            Some((inner, v)) => format!("{key}:\n  {inner}: {v}\n"),
            None => format!("{key}: {value}\n"),
        },
    );
    proptest::collection::vec(entry, 0..5).prop_map(|entries| entries.concat())
}

/// A clouds.yaml whose one cloud holds any of the keys clouds.yaml files carry.
fn clouds_text(password: &'static str) -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("auth_url"),
        Just("username"),
        Just("user_id"),
        Just("project_name"),
        Just("project_id"),
        Just("user_domain_name"),
        Just("project_domain_id"),
        Just("application_credential_id"),
        Just("application_credential_name"),
        Just("token"),
    ];
    let top = prop_oneof![
        Just("auth_type"),
        Just("interface"),
        Just("region_name"),
        Just("verify"),
        Just("cacert"),
        Just("identity_api_version"),
    ];
    (
        proptest::collection::vec((key, yaml_value()), 0..6),
        proptest::collection::vec((top, yaml_value()), 0..3),
        any::<bool>(),
    )
        .prop_map(move |(auth, top, secret)| {
            let mut text = "clouds:\n  openstack:\n    auth:\n".to_owned();
            for (k, v) in auth {
                text.push_str(&format!("      {k}: {v}\n"));
            }
            let secret_key = if secret {
                "password"
            } else {
                "application_credential_secret"
            };
            text.push_str(&format!("      {secret_key}: {password}\n"));
            for (k, v) in top {
                text.push_str(&format!("    {k}: {v}\n"));
            }
            text
        })
}

proptest! {
    #[test]
    fn any_configuration_text_gives_a_checked_value_or_an_error(text in "\\PC{0,120}") {
        if let Ok(config) = Config::parse(&text) {
            prop_assert!(RESYNC_PERIOD.min <= config.resync_period);
            prop_assert!(config.resync_period <= RESYNC_PERIOD.max);
        }
    }

    #[test]
    fn any_configuration_file_gives_a_checked_value_or_an_error(text in config_text()) {
        match Config::parse(&text) {
            Ok(config) => {
                prop_assert!(RESYNC_PERIOD.min <= config.resync_period);
                prop_assert!(config.resync_period <= RESYNC_PERIOD.max);
                let budget = config.request_budget.spec();
                prop_assert!(budget.requests_per_second > 0.0 && budget.requests_per_second.is_finite());
                prop_assert!(budget.burst >= 1);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn any_clouds_yaml_text_gives_a_cloud_or_an_error(text in "\\PC{0,160}") {
        let _ = from_clouds_text(&text, None, "clouds.yaml");
    }

    #[test]
    fn a_clouds_yaml_error_never_shows_the_password(text in clouds_text("pw-Zq81-never-shown")) {
        match from_clouds_text(&text, None, "clouds.yaml") {
            Ok(cloud) => {
                let shown = format!("{cloud:?}");
                prop_assert!(!shown.contains("pw-Zq81-never-shown"));
            }
            Err(e) => prop_assert!(!e.to_string().contains("pw-Zq81-never-shown"), "{}", e),
        }
    }
}
