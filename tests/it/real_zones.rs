//! Groups spread over the real systems' three Nova availability zones (`az-1`..`az-3`,
//! one compute host each), driven with `kubectl` and broken with the `openstack` CLI as
//! an admin would see a data centre go: a group of 6 runs 2 per zone and a scale to 4
//! leaves 2/1/1; with `az-2`'s compute service disabled and its servers ERROR, the
//! `Balanced` group runs 3/0/3 while its LoadBalancer's pool never holds fewer than 4,
//! an `Even` group keeps its two other replicas and reports `ZoneUnavailable`, and a
//! replica with a data volume stays in `az-2`; the zone enabled again, the `Balanced`
//! group moves back to 2/2/2 surge first, its pool never below 6, and the volume's
//! replica serves again with its volume; with `az-3`'s compute service forced down
//! (still listed, NoValidHost), the `Balanced` group's replicas there move to the
//! others. The LoadBalancer is in Octavia's `az-1`. Run by `hack/real-systems.sh`
//! (stage `zones`).

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};

use support::real::{Namespace, Real, context, delete_all, event_notes, project_inventory, until};
use verda_operator::cloud::LoadBalancing;
use verda_operator::cloud::ids::PoolId;

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10s\nerrorReplaceDelay: 5s\n";
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

/// `zone`'s compute service as an admin set it (`--disable`: Nova lists the zone as not
/// available and refuses creates there; `--down`: still listed, but NoValidHost), set
/// back when dropped (also when the test fails: the zone serves the stages after this).
struct ZoneDown<'a> {
    real: &'a Real,
    host: String,
    undo: &'static str,
}

impl<'a> ZoneDown<'a> {
    fn new(real: &'a Real, zone: &str, how: &[&str], undo: &'static str) -> Self {
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
        let set = [
            &["compute", "service", "set"],
            how,
            &[&host, "nova-compute"],
        ]
        .concat();
        real.openstack_do("osh-admin", &set);
        ZoneDown { real, host, undo }
    }

    /// The zone's compute service disabled, as a lost data centre's.
    fn disabled(real: &'a Real, zone: &str) -> Self {
        let how = ["--disable", "--disable-reason", "data centre lost (test)"];
        Self::new(real, zone, &how, "--enable")
    }

    /// The zone's compute service forced down while enabled.
    fn forced_down(real: &'a Real, zone: &str) -> Self {
        Self::new(real, zone, &["--down"], "--up")
    }
}

impl Drop for ZoneDown<'_> {
    fn drop(&mut self) {
        let undo = [
            "compute",
            "service",
            "set",
            self.undo,
            &self.host,
            "nova-compute",
        ];
        let _ = self.real.openstack_try("osh-admin", &undo);
    }
}

/// Sets the servers of `group` in `zone` ERROR, as an admin does.
fn fail_servers(real: &Real, group: &str, zone: &str) {
    for (_, (id, _, at)) in servers(real, group) {
        if at == zone {
            real.openstack_do(
                "osh-admin",
                &["server", "set", "--auto-approve", "--state", "error", &id],
            );
        }
    }
}

/// Samples the LoadBalancer's pool in Octavia every 500 ms (with the operator's own
/// client: the CLI is too slow for it): each change of its members since the last
/// `reset`, with when it was seen (for the message of a failed check).
/// The pool's member names, each time they changed.
type Samples = Arc<Mutex<Vec<(Instant, Vec<String>)>>>;

struct PoolFloor {
    seen: Samples,
    task: tokio::task::JoinHandle<()>,
}

impl PoolFloor {
    fn start(real: &Real, pool: PoolId) -> Self {
        let seen: Samples = Arc::default();
        let record = seen.clone();
        let octavia = real.cloud();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(members) = octavia.list_members(&pool).await {
                    let mut names: Vec<String> = members.into_iter().map(|m| m.name).collect();
                    names.sort();
                    let mut seen = record.lock().expect("the samples");
                    if seen.last().is_none_or(|(_, last)| *last != names) {
                        seen.push((Instant::now(), names));
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        PoolFloor { seen, task }
    }

    fn reset(&self) {
        self.seen.lock().expect("the samples").clear();
    }

    fn fewest(&self) -> usize {
        let seen = self.seen.lock().expect("the samples");
        seen.iter()
            .map(|(_, names)| names.len())
            .min()
            .unwrap_or(usize::MAX)
    }

    /// The pool's changes since the reset, one line each.
    fn timeline(&self) -> String {
        let seen = self.seen.lock().expect("the samples");
        let Some((first, _)) = seen.first() else {
            return "no sample".to_owned();
        };
        let lines: Vec<String> = seen
            .iter()
            .map(|(at, names)| {
                format!(
                    "+{:.1} s: {}",
                    at.duration_since(*first).as_secs_f64(),
                    names.join(" ")
                )
            })
            .collect();
        lines.join("\n")
    }
}

impl Drop for PoolFloor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// az-3's compute service forced down while enabled: Nova still lists the zone, and
/// the `Balanced` group's replicas set ERROR there are replaced there (by their
/// VirtualMachines, after `errorReplaceDelay`: 5 s here), fail with NoValidHost, and are moved to
/// az-1 and az-2, the zone recorded as refusing.
async fn nova_finds_no_valid_host(
    real: &Real,
    op: &support::real::Operator,
    ns: &Namespace,
    groups: &Api<VirtualMachineGroup>,
) {
    let full = "az-3";
    let down = ZoneDown::forced_down(real, full);
    fail_servers(real, "spread", full);
    let t = Instant::now();
    until_spread(real, op, "spread", &[("az-1", 3), ("az-2", 3)]).await;
    let moved = t.elapsed().as_secs_f64();
    let zones = groups
        .get("spread")
        .await
        .expect("group")
        .status
        .expect("status")
        .zones;
    let az3 = zones
        .iter()
        .find(|z| z.name == full)
        .expect("az-3 in status");
    assert!(
        az3.no_valid_host_at.is_some() && az3.zone_available,
        "{zones:?}"
    );
    let told = event_notes(real, ns, "ZoneUnavailable", Some("spread"));
    assert!(told.iter().any(|n| n.contains("NoValidHost")), "{told:?}");
    drop(down);
    eprintln!("REAL az-3 forced down: NoValidHost there, the group at 3/3/0 in {moved:.1} s");
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
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
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
    let pool = lbs.get("front").await.ok().and_then(|lb| lb.status);
    let pool = pool.and_then(|s| s.ports.first().and_then(|p| p.pool_id.clone()));
    let floor = PoolFloor::start(&real, PoolId::new(pool.expect("the pool's ID")));
    let down = ZoneDown::disabled(&real, LOST);
    for group in ["spread", "even", "pinned"] {
        fail_servers(&real, group, LOST);
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
        "the pool held {} members:\n{}",
        floor.fewest(),
        floor.timeline()
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
            let told = event_notes(&real, &ns, "ZoneUnavailable", Some("even"));
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

    // The zone returns: Balanced moves back surge first, and with maxUnavailable 0 (the
    // default) the pool never holds fewer than 6.
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
        "the pool held {} members:\n{}\n{}",
        floor.fewest(),
        floor.timeline(),
        context(&op)()
    );
    eprintln!("the pool while az-2 came back:\n{}", floor.timeline());
    eprintln!(
        "REAL az-2 back: 2/2/2 again in {back:.1} s, one surge at a time, the pool never below {}",
        floor.fewest()
    );
    assert!(!event_notes(&real, &ns, "Rebalanced", Some("spread")).is_empty());
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
    nova_finds_no_valid_host(&real, &op, &ns, &groups).await;

    let objects = [
        ("loadbalancer", "front"),
        ("virtualmachinegroup", "spread"),
        ("virtualmachinegroup", "even"),
        ("virtualmachinegroup", "pinned"),
    ];
    delete_all(&real, &ns, &objects, &baseline);
    eprintln!(
        "REAL zones stage in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
