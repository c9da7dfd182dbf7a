//! The request budget end to end: with `requestBudget` of 10 requests per second and a
//! burst of 10, a group of 6 behind a LoadBalancer converges at that pace, the
//! simulator never sees more than rate + burst requests in any second, and the time
//! spent waiting shows in `verda_cloud_request_wait_seconds`.

use crate::support;

use std::time::{Duration, Instant};

use support::e2e::{Env, eventually, sample, test_timing};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachineGroup};
use verda_operator::cloud::budget::{BudgetSpec, Budgets};
use verda_operator::sim::SimConfig;

#[tokio::test]
async fn a_budgeted_operator_never_exceeds_rate_and_burst_and_still_converges() {
    let spec = BudgetSpec {
        requests_per_second: 10.0,
        burst: 10,
    };
    let env = Env::start_budgeted(SimConfig::fast(), test_timing(), Budgets::new(spec)).await;
    let started = Instant::now();
    let group = sample("virtualmachinegroup.yaml").replace("replicas: 2", "replicas: 6");
    let _: VirtualMachineGroup = env.create_from_yaml(&group).await;
    let _: LoadBalancer = env.create_from_yaml(&sample("loadbalancer.yaml")).await;
    let lbs = env.api::<LoadBalancer>();
    eventually(
        "every pool holds the 6",
        Duration::from_secs(60),
        || async {
            let s = lbs.get("loadbalancer-sample").await.ok()?.status?;
            (s.members.as_deref() == Some("12/12")).then_some(())
        },
    )
    .await;
    let took = started.elapsed().as_secs_f64();
    let calls = env.sim.total_requests();
    let busiest = env.sim.busiest_second();
    let floor = (calls as f64 - f64::from(spec.burst)) / spec.requests_per_second;
    println!(
        "BUDGET 10/s burst 10: {calls} calls, converged in {took:.1} s (the budget's floor {floor:.1} s), busiest second {busiest} requests"
    );
    assert!(busiest <= 20, "{busiest} requests in one second");
    // The calls are counted a moment after convergence was seen: allow half a
    // second's worth more than the budget gives in `took`.
    let allowed = f64::from(spec.burst) + spec.requests_per_second * (took + 0.5);
    assert!(
        calls as f64 <= allowed,
        "{calls} calls in {took} s exceed the budget"
    );
    let metrics = env.ctx.metrics.encode();
    assert!(
        metrics.contains("verda_cloud_request_wait_seconds_count{service=\"compute\"}"),
        "{metrics}"
    );
}
