//! `verda-operator orphans [--delete] [--output table|json]`: the orphan inventory of
//! one project (the operator's cloud, or the one `--cloud` names), for a person.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use verda_api::v1alpha1::{DNSZone, LoadBalancer, VirtualMachine, VirtualMachineGroup};

use super::{Orphan, classify, delete, list};
use crate::cloud::CloudServices;
use crate::cloud::budget::Budgets;
use crate::cloud::{ClientOptions, CloudSelection, CloudSource, Environment, OpenStackClient};
use crate::config::Config;
use crate::metrics::Metrics;

/// Options of the `orphans` command.
pub struct OrphansOptions {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    pub config: Option<PathBuf>,
    pub cloud: CloudSelection,
    pub delete: bool,
    pub json: bool,
}

/// Why the inventory could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum OrphansError {
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
    #[error("no OpenStack cloud configured: pass --cloud (or set OS_CLOUD) and a clouds.yaml")]
    NoCloud,
    #[error("OpenStack configuration: {0}")]
    CloudConfig(#[from] crate::cloud::ConfigError),
    #[error("cannot list the cloud's resources: {0}")]
    Cloud(#[from] crate::cloud::CloudError),
    #[error("cannot list the cluster's {kind}: {reason}")]
    Kube { kind: &'static str, reason: String },
    #[error("{0} of the orphans could not be deleted (see above)")]
    NotAllDeleted(usize),
}

/// Lists the orphans (then, with `--delete`, deletes them) and prints what it did.
pub async fn run(options: OrphansOptions) -> Result<(), OrphansError> {
    let config = Config::load(options.config.as_deref()).map_err(crate::run::RunError::from)?;
    let CloudSource::Configured(cloud) =
        crate::cloud::resolve(&options.cloud, &Environment::from_process())?
    else {
        return Err(OrphansError::NoCloud);
    };
    let client = crate::run::connect(options.kubeconfig.as_deref(), options.context.as_deref())
        .await?
        .controllers;
    let cluster = crate::runtime::cluster::identify(&client, &config)
        .await
        .map_err(crate::run::RunError::from)?;
    crate::cloud::user_agent::name_cluster(&cluster);
    let client_options = ClientOptions {
        budgets: Some(Budgets::new(config.request_budget.spec())),
        ..ClientOptions::default()
    };
    let services: Arc<dyn CloudServices> =
        Arc::new(OpenStackClient::new(cloud, Metrics::new(), client_options)?);
    // The cloud first: an object created after this listing cannot look orphaned.
    let listing = list(services.as_ref(), &cluster).await?;
    let live = live_uids(&client).await?;
    let orphans = classify(&listing, &cluster, &live);
    if options.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&orphans).unwrap_or_default()
        );
    } else {
        print!("{}", table(&orphans, &cluster.to_string()));
    }
    if !options.delete || orphans.is_empty() {
        return Ok(());
    }
    eprintln!(
        "deleting {} orphaned resources of cluster {cluster}",
        orphans.len()
    );
    let mut failed = 0;
    for (orphan, result) in delete(services.as_ref(), &orphans).await {
        match result {
            Ok(()) => eprintln!("deleted {} {} ({})", orphan.kind, orphan.id, orphan.name),
            Err(e) => {
                failed += 1;
                eprintln!("could not delete {} {}: {e}", orphan.kind, orphan.id);
            }
        }
    }
    match failed {
        0 => Ok(()),
        n => Err(OrphansError::NotAllDeleted(n)),
    }
}

/// The UIDs of every VirtualMachine, group and LoadBalancer of the cluster.
async fn live_uids(client: &kube::Client) -> Result<HashSet<String>, OrphansError> {
    let mut uids = HashSet::new();
    uids.extend(uids_of::<VirtualMachine>(client, "VirtualMachines").await?);
    uids.extend(uids_of::<VirtualMachineGroup>(client, "VirtualMachineGroups").await?);
    uids.extend(uids_of::<LoadBalancer>(client, "LoadBalancers").await?);
    uids.extend(uids_of::<DNSZone>(client, "DNSZones").await?);
    Ok(uids)
}

async fn uids_of<K>(client: &kube::Client, kind: &'static str) -> Result<Vec<String>, OrphansError>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| OrphansError::Kube {
            kind,
            reason: crate::kube_error::describe(&e).to_string(),
        })?;
    Ok(list.items.iter().filter_map(|o| o.uid()).collect())
}

/// The orphans as a table, or a line saying there are none.
pub fn table(orphans: &[Orphan], cluster: &str) -> String {
    if orphans.is_empty() {
        return format!("no orphaned cloud resources of cluster {cluster}\n");
    }
    let rows: Vec<[String; 5]> = orphans
        .iter()
        .map(|o| {
            [
                o.kind.to_string(),
                o.id.clone(),
                o.name.clone(),
                o.owner.clone().unwrap_or_else(|| "-".to_owned()),
                o.owner_uid.clone(),
            ]
        })
        .collect();
    let header = ["KIND", "ID", "NAME", "OWNER", "OWNER UID"].map(str::to_owned);
    let widths: Vec<usize> = (0..5)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in [&header].into_iter().chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}
