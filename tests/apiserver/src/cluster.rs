//! [`TestCluster`]: the in-process [`ApiServer`] by default, or a real cluster when the environment asks for
//! one, so the same end-to-end tests run in both places.
//!
//! Switch: `VERDA_E2E_REAL_CLUSTER=1` uses the cluster of `KUBECONFIG` (or the default kubeconfig / in-cluster
//! config, exactly as kube's `Client::try_default`). The CRDs must then be installed
//! (`kubectl apply -k config/crd`). Tests should work in a namespace of their own ([`TestCluster::namespace`]).

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

use crate::{ApiServer, StartError};

/// Environment variable selecting a real cluster.
pub const REAL_CLUSTER_ENV: &str = "VERDA_E2E_REAL_CLUSTER";

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("starting the test apiserver: {0}")]
    Start(#[from] StartError),
    #[error("connecting to the cluster: {0}")]
    Kube(#[from] kube::Error),
}

pub struct TestCluster {
    client: kube::Client,
    server: Option<ApiServer>,
}

impl TestCluster {
    /// A real cluster if `VERDA_E2E_REAL_CLUSTER=1`, else a fresh in-process server with `config/crd/bases`.
    pub async fn from_env_or_start() -> Result<Self, ClusterError> {
        if std::env::var(REAL_CLUSTER_ENV).is_ok_and(|v| v == "1" || v == "true") {
            let client = kube::Client::try_default().await?;
            return Ok(Self {
                client,
                server: None,
            });
        }
        Self::with_server(ApiServer::start().await?)
    }

    /// Wraps an already started server.
    pub fn with_server(server: ApiServer) -> Result<Self, ClusterError> {
        Ok(Self {
            client: server.client()?,
            server: Some(server),
        })
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The in-process server, `None` on a real cluster.
    pub fn server(&self) -> Option<&ApiServer> {
        self.server.as_ref()
    }

    pub fn is_real(&self) -> bool {
        self.server.is_none()
    }

    /// Creates a namespace named `<prefix><random>` and returns its name.
    pub async fn namespace(&self, prefix: &str) -> Result<String, kube::Error> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
        );
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        let obj: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": prefix}}),
        )
        .map_err(kube::Error::SerdeError)?;
        let created = api.create(&PostParams::default(), &obj).await?;
        Ok(created.metadata.name.unwrap_or_default())
    }
}
