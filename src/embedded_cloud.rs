//! The cloud `run` uses: the configured one, or, when none is configured at all, the
//! embedded OpenStack simulator (so the operator works on a laptop with no cloud). A
//! build without the simulator (feature `embedded-sim` off, as the container image is)
//! says that no cloud is configured and how to configure one.
//!
//! A configured but broken cloud (missing clouds.yaml entry, bad file) is an error,
//! never a silent fallback to the simulator.

use std::sync::Arc;

#[cfg(feature = "embedded-sim")]
use crate::cloud::CloudConfig;
use crate::cloud::budget::Budgets;
#[cfg(feature = "embedded-sim")]
use crate::cloud::config::{Credentials, IdOrName, Interface, Scope, Secret, Tls};
use crate::cloud::{
    ClientOptions, CloudSelection, CloudSource, Environment, OpenStackClient, resolve,
};
use crate::metrics::Metrics;
#[cfg(feature = "embedded-sim")]
use crate::sim::Simulator;

/// How the embedded simulator is sized, where there is one.
#[cfg(feature = "embedded-sim")]
pub use crate::sim::SimConfig as SimulatorSettings;

/// Without the embedded simulator there is nothing to size.
#[cfg(not(feature = "embedded-sim"))]
#[derive(Clone, Debug, Default)]
pub struct SimulatorSettings;

/// The simulator behind a connection to it; none in a build without it.
#[cfg(feature = "embedded-sim")]
pub type EmbeddedSimulator = Simulator;
#[cfg(not(feature = "embedded-sim"))]
pub type EmbeddedSimulator = std::convert::Infallible;

/// Why no cloud client could be built.
#[derive(Debug, thiserror::Error)]
pub enum CloudSetupError {
    #[error("OpenStack configuration: {0}")]
    Config(#[from] crate::cloud::ConfigError),
    #[error("OpenStack client: {0}")]
    Client(#[from] crate::cloud::CloudError),
    #[error("cannot start the embedded OpenStack simulator: {0}")]
    Simulator(std::io::Error),
    #[error(
        "no OpenStack cloud configured, and this build has no embedded simulator: set OS_CLOUD \
         to an entry of a clouds.yaml (OS_CLIENT_CONFIG_FILE, ./clouds.yaml, \
         ~/.config/openstack/clouds.yaml or /etc/openstack/clouds.yaml) or the OS_AUTH_URL \
         variables; in a cluster, the Secret named by the Deployment (verda-cloud)"
    )]
    NotConfigured,
}

/// The cloud client, and the simulator behind it when it is the embedded one (the
/// simulator stops when this is dropped).
pub struct CloudConnection {
    pub client: OpenStackClient,
    pub simulator: Option<EmbeddedSimulator>,
}

/// Resolves the cloud from flags and environment; starts the simulator when none is
/// configured, logging that first.
pub async fn connect(
    selection: &CloudSelection,
    simulator: &SimulatorSettings,
    metrics: Arc<Metrics>,
    budgets: Option<Arc<Budgets>>,
) -> Result<CloudConnection, CloudSetupError> {
    let options = ClientOptions {
        budgets,
        ..ClientOptions::default()
    };
    match resolve(selection, &Environment::from_process())? {
        CloudSource::Configured(config) => {
            tracing::info!(cloud = %config.name, auth_url = %config.auth_url, "using OpenStack cloud");
            Ok(CloudConnection {
                client: OpenStackClient::new(config, metrics, options)?,
                simulator: None,
            })
        }
        CloudSource::NotConfigured => embedded(simulator, metrics, options).await,
    }
}

/// Starts the embedded simulator and connects to it, saying so first.
#[cfg(feature = "embedded-sim")]
async fn embedded(
    settings: &SimulatorSettings,
    metrics: Arc<Metrics>,
    options: ClientOptions,
) -> Result<CloudConnection, CloudSetupError> {
    let simulator = Simulator::start(settings.clone())
        .await
        .map_err(CloudSetupError::Simulator)?;
    tracing::info!(
        auth_url = %simulator.auth_url(),
        "no OpenStack cloud configured: started the embedded OpenStack simulator"
    );
    let config = simulator_cloud(&simulator);
    Ok(CloudConnection {
        client: OpenStackClient::new(config, metrics, options)?,
        simulator: Some(simulator),
    })
}

/// A build without the simulator has no default cloud.
#[cfg(not(feature = "embedded-sim"))]
async fn embedded(
    _: &SimulatorSettings,
    _: Arc<Metrics>,
    _: ClientOptions,
) -> Result<CloudConnection, CloudSetupError> {
    Err(CloudSetupError::NotConfigured)
}

/// The simulator's cloud entry, as its clouds.yaml `verda-sim` describes it.
#[cfg(feature = "embedded-sim")]
pub fn simulator_cloud(simulator: &Simulator) -> CloudConfig {
    let c = simulator.credentials();
    CloudConfig {
        name: "verda-sim".to_owned(),
        auth_url: simulator.auth_url(),
        credentials: Credentials::Password {
            user: IdOrName::Name(c.username),
            user_domain: Some(IdOrName::Name(c.user_domain)),
            password: Secret::new(c.password),
        },
        scope: Scope::Project {
            project: IdOrName::Name(c.project_name),
            domain: Some(IdOrName::Name(c.project_domain)),
        },
        region: Some("RegionOne".to_owned()),
        interface: Interface::Public,
        tls: Tls::default(),
    }
}
