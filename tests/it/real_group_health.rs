//! A group of 4 that keeps itself healthy on the real systems (Nova 34, Octavia 19),
//! driven with `kubectl` and broken with the `openstack` CLI and Octavia's database: a
//! server stopped with `openstack server stop` is started again; two pool members
//! Octavia reports `ERROR` (set in its database: the harness runs no health manager)
//! are more than `maxUnhealthy` and none is replaced, the group says why; with one left
//! `ERROR` that replica is replaced after `unhealthyAfter`, at its index;
//! `runStrategy: Halted` stops every server and empties the pool, `Always` brings the
//! same servers back; a template naming a flavor that does not exist stops at its
//! progress deadline with the old servers serving, and reverting it leaves them
//! untouched; `partition: 3` updates only index 3. The group is named in a DNSZone
//! (`healthy`, and `healthy-<n>` per replica): the replaced replica's address leaves
//! `healthy`, as the real BIND answers it, before its VirtualMachine goes, and the
//! new one is answered once it serves. Run by `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{
    LoadBalancer, VirtualMachine, VirtualMachineGroup, VirtualMachineGroupStatus,
};

use support::real::{
    Namespace, Operator, Real, context, nothing_left, octavia_sql, project_inventory, until,
};

const LIMIT: Duration = Duration::from_secs(240);
const CONFIG: &str = "resyncPeriod: 10s\n";
const GROUP: &str = "healthy";

/// The group, named `healthy` in the namespace's zone (`ZONE`, replaced by `apply`).
fn group(extra: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: {GROUP}}}\nspec:\n  replicas: 4\n  haPolicy: soft\n  template: {{image: cirros, flavor: m1.tiny}}\n  progressDeadlineSeconds: 15\n  autoHealing: {{unhealthyAfter: 10s, maxUnhealthy: 1}}\n  dns: [{{zone: ZONE, name: {GROUP}, ttl: 30, perReplica: true}}]\n{extra}"
    )
}

/// The namespace's DNS zone.
fn zone(ns: &Namespace) -> String {
    format!("{}.test.", ns.name)
}

/// One port without a health monitor: Octavia reports its members NO_MONITOR, until
/// a test says otherwise in its database.
const LB: &str = "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {name: front}\nspec:\n  region: tokyo1\n  zone: dev\n  vipType: private\n  serviceType: generic\n  ports:\n  - port: 80\n    protocol: tcp\n    realServers: {protocol: tcp, port: 80, virtualMachineGroupRef: healthy}\n";

fn apply(real: &Real, ns: &Namespace, manifest: &str) {
    let manifest = manifest.replace("zone: ZONE", &format!("zone: {}", zone(ns)));
    real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifest));
}

/// The group's servers in Nova: name → (ID, status).
fn servers(real: &Real) -> BTreeMap<String, (String, String)> {
    let listed = real.openstack(
        "osh-demo",
        &["server", "list", "--name", &format!("^{GROUP}-")],
    );
    listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let field = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
            (field("Name"), (field("ID"), field("Status")))
        })
        .collect()
}

/// Octavia's members of the LoadBalancer's pool: name → (ID, operating status).
fn members(real: &Real, pool: &str) -> BTreeMap<String, (String, String)> {
    let listed = real.openstack("osh-demo", &["loadbalancer", "member", "list", pool]);
    listed
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            let field = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            (field("name"), (field("id"), field("operating_status")))
        })
        .collect()
}

/// What a health manager would write: the member's operating status, in Octavia's
/// database.
fn set_member_status(member: &str, status: &str) {
    let sql = format!("UPDATE member SET operating_status='{status}' WHERE id='{member}'");
    octavia_sql(&sql);
}

async fn status_where<T>(
    groups: &Api<VirtualMachineGroup>,
    op: &Operator,
    what: &str,
    check: impl Fn(&VirtualMachineGroupStatus) -> Option<T>,
) -> T {
    until(what, LIMIT, &context(op), || async {
        let g = groups.get(GROUP).await.ok()?;
        let s = g.status?;
        (s.observed_generation == g.metadata.generation).then_some(())?;
        check(&s)
    })
    .await
}

const REPLICAS: usize = 4;

fn ready(s: &VirtualMachineGroupStatus) -> Option<()> {
    (is_true(&s.conditions, READY) && s.available_replicas == REPLICAS as i32).then_some(())
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn a_group_keeps_itself_healthy_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-health");
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let operator = real.operator("group-health", &[], Some(CONFIG));
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let started = Instant::now();

    apply(&real, &ns, &crate::real_dns::dns_zone(&zone(&ns)));
    apply(&real, &ns, &group(""));
    apply(&real, &ns, LB);
    status_where(&groups, &operator, "the group is Ready", ready).await;
    let pool = until(
        "the pool holds both replicas",
        LIMIT,
        &context(&operator),
        || async {
            let s = lbs.get("front").await.ok()?.status?;
            let port = s.ports.first()?;
            (port.members.len() == REPLICAS && is_true(&s.conditions, READY))
                .then(|| port.pool_id.clone())?
        },
    )
    .await;
    let before = servers(&real);
    eprintln!(
        "group of 4 behind a LoadBalancer Ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // `openstack server stop`: started again (runStrategy Always), the same server.
    let zero = format!("{GROUP}-0");
    let (zero_id, _) = before[&zero].clone();
    real.openstack_do("osh-demo", &["server", "stop", &zero_id]);
    let t = Instant::now();
    until(
        "the stopped server is ACTIVE again",
        LIMIT,
        &context(&operator),
        || async {
            let s = servers(&real);
            let (id, status) = s.get(&zero)?;
            (*id == zero_id && status == "ACTIVE").then_some(())
        },
    )
    .await;
    eprintln!(
        "a stopped server started again in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // Octavia reports the members of replicas 1 and 2 ERROR: more than maxUnhealthy
    // (1), so none is replaced and the group says why.
    let one = format!("{GROUP}-1");
    let two = format!("{GROUP}-2");
    let (one_id, _) = before[&one].clone();
    let (two_id, _) = before[&two].clone();
    let pool_members = members(&real, &pool);
    let (member, _) = pool_members[&one].clone();
    let (second, _) = pool_members[&two].clone();
    set_member_status(&member, "ERROR");
    set_member_status(&second, "ERROR");
    let why = status_where(&groups, &operator, "TooManyUnhealthy", |s| {
        let ready = find_condition(&s.conditions, READY)?;
        (ready.reason == "TooManyUnhealthy").then(|| ready.message.clone())
    })
    .await;
    assert!(why.contains(&one) && why.contains(&two), "{why}");
    tokio::time::sleep(Duration::from_secs(15)).await;
    let held = servers(&real);
    assert_eq!(
        (&held[&one].0, &held[&two].0),
        (&one_id, &two_id),
        "none replaced"
    );

    // Replica 2's member recovers: replica 1 alone is unhealthy and is replaced after
    // unhealthyAfter, at index 1.
    set_member_status(&second, "NO_MONITOR");
    let t = Instant::now();
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let old_ip = vms
        .get(&one)
        .await
        .expect("replica 1")
        .status
        .and_then(|s| s.primary_ip);
    let old_ip = old_ip.expect("replica 1's address");
    let name = format!("{GROUP}.{}", zone(&ns));
    let left = std::cell::Cell::new(false);
    let replaced = until(
        "replica 1 is replaced",
        LIMIT,
        &context(&operator),
        || async {
            let answered = crate::real_dns::dig(&name).unwrap_or_default();
            let vm = vms.get_opt(&one).await.ok()?;
            let status = vm.as_ref().and_then(|vm| vm.status.clone());
            let on_old =
                status.as_ref().and_then(|s| s.server_id.as_deref()) == Some(one_id.as_str());
            let going = vm
                .as_ref()
                .is_none_or(|vm| vm.metadata.deletion_timestamp.is_some())
                || !on_old;
            let new_serving = !on_old
                && status
                    .as_ref()
                    .is_some_and(|s| is_true(&s.conditions, READY));
            assert!(
                !(going && !new_serving && answered.contains(&old_ip)),
                "replica 1 is being replaced while {name} still answers its address: {answered:?}"
            );
            left.set(left.get() || !answered.contains(&old_ip));
            let s = servers(&real);
            let (id, status) = s.get(&one)?;
            (*id != one_id && status == "ACTIVE").then(|| id.clone())
        },
    )
    .await;
    status_where(&groups, &operator, "the group is Ready again", ready).await;
    let now = members(&real, &pool);
    assert_eq!(now.len(), REPLICAS, "{now:?}");
    assert_ne!(now[&one].0, member, "a new member for the new server");
    eprintln!(
        "a replica whose member was ERROR replaced in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut want = Vec::new();
    for i in 0..REPLICAS {
        let vm = vms.get(&format!("{GROUP}-{i}")).await.expect("replica");
        want.push(vm.status.and_then(|s| s.primary_ip).expect("an address"));
    }
    want.sort();
    until(
        "the new replica answered again",
        LIMIT,
        &context(&operator),
        || async {
            let mut answered = crate::real_dns::dig(&name).ok()?;
            answered.sort();
            (answered == want).then_some(())
        },
    )
    .await;
    assert!(
        left.get(),
        "{name} dropped replica 1's address while it was replaced"
    );
    eprintln!(
        "{name} dropped replica 1's address before its VirtualMachine went and answers the new one: {want:?}"
    );
    let zero_id_after = servers(&real)[&zero].0.clone();
    assert_eq!(zero_id_after, zero_id, "the healthy replica is kept");
    assert_eq!(
        servers(&real)[&two].0,
        two_id,
        "the recovered replica is kept"
    );

    // Halted: every server SHUTOFF and out of the pool; Always: the same servers back.
    apply(&real, &ns, &group("  runStrategy: Halted\n"));
    until(
        "every server is SHUTOFF and the pool empty",
        LIMIT,
        &context(&operator),
        || async {
            let s = servers(&real);
            let stopped = s.len() == REPLICAS && s.values().all(|(_, st)| st == "SHUTOFF");
            (stopped && members(&real, &pool).is_empty()).then_some(())
        },
    )
    .await;
    let halted = servers(&real);
    apply(&real, &ns, &group(""));
    until(
        "the servers run and serve again",
        LIMIT,
        &context(&operator),
        || async {
            let s = servers(&real);
            let running = s.values().all(|(_, st)| st == "ACTIVE");
            (running && members(&real, &pool).len() == REPLICAS).then_some(())
        },
    )
    .await;
    let ids = |s: &BTreeMap<String, (String, String)>| -> Vec<String> {
        s.values().map(|(id, _)| id.clone()).collect()
    };
    assert_eq!(
        ids(&servers(&real)),
        ids(&halted),
        "halted and back: the same servers"
    );
    assert!(ids(&halted).contains(&replaced));

    // A template naming no flavor: stalls at the deadline, the old servers serve.
    let serving = servers(&real);
    apply(
        &real,
        &ns,
        &group("").replace("flavor: m1.tiny", "flavor: m1.none"),
    );
    let t = Instant::now();
    let message = status_where(&groups, &operator, "ProgressDeadlineExceeded", |s| {
        let ready = find_condition(&s.conditions, READY)?;
        (ready.reason == "ProgressDeadlineExceeded").then(|| ready.message.clone())
    })
    .await;
    eprintln!(
        "a rollout that cannot progress stalled after {:.1} s: {message}",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(servers(&real), serving, "no old server touched");
    assert_eq!(
        members(&real, &pool).len(),
        REPLICAS,
        "every old one still serves"
    );
    apply(&real, &ns, &group(""));
    status_where(&groups, &operator, "reverted: Ready", ready).await;
    assert_eq!(servers(&real), serving, "reverted: the same servers");

    // partition 3: only index 3 takes the new template.
    apply(
        &real,
        &ns,
        &group("  rollingUpdate: {partition: 3}\n").replace(
            "template: {image: cirros, flavor: m1.tiny}",
            "template: {image: cirros, flavor: m1.tiny, description: v2}",
        ),
    );
    status_where(&groups, &operator, "index 3 updated", |s| {
        (ready(s).is_some() && s.updated_replicas == 1).then_some(())
    })
    .await;
    let after = servers(&real);
    let three = format!("{GROUP}-3");
    for name in [&zero, &one, &two] {
        assert_eq!(after[name], serving[name], "{name} untouched");
    }
    assert_ne!(after[&three].0, serving[&three].0, "index 3 replaced");

    // The zone goes as soon as the group's names are out of it, while its servers go.
    real.kubectl(&["-n", &ns.name, "delete", "dnszone", "zone", "--wait=false"]);
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "loadbalancer",
        "front",
        "--wait=true",
    ]);
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "virtualmachinegroup",
        GROUP,
        "--wait=true",
        "--timeout=240s",
    ]);
    real.kubectl(&[
        "-n",
        &ns.name,
        "delete",
        "dnszone",
        "zone",
        "--ignore-not-found",
        "--wait=true",
        "--timeout=120s",
    ]);
    nothing_left(&real, &baseline);
    let metric = operator
        .metric(
            "verda_group_replacements_total",
            &["reason=\"MemberError\""],
        )
        .await;
    assert_eq!(metric, Some(1.0), "the healing is counted by reason");
    // The cloud's access logs hold this operator's calls under its user agent,
    // `verda-operator/<version> (cluster <kube-system UID>)`, which is how each lane of
    // tests run side by side counts only its own.
    assert!(
        real.operator_requests() > 0,
        "no request in the cloud's access logs carries this operator's user agent"
    );
    eprintln!(
        "group health on the real systems in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
