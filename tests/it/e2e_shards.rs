//! Active-active shards end to end: three replicas in one process, each with its own
//! controllers, cloud client and member Lease, divide six namespaces through claim
//! Leases on one API server and one cloud; a replica that dies has its namespaces
//! reconciled by the others, and one that stops hands its namespaces back.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use support::e2e::{cloud_of, eventually, sample, shard_context, test_timing};
use tokio::sync::oneshot;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine};
use verda_operator::cloud::ids::ServerId;
use verda_operator::cloud::model::loadbalancing::CreateLoadBalancer;
use verda_operator::cloud::owner::Owner;
use verda_operator::controllers;
use verda_operator::leases::assignment::OwnedNamespaces;
use verda_operator::leases::shards::{self, ShardOptions};
use verda_operator::metrics::KindLabels;
use verda_operator::runtime::context::Context;
use verda_operator::sim::{SimConfig, Simulator};
use verda_test_apiserver::TestCluster;

const LEASE_DURATION: Duration = Duration::from_secs(2);
const LIMIT: Duration = Duration::from_secs(30);
const NAMESPACES: usize = 6;
const SWEEP_AFTER: Duration = Duration::from_secs(3);

/// One replica: its controllers and its shard loop.
struct Replica {
    identity: String,
    owned: Arc<OwnedNamespaces>,
    ctx: Arc<Context>,
    controllers: tokio::task::JoinHandle<()>,
    shard: tokio::task::JoinHandle<()>,
    stop: oneshot::Sender<()>,
}

impl Replica {
    async fn start(cluster: &TestCluster, sim: &Simulator, ring: &Ring, identity: &str) -> Self {
        let owned = Arc::new(OwnedNamespaces::default());
        let ctx = Arc::new(shard_context(cluster, sim, identity, owned.clone()).await);
        let controllers = tokio::spawn(controllers::run_all(ctx.clone()));
        let options = ShardOptions {
            lease_namespace: ring.lease_namespace.clone(),
            ring: ring.name.clone(),
            identity: identity.to_owned(),
            lease_duration: LEASE_DURATION,
            namespace_selector: Some(format!("verda-test-ring={}", ring.name)),
            sweep_after: SWEEP_AFTER,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let shard = tokio::spawn({
            let (ctx, owned, client) = (ctx.clone(), owned.clone(), cluster.client());
            async move {
                let shutdown = async { drop(stopped.await) };
                shards::run(
                    Arc::new(controllers::RingFollower(ctx)),
                    owned,
                    client,
                    options,
                    shutdown,
                )
                .await
                .expect("the lease namespace exists");
            }
        });
        Replica {
            identity: identity.to_owned(),
            owned,
            ctx,
            controllers,
            shard,
            stop,
        }
    }

    /// Dies as a SIGKILL would have it: nothing released.
    async fn kill(self) -> Vec<String> {
        self.shard.abort();
        self.controllers.abort();
        let _ = self.shard.await;
        let _ = self.controllers.await;
        self.owned.namespaces()
    }

    /// Stops as on SIGTERM: namespaces handed back, then the controllers stop.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.shard.await.expect("the shard stopped cleanly");
        self.controllers.abort();
        let _ = self.controllers.await;
    }
}

struct Ring {
    name: String,
    lease_namespace: String,
    namespaces: Vec<String>,
}

impl Ring {
    /// Six namespaces labelled for this ring, each with the published VirtualMachine.
    async fn create(cluster: &TestCluster) -> Self {
        let lease_namespace = cluster.namespace("shard-leases").await.expect("namespace");
        let name = format!("ring-{lease_namespace}");
        let label = serde_json::json!({"metadata": {"labels": {"verda-test-ring": name}}});
        let mut namespaces = Vec::new();
        for _ in 0..NAMESPACES {
            let ns = cluster.namespace("shard").await.expect("namespace");
            Api::<Namespace>::all(cluster.client())
                .patch(&ns, &PatchParams::default(), &Patch::Merge(&label))
                .await
                .expect("labelled");
            let mut vm: VirtualMachine =
                serde_saphyr::from_str(&sample("virtualmachine.yaml")).expect("manifest");
            vm.metadata.namespace = Some(ns.clone());
            Api::<VirtualMachine>::namespaced(cluster.client(), &ns)
                .create(&PostParams::default(), &vm)
                .await
                .expect("created");
            namespaces.push(ns);
        }
        Ring {
            name,
            lease_namespace,
            namespaces,
        }
    }

    /// Who holds each namespace's claim.
    async fn holders(&self, cluster: &TestCluster) -> BTreeMap<String, String> {
        let leases = Api::<Lease>::namespaced(cluster.client(), &self.lease_namespace);
        let mut holders = BTreeMap::new();
        for ns in &self.namespaces {
            let claim = format!("{}-ns-{ns}", self.name);
            let holder = leases.get_opt(&claim).await.ok().flatten().and_then(|l| {
                l.spec
                    .and_then(|s| s.holder_identity)
                    .filter(|h| !h.is_empty())
            });
            if let Some(holder) = holder {
                holders.insert(ns.clone(), holder);
            }
        }
        holders
    }
}

/// A LoadBalancer of fixed addresses, which needs no group.
const STATIC_LB: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {name: web}\nspec:\n  ports:\n  - port: 80\n    protocol: http\n    realServers: {protocol: http, port: 8080, addresses: [10.0.0.21]}\n";

/// The replica's orphaned load balancer gauge, once a listing set it.
fn orphaned_load_balancers(replica: &Replica) -> Option<u64> {
    let text = replica.ctx.metrics.encode();
    let line = text
        .lines()
        .find(|l| l.starts_with(r#"verda_orphaned_cloud_resources{resource="load-balancer"}"#))?;
    line.rsplit(' ').next()?.parse().ok()
}

/// Waits until each of `replicas` spends `project`'s request budget as one of `sharers`.
async fn budgets_shared_by(replicas: &[Replica], project: &str, sharers: u32) {
    let what = format!("each replica spends 1/{sharers} of the project's request budget");
    eventually(&what, LIMIT, || async {
        let spent = |r: &Replica| r.ctx.tenancy.budgets().map(|b| b.sharers_of(project));
        replicas
            .iter()
            .all(|r| spent(r) == Some(sharers))
            .then_some(())
    })
    .await;
}

/// The server of each namespace's VirtualMachine, once every one is Ready.
async fn ready_servers(cluster: &TestCluster, ring: &Ring) -> Option<BTreeMap<String, String>> {
    let mut servers = BTreeMap::new();
    for ns in &ring.namespaces {
        let api = Api::<VirtualMachine>::namespaced(cluster.client(), ns);
        let status = api.get("vm-sample").await.ok()?.status?;
        if !is_true(&status.conditions, READY) {
            return None;
        }
        servers.insert(ns.clone(), status.server_id?);
    }
    Some(servers)
}

#[tokio::test]
async fn three_shards_divide_the_namespaces_survive_a_killed_one_and_hand_back_on_stop() {
    let cluster = TestCluster::from_env_or_start().await.expect("cluster");
    let sim = Simulator::start(SimConfig::fast())
        .await
        .expect("simulator");
    let ring = Ring::create(&cluster).await;
    let mut replicas = Vec::new();
    for identity in ["shard-a", "shard-b", "shard-c"] {
        replicas.push(Replica::start(&cluster, &sim, &ring, identity).await);
    }

    // Every namespace converges, each claimed by one replica, two each.
    let servers = eventually("every VirtualMachine is Ready", LIMIT, || {
        ready_servers(&cluster, &ring)
    })
    .await;
    let holders = eventually("the namespaces are spread two by two", LIMIT, || async {
        let holders = ring.holders(&cluster).await;
        let per_replica = replicas
            .iter()
            .map(|r| holders.values().filter(|h| **h == r.identity).count());
        (holders.len() == NAMESPACES && per_replica.clone().all(|n| n == 2)).then_some(holders)
    })
    .await;
    for replica in &replicas {
        let owned: BTreeSet<String> = replica.owned.namespaces().into_iter().collect();
        let claimed: BTreeSet<String> = holders
            .iter()
            .filter(|(_, h)| **h == replica.identity)
            .map(|(ns, _)| ns.clone())
            .collect();
        assert_eq!(
            owned, claimed,
            "{} reconciles what it claims",
            replica.identity
        );
    }
    eventually("each replica's gauges show its share", LIMIT, || async {
        let shown = replicas.iter().all(|r| {
            let shards = &r.ctx.metrics.shards;
            let vms = KindLabels {
                kind: "virtualmachine",
            };
            let vms = shards.objects.get_or_create(&vms).get();
            let leader = r.ctx.metrics.leader.get();
            shards.namespaces.get() == 2 && shards.members.get() == 3 && vms == 2 && leader == 0
        });
        shown.then_some(())
    })
    .await;
    assert_eq!(sim.live_servers().len(), NAMESPACES, "one server each");
    // Every namespace acts in the simulator's one project: each replica spends a third
    // of its request budget.
    let project = eventually("the project is recorded", LIMIT, || async {
        let api = Api::<VirtualMachine>::namespaced(cluster.client(), &ring.namespaces[0]);
        api.get("vm-sample").await.ok()?.status?.project_id
    })
    .await;
    budgets_shared_by(&replicas, &project, 3).await;
    // Refreshes of each replica's cloud view list all six servers: none is an orphan to
    // a replica that holds only two namespaces' objects.
    tokio::time::sleep(test_timing().resync * 2).await;
    for replica in &replicas {
        let text = replica.ctx.metrics.encode();
        assert!(
            text.contains(r#"verda_orphaned_cloud_resources{resource="server"} 0"#),
            "{}: {}",
            replica.identity,
            text.lines()
                .filter(|l| l.contains("orphaned"))
                .collect::<Vec<_>>()
                .join("; ")
        );
        // Those listings took in only its own namespaces' servers: memory divides.
        let owned: BTreeSet<String> = replica.owned.namespaces().into_iter().collect();
        let held = replica.ctx.view.namespaces_held();
        assert!(
            !held.is_empty() && held.is_subset(&owned),
            "{}'s cloud view holds {held:?}, owns {owned:?}",
            replica.identity
        );
    }

    // A load balancer whose owner left the first namespace (deleted while paused, say)
    // is an orphan to the replica holding that namespace, and to no other, though
    // every replica lists it (a LoadBalancer in each namespace has them look at Octavia).
    let namespace = &ring.namespaces[0];
    let cloud = cloud_of(&sim);
    let subnet = cloud.network(None).find_subnet("private-subnet").await;
    let gone = Owner::new(uuid::Uuid::new_v4().to_string(), namespace, "gone")
        .in_cluster(&replicas[0].ctx.cluster);
    cloud
        .load_balancing(None)
        .create_load_balancer(&CreateLoadBalancer {
            name: format!("verda-{namespace}-gone"),
            vip_subnet_id: Some(subnet.expect("the simulator's subnet").id),
            tags: gone.load_balancer_tags(),
            ..CreateLoadBalancer::default()
        })
        .await
        .expect("created");
    for ns in &ring.namespaces {
        let lb: LoadBalancer = serde_saphyr::from_str(STATIC_LB).expect("manifest");
        Api::<LoadBalancer>::namespaced(cluster.client(), ns)
            .create(&PostParams::default(), &lb)
            .await
            .expect("created");
    }
    let holder = holders[namespace].clone();
    eventually(
        "only the holder counts the orphaned load balancer",
        LIMIT,
        || async {
            let counted = |r: &Replica| Some(u64::from(r.identity == holder));
            let right = replicas
                .iter()
                .all(|r| orphaned_load_balancers(r) == counted(r));
            right.then_some(())
        },
    )
    .await;

    // Kill one; delete a server in one of its namespaces behind everyone's back.
    let killed = replicas.remove(0);
    let killed_identity = killed.identity.clone();
    let orphaned = killed.kill().await;
    assert_eq!(orphaned.len(), 2);
    let victim = &orphaned[0];
    cloud_of(&sim)
        .compute()
        .delete_server(&ServerId::new(&servers[victim]))
        .await
        .expect("deleted behind the operators' backs");
    let killed_at = Instant::now();
    eventually(
        "a survivor heals the killed replica's namespace",
        LIMIT,
        || async {
            let now = ready_servers(&cluster, &ring).await?;
            (now[victim] != servers[victim]).then_some(())
        },
    )
    .await;
    let healed_after = killed_at.elapsed();
    assert!(
        healed_after < LEASE_DURATION + Duration::from_secs(10),
        "healed {healed_after:?} after the kill"
    );
    // Each survivor judges the death on its own rounds: the other namespace may be taken
    // a round after the healed one.
    eventually(
        "every claim of the killed replica is taken",
        LIMIT,
        || async {
            let holders = ring.holders(&cluster).await;
            let taken =
                holders.len() == NAMESPACES && holders.values().all(|h| *h != killed_identity);
            taken.then_some(())
        },
    )
    .await;
    let taken_after = killed_at.elapsed();
    assert!(
        taken_after < LEASE_DURATION + Duration::from_secs(10),
        "the killed replica's claims taken {taken_after:?} after the kill"
    );
    assert_eq!(sim.live_servers().len(), NAMESPACES, "no duplicate");
    budgets_shared_by(&replicas, &project, 2).await;
    // Its member Lease, which no one writes any more, is swept.
    let member = format!("{}-member-{killed_identity}", ring.name);
    let leases = Api::<Lease>::namespaced(cluster.client(), &ring.lease_namespace);
    eventually(
        "the killed replica's member Lease is swept",
        LIMIT,
        || async { leases.get_opt(&member).await.ok()?.is_none().then_some(()) },
    )
    .await;

    // A graceful stop hands its namespaces back at once, without waiting for expiry.
    let stopping = replicas.remove(0);
    let (stopped_identity, last) = (stopping.identity.clone(), replicas.remove(0));
    let stopped_at = Instant::now();
    stopping.stop().await;
    eventually("the last replica holds every namespace", LIMIT, || async {
        let holders = ring.holders(&cluster).await;
        (holders.len() == NAMESPACES && holders.values().all(|h| *h == last.identity)).then_some(())
    })
    .await;
    assert!(
        stopped_at.elapsed() < LEASE_DURATION + Duration::from_secs(8),
        "{stopped_identity}'s namespaces taken over after {:?}",
        stopped_at.elapsed()
    );
    assert_eq!(last.owned.namespaces().len(), NAMESPACES);
    budgets_shared_by(std::slice::from_ref(&last), &project, 1).await;
    let servers = eventually("all still Ready", LIMIT, || ready_servers(&cluster, &ring)).await;
    assert_eq!(servers.len(), NAMESPACES);
    assert_eq!(sim.live_servers().len(), NAMESPACES, "no duplicate");
    last.stop().await;
}
