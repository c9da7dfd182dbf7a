//! Groups spread over the real systems' three Nova availability zones (`az-1`..`az-3`,
//! one compute host each), driven with `kubectl` and broken with the `openstack` CLI as
//! an admin would see a data centre go: a group of 6 runs 2 per zone and a scale to 4
//! leaves 2/1/1; with `az-2`'s compute service disabled and its servers ERROR, the
//! `Balanced` group runs 3/0/3 while its LoadBalancer's pool never holds fewer than 4,
//! an `Even` group keeps its two other replicas and reports `ZoneUnavailable`, and a
//! replica with a data volume stays in `az-2`; the zone enabled again, the `Balanced`
//! group moves back to 2/2/2 surge first (the pool never below 6) and the volume's
//! replica serves again with its volume. The LoadBalancer is in Octavia's `az-1`. Run
//! by `hack/real-systems.sh` (stage `zones`).

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine};

use support::real::{Namespace, Real, context, nothing_left, project_inventory, until};

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10s\n";
const LOST: &str = "az-2";

fn group(name: &str, replicas: u32, spread: &str, template: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: {name}}}\nspec:\n  replicas: {replicas}\n  haPolicy: soft\n  zones: {{names: [az-1, az-2, az-3], spread: {spread}}}\n  template:\n    image: cirros\n    flavor: m1.tiny\n{template}"
    )
}

const LB: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {name: front}\nspec:\n  region: tokyo1\n  zone: dev\n  availabilityZone: az-1\n  vipType: private\n  serviceType: generic\n  ports:\n  - port: 80\n    protocol: tcp\n    realServers: {protocol: tcp, port: 80, virtualMachineGroupRef: spread}\n";

/// The group's servers in Nova: name → (ID, status, zone).
fn servers(real: &Real, group: &str) -> BTreeMap<String, (String, String, String)> {
    let listed = real.openstack(
        "osh-demo",
        &["server", "list", "--long", "--name", &format!("^{group}-")],
    );
    let rows = listed.as_array().into_iter().flatten();
    rows.map(|s| {
        let field = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
        let row = (field("ID"), field("Status"), field("Availability Zone"));
        (field("Name"), row)
    })
    .collect()
}

/// The group's ACTIVE servers per zone.
fn active_per_zone(real: &Real, group: &str) -> BTreeMap<String, usize> {
    let mut zones = BTreeMap::new();
    for (_, status, zone) in servers(real, group).into_values() {
        if status == "ACTIVE" {
            *zones.entry(zone).or_default() += 1;
        }
    }
    zones
}

fn spread(want: &[(&str, usize)]) -> BTreeMap<String, usize> {
    want.iter()
        .filter(|(_, n)| *n > 0)
        .map(|(z, n)| ((*z).to_owned(), *n))
        .collect()
}

/// Until the group's servers are exactly `want` ACTIVE per zone, nothing else.
async fn until_spread(
    real: &Real,
    op: &support::real::Operator,
    group: &str,
    want: &[(&str, usize)],
) {
    let want = spread(want);
    let total: usize = want.values().sum();
    let what = format!("{group} runs {want:?}");
    until(&what, LIMIT, &context(op), || async {
        let all = servers(real, group).len();
        (active_per_zone(real, group) == want && all == total).then_some(())
    })
    .await;
}

/// `zone`'s compute service, disabled by an admin until dropped (also when the test
/// fails: the zone serves the stages after this one).
struct ZoneDown<'a> {
    real: &'a Real,
    host: String,
}

impl<'a> ZoneDown<'a> {
    fn new(real: &'a Real, zone: &str) -> Self {
        let services = real.openstack(
            "osh-admin",
            &["compute", "service", "list", "--service", "nova-compute"],
        );
        let host = services
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["Zone"] == zone)
            .and_then(|s| s["Host"].as_str())
            .unwrap_or_else(|| panic!("a compute service in {zone}: {services}"))
            .to_owned();
        real.openstack_do(
            "osh-admin",
            &[
                "compute",
                "service",
                "set",
                "--disable",
                "--disable-reason",
                "data centre lost (test)",
                &host,
                "nova-compute",
            ],
        );
        ZoneDown { real, host }
    }
}

impl Drop for ZoneDown<'_> {
    fn drop(&mut self) {
        let _ = self.real.openstack_try(
            "osh-admin",
            &[
                "compute",
                "service",
                "set",
                "--enable",
                &self.host,
                "nova-compute",
            ],
        );
    }
}

/// The notes of the namespace's events with `reason` about `object`.
fn notes(real: &Real, ns: &Namespace, reason: &str, object: &str) -> Vec<String> {
    let events = real.kubectl(&["-n", &ns.name, "get", "events", "-o", "json"]);
    let events: serde_json::Value = serde_json::from_str(&events).expect("events JSON");
    let items = events["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|e| e["reason"] == reason && e["involvedObject"]["name"] == object)
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect()
}

/// Samples the LoadBalancer's pool every 500 ms: the fewest members it listed since
/// the last `reset`.
struct PoolFloor {
    fewest: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl PoolFloor {
    fn start(lbs: Api<LoadBalancer>) -> Self {
        let fewest = Arc::new(AtomicUsize::new(usize::MAX));
        let seen = fewest.clone();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(lb) = lbs.get("front").await
                    && let Some(port) = lb.status.and_then(|s| s.ports.into_iter().next())
                {
                    seen.fetch_min(port.members.len(), Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        PoolFloor { fewest, task }
    }

    fn reset(&self) {
        self.fewest.store(usize::MAX, Ordering::SeqCst);
    }

    fn fewest(&self) -> usize {
        self.fewest.load(Ordering::SeqCst)
    }
}

impl Drop for PoolFloor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn groups_spread_over_zones_survive_the_loss_of_one_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-zones");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let op = real.operator("zones", &[], Some(CONFIG));
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let apply = |manifest: &str| {
        real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(manifest));
    };
    let started = Instant::now();
    apply(&group("spread", 6, "Balanced", ""));
    apply(&group("even", 3, "Even", ""));
    let volume = "    volumes: [{name: data, size: 1}]\n  volumeRetention: {whenScaled: Retain, whenDeleted: Delete}\n";
    apply(&group("pinned", 3, "Balanced", volume));
    apply(LB);
    until_spread(
        &real,
        &op,
        "spread",
        &[("az-1", 2), ("az-2", 2), ("az-3", 2)],
    )
    .await;
    until_spread(&real, &op, "even", &[("az-1", 1), ("az-2", 1), ("az-3", 1)]).await;
    until_spread(
        &real,
        &op,
        "pinned",
        &[("az-1", 1), ("az-2", 1), ("az-3", 1)],
    )
    .await;
    let lb_id = until("the pool holds 6", LIMIT, &context(&op), || async {
        let s = lbs.get("front").await.ok()?.status?;
        let port = s.ports.first()?;
        (port.members.len() == 6 && is_true(&s.conditions, READY))
            .then(|| s.load_balancer_id.clone())?
    })
    .await;
    let shown = real.openstack("osh-demo", &["loadbalancer", "show", &lb_id]);
    assert_eq!(shown["availability_zone"], "az-1", "{shown}");
    eprintln!(
        "REAL 12 replicas in three groups over three zones, a LoadBalancer in az-1: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let wide = real.kubectl(&["-n", &ns.name, "get", "vmg", "spread", "-o", "wide"]);
    assert!(wide.contains("az-1=2 az-2=2 az-3=2"), "{wide}");

    let t = Instant::now();
    real.kubectl(&["-n", &ns.name, "scale", "vmg", "spread", "--replicas=4"]);
    until_spread(
        &real,
        &op,
        "spread",
        &[("az-1", 2), ("az-2", 1), ("az-3", 1)],
    )
    .await;
    real.kubectl(&["-n", &ns.name, "scale", "vmg", "spread", "--replicas=6"]);
    until_spread(
        &real,
        &op,
        "spread",
        &[("az-1", 2), ("az-2", 2), ("az-3", 2)],
    )
    .await;
    until("the pool holds 6 again", LIMIT, &context(&op), || async {
        let s = lbs.get("front").await.ok()?.status?;
        (s.ports.first()?.members.len() == 6).then_some(())
    })
    .await;
    eprintln!(
        "REAL scale 6 → 4 (2/1/1) → 6 (2/2/2): {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // The data centre goes: az-2's compute service disabled, its servers ERROR.
    let pinned_before = servers(&real, "pinned");
    let (pinned_name, _) = pinned_before
        .iter()
        .find(|(_, (_, _, zone))| zone == LOST)
        .map(|(n, row)| (n.clone(), row.clone()))
        .expect("a pinned replica in az-2");
    let floor = PoolFloor::start(lbs.clone());
    let down = ZoneDown::new(&real, LOST);
    for group in ["spread", "even", "pinned"] {
        for (_, (id, _, zone)) in servers(&real, group) {
            if zone == LOST {
                real.openstack_do(
                    "osh-admin",
                    &["server", "set", "--auto-approve", "--state", "error", &id],
                );
            }
        }
    }
    let t = Instant::now();
    until_spread(&real, &op, "spread", &[("az-1", 3), ("az-3", 3)]).await;
    let moved = t.elapsed().as_secs_f64();
    until(
        "the pool holds 6 after the loss",
        LIMIT,
        &context(&op),
        || async {
            let s = lbs.get("front").await.ok()?.status?;
            (s.ports.first()?.members.len() == 6).then_some(())
        },
    )
    .await;
    assert!(
        floor.fewest() >= 4,
        "the pool held {} members",
        floor.fewest()
    );
    eprintln!(
        "REAL az-2 lost: Balanced group at 3/0/3 in {moved:.1} s, its pool never below {}",
        floor.fewest()
    );
    until(
        "even reports ZoneUnavailable",
        LIMIT,
        &context(&op),
        || async {
            let told = notes(&real, &ns, "ZoneUnavailable", "even");
            told.into_iter().find(|n| n.contains(LOST))
        },
    )
    .await;
    let even = active_per_zone(&real, "even");
    assert_eq!(
        even,
        spread(&[("az-1", 1), ("az-3", 1)]),
        "Even moves nothing"
    );
    let pinned = vms.get(&pinned_name).await.expect("the pinned replica");
    let kept = pinned.spec.availability_zone.as_deref();
    assert_eq!(kept, Some(LOST), "the replica with a volume stays in az-2");
    assert!(
        servers(&real, "pinned").len() <= 3,
        "no second replica made for the pinned one"
    );

    // The zone returns: Balanced moves back surge first, the pool never below 6.
    floor.reset();
    drop(down);
    let t = Instant::now();
    until_spread(
        &real,
        &op,
        "spread",
        &[("az-1", 2), ("az-2", 2), ("az-3", 2)],
    )
    .await;
    let back = t.elapsed().as_secs_f64();
    assert!(
        floor.fewest() >= 6,
        "the pool held {} members",
        floor.fewest()
    );
    eprintln!(
        "REAL az-2 back: 2/2/2 again in {back:.1} s, one surge at a time, the pool never below {}",
        floor.fewest()
    );
    assert!(!notes(&real, &ns, "Rebalanced", "spread").is_empty());
    until_spread(&real, &op, "even", &[("az-1", 1), ("az-2", 1), ("az-3", 1)]).await;
    until_spread(
        &real,
        &op,
        "pinned",
        &[("az-1", 1), ("az-2", 1), ("az-3", 1)],
    )
    .await;
    until(
        "the pinned replica has its volume again",
        LIMIT,
        &context(&op),
        || async {
            let vm = vms.get(&pinned_name).await.ok()?;
            let s = vm.status?;
            (is_true(&s.conditions, READY) && s.volumes_attached.as_deref() == Some("1/1"))
                .then_some(())
        },
    )
    .await;
    drop(floor);

    for (kind, name) in [
        ("loadbalancer", "front"),
        ("virtualmachinegroup", "spread"),
        ("virtualmachinegroup", "even"),
        ("virtualmachinegroup", "pinned"),
    ] {
        real.kubectl(&[
            "-n",
            &ns.name,
            "delete",
            kind,
            name,
            "--wait=true",
            "--timeout=240s",
        ]);
    }
    nothing_left(&real, &baseline);
    eprintln!(
        "REAL zones stage in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
