//! What a SecurityGroup's round writes, decided from what Neutron shows. Pure.
//!
//! One kind of write per round, in this order: the group, its owner record, the
//! address groups (made, or their addresses brought to the replicas'), the rules (new
//! ones first, then the ones no longer declared: Neutron's rules are immutable, so an
//! edit is a new rule and a deleted one), the address groups no rule names any more.

use std::collections::{BTreeMap, BTreeSet};

use verda_api::v1alpha1::SecurityGroupSpec;

use super::rules::{Desired, Peers, desired};
use crate::cloud::model::firewall::{CreateAddressGroup, CreateFirewall, CreateRule, Firewall};

/// An address group the object keeps for one VirtualMachineGroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub group: String,
    pub id: String,
    pub addresses: Vec<String>,
}

/// What `observe` found and gathered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    /// The object's Neutron group with its rules.
    pub firewall: Option<Firewall>,
    /// Its address groups.
    pub held: Vec<Held>,
    /// Per VirtualMachineGroup the rules name, its replicas' addresses (`/32`).
    pub addresses: BTreeMap<String, BTreeSet<String>>,
    /// The peers other than address groups (security groups, load balancers).
    pub peers: Peers,
}

/// A write to an address group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AddressWrite {
    Create {
        group: String,
        request: CreateAddressGroup,
    },
    Change {
        group: String,
        id: String,
        add: bool,
        addresses: Vec<String>,
    },
}

/// The writes of one round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Create(CreateFirewall),
    /// The description (owner record, free text) differs.
    Describe {
        id: String,
        description: String,
    },
    AddressGroups(Vec<AddressWrite>),
    Rules {
        create: Vec<CreateRule>,
        delete: Vec<String>,
    },
    /// Address groups of VirtualMachineGroups no rule names any more.
    DropAddressGroups(Vec<Held>),
    Converged,
}

/// The description the object's Neutron group (and its address groups) carry: the
/// owner record, then the spec's free text.
pub fn description(record: &str, text: Option<&str>) -> String {
    match text.filter(|t| !t.is_empty()) {
        Some(text) => format!("{record} {text}"),
        None => record.to_owned(),
    }
}

/// Whether `description` carries the owner `record`.
pub fn carries(description: &str, record: &str) -> bool {
    description == record
        || description
            .strip_prefix(record)
            .is_some_and(|rest| rest.starts_with(' '))
}

/// The name of the address group for VirtualMachineGroup `group`.
pub fn address_group_name(object: &str, group: &str) -> String {
    format!("{object}-from-{group}")
}

/// The peers, this group and its address groups included.
pub fn peers(seen: &Seen, name: &str) -> Peers {
    let mut peers = seen.peers.clone();
    peers.own = seen
        .firewall
        .as_ref()
        .map(|f| (name.to_owned(), f.id.clone()));
    for held in &seen.held {
        peers
            .address_groups
            .insert(held.group.clone(), held.id.clone());
    }
    peers
}

/// The next writes.
pub fn plan(spec: &SecurityGroupSpec, name: &str, seen: &Seen, record: &str) -> Step {
    let wanted_description = description(record, spec.description.as_deref());
    let Some(firewall) = &seen.firewall else {
        return Step::Create(CreateFirewall {
            name: name.to_owned(),
            description: wanted_description,
            stateful: spec.stateful,
        });
    };
    if firewall.description != wanted_description {
        return Step::Describe {
            id: firewall.id.clone(),
            description: wanted_description,
        };
    }
    let writes = address_writes(name, seen, record);
    if !writes.is_empty() {
        return Step::AddressGroups(writes);
    }
    let wanted = desired(spec, &peers(seen, name));
    let (create, delete) = rule_writes(firewall, &wanted);
    if !create.is_empty() || !delete.is_empty() {
        return Step::Rules { create, delete };
    }
    let unused: Vec<Held> = seen
        .held
        .iter()
        .filter(|h| !seen.addresses.contains_key(&h.group))
        .cloned()
        .collect();
    match unused.is_empty() {
        true => Step::Converged,
        false => Step::DropAddressGroups(unused),
    }
}

fn address_writes(name: &str, seen: &Seen, record: &str) -> Vec<AddressWrite> {
    let mut writes = Vec::new();
    for (group, wanted) in &seen.addresses {
        let Some(held) = seen.held.iter().find(|h| &h.group == group) else {
            writes.push(AddressWrite::Create {
                group: group.clone(),
                request: CreateAddressGroup {
                    name: address_group_name(name, group),
                    description: record.to_owned(),
                    addresses: wanted.iter().cloned().collect(),
                },
            });
            continue;
        };
        let have: BTreeSet<String> = held.addresses.iter().cloned().collect();
        // Added before removed: a replacement's address is let in before its
        // predecessor's goes.
        let added: Vec<String> = wanted.difference(&have).cloned().collect();
        let removed: Vec<String> = have.difference(wanted).cloned().collect();
        for (add, addresses) in [(true, added), (false, removed)] {
            if !addresses.is_empty() {
                writes.push(AddressWrite::Change {
                    group: group.clone(),
                    id: held.id.clone(),
                    add,
                    addresses,
                });
            }
        }
    }
    writes
}

/// The rules to create (declared, not in Neutron) and delete (in Neutron, not
/// declared). Nothing is deleted while a declared rule waits for its peer: that rule
/// may be one of them.
fn rule_writes(firewall: &Firewall, wanted: &Desired) -> (Vec<CreateRule>, Vec<String>) {
    let have: BTreeSet<_> = firewall
        .security_group_rules
        .iter()
        .map(|r| r.shape())
        .collect();
    let mut create: Vec<CreateRule> = Vec::new();
    for rule in &wanted.rules {
        let new = !have.contains(&rule.shape) && !create.iter().any(|c| c.shape == rule.shape);
        if new {
            create.push(CreateRule {
                security_group_id: firewall.id.clone(),
                shape: rule.shape.clone(),
                description: rule.description.clone(),
            });
        }
    }
    let delete = match wanted.waiting.is_empty() {
        false => Vec::new(),
        true => {
            let kept: BTreeSet<_> = wanted.rules.iter().map(|r| &r.shape).collect();
            firewall
                .security_group_rules
                .iter()
                .filter(|r| !kept.contains(&r.shape()))
                .map(|r| r.id.clone())
                .collect()
        }
    };
    (create, delete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::model::firewall::Rule;
    use verda_api::v1alpha1::{RuleDirection, RulePeer, SecurityGroupRule};

    const RECORD: &str = "verda-uid-u verda-cluster-c";

    fn spec(ports: &str) -> SecurityGroupSpec {
        SecurityGroupSpec {
            rules: vec![SecurityGroupRule {
                direction: RuleDirection::Ingress,
                protocol: Some("tcp".into()),
                ports: Some(ports.into()),
                from: Some(RulePeer {
                    virtual_machine_group: Some("web".into()),
                    ..RulePeer::default()
                }),
                ..SecurityGroupRule::default()
            }],
            ..SecurityGroupSpec::default()
        }
    }

    fn rule(id: &str, direction: &str, ethertype: &str) -> Rule {
        Rule {
            id: id.into(),
            direction: direction.into(),
            ethertype: ethertype.into(),
            ..Rule::default()
        }
    }

    fn seen() -> Seen {
        let mut seen = Seen {
            firewall: Some(Firewall {
                id: "sg".into(),
                name: "db".into(),
                description: RECORD.into(),
                stateful: true,
                security_group_rules: vec![
                    rule("e4", "egress", "IPv4"),
                    rule("e6", "egress", "IPv6"),
                ],
                revision_number: 1,
            }),
            ..Seen::default()
        };
        seen.addresses
            .insert("web".into(), ["10.0.0.5/32".to_owned()].into());
        seen
    }

    #[test]
    fn the_address_group_comes_before_the_rule_that_names_it() {
        let mut seen = seen();
        let step = plan(&spec("5432"), "db", &seen, RECORD);
        let Step::AddressGroups(writes) = step else {
            panic!("{step:?}")
        };
        assert!(matches!(&writes[0], AddressWrite::Create { request, .. }
            if request.name == "db-from-web" && request.addresses == ["10.0.0.5/32"]));
        seen.held.push(Held {
            group: "web".into(),
            id: "ag".into(),
            addresses: vec!["10.0.0.5/32".into()],
        });
        let Step::Rules { create, delete } = plan(&spec("5432"), "db", &seen, RECORD) else {
            panic!()
        };
        assert_eq!(create.len(), 1);
        assert!(delete.is_empty(), "Neutron's default egress rules stay");
    }

    #[test]
    fn a_scale_changes_addresses_and_no_rule() {
        let mut seen = seen();
        seen.held.push(Held {
            group: "web".into(),
            id: "ag".into(),
            addresses: vec!["10.0.0.5/32".into(), "10.0.0.9/32".into()],
        });
        seen.addresses.insert(
            "web".into(),
            ["10.0.0.5/32".to_owned(), "10.0.0.7/32".to_owned()].into(),
        );
        let Step::AddressGroups(writes) = plan(&spec("5432"), "db", &seen, RECORD) else {
            panic!()
        };
        assert_eq!(
            writes,
            vec![
                AddressWrite::Change {
                    group: "web".into(),
                    id: "ag".into(),
                    add: true,
                    addresses: vec!["10.0.0.7/32".into()]
                },
                AddressWrite::Change {
                    group: "web".into(),
                    id: "ag".into(),
                    add: false,
                    addresses: vec!["10.0.0.9/32".into()]
                },
            ]
        );
    }

    #[test]
    fn an_edited_port_range_creates_one_rule_and_deletes_one() {
        let mut seen = seen();
        seen.held.push(Held {
            group: "web".into(),
            id: "ag".into(),
            addresses: vec!["10.0.0.5/32".into()],
        });
        let old = Rule {
            protocol: Some("tcp".into()),
            port_range_min: Some(5432),
            port_range_max: Some(5432),
            remote_address_group_id: Some("ag".into()),
            ..rule("r1", "ingress", "IPv4")
        };
        if let Some(f) = seen.firewall.as_mut() {
            f.security_group_rules.push(old);
        }
        assert_eq!(plan(&spec("5432"), "db", &seen, RECORD), Step::Converged);
        let Step::Rules { create, delete } = plan(&spec("5432-5433"), "db", &seen, RECORD) else {
            panic!()
        };
        assert_eq!(create.len(), 1);
        assert_eq!(create[0].shape.ports, Some((5432, 5433)));
        assert_eq!(delete, vec!["r1".to_owned()]);
    }

    #[test]
    fn a_group_without_the_owner_record_gets_it_first() {
        let mut seen = seen();
        if let Some(f) = seen.firewall.as_mut() {
            f.description = "made by hand".into();
        }
        let mut spec = spec("5432");
        spec.description = Some("database tier".into());
        assert_eq!(
            plan(&spec, "db", &seen, RECORD),
            Step::Describe {
                id: "sg".into(),
                description: format!("{RECORD} database tier")
            }
        );
        assert!(carries(&format!("{RECORD} database tier"), RECORD));
        assert!(!carries("verda-uid-u verda-cluster-cx", RECORD));
    }
}
