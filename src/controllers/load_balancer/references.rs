//! The names a LoadBalancer's create needs as OpenStack IDs: the VIP subnet and the
//! Octavia flavor (from the spec, else the operator configuration), and the external
//! network of a public load balancer's floating IP.

use verda_api::v1alpha1::{LoadBalancer, VipType};

use crate::cloud::ids::{LbFlavorId, NetworkId, SubnetId};
use crate::cloud::{LoadBalancing, Network};
use crate::config::Config;
use crate::runtime::ReconcileError;
use crate::runtime::object::object_key;
use crate::runtime::problem::Problem;

/// What a create needs resolved from names: the VIP subnet and the Octavia flavor.
pub struct Placement {
    pub vip_subnet: SubnetId,
    pub flavor: Option<LbFlavorId>,
}

pub async fn placement(
    config: &Config,
    octavia: &dyn LoadBalancing,
    neutron: &dyn Network,
    lb: &LoadBalancer,
) -> Result<Placement, ReconcileError> {
    let key = object_key(lb);
    let subnet = neutron
        .find_subnet(vip_subnet_name(config, lb)?)
        .await
        .map_err(ReconcileError::cloud("find the VIP subnet", &key))?;
    let flavor = match flavor_name(config, lb)? {
        None => None,
        Some(name) => Some(
            octavia
                .find_lb_flavor(name)
                .await
                .map_err(ReconcileError::cloud("find the load balancer flavor", &key))?
                .id,
        ),
    };
    Ok(Placement {
        vip_subnet: subnet.id,
        flavor,
    })
}

/// The VIP subnet's name: the spec's, else the operator configuration's rule for the
/// region, zone and VIP type.
pub fn vip_subnet_name<'a>(
    config: &'a Config,
    lb: &'a LoadBalancer,
) -> Result<&'a str, ReconcileError> {
    let spec = &lb.spec;
    if let Some(name) = &spec.vip_subnet {
        return Ok(name);
    }
    let vip_type = match spec.vip_type {
        VipType::Private => "private",
        VipType::Public => "public",
    };
    let region = spec.region.as_deref().unwrap_or_default();
    let zone = spec.zone.as_deref().unwrap_or_default();
    config
        .load_balancer
        .vip_subnet(region, zone, vip_type)
        .ok_or_else(|| ReconcileError::Invalid {
            object: object_key(lb),
            problem: Problem::VipSubnetNotConfigured,
            message: format!(
                "no loadBalancer.vipSubnets rule of the operator configuration matches region {region:?}, \
                 zone {zone:?}, vipType {vip_type}; add one or set spec.vipSubnet"
            ),
        })
}

/// The Octavia flavor the spec's `serviceType` maps to (`None`: Octavia's default).
pub fn flavor_name<'a>(
    config: &'a Config,
    lb: &LoadBalancer,
) -> Result<Option<&'a str>, ReconcileError> {
    let flavors = &config.load_balancer.flavors;
    match flavors.get(&lb.spec.service_type) {
        Some(name) if name.is_empty() => Ok(None),
        Some(name) => Ok(Some(name)),
        None => Err(ReconcileError::Invalid {
            object: object_key(lb),
            problem: Problem::ServiceTypeUnknown,
            message: format!(
                "serviceType {:?} is not configured; known: {}",
                lb.spec.service_type,
                flavors
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// The external network floating IPs of `vipType: public` come from.
pub async fn floating_network(
    config: &Config,
    neutron: &dyn Network,
    key: &str,
) -> Result<NetworkId, ReconcileError> {
    Ok(neutron
        .find_network(&config.load_balancer.floating_network)
        .await
        .map_err(ReconcileError::cloud("find the floating IP network", key))?
        .id)
}
