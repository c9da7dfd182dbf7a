//! Shared clusters on the real systems: two teams, two namespaces, two Keystone
//! projects (`demo`, and `team-b` made by `hack/real_tenant.py`), one operator binary
//! that may not lend its own credentials. Each namespace's objects land only in its
//! own project; a namespace without credentials is told so and costs no cloud call;
//! a Secret rotated from password to application credential keeps everything
//! converged without a restart; credentials of another project are refused; a Secret
//! deleted under live objects is reported. Run by `hack/real-systems.sh`.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Api;
use verda_api::conditions::{READY, find_condition, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};

use support::real::{
    Namespace, Operator, Real, context, pools_hold_the_group, published, put_secret, single_cloud,
    tenant_clouds, until,
};

const LIMIT: Duration = Duration::from_secs(180);
const CONFIG: &str = "resyncPeriod: 20s\ncredentials: {allowOperatorCredentials: false}\n";

/// The names of the servers of `cloud` in `clouds`, and the number of load balancers
/// and server groups.
fn project_holds(real: &Real, clouds: &Path, cloud: &str) -> (BTreeSet<String>, usize, usize) {
    let names = |args: &[&str], key: &str| -> Vec<String> {
        real.openstack_in(clouds, cloud, args)
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i[key].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    (
        names(&["server", "list"], "Name").into_iter().collect(),
        names(&["loadbalancer", "list"], "id").len(),
        names(&["server", "group", "list"], "ID").len(),
    )
}

async fn ready_reason<K>(api: &Api<K>, name: &str, operator: &Operator, reason: &str) -> String
where
    K: kube::Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
    K: serde::Serialize,
{
    until(
        &format!("{name} has Ready reason {reason}"),
        LIMIT,
        &context(operator),
        || async {
            let obj = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            let conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> =
                serde_json::from_value(obj.pointer("/status/conditions")?.clone()).ok()?;
            let c = find_condition(&conditions, READY)?;
            (c.reason == reason).then(|| c.message.clone())
        },
    )
    .await
}

/// How many objects of kind `K` are in `ns`.
async fn count<K>(client: &kube::Client, ns: &Namespace) -> Option<usize>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
{
    let api: Api<K> = ns.api(client.clone());
    Some(api.list(&Default::default()).await.ok()?.items.len())
}

fn project_of<K: serde::Serialize>(obj: &K) -> Option<String> {
    serde_json::to_value(obj)
        .ok()?
        .pointer("/status/projectID")?
        .as_str()
        .map(str::to_owned)
}

#[tokio::test]
#[ignore = "needs the real systems: hack/real-systems.sh"]
async fn two_teams_each_act_only_in_their_own_project() {
    let real = Arc::new(Real::from_env());
    let client = real.kube().await;
    let tenant = tenant_clouds();
    let team_a = Namespace::create(real.clone(), "team-a");
    let team_b = Namespace::create(real.clone(), "team-b");
    let nobody = Namespace::create(real.clone(), "no-credentials");
    let before_a = project_holds(&real, &real.clouds, "osh-demo");
    // Read with the application credential: the test changes team-b's password.
    let before_b = project_holds(&real, &tenant, "team-b-appcred");

    let operator = real.operator("shared", &[], Some(CONFIG));
    let calls_before = real.operator_requests();

    // A namespace with no credentials: told so, and not one cloud call.
    real.kubectl(&[
        "-n",
        &nobody.name,
        "apply",
        "-f",
        &published("virtualmachine.yaml"),
    ]);
    let vms_nobody: Api<VirtualMachine> = nobody.api(client.clone());
    let message = ready_reason(&vms_nobody, "vm-sample", &operator, "CredentialsNotFound").await;
    assert!(
        message.contains(&format!("{}/verda-cloud-credentials", nobody.name)),
        "{message}"
    );
    assert_eq!(real.operator_requests(), calls_before, "no cloud call");

    // Two teams, each with its namespace's default Secret.
    put_secret(&real, &team_a.name, &single_cloud(&real.clouds, "osh-demo"));
    put_secret(&real, &team_b.name, &single_cloud(&tenant, "team-b"));
    let applied = Instant::now();
    for f in ["virtualmachinegroup.yaml", "loadbalancer.yaml"] {
        real.kubectl(&["-n", &team_a.name, "apply", "-f", &published(f)]);
    }
    for f in [
        "virtualmachine.yaml",
        "virtualmachinegroup.yaml",
        "loadbalancer.yaml",
    ] {
        real.kubectl(&["-n", &team_b.name, "apply", "-f", &published(f)]);
    }
    pools_hold_the_group(&team_a, &client, &operator, 2).await;
    pools_hold_the_group(&team_b, &client, &operator, 2).await;
    let vms_b: Api<VirtualMachine> = team_b.api(client.clone());
    until(
        "team-b's vm-sample is Ready",
        LIMIT,
        &context(&operator),
        || async {
            let vm = vms_b.get("vm-sample").await.ok()?;
            is_true(&vm.status?.conditions, READY).then_some(())
        },
    )
    .await;
    println!(
        "REAL shared clusters: two teams' published objects converged in {:.1} s",
        applied.elapsed().as_secs_f64()
    );

    let (servers_a, lbs_a, groups_a) = project_holds(&real, &real.clouds, "osh-demo");
    let (servers_b, lbs_b, groups_b) = project_holds(&real, &tenant, "team-b-appcred");
    let group_servers: BTreeSet<String> = [
        "virtualmachinegroup-sample-0",
        "virtualmachinegroup-sample-1",
    ]
    .map(String::from)
    .into();
    let mut with_vm = group_servers.clone();
    with_vm.insert("vm-sample".into());
    assert_eq!(
        servers_a
            .difference(&before_a.0)
            .cloned()
            .collect::<BTreeSet<_>>(),
        group_servers
    );
    assert_eq!(
        servers_b
            .difference(&before_b.0)
            .cloned()
            .collect::<BTreeSet<_>>(),
        with_vm
    );
    assert_eq!((lbs_a - before_a.1, groups_a - before_a.2), (1, 1));
    assert_eq!((lbs_b - before_b.1, groups_b - before_b.2), (1, 1));
    let lbs_a_api: Api<LoadBalancer> = team_a.api(client.clone());
    let lbs_b_api: Api<LoadBalancer> = team_b.api(client.clone());
    let project_a = project_of(&lbs_a_api.get("loadbalancer-sample").await.expect("lb"));
    let project_b = project_of(&lbs_b_api.get("loadbalancer-sample").await.expect("lb"));
    assert!(project_a.is_some() && project_b.is_some() && project_a != project_b);

    // Rotation: team-b moves to an application credential, then its password changes.
    // The next scale reaches every pool with no restart.
    let rotated = Instant::now();
    put_secret(
        &real,
        &team_b.name,
        &single_cloud(&tenant, "team-b-appcred"),
    );
    real.openstack_do(
        "osh-admin",
        &[
            "user",
            "set",
            "--password",
            &uuid::Uuid::new_v4().to_string(),
            "team-b",
        ],
    );
    real.kubectl(&[
        "-n",
        &team_b.name,
        "scale",
        "vmg",
        "virtualmachinegroup-sample",
        "--replicas=3",
    ]);
    pools_hold_the_group(&team_b, &client, &operator, 3).await;
    let took = rotated.elapsed();
    println!(
        "REAL shared clusters: Secret rotated to an application credential, password changed, scale 2->3 in every pool in {:.1} s",
        took.as_secs_f64()
    );
    // Within a resync or two, not the 2-minute retry of a terminal refusal (a token
    // renewed in the second of the password change's revocation once led there).
    let log = operator.log();
    let refusals: Vec<&str> = log.lines().filter(|l| l.contains("Unauthorized")).collect();
    assert!(
        took <= Duration::from_secs(30),
        "rotation took {:.1} s; the operator's Unauthorized lines:\n{}",
        took.as_secs_f64(),
        refusals.join("\n")
    );
    assert!(
        operator
            .log()
            .contains("Secret changed: the objects of its namespace reconcile")
    );

    // Credentials of another project are refused; nothing moves in either project.
    put_secret(
        &real,
        &team_a.name,
        &single_cloud(&tenant, "team-b-appcred"),
    );
    let message = ready_reason(
        &lbs_a_api,
        "loadbalancer-sample",
        &operator,
        "ProjectChanged",
    )
    .await;
    assert!(
        message.contains(project_a.as_deref().unwrap_or("?")),
        "{message}"
    );
    assert_eq!(project_holds(&real, &real.clouds, "osh-demo").0, servers_a);

    // The Secret deleted under live objects: reported, nothing deleted.
    real.kubectl(&[
        "-n",
        &team_a.name,
        "delete",
        "secret",
        "verda-cloud-credentials",
    ]);
    let groups_a_api: Api<VirtualMachineGroup> = team_a.api(client.clone());
    ready_reason(
        &groups_a_api,
        "virtualmachinegroup-sample",
        &operator,
        "CredentialsNotFound",
    )
    .await;
    assert_eq!(project_holds(&real, &real.clouds, "osh-demo").0, servers_a);

    // Credentials back; delete everything: both projects are as they were.
    put_secret(&real, &team_a.name, &single_cloud(&real.clouds, "osh-demo"));
    pools_hold_the_group(&team_a, &client, &operator, 2).await;
    for ns in [&team_a, &team_b, &nobody] {
        real.kubectl(&[
            "-n",
            &ns.name,
            "delete",
            "vmg,vm,lb",
            "--all",
            "--wait=false",
        ]);
    }
    until(
        "every object is gone",
        Duration::from_secs(300),
        &context(&operator),
        || async {
            let mut n = 0;
            for ns in [&team_a, &team_b, &nobody] {
                n += count::<VirtualMachine>(&client, ns).await?
                    + count::<VirtualMachineGroup>(&client, ns).await?
                    + count::<LoadBalancer>(&client, ns).await?;
            }
            (n == 0).then_some(())
        },
    )
    .await;
    assert_eq!(project_holds(&real, &real.clouds, "osh-demo"), before_a);
    assert_eq!(project_holds(&real, &tenant, "team-b-appcred"), before_b);
}
