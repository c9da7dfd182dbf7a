//! Shards on the real systems: three `verda-operator run --shards` processes, as the
//! operator's ServiceAccount, divide N namespaces (`VERDA_REAL_SHARDS_NAMESPACES`,
//! default 6) on the real kube-apiserver, each namespace with the published group and
//! LoadBalancer on the real OpenStack. Every namespace converges with one claim each;
//! a fourth replica moves at most 40 % of the namespaces; after a SIGKILL of one
//! replica, a `kubectl scale` in one of its namespaces reaches both of Octavia's pools
//! (goal: lease duration + 10 s); the replicas' own records (each reconcile's cloud
//! writes, logged as JSON) show no two replicas writing for one namespace at once; and
//! deleting everything leaves the project as it was. Run by `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use verda_operator::leases::shards::budget_share;

use support::real::{
    Namespace, Operator, PUBLISHED_GROUP, Real, converged, nothing_left, project_inventory,
    published, until,
};

const LEASE: Duration = Duration::from_secs(6);
const CONFIG: &str = "resyncPeriod: 30s\n";
const LIMIT: Duration = Duration::from_secs(600);

/// `config/shards` as `kubectl apply -k` sends it (applied to the real cluster, which
/// checks it), and what its Deployment runs: the replica count and the container's
/// arguments.
fn shards_overlay(real: &Real) -> (i64, Vec<String>) {
    let dir = support::crd_schema::repo_root().join("config/shards");
    let dir = dir.to_string_lossy();
    real.kubectl(&["apply", "-k", &dir]);
    let rendered = real.kubectl(&["kustomize", &dir]);
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&rendered).expect("YAML documents");
    for doc in docs {
        if doc["kind"] == "Deployment" {
            let spec = &doc["spec"];
            let args = spec["template"]["spec"]["containers"][0]["args"]
                .as_array()
                .expect("args")
                .iter()
                .map(|a| a.as_str().expect("a string").to_owned())
                .collect();
            return (spec["replicas"].as_i64().expect("replicas"), args);
        }
    }
    panic!("config/shards renders no Deployment")
}

/// Now, in ms since the epoch (as the replicas' log timestamps).
fn epoch_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The value after `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at = args.iter().position(|a| a == flag).expect(flag);
    &args[at + 1]
}

struct Shards {
    real: Arc<Real>,
    ring: String,
    selector: String,
    running: BTreeMap<String, Operator>,
    /// Logs of replicas killed or stopped, for the write records.
    logs: Vec<String>,
}

impl Shards {
    fn start(&mut self, identity: &str) {
        let lease = format!("{}s", LEASE.as_secs());
        let args = [
            "--shards",
            "--shard-namespace-selector",
            &self.selector,
            "--lease-namespace",
            "verda-system",
            "--lease-name",
            &self.ring,
            "--lease-duration",
            &lease,
            "--identity",
            identity,
            "--log-format",
            "json",
        ];
        let env = [("RUST_LOG", "info,verda_operator::cloud_writes=debug")];
        let operator = self
            .real
            .operator_with_env(identity, &args, Some(CONFIG), &env);
        self.running.insert(identity.to_owned(), operator);
    }

    fn kill(&mut self, identity: &str) {
        let mut operator = self.running.remove(identity).expect("running");
        operator.kill();
        self.logs.push(format!("{identity}\n{}", operator.log()));
    }

    /// When a running replica took `namespace`'s claim, from its log (ms since the epoch).
    fn taken_ms(&self, namespace: &str) -> Option<u64> {
        let lines = self.running.values().map(|op| op.log());
        let taken = lines.flat_map(|log| {
            log.lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter(|r| {
                    r["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("took the namespace"))
                        && r["namespace"] == namespace
                })
                .filter_map(|r| {
                    let at = r["timestamp"].as_str()?;
                    let at = chrono::DateTime::parse_from_rfc3339(at).ok()?;
                    u64::try_from(at.timestamp_millis()).ok()
                })
                .collect::<Vec<_>>()
        });
        taken.max()
    }

    fn context(&self) -> String {
        let tails = self.running.iter().map(|(id, op)| {
            let tail = support::real::tail(&op.log(), 10);
            format!("== {id}\n{tail}")
        });
        tails.collect::<Vec<_>>().join("\n")
    }

    /// Every reconcile's cloud writes.
    fn writes(&self) -> Vec<Writes> {
        let running = self
            .running
            .iter()
            .map(|(id, op)| format!("{id}\n{}", op.log()));
        let logs: Vec<String> = self.logs.iter().cloned().chain(running).collect();
        let mut records = Vec::new();
        for log in logs {
            let (identity, lines) = log.split_once('\n').unwrap_or_default();
            for line in lines.lines() {
                if !line.contains("\"verda_operator::cloud_writes\"") {
                    continue;
                }
                let r: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
                let object = r["object"].as_str().expect("object").to_owned();
                let ns = object.split('/').next().unwrap_or_default().to_owned();
                let first = r["first_sent_ms"].as_u64().expect("first_sent_ms");
                let last = r["last_done_ms"].as_u64().expect("last_done_ms");
                records.push((ns, first, last, identity.to_owned(), object));
            }
        }
        records
    }
}

/// One reconcile's cloud writes, as a replica logged them: (namespace, first sent ms,
/// last answered ms, replica, object).
type Writes = (String, u64, u64, String, String);

/// The reconciles that wrote in `namespace` from `since_ms` until `within` later, as
/// seconds after it: where a failover's time went past the takeover.
fn timeline(records: &[Writes], namespace: &str, since_ms: u64, within: Duration) -> String {
    let until_ms = since_ms + within.as_millis() as u64;
    let mut after: Vec<_> = records
        .iter()
        .filter(|r| r.0 == namespace && (since_ms..=until_ms).contains(&r.1))
        .collect();
    after.sort_by_key(|r| r.1);
    let secs = |ms: u64| (ms - since_ms) as f64 / 1000.0;
    let spans = after.iter().map(|(_, first, last, who, object)| {
        format!("{object} by {who} {:.1}-{:.1} s", secs(*first), secs(*last))
    });
    spans.collect::<Vec<_>>().join("; ")
}

/// Pairs of reconciles of two replicas whose writes for one namespace overlapped.
fn concurrent(records: &[Writes]) -> Vec<String> {
    let mut sorted = records.to_vec();
    sorted.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut found = Vec::new();
    for (i, (ns, _, last, who, obj)) in sorted.iter().enumerate() {
        let later = sorted[i + 1..]
            .iter()
            .take_while(|r| r.0 == *ns && r.1 <= *last);
        for (_, first2, _, who2, obj2) in later.filter(|r| r.3 != *who) {
            found.push(format!(
                "{who} {obj} until {last} / {who2} {obj2} from {first2}"
            ));
        }
    }
    found
}

/// Who holds each namespace's claim.
async fn holders(
    client: &kube::Client,
    ring: &str,
    namespaces: &[Namespace],
) -> BTreeMap<String, String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "verda-system");
    let mut held = BTreeMap::new();
    for ns in namespaces {
        let claim = format!("{ring}-ns-{}", ns.name);
        let holder = leases.get_opt(&claim).await.ok().flatten().and_then(|l| {
            l.spec
                .and_then(|s| s.holder_identity)
                .filter(|h| !h.is_empty())
        });
        if let Some(holder) = holder {
            held.insert(ns.name.clone(), holder);
        }
    }
    held
}

/// What each live member Lease of `ring` publishes of the projects its replica acts in.
async fn member_projects(client: &kube::Client, ring: &str) -> BTreeMap<String, String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "verda-system");
    let listed = leases.list(&Default::default()).await;
    let prefix = format!("{ring}-member-");
    let members = listed.map(|l| l.items).unwrap_or_default().into_iter();
    members
        .filter(|l| {
            l.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter_map(|l| {
            let holder = l
                .spec
                .as_ref()?
                .holder_identity
                .clone()
                .filter(|h| !h.is_empty())?;
            let annotations = l.metadata.annotations.unwrap_or_default();
            Some((holder, annotations.get(budget_share::ANNOTATION)?.clone()))
        })
        .collect()
}

/// The claims once every namespace is held by one of `live`, as evenly as can be.
async fn spread_over(
    client: &kube::Client,
    ring: &str,
    namespaces: &[Namespace],
    live: &[&str],
    context: &dyn Fn() -> String,
) -> BTreeMap<String, String> {
    let fair = namespaces.len() / live.len();
    until("the claims to spread evenly", LIMIT, context, || async {
        let held = holders(client, ring, namespaces).await;
        let counts = live
            .iter()
            .map(|r| held.values().filter(|h| h == r).count());
        let even = held.len() == namespaces.len()
            && held.values().all(|h| live.contains(&h.as_str()))
            && counts.clone().all(|c| fair <= c && c <= fair + 1);
        even.then_some(held)
    })
    .await
}

#[tokio::test]
#[ignore = "needs the real systems: run through hack/real-systems.sh"]
async fn shards_divide_namespaces_on_the_real_systems_and_heal_a_killed_one() {
    let real = Arc::new(Real::from_env());
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let count: usize = std::env::var("VERDA_REAL_SHARDS_NAMESPACES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6);
    let tag = format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..6]);
    let selector = format!("verda-real-shards={tag}");
    let files = [
        published("virtualmachinegroup.yaml"),
        published("loadbalancer.yaml"),
    ];
    let mut namespaces = Vec::new();
    for _ in 0..count {
        let ns = Namespace::create(real.clone(), "shards");
        real.kubectl(&["label", "namespace", &ns.name, &selector]);
        real.kubectl(&["-n", &ns.name, "apply", "-f", &files[0], "-f", &files[1]]);
        namespaces.push(ns);
    }
    // The replicas run as the published overlay's Deployment runs them (its config
    // file's path aside: they are processes here, not Pods).
    let (replicas, args) = shards_overlay(&real);
    assert_eq!(replicas, 3, "config/shards runs three replicas");
    assert!(args.contains(&"--shards".to_owned()), "{args:?}");
    let mut shards = Shards {
        real: real.clone(),
        ring: flag(&args, "--lease-name").to_owned(),
        selector,
        running: BTreeMap::new(),
        logs: Vec::new(),
    };
    let started = Instant::now();
    for identity in ["shard-a", "shard-b", "shard-c"] {
        shards.start(identity);
    }
    for ns in &namespaces {
        let context = || shards.context();
        until("every namespace converges", LIMIT, &context, || async {
            converged(&real, &client, ns, 2).await.ok()
        })
        .await;
    }
    let converge = started.elapsed();
    let context = || shards.context();
    let three = spread_over(
        &client,
        &shards.ring,
        &namespaces,
        &["shard-a", "shard-b", "shard-c"],
        &context,
    )
    .await;

    // Every namespace acts in the one project of the real cloud: each replica
    // publishes it on its member Lease, and so spends a third of its request budget.
    let published = until(
        "each member publishes its project",
        LIMIT,
        &context,
        || async {
            let projects = member_projects(&client, &shards.ring).await;
            let one: Vec<&String> = projects.values().collect();
            let same = projects.len() == 3 && one.iter().all(|p| !p.is_empty() && *p == one[0]);
            same.then_some(projects)
        },
    )
    .await;
    println!("SHARDS real: the member Leases publish the project they act in: {published:?}");

    // A fourth replica takes about a quarter, moved from the others.
    shards.start("shard-d");
    let context = || shards.context();
    let all = ["shard-a", "shard-b", "shard-c", "shard-d"];
    let four = spread_over(&client, &shards.ring, &namespaces, &all, &context).await;
    let moved = three.iter().filter(|(ns, h)| four[*ns] != **h).count();
    assert!(
        moved * 10 <= count * 4,
        "a fourth replica moved {moved} of {count} namespaces: {three:?} -> {four:?}"
    );

    // SIGKILL one; scale a group in one of its namespaces at once.
    let victim = "shard-a";
    let target = namespaces
        .iter()
        .find(|ns| four[&ns.name] == victim)
        .expect("the victim holds a namespace");
    shards.kill(victim);
    let killed = Instant::now();
    let killed_ms = epoch_ms();
    real.kubectl(&[
        "-n",
        &target.name,
        "scale",
        "vmg",
        PUBLISHED_GROUP,
        "--replicas=3",
    ]);
    let context = || shards.context();
    until("the scale reaches both pools", LIMIT, &context, || async {
        converged(&real, &client, target, 3).await.ok()
    })
    .await;
    let scaled = killed.elapsed();
    // The survivor's claim of the namespace: how much of the failover is telling the
    // death, the rest being the reconciles, a real server's boot and Octavia.
    let claimed_after = shards
        .taken_ms(&target.name)
        .filter(|at| *at >= killed_ms)
        .map_or(f64::NAN, |at| (at - killed_ms) as f64 / 1000.0);
    let survivors = ["shard-b", "shard-c", "shard-d"];
    let taken = spread_over(&client, &shards.ring, &namespaces, &survivors, &context).await;
    assert!(taken.values().all(|h| h != victim));
    for ns in &namespaces {
        let replicas = if ns.name == target.name { 3 } else { 2 };
        until(
            "every namespace still converged",
            LIMIT,
            &context,
            || async { converged(&real, &client, ns, replicas).await.ok() },
        )
        .await;
    }

    // Delete everything; the survivors clean up, and nothing is left in the project.
    for ns in &namespaces {
        real.kubectl(&["-n", &ns.name, "delete", "lb,vmg", "--all", "--wait=false"]);
    }
    for ns in &namespaces {
        until("every object is gone", LIMIT, &context, || async {
            let left = real.kubectl(&["-n", &ns.name, "get", "vm,vmg,lb", "-o", "name"]);
            left.trim().is_empty().then_some(())
        })
        .await;
    }
    nothing_left(&real, &baseline);

    let records = shards.writes();
    let overlapping = concurrent(&records);
    println!(
        "SHARDS real: after the SIGKILL, the writes in {}: {}",
        target.name,
        timeline(&records, &target.name, killed_ms, scaled)
    );
    let goal = LEASE + Duration::from_secs(10);
    println!(
        "SHARDS real: {count} namespaces converged in {:.1} s over 3 replicas; a 4th moved {moved} ({:.0} %); \
         after SIGKILL its namespace was taken in {claimed_after:.1} s and the scale reached both pools in {:.1} s \
         (goal {} s: {}); {} reconciles wrote, {} pairs of two replicas writing for one namespace at once",
        converge.as_secs_f64(),
        100.0 * moved as f64 / count as f64,
        scaled.as_secs_f64(),
        goal.as_secs(),
        if scaled <= goal { "met" } else { "missed" },
        records.len(),
        overlapping.len()
    );
    assert!(!records.is_empty(), "the replicas logged their writes");
    assert!(overlapping.is_empty(), "writes at once: {overlapping:#?}");
    // Bounded, not the goal: a real server boots and Octavia acts in seconds each.
    assert!(scaled < goal + Duration::from_secs(20), "{scaled:?}");
    for (_, mut operator) in std::mem::take(&mut shards.running) {
        operator.stop();
    }
}
