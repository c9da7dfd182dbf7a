//! Cloud resources of this cluster whose owner object no longer exists: left by an
//! object deleted with `reconcile-policy: skip`, by a finalizer removed by hand, or by a
//! cluster restored from a backup. Listed and deleted here for the
//! `verda-operator orphans` command; which resources are orphans is decided by
//! `cloud::orphans`, which the running operator's gauge uses too.

pub mod command;

use crate::cloud::CloudError;
use crate::cloud::CloudServices;
use crate::cloud::model::dns::RecordSet;
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::model::loadbalancing::LbFilter;
use crate::cloud::model::network::{FloatingIpFilter, PortFilter};
use crate::cloud::owner::{ClusterId, MANAGED_TAG};

pub use crate::cloud::orphans::{Listing, Orphan, ResourceKind, classify};

/// Seven calls: managed servers, server groups, managed load balancers, floating IPs,
/// `cluster`'s data volumes, the project's ports, and `cluster`'s Barbican secrets
/// (none where the cloud has no Barbican); then the project's Designate zones and one
/// listing of each (none where the cloud has no Designate).
pub async fn list(
    services: &dyn CloudServices,
    cluster: &ClusterId,
) -> Result<Listing, CloudError> {
    let compute = services.compute();
    let certificates = services
        .load_balancing(None)
        .list_certificates(&cluster.certificate_prefix())
        .await;
    let record_sets = record_sets(services).await;
    Ok(Listing {
        servers: compute.list_managed_servers().await?,
        server_groups: compute.list_server_groups().await?,
        load_balancers: services
            .load_balancing(None)
            .list_load_balancers(&LbFilter {
                tags: vec![MANAGED_TAG.to_owned()],
                ..LbFilter::default()
            })
            .await?,
        floating_ips: services
            .network(None)
            .list_floating_ips(&FloatingIpFilter::default())
            .await?,
        volumes: services
            .block_storage()
            .list_volumes(&cluster.volume_filter())
            .await?,
        ports: services
            .network(None)
            .list_ports(&PortFilter::default())
            .await?,
        certificates: match certificates {
            Err(e) if e.is_missing_service() => Vec::new(),
            listed => listed?,
        },
        record_sets: match record_sets {
            Err(e) if e.is_missing_service() => Vec::new(),
            listed => listed?,
        },
    })
}

/// Every record set of every zone of the project.
async fn record_sets(services: &dyn CloudServices) -> Result<Vec<RecordSet>, CloudError> {
    let dns = services.dns(None);
    let mut sets = Vec::new();
    for zone in dns.list_zones().await? {
        sets.extend(dns.list_zone_record_sets(&zone.id).await?);
    }
    Ok(sets)
}

/// Deletes `orphans`: record sets, floating IPs, load balancers (with everything under them), their
/// certificates, servers, volumes, ports, then server groups. One already gone counts as
/// deleted.
pub async fn delete(
    services: &dyn CloudServices,
    orphans: &[Orphan],
) -> Vec<(Orphan, Result<(), CloudError>)> {
    let mut ordered = orphans.to_vec();
    ordered.sort_by_key(|o| o.kind);
    let mut results = Vec::with_capacity(ordered.len());
    for orphan in ordered {
        let id = orphan.id.clone();
        let done = match orphan.kind {
            ResourceKind::DnsRecordSet => {
                let (zone, set) = id.split_once('/').unwrap_or_default();
                services
                    .dns(None)
                    .delete_record_set(&zone.into(), &set.into())
                    .await
            }
            ResourceKind::FloatingIp => services.network(None).delete_floating_ip(&id.into()).await,
            ResourceKind::LoadBalancer => {
                services
                    .load_balancing(None)
                    .delete_load_balancer(&id.into())
                    .await
            }
            ResourceKind::Certificate => {
                let secret = StoredSecret {
                    secret_ref: id,
                    name: Some(orphan.name.clone()),
                };
                services
                    .load_balancing(None)
                    .delete_certificate(&secret)
                    .await
            }
            ResourceKind::Server => services.compute().delete_server(&id.into()).await,
            ResourceKind::Volume => services.block_storage().delete_volume(&id.into()).await,
            ResourceKind::Port => services.network(None).delete_port(&id.into()).await,
            ResourceKind::ServerGroup => services.compute().delete_server_group(&id.into()).await,
        };
        results.push((orphan, crate::cloud::ignore_not_found(done)));
    }
    results
}
