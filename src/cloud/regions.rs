//! The cloud as the controllers talk to it: per service, in the cloud's own region or in
//! the region a LoadBalancer names. One [`CloudServices`] per set of credentials (a tenant).

use std::sync::Arc;

use super::client::OpenStackClient;
use super::services::{BlockStorage, CloudFuture, Compute, Dns, Firewalls, LoadBalancing, Network};

/// The cloud, per region. VirtualMachines use the cloud's own region; a LoadBalancer
/// may name another.
pub trait CloudServices: Send + Sync {
    fn compute(&self) -> Arc<dyn Compute>;
    fn network(&self, region: Option<&str>) -> Arc<dyn Network>;
    fn load_balancing(&self, region: Option<&str>) -> Arc<dyn LoadBalancing>;
    /// Neutron's security groups, in the region of the SecurityGroup.
    fn firewalls(&self, region: Option<&str>) -> Arc<dyn Firewalls>;
    /// Designate, in the region of the object its record sets are for.
    fn dns(&self, region: Option<&str>) -> Arc<dyn Dns>;
    /// Cinder, in the cloud's own region (where the VirtualMachines are).
    fn block_storage(&self) -> Arc<dyn BlockStorage>;
    /// The ID of the project these credentials act in (from their token).
    fn project_id(&self) -> CloudFuture<'_, String>;
}

impl CloudServices for OpenStackClient {
    fn compute(&self) -> Arc<dyn Compute> {
        Arc::new(self.clone())
    }

    fn network(&self, region: Option<&str>) -> Arc<dyn Network> {
        Arc::new(in_region(self, region))
    }

    fn load_balancing(&self, region: Option<&str>) -> Arc<dyn LoadBalancing> {
        Arc::new(in_region(self, region))
    }

    fn firewalls(&self, region: Option<&str>) -> Arc<dyn Firewalls> {
        Arc::new(in_region(self, region))
    }

    fn dns(&self, region: Option<&str>) -> Arc<dyn Dns> {
        Arc::new(in_region(self, region))
    }

    fn block_storage(&self) -> Arc<dyn BlockStorage> {
        Arc::new(self.clone())
    }

    fn project_id(&self) -> CloudFuture<'_, String> {
        Box::pin(OpenStackClient::project_id(self))
    }
}

fn in_region(client: &OpenStackClient, region: Option<&str>) -> OpenStackClient {
    match region {
        Some(region) => client.with_region(region),
        None => client.clone(),
    }
}
