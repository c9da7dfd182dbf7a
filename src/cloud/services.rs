//! The cloud's services as the controllers use them: one trait per OpenStack service
//! ([`Compute`] with Glance's image lookup, [`BlockStorage`], [`Network`], and
//! [`LoadBalancing`] with Barbican, Octavia's certificate store, and [`Dns`]), one method
//! per API call.
//! The method names are also the metric `operation` label and the simulator's counter
//! names.
//!
//! Shape: object-safe traits returning boxed futures, so controllers hold
//! `Arc<dyn Compute>` and tests can swap the real client for a fake at run time. Native
//! `async fn` in traits is not dyn-compatible, and `#[async_trait]` would add a macro
//! crate for what one `Box::pin` per call does; one allocation per call is nothing next
//! to an HTTP round trip. The `find_*` lookups are built on the list/get verbs (they do
//! not count as calls of their own). Logic — what to create, when — lives in the
//! controllers, never here.

use std::collections::BTreeMap;

use futures::future::BoxFuture;

use super::error::CloudError;
use super::ids::*;
use super::model::compute::{
    AvailabilityZone, CreateServer, Flavor, Image, Server, ServerGroup, ServerGroupPolicy,
};
use super::model::dns::{
    CreateRecordSet, CreateZone, DnsZone, RecordSet, UpdateRecordSet, UpdateZone,
};
use super::model::firewall::{
    AddressGroup, CreateAddressGroup, CreateFirewall, CreateRule, Firewall, Rule,
};
use super::model::key_manager::StoredSecret;
use super::model::loadbalancing::*;
use super::model::network::{
    self as net, CreateFloatingIp, FloatingIp, FloatingIpFilter, Port, PortFilter, Subnet,
    SubnetFilter,
};
use super::model::volume::{CreateVolume, Volume, VolumeAttachment};

pub type CloudResult<T> = Result<T, CloudError>;
pub type CloudFuture<'a, T> = BoxFuture<'a, CloudResult<T>>;

/// How `set_server_metadata` treats keys not in the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataMode {
    /// `POST .../metadata`: add or overwrite the given keys, keep the others.
    Merge,
    /// `PUT .../metadata`: the given keys become the whole set.
    Replace,
}

/// Nova (servers, flavors, server groups) and Glance image lookup.
pub trait Compute: Send + Sync {
    fn list_flavors(&self) -> CloudFuture<'_, Vec<Flavor>>;
    fn get_flavor<'a>(&'a self, id: &'a FlavorId) -> CloudFuture<'a, Flavor>;
    /// By ID or unique name; a shared name is `AmbiguousName` listing the candidates.
    fn find_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Flavor>;
    /// Answers as soon as Nova accepted (202): the server is in BUILD.
    fn create_server<'a>(&'a self, request: &'a CreateServer) -> CloudFuture<'a, ServerId>;
    fn get_server<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, Server>;
    /// Every server tagged with this owner's UID, across all pages.
    fn list_servers<'a>(&'a self, owner_uid: &'a str) -> CloudFuture<'a, Vec<Server>>;
    /// Every server the operator created (tag `verda-managed`), across all pages.
    fn list_managed_servers(&self) -> CloudFuture<'_, Vec<Server>> {
        Box::pin(async move {
            let mut all = Vec::new();
            self.each_managed_server_page(&mut |page| all.extend(page))
                .await?;
            Ok(all)
        })
    }
    /// The same listing a page at a time, each given to `take` as it is read: what
    /// keeps less than the servers (the cloud view) never holds them all at once.
    fn each_managed_server_page<'a>(
        &'a self,
        take: &'a mut (dyn FnMut(Vec<Server>) + Send),
    ) -> CloudFuture<'a, ()>;
    fn delete_server<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, ()>;
    /// Set (or with `None` clear) the description.
    fn update_server<'a>(
        &'a self,
        id: &'a ServerId,
        description: Option<&'a str>,
    ) -> CloudFuture<'a, Server>;
    /// Returns the server's whole metadata afterwards.
    fn set_server_metadata<'a>(
        &'a self,
        id: &'a ServerId,
        metadata: &'a BTreeMap<String, String>,
        mode: MetadataMode,
    ) -> CloudFuture<'a, BTreeMap<String, String>>;
    /// `PUT .../tags`: `tags` become the server's whole tag set (returned).
    fn set_server_tags<'a>(
        &'a self,
        id: &'a ServerId,
        tags: &'a [String],
    ) -> CloudFuture<'a, Vec<String>>;
    fn resize_server<'a>(&'a self, id: &'a ServerId, flavor: &'a FlavorId) -> CloudFuture<'a, ()>;
    fn confirm_resize<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, ()>;
    /// `os-start` (`start`) or `os-stop`: Nova answers 409 from any state but SHUTOFF
    /// (start) or ACTIVE (stop).
    fn set_server_power<'a>(&'a self, id: &'a ServerId, start: bool) -> CloudFuture<'a, ()>;
    fn create_server_group<'a>(
        &'a self,
        name: &'a str,
        policy: ServerGroupPolicy,
    ) -> CloudFuture<'a, ServerGroup>;
    fn get_server_group<'a>(&'a self, id: &'a ServerGroupId) -> CloudFuture<'a, ServerGroup>;
    fn list_server_groups(&self) -> CloudFuture<'_, Vec<ServerGroup>>;
    /// `GET /os-availability-zone`: the zones Nova offers the project, available or not.
    fn list_availability_zones(&self) -> CloudFuture<'_, Vec<AvailabilityZone>>;
    fn delete_server_group<'a>(&'a self, id: &'a ServerGroupId) -> CloudFuture<'a, ()>;
    fn list_images<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<Image>>;
    fn get_image<'a>(&'a self, id: &'a ImageId) -> CloudFuture<'a, Image>;
    fn find_image<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Image>;
    /// `POST .../os-volume_attachments`: the volume must be `available`; Nova picks the
    /// device (returned).
    fn attach_volume<'a>(
        &'a self,
        server: &'a ServerId,
        volume: &'a VolumeId,
    ) -> CloudFuture<'a, VolumeAttachment>;
    /// `DELETE .../os-volume_attachments/{volume}`; answers once Nova accepted.
    fn detach_volume<'a>(
        &'a self,
        server: &'a ServerId,
        volume: &'a VolumeId,
    ) -> CloudFuture<'a, ()>;
}

/// Cinder (block storage API v3, microversion 3.42: extend while attached).
pub trait BlockStorage: Send + Sync {
    /// Answers as soon as Cinder accepted (202): the volume is `creating`.
    /// `GET /os-availability-zone`: Cinder's zones (on the real systems, `nova` only).
    fn list_availability_zones(&self) -> CloudFuture<'_, Vec<AvailabilityZone>>;
    fn create_volume<'a>(&'a self, request: &'a CreateVolume) -> CloudFuture<'a, Volume>;
    fn get_volume<'a>(&'a self, id: &'a VolumeId) -> CloudFuture<'a, Volume>;
    /// Every volume whose metadata holds all of `metadata`, across all pages.
    fn list_volumes<'a>(
        &'a self,
        metadata: &'a BTreeMap<String, String>,
    ) -> CloudFuture<'a, Vec<Volume>>;
    /// Only `available` or `error` volumes can be deleted.
    fn delete_volume<'a>(&'a self, id: &'a VolumeId) -> CloudFuture<'a, ()>;
    /// `os-extend`: to a larger size only.
    fn extend_volume<'a>(&'a self, id: &'a VolumeId, size: i32) -> CloudFuture<'a, ()>;
    /// `PUT .../metadata`: the given keys become the whole set.
    fn set_volume_metadata<'a>(
        &'a self,
        id: &'a VolumeId,
        metadata: &'a BTreeMap<String, String>,
    ) -> CloudFuture<'a, BTreeMap<String, String>>;
    /// `DELETE /attachments/{id}` (3.27+): Cinder lets the volume go (`available` once
    /// it has no other attachment). For an attachment to a server Nova no longer has.
    fn delete_attachment<'a>(&'a self, id: &'a AttachmentId) -> CloudFuture<'a, ()>;
}

/// Neutron: network and subnet lookup, ports, floating IPs.
pub trait Network: Send + Sync {
    fn list_networks<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<net::Network>>;
    fn get_network<'a>(&'a self, id: &'a NetworkId) -> CloudFuture<'a, net::Network>;
    fn find_network<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, net::Network>;
    fn list_subnets<'a>(&'a self, filter: &'a SubnetFilter) -> CloudFuture<'a, Vec<Subnet>>;
    fn get_subnet<'a>(&'a self, id: &'a SubnetId) -> CloudFuture<'a, Subnet>;
    fn find_subnet<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Subnet>;
    fn list_ports<'a>(&'a self, filter: &'a PortFilter) -> CloudFuture<'a, Vec<Port>>;
    fn get_port<'a>(&'a self, id: &'a PortId) -> CloudFuture<'a, Port>;
    fn create_port<'a>(&'a self, request: &'a net::CreatePort) -> CloudFuture<'a, Port>;
    fn update_port<'a>(
        &'a self,
        id: &'a PortId,
        request: &'a net::UpdatePort,
    ) -> CloudFuture<'a, Port>;
    fn delete_port<'a>(&'a self, id: &'a PortId) -> CloudFuture<'a, ()>;
    fn list_security_groups<'a>(
        &'a self,
        name: Option<&'a str>,
    ) -> CloudFuture<'a, Vec<net::SecurityGroup>>;
    /// By unique name (remembered); an ID is taken as it is.
    fn find_security_group<'a>(
        &'a self,
        name_or_id: &'a str,
    ) -> CloudFuture<'a, net::SecurityGroup>;
    fn create_floating_ip<'a>(
        &'a self,
        request: &'a CreateFloatingIp,
    ) -> CloudFuture<'a, FloatingIp>;
    fn get_floating_ip<'a>(&'a self, id: &'a FloatingIpId) -> CloudFuture<'a, FloatingIp>;
    fn list_floating_ips<'a>(
        &'a self,
        filter: &'a FloatingIpFilter,
    ) -> CloudFuture<'a, Vec<FloatingIp>>;
    /// Associate with `port`, or with `None` disassociate.
    fn update_floating_ip<'a>(
        &'a self,
        id: &'a FloatingIpId,
        port: Option<&'a PortId>,
    ) -> CloudFuture<'a, FloatingIp>;
    fn set_floating_ip_description<'a>(
        &'a self,
        id: &'a FloatingIpId,
        description: &'a str,
    ) -> CloudFuture<'a, FloatingIp>;
    fn delete_floating_ip<'a>(&'a self, id: &'a FloatingIpId) -> CloudFuture<'a, ()>;
}

/// Neutron's security groups, their rules and address groups: what a SecurityGroup
/// is made of. Security groups and rules are referred to by ID strings, as ports name
/// them.
pub trait Firewalls: Send + Sync {
    fn security_groups_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<Firewall>>;
    /// Every group of the project with its rules, across all pages.
    fn all_security_groups(&self) -> CloudFuture<'_, Vec<Firewall>>;
    /// The group with its rules.
    fn get_security_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, Firewall>;
    fn create_security_group<'a>(
        &'a self,
        request: &'a CreateFirewall,
    ) -> CloudFuture<'a, Firewall>;
    fn set_security_group_description<'a>(
        &'a self,
        id: &'a str,
        description: &'a str,
    ) -> CloudFuture<'a, Firewall>;
    /// Refused `Conflict` while a port uses the group.
    fn delete_security_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()>;
    fn create_rule<'a>(&'a self, request: &'a CreateRule) -> CloudFuture<'a, Rule>;
    fn delete_rule<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()>;
    fn address_groups_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<AddressGroup>>;
    fn create_address_group<'a>(
        &'a self,
        request: &'a CreateAddressGroup,
    ) -> CloudFuture<'a, AddressGroup>;
    /// `add_addresses` (`add`) or `remove_addresses`: the group after the change.
    fn change_addresses<'a>(
        &'a self,
        id: &'a str,
        add: bool,
        addresses: &'a [String],
    ) -> CloudFuture<'a, AddressGroup>;
    /// Refused `Conflict` while a rule names the address group.
    fn delete_address_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()>;
    /// The IDs of the ports in the security group.
    fn ports_using<'a>(&'a self, id: &'a str) -> CloudFuture<'a, Vec<String>>;
}

/// Octavia. Every write may answer `Conflict` (immutable) while the load balancer is
/// `PENDING_*`: requeue, do not fail.
pub trait LoadBalancing: Send + Sync {
    fn create_load_balancer<'a>(
        &'a self,
        request: &'a CreateLoadBalancer,
    ) -> CloudFuture<'a, LoadBalancer>;
    fn get_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, LoadBalancer>;
    fn list_load_balancers<'a>(
        &'a self,
        filter: &'a LbFilter,
    ) -> CloudFuture<'a, Vec<LoadBalancer>>;
    /// Every load balancer tagged with this owner's UID, across all pages.
    fn load_balancers_of<'a>(&'a self, owner_uid: &'a str) -> CloudFuture<'a, Vec<LoadBalancer>>;
    /// `tags` become the load balancer's whole tag set (it passes through
    /// `PENDING_UPDATE`).
    fn set_load_balancer_tags<'a>(
        &'a self,
        id: &'a LoadBalancerId,
        tags: &'a [String],
    ) -> CloudFuture<'a, LoadBalancer>;
    /// Cascade: listeners, pools, monitors and members go with it.
    fn delete_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, ()>;
    fn get_status_tree<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, StatusTree>;
    fn create_listener<'a>(&'a self, request: &'a CreateListener) -> CloudFuture<'a, Listener>;
    fn list_listeners<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Listener>>;
    fn get_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, Listener>;
    /// The listener's connection counts (the autoscaler's load-balancer metrics).
    fn listener_stats<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ListenerStats>;
    fn update_listener<'a>(
        &'a self,
        id: &'a ListenerId,
        request: &'a UpdateListener,
    ) -> CloudFuture<'a, Listener>;
    fn delete_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ()>;
    fn create_pool<'a>(&'a self, request: &'a CreatePool) -> CloudFuture<'a, Pool>;
    fn list_pools<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Pool>>;
    fn get_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, Pool>;
    fn update_pool<'a>(&'a self, id: &'a PoolId, request: &'a UpdatePool) -> CloudFuture<'a, Pool>;
    fn delete_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, ()>;
    fn create_health_monitor<'a>(
        &'a self,
        request: &'a CreateHealthMonitor,
    ) -> CloudFuture<'a, HealthMonitor>;
    fn get_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, HealthMonitor>;
    fn update_health_monitor<'a>(
        &'a self,
        id: &'a HealthMonitorId,
        request: &'a UpdateHealthMonitor,
    ) -> CloudFuture<'a, HealthMonitor>;
    fn delete_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, ()>;
    fn list_members<'a>(&'a self, pool: &'a PoolId) -> CloudFuture<'a, Vec<Member>>;
    /// The batch update: `members` becomes the pool's whole member set (202, async).
    fn replace_members<'a>(
        &'a self,
        pool: &'a PoolId,
        members: &'a [MemberSpec],
    ) -> CloudFuture<'a, ()>;
    fn list_lb_flavors(&self) -> CloudFuture<'_, Vec<LbFlavor>>;
    fn find_lb_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, LbFlavor>;
    /// Barbican (Octavia's certificate store): every secret whose name starts with
    /// `prefix`, across all pages.
    fn list_certificates<'a>(&'a self, prefix: &'a str) -> CloudFuture<'a, Vec<StoredSecret>>;
    /// Stores a PKCS#12 bundle as a Barbican secret named `name`.
    fn store_certificate<'a>(
        &'a self,
        name: &'a str,
        pkcs12: &'a [u8],
    ) -> CloudFuture<'a, StoredSecret>;
    fn delete_certificate<'a>(&'a self, secret: &'a StoredSecret) -> CloudFuture<'a, ()>;
}

/// Designate: the project's zones, looked up by name, and their record sets.
pub trait Dns: Send + Sync {
    /// The project's zone of this name (`example.test.`, remembered as other lookups
    /// are); `LookupNotFound` when the project has none.
    fn find_zone<'a>(&'a self, name: &'a str) -> CloudFuture<'a, DnsZone>;
    /// Every zone of the project, across all pages.
    fn list_zones(&self) -> CloudFuture<'_, Vec<DnsZone>>;
    /// The project's zones of this name, as Designate lists them now (one at most;
    /// none remembered).
    fn zones_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<DnsZone>>;
    fn get_zone<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, DnsZone>;
    /// Answers once Designate accepted (202): the zone is `PENDING`.
    fn create_zone<'a>(&'a self, request: &'a CreateZone) -> CloudFuture<'a, DnsZone>;
    fn update_zone<'a>(
        &'a self,
        id: &'a DnsZoneId,
        request: &'a UpdateZone,
    ) -> CloudFuture<'a, DnsZone>;
    /// Deletes the zone and every record set in it.
    fn delete_zone<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, ()>;
    /// The host names of the name servers that serve the zone.
    fn zone_nameservers<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, Vec<String>>;
    /// Every record set of `zone`, across all pages.
    fn list_zone_record_sets<'a>(&'a self, zone: &'a DnsZoneId) -> CloudFuture<'a, Vec<RecordSet>>;
    /// Answers once Designate accepted (202): the record set is `PENDING`.
    fn create_record_set<'a>(
        &'a self,
        zone: &'a DnsZoneId,
        request: &'a CreateRecordSet,
    ) -> CloudFuture<'a, RecordSet>;
    fn update_record_set<'a>(
        &'a self,
        zone: &'a DnsZoneId,
        id: &'a RecordSetId,
        request: &'a UpdateRecordSet,
    ) -> CloudFuture<'a, RecordSet>;
    fn delete_record_set<'a>(
        &'a self,
        zone: &'a DnsZoneId,
        id: &'a RecordSetId,
    ) -> CloudFuture<'a, ()>;
}
