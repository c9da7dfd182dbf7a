//! Addresses and CIDRs as Neutron reads them: `neutron_lib.api.validators`'
//! `validate_ip_address` and `validate_subnet` (with their messages), and
//! `ipam_utils.check_subnet_ip` (an IPv4 address is valid on a subnet when it is inside
//! the CIDR and neither its network nor its broadcast address; the gateway may be
//! chosen). Pure functions: no request, no world.
//!
//! IPv6 is recognised only so that a valid IPv6 address is not called invalid; the
//! simulator's subnets are IPv4.

use std::net::{IpAddr, Ipv4Addr};

/// An IPv4 network: its address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cidr {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = s.split_once('/')?;
        let prefix: u8 = p.parse().ok().filter(|p| *p <= 32)?;
        let addr = a.parse().ok()?;
        Some(Cidr { addr, prefix })
    }

    fn mask(self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0)
    }

    /// The network address (host bits cleared).
    pub fn network(self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & self.mask())
    }

    pub fn broadcast(self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network()) | !self.mask())
    }

    /// The canonical form, `10.20.0.0/24`.
    pub fn canonical(self) -> String {
        format!("{}/{}", self.network(), self.prefix)
    }

    pub fn contains(self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & self.mask() == u32::from(self.network())
    }

    pub fn overlaps(self, other: Cidr) -> bool {
        self.contains(other.network()) || other.contains(self.network())
    }

    /// `check_subnet_ip`: inside, and neither the network nor the broadcast address.
    pub fn holds(self, ip: IpAddr) -> bool {
        let IpAddr::V4(ip) = ip else { return false };
        self.contains(ip) && ip != self.network() && ip != self.broadcast()
    }
}

/// `validate_ip_address`: an IPv4 address in dotted form without leading zeros, or
/// an IPv6 address.
pub(super) fn ip_address(s: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(ip);
    }
    let octets: Vec<&str> = s.split('.').collect();
    let zero_filled = octets.len() == 4
        && octets
            .iter()
            .all(|o| !o.is_empty() && o.len() <= 3 && o.bytes().all(|b| b.is_ascii_digit()));
    if zero_filled {
        let parts: Vec<u32> = octets.iter().filter_map(|o| o.parse().ok()).collect();
        if parts.iter().all(|p| *p <= 255) {
            let ip = parts.iter().map(u32::to_string).collect::<Vec<_>>();
            let ip = ip.join(".");
            return Err(format!(
                "'{s}' is not an accurate IPv4 address representation. Leading zeros are not allowed, '{ip}' is recommended"
            ));
        }
    }
    Err(format!("'{s}' is not a valid IP address"))
}

/// `validate_subnet`, for IPv4: a CIDR (host bits may be set), or the message.
pub(super) fn subnet(s: &str) -> Result<Cidr, String> {
    if let Some(c) = Cidr::parse(s) {
        return Ok(c);
    }
    match s.parse::<Ipv4Addr>() {
        Ok(ip) => Err(format!(
            "'{s}' isn't a recognized IP subnet cidr, '{ip}/32' is recommended"
        )),
        Err(_) => Err(format!("'{s}' is not a valid IP subnet")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_and_broadcast_are_not_valid_on_a_subnet_but_the_gateway_is() {
        let c = Cidr::parse("10.20.0.0/24").expect("cidr");
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert!(!c.holds(ip("10.20.0.0")));
        assert!(!c.holds(ip("10.20.0.255")));
        assert!(c.holds(ip("10.20.0.1")));
        assert!(!c.holds(ip("10.9.0.50")));
        assert!(!c.holds(ip("::1")));
    }

    #[test]
    fn addresses_are_refused_in_neutrons_words() {
        assert_eq!(
            ip_address("banana"),
            Err("'banana' is not a valid IP address".into())
        );
        assert!(ip_address("010.0.0.1").is_err_and(|m| m.contains("'10.0.0.1' is recommended")));
        assert!(ip_address("fe80::1").is_ok());
    }

    #[test]
    fn a_cidr_with_host_bits_is_canonicalised_and_overlaps_are_seen() {
        let c = subnet("10.20.0.5/24").expect("cidr");
        assert_eq!(c.canonical(), "10.20.0.0/24");
        assert!(c.overlaps(Cidr::parse("10.20.0.128/25").expect("cidr")));
        assert!(!c.overlaps(Cidr::parse("10.21.0.0/24").expect("cidr")));
        assert_eq!(
            subnet("10.0.2.0"),
            Err(
                "'10.0.2.0' isn't a recognized IP subnet cidr, '10.0.2.0/32' is recommended".into()
            )
        );
    }
}
