//! Neutron's security groups, their rules and address groups in a world: a new group
//! with the rules Neutron gives it (egress to anywhere, IPv4 and IPv6; the project's
//! `default` also ingress from itself), what uses a group or an address group, and
//! deletes with what Neutron deletes along with them (a group's rules, and the rules
//! of other groups that name it as their remote). Validation, views and error bodies
//! are the Neutron handlers' (`neutron/security_groups.rs` and its neighbours).

use chrono::{DateTime, Utc};

use super::World;
use crate::model::{SecurityGroup, SecurityGroupRule};

/// The group Neutron makes with each project: it cannot be deleted nor renamed, and
/// no other group may take its name.
pub(crate) const DEFAULT: &str = "default";

/// Neutron's protocol names and their IP protocol numbers (`ipv6-icmp` and its legacy
/// spelling `icmpv6` are both 58), in the order its refusal lists them.
pub(crate) const PROTOCOLS: &[(&str, u8)] = &[
    ("ah", 51),
    ("dccp", 33),
    ("egp", 8),
    ("esp", 50),
    ("gre", 47),
    ("hopopt", 0),
    ("icmp", 1),
    ("igmp", 2),
    ("ip", 0),
    ("ipip", 4),
    ("ipv6-encap", 41),
    ("ipv6-frag", 44),
    ("ipv6-icmp", 58),
    ("icmpv6", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("ipv6-route", 43),
    ("ospf", 89),
    ("pgm", 113),
    ("rsvp", 46),
    ("sctp", 132),
    ("tcp", 6),
    ("udp", 17),
    ("udplite", 136),
    ("vrrp", 112),
];

/// The IP protocol number of a stored protocol (a name or a number).
pub(crate) fn protocol_number(protocol: &str) -> Option<u8> {
    match PROTOCOLS.iter().find(|(name, _)| *name == protocol) {
        Some((_, n)) => Some(*n),
        None => protocol.parse().ok(),
    }
}

impl SecurityGroup {
    /// A group without rules yet, at revision 1.
    pub fn new(id: String, name: &str, description: &str, stateful: bool) -> Self {
        let now = Utc::now();
        SecurityGroup {
            id,
            name: name.to_string(),
            description: description.to_string(),
            stateful,
            tags: Vec::new(),
            rules: Vec::new(),
            revision: 1,
            created: now,
            updated: now,
        }
    }

    /// A new revision: `updated_at` moves, `revision_number` goes up.
    pub fn touch(&mut self) {
        self.revision += 1;
        self.updated = Utc::now();
    }

    /// The rule shapes Neutron gives a new group, without IDs: egress IPv4 and IPv6,
    /// and for the project's `default` ingress IPv4 and IPv6 from the group itself.
    pub fn initial_rules(&self) -> Vec<SecurityGroupRule> {
        let default = self.name == DEFAULT;
        let mut shapes = vec![("egress", "IPv4"), ("egress", "IPv6")];
        if default {
            shapes.extend([("ingress", "IPv4"), ("ingress", "IPv6")]);
        }
        let rule = |(direction, ethertype): (&str, &str)| {
            let mut r = SecurityGroupRule::open(&self.id, direction, ethertype, self.created);
            r.belongs_to_default_sg = default;
            if direction == "ingress" {
                r.remote_group_id = Some(self.id.clone());
            }
            r
        };
        shapes.into_iter().map(rule).collect()
    }
}

impl SecurityGroupRule {
    /// Any protocol, port and remote in `direction` for `ethertype`, without an ID.
    pub fn open(group_id: &str, direction: &str, ethertype: &str, at: DateTime<Utc>) -> Self {
        SecurityGroupRule {
            id: String::new(),
            seq: 0,
            security_group_id: group_id.to_string(),
            direction: direction.to_string(),
            ethertype: ethertype.to_string(),
            protocol: None,
            port_range_min: None,
            port_range_max: None,
            remote_ip_prefix: None,
            normalized_cidr: None,
            remote_group_id: None,
            remote_address_group_id: None,
            description: None,
            belongs_to_default_sg: false,
            created: at,
        }
    }

    /// What Neutron compares to refuse a duplicate (`SecurityGroupRuleExists`): the
    /// description aside, a protocol by name or number, and "from anywhere" with or
    /// without a prefix (`0.0.0.0/0`, `::/0`); other prefixes as written.
    pub fn same_as(&self, other: &Self) -> bool {
        fn protocol(r: &SecurityGroupRule) -> Option<u8> {
            r.protocol.as_deref().and_then(protocol_number)
        }
        fn prefix(r: &SecurityGroupRule) -> Option<&str> {
            let p = r.remote_ip_prefix.as_deref();
            p.filter(|p| !matches!(*p, "0.0.0.0/0" | "::/0"))
        }
        self.direction == other.direction
            && self.ethertype == other.ethertype
            && protocol(self) == protocol(other)
            && (self.port_range_min, self.port_range_max)
                == (other.port_range_min, other.port_range_max)
            && prefix(self) == prefix(other)
            && self.remote_group_id == other.remote_group_id
            && self.remote_address_group_id == other.remote_address_group_id
    }
}

impl World {
    /// Makes and stores a group with Neutron's rules; a copy of it.
    pub fn create_security_group(
        &mut self,
        name: &str,
        description: &str,
        stateful: bool,
    ) -> SecurityGroup {
        let id = self.uuid();
        let mut group = SecurityGroup::new(id, name, description, stateful);
        for mut rule in group.initial_rules() {
            rule.id = self.uuid();
            rule.seq = self.next_seq();
            group.rules.push(rule);
        }
        self.security_groups.push(group.clone());
        group
    }

    /// Adds a (stateful) security group; its ID.
    pub fn add_security_group(&mut self, name: &str, description: &str) -> String {
        self.create_security_group(name, description, true).id
    }

    pub fn security_group_mut(&mut self, id: &str) -> Option<&mut SecurityGroup> {
        self.security_groups.iter_mut().find(|g| g.id == id)
    }

    /// Whether a port has the group.
    pub fn security_group_in_use(&self, id: &str) -> bool {
        let mut groups = self.ports.values().flat_map(|p| p.security_groups.iter());
        groups.any(|g| g == id)
    }

    /// Deletes a group with its rules, and the rules of other groups whose remote it
    /// was (those groups move on); `false` if there is no such group.
    pub fn delete_security_group(&mut self, id: &str) -> bool {
        let before = self.security_groups.len();
        self.security_groups.retain(|g| g.id != id);
        if self.security_groups.len() == before {
            return false;
        }
        for g in &mut self.security_groups {
            let n = g.rules.len();
            g.rules.retain(|r| r.remote_group_id.as_deref() != Some(id));
            if g.rules.len() != n {
                g.touch();
            }
        }
        true
    }

    /// Every rule of the project's groups, group by group.
    pub fn security_group_rules(&self) -> impl Iterator<Item = &SecurityGroupRule> {
        self.security_groups.iter().flat_map(|g| g.rules.iter())
    }

    /// Deletes a rule (its group moves on); `false` if there is no such rule.
    pub fn delete_security_group_rule(&mut self, id: &str) -> bool {
        for g in &mut self.security_groups {
            if let Some(i) = g.rules.iter().position(|r| r.id == id) {
                g.rules.remove(i);
                g.touch();
                return true;
            }
        }
        false
    }

    /// Whether a rule names the address group as its remote.
    pub fn address_group_in_use(&self, id: &str) -> bool {
        let mut rules = self.security_group_rules();
        rules.any(|r| r.remote_address_group_id.as_deref() == Some(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(protocol: Option<&str>, prefix: Option<&str>) -> SecurityGroupRule {
        let mut r = SecurityGroupRule::open("g", "ingress", "IPv4", Utc::now());
        r.protocol = protocol.map(str::to_string);
        r.remote_ip_prefix = prefix.map(str::to_string);
        r
    }

    #[test]
    fn duplicates_are_seen_as_neutron_sees_them() {
        let tcp = rule(Some("tcp"), Some("10.0.0.0/8"));
        assert!(tcp.same_as(&rule(Some("6"), Some("10.0.0.0/8"))));
        assert!(!tcp.same_as(&rule(Some("tcp"), Some("10.1.2.3/8"))));
        assert!(rule(Some("icmp"), None).same_as(&rule(Some("icmp"), Some("0.0.0.0/0"))));
        let mut described = tcp.clone();
        described.description = Some("other words".into());
        assert!(tcp.same_as(&described));
    }

    #[test]
    fn the_default_group_also_lets_its_members_in() {
        let g = SecurityGroup::new("g".into(), DEFAULT, "", true);
        let rules = g.initial_rules();
        assert_eq!(rules.len(), 4);
        assert!(rules.iter().all(|r| r.belongs_to_default_sg));
        let other = SecurityGroup::new("h".into(), "web", "", true);
        let shapes: Vec<String> = other
            .initial_rules()
            .iter()
            .map(|r| format!("{} {}", r.direction, r.ethertype))
            .collect();
        assert_eq!(shapes, ["egress IPv4", "egress IPv6"]);
    }
}
