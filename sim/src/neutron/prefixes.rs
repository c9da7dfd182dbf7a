//! IPv4 and IPv6 prefixes as security group rules and address groups read them
//! (netaddr's `IPNetwork`, which Neutron uses there): an address with a prefix length,
//! host bits kept as written, or a bare address taken as `/32` or `/128`. Pure
//! functions: no request, no world. Subnets (IPv4 only) are `ipv4.rs`'.

use std::net::IpAddr;

/// An address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    /// `a.b.c.d/len`, `x::y/len`, or a bare address (the whole length).
    pub fn parse(s: &str) -> Option<Prefix> {
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(l) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => l.parse().ok()?,
            Some(_) => return None,
            None => max,
        };
        (len <= max).then_some(Prefix { addr, len })
    }

    /// As written, host bits kept: `10.1.2.3/8`.
    pub fn text(self) -> String {
        format!("{}/{}", self.addr, self.len)
    }

    /// The network, host bits cleared: `10.0.0.0/8`.
    pub fn network(self) -> String {
        let addr = match self.addr {
            IpAddr::V4(a) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                IpAddr::from((u32::from(a) & mask).to_be_bytes())
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                IpAddr::from((u128::from(a) & mask).to_be_bytes())
            }
        };
        format!("{addr}/{}", self.len)
    }

    /// `IPv4` or `IPv6`.
    pub fn ethertype(self) -> &'static str {
        match self.addr {
            IpAddr::V4(_) => "IPv4",
            IpAddr::V6(_) => "IPv6",
        }
    }
}

/// A CIDR with its length written (`validate_subnet` of an address group's POST): its
/// network, or Neutron's reason.
pub(super) fn subnet(s: &str) -> Result<String, String> {
    match Prefix::parse(s).filter(|_| s.contains('/')) {
        Some(p) => Ok(p.network()),
        None => Err(format!("'{s}' is not a valid IP subnet")),
    }
}

/// Python's `repr` of a list of strings: `['a', 'b']`.
pub(super) fn py_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("[{}]", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_keep_host_bits_and_bare_addresses_are_whole() {
        let p = Prefix::parse("10.1.2.3/8").expect("prefix");
        assert_eq!(
            (p.text(), p.network()),
            ("10.1.2.3/8".into(), "10.0.0.0/8".into())
        );
        assert_eq!(
            Prefix::parse("10.0.0.7").map(Prefix::text).as_deref(),
            Some("10.0.0.7/32")
        );
        let v6 = Prefix::parse("2001:db8::1/64").expect("prefix");
        assert_eq!(
            (v6.network(), v6.ethertype()),
            ("2001:db8::/64".into(), "IPv6")
        );
        assert_eq!(
            Prefix::parse("0.0.0.0/0").map(Prefix::network).as_deref(),
            Some("0.0.0.0/0")
        );
        assert!(Prefix::parse("10.0.0.300/8").is_none());
        assert!(Prefix::parse("10.0.0.0/33").is_none());
    }

    #[test]
    fn an_address_group_cidr_needs_its_length() {
        assert_eq!(subnet("10.0.2.9/24"), Ok("10.0.2.0/24".into()));
        assert_eq!(
            subnet("10.0.1.7"),
            Err("'10.0.1.7' is not a valid IP subnet".into())
        );
        assert_eq!(py_list(&["a".into(), "b".into()]), "['a', 'b']");
    }
}
