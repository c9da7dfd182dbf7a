//! A cloud that "crashes" the controllers right after a create: the `k`th create call
//! (or batch member update) reaches the cloud and completes, but never returns to the
//! controller, so the status write that would record its result never happens. From
//! then on every call hangs, freezing the cloud as the crash left it, until the test
//! aborts the controllers and starts fresh ones on the same cloud.
//!
//! It can also hold every lookup of servers and load balancers by owner, to show what is
//! created without one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use verda_operator::cloud::CloudServices;
use verda_operator::cloud::ids::*;
use verda_operator::cloud::model::compute::{
    AvailabilityZone, CreateServer, Flavor, Image, Server, ServerGroup, ServerGroupPolicy,
};
use verda_operator::cloud::model::dns::{
    CreateRecordSet, CreateZone, DnsZone, RecordSet, UpdateRecordSet, UpdateZone,
};
use verda_operator::cloud::model::firewall::{
    AddressGroup, CreateAddressGroup, CreateFirewall, CreateRule, Firewall, Rule,
};
use verda_operator::cloud::model::key_manager::StoredSecret;
use verda_operator::cloud::model::loadbalancing::*;
use verda_operator::cloud::model::network::{
    self as net, CreateFloatingIp, FloatingIp, FloatingIpFilter, Port, PortFilter, Subnet,
    SubnetFilter,
};
use verda_operator::cloud::model::volume::{CreateVolume, Volume, VolumeAttachment};
use verda_operator::cloud::{
    BlockStorage, CloudFuture, Compute, Dns, Firewalls, LoadBalancing, MetadataMode, Network,
    OpenStackClient,
};

/// Counts create calls and trips on the armed one.
pub struct Tripwire {
    armed: usize,
    creates: Mutex<Vec<&'static str>>,
    tripped: watch::Sender<Option<&'static str>>,
    lookups_held: watch::Sender<bool>,
    server_lookups: AtomicUsize,
    server_listings: AtomicUsize,
}

impl Tripwire {
    /// Trips right after the `k`th create call (counting from 1) has completed.
    pub fn armed(k: usize) -> Arc<Self> {
        Arc::new(Self {
            armed: k,
            creates: Mutex::new(Vec::new()),
            tripped: watch::channel(None).0,
            lookups_held: watch::channel(false).0,
            server_lookups: AtomicUsize::new(0),
            server_listings: AtomicUsize::new(0),
        })
    }

    /// Every lookup of servers and load balancers by owner waits from now until
    /// [`Tripwire::release_lookups`].
    pub fn hold_lookups(&self) {
        self.lookups_held.send_replace(true);
    }

    pub fn release_lookups(&self) {
        self.lookups_held.send_replace(false);
    }

    fn lookup<'a, T: Send + 'a>(&'a self, call: CloudFuture<'a, T>) -> CloudFuture<'a, T> {
        Box::pin(async move {
            let mut held = self.lookups_held.subscribe();
            held.wait_for(|held| !held).await.expect("sender alive");
            self.pass(call).await
        })
    }

    /// The lookups of servers by owner the controllers asked for so far (the client
    /// may answer several with one call).
    pub fn server_lookups(&self) -> usize {
        self.server_lookups.load(Ordering::Relaxed)
    }

    /// The listings of the project's managed servers asked for so far.
    pub fn server_listings(&self) -> usize {
        self.server_listings.load(Ordering::Relaxed)
    }

    /// The operations of the create calls made so far, in call order.
    pub fn creates(&self) -> Vec<&'static str> {
        self.creates.lock().expect("not poisoned").clone()
    }

    /// Waits for the trip; the operation that tripped.
    pub async fn tripped(&self) -> &'static str {
        let mut rx = self.tripped.subscribe();
        let op = *rx.wait_for(Option::is_some).await.expect("sender alive");
        op.expect("tripped")
    }

    fn is_tripped(&self) -> bool {
        self.tripped.borrow().is_some()
    }

    /// After the trip nothing gets through in either direction: the process is "dead".
    async fn halt_if_tripped(&self) {
        if self.is_tripped() {
            std::future::pending::<()>().await;
        }
    }

    fn pass<'a, T: Send + 'a>(&'a self, call: CloudFuture<'a, T>) -> CloudFuture<'a, T> {
        Box::pin(async move {
            self.halt_if_tripped().await;
            let result = call.await;
            self.halt_if_tripped().await;
            result
        })
    }

    fn create<'a, T: Send + 'a>(
        &'a self,
        op: &'static str,
        call: CloudFuture<'a, T>,
    ) -> CloudFuture<'a, T> {
        Box::pin(async move {
            self.halt_if_tripped().await;
            let n = {
                let mut creates = self.creates.lock().expect("not poisoned");
                creates.push(op);
                creates.len()
            };
            let result = call.await;
            if n == self.armed {
                self.tripped.send_replace(Some(op));
            }
            self.halt_if_tripped().await;
            result
        })
    }
}

/// The real client's services behind a [`Tripwire`].
pub struct CrashingCloud {
    client: OpenStackClient,
    wire: Arc<Tripwire>,
}

impl CrashingCloud {
    pub fn new(client: OpenStackClient, wire: Arc<Tripwire>) -> Self {
        Self { client, wire }
    }
}

impl CloudServices for CrashingCloud {
    fn compute(&self) -> Arc<dyn Compute> {
        Arc::new(Wired {
            inner: self.client.compute(),
            wire: self.wire.clone(),
        })
    }

    fn network(&self, region: Option<&str>) -> Arc<dyn Network> {
        Arc::new(Wired {
            inner: self.client.network(region),
            wire: self.wire.clone(),
        })
    }

    fn load_balancing(&self, region: Option<&str>) -> Arc<dyn LoadBalancing> {
        Arc::new(Wired {
            inner: self.client.load_balancing(region),
            wire: self.wire.clone(),
        })
    }

    fn dns(&self, region: Option<&str>) -> Arc<dyn Dns> {
        Arc::new(Wired {
            inner: self.client.dns(region),
            wire: self.wire.clone(),
        })
    }

    fn firewalls(&self, region: Option<&str>) -> Arc<dyn Firewalls> {
        Arc::new(Wired {
            inner: self.client.firewalls(region),
            wire: self.wire.clone(),
        })
    }

    fn block_storage(&self) -> Arc<dyn BlockStorage> {
        Arc::new(Wired {
            inner: self.client.block_storage(),
            wire: self.wire.clone(),
        })
    }

    fn project_id(&self) -> CloudFuture<'_, String> {
        CloudServices::project_id(&self.client)
    }
}

/// One port, every call through the wire.
struct Wired<P: ?Sized> {
    inner: Arc<P>,
    wire: Arc<Tripwire>,
}

/// Delegating methods; `create fn` ones count towards the trip.
macro_rules! wired {
    ($(fn $name:ident $(<$lt:lifetime>)? (&$($slt:lifetime)? self $(, $arg:ident: $ty:ty)*) -> $out:ty;)*) => {
        $(fn $name $(<$lt>)? (&$($slt)? self $(, $arg: $ty)*) -> $out {
            self.wire.pass(self.inner.$name($($arg),*))
        })*
    };
    ($(create fn $name:ident <$lt:lifetime> (&$slt:lifetime self $(, $arg:ident: $ty:ty)*) -> $out:ty;)*) => {
        $(fn $name<$lt>(&$slt self $(, $arg: $ty)*) -> $out {
            self.wire.create(stringify!($name), self.inner.$name($($arg),*))
        })*
    };
}

impl Compute for Wired<dyn Compute> {
    fn list_servers<'a>(&'a self, owner_uid: &'a str) -> CloudFuture<'a, Vec<Server>> {
        self.wire.server_lookups.fetch_add(1, Ordering::Relaxed);
        self.wire.lookup(self.inner.list_servers(owner_uid))
    }
    fn each_managed_server_page<'a>(
        &'a self,
        take: &'a mut (dyn FnMut(Vec<Server>) + Send),
    ) -> CloudFuture<'a, ()> {
        self.wire.server_listings.fetch_add(1, Ordering::Relaxed);
        self.wire.pass(self.inner.each_managed_server_page(take))
    }
    wired! {
        create fn create_server<'a>(&'a self, request: &'a CreateServer) -> CloudFuture<'a, ServerId>;
        create fn create_server_group<'a>(&'a self, name: &'a str, policy: ServerGroupPolicy) -> CloudFuture<'a, ServerGroup>;
    }
    wired! {
        fn list_flavors(&self) -> CloudFuture<'_, Vec<Flavor>>;
        fn get_flavor<'a>(&'a self, id: &'a FlavorId) -> CloudFuture<'a, Flavor>;
        fn find_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Flavor>;
        fn get_server<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, Server>;
        fn delete_server<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, ()>;
        fn update_server<'a>(&'a self, id: &'a ServerId, description: Option<&'a str>) -> CloudFuture<'a, Server>;
        fn set_server_metadata<'a>(&'a self, id: &'a ServerId, metadata: &'a BTreeMap<String, String>, mode: MetadataMode) -> CloudFuture<'a, BTreeMap<String, String>>;
        fn set_server_tags<'a>(&'a self, id: &'a ServerId, tags: &'a [String]) -> CloudFuture<'a, Vec<String>>;
        fn resize_server<'a>(&'a self, id: &'a ServerId, flavor: &'a FlavorId) -> CloudFuture<'a, ()>;
        fn confirm_resize<'a>(&'a self, id: &'a ServerId) -> CloudFuture<'a, ()>;
        fn set_server_power<'a>(&'a self, id: &'a ServerId, start: bool) -> CloudFuture<'a, ()>;
        fn get_server_group<'a>(&'a self, id: &'a ServerGroupId) -> CloudFuture<'a, ServerGroup>;
        fn list_server_groups(&self) -> CloudFuture<'_, Vec<ServerGroup>>;
        fn list_availability_zones(&self) -> CloudFuture<'_, Vec<AvailabilityZone>>;
        fn delete_server_group<'a>(&'a self, id: &'a ServerGroupId) -> CloudFuture<'a, ()>;
        fn list_images<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<Image>>;
        fn get_image<'a>(&'a self, id: &'a ImageId) -> CloudFuture<'a, Image>;
        fn find_image<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Image>;
        fn detach_volume<'a>(&'a self, server: &'a ServerId, volume: &'a VolumeId) -> CloudFuture<'a, ()>;
    }
    wired! {
        create fn attach_volume<'a>(&'a self, server: &'a ServerId, volume: &'a VolumeId) -> CloudFuture<'a, VolumeAttachment>;
    }
}

impl BlockStorage for Wired<dyn BlockStorage> {
    wired! {
        create fn create_volume<'a>(&'a self, request: &'a CreateVolume) -> CloudFuture<'a, Volume>;
    }
    wired! {
        fn list_availability_zones(&self) -> CloudFuture<'_, Vec<AvailabilityZone>>;
        fn get_volume<'a>(&'a self, id: &'a VolumeId) -> CloudFuture<'a, Volume>;
        fn list_volumes<'a>(&'a self, metadata: &'a BTreeMap<String, String>) -> CloudFuture<'a, Vec<Volume>>;
        fn delete_volume<'a>(&'a self, id: &'a VolumeId) -> CloudFuture<'a, ()>;
        fn extend_volume<'a>(&'a self, id: &'a VolumeId, size: i32) -> CloudFuture<'a, ()>;
        fn set_volume_metadata<'a>(&'a self, id: &'a VolumeId, metadata: &'a BTreeMap<String, String>) -> CloudFuture<'a, BTreeMap<String, String>>;
        fn delete_attachment<'a>(&'a self, id: &'a AttachmentId) -> CloudFuture<'a, ()>;
    }
}

impl Network for Wired<dyn Network> {
    wired! {
        create fn create_floating_ip<'a>(&'a self, request: &'a CreateFloatingIp) -> CloudFuture<'a, FloatingIp>;
        create fn update_floating_ip<'a>(&'a self, id: &'a FloatingIpId, port: Option<&'a PortId>) -> CloudFuture<'a, FloatingIp>;
        create fn create_port<'a>(&'a self, request: &'a net::CreatePort) -> CloudFuture<'a, Port>;
    }
    wired! {
        fn list_networks<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<net::Network>>;
        fn get_network<'a>(&'a self, id: &'a NetworkId) -> CloudFuture<'a, net::Network>;
        fn find_network<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, net::Network>;
        fn list_subnets<'a>(&'a self, filter: &'a SubnetFilter) -> CloudFuture<'a, Vec<Subnet>>;
        fn get_subnet<'a>(&'a self, id: &'a SubnetId) -> CloudFuture<'a, Subnet>;
        fn find_subnet<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, Subnet>;
        fn list_ports<'a>(&'a self, filter: &'a PortFilter) -> CloudFuture<'a, Vec<Port>>;
        fn get_port<'a>(&'a self, id: &'a PortId) -> CloudFuture<'a, Port>;
        fn update_port<'a>(&'a self, id: &'a PortId, request: &'a net::UpdatePort) -> CloudFuture<'a, Port>;
        fn delete_port<'a>(&'a self, id: &'a PortId) -> CloudFuture<'a, ()>;
        fn list_security_groups<'a>(&'a self, name: Option<&'a str>) -> CloudFuture<'a, Vec<net::SecurityGroup>>;
        fn find_security_group<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, net::SecurityGroup>;
        fn get_floating_ip<'a>(&'a self, id: &'a FloatingIpId) -> CloudFuture<'a, FloatingIp>;
        fn list_floating_ips<'a>(&'a self, filter: &'a FloatingIpFilter) -> CloudFuture<'a, Vec<FloatingIp>>;
        fn delete_floating_ip<'a>(&'a self, id: &'a FloatingIpId) -> CloudFuture<'a, ()>;
        fn set_floating_ip_description<'a>(&'a self, id: &'a FloatingIpId, description: &'a str) -> CloudFuture<'a, FloatingIp>;
    }
}

impl Dns for Wired<dyn Dns> {
    wired! {
        create fn create_record_set<'a>(&'a self, zone: &'a DnsZoneId, request: &'a CreateRecordSet) -> CloudFuture<'a, RecordSet>;
        create fn create_zone<'a>(&'a self, request: &'a CreateZone) -> CloudFuture<'a, DnsZone>;
    }
    wired! {
        fn find_zone<'a>(&'a self, name: &'a str) -> CloudFuture<'a, DnsZone>;
        fn list_zones(&self) -> CloudFuture<'_, Vec<DnsZone>>;
        fn zones_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<DnsZone>>;
        fn get_zone<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, DnsZone>;
        fn update_zone<'a>(&'a self, id: &'a DnsZoneId, request: &'a UpdateZone) -> CloudFuture<'a, DnsZone>;
        fn delete_zone<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, ()>;
        fn zone_nameservers<'a>(&'a self, id: &'a DnsZoneId) -> CloudFuture<'a, Vec<String>>;
        fn list_zone_record_sets<'a>(&'a self, zone: &'a DnsZoneId) -> CloudFuture<'a, Vec<RecordSet>>;
        fn update_record_set<'a>(&'a self, zone: &'a DnsZoneId, id: &'a RecordSetId, request: &'a UpdateRecordSet) -> CloudFuture<'a, RecordSet>;
        fn delete_record_set<'a>(&'a self, zone: &'a DnsZoneId, id: &'a RecordSetId) -> CloudFuture<'a, ()>;
    }
}

impl Firewalls for Wired<dyn Firewalls> {
    wired! {
        create fn create_security_group<'a>(&'a self, request: &'a CreateFirewall) -> CloudFuture<'a, Firewall>;
        create fn create_rule<'a>(&'a self, request: &'a CreateRule) -> CloudFuture<'a, Rule>;
        create fn create_address_group<'a>(&'a self, request: &'a CreateAddressGroup) -> CloudFuture<'a, AddressGroup>;
    }
    wired! {
        fn security_groups_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<Firewall>>;
        fn all_security_groups(&self) -> CloudFuture<'_, Vec<Firewall>>;
        fn get_security_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, Firewall>;
        fn set_security_group_description<'a>(&'a self, id: &'a str, description: &'a str) -> CloudFuture<'a, Firewall>;
        fn delete_security_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()>;
        fn delete_rule<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()>;
        fn address_groups_named<'a>(&'a self, name: &'a str) -> CloudFuture<'a, Vec<AddressGroup>>;
        fn change_addresses<'a>(&'a self, id: &'a str, add: bool, addresses: &'a [String]) -> CloudFuture<'a, AddressGroup>;
        fn delete_address_group<'a>(&'a self, id: &'a str) -> CloudFuture<'a, ()>;
        fn ports_using<'a>(&'a self, id: &'a str) -> CloudFuture<'a, Vec<String>>;
    }
}

impl LoadBalancing for Wired<dyn LoadBalancing> {
    fn load_balancers_of<'a>(&'a self, owner_uid: &'a str) -> CloudFuture<'a, Vec<LoadBalancer>> {
        self.wire.lookup(self.inner.load_balancers_of(owner_uid))
    }
    wired! {
        create fn create_load_balancer<'a>(&'a self, request: &'a CreateLoadBalancer) -> CloudFuture<'a, LoadBalancer>;
        create fn create_listener<'a>(&'a self, request: &'a CreateListener) -> CloudFuture<'a, Listener>;
        create fn create_pool<'a>(&'a self, request: &'a CreatePool) -> CloudFuture<'a, Pool>;
        create fn create_health_monitor<'a>(&'a self, request: &'a CreateHealthMonitor) -> CloudFuture<'a, HealthMonitor>;
        create fn replace_members<'a>(&'a self, pool: &'a PoolId, members: &'a [MemberSpec]) -> CloudFuture<'a, ()>;
        create fn store_certificate<'a>(&'a self, name: &'a str, pkcs12: &'a [u8]) -> CloudFuture<'a, StoredSecret>;
    }
    wired! {
        fn get_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, LoadBalancer>;
        fn list_load_balancers<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<LoadBalancer>>;
        fn delete_load_balancer<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, ()>;
        fn set_load_balancer_tags<'a>(&'a self, id: &'a LoadBalancerId, tags: &'a [String]) -> CloudFuture<'a, LoadBalancer>;
        fn get_status_tree<'a>(&'a self, id: &'a LoadBalancerId) -> CloudFuture<'a, StatusTree>;
        fn list_listeners<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Listener>>;
        fn get_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, Listener>;
        fn listener_stats<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ListenerStats>;
        fn update_listener<'a>(&'a self, id: &'a ListenerId, request: &'a UpdateListener) -> CloudFuture<'a, Listener>;
        fn delete_listener<'a>(&'a self, id: &'a ListenerId) -> CloudFuture<'a, ()>;
        fn list_pools<'a>(&'a self, filter: &'a LbFilter) -> CloudFuture<'a, Vec<Pool>>;
        fn get_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, Pool>;
        fn update_pool<'a>(&'a self, id: &'a PoolId, request: &'a UpdatePool) -> CloudFuture<'a, Pool>;
        fn delete_pool<'a>(&'a self, id: &'a PoolId) -> CloudFuture<'a, ()>;
        fn get_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, HealthMonitor>;
        fn update_health_monitor<'a>(&'a self, id: &'a HealthMonitorId, request: &'a UpdateHealthMonitor) -> CloudFuture<'a, HealthMonitor>;
        fn delete_health_monitor<'a>(&'a self, id: &'a HealthMonitorId) -> CloudFuture<'a, ()>;
        fn list_members<'a>(&'a self, pool: &'a PoolId) -> CloudFuture<'a, Vec<Member>>;
        fn list_lb_flavors(&self) -> CloudFuture<'_, Vec<LbFlavor>>;
        fn find_lb_flavor<'a>(&'a self, name_or_id: &'a str) -> CloudFuture<'a, LbFlavor>;
        fn list_certificates<'a>(&'a self, prefix: &'a str) -> CloudFuture<'a, Vec<StoredSecret>>;
        fn delete_certificate<'a>(&'a self, secret: &'a StoredSecret) -> CloudFuture<'a, ()>;
    }
}
