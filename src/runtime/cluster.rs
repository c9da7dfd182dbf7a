//! Which cluster this operator serves: the name recorded on every cloud resource it
//! creates, so clusters sharing a project never take each other's resources for their
//! own (the orphan inventory, imports).

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;

use crate::cloud::owner::ClusterId;
use crate::config::Config;

/// Why the cluster could not be named.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read the UID of namespace kube-system, which names this cluster on its cloud \
     resources ({reason}); grant get on namespaces/kube-system or set clusterName in the \
     configuration file"
)]
pub struct ClusterIdError {
    reason: String,
}

/// The configured `clusterName`, else the UID of the `kube-system` namespace (stable
/// for the cluster's life, and what other tools use as a cluster ID).
pub async fn identify(client: &kube::Client, config: &Config) -> Result<ClusterId, ClusterIdError> {
    if let Some(name) = &config.cluster_name {
        return Ok(name.clone());
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = namespaces
        .get("kube-system")
        .await
        .map_err(|e| ClusterIdError {
            reason: crate::kube_error::describe(&e).to_string(),
        })?;
    let uid = ns.metadata.uid.ok_or_else(|| ClusterIdError {
        reason: "it has no UID".to_owned(),
    })?;
    ClusterId::new(uid).map_err(|reason| ClusterIdError { reason })
}
