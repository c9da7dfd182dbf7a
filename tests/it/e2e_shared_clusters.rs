//! Shared clusters: every object acts in the OpenStack project its credentials name
//! (its own Secret, else its namespace's default Secret, else — only where allowed —
//! the operator's), the project is pinned once recorded, Secrets rotate without a
//! restart, and a Secret deleted under a live object is reported, never leaked.
//! The simulator's two projects (`demo`, `team-b`) stand for two teams.

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::e2e::{Env, eventually, test_timing};
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::config::Config;
use verda_operator::sim::{SimConfig, SimCredentials};

const LIMIT: Duration = Duration::from_secs(30);
const DEFAULT_SECRET: &str = "verda-cloud-credentials";

/// The configuration of a platform shared by several teams: no object may act with
/// the operator's own credentials; a namespace's default Secret is read for its cloud
/// `verda-sim`.
fn shared_platform() -> Config {
    Config::parse("credentials: {allowOperatorCredentials: false, defaultCloudName: verda-sim}")
        .expect("valid configuration")
}

fn vm_manifest(name: &str, secret: Option<&str>) -> String {
    let reference = secret
        .map(|s| format!("  cloudCredentialsRef: {{secretName: {s}, cloudName: verda-sim}}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n{reference}"
    )
}

/// Writes (creates or replaces) the Secret `name` holding a clouds.yaml for `who`.
async fn put_secret(env: &Env, name: &str, clouds_yaml: String) {
    let api = env.api::<Secret>();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "clouds.yaml".to_owned(),
            ByteString(clouds_yaml.into_bytes()),
        )])),
        ..Default::default()
    };
    match api.get_opt(name).await.expect("read the Secret") {
        Some(_) => {
            let patch = json!({"data": secret.data});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .expect("Secret updated");
        }
        None => {
            api.create(&PostParams::default(), &secret)
                .await
                .expect("Secret created");
        }
    }
}

fn clouds_of(env: &Env, who: &SimCredentials) -> String {
    env.sim.clouds_yaml_of(who)
}

/// Only the application-credential cloud of `who`, named `verda-sim` as the objects
/// expect.
fn app_credential_clouds(env: &Env, who: &SimCredentials) -> String {
    format!(
        "clouds:\n  verda-sim:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: {}\n      application_credential_id: {}\n      application_credential_secret: {}\n    region_name: RegionOne\n",
        env.sim.auth_url(),
        who.application_credential_id,
        who.application_credential_secret
    )
}

async fn ready_condition<K>(env: &Env, name: &str, reason: &str) -> Condition
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize,
{
    let api = env.api::<K>();
    eventually(
        &format!("{name} has Ready reason {reason}"),
        LIMIT,
        || async {
            let obj = serde_json::to_value(api.get(name).await.ok()?).ok()?;
            let conditions: Vec<Condition> =
                serde_json::from_value(obj.pointer("/status/conditions")?.clone()).ok()?;
            let c = find_condition(&conditions, READY)?.clone();
            (c.reason == reason).then_some(c)
        },
    )
    .await
}

fn project_of(vm: &VirtualMachine) -> Option<&str> {
    vm.status.as_ref()?.project_id.as_deref()
}

#[tokio::test]
async fn each_object_acts_in_the_project_its_credentials_name() {
    let env = Env::start_configured(SimConfig::fast(), test_timing(), shared_platform()).await;
    let demo = env.sim.credentials();
    let team = env.sim.team_credentials();
    put_secret(&env, DEFAULT_SECRET, clouds_of(&env, &demo)).await;
    put_secret(&env, "team-b", clouds_of(&env, &team)).await;

    // The published group and LoadBalancer name no credentials: the namespace's.
    env.create_from_yaml::<VirtualMachineGroup>(&support::e2e::sample("virtualmachinegroup.yaml"))
        .await;
    env.create_from_yaml::<LoadBalancer>(&support::e2e::sample("loadbalancer.yaml"))
        .await;
    // One VirtualMachine of the other team, and a LoadBalancer of theirs drawing on the
    // first team's group.
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("team-vm", Some("team-b")))
        .await;
    let mut foreign: LoadBalancer =
        serde_saphyr::from_str(&support::e2e::sample("loadbalancer.yaml")).expect("sample");
    foreign.metadata.name = Some("team-lb".into());
    foreign.spec.cloud_credentials_ref = Some(verda_api::v1alpha1::CloudCredentialsRef {
        secret_name: "team-b".into(),
        cloud_name: Some("verda-sim".into()),
    });
    env.api::<LoadBalancer>()
        .create(&PostParams::default(), &foreign)
        .await
        .expect("created");

    let lb = env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    assert_eq!(
        lb.status.as_ref().and_then(|s| s.project_id.as_deref()),
        Some(demo.project_id.as_str())
    );
    let team_vm = env.ready_vm("team-vm").await;
    assert_eq!(project_of(&team_vm), Some(team.project_id.as_str()));
    for replica in [
        "virtualmachinegroup-sample-0",
        "virtualmachinegroup-sample-1",
    ] {
        let vm = env.ready_vm(replica).await;
        assert_eq!(project_of(&vm), Some(demo.project_id.as_str()));
    }

    let names = |servers: Vec<verda_operator::sim::SimServer>| {
        let mut names: Vec<String> = servers.into_iter().map(|s| s.name).collect();
        names.sort();
        names
    };
    assert_eq!(
        names(env.sim.servers_in(&demo.project_id)),
        [
            "virtualmachinegroup-sample-0",
            "virtualmachinegroup-sample-1"
        ]
    );
    assert_eq!(names(env.sim.servers_in(&team.project_id)), ["team-vm"]);
    assert_eq!(env.sim.server_groups_in(&demo.project_id).len(), 1);
    assert!(env.sim.server_groups_in(&team.project_id).is_empty());
    // The other team's load balancer is in its project and never takes the first
    // team's servers as members.
    let team_lb = env.load_balancer_ready("team-lb", "0/0").await;
    assert_eq!(
        team_lb
            .status
            .as_ref()
            .and_then(|s| s.project_id.as_deref()),
        Some(team.project_id.as_str())
    );
    assert_eq!(env.sim.load_balancers_in(&demo.project_id).len(), 1);
    let team_lbs = env.sim.load_balancers_in(&team.project_id);
    assert_eq!(team_lbs.len(), 1);
    assert!(team_lbs[0].pools.iter().all(|p| p.members.is_empty()));
    // Each team's cloud calls are counted under its project; no credential appears.
    let metrics = env.ctx.metrics.encode();
    for project in [&demo.project_id, &team.project_id] {
        assert!(
            metrics.contains(&format!(
                "verda_project_cloud_requests_total{{project=\"{project}\",service=\"compute\"}}"
            )),
            "{metrics}"
        );
    }
    assert!(!metrics.contains(&team.password) && !metrics.contains(&demo.password));

    // Deleting everything empties both projects.
    for lb in ["loadbalancer-sample", "team-lb"] {
        env.api::<LoadBalancer>()
            .delete(lb, &DeleteParams::default())
            .await
            .expect("deleted");
    }
    env.api::<VirtualMachineGroup>()
        .delete("virtualmachinegroup-sample", &DeleteParams::default())
        .await
        .expect("deleted");
    env.api::<VirtualMachine>()
        .delete("team-vm", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("both projects are empty", LIMIT, || async {
        let empty = [&demo.project_id, &team.project_id].iter().all(|p| {
            env.sim.servers_in(p).is_empty()
                && env.sim.server_groups_in(p).is_empty()
                && env.sim.load_balancers_in(p).is_empty()
        });
        empty.then_some(())
    })
    .await;
}

#[tokio::test]
async fn without_credentials_an_object_is_reported_and_makes_no_cloud_call() {
    let env = Env::start_configured(SimConfig::fast(), test_timing(), shared_platform()).await;
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("orphan", None))
        .await;
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("named", Some("missing")))
        .await;
    let unnamed = ready_condition::<VirtualMachine>(&env, "orphan", "CredentialsNotFound").await;
    assert!(
        unnamed
            .message
            .contains(&format!("{}/{DEFAULT_SECRET}", env.ns)),
        "names the Secret it looked for: {}",
        unnamed.message
    );
    let named = ready_condition::<VirtualMachine>(&env, "named", "CredentialsNotFound").await;
    assert!(
        named.message.contains(&format!("{}/missing", env.ns)),
        "{}",
        named.message
    );
    assert_eq!(
        env.sim.total_requests(),
        0,
        "no cloud call without credentials"
    );
    env.event_seen("CredentialsNotFound").await;

    // The namespace's Secret appears: its watch wakes the object at once (the terminal
    // retry is 20 s here).
    let created = std::time::Instant::now();
    put_secret(
        &env,
        DEFAULT_SECRET,
        clouds_of(&env, &env.sim.credentials()),
    )
    .await;
    env.ready_vm("orphan").await;
    assert!(created.elapsed() < Duration::from_secs(15));
    assert_eq!(env.sim.servers().len(), 1);
}

/// Secrets read through namespaced Roles: in a namespace the operator was given no
/// Role in, an object says it may not read the Secret and what to grant, acts with no
/// credentials (not the operator's own), and goes on once the Role is there.
#[tokio::test]
async fn a_secret_the_operator_may_not_read_is_reported_and_the_grant_is_picked_up() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let Some(server) = env.cluster.server() else {
        println!("RBAC is the real cluster's own: the test API server's denial is not there");
        return;
    };
    put_secret(&env, "team-b", clouds_of(&env, &env.sim.team_credentials())).await;
    server.deny_reads("secrets", &env.ns);
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("defaulted", None))
        .await;
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("named", Some("team-b")))
        .await;
    for name in ["defaulted", "named"] {
        let refused = ready_condition::<VirtualMachine>(&env, name, "CredentialsForbidden").await;
        assert!(
            refused.message.contains("may not read Secret")
                && refused.message.contains("secretAccess.namespaces")
                && refused.message.contains(&env.ns),
            "{name}: {}",
            refused.message
        );
    }
    assert_eq!(
        env.sim.total_requests(),
        0,
        "operator credentials are not lent where the namespace's Secret cannot be read"
    );
    env.event_seen("CredentialsForbidden").await;
    // It recorded no project, so it created nothing: deleting it needs no credentials.
    let vms = env.api::<VirtualMachine>();
    vms.delete("defaulted", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("defaulted is gone", LIMIT, || async {
        vms.get_opt("defaulted").await.ok()?.is_none().then_some(())
    })
    .await;

    // The Role is granted: the Secret watches list at their next retry and wake the
    // objects, well before the terminal retry.
    let granted = std::time::Instant::now();
    server.allow_reads("secrets", &env.ns);
    env.ready_vm("named").await;
    assert!(
        granted.elapsed() < Duration::from_secs(20),
        "{:?}",
        granted.elapsed()
    );
    let named = vms.get("named").await.expect("named");
    assert_eq!(
        project_of(&named),
        Some(env.sim.team_credentials().project_id.as_str())
    );
}

#[tokio::test]
async fn a_rotated_secret_is_used_without_a_restart_and_another_project_is_refused() {
    let env = Env::start_configured(SimConfig::fast(), test_timing(), shared_platform()).await;
    let demo = env.sim.credentials();
    put_secret(&env, "creds", clouds_of(&env, &demo)).await;
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("rotated", Some("creds")))
        .await;
    let server = env
        .ready_vm("rotated")
        .await
        .status
        .and_then(|s| s.server_id);

    // A wrong password: the next reconcile (woken by the change) uses it and fails.
    let wrong = SimCredentials {
        password: "not-the-password".into(),
        ..demo.clone()
    };
    put_secret(&env, "creds", clouds_of(&env, &wrong)).await;
    ready_condition::<VirtualMachine>(&env, "rotated", "Unauthorized").await;

    // An application credential of the same project: converged again, same server.
    put_secret(&env, "creds", app_credential_clouds(&env, &demo)).await;
    let vm = env.ready_vm("rotated").await;
    assert_eq!(vm.status.and_then(|s| s.server_id), server);

    // Credentials of another project: refused, nothing created or deleted anywhere.
    let team = env.sim.team_credentials();
    put_secret(&env, "creds", clouds_of(&env, &team)).await;
    let refused = ready_condition::<VirtualMachine>(&env, "rotated", "ProjectChanged").await;
    assert!(
        refused.message.contains(&demo.project_id),
        "{}",
        refused.message
    );
    assert!(
        refused.message.contains(&team.project_id),
        "{}",
        refused.message
    );
    env.api::<VirtualMachine>()
        .delete("rotated", &DeleteParams::default())
        .await
        .expect("deleted");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(env.sim.servers_in(&demo.project_id).len(), 1, "kept");
    assert!(env.sim.servers_in(&team.project_id).is_empty());
    assert!(
        env.api::<VirtualMachine>()
            .get_opt("rotated")
            .await
            .expect("read")
            .is_some(),
        "the finalizer stays while the credentials are for another project"
    );

    // The right project again: the deletion completes.
    put_secret(&env, "creds", clouds_of(&env, &demo)).await;
    eventually(
        "the VirtualMachine and its server are gone",
        LIMIT,
        || async {
            let gone = env
                .api::<VirtualMachine>()
                .get_opt("rotated")
                .await
                .ok()?
                .is_none()
                && env.sim.servers_in(&demo.project_id).is_empty();
            gone.then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn deleting_an_object_whose_secret_is_gone_keeps_it_and_says_what_to_do() {
    let env = Env::start_configured(SimConfig::fast(), test_timing(), shared_platform()).await;
    let demo = env.sim.credentials();
    put_secret(&env, "creds", clouds_of(&env, &demo)).await;
    env.create_from_yaml::<VirtualMachine>(&vm_manifest("kept", Some("creds")))
        .await;
    env.ready_vm("kept").await;

    env.api::<Secret>()
        .delete("creds", &DeleteParams::default())
        .await
        .expect("Secret deleted");
    env.api::<VirtualMachine>()
        .delete("kept", &DeleteParams::default())
        .await
        .expect("deleted");
    // Reported at once by the Secret's watch, then again by the deletion, with what
    // to do about it.
    ready_condition::<VirtualMachine>(&env, "kept", "CredentialsNotFound").await;
    let api = env.api::<VirtualMachine>();
    eventually("the deletion says what to do", LIMIT, || async {
        let vm = api.get("kept").await.ok()?;
        let c = find_condition(&vm.status.as_ref()?.conditions, READY)?.clone();
        (c.reason == "CredentialsNotFound" && c.message.contains("remove the finalizer"))
            .then_some(())
    })
    .await;
    assert_eq!(
        env.sim.servers().len(),
        1,
        "the server is not leaked, nor deleted blind"
    );

    put_secret(&env, "creds", clouds_of(&env, &demo)).await;
    eventually("the deletion completes", LIMIT, || async {
        let gone = env
            .api::<VirtualMachine>()
            .get_opt("kept")
            .await
            .ok()?
            .is_none()
            && env.sim.servers().is_empty();
        gone.then_some(())
    })
    .await;
}
