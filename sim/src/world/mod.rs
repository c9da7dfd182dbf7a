//! A project's world: every resource it holds, the seeded generator its IDs come
//! from, and the transitions due by time. Each service's records are here (`barbican`,
//! `cinder`, `neutron`'s addresses and ports, `security_groups` (Neutron's groups, their
//! rules and address groups), `octavia` and Octavia's state machine,
//! `octavia_lifecycle`); the services' handlers read and write them, never the reverse.

pub(crate) mod barbican;
pub(crate) mod cinder;
pub(crate) mod designate;
pub(crate) mod neutron;
pub(crate) mod octavia;
pub(crate) mod octavia_lifecycle;
pub(crate) mod security_groups;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::Ipv4Addr;
use std::time::Instant;

use chrono::Utc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use self::cinder::Cinder;
use self::octavia::Octavia;
use super::config::SimConfig;
use super::model::{
    AddressGroup, Flavor, FloatingIp, Image, Network, Port, SecurityGroup, Server, ServerGroup,
    Status, Subnet,
};

/// All resources.
pub(crate) struct World {
    /// The project this world is (its resources' `project_id`).
    pub project_id: String,
    pub rng: StdRng,
    pub seq: u64,
    /// Earliest pending transition; `settle` is a no-op before it.
    pub next_event: Option<Instant>,
    pub build_delay: std::time::Duration,
    pub lb_delay: std::time::Duration,
    pub volume_delay: std::time::Duration,
    pub hosts: usize,
    pub instance_quota: usize,
    pub page_size_max: usize,
    pub flavors: Vec<Flavor>,
    pub images: Vec<Image>,
    pub keypairs: Vec<String>,
    pub security_groups: Vec<SecurityGroup>,
    pub address_groups: Vec<AddressGroup>,
    pub zones: Vec<String>,
    /// Zones whose compute services an admin disabled: listed as not available, and a
    /// create that names one is refused.
    pub disabled_zones: BTreeSet<String>,
    /// Zones whose compute services are down but enabled: still listed as available,
    /// and a server sent there fails with NoValidHost.
    pub down_zones: BTreeSet<String>,
    pub servers: HashMap<String, Server>,
    pub groups: HashMap<String, ServerGroup>,
    pub networks: Vec<Network>,
    pub subnets: Vec<Subnet>,
    pub ports: BTreeMap<String, Port>,
    pub fips: BTreeMap<String, FloatingIp>,
    pub used_ips: HashMap<String, BTreeSet<Ipv4Addr>>,
    pub octavia: Octavia,
    pub cinder: Cinder,
    pub barbican: self::barbican::Barbican,
    pub designate: self::designate::Designate,
    /// Servers whose service answers no health check (a test's fault): their members
    /// are ERROR wherever a health monitor watches them.
    pub unresponsive: HashSet<String>,
    /// Which services Nova reaches behind its API now (a fault door's outage).
    pub reach: Reach,
}

/// The services Nova calls when it deletes a server. One that is down is not told:
/// the volume keeps its attachment (Cinder), the port its binding (Neutron), to a
/// server that no longer exists, as on the real services.
#[derive(Debug, Clone, Copy)]
pub struct Reach {
    pub block_storage: bool,
    pub network: bool,
}

/// The fault door's names of the services Nova calls behind its API.
pub(crate) const BLOCK_STORAGE: &str = "block-storage";
pub(crate) const NETWORK: &str = "network";

impl Reach {
    /// What the fault door's outages leave Nova able to reach now.
    pub(crate) fn now(faults: &crate::faults::FaultTable) -> Self {
        Reach {
            block_storage: !faults.down(BLOCK_STORAGE),
            network: !faults.down(NETWORK),
        }
    }
}

impl Default for Reach {
    fn default() -> Self {
        Reach {
            block_storage: true,
            network: true,
        }
    }
}

impl World {
    /// Applies every transition due at `now`: servers, volumes, then Octavia.
    pub(crate) fn settle(&mut self, now: Instant) {
        if self.take_due(now) {
            self.settle_servers(now);
            self.settle_volumes(now);
            self.settle_octavia(now);
            for t in self.designate.settle(now) {
                self.schedule(t);
            }
        }
    }

    /// The availability zone of host `name`: host `i` (`compute-i`) is in
    /// `zones[i mod len]`.
    pub fn zone_of_host(&self, name: &str) -> Option<String> {
        let i: usize = name.strip_prefix("compute-")?.parse().ok()?;
        (!self.zones.is_empty()).then(|| self.zones[i % self.zones.len()].clone())
    }

    /// `project`'s world, empty: `seed::world` fills it.
    pub fn empty(config: &SimConfig, project: &str, rng_seed: u64) -> Self {
        World {
            project_id: project.to_owned(),
            // Another sequence per project: IDs are unique across projects, as in a cloud.
            rng: StdRng::seed_from_u64(rng_seed),
            seq: 0,
            next_event: None,
            build_delay: config.build_delay,
            lb_delay: config.lb_delay,
            volume_delay: config.volume_delay,
            hosts: config.hosts.max(1),
            instance_quota: config.instance_quota,
            page_size_max: config.page_size_max.max(1),
            flavors: Vec::new(),
            images: Vec::new(),
            keypairs: Vec::new(),
            security_groups: Vec::new(),
            address_groups: Vec::new(),
            zones: config.zones.clone(),
            disabled_zones: BTreeSet::new(),
            down_zones: BTreeSet::new(),
            servers: HashMap::new(),
            groups: HashMap::new(),
            networks: Vec::new(),
            subnets: Vec::new(),
            ports: BTreeMap::new(),
            fips: BTreeMap::new(),
            used_ips: HashMap::new(),
            octavia: Octavia::default(),
            cinder: Cinder::default(),
            barbican: self::barbican::Barbican::default(),
            designate: self::designate::Designate::default(),
            unresponsive: HashSet::new(),
            reach: Reach::default(),
        }
    }

    /// A UUID drawn from the seeded generator, so a repeated run makes the same IDs.
    pub fn uuid(&mut self) -> String {
        let bytes: [u8; 16] = self.rng.random();
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .to_string()
    }

    pub fn page_size_max(&self) -> usize {
        self.page_size_max
    }

    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn mac(&mut self) -> String {
        let b: [u8; 3] = self.rng.random();
        format!("fa:16:3e:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2])
    }

    /// Registers a future transition so `settle` wakes up for it.
    pub fn schedule(&mut self, at: Instant) {
        self.next_event = Some(self.next_event.map_or(at, |t| t.min(at)));
    }

    /// Removes a server at once with its group membership and boot volume; its data
    /// volumes are detached, the ports Nova made are deleted and the user's unbound.
    pub fn remove_server(&mut self, id: &str) {
        let Some(server) = self.servers.remove(id) else {
            return;
        };
        let reach = self.reach;
        if reach.block_storage {
            self.cinder.server_gone(id);
        }
        for nic in server.nics.iter().filter(|_| reach.network) {
            self.release_port(&nic.port_id, id);
        }
        for g in self.groups.values_mut() {
            g.members.retain(|m| m != id);
        }
    }

    /// Whether a transition is due at `now`; if so, the next is unknown until the
    /// due ones are applied.
    pub fn take_due(&mut self, now: Instant) -> bool {
        match self.next_event {
            Some(t) if t <= now => {
                self.next_event = None;
                true
            }
            _ => false,
        }
    }

    /// Finishes the servers' due builds, resizes and deletes.
    pub fn settle_servers(&mut self, now: Instant) {
        let mut gone = Vec::new();
        let mut later = Vec::new();
        for s in self.servers.values_mut() {
            match s.until {
                Some(t) if t <= now => {
                    s.until = None;
                    if s.deleting {
                        gone.push(s.id.clone());
                    } else {
                        finish_transition(s);
                    }
                }
                Some(t) => later.push(t),
                None => {}
            }
        }
        for t in later {
            self.schedule(t);
        }
        for id in gone {
            self.remove_server(&id);
        }
    }

    /// Finishes the volumes' due creates, extends and deletes.
    pub fn settle_volumes(&mut self, now: Instant) {
        for t in self.cinder.settle(now) {
            self.schedule(t);
        }
    }
}

fn finish_transition(s: &mut Server) {
    let now = Utc::now();
    s.updated = now;
    match s.status {
        Status::Build => match s.doomed.take() {
            Some(message) => {
                s.status = Status::Error;
                s.host = None;
                s.fault = Some(super::model::Fault {
                    code: 500,
                    message,
                    created: now,
                });
            }
            None => {
                s.status = Status::Active;
                s.launched = Some(now);
            }
        },
        Status::Resize => s.status = Status::VerifyResize,
        Status::PoweringOff => s.status = Status::Shutoff,
        Status::PoweringOn => s.status = Status::Active,
        _ => {}
    }
}
