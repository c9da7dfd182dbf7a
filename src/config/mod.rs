//! The operator's configuration file (`--config PATH`): everything about the cloud's
//! layout. Every key is optional; the defaults are those of docs/src/configuration.md.
//!
//! Only parsing and lookups live here. A name that does not exist in the cloud is not
//! an error at start-up: the object that needs it reports it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::cloud::budget::BudgetSpec;
use crate::cloud::owner::ClusterId;

/// The parsed configuration.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    /// Period of the drift check of every object.
    #[serde(deserialize_with = "resync_period")]
    pub resync_period: Duration,
    pub defaults: Defaults,
    pub load_balancer: LoadBalancerConfig,
    pub credentials: CredentialsConfig,
    /// The name recorded on cloud resources as their cluster's; absent: the UID of the
    /// cluster's `kube-system` namespace.
    #[serde(deserialize_with = "cluster_name")]
    pub cluster_name: Option<ClusterId>,
    /// How many requests per second each cloud project gets from the operator.
    pub request_budget: RequestBudget,
    /// How long a server or load balancer in ERROR is left for someone to look at
    /// before it is replaced (doubling with each replacement of the same object).
    #[serde(deserialize_with = "error_replace_delay")]
    pub error_replace_delay: Duration,
    /// The Prometheus autoscaled groups' `prometheus` metrics are asked of.
    #[serde(deserialize_with = "prometheus")]
    pub prometheus: Option<PrometheusConfig>,
}

/// `prometheus`: where PromQL metrics are evaluated, and how the operator proves who it is.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusConfig {
    /// `http://` or `https://` address of its HTTP API (without `/api/v1`).
    pub url: String,
    /// A file holding a bearer token sent with each query (a mounted Secret's key); read at
    /// each query, never logged.
    #[serde(default)]
    pub bearer_token_file: Option<std::path::PathBuf>,
}

fn prometheus<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<PrometheusConfig>, D::Error> {
    let config = PrometheusConfig::deserialize(d)?;
    let url = url::Url::parse(&config.url).map_err(|e| {
        serde::de::Error::custom(format!("prometheus.url {:?} is not a URL: {e}", config.url))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(serde::de::Error::custom(format!(
            "prometheus.url {:?} must be http:// or https://",
            config.url
        )));
    }
    Ok(Some(config))
}

/// `requestBudget`: a token bucket per cloud project, shared by every controller.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RequestBudget {
    /// Sustained requests per second (more than 0).
    #[serde(deserialize_with = "positive")]
    pub requests_per_second: f64,
    /// Requests that may go at once after a quiet spell (at least 1).
    #[serde(deserialize_with = "burst")]
    pub burst: u32,
}

impl Default for RequestBudget {
    fn default() -> Self {
        let spec = BudgetSpec::default();
        Self {
            requests_per_second: spec.requests_per_second,
            burst: spec.burst,
        }
    }
}

impl RequestBudget {
    pub fn spec(&self) -> BudgetSpec {
        BudgetSpec {
            requests_per_second: self.requests_per_second,
            burst: self.burst,
        }
    }
}

/// The most requests per second a project's budget may allow: far above what any
/// OpenStack API server takes (benchmarks set it as "no budget"); more is a mistake.
const MAX_REQUESTS_PER_SECOND: f64 = 1_000_000.0;
/// The largest burst a budget may allow.
const MAX_BURST: u32 = 1_000_000;

fn positive<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let n = f64::deserialize(d)?;
    if n > 0.0 && n <= MAX_REQUESTS_PER_SECOND {
        Ok(n)
    } else {
        Err(serde::de::Error::custom(format!(
            "requestsPerSecond {n} is out of range: use more than 0 and at most {MAX_REQUESTS_PER_SECOND}"
        )))
    }
}

fn burst<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = u64::deserialize(d)?;
    match u32::try_from(n) {
        Ok(n @ 1..=MAX_BURST) => Ok(n),
        _ => Err(serde::de::Error::custom(format!(
            "burst {n} is out of range: use 1 to {MAX_BURST}"
        ))),
    }
}

fn resync_period<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    duration::RESYNC_PERIOD
        .parse(&duration::Written::deserialize(d)?.text())
        .map_err(serde::de::Error::custom)
}

fn error_replace_delay<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    duration::ERROR_REPLACE_DELAY
        .parse(&duration::Written::deserialize(d)?.text())
        .map_err(serde::de::Error::custom)
}

fn cluster_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ClusterId>, D::Error> {
    let name = String::deserialize(d)?;
    ClusterId::new(name)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// Whose OpenStack credentials an object acts with, when its spec names none.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CredentialsConfig {
    /// The Secret, in the object's namespace, that holds a namespace's default
    /// credentials.
    pub default_secret_name: String,
    /// The cloud of that Secret's clouds.yaml; absent: the file's only cloud.
    pub default_cloud_name: Option<String>,
    /// Whether objects with no credentials of their own or of their namespace act with
    /// the operator's credentials. A platform shared by several teams turns this off.
    pub allow_operator_credentials: bool,
}

impl Default for CredentialsConfig {
    fn default() -> Self {
        Self {
            default_secret_name: "verda-cloud-credentials".to_owned(),
            default_cloud_name: None,
            allow_operator_credentials: true,
        }
    }
}

/// Defaults for fields a VirtualMachine may leave out.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Defaults {
    /// Networks (name or ID) of servers whose spec names none.
    pub networks: Vec<String>,
}

/// Where load balancers go.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LoadBalancerConfig {
    /// VIP subnet rules; the first match wins.
    pub vip_subnets: Vec<VipSubnetRule>,
    /// External network for floating IPs of `vipType: public`.
    pub floating_network: String,
    /// serviceType → Octavia flavor name ("" = the cloud's default flavor).
    pub flavors: BTreeMap<String, String>,
}

/// One VIP subnet rule: `"*"` matches anything.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VipSubnetRule {
    #[serde(default = "any")]
    pub region: String,
    #[serde(default = "any")]
    pub zone: String,
    #[serde(default = "any")]
    pub vip_type: String,
    pub subnet: String,
}

fn any() -> String {
    "*".to_owned()
}

impl Default for Config {
    fn default() -> Self {
        Self {
            resync_period: Duration::from_secs(300),
            defaults: Defaults::default(),
            load_balancer: LoadBalancerConfig::default(),
            credentials: CredentialsConfig::default(),
            cluster_name: None,
            request_budget: RequestBudget::default(),
            error_replace_delay: Duration::from_secs(30),
            prometheus: None,
        }
    }
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            networks: vec!["private".to_owned()],
        }
    }
}

impl Default for LoadBalancerConfig {
    fn default() -> Self {
        Self {
            vip_subnets: vec![VipSubnetRule {
                region: any(),
                zone: any(),
                vip_type: "private".to_owned(),
                subnet: "private-subnet".to_owned(),
            }],
            floating_network: "public".to_owned(),
            flavors: BTreeMap::from([("generic".to_owned(), String::new())]),
        }
    }
}

/// Errors of reading the configuration file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid configuration file {path}: {source}")]
    Parse {
        path: String,
        source: Box<serde_saphyr::Error>,
    },
}

impl Config {
    /// Reads `path`, or returns the defaults when no path is given.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|source| ConfigError::Parse {
            path: shown,
            source,
        })
    }

    /// Parses the YAML text of a configuration file; an empty text gives the defaults.
    pub fn parse(text: &str) -> Result<Self, Box<serde_saphyr::Error>> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        // The error on one line (where and what), without the parser's source excerpt.
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        serde_saphyr::from_str_with_options(text, options).map_err(Box::new)
    }
}

impl LoadBalancerConfig {
    /// The VIP subnet for a load balancer in `region`/`zone` of `vip_type`.
    pub fn vip_subnet(&self, region: &str, zone: &str, vip_type: &str) -> Option<&str> {
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        self.vip_subnets
            .iter()
            .find(|r| {
                matches(&r.region, region)
                    && matches(&r.zone, zone)
                    && matches(&r.vip_type, vip_type)
            })
            .map(|r| r.subnet.as_str())
    }
}

pub mod duration;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_gives_the_documented_defaults() {
        let config = Config::parse("").expect("empty is fine");
        assert_eq!(config.resync_period, Duration::from_secs(300));
        assert_eq!(config.defaults.networks, vec!["private"]);
        assert_eq!(config.load_balancer.floating_network, "public");
        assert_eq!(
            config
                .load_balancer
                .flavors
                .get("generic")
                .map(String::as_str),
            Some("")
        );
        assert_eq!(
            config.load_balancer.vip_subnet("tokyo1", "dev", "private"),
            Some("private-subnet")
        );
        assert_eq!(
            config.load_balancer.vip_subnet("tokyo1", "dev", "public"),
            None
        );
    }

    #[test]
    fn the_first_matching_vip_subnet_rule_wins() {
        let config = Config::parse(
            "resyncPeriod: 1m30s\nloadBalancer:\n  vipSubnets:\n    - {region: tokyo1, zone: dev, subnet: dev-net}\n    - {vipType: public, subnet: dmz}\n    - {subnet: fallback}\n",
        )
        .expect("valid");
        assert_eq!(config.resync_period, Duration::from_secs(90));
        let lb = &config.load_balancer;
        assert_eq!(lb.vip_subnet("tokyo1", "dev", "public"), Some("dev-net"));
        assert_eq!(lb.vip_subnet("RegionOne", "dev", "public"), Some("dmz"));
        assert_eq!(lb.vip_subnet("RegionOne", "x", "private"), Some("fallback"));
        // Keys left out keep their defaults.
        assert_eq!(config.defaults.networks, vec!["private"]);
        assert_eq!(config.error_replace_delay, Duration::from_secs(30));
    }

    #[test]
    fn a_prometheus_is_an_http_url_with_an_optional_token_file() {
        let set = Config::parse(
            "prometheus:\n  url: http://prometheus:9090\n  bearerTokenFile: /run/token",
        )
        .expect("valid");
        let prometheus = set.prometheus.expect("configured");
        assert_eq!(prometheus.url, "http://prometheus:9090");
        assert_eq!(prometheus.bearer_token_file, Some("/run/token".into()));
        assert_eq!(Config::parse("{}").expect("valid").prometheus, None);
        for wrong in [
            "prometheus: {url: 'not a url'}",
            "prometheus: {url: 'ftp://p'}",
            "prometheus: {}",
        ] {
            assert!(Config::parse(wrong).is_err(), "{wrong} refused");
        }
    }

    #[test]
    fn the_error_replace_delay_is_read_within_its_range() {
        let set = Config::parse("errorReplaceDelay: 5s").expect("valid");
        assert_eq!(set.error_replace_delay, Duration::from_secs(5));
        assert_eq!(
            crate::runtime::context::Timing::from_config(&set).error_replace,
            Duration::from_secs(5)
        );
        for wrong in ["errorReplaceDelay: 0s", "errorReplaceDelay: 2h"] {
            let refused = Config::parse(wrong).expect_err("out of range");
            assert!(refused.to_string().contains("1s to 1h"), "{refused}");
        }
    }

    #[test]
    fn bad_input_is_refused_with_a_message_naming_it() {
        let unknown = Config::parse("resyncPeriods: 5m").expect_err("typo refused");
        assert!(unknown.to_string().contains("resyncPeriods"), "{unknown}");
        let bad = Config::parse("resyncPeriod: 5 lightyears").expect_err("bad duration");
        assert!(bad.to_string().contains("invalid duration"), "{bad}");
        for zero in ["resyncPeriod: \"0\"", "resyncPeriod: 0", "resyncPeriod: 0s"] {
            let refused = Config::parse(zero).expect_err("zero refused");
            assert!(refused.to_string().contains("out of range"), "{refused}");
        }
        let long = Config::parse("resyncPeriod: 2d").expect_err("over a day refused");
        assert!(long.to_string().contains("\"2d\""), "{long}");
        let minutes = Config::parse("resyncPeriod: 5 minutes").expect("humantime's words");
        assert_eq!(minutes.resync_period, Duration::from_secs(300));
        let bare = Config::parse("resyncPeriod: 90").expect("bare seconds");
        assert_eq!(bare.resync_period, Duration::from_secs(90));
        let cluster = Config::parse("clusterName: prod/tokyo").expect_err("slash refused");
        assert!(cluster.to_string().contains("cluster name"), "{cluster}");
        let named = Config::parse("clusterName: prod-tokyo").expect("valid name");
        assert_eq!(
            named.cluster_name.map(|c| c.to_string()).as_deref(),
            Some("prod-tokyo")
        );
    }

    #[test]
    fn the_request_budget_defaults_to_twenty_per_second_and_refuses_zero() {
        let config = Config::parse("").expect("empty is fine");
        assert_eq!(
            config.request_budget.spec(),
            BudgetSpec {
                requests_per_second: 20.0,
                burst: 40
            }
        );
        let set = Config::parse("requestBudget: {requestsPerSecond: 5.5}").expect("valid");
        assert_eq!(set.request_budget.requests_per_second, 5.5);
        assert_eq!(
            set.request_budget.burst, 40,
            "the key left out keeps its default"
        );
        let zero = Config::parse("requestBudget: {requestsPerSecond: 0}").expect_err("zero");
        assert!(zero.to_string().contains("more than 0"), "{zero}");
        for bad in [
            "requestBudget: {requestsPerSecond: .nan}",
            "requestBudget: {requestsPerSecond: .inf}",
            "requestBudget: {requestsPerSecond: 1e9}",
            "requestBudget: {burst: 0}",
            "requestBudget: {burst: 5000000000}",
            "requestBudget: {burst: -1}",
        ] {
            let refused = Config::parse(bad).expect_err(bad);
            assert!(
                refused.to_string().contains("out of range")
                    || refused.to_string().contains("invalid"),
                "{bad}: {refused}"
            );
        }
        let typo = Config::parse("requestBudget: {rate: 5}").expect_err("unknown key");
        assert!(typo.to_string().contains("rate"), "{typo}");
    }
}
