//! Cloud resources of this cluster whose owner object no longer exists: left by an
//! object deleted with `reconcile-policy: skip`, by a finalizer removed by hand, or by a
//! cluster restored from a backup. Listed and deleted here for the
//! `verda-operator orphans` command; which resources are orphans is decided by
//! `cloud::orphans`, which the running operator's gauge uses too.

pub mod command;

use std::time::Duration;

use tokio::time::Instant;

use crate::cloud::CloudError;
use crate::cloud::CloudServices;
use crate::cloud::ids::DnsZoneId;
use crate::cloud::model::dns::{DnsZone, RecordSet, held_in_zone};
use crate::cloud::model::key_manager::StoredSecret;
use crate::cloud::model::loadbalancing::LbFilter;
use crate::cloud::model::network::{FloatingIpFilter, PortFilter};
use crate::cloud::owner::{ClusterId, MANAGED_TAG};
use crate::cloud::{Dns, ErrorKind};

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
    let designate = designate(services).await;
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
        ..designate_listing(designate)?
    })
}

/// The zones and record sets of the listing; none where the cloud has no Designate.
fn designate_listing(
    listed: Result<(Vec<DnsZone>, Vec<RecordSet>), CloudError>,
) -> Result<Listing, CloudError> {
    let (zones, record_sets) = match listed {
        Err(e) if e.is_missing_service() => Default::default(),
        listed => listed?,
    };
    Ok(Listing {
        zones,
        record_sets,
        ..Listing::default()
    })
}

/// Every zone of the project, and every record set of each.
async fn designate(
    services: &dyn CloudServices,
) -> Result<(Vec<DnsZone>, Vec<RecordSet>), CloudError> {
    let dns = services.dns(None);
    let zones = dns.list_zones().await?;
    let mut sets = Vec::new();
    for zone in &zones {
        sets.extend(dns.list_zone_record_sets(&zone.id).await?);
    }
    Ok((zones, sets))
}

/// How long a zone is waited for to publish its last change (Designate takes about
/// 10 s) before its delete is given up.
const PUBLISHED_WITHIN: Duration = Duration::from_secs(120);

/// Deletes an orphaned zone only once it holds no record set but its NS and SOA:
/// Designate would take any other (someone's data) with it. Not while a change is being
/// published (its record sets deleted just before): the change can put the zone back
/// on the name servers behind the delete, which Designate then gives up.
async fn delete_zone(dns: &dyn Dns, id: &str, name: &str) -> Result<(), CloudError> {
    let zone = id.into();
    published(dns, &zone, name).await?;
    let held = held_in_zone(name, &dns.list_zone_record_sets(&zone).await?);
    if !held.is_empty() {
        let message = format!(
            "it still holds {}, which deleting it would delete too: delete those first",
            held.join(", ")
        );
        let kind = ErrorKind::Conflict {
            message,
            immutable: false,
        };
        return Err(CloudError::new(format!("delete DNS zone {name}"), kind));
    }
    dns.delete_zone(&zone).await
}

/// Waits until zone `name` is not `PENDING`, for [`PUBLISHED_WITHIN`] at most.
async fn published(dns: &dyn Dns, zone: &DnsZoneId, name: &str) -> Result<(), CloudError> {
    let deadline = Instant::now() + PUBLISHED_WITHIN;
    let mut pause = Duration::from_millis(100);
    loop {
        let shown = dns.get_zone(zone).await?;
        if !shown.is_pending() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let message = format!(
                "Designate is still publishing its last change ({}) after {} s: delete it once it is ACTIVE",
                shown.action.to_lowercase(),
                PUBLISHED_WITHIN.as_secs()
            );
            let kind = ErrorKind::Conflict {
                message,
                immutable: false,
            };
            return Err(CloudError::new(format!("delete DNS zone {name}"), kind));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Deletes `orphans`: record sets, zones (only empty ones), floating IPs, load balancers (with everything under them), their
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
            ResourceKind::DnsZone => {
                let dns = services.dns(None);
                delete_zone(dns.as_ref(), &id, &orphan.name).await
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
