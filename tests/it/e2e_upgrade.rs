//! What an upgrade meets: cloud resources made by an earlier version that records
//! less than this one. A server or load balancer tagged with its owner alone (as
//! before `verda-managed` and the cluster tag existed) gains the missing tags in one
//! write each, keeps its ID and its other tags, and from then on the shared view and
//! the orphan inventory see it.

use crate::support;

use std::time::Duration;

use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::ids::{LoadBalancerId, ServerId};
use verda_operator::cloud::owner::MANAGED_TAG;
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn resources_of_an_earlier_version_gain_the_records_this_one_keeps() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(&sample("virtualmachinegroup.yaml"))
        .await;
    env.create_from_yaml::<LoadBalancer>(&sample("loadbalancer.yaml"))
        .await;
    let lb = env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    let vm = env.ready_vm("virtualmachinegroup-sample-0").await;
    let server_id = vm.status.and_then(|s| s.server_id).expect("server ID");
    let lb_id = lb
        .status
        .and_then(|s| s.load_balancer_id)
        .expect("load balancer ID");

    // Take them back to what an earlier version recorded: the owner tag only, next to
    // a tag of the user's.
    let cloud = env.cloud();
    let owner_only = |tags: &[String]| -> Vec<String> {
        let mut kept: Vec<String> = tags
            .iter()
            .filter(|t| t.starts_with("verda-uid-"))
            .cloned()
            .collect();
        kept.push("team:web".into());
        kept
    };
    let server = env
        .sim
        .servers()
        .into_iter()
        .find(|s| s.id == server_id)
        .expect("server");
    cloud
        .compute()
        .set_server_tags(
            &ServerId::from(server_id.clone()),
            &owner_only(&server.tags),
        )
        .await
        .expect("server retagged");
    let octavia_lb = env
        .sim
        .load_balancers()
        .into_iter()
        .find(|l| l.id == lb_id)
        .expect("load balancer");
    cloud
        .load_balancing(None)
        .set_load_balancer_tags(
            &LoadBalancerId::from(lb_id.clone()),
            &owner_only(&octavia_lb.tags),
        )
        .await
        .expect("load balancer retagged");

    let cluster_tag = env.ctx.cluster.tag();
    let complete = |tags: &[String]| {
        [MANAGED_TAG, cluster_tag.as_str(), "team:web"]
            .iter()
            .all(|t| tags.iter().any(|have| have == t))
    };
    eventually(
        "the server and the load balancer carry every record again",
        LIMIT,
        || async {
            let server = env.sim.servers().into_iter().find(|s| s.id == server_id)?;
            let lb = env
                .sim
                .load_balancers()
                .into_iter()
                .find(|l| l.id == lb_id)?;
            (complete(&server.tags) && complete(&lb.tags)).then_some(())
        },
    )
    .await;
    // Same resources, nothing replaced, and the objects stay Ready.
    let vms = env.api::<VirtualMachine>();
    let vm = vms.get("virtualmachinegroup-sample-0").await.expect("vm");
    assert_eq!(
        vm.status.and_then(|s| s.server_id).as_deref(),
        Some(server_id.as_str())
    );
    env.load_balancer_ready("loadbalancer-sample", "4/4").await;
    assert_eq!(env.sim.load_balancers().len(), 1);
    assert_eq!(env.sim.servers().iter().filter(|s| !s.deleting).count(), 2);
    // One tag write each: a repeat would mean the view and the plan disagree.
    assert_eq!(
        env.sim.requests("compute", "replace_server_tags"),
        2,
        "the test's own and the operator's"
    );
}
