//! Which objects of a namespace relate to which group or VirtualMachine, so a reconcile
//! finds a group's ten VirtualMachines among a namespace's ten thousand without looking
//! at each.
//!
//! An object's *keys* are what it relates to: a VirtualMachine's its group label, a
//! LoadBalancer's every group and VirtualMachine its ports draw on. The index only names
//! candidates: readers take each from the store and check its keys again, so an entry a
//! relist left behind (an object deleted while the watch was down) costs a lookup, never
//! a wrong answer.

use std::collections::{BTreeSet, HashMap};

use kube::ResourceExt;
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup, labels};

/// What an object relates to, as index keys.
pub trait Keyed {
    fn keys(&self) -> Vec<String>;
}

/// A VirtualMachine relates to its group and to the security groups its server and
/// ports are in (a SecurityGroup of that name may be what it waits for). Not to itself:
/// it is found by name, and a key of its own would cost an entry per VirtualMachine.
impl Keyed for VirtualMachine {
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .labels()
            .get(labels::GROUP)
            .map(|g| group_key(g))
            .into_iter()
            .collect();
        let ports = self.spec.ports.iter().flatten();
        let named = self.spec.security_groups.iter().flatten();
        let named = named.chain(ports.flat_map(|p| p.security_groups.iter().flatten()));
        keys.extend(named.map(|g| security_group_key(g)));
        keys.sort();
        keys.dedup();
        keys
    }
}

/// A SecurityGroup relates to the groups its rules take addresses from.
impl Keyed for verda_api::v1alpha1::SecurityGroup {
    fn keys(&self) -> Vec<String> {
        let peers = self.spec.rules.iter().filter_map(|r| r.from.as_ref());
        let mut keys: Vec<String> = peers
            .filter_map(|p| p.virtual_machine_group.as_deref())
            .map(group_key)
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// A DNSZone is found by name, never by key.
impl Keyed for verda_api::v1alpha1::DNSZone {
    fn keys(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A group is found by name, never by key.
impl Keyed for VirtualMachineGroup {
    fn keys(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A LoadBalancer relates to what its ports draw on: a group, or else the VirtualMachines
/// they name.
impl Keyed for LoadBalancer {
    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = drawn_on(self)
            .map(|d| match d {
                DrawnOn::Group(name) => group_key(name),
                DrawnOn::VirtualMachine(name) => vm_key(name),
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// What a LoadBalancer's ports draw on, port by port (a name may come more than once).
pub enum DrawnOn<'a> {
    Group(&'a str),
    VirtualMachine(&'a str),
}

pub fn drawn_on(lb: &LoadBalancer) -> impl Iterator<Item = DrawnOn<'_>> {
    lb.spec.ports.iter().flat_map(|p| {
        let rs = &p.real_servers;
        let groups = rs.group_names().into_iter().map(DrawnOn::Group);
        let named = rs.virtual_machines.iter().flatten();
        groups.chain(named.map(|n| DrawnOn::VirtualMachine(n)))
    })
}

/// The key of a group name.
pub fn group_key(name: &str) -> String {
    format!("group/{name}")
}

/// The key of a security group name.
pub fn security_group_key(name: &str) -> String {
    format!("securitygroup/{name}")
}

/// The key of a VirtualMachine name.
pub fn vm_key(name: &str) -> String {
    format!("vm/{name}")
}

/// Namespace → key → names of the objects that have the key, and each object's keys.
#[derive(Default)]
pub struct KeyIndex {
    by_key: HashMap<String, HashMap<String, BTreeSet<String>>>,
    keys_of: HashMap<(String, String), Vec<String>>,
}

impl KeyIndex {
    /// Records that `name` in `namespace` now has `keys` (none: it is gone).
    pub fn set(&mut self, namespace: &str, name: &str, keys: Vec<String>) {
        let id = (namespace.to_owned(), name.to_owned());
        let before = if keys.is_empty() {
            self.keys_of.remove(&id)
        } else {
            self.keys_of.insert(id, keys.clone())
        };
        let space = self.by_key.entry(namespace.to_owned()).or_default();
        for key in before.unwrap_or_default() {
            if let Some(names) = space.get_mut(&key) {
                names.remove(name);
                if names.is_empty() {
                    space.remove(&key);
                }
            }
        }
        for key in keys {
            space.entry(key).or_default().insert(name.to_owned());
        }
        if space.is_empty() {
            self.by_key.remove(namespace);
        }
    }

    /// The names in `namespace` recorded with `key`.
    pub fn names(&self, namespace: &str, key: &str) -> Vec<String> {
        self.by_key
            .get(namespace)
            .and_then(|space| space.get(key))
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// An index of exactly `objects`: (namespace, name, keys).
    pub fn of(objects: impl IntoIterator<Item = (String, String, Vec<String>)>) -> Self {
        let mut index = Self::default();
        for (namespace, name, keys) in objects {
            index.set(&namespace, &name, keys);
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_found_under_its_current_keys_only() {
        let mut index = KeyIndex::default();
        index.set("a", "web-0", vec![group_key("web")]);
        index.set("a", "web-1", vec![group_key("web")]);
        index.set("b", "web-0", vec![group_key("web")]);
        assert_eq!(index.names("a", &group_key("web")), ["web-0", "web-1"]);
        // Relabelled: gone from the old key, under the new one.
        index.set("a", "web-1", vec![group_key("api")]);
        assert_eq!(index.names("a", &group_key("web")), ["web-0"]);
        assert_eq!(index.names("a", &group_key("api")), ["web-1"]);
        // Deleted: under no key, and an emptied namespace is dropped.
        index.set("b", "web-0", Vec::new());
        assert!(index.names("b", &group_key("web")).is_empty());
        assert!(!index.by_key.contains_key("b"));
        assert!(index.names("c", &vm_key("x")).is_empty());
    }

    #[test]
    fn an_index_of_a_listing_holds_exactly_it() {
        let index = KeyIndex::of([
            (
                "a".into(),
                "lb".into(),
                vec![group_key("web"), vm_key("db-0")],
            ),
            ("a".into(), "plain".into(), Vec::new()),
        ]);
        assert_eq!(index.names("a", &vm_key("db-0")), ["lb"]);
        assert_eq!(index.names("a", &group_key("web")), ["lb"]);
        assert_eq!(index.keys_of.len(), 1);
    }
}
