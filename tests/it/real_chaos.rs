//! Chaos on the real systems, seeded and reproducible: two operator replicas with
//! leader election run the published group and LoadBalancer while random faults hit
//! them — SIGKILL of the leader or the standby, a real OpenStack API process (Nova,
//! Octavia, Neutron, Keystone, Cinder) killed and started again by the real systems'
//! start script after a few seconds (with Cinder down, a stateful VirtualMachine's
//! server is deleted meanwhile: Nova cannot tell Cinder, and the volume must come back
//! to its replacement), or frozen (SIGSTOP) for a few seconds, a server
//! or a pool member deleted with the `openstack` CLI, `kubectl scale` to a random
//! size, the namespace's credentials Secret rotated between a password and an
//! application credential. After every round the group must converge (its servers
//! ACTIVE, both pools holding exactly their addresses in Octavia itself, the stateful
//! VirtualMachine Ready on the volume it first had) with no
//! duplicate server, server group or load balancer; at the end, deleting everything
//! must leave the project as it was. Run by `hack/real-systems.sh`.
//!
//! `VERDA_CHAOS_SEED` replays a run (the seed is printed first);
//! `VERDA_CHAOS_ROUNDS` sets the number of rounds (default 8), each of one to three faults.

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine};
use verda_operator::cloud::ids::{PoolId, ServerId};
use verda_operator::cloud::model::compute::ServerStatus;
use verda_operator::cloud::owner::Owner;
use verda_operator::cloud::{Compute, LoadBalancing};

use support::real::{
    Namespace, Operator, PUBLISHED_GROUP, PUBLISHED_LB, Real, all_deleted, converged,
    project_inventory, published, put_secret, signal_service, single_cloud, start_services,
    stop_service, until,
};

const LEASE: &str = "verda-chaos-leader";
const IDENTITIES: [&str; 2] = ["chaos-a", "chaos-b"];
const RECOVERY_LIMIT: Duration = Duration::from_secs(300);
const CONFIG: &str = "resyncPeriod: 10s\n";
/// The OpenStack API processes a round may stop (their pid files' names).
const SERVICES: [&str; 5] = ["nova-api", "octavia-api", "neutron", "keystone", CINDER];
/// Stopped, it takes the ledger's server with it: Nova deletes the server and cannot
/// tell Cinder, so the volume stays attached to a server that is gone.
const CINDER: &str = "cinder-api";
/// A stateful VirtualMachine beside the published objects, whose volume must outlive
/// every fault.
const LEDGER: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: ledger}\nspec:\n  image: cirros\n  flavor: m1.tiny\n  volumes: [{name: data, size: 1}]\n  volumeRetention: {whenDeleted: Delete}\n";

/// One fault a round injects.
#[derive(Debug, Clone)]
enum Fault {
    KillLeader,
    KillStandby,
    /// Killed, and started again by the real systems' start script after a pause.
    StopService(&'static str, Duration),
    /// SIGSTOP, then SIGCONT: the API hangs instead of refusing.
    FreezeService(&'static str, Duration),
    DeleteServer,
    DeleteMember,
    Scale(u32),
    RotateSecret,
}

impl Fault {
    fn pick(rng: &mut StdRng) -> Self {
        let service = SERVICES[rng.random_range(0..SERVICES.len())];
        let pause = Duration::from_secs(rng.random_range(3..=8));
        match rng.random_range(0..8) {
            0 => Self::KillLeader,
            1 => Self::KillStandby,
            2 => Self::StopService(service, pause),
            7 => Self::FreezeService(service, pause),
            3 => Self::DeleteServer,
            4 => Self::DeleteMember,
            5 => Self::Scale(rng.random_range(1..=3)),
            _ => Self::RotateSecret,
        }
    }
}

/// The two replicas; a killed one is started again under the same identity.
struct Replicas {
    real: Arc<Real>,
    running: [Operator; 2],
    starts: usize,
}

impl Replicas {
    fn start(real: Arc<Real>) -> Self {
        let running = IDENTITIES.map(|id| Self::launch(&real, id, 0));
        Self {
            real,
            running,
            starts: 2,
        }
    }

    fn launch(real: &Real, identity: &str, n: usize) -> Operator {
        let args = [
            "--leader-elect",
            "--lease-namespace",
            "verda-system",
            "--lease-name",
            LEASE,
            "--lease-duration",
            "6s",
            "--identity",
            identity,
        ];
        real.operator(&format!("{identity}-{n}"), &args, Some(CONFIG))
    }

    /// SIGKILL of the replica `identity`, then a new process in its place.
    fn kill_and_restart(&mut self, identity: &str) {
        let i = IDENTITIES
            .iter()
            .position(|id| *id == identity)
            .unwrap_or(0);
        self.running[i].kill();
        self.running[i] = Self::launch(&self.real, IDENTITIES[i], self.starts);
        self.starts += 1;
    }

    fn context(&self) -> String {
        self.running
            .iter()
            .map(|op| support::real::context(op)())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A clouds.yaml for the demo project through an application credential of its own.
fn application_credential(real: &Real, name: &str) -> (String, String) {
    let made = real.openstack("osh-demo", &["application", "credential", "create", name]);
    let id = made["ID"].as_str().expect("credential ID").to_owned();
    let secret = made["Secret"].as_str().expect("credential secret");
    let password = single_cloud(&real.clouds, "osh-demo");
    let root: serde_json::Value = serde_saphyr::from_str(&password).expect("YAML");
    let auth_url = root["clouds"]["osh-demo"]["auth"]["auth_url"]
        .as_str()
        .expect("auth_url")
        .to_owned();
    let yaml = format!(
        "clouds:\n  osh-demo:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {auth_url}\n      application_credential_id: {id}\n      application_credential_secret: {secret}\n    region_name: RegionOne\n    interface: public\n    identity_api_version: 3\n"
    );
    (id, yaml)
}

/// The replica holding the lease.
async fn leader(client: &kube::Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "verda-system");
    leases.get(LEASE).await.ok()?.spec?.holder_identity
}

/// The pieces a round works with.
struct Scene {
    real: Arc<Real>,
    client: kube::Client,
    ns: Namespace,
    replicas: Replicas,
    rng: StdRng,
    size: u32,
    secrets: [String; 2],
    secret_in_use: usize,
    /// The ledger's namespace (of its own: the published group's checks count their
    /// namespace's servers) and its data volume, once first Ready.
    ledger: Namespace,
    ledger_volume: Option<String>,
    /// The ledger's servers deleted so far: it must be on another one.
    ledger_gone: Vec<String>,
}

impl Scene {
    /// Injects `fault`; what it did, for the report.
    async fn inject(&mut self, fault: &Fault) -> String {
        match fault {
            Fault::KillLeader | Fault::KillStandby => {
                let Some(holder) = leader(&self.client).await else {
                    return "no leader to tell apart: nothing killed".into();
                };
                let victim = match fault {
                    Fault::KillLeader => holder,
                    _ => IDENTITIES
                        .iter()
                        .find(|id| **id != holder)
                        .map(|s| s.to_string())
                        .unwrap_or(holder),
                };
                self.replicas.kill_and_restart(&victim);
                format!("SIGKILL {victim}")
            }
            Fault::StopService(name, pause) => {
                let stopped = Instant::now();
                stop_service(name);
                let gone = match *name {
                    CINDER => self.delete_ledger_server().await,
                    _ => String::new(),
                };
                tokio::time::sleep(*pause).await;
                start_services();
                format!(
                    "{name} down for {:.0} s{gone}",
                    stopped.elapsed().as_secs_f64()
                )
            }
            Fault::FreezeService(name, pause) => {
                signal_service(name, "-STOP");
                tokio::time::sleep(*pause).await;
                signal_service(name, "-CONT");
                format!("{name} frozen (SIGSTOP) for {} s", pause.as_secs())
            }
            Fault::DeleteServer => self.delete_server().await,
            Fault::DeleteMember => self.delete_member().await,
            Fault::Scale(n) => {
                let to = format!("--replicas={n}");
                self.real
                    .kubectl(&["-n", &self.ns.name, "scale", "vmg", PUBLISHED_GROUP, &to]);
                self.size = *n;
                format!("kubectl scale --replicas={n}")
            }
            Fault::RotateSecret => {
                self.secret_in_use = 1 - self.secret_in_use;
                put_secret(&self.real, &self.ns.name, &self.secrets[self.secret_in_use]);
                let to = ["password", "application credential"][self.secret_in_use];
                format!("Secret rotated to the {to}")
            }
        }
    }

    /// Deletes one of the namespace's servers with the CLI and waits until Nova no
    /// longer has it, so the round's convergence cannot be read off the old server.
    async fn delete_server(&mut self) -> String {
        let cloud = self.real.cloud();
        let ours: Vec<String> = cloud
            .list_managed_servers()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|s| {
                Owner::from_metadata(&s.metadata).is_some_and(|o| o.namespace == self.ns.name)
            })
            .map(|s| s.id.to_string())
            .collect();
        if ours.is_empty() {
            return "no server to delete".into();
        }
        let id = ours[self.rng.random_range(0..ours.len())].clone();
        self.real
            .openstack_do("osh-demo", &["server", "delete", &id]);
        let gone = Instant::now();
        while gone.elapsed() < Duration::from_secs(60) {
            match Compute::get_server(&cloud, &ServerId::new(&id)).await {
                Err(e) if e.is_not_found() => break,
                Ok(s) if s.status == ServerStatus::Deleted => break,
                _ => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        }
        format!("openstack server delete {id}")
    }

    /// Deletes the ledger's server with the CLI, waiting until Nova has.
    async fn delete_ledger_server(&mut self) -> String {
        let vms: Api<VirtualMachine> = self.ledger.api(self.client.clone());
        let server = vms
            .get("ledger")
            .await
            .ok()
            .and_then(|v| v.status?.server_id);
        let Some(server) = server else {
            return ", the ledger had no server to delete".into();
        };
        self.real
            .openstack_do("osh-demo", &["server", "delete", "--wait", &server]);
        let note = format!(" while the ledger's server {server} was deleted");
        self.ledger_gone.push(server);
        note
    }

    /// The ledger Ready on its volume (the first one it had), or why not.
    async fn ledger_kept(&self) -> Result<String, String> {
        let vms: Api<VirtualMachine> = self.ledger.api(self.client.clone());
        let vm = vms.get("ledger").await.map_err(|e| e.to_string())?;
        let s = vm.status.ok_or("the ledger has no status")?;
        if !is_true(&s.conditions, READY) || s.volumes_attached.as_deref() != Some("1/1") {
            let ready = s.conditions.iter().find(|c| c.type_ == READY);
            return Err(format!("ledger: {:?}", ready.map(|c| &c.message)));
        }
        let volume = s.volumes.first().map(|v| v.id.clone()).ok_or("no volume")?;
        let server = s.server_id.unwrap_or_default();
        if self.ledger_gone.contains(&server) {
            return Err(format!("the ledger still reports deleted server {server}"));
        }
        match &self.ledger_volume {
            Some(first) if *first != volume => Err(format!(
                "the ledger's volume is {volume}, not its first {first}: its data is lost"
            )),
            _ => Ok(volume),
        }
    }

    async fn delete_member(&mut self) -> String {
        let lbs: Api<LoadBalancer> = self.ns.api(self.client.clone());
        let Some(status) = lbs.get(PUBLISHED_LB).await.ok().and_then(|l| l.status) else {
            return "no load balancer status: nothing deleted".into();
        };
        let pools: Vec<String> = status
            .ports
            .iter()
            .filter_map(|p| p.pool_id.clone())
            .collect();
        if pools.is_empty() {
            return "no pool: nothing deleted".into();
        }
        let pool = &pools[self.rng.random_range(0..pools.len())];
        let members = self
            .real
            .openstack("osh-demo", &["loadbalancer", "member", "list", pool]);
        let ids: Vec<String> = members
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str().map(str::to_owned))
            .collect();
        if ids.is_empty() {
            return format!("pool {pool} has no member to delete");
        }
        let id = &ids[self.rng.random_range(0..ids.len())];
        // Octavia refuses a write while the load balancer is busy: that is no fault of ours.
        let deleted = self
            .real
            .openstack_try("osh-demo", &["loadbalancer", "member", "delete", pool, id]);
        if deleted.is_err() {
            return format!("member {id} not deleted (Octavia busy)");
        }
        // Gone from Octavia's listing (not merely PENDING_DELETE) before the round is judged.
        let cloud = self.real.cloud();
        let gone = Instant::now();
        while gone.elapsed() < Duration::from_secs(60) {
            let members = LoadBalancing::list_members(&cloud, &PoolId::from(pool.clone())).await;
            if members.is_ok_and(|m| m.iter().all(|m| m.id.as_str() != id)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        format!("openstack loadbalancer member delete {pool} {id}")
    }

    /// Waits until the round converged; how long it took.
    async fn recover(&self) -> Duration {
        let started = Instant::now();
        loop {
            let state = match converged(&self.real, &self.client, &self.ns, self.size).await {
                Ok(()) => self.ledger_kept().await.map(|_| ()),
                Err(e) => Err(e),
            };
            let Err(last) = state else {
                return started.elapsed();
            };
            assert!(
                started.elapsed() < RECOVERY_LIMIT,
                "not converged after {RECOVERY_LIMIT:?}: {last}\n{}",
                self.replicas.context()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

fn seed() -> u64 {
    std::env::var("VERDA_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random())
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn random_faults_on_the_real_systems_lose_nothing_and_leak_nothing() {
    let seed = seed();
    let rounds: usize = std::env::var("VERDA_CHAOS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    println!("REAL chaos seed {seed} ({rounds} rounds; replay with VERDA_CHAOS_SEED={seed})");
    let real = Arc::new(Real::from_env());
    let client = real.kube().await;
    let ns = Namespace::create(real.clone(), "chaos");
    let baseline = project_inventory(&real);
    let (credential, appcred) = application_credential(&real, &format!("verda-{}", ns.name));
    let secrets = [single_cloud(&real.clouds, "osh-demo"), appcred];
    put_secret(&real, &ns.name, &secrets[0]);
    let files = ["virtualmachinegroup.yaml", "loadbalancer.yaml"].map(published);
    let ledger = Namespace::create(real.clone(), "chaos-ledger");
    put_secret(&real, &ledger.name, &secrets[0]);
    let in_ledger = ["-n", ledger.name.as_str(), "apply", "-f", "-"];
    real.kubectl_with_input(&in_ledger, Some(LEDGER));
    let mut scene = Scene {
        replicas: Replicas::start(real.clone()),
        real: real.clone(),
        client,
        ns,
        rng: StdRng::seed_from_u64(seed),
        size: 2,
        secrets,
        secret_in_use: 0,
        ledger,
        ledger_volume: None,
        ledger_gone: Vec::new(),
    };
    for f in &files {
        real.kubectl(&["-n", &scene.ns.name, "apply", "-f", f]);
    }
    let first = scene.recover().await;
    scene.ledger_volume = scene.ledger_kept().await.ok();
    println!(
        "REAL chaos: published group and LoadBalancer converged in {:.1} s",
        first.as_secs_f64()
    );

    let mut recoveries = Vec::new();
    for round in 1..=rounds {
        let n = scene.rng.random_range(1..=3);
        let faults: Vec<Fault> = (0..n).map(|_| Fault::pick(&mut scene.rng)).collect();
        let mut done = Vec::new();
        for fault in &faults {
            done.push(scene.inject(fault).await);
        }
        let took = scene.recover().await;
        println!(
            "REAL chaos round {round}: {}; converged at {} replicas {:.1} s after the last fault",
            done.join(", "),
            scene.size,
            took.as_secs_f64()
        );
        recoveries.push(took.as_secs_f64());
    }
    recoveries.sort_by(f64::total_cmp);
    if let (Some(min), Some(max)) = (recoveries.first(), recoveries.last()) {
        println!(
            "REAL chaos: {rounds} rounds, recovery {min:.1}-{max:.1} s (median {:.1} s), no duplicate, nothing lost",
            recoveries[recoveries.len() / 2]
        );
    }
    let Scene {
        replicas,
        ns,
        client,
        ledger,
        ..
    } = scene;
    real.kubectl(&["-n", &ledger.name, "delete", "vm", "ledger", "--wait=false"]);
    let leader_now = leader(&client).await.unwrap_or_default();
    let operator = &replicas.running[IDENTITIES
        .iter()
        .position(|i| *i == leader_now)
        .unwrap_or(0)];
    let ledgers: Api<VirtualMachine> = ledger.api(client.clone());
    until(
        "the ledger is gone",
        RECOVERY_LIMIT,
        &support::real::context(operator),
        || async {
            ledgers
                .get_opt("ledger")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
    all_deleted(&real, &client, &ns, operator, &files, baseline).await;
    real.openstack_do(
        "osh-demo",
        &["application", "credential", "delete", &credential],
    );
}
