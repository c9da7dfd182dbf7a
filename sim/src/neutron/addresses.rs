//! A port's fixed IPs as Neutron's IPAM gives them: each `fixed_ips` item resolved
//! to a subnet of the port's network (`IpamBackendMixin._get_subnet_for_fixed_ip`,
//! with its errors), then taken: a chosen address if it is free (inside the
//! allocation pool or not), else the lowest free address of the pool. Without
//! `fixed_ips`, the lowest free address of the network's first subnet with one.
//!
//! Deliberately not here: IPv6 subnets and several addresses per subnet chosen
//! without an address (each item takes one).

use std::net::{IpAddr, Ipv4Addr};

use axum::response::Response;

use super::envelope::Cx;
use super::ipv4::Cidr;
use super::port_body::WantedIp;
use crate::model::{FixedIp, Network, Subnet};
use crate::world::World;

fn invalid_input(cx: &Cx, why: &str) -> Response {
    let msg = format!("Invalid input for operation: {why}.");
    cx.err(400, "InvalidInput", &msg)
}

fn exhausted(cx: &Cx, net: &Network) -> Response {
    let msg = format!("No more IP addresses available on network {}.", net.id);
    cx.err(409, "IpAddressGenerationFailure", &msg)
}

/// The addresses `wanted` asks for on `net`, taken; `old` (an updated port's) are
/// given back first, and kept if the request fails.
pub(super) fn assign(
    cx: &Cx,
    w: &mut World,
    net: &Network,
    wanted: &[WantedIp],
    old: &[FixedIp],
) -> Result<Vec<FixedIp>, Response> {
    let resolved = wanted
        .iter()
        .map(|x| resolve(cx, w, net, x))
        .collect::<Result<Vec<_>, _>>()?;
    w.release_ips(old);
    let taken = take(cx, w, net, &resolved);
    if taken.is_err() {
        for f in old {
            w.claim_ip(&f.subnet_id, f.ip);
        }
    }
    taken
}

/// No `fixed_ips`: an address of the first subnet that has one free, none on a
/// network without subnets.
pub(super) fn any(cx: &Cx, w: &mut World, net: &Network) -> Result<Vec<FixedIp>, Response> {
    if net.subnets.is_empty() {
        return Ok(Vec::new());
    }
    for subnet_id in &net.subnets {
        if let Some(ip) = w.allocate_ip(subnet_id) {
            let subnet_id = subnet_id.clone();
            return Ok(vec![FixedIp { subnet_id, ip }]);
        }
    }
    Err(exhausted(cx, net))
}

/// The subnet an item names or whose CIDR holds its address, and the address.
fn resolve(
    cx: &Cx,
    w: &World,
    net: &Network,
    wanted: &WantedIp,
) -> Result<(String, Option<Ipv4Addr>), Response> {
    let subnets: Vec<&Subnet> = net
        .subnets
        .iter()
        .filter_map(|id| w.subnets.iter().find(|s| s.id == *id))
        .collect();
    if subnets.is_empty() {
        return Err(invalid_input(
            cx,
            "IP allocation requires subnets for network",
        ));
    }
    let holds = |s: &Subnet, ip: IpAddr| Cidr::parse(&s.cidr).is_some_and(|c| c.holds(ip));
    let v4 = |ip: Option<IpAddr>| match ip {
        Some(IpAddr::V4(v)) => Some(v),
        _ => None,
    };
    let Some(id) = &wanted.subnet_id else {
        let Some(ip) = wanted.ip else {
            return Err(invalid_input(
                cx,
                "IP allocation requires subnet_id or ip_address",
            ));
        };
        let msg = format!(
            "IP address {ip} is not a valid IP for any of the subnets on the specified network."
        );
        let s = subnets.iter().find(|s| holds(s, ip));
        let s = s.ok_or_else(|| cx.err(400, "InvalidIpForNetwork", &msg))?;
        return Ok((s.id.clone(), v4(Some(ip))));
    };
    let Some(s) = subnets.iter().find(|s| s.id == *id) else {
        return Err(foreign_subnet(cx, w, id));
    };
    match wanted.ip {
        Some(ip) if !holds(s, ip) => {
            let msg = format!("IP address {ip} is not a valid IP for the specified subnet.");
            Err(cx.err(400, "InvalidIpForSubnet", &msg))
        }
        ip => Ok((s.id.clone(), v4(ip))),
    }
}

/// A subnet named in `fixed_ips` that is not the port's network's.
fn foreign_subnet(cx: &Cx, w: &World, id: &str) -> Response {
    match w.subnets.iter().find(|s| s.id == id) {
        // The network named is the subnet's own, as Neutron words it.
        Some(s) => invalid_input(
            cx,
            &format!(
                "Failed to create port on network {}, because fixed_ips included invalid subnet {id}",
                s.network_id
            ),
        ),
        None => cx.err(
            404,
            "SubnetNotFound",
            &format!("Subnet {id} could not be found."),
        ),
    }
}

/// Takes each resolved address (or the pool's lowest free one); all or none.
fn take(
    cx: &Cx,
    w: &mut World,
    net: &Network,
    resolved: &[(String, Option<Ipv4Addr>)],
) -> Result<Vec<FixedIp>, Response> {
    let mut taken: Vec<FixedIp> = Vec::new();
    for (subnet_id, ip) in resolved {
        let got = match ip {
            Some(ip) if w.claim_ip(subnet_id, *ip) => Ok(*ip),
            Some(ip) => {
                let msg = format!("IP address {ip} already allocated in subnet {subnet_id}");
                Err(cx.err(409, "IpAddressAlreadyAllocated", &msg))
            }
            None => w.allocate_ip(subnet_id).ok_or_else(|| exhausted(cx, net)),
        };
        match got {
            Ok(ip) => taken.push(FixedIp {
                subnet_id: subnet_id.clone(),
                ip,
            }),
            Err(e) => {
                w.release_ips(&taken);
                return Err(e);
            }
        }
    }
    Ok(taken)
}
