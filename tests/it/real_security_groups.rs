//! SecurityGroups on the real Neutron 29 and Nova 34, driven with `kubectl` and looked at
//! (and broken) with the `openstack` CLI, in project `team-b` (so that it can run beside
//! the other real tests of the demo project): SecurityGroup `db` with the rules
//! (a group's replicas, a CIDR, another SecurityGroup, a LoadBalancer's VIP subnet,
//! ICMP) and a group `web` of 3: Neutron has the rules and an address group with web's
//! 3 addresses; a VirtualMachine naming `db` has it on its port. Scaled to 5 and one
//! server deleted with the CLI, the address group follows (the replacement included)
//! with no rule created or deleted. A rule deleted with the CLI is back within a resync;
//! an edited port range is one rule created and one deleted. Deleting `db` while the
//! VirtualMachine uses it is `InUse`; once the VirtualMachine is gone, nothing of `db`
//! is left. Run by `hack/real-systems.sh` (stage `e2e`, beside the suite).

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{SecurityGroup, VirtualMachine};
use verda_operator::cloud::Firewalls;
use verda_operator::cloud::model::firewall::Firewall;

use support::real::{
    Namespace, Operator, Real, context, event_notes, put_secret, single_cloud, tenant_clouds, until,
};

const LIMIT: Duration = Duration::from_secs(240);
const RESYNC: Duration = Duration::from_secs(10);

const ADMIN: &str = "apiVersion: verda.linecorp.com/v1alpha1
kind: SecurityGroup
metadata: {name: admin}
spec:
  description: bastions
";

fn db(range: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1
kind: SecurityGroup
metadata: {{name: db}}
spec:
  description: database tier
  stateful: true
  rules:
    - {{direction: ingress, protocol: tcp, ports: \"5432\", from: {{virtualMachineGroup: web}}}}
    - {{direction: ingress, protocol: tcp, ports: \"{range}\", from: {{cidr: 10.0.0.0/8}}}}
    - {{direction: ingress, protocol: tcp, ports: \"5432\", from: {{securityGroup: admin}}}}
    - {{direction: ingress, protocol: tcp, ports: \"80\", from: {{loadBalancer: web}}}}
    - {{direction: ingress, protocol: icmp}}
"
    )
}

fn web(replicas: u32) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachineGroup
metadata: {{name: web}}
spec:
  replicas: {replicas}
  haPolicy: soft
  template: {{image: cirros, flavor: m1.tiny}}
"
    )
}

const FRONT: &str = "apiVersion: verda.linecorp.com/v1alpha1
kind: LoadBalancer
metadata: {name: web}
spec:
  zone: dev
  vipType: private
  serviceType: generic
  ports:
  - port: 80
    protocol: tcp
    realServers: {protocol: tcp, port: 80, virtualMachineGroupRef: web}
";

const DB_VM: &str = "apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachine
metadata: {name: db-0}
spec:
  image: cirros
  flavor: m1.tiny
  securityGroups: [db]
";

struct Sg<'a> {
    real: &'a Real,
    ns: &'a Namespace,
    api: Api<SecurityGroup>,
    neutron: Arc<dyn Firewalls>,
    operator: &'a Operator,
}

impl Sg<'_> {
    fn apply(&self, manifest: &str) {
        let args = ["-n", self.ns.name.as_str(), "apply", "-f", "-"];
        self.real.kubectl_with_input(&args, Some(manifest));
    }

    async fn ready(&self, name: &str) -> String {
        let what = format!("SecurityGroup {name} is Ready");
        until(&what, LIMIT, &context(self.operator), || async {
            let status = self.api.get(name).await.ok()?.status?;
            is_true(&status.conditions, READY).then_some(())?;
            status.id
        })
        .await
    }

    async fn firewall(&self, id: &str) -> Option<Firewall> {
        self.neutron.get_security_group(id).await.ok()
    }

    async fn address_group(&self) -> Option<BTreeSet<String>> {
        let listed = self
            .neutron
            .address_groups_named("db-from-web")
            .await
            .ok()?;
        let found = listed.into_iter().next()?;
        Some(found.addresses.into_iter().collect())
    }

    /// The address group once it holds exactly the `n` replicas' addresses.
    async fn follows(&self, vms: &Api<VirtualMachine>, n: usize) -> BTreeSet<String> {
        let what = format!("the address group holds web's {n} replicas");
        until(&what, LIMIT, &context(self.operator), || async {
            let listed = vms.list(&Default::default()).await.ok()?;
            let replicas: BTreeSet<String> = listed
                .items
                .iter()
                .filter(|vm| {
                    vm.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("web-"))
                })
                .filter_map(|vm| vm.status.as_ref()?.primary_ip.clone())
                .map(|ip| format!("{ip}/32"))
                .collect();
            let held = self.address_group().await?;
            (replicas.len() == n && held == replicas).then_some(held)
        })
        .await
    }
}

/// What an interrupted earlier run left in team-b (the stage purges only the demo
/// project): its groups, then its address groups (free once the groups are gone).
async fn leftovers_gone(sg: &Sg<'_>) {
    for name in ["db", "admin"] {
        for left in sg
            .neutron
            .security_groups_named(name)
            .await
            .unwrap_or_default()
        {
            let _ = sg.neutron.delete_security_group(&left.id).await;
        }
    }
    let named = sg.neutron.address_groups_named("db-from-web").await;
    for left in named.unwrap_or_default() {
        let _ = sg.neutron.delete_address_group(&left.id).await;
    }
}

fn rule_ids(f: &Firewall) -> BTreeSet<String> {
    f.security_group_rules
        .iter()
        .map(|r| r.id.clone())
        .collect()
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn firewalls_follow_groups_on_the_real_cloud() {
    let real = Arc::new(Real::from_env());
    let tenant = tenant_clouds();
    let ns = Namespace::create(real.clone(), "real-sg");
    put_secret(&real, &ns.name, &single_cloud(&tenant, "team-b"));
    let client = real.kube().await;
    let operator = real.operator(
        "security-groups",
        &["--namespace", &ns.name],
        Some("resyncPeriod: 10s\n"),
    );
    let neutron =
        verda_operator::cloud::CloudServices::firewalls(&real.cloud_in(&tenant, "team-b"), None);
    let sg = Sg {
        real: &real,
        ns: &ns,
        api: ns.api(client.clone()),
        neutron,
        operator: &operator,
    };
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    leftovers_gone(&sg).await;
    let started = Instant::now();
    sg.apply(ADMIN);
    sg.apply(&db("9100-9110"));
    sg.apply(&web(3));
    sg.apply(FRONT);
    sg.apply(DB_VM);

    // The rules and web's three addresses, as Neutron shows them.
    let id = sg.ready("db").await;
    let held = sg.follows(&vms, 3).await;
    println!(
        "REAL security group db Ready with web's 3 addresses in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let shown = real.openstack_in(
        &tenant,
        "team-b",
        &["security", "group", "rule", "list", &id],
    );
    let rows = shown.as_array().cloned().unwrap_or_default();
    // Five declared and Neutron's two default egress rules.
    assert_eq!(rows.len(), 7, "{shown}");
    let made = sg.firewall(&id).await.expect("db in Neutron");
    assert!(
        made.security_group_rules
            .iter()
            .any(|r| r.remote_address_group_id.is_some())
    );
    assert!(
        made.security_group_rules
            .iter()
            .any(|r| r.remote_group_id.is_some())
    );
    assert_eq!(held.len(), 3);

    // db-0 boots in it: its port carries the group.
    let server = until("db-0 has a server", LIMIT, &context(&operator), || async {
        let status = vms.get("db-0").await.ok()?.status?;
        status.primary_ip.as_ref()?;
        status.server_id
    })
    .await;
    let ports = real.openstack_in(
        &tenant,
        "team-b",
        &["port", "list", "--server", &server, "--long"],
    );
    assert!(
        ports.to_string().contains(&id),
        "db-0's port is in db: {ports}"
    );

    // Scaled to 5 and a replica's server deleted by hand: addresses follow, rules stay.
    let before = rule_ids(&made);
    let scaled = Instant::now();
    real.kubectl(&["-n", &ns.name, "scale", "vmg/web", "--replicas=5"]);
    sg.follows(&vms, 5).await;
    println!(
        "REAL scale 3 → 5: the address group follows in {:.1} s",
        scaled.elapsed().as_secs_f64()
    );
    let victim = vms
        .get("web-1")
        .await
        .expect("web-1")
        .status
        .and_then(|s| s.server_id)
        .expect("a server");
    let replaced = Instant::now();
    real.openstack_do_in(&tenant, "team-b", &["server", "delete", &victim]);
    until(
        "web-1 is replaced and in the address group",
        LIMIT,
        &context(&operator),
        || async {
            let status = vms.get("web-1").await.ok()?.status?;
            let new = status.server_id.as_deref().is_some_and(|s| s != victim);
            let ip = format!("{}/32", status.primary_ip?);
            (new && sg.address_group().await?.contains(&ip) && sg.address_group().await?.len() == 5)
                .then_some(())
        },
    )
    .await;
    println!(
        "REAL a replaced replica is in the address group {:.1} s after the delete",
        replaced.elapsed().as_secs_f64()
    );
    assert_eq!(
        rule_ids(&sg.firewall(&id).await.expect("db")),
        before,
        "no rule written"
    );

    // A rule deleted with the CLI is back within a resync.
    let icmp = made
        .security_group_rules
        .iter()
        .find(|r| r.protocol.as_deref() == Some("icmp"))
        .expect("icmp");
    let healed = Instant::now();
    real.openstack_do_in(
        &tenant,
        "team-b",
        &["security", "group", "rule", "delete", &icmp.id],
    );
    let back = until(
        "the icmp rule is back",
        LIMIT,
        &context(&operator),
        || async {
            let now = sg.firewall(&id).await?;
            now.security_group_rules
                .iter()
                .any(|r| r.protocol.as_deref() == Some("icmp"))
                .then_some(now)
        },
    )
    .await;
    let took = healed.elapsed();
    println!(
        "REAL a rule deleted with the CLI is back in {:.1} s",
        took.as_secs_f64()
    );
    assert!(
        took < RESYNC + Duration::from_secs(10),
        "within a resync: {took:?}"
    );

    // An edited port range: one rule created, one deleted.
    let before = rule_ids(&back);
    sg.apply(&db("9100-9120"));
    let after = until("the range follows", LIMIT, &context(&operator), || async {
        let now = sg.firewall(&id).await?;
        let wide = now
            .security_group_rules
            .iter()
            .any(|r| r.port_range_max == Some(9120));
        let narrow = now
            .security_group_rules
            .iter()
            .any(|r| r.port_range_max == Some(9110));
        (wide && !narrow).then(|| rule_ids(&now))
    })
    .await;
    assert_eq!(
        (
            after.difference(&before).count(),
            before.difference(&after).count()
        ),
        (1, 1)
    );

    // Deleting db while db-0 is in it waits (InUse); then nothing of it is left.
    real.kubectl(&["-n", &ns.name, "delete", "sg", "db", "--wait=false"]);
    until("an InUse event", LIMIT, &context(&operator), || async {
        (!event_notes(&real, &ns, "InUse", Some("db")).is_empty()).then_some(())
    })
    .await;
    assert!(sg.firewall(&id).await.is_some(), "kept while db-0 uses it");
    for (kind, name) in [
        ("vm", "db-0"),
        ("sg", "db"),
        ("lb", "web"),
        ("vmg", "web"),
        ("sg", "admin"),
    ] {
        real.kubectl(&[
            "-n",
            &ns.name,
            "delete",
            kind,
            name,
            // db goes by itself once db-0 is gone (its delete was waiting).
            "--ignore-not-found",
            "--wait=true",
            "--timeout=240s",
        ]);
    }
    let groups = real.openstack_in(&tenant, "team-b", &["security", "group", "list"]);
    let names: Vec<&str> = groups
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["Name"].as_str())
        .collect();
    assert_eq!(names, ["default"], "only team-b's default group is left");
    assert!(
        sg.address_group().await.is_none(),
        "the address group is gone"
    );
    println!(
        "REAL security groups: the whole test took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
