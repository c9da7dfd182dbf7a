//! Which cloud resources of a cluster have no owner any more, decided from a listing
//! and the UIDs of the objects that exist: the classification both the
//! `verda-operator orphans` command and the running operator's gauge use. Pure: the
//! listing is made, and orphans deleted, by the `orphans` command module.
//!
//! Only resources that name the cluster are ever classified, so clusters sharing a
//! project never see each other's resources: servers by their metadata, load balancers
//! by their tag, server groups by the mark in their name, floating IPs by their load
//! balancer's tag (a floating IP whose load balancer is gone too names no cluster, and
//! is left to a person). A server group is an orphan only when no server outside the
//! orphans is still in it: deleting it would change nothing anybody runs.

use std::collections::HashSet;

use serde::Serialize;

use super::model::compute::{Server, ServerGroup};
use super::model::dns::{DnsZone, RecordSet};
use super::model::key_manager::StoredSecret;
use super::model::loadbalancing::LoadBalancer;
use super::model::network::{FloatingIp, Port};
use super::model::volume::Volume;
use super::owner::{
    ClusterId, Owner, load_balancer_name_prefix, namespace_from_tags, port_owner, server_group_uid,
    uid_from_tags, volume_record,
};

/// The kinds of cloud resource the inventory lists, in the order `--delete` removes
/// them (what is under a load balancer or in a server group goes first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResourceKind {
    /// A Designate record set (`spec.dns`): first, so that nothing resolves to what
    /// goes after it.
    DnsRecordSet,
    /// A DNSZone's zone: after its record sets.
    DnsZone,
    FloatingIp,
    LoadBalancer,
    /// A terminated-https listener's Barbican secret: after its load balancer.
    Certificate,
    Server,
    /// After the servers: a volume is detached when its server goes.
    Volume,
    /// After the servers too: Nova lets a port go with its server.
    Port,
    ServerGroup,
}

impl ResourceKind {
    /// The word a table, a log line and the gauge's `resource` label use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DnsRecordSet => "dns-record-set",
            Self::DnsZone => "dns-zone",
            Self::FloatingIp => "floating-ip",
            Self::LoadBalancer => "load-balancer",
            Self::Certificate => "certificate",
            Self::Server => "server",
            Self::Volume => "volume",
            Self::Port => "port",
            Self::ServerGroup => "server-group",
        }
    }
}

impl std::fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cloud resource without an owner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Orphan {
    pub kind: ResourceKind,
    pub id: String,
    pub name: String,
    /// UID of the object that owned it.
    pub owner_uid: String,
    /// `namespace/name` of that object, where the resource records it.
    pub owner: Option<String>,
}

/// What the operator may own in one project: its tagged servers and load balancers,
/// every server group and floating IP.
#[derive(Debug, Default)]
pub struct Listing {
    pub servers: Vec<Server>,
    pub server_groups: Vec<ServerGroup>,
    pub load_balancers: Vec<LoadBalancer>,
    pub floating_ips: Vec<FloatingIp>,
    /// This cluster's data volumes (a metadata filter on the cluster).
    pub volumes: Vec<Volume>,
    /// Every port of the project (declared ports record their owner and cluster in
    /// their description, which Neutron filters by exact match only).
    pub ports: Vec<Port>,
    /// This cluster's Barbican secrets (named with its mark; none where the cloud has
    /// no Barbican).
    pub certificates: Vec<StoredSecret>,
    /// The project's Designate zones, and every record set in them (none where the
    /// cloud has no Designate).
    pub zones: Vec<DnsZone>,
    pub record_sets: Vec<RecordSet>,
}

/// The orphans of `cluster` in `listing`, given the UIDs of every object that exists
/// (read after the listing, so an object created meanwhile cannot look orphaned).
pub fn classify(listing: &Listing, cluster: &ClusterId, live: &HashSet<String>) -> Vec<Orphan> {
    let mut orphans = servers(&listing.servers, cluster, live);
    let orphan_servers: HashSet<&str> = orphans.iter().map(|o| o.id.as_str()).collect();
    let groups = listing.server_groups.iter().filter_map(|g| {
        let uid = server_group_uid(&g.name)?;
        let unused = g
            .members
            .iter()
            .all(|m| orphan_servers.contains(m.as_str()));
        (cluster.marks_server_group(&g.name) && !live.contains(uid) && unused).then(|| Orphan {
            kind: ResourceKind::ServerGroup,
            id: g.id.to_string(),
            name: g.name.clone(),
            owner_uid: uid.to_owned(),
            owner: None,
        })
    });
    let groups: Vec<Orphan> = groups.collect();
    orphans.extend(groups);
    orphans.extend(load_balancers(&listing.load_balancers, cluster, live));
    orphans.extend(volumes(&listing.volumes, cluster, live));
    orphans.extend(ports(&listing.ports, cluster, live));
    orphans.extend(certificates(&listing.certificates, cluster, live));
    orphans.extend(record_sets(&listing.record_sets, cluster, live));
    orphans.extend(zones(&listing.zones, cluster, live));
    let ours: HashSet<&str> = listing
        .load_balancers
        .iter()
        .filter(|l| cluster.in_tags(&l.tags))
        .filter_map(|l| uid_from_tags(&l.tags))
        .collect();
    orphans.extend(listing.floating_ips.iter().filter_map(|f| {
        // A VirtualMachine's records its owner and cluster as its ports do.
        if port_owner(&f.description).is_some() {
            return gone_owner(&f.description, cluster, live).map(|uid| Orphan {
                kind: ResourceKind::FloatingIp,
                id: f.id.to_string(),
                name: f.floating_ip_address.clone(),
                owner_uid: uid.to_owned(),
                owner: None,
            });
        }
        let uid = f.description.strip_prefix("verda-uid-")?;
        (ours.contains(uid) && !live.contains(uid)).then(|| Orphan {
            kind: ResourceKind::FloatingIp,
            id: f.id.to_string(),
            name: f.floating_ip_address.clone(),
            owner_uid: uid.to_owned(),
            owner: None,
        })
    }));
    orphans
}

/// The owner UID a description records (`owner::port_record`), when it is this
/// cluster's and the owner is not live.
fn gone_owner<'d>(
    description: &'d str,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Option<&'d str> {
    let (uid, _, c) = port_owner(description)?;
    (c == cluster.as_str() && !live.contains(uid)).then_some(uid)
}

/// This cluster's record sets whose owner (a LoadBalancer, VirtualMachine or group, or
/// for a replica's name its group) is not live. The ID is `<zone>/<record set>`, what
/// a delete needs.
pub fn record_sets<'a>(
    sets: impl IntoIterator<Item = &'a RecordSet>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    sets.into_iter()
        .filter_map(|r| {
            let uid = gone_owner(r.description.as_deref()?, cluster, live)?;
            Some(Orphan {
                kind: ResourceKind::DnsRecordSet,
                id: format!("{}/{}", r.zone_id, r.id),
                name: format!("{} {} {}", r.name, r.type_, r.records.join(",")),
                owner_uid: uid.to_owned(),
                owner: None,
            })
        })
        .collect()
}

/// This cluster's zones (a DNSZone's) whose owner is not live. Deleting one deletes
/// every record set in it: `delete` refuses a zone that still holds any but its NS,
/// its SOA and this listing's orphaned record sets.
pub fn zones<'a>(
    zones: impl IntoIterator<Item = &'a DnsZone>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    zones
        .into_iter()
        .filter_map(|z| {
            let uid = gone_owner(z.description.as_deref()?, cluster, live)?;
            Some(Orphan {
                kind: ResourceKind::DnsZone,
                id: z.id.to_string(),
                name: z.name.clone(),
                owner_uid: uid.to_owned(),
                owner: None,
            })
        })
        .collect()
}

/// This cluster's Barbican secrets whose LoadBalancer is not live.
pub fn certificates<'a>(
    secrets: impl IntoIterator<Item = &'a StoredSecret>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    let prefix = cluster.certificate_prefix();
    secrets
        .into_iter()
        .filter_map(|s| {
            let name = s.name.as_deref()?;
            let uid = name.strip_prefix(&prefix)?.get(..36)?;
            (!live.contains(uid)).then(|| Orphan {
                kind: ResourceKind::Certificate,
                id: s.secret_ref.clone(),
                name: name.to_owned(),
                owner_uid: uid.to_owned(),
                owner: None,
            })
        })
        .collect()
}

/// This cluster's declared ports whose owner (VirtualMachine, or group for a
/// replica's) is not live: a group's retained ports only once the group is gone.
pub fn ports<'a>(
    ports: impl IntoIterator<Item = &'a Port>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    ports
        .into_iter()
        .filter_map(|p| {
            let uid = gone_owner(&p.description, cluster, live)?;
            Some(Orphan {
                kind: ResourceKind::Port,
                id: p.id.to_string(),
                name: format!("{} ({})", p.name, p.addresses().join(", ")),
                owner_uid: uid.to_owned(),
                owner: None,
            })
        })
        .collect()
}

/// This cluster's servers whose owner is not live.
pub fn servers<'a>(
    servers: impl IntoIterator<Item = &'a Server>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    servers
        .into_iter()
        .filter_map(|s| {
            let uid = server_owner_uid(s, cluster)?;
            (!live.contains(&uid)).then(|| Orphan {
                kind: ResourceKind::Server,
                id: s.id.to_string(),
                name: s.name.clone(),
                owner_uid: uid,
                owner: Owner::from_metadata(&s.metadata).map(|o| o.key()),
            })
        })
        .collect()
}

/// The UID of the object a server of this cluster was made for (from its metadata, or
/// its tag when the metadata was edited away); none for another cluster's.
pub fn server_owner_uid(server: &Server, cluster: &ClusterId) -> Option<String> {
    if !cluster.in_metadata(&server.metadata) {
        return None;
    }
    Owner::from_metadata(&server.metadata)
        .map(|o| o.uid)
        .or_else(|| uid_from_tags(&server.tags).map(str::to_owned))
}

/// This cluster's data volumes whose owner is not live: a VirtualMachine's once it is
/// gone, a group replica's only once the group is (a retained volume of a scaled-down
/// index is the group's until then).
pub fn volumes<'a>(
    volumes: impl IntoIterator<Item = &'a Volume>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    volumes
        .into_iter()
        .filter(|v| cluster.in_metadata(&v.metadata))
        .filter_map(|v| {
            let (owner, _, _) = volume_record(&v.metadata)?;
            (!live.contains(&owner.uid)).then(|| Orphan {
                kind: ResourceKind::Volume,
                id: v.id.to_string(),
                name: v.name.clone().unwrap_or_default(),
                owner_uid: owner.uid.clone(),
                owner: Some(owner.key()),
            })
        })
        .collect()
}

/// This cluster's load balancers whose owner is not live.
pub fn load_balancers<'a>(
    lbs: impl IntoIterator<Item = &'a LoadBalancer>,
    cluster: &ClusterId,
    live: &HashSet<String>,
) -> Vec<Orphan> {
    lbs.into_iter()
        .filter(|l| cluster.in_tags(&l.tags))
        .filter_map(|l| {
            let uid = uid_from_tags(&l.tags)?;
            (!live.contains(uid)).then(|| Orphan {
                kind: ResourceKind::LoadBalancer,
                id: l.id.to_string(),
                name: l.name.clone(),
                owner_uid: uid.to_owned(),
                owner: load_balancer_owner(l),
            })
        })
        .collect()
}

/// `namespace/name` of a load balancer's owner: the namespace its tags record, the name
/// what follows `verda-<namespace>-` in its own.
fn load_balancer_owner(lb: &LoadBalancer) -> Option<String> {
    let namespace = namespace_from_tags(&lb.tags)?;
    let name = lb
        .name
        .strip_prefix(&load_balancer_name_prefix(namespace))?;
    Some(format!("{namespace}/{name}"))
}

#[cfg(test)]
#[path = "orphans_tests.rs"]
mod tests;
