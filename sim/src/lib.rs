//! The OpenStack simulator: one axum server on 127.0.0.1 speaking the wire format of
//! Keystone v3, Nova v2.1, Glance v2, Cinder v3, Neutron v2.0, Octavia v2, Barbican v1
//! and Designate v2 (as the OpenStack API reference documents them), with lazy state machines, a
//! seeded cloud, fault injection and request counters. It is a test double and the
//! operator's embedded default cloud; it does not persist anything and does not model
//! admin-only APIs.
//!
//! Services are path-prefixed on one listener: `/identity/v3`, `/compute/v2.1`,
//! `/image`, `/volume/v3/{project}`, `/network`, `/load-balancer`, `/key-manager`, `/dns`, all
//! advertised in the catalog (`keystone::catalog`) for the regions `RegionOne` and
//! `tokyo1` (both regions share one state).

// Handlers answer `Result<Response, Response>`: the error side *is* the HTTP answer,
// built once per failed request, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

/// A Designate record set as a test sees it: name, type, records, description.
pub type SimRecordSet = (String, String, Vec<String>, Option<String>);

mod barbican;
mod cinder;
mod config;
mod designate;
mod faults;
mod gate;
mod glance;
mod keystone;
mod model;
mod neutron;
mod nova;
pub(crate) mod octavia;
mod query;
mod router;
mod seed;
mod snapshot;
mod state;
mod wire;
mod world;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::serve::ListenerExt;
use tokio::task::JoinHandle;

pub use config::{SimConfig, SimCredentials};
pub use faults::{Fault, FaultKind};
pub use snapshot::{
    SimAddressGroup, SimFloatingIp, SimHealthMonitor, SimListener, SimLoadBalancer, SimMember,
    SimPool, SimPort, SimSecurityGroup, SimSecurityGroupRule, SimServer, SimServerGroup, SimVolume,
};

use faults::{Counters, FaultTable, lock};
use state::{Shared, Sim};

/// A running simulator. Dropping the handle stops the server.
pub struct Simulator {
    sim: Sim,
    addr: SocketAddr,
    task: JoinHandle<()>,
    /// TCP connections accepted so far.
    accepted: Arc<AtomicU64>,
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Simulator {
    /// Starts on `127.0.0.1` with a free port.
    pub async fn start(config: SimConfig) -> std::io::Result<Simulator> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), config).await
    }

    /// Starts on `addr`.
    pub async fn start_on(addr: SocketAddr, config: SimConfig) -> std::io::Result<Simulator> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let identities = seed::identities(config.tenants);
        let sim: Sim = Arc::new(Shared {
            base: format!("http://{addr}"),
            worlds: identities
                .iter()
                .map(|i| {
                    let world = seed::world(&config, &i.project_id);
                    (i.project_id.clone(), Mutex::new(world))
                })
                .collect(),
            identities,
            default_project: seed::PROJECT_ID.to_owned(),
            tokens: Mutex::new(Default::default()),
            revoked_before: Mutex::new(None),
            faults: FaultTable::new(config.seed),
            counters: Counters::default(),
            config,
        });
        let app = router::app(sim.clone());
        let accepted = Arc::new(AtomicU64::new(0));
        let listener = listener.tap_io({
            let accepted = accepted.clone();
            move |_| {
                accepted.fetch_add(1, Ordering::Relaxed);
            }
        });
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "OpenStack simulator stopped");
            }
        });
        Ok(Simulator {
            sim,
            addr,
            task,
            accepted,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The TCP connections clients opened to the simulator so far.
    pub fn connections_accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// The Keystone v3 URL (`auth_url` of clouds.yaml).
    pub fn auth_url(&self) -> String {
        format!("{}/identity/v3", self.sim.base)
    }

    /// A clouds.yaml with cloud `verda-sim` (password auth, RegionOne) and
    /// `verda-sim-appcred` (application credential).
    pub fn clouds_yaml(&self) -> String {
        self.clouds_yaml_of(&self.sim.identities[0])
    }

    /// The same, for the identity `c` (see [`Self::team_credentials`]).
    pub fn clouds_yaml_of(&self, c: &SimCredentials) -> String {
        format!(
            "clouds:\n  verda-sim:\n    auth_type: password\n    auth:\n      auth_url: {url}\n      username: {u}\n      password: {p}\n      project_name: {pr}\n      user_domain_name: {d}\n      project_domain_name: {d}\n    region_name: RegionOne\n    interface: public\n    identity_api_version: 3\n  verda-sim-appcred:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {url}\n      application_credential_id: {ai}\n      application_credential_secret: {as_}\n    region_name: RegionOne\n    interface: public\n    identity_api_version: 3\n",
            url = self.auth_url(),
            u = c.username,
            p = c.password,
            pr = c.project_name,
            d = c.user_domain,
            ai = c.application_credential_id,
            as_ = c.application_credential_secret,
        )
    }

    pub fn credentials(&self) -> SimCredentials {
        self.sim.identities[0].clone()
    }

    /// The second project's identity (project `team-b`), for shared-cluster tests.
    pub fn team_credentials(&self) -> SimCredentials {
        self.sim.identities[1].clone()
    }

    /// The generated tenants' identities (`tenant-1`, ...; [`SimConfig::tenants`]).
    pub fn tenant_credentials(&self) -> &[SimCredentials] {
        &self.sim.identities[2..]
    }

    /// Creates Designate zone `name` (with its final dot) in the default project,
    /// served at once; returns its ID.
    pub fn add_dns_zone(&self, name: &str) -> String {
        designate::add_zone(&mut self.sim.world(), name)
    }

    /// The record sets of the default project's zone `name`: (name, type, records,
    /// description), oldest first.
    pub fn dns_records(&self, zone: &str) -> Vec<SimRecordSet> {
        designate::record_sets_of(&self.sim.world(), zone)
    }

    /// The servers of `project` (an ID).
    pub fn servers_in(&self, project: &str) -> Vec<SimServer> {
        snapshot::servers(&self.sim.world_of(project))
    }

    pub fn server_groups_in(&self, project: &str) -> Vec<SimServerGroup> {
        snapshot::server_groups(&self.sim.world_of(project))
    }

    pub fn load_balancers_in(&self, project: &str) -> Vec<SimLoadBalancer> {
        snapshot::load_balancers(&self.sim.world_of(project))
    }

    /// The Neutron ports of `project` (an ID): the user's, Nova's and Octavia's.
    pub fn ports_in(&self, project: &str) -> Vec<SimPort> {
        snapshot::ports(&self.sim.world_of(project))
    }

    /// Adds a security group named `name` to `project` (an ID), as its owner could
    /// with `openstack security group create`; its ID. Every project has `default`
    /// and `web` already.
    pub fn add_security_group(&self, project: &str, name: &str) -> String {
        self.sim.world_of(project).add_security_group(name, "")
    }

    /// The security groups of `project` (an ID) with their rules: `default`, `web`,
    /// then those created, oldest first.
    pub fn security_groups_in(&self, project: &str) -> Vec<SimSecurityGroup> {
        snapshot::security_groups(&self.sim.world_of(project))
    }

    /// Every security group rule of `project` (an ID), group by group.
    pub fn security_group_rules_in(&self, project: &str) -> Vec<SimSecurityGroupRule> {
        snapshot::security_group_rules(&self.sim.world_of(project))
    }

    /// The address groups of `project` (an ID), oldest first.
    pub fn address_groups_in(&self, project: &str) -> Vec<SimAddressGroup> {
        snapshot::address_groups(&self.sim.world_of(project))
    }

    pub fn config(&self) -> &SimConfig {
        &self.sim.config
    }

    /// Requests received for `service`/`operation` (refused ones included).
    pub fn requests(&self, service: &str, operation: &str) -> u64 {
        self.sim.counters.get(service, operation)
    }

    pub fn request_counts(&self) -> BTreeMap<(String, String), u64> {
        self.sim.counters.snapshot()
    }

    /// The most requests (of every service) that arrived within any one second.
    pub fn busiest_second(&self) -> usize {
        self.sim.counters.busiest_second()
    }

    pub fn total_requests(&self) -> u64 {
        self.sim.counters.snapshot().values().sum()
    }

    pub fn inject(&self, fault: Fault) {
        self.sim.faults.inject(fault);
    }

    pub fn clear_faults(&self) {
        self.sim.faults.clear();
    }

    /// Makes every issued token invalid, as if each had reached its expiry.
    pub fn expire_tokens(&self) {
        let now = std::time::Instant::now();
        for t in lock(&self.sim.tokens).values_mut() {
            t.valid_until = now;
        }
    }

    /// Revokes every token issued so far, and any issued later in this same second, as
    /// Keystone does when a user's password changes.
    pub fn revoke_tokens(&self) {
        *lock(&self.sim.revoked_before) = Some(chrono::Utc::now());
    }

    /// Puts a server in ERROR (as a failed host would) with a fault.
    pub fn set_server_error(&self, server_id: &str) {
        let mut w = self.sim.world();
        if let Some(s) = w.servers.get_mut(server_id) {
            let now = chrono::Utc::now();
            s.status = model::Status::Error;
            s.until = None;
            s.updated = now;
            s.fault = Some(model::Fault {
                code: 500,
                message: "Injected failure".into(),
                created: now,
            });
        }
    }

    /// Disables (`false`) or enables again every compute service of `zone`, in every
    /// project, as an admin's `openstack compute service set --disable` would: Nova
    /// lists the zone as not available and refuses creates that name it.
    pub fn set_zone_enabled(&self, zone: &str, enabled: bool) {
        for world in self.sim.worlds.values() {
            let mut w = lock(world);
            match enabled {
                true => w.disabled_zones.remove(zone),
                false => w.disabled_zones.insert(zone.to_owned()),
            };
        }
    }

    /// Takes every compute service of `zone` down (`true`) or up again, in every
    /// project, while they stay enabled: Nova still lists the zone as available, and a
    /// server sent there fails with NoValidHost.
    pub fn set_zone_down(&self, zone: &str, down: bool) {
        for world in self.sim.worlds.values() {
            let mut w = lock(world);
            match down {
                true => w.down_zones.insert(zone.to_owned()),
                false => w.down_zones.remove(zone),
            };
        }
    }

    /// The servers of every project placed in `zone`, put in ERROR as a lost data
    /// centre's would be; returns their IDs.
    pub fn fail_zone(&self, zone: &str) -> Vec<String> {
        let mut ids = Vec::new();
        for world in self.sim.worlds.values() {
            let mut w = lock(world);
            let here: Vec<String> = w
                .servers
                .values()
                .filter(|s| !s.deleting)
                .filter(|s| {
                    s.host.as_deref().and_then(|h| w.zone_of_host(h)).as_deref() == Some(zone)
                })
                .map(|s| s.id.clone())
                .collect();
            for id in &here {
                if let Some(s) = w.servers.get_mut(id) {
                    s.status = model::Status::Error;
                    s.until = None;
                    s.fault = Some(model::Fault {
                        code: 500,
                        message: "Injected failure".into(),
                        created: chrono::Utc::now(),
                    });
                }
            }
            ids.extend(here);
        }
        ids
    }

    /// Stops (SHUTOFF) or starts (ACTIVE) a server at once, as `openstack server stop`
    /// or `start` would.
    pub fn set_server_power(&self, server_id: &str, on: bool) {
        let mut w = self.sim.world();
        if let Some(s) = w.servers.get_mut(server_id) {
            s.status = if on {
                model::Status::Active
            } else {
                model::Status::Shutoff
            };
            s.updated = chrono::Utc::now();
        }
    }

    /// Makes a server's service answer no health check (`false`) or answer again: where
    /// a health monitor watches it, its members go ERROR, as a hung service's would.
    pub fn set_service_answering(&self, server_id: &str, answering: bool) {
        let mut w = self.sim.world();
        match answering {
            true => w.unresponsive.remove(server_id),
            false => w.unresponsive.insert(server_id.to_owned()),
        };
    }

    /// Puts a load balancer in ERROR, as a failed amphora would.
    pub fn set_load_balancer_error(&self, lb_id: &str) {
        let mut w = self.sim.world();
        if let Some(lb) = w.octavia.lbs.get_mut(lb_id) {
            lb.meta.prov = world::octavia::Prov::Error;
            lb.settle_at = None;
        }
    }

    /// Sets what a listener's amphorae count, as their statistics reports would;
    /// `false` when there is no such listener.
    pub fn set_listener_stats(&self, listener_id: &str, active: u64, total: u64) -> bool {
        let mut w = self.sim.world();
        let Some(l) = w.octavia.listeners.get_mut(listener_id) else {
            return false;
        };
        l.active_connections = active;
        l.total_connections = total;
        true
    }

    /// Deletes a server at once, as someone using the dashboard would.
    pub fn delete_server_out_of_band(&self, server_id: &str) {
        self.sim.world().remove_server(server_id);
    }

    pub fn servers(&self) -> Vec<SimServer> {
        snapshot::servers(&self.sim.world())
    }

    /// The servers not being deleted.
    pub fn live_servers(&self) -> Vec<SimServer> {
        let mut servers = self.servers();
        servers.retain(|s| !s.deleting);
        servers
    }

    pub fn server_groups(&self) -> Vec<SimServerGroup> {
        snapshot::server_groups(&self.sim.world())
    }

    pub fn load_balancers(&self) -> Vec<SimLoadBalancer> {
        snapshot::load_balancers(&self.sim.world())
    }

    pub fn floating_ips(&self) -> Vec<SimFloatingIp> {
        snapshot::floating_ips(&self.sim.world())
    }

    /// The Neutron ports of the default project.
    pub fn ports(&self) -> Vec<SimPort> {
        snapshot::ports(&self.sim.world())
    }

    /// The Cinder volumes of the default project.
    pub fn volumes(&self) -> Vec<SimVolume> {
        snapshot::volumes(&self.sim.world())
    }

    /// Sets the default project's Cinder quotas: `volumes` and `gigabytes`.
    pub fn set_volume_quota(&self, volumes: usize, gigabytes: i64) {
        let mut w = self.sim.world();
        w.cinder.volume_quota = volumes;
        w.cinder.gigabytes_quota = gigabytes;
    }

    /// Detaches a volume at once, as `openstack server remove volume` would.
    pub fn detach_volume_out_of_band(&self, volume_id: &str) {
        let mut w = self.sim.world();
        if let Some(v) = w.cinder.volumes.get_mut(volume_id) {
            v.attachment = None;
            v.status = world::cinder::VolState::Available;
        }
    }

    /// Attaches a volume to `server_id` at once, as `openstack server add volume` would.
    pub fn attach_volume_out_of_band(&self, volume_id: &str, server_id: &str) {
        let mut w = self.sim.world();
        let id = w.uuid();
        if let Some(v) = w.cinder.volumes.get_mut(volume_id) {
            v.attachment = Some(world::cinder::Attachment {
                id,
                server_id: server_id.to_owned(),
                device: "/dev/vdz".into(),
                at: chrono::Utc::now(),
                delete_on_termination: false,
            });
            v.status = world::cinder::VolState::InUse;
        }
    }

    /// Deletes a volume at once (detached first), as an administrator could.
    pub fn delete_volume_out_of_band(&self, volume_id: &str) {
        self.sim.world().cinder.volumes.remove(volume_id);
    }

    /// Puts a volume in `error`, as a failed back end would.
    pub fn set_volume_error(&self, volume_id: &str) {
        let mut w = self.sim.world();
        if let Some(v) = w.cinder.volumes.get_mut(volume_id) {
            v.status = world::cinder::VolState::Error;
            v.until = None;
        }
    }
}
