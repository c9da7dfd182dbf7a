//! The Neutron rules a SecurityGroup's spec asks for, once its peers are known: each
//! declared rule as the shape Neutron compares rules by, and Neutron's two "any
//! egress" rules while the spec declares no egress of its own. Pure.

use std::collections::BTreeMap;

use verda_api::v1alpha1::{EtherType, RuleDirection, SecurityGroupRule, SecurityGroupSpec};

use crate::cloud::model::firewall::{Remote, RuleShape};

/// What the peers the rules name stand for in Neutron, as far as known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Peers {
    /// This group's own ID, once it exists (a rule may name its own SecurityGroup).
    pub own: Option<(String, String)>,
    /// A VirtualMachineGroup's address group ID.
    pub address_groups: BTreeMap<String, String>,
    /// A security group name's ID, or why it is not known yet.
    pub security_groups: BTreeMap<String, Result<String, String>>,
    /// A LoadBalancer's VIP subnet CIDR, or why it is not known yet.
    pub load_balancers: BTreeMap<String, Result<String, String>>,
}

/// A rule the group should have: the spec's rule `index` (none for a default egress
/// rule) as Neutron would show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub index: Option<usize>,
    pub shape: RuleShape,
    pub description: Option<String>,
}

/// The rules, and why the others cannot be written yet (a peer not Ready).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Desired {
    pub rules: Vec<Wanted>,
    pub waiting: Vec<String>,
}

/// The rules `spec` asks for with `peers` as known now.
pub fn desired(spec: &SecurityGroupSpec, peers: &Peers) -> Desired {
    let mut out = Desired::default();
    for (index, rule) in spec.rules.iter().enumerate() {
        match remote(rule, peers) {
            Ok((remote, family)) => out.rules.push(Wanted {
                index: Some(index),
                shape: shape(rule, remote, family),
                description: rule.description.clone(),
            }),
            Err(why) => out.waiting.push(format!("rule {}: {why}", index + 1)),
        }
    }
    let declares_egress = spec
        .rules
        .iter()
        .any(|r| r.direction == RuleDirection::Egress);
    if !declares_egress {
        for ethertype in ["IPv4", "IPv6"] {
            out.rules.push(Wanted {
                index: None,
                shape: RuleShape {
                    direction: "egress".into(),
                    ethertype: ethertype.into(),
                    protocol: None,
                    ports: None,
                    remote: Remote::Anyone,
                },
                description: None,
            });
        }
    }
    out
}

fn shape(rule: &SecurityGroupRule, remote: Remote, family: Option<EtherType>) -> RuleShape {
    let ethertype = match rule.ether_type.or(family).unwrap_or_default() {
        EtherType::IPv4 => "IPv4",
        EtherType::IPv6 => "IPv6",
    };
    RuleShape {
        direction: match rule.direction {
            RuleDirection::Ingress => "ingress".into(),
            RuleDirection::Egress => "egress".into(),
        },
        ethertype: ethertype.into(),
        protocol: rule
            .protocol
            .as_ref()
            .map(|p| p.to_ascii_lowercase())
            .filter(|p| p != "any"),
        ports: rule.ports.as_deref().and_then(ports),
        remote,
    }
}

/// `5432` or `9100-9110` as Neutron's inclusive range; every port (`1-65535`) is no
/// range, as Neutron stores it.
pub fn ports(text: &str) -> Option<(u32, u32)> {
    let range = match text.split_once('-') {
        Some((low, high)) => (low.parse().ok()?, high.parse().ok()?),
        None => text.parse().ok().map(|p| (p, p))?,
    };
    (range != (1, 65535)).then_some(range)
}

/// The rule's remote in Neutron, and the address family its CIDR implies.
fn remote(rule: &SecurityGroupRule, peers: &Peers) -> Result<(Remote, Option<EtherType>), String> {
    let Some(from) = &rule.from else {
        return Ok((Remote::Anyone, None));
    };
    if let Some(cidr) = &from.cidr {
        let cidr = normalised(cidr).ok_or_else(|| format!("{cidr} is not an address range"))?;
        return Ok(range(cidr));
    }
    if let Some(group) = &from.virtual_machine_group {
        let id = peers.address_groups.get(group).ok_or_else(|| {
            format!("the address group of VirtualMachineGroup {group} is being made")
        })?;
        return Ok((Remote::AddressGroup(id.clone()), None));
    }
    if let Some(name) = &from.security_group {
        if let Some((own_name, id)) = &peers.own
            && own_name == name
        {
            return Ok((Remote::Group(id.clone()), None));
        }
        let found = peers.security_groups.get(name).cloned();
        let id = found.unwrap_or_else(|| Err(format!("security group {name} is not known yet")))?;
        return Ok((Remote::Group(id), None));
    }
    if let Some(name) = &from.load_balancer {
        let found = peers.load_balancers.get(name).cloned();
        let cidr = found.unwrap_or_else(|| Err(format!("LoadBalancer {name} is not known yet")))?;
        return Ok(range(normalised(&cidr).unwrap_or(cidr)));
    }
    Ok((Remote::Anyone, None))
}

/// A range as a remote: everything (`0.0.0.0/0`, `::/0`) is Neutron's "anyone".
fn range(cidr: String) -> (Remote, Option<EtherType>) {
    let family = family(&cidr);
    match cidr.ends_with("/0") {
        true => (Remote::Anyone, Some(family)),
        false => (Remote::Cidr(cidr), Some(family)),
    }
}

fn family(cidr: &str) -> EtherType {
    match cidr.contains(':') {
        true => EtherType::IPv6,
        false => EtherType::IPv4,
    }
}

/// The range with its host bits cleared (`10.1.2.3/8` → `10.0.0.0/8`), as Neutron
/// stores it; a bare address is its own /32 or /128.
pub fn normalised(cidr: &str) -> Option<String> {
    let (address, length) = cidr.split_once('/').unwrap_or((cidr, ""));
    let address: std::net::IpAddr = address.parse().ok()?;
    match address {
        std::net::IpAddr::V4(v4) => {
            let length: u32 = if length.is_empty() {
                32
            } else {
                length.parse().ok()?
            };
            let mask = u32::MAX.checked_shl(32 - length.min(32)).unwrap_or(0);
            let network = std::net::Ipv4Addr::from(u32::from(v4) & mask);
            (length <= 32).then(|| format!("{network}/{length}"))
        }
        std::net::IpAddr::V6(v6) => {
            let length: u32 = if length.is_empty() {
                128
            } else {
                length.parse().ok()?
            };
            let mask = u128::MAX.checked_shl(128 - length.min(128)).unwrap_or(0);
            let network = std::net::Ipv6Addr::from(u128::from(v6) & mask);
            (length <= 128).then(|| format!("{network}/{length}"))
        }
    }
}

/// How a status or an event names a rule: `ingress IPv4 tcp 5432 from 10.0.0.0/8`.
pub fn describe(shape: &RuleShape, peer_names: &BTreeMap<String, String>) -> String {
    let mut text = format!("{} {}", shape.direction, shape.ethertype);
    text.push(' ');
    text.push_str(shape.protocol.as_deref().unwrap_or("any"));
    if let Some((low, high)) = shape.ports {
        match low == high {
            true => text.push_str(&format!(" {low}")),
            false => text.push_str(&format!(" {low}-{high}")),
        }
    }
    let side = if shape.direction == "egress" {
        "to"
    } else {
        "from"
    };
    let named = |id: &String| peer_names.get(id).cloned().unwrap_or_else(|| id.clone());
    match &shape.remote {
        Remote::Anyone => {}
        Remote::Cidr(cidr) => text.push_str(&format!(" {side} {cidr}")),
        Remote::Group(id) => text.push_str(&format!(" {side} security group {}", named(id))),
        Remote::AddressGroup(id) => text.push_str(&format!(" {side} address group {}", named(id))),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use verda_api::v1alpha1::RulePeer;

    fn rule(ports: &str, from: RulePeer) -> SecurityGroupRule {
        SecurityGroupRule {
            direction: RuleDirection::Ingress,
            protocol: Some("tcp".into()),
            ports: Some(ports.into()),
            from: Some(from),
            ..SecurityGroupRule::default()
        }
    }

    #[test]
    fn ranges_are_stored_as_neutron_does() {
        assert_eq!(normalised("10.1.2.3/8").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(normalised("10.0.0.5").as_deref(), Some("10.0.0.5/32"));
        assert_eq!(normalised("0.0.0.0/0").as_deref(), Some("0.0.0.0/0"));
        assert_eq!(
            normalised("2001:db8::1/32").as_deref(),
            Some("2001:db8::/32")
        );
        assert_eq!(normalised("10.0.0.0/33"), None);
        assert_eq!(normalised("web"), None);
    }

    #[test]
    fn a_group_peer_waits_for_its_address_group_and_the_rest_is_written() {
        let spec = SecurityGroupSpec {
            rules: vec![
                rule(
                    "5432",
                    RulePeer {
                        virtual_machine_group: Some("web".into()),
                        ..RulePeer::default()
                    },
                ),
                rule(
                    "9100-9110",
                    RulePeer {
                        cidr: Some("10.1.0.0/8".into()),
                        ..RulePeer::default()
                    },
                ),
            ],
            ..SecurityGroupSpec::default()
        };
        let out = desired(&spec, &Peers::default());
        assert_eq!(out.waiting.len(), 1);
        assert!(out.waiting[0].starts_with("rule 1:"), "{:?}", out.waiting);
        // The CIDR rule, then Neutron's two default egress rules.
        assert_eq!(out.rules.len(), 3);
        assert_eq!(out.rules[0].shape.ports, Some((9100, 9110)));
        assert_eq!(out.rules[0].shape.remote, Remote::Cidr("10.0.0.0/8".into()));
        assert_eq!(out.rules[1].shape.direction, "egress");
        let mut peers = Peers::default();
        peers.address_groups.insert("web".into(), "ag".into());
        let out = desired(&spec, &peers);
        assert!(out.waiting.is_empty());
        assert_eq!(out.rules[0].shape.remote, Remote::AddressGroup("ag".into()));
        assert_eq!(out.rules[0].shape.ports, Some((5432, 5432)));
    }

    #[test]
    fn everything_is_anyone_and_every_port_is_no_range() {
        let spec = SecurityGroupSpec {
            rules: vec![rule(
                "1-65535",
                RulePeer {
                    cidr: Some("::/0".into()),
                    ..RulePeer::default()
                },
            )],
            ..SecurityGroupSpec::default()
        };
        let out = desired(&spec, &Peers::default());
        assert_eq!(out.rules[0].shape.remote, Remote::Anyone);
        assert_eq!(out.rules[0].shape.ethertype, "IPv6");
        assert_eq!(out.rules[0].shape.ports, None);
    }

    #[test]
    fn a_declared_egress_rule_replaces_the_default_ones() {
        let spec = SecurityGroupSpec {
            rules: vec![SecurityGroupRule {
                direction: RuleDirection::Egress,
                protocol: Some("udp".into()),
                ports: Some("53".into()),
                ..SecurityGroupRule::default()
            }],
            ..SecurityGroupSpec::default()
        };
        let out = desired(&spec, &Peers::default());
        assert_eq!(out.rules.len(), 1);
        assert_eq!(
            describe(&out.rules[0].shape, &BTreeMap::new()),
            "egress IPv4 udp 53"
        );
    }
}
