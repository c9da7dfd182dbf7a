//! The cloud `run` uses: the configured one, or, when none is configured at all, the
//! embedded OpenStack simulator (so the operator works on a laptop with no cloud).
//!
//! A configured but broken cloud (missing clouds.yaml entry, bad file) is an error,
//! never a silent fallback to the simulator.

use std::sync::Arc;

use crate::cloud::budget::Budgets;
use crate::cloud::config::{Credentials, IdOrName, Interface, Scope, Secret, Tls};
use crate::cloud::{
    ClientOptions, CloudConfig, CloudSelection, CloudSource, Environment, OpenStackClient, resolve,
};
use crate::metrics::Metrics;
use crate::sim::{SimConfig, Simulator};

/// Why no cloud client could be built.
#[derive(Debug, thiserror::Error)]
pub enum CloudSetupError {
    #[error("OpenStack configuration: {0}")]
    Config(#[from] crate::cloud::ConfigError),
    #[error("OpenStack client: {0}")]
    Client(#[from] crate::cloud::CloudError),
    #[error("cannot start the embedded OpenStack simulator: {0}")]
    Simulator(std::io::Error),
}

/// The cloud client, and the simulator behind it when it is the embedded one (the
/// simulator stops when this is dropped).
pub struct CloudConnection {
    pub client: OpenStackClient,
    pub simulator: Option<Simulator>,
}

/// Resolves the cloud from flags and environment; starts the simulator when none is
/// configured, logging that first.
pub async fn connect(
    selection: &CloudSelection,
    simulator: &SimConfig,
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
        CloudSource::NotConfigured => {
            let simulator = Simulator::start(simulator.clone())
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
    }
}

/// The simulator's cloud entry, as its clouds.yaml `verda-sim` describes it.
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
