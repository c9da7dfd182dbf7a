//! Neutron's security groups with their rules, and address groups, as the
//! SecurityGroup controller reads and writes them.

use serde::Deserialize;

/// `GET /v2.0/security-groups/{id}`: the group and its rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Firewall {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "stateful")]
    pub stateful: bool,
    #[serde(default)]
    pub security_group_rules: Vec<Rule>,
    /// Moves with every change of the group, its rules' creates and deletes included.
    #[serde(default)]
    pub revision_number: u64,
}

fn stateful() -> bool {
    true
}

/// A Neutron security group rule. Rules are immutable: a change is a new rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Rule {
    pub id: String,
    pub direction: String,
    pub ethertype: String,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub port_range_min: Option<u32>,
    #[serde(default)]
    pub port_range_max: Option<u32>,
    #[serde(default)]
    pub remote_ip_prefix: Option<String>,
    #[serde(default)]
    pub remote_group_id: Option<String>,
    #[serde(default)]
    pub remote_address_group_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// What a rule lets through, without its ID and description: two rules with the same
/// shape are one rule to Neutron (the second is refused `SecurityGroupRuleExists`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleShape {
    pub direction: String,
    pub ethertype: String,
    pub protocol: Option<String>,
    pub ports: Option<(u32, u32)>,
    pub remote: Remote,
}

/// The other end of a rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Remote {
    Anyone,
    Cidr(String),
    Group(String),
    AddressGroup(String),
}

impl Rule {
    pub fn shape(&self) -> RuleShape {
        let remote = match (
            &self.remote_ip_prefix,
            &self.remote_group_id,
            &self.remote_address_group_id,
        ) {
            (_, Some(group), _) => Remote::Group(group.clone()),
            (_, _, Some(group)) => Remote::AddressGroup(group.clone()),
            (Some(cidr), _, _) if !is_everything(cidr) => Remote::Cidr(cidr.clone()),
            _ => Remote::Anyone,
        };
        let ports = match (self.port_range_min, self.port_range_max) {
            (Some(low), Some(high)) => Some((low, high)),
            (Some(low), None) => Some((low, low)),
            _ => None,
        };
        RuleShape {
            direction: self.direction.clone(),
            ethertype: self.ethertype.clone(),
            protocol: self.protocol.clone().filter(|p| p != "any"),
            ports,
            remote,
        }
    }
}

/// `0.0.0.0/0` and `::/0` are Neutron's "anyone" written out.
fn is_everything(cidr: &str) -> bool {
    matches!(cidr, "0.0.0.0/0" | "::/0")
}

/// `POST /v2.0/security-groups`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateFirewall {
    pub name: String,
    pub description: String,
    pub stateful: Option<bool>,
}

/// `POST /v2.0/security-group-rules`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateRule {
    pub security_group_id: String,
    pub shape: RuleShape,
    pub description: Option<String>,
}

/// `GET /v2.0/address-groups/{id}`: a set of CIDRs rules can name as their remote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct AddressGroup {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub addresses: Vec<String>,
}

/// `POST /v2.0/address-groups`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreateAddressGroup {
    pub name: String,
    pub description: String,
    pub addresses: Vec<String>,
}
