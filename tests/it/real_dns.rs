//! DNS on the real Designate 23, resolved with `dig` from the real BIND 9 behind it: a
//! DNSZone becomes ACTIVE and BIND answers its SOA. A LoadBalancer's name answers the
//! VIP soon after the LoadBalancer is Ready; a record set deleted with the CLI is put
//! back within a resync; a name made by hand is reported `RecordOwnedByAnother` and
//! left as it was; an entry removed from the spec is deleted; deleting the LoadBalancer
//! makes its name NXDOMAIN and leaves what it did not make. A group of 3 resolves `db`
//! to its three replicas and `db-0..2` to one each; scaled to 2, the leaving replica's
//! address is gone from `db` (as BIND answers) before its VirtualMachine is deleted.
//! Deleting the DNSZone waits while the hand-made name is in it, then deletes the zone
//! and BIND stops serving it. (A VirtualMachine's own name is proven on the simulator:
//! `e2e_dns`.) Run by `hack/real-systems.sh` (stage `health`).

use crate::support;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use serde_json::Value;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{
    DNSZone, DnsRecordStatus, LoadBalancer, VirtualMachine, VirtualMachineGroup,
};

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

pub(crate) fn dns_zone(zone: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: DNSZone\nmetadata: {{name: zone}}\nspec:\n  name: {zone}\n  email: hostmaster@{}\n  ttl: 600\n",
        zone.trim_end_matches('.')
    )
}

fn group(zone: &str, replicas: u32) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: db}}\nspec:\n  replicas: {replicas}\n  haPolicy: soft\n  template: {{image: cirros, flavor: m1.tiny}}\n  dns: [{{zone: {zone}, name: db, ttl: 30, perReplica: true}}]\n"
    )
}

/// What BIND answers for `name` (type A): the addresses, or the status word
/// (`NXDOMAIN`, `REFUSED`) when it answers none.
pub(crate) fn dig(name: &str) -> Result<Vec<String>, String> {
    dig_as(name, "A")
}

/// The same for records of `type_` (of an SOA, its primary name server).
fn dig_as(name: &str, type_: &str) -> Result<Vec<String>, String> {
    let out = Command::new("dig")
        .args([
            "@127.0.0.1",
            "-p",
            "1053",
            name,
            type_,
            "+time=2",
            "+tries=1",
        ])
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
    let client = real.kube().await;
    let baseline = project_inventory(&real);
    let operator = real.operator("dns", &[], Some(CONFIG));
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let www = format!("www.{zone}");
    let apply = |manifest: String| {
        real.kubectl_with_input(&["-n", &ns.name, "apply", "-f", "-"], Some(&manifest));
    };

    let started = Instant::now();
    apply(dns_zone(&zone));
    apply(load_balancer(&zone, &["www"]));
    let zones: Api<DNSZone> = ns.api(client.clone());
    let made = until(
        "the DNSZone is Ready",
        LIMIT,
        &context(&operator),
        || async {
            let s = zones.get("zone").await.ok()?.status?;
            (is_true(&s.conditions, READY) && !s.nameservers.is_empty()).then_some(s)
        },
    )
    .await;
    assert_eq!(made.status.as_deref(), Some("ACTIVE"));
    let ready = started.elapsed().as_secs_f64();
    let soa = dig_as(&zone, "SOA").expect("BIND answers the zone's SOA");
    let shown = real.openstack("osh-demo", &["zone", "show", &zone]);
    assert_eq!(shown["ttl"], 600, "{shown}");
    assert!(
        shown["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("verda-uid-")),
        "{shown}"
    );
    eprintln!(
        "DNSZone {zone} Ready {ready:.1} s after apply (serial {:?}, name servers {:?}); BIND answers its SOA: {soa:?}",
        made.serial, made.nameservers
    );
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
    let objects = [("loadbalancer", "front"), ("virtualmachinegroup", "db")];
    delete_all(&real, &ns, &objects, &baseline);
    resolves(&operator, &format!("db.{zone}"), Err("NXDOMAIN".to_owned())).await;
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
    zone_deleted(&real, &ns, &operator, &zone, &taken).await;
}

/// Deleting the DNSZone waits while `taken` (made by hand) is in the zone; once it is
/// deleted with the CLI, the zone goes and BIND serves it no more.
async fn zone_deleted(real: &Real, ns: &Namespace, op: &Operator, zone: &str, taken: &str) {
    real.kubectl(&["-n", &ns.name, "delete", "dnszone", "zone", "--wait=false"]);
    let reasons = || {
        real.kubectl(&[
            "-n",
            &ns.name,
            "get",
            "events",
            "--field-selector",
            "reason=ZoneNotEmpty",
            "-o",
            "jsonpath={.items[*].note}{.items[*].message}",
        ])
    };
    let held = until(
        "the deletion waits: ZoneNotEmpty",
        LIMIT,
        &context(op),
        || async {
            let told = reasons();
            told.contains(taken).then_some(told)
        },
    )
    .await;
    assert!(dig_as(zone, "SOA").is_ok(), "served while {taken} is in it");
    eprintln!("DNSZone deletion held: {held}");
    real.openstack_do("osh-demo", &["recordset", "delete", zone, taken]);
    let started = Instant::now();
    until("the DNSZone is gone", LIMIT, &context(op), || async {
        let left = real.kubectl(&["-n", &ns.name, "get", "dnszone", "-o", "name"]);
        left.trim().is_empty().then_some(())
    })
    .await;
    let answer = until(
        "BIND serves the zone no more",
        LIMIT,
        &context(op),
        || async { dig_as(zone, "SOA").err() },
    )
    .await;
    let listed = real.openstack("osh-demo", &["zone", "list"]);
    let names: Vec<&str> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|z| z["name"].as_str())
        .collect();
    assert!(!names.contains(&zone), "{listed}");
    eprintln!(
        "{taken} deleted by hand: the DNSZone and its zone gone {:.1} s later, BIND answers {answer}",
        started.elapsed().as_secs_f64()
    );
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
