//! A LoadBalancer's `spec.dns` on the real Designate 23, resolved with `dig` from the
//! real BIND 9 behind it: the name answers the VIP soon after the LoadBalancer is
//! Ready; a record set deleted with the CLI is put back within a resync; a name made
//! by hand is reported `RecordOwnedByAnother` and left as it was; an entry removed from
//! the spec is deleted; deleting the LoadBalancer makes its name NXDOMAIN and leaves
//! what it did not make. A VirtualMachine's name resolves to its server's address and
//! goes with it. A group of 3 resolves `db` to its three replicas and `db-0..2` to one
//! each; scaled to 2, the leaving replica's address is gone from `db` (as BIND answers)
//! before its VirtualMachine is deleted. Run by `hack/real-systems.sh` (stage `health`).

use crate::support;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use serde_json::Value;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{DnsRecordStatus, LoadBalancer, VirtualMachine, VirtualMachineGroup};

use support::real::{Namespace, Operator, Real, context, delete_all, project_inventory, until};

const LIMIT: Duration = Duration::from_secs(240);
/// The bound: resolvable within a minute of Ready.
const RESOLVED_WITHIN: Duration = Duration::from_secs(60);
const CONFIG: &str = "resyncPeriod: 10s\n";

fn load_balancer(zone: &str, names: &[&str]) -> String {
    let dns: Vec<String> = names
        .iter()
        .map(|n| format!("{{zone: {zone}, name: {n}, ttl: 60}}"))
        .collect();
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: LoadBalancer\nmetadata: {{name: front}}\nspec:\n  region: tokyo1\n  zone: dev\n  vipType: private\n  serviceType: generic\n  dns: [{}]\n  ports:\n  - port: 80\n    protocol: tcp\n    realServers: {{protocol: tcp, port: 80, addresses: [10.0.0.5]}}\n",
        dns.join(", ")
    )
}

fn virtual_machine(zone: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: db}}\nspec:\n  image: cirros\n  flavor: m1.tiny\n  dns: [{{zone: {zone}, name: db-admin, ttl: 60}}]\n"
    )
}

fn group(zone: &str, replicas: u32) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: db}}\nspec:\n  replicas: {replicas}\n  haPolicy: soft\n  template: {{image: cirros, flavor: m1.tiny}}\n  dns: [{{zone: {zone}, name: db, ttl: 30, perReplica: true}}]\n"
    )
}

/// What BIND answers for `name` (type A): the addresses, or the status word
/// (`NXDOMAIN`, `REFUSED`) when it answers none.
fn dig(name: &str) -> Result<Vec<String>, String> {
    let out = Command::new("dig")
        .args(["@127.0.0.1", "-p", "1053", name, "A", "+time=2", "+tries=1"])
        .output()
        .map_err(|e| format!("dig: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let status = text
        .split("status: ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or("no answer")
        .to_owned();
    let answers: Vec<String> = text
        .split(";; ANSWER SECTION:")
        .nth(1)
        .map(|section| {
            section
                .lines()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .filter_map(|l| l.split_whitespace().nth(4).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if answers.is_empty() {
        Err(status)
    } else {
        Ok(answers)
    }
}

async fn dns_rows(
    lbs: &Api<LoadBalancer>,
    op: &Operator,
    what: &str,
    check: impl Fn(&[DnsRecordStatus]) -> bool,
) -> Vec<DnsRecordStatus> {
    until(what, LIMIT, &context(op), || async {
        let rows = lbs.get("front").await.ok()?.status?.dns;
        check(&rows).then_some(rows)
    })
    .await
}

async fn resolves(op: &Operator, name: &str, want: Result<Vec<String>, String>) -> Duration {
    let started = Instant::now();
    until(
        &format!("{name} resolves to {want:?}"),
        LIMIT,
        &context(op),
        || async { (dig(name) == want).then_some(()) },
    )
    .await;
    started.elapsed()
}

fn recordsets(real: &Real, zone: &str) -> Vec<Value> {
    let listed = real.openstack("osh-demo", &["recordset", "list", zone]);
    listed.as_array().cloned().unwrap_or_default()
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn load_balancer_names_on_the_real_designate() {
    let real = Arc::new(Real::from_env());
    let ns = Namespace::create(real.clone(), "real-dns");
    let zone = format!("{}.test.", ns.name);
    real.openstack_do(
        "osh-demo",
        &[
            "zone",
            "create",
            "--email",
            &format!("hostmaster@{}", ns.name),
            &zone,
        ],
    );
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let operator = real.operator("dns", &[], Some(CONFIG));
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let www = format!("www.{zone}");
    let apply = |manifest: String| {
        real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifest));
    };

    apply(load_balancer(&zone, &["www"]));
    apply(virtual_machine(&zone));
    let vip = until(
        "the LoadBalancer is Ready",
        LIMIT,
        &context(&operator),
        || async {
            let s = lbs.get("front").await.ok()?.status?;
            is_true(&s.conditions, READY).then_some(s.vip?)
        },
    )
    .await;
    let took = resolves(&operator, &www, Ok(vec![vip.clone()])).await;
    eprintln!(
        "{www} resolved to the VIP {vip} {:.1} s after Ready",
        took.as_secs_f64()
    );
    assert!(took <= RESOLVED_WITHIN, "{www} took {took:?} to resolve");
    dns_rows(&lbs, &operator, "www reported ACTIVE", |rows| {
        rows.len() == 1 && rows[0].status == "ACTIVE" && rows[0].records == [vip.clone()]
    })
    .await;
    let table = real.kubectl(&["-n", &ns.name, "get", "lb", "front", "-o", "wide"]);
    assert!(table.contains(&www), "{table}");

    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let ip = until(
        "the VirtualMachine is Ready",
        LIMIT,
        &context(&operator),
        || async {
            let s = vms.get("db").await.ok()?.status?;
            is_true(&s.conditions, READY).then_some(s.primary_ip?)
        },
    )
    .await;
    let admin = format!("db-admin.{zone}");
    let took = resolves(&operator, &admin, Ok(vec![ip.clone()])).await;
    eprintln!(
        "{admin} resolved to the server's address {ip} {:.1} s after Ready",
        took.as_secs_f64()
    );

    // Deleted with the CLI: a new record set within a resync (10 s), served again.
    let id_of = |name: &str| -> Option<String> {
        let set = real.openstack_try(
            "osh-demo",
            &["recordset", "show", &zone, name, "-f", "json"],
        );
        let set: Value = serde_json::from_str(&set.ok()?).ok()?;
        (set["status"] == "ACTIVE").then(|| set["id"].as_str().map(str::to_owned))?
    };
    let old = id_of(&www).expect("www's record set");
    real.openstack_do("osh-demo", &["recordset", "delete", &zone, &www]);
    let deleted = Instant::now();
    until("www made again", LIMIT, &context(&operator), || async {
        id_of(&www).filter(|id| *id != old)
    })
    .await;
    resolves(&operator, &www, Ok(vec![vip.clone()])).await;
    eprintln!(
        "{www} deleted with the CLI was made again and served {:.1} s later",
        deleted.elapsed().as_secs_f64()
    );
    assert!(deleted.elapsed() < LIMIT);

    // A name made by hand is reported and left as it was.
    let taken = format!("taken.{zone}");
    real.openstack_do(
        "osh-demo",
        &[
            "recordset",
            "create",
            "--type",
            "A",
            "--record",
            "192.0.2.99",
            &zone,
            &taken,
        ],
    );
    apply(load_balancer(&zone, &["www", "taken"]));
    let rows = dns_rows(
        &lbs,
        &operator,
        "taken reported RecordOwnedByAnother",
        |rows| {
            rows.iter()
                .any(|r| r.name == taken && r.status == "RecordOwnedByAnother")
        },
    )
    .await;
    eprintln!(
        "{taken}: {:?}",
        rows.iter()
            .find(|r| r.name == taken)
            .and_then(|r| r.message.clone())
    );
    resolves(&operator, &taken, Ok(vec!["192.0.2.99".to_owned()])).await;

    // The entry removed from the spec: nothing of ours to delete under it, and it is
    // reported no more; the hand-made record set stays.
    apply(load_balancer(&zone, &["www"]));
    dns_rows(&lbs, &operator, "only www reported", |rows| rows.len() == 1).await;

    group_names(&real, &ns, &client, &operator, &zone).await;

    // Deleted: every name of ours is NXDOMAIN, the hand-made name still answers.
    let objects = [
        ("loadbalancer", "front"),
        ("virtualmachine", "db"),
        ("virtualmachinegroup", "db"),
    ];
    delete_all(&real, &ns, &objects, &baseline);
    resolves(&operator, &format!("db.{zone}"), Err("NXDOMAIN".to_owned())).await;
    resolves(&operator, &admin, Err("NXDOMAIN".to_owned())).await;
    let gone = resolves(&operator, &www, Err("NXDOMAIN".to_owned())).await;
    eprintln!(
        "{www} NXDOMAIN {:.1} s after the LoadBalancer was gone",
        gone.as_secs_f64()
    );
    assert_eq!(dig(&taken), Ok(vec!["192.0.2.99".to_owned()]));
    let left: Vec<String> = recordsets(&real, &zone)
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .filter(|n| n != &zone)
        .collect();
    assert_eq!(
        left,
        std::slice::from_ref(&taken),
        "only the hand-made record set is left"
    );
    real.openstack_do("osh-demo", &["zone", "delete", &zone]);
}

/// A group of 3 named `db` (and `db-<n>`), scaled to 2: the leaving replica's address
/// is gone from `db` as BIND answers it before its VirtualMachine is deleted.
async fn group_names(
    real: &Real,
    ns: &Namespace,
    client: &kube::Client,
    op: &Operator,
    zone: &str,
) {
    let apply = |manifest: String| {
        real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifest));
    };
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    apply(group(zone, 3));
    let started = Instant::now();
    let ips = until(
        "the group's three replicas are Ready",
        LIMIT,
        &context(op),
        || async {
            (groups.get("db").await.ok()?.status?.ready_replicas == 3).then_some(())?;
            let mut ips = Vec::new();
            for i in 0..3 {
                ips.push(vms.get(&format!("db-{i}")).await.ok()?.status?.primary_ip?);
            }
            Some(ips)
        },
    )
    .await;
    let mut all = ips.clone();
    all.sort();
    let name = format!("db.{zone}");
    resolves(op, &name, Ok(all)).await;
    for (i, ip) in ips.iter().enumerate() {
        resolves(op, &format!("db-{i}.{zone}"), Ok(vec![ip.clone()])).await;
    }
    eprintln!(
        "{name} resolved to the 3 replicas, db-0..2 to one each, {:.1} s after apply",
        started.elapsed().as_secs_f64()
    );

    apply(group(zone, 2));
    let leaving = ips[2].clone();
    let samples = std::cell::Cell::new(0);
    until(
        "replica 2 is gone and db holds the other two",
        LIMIT,
        &context(op),
        || async {
            let answered = dig(&name).unwrap_or_default();
            let vm = vms.get_opt("db-2").await.ok()?;
            let going = vm
                .as_ref()
                .is_none_or(|vm| vm.metadata.deletion_timestamp.is_some());
            assert!(
                !(going && answered.contains(&leaving)),
                "db-2 is being deleted while {name} still answers its address: {answered:?}"
            );
            samples.set(samples.get() + 1);
            (vm.is_none() && answered.len() == 2).then_some(())
        },
    )
    .await;
    resolves(op, &format!("db-2.{zone}"), Err("NXDOMAIN".to_owned())).await;
    eprintln!(
        "scaled to 2: {name} dropped db-2's address before db-2 was deleted ({} samples)",
        samples.get()
    );
}
