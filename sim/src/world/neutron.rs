//! Neutron's records in a world: the addresses in use on each subnet, ports (made by
//! Nova, by Octavia or by the user) and their binding to servers, and how ports and Nova
//! find the project's security groups (the groups themselves: `security_groups.rs`).
//! Validation, policy and error bodies are the Neutron handlers'.

use std::net::Ipv4Addr;

use chrono::Utc;

use super::World;
use crate::model::{FixedIp, Nic, Port, SecurityGroup};

/// `device_owner` of a port bound to a server.
pub(crate) const COMPUTE_OWNER: &str = "compute:nova";

impl World {
    /// The lowest free address of the subnet's allocation pool.
    pub fn allocate_ip(&mut self, subnet_id: &str) -> Option<Ipv4Addr> {
        let subnet = self.subnets.iter().find(|s| s.id == subnet_id)?;
        let (start, end) = (u32::from(subnet.pool_start), u32::from(subnet.pool_end));
        let used = self.used_ips.entry(subnet_id.to_string()).or_default();
        let ip = (start..=end)
            .map(Ipv4Addr::from)
            .find(|ip| !used.contains(ip))?;
        used.insert(ip);
        Some(ip)
    }

    /// Takes `ip` on the subnet (inside the pool or not, as a user may); `false` when
    /// it is already in use.
    pub fn claim_ip(&mut self, subnet_id: &str, ip: Ipv4Addr) -> bool {
        self.used_ips
            .entry(subnet_id.to_string())
            .or_default()
            .insert(ip)
    }

    pub fn release_ip(&mut self, subnet_id: &str, ip: Ipv4Addr) {
        if let Some(used) = self.used_ips.get_mut(subnet_id) {
            used.remove(&ip);
        }
    }

    pub fn release_ips(&mut self, ips: &[FixedIp]) {
        for f in ips {
            self.release_ip(&f.subnet_id, f.ip);
        }
    }

    /// A port on `network_id` with a fresh ID and MAC, no address, no device and no
    /// security group; not stored yet.
    pub fn new_port(&mut self, network_id: &str, name: &str) -> Port {
        let now = Utc::now();
        Port {
            id: self.uuid(),
            seq: self.next_seq(),
            name: name.to_string(),
            description: String::new(),
            network_id: network_id.to_string(),
            fixed_ips: Vec::new(),
            mac: self.mac(),
            device_id: String::new(),
            device_owner: String::new(),
            allowed_address_pairs: Vec::new(),
            security_groups: Vec::new(),
            by_nova: false,
            revision: 1,
            created: now,
            updated: now,
        }
    }

    /// The lowest free address of the network's first subnet, if it has one and it is
    /// not full.
    pub fn allocate_on_network(&mut self, network_id: &str) -> Vec<FixedIp> {
        let subnet = self
            .networks
            .iter()
            .find(|n| n.id == network_id)
            .and_then(|n| n.subnets.first().cloned());
        let Some(subnet_id) = subnet else {
            return Vec::new();
        };
        match self.allocate_ip(&subnet_id) {
            Some(ip) => vec![FixedIp { subnet_id, ip }],
            None => Vec::new(),
        }
    }

    /// Creates a service's port (Octavia's VIP) with an address on the network's first
    /// subnet.
    pub fn create_port(
        &mut self,
        network_id: &str,
        name: &str,
        device_id: &str,
        owner: &str,
    ) -> Port {
        let mut port = self.new_port(network_id, name);
        port.fixed_ips = self.allocate_on_network(network_id);
        port.device_id = device_id.to_string();
        port.device_owner = owner.to_string();
        self.ports.insert(port.id.clone(), port.clone());
        port
    }

    /// Deletes a port, frees its addresses and detaches floating IPs from it.
    pub fn delete_port(&mut self, port_id: &str) {
        let Some(port) = self.ports.remove(port_id) else {
            return;
        };
        self.release_ips(&port.fixed_ips);
        for fip in self
            .fips
            .values_mut()
            .filter(|f| f.port_id.as_deref() == Some(port_id))
        {
            fip.port_id = None;
            fip.fixed_ip = None;
            fip.updated = Utc::now();
            fip.revision += 1;
        }
    }

    /// Binds a port to a server, as Nova does for a `{"port": id}` NIC.
    pub fn bind_port(&mut self, port_id: &str, server_id: &str) {
        if let Some(p) = self.ports.get_mut(port_id) {
            p.device_id = server_id.to_string();
            p.device_owner = COMPUTE_OWNER.to_string();
            p.touch();
        }
    }

    /// What a server's removal does to its port: Nova's own is deleted; the user's is
    /// kept, unbound (seen on the real Nova within a second of the delete).
    pub fn release_port(&mut self, port_id: &str, server_id: &str) {
        let Some(p) = self.ports.get_mut(port_id) else {
            return;
        };
        if p.by_nova {
            self.delete_port(port_id);
        } else if p.device_id == server_id {
            p.device_id.clear();
            p.device_owner.clear();
            p.touch();
        }
    }

    /// The security group named or identified by `key` (Nova takes either).
    pub fn security_group(&self, key: &str) -> Option<&SecurityGroup> {
        let groups = &self.security_groups;
        let by_id = groups.iter().find(|g| g.id == key);
        by_id.or_else(|| groups.iter().find(|g| g.name == key))
    }

    /// The names of the groups of a server's ports, each once, in port order.
    pub fn server_security_groups(&self, nics: &[Nic]) -> Vec<String> {
        let ports = nics.iter().filter_map(|n| self.ports.get(&n.port_id));
        let ids = ports.flat_map(|p| p.security_groups.iter());
        let mut names: Vec<String> = Vec::new();
        for g in ids.filter_map(|id| self.security_groups.iter().find(|g| g.id == *id)) {
            if !names.contains(&g.name) {
                names.push(g.name.clone());
            }
        }
        names
    }
}
