//! Leader election over a real Lease API (the test API server, or a real cluster with
//! VERDA_E2E_KUBECONFIG): one leader at a time, takeover when the holder stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::oneshot;
use verda_operator::leases::leader::{LeaderElector, run_elected};
use verda_test_apiserver::TestCluster;

const LEASE: &str = "verda-test-leader";
const DURATION: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(200);

struct Candidate {
    leading: Arc<AtomicUsize>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts a candidate whose "controllers" count how many copies of them run.
fn candidate(
    client: kube::Client,
    ns: &str,
    identity: &str,
    running: Arc<AtomicUsize>,
) -> Candidate {
    let elector = LeaderElector::new(client, ns, LEASE, identity, DURATION);
    let leading = Arc::new(AtomicUsize::new(0));
    let (stop, stopped) = oneshot::channel::<()>();
    let mine = leading.clone();
    let task = tokio::spawn(async move {
        run_elected(&elector, RETRY, async { drop(stopped.await) }, move || {
            let running = running.clone();
            let mine = mine.clone();
            tokio::spawn(async move {
                // A guard decrements on abort, so "running" counts live leaders only.
                struct Live(Arc<AtomicUsize>, Arc<AtomicUsize>);
                impl Drop for Live {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, Ordering::SeqCst);
                        self.1.fetch_sub(1, Ordering::SeqCst);
                    }
                }
                running.fetch_add(1, Ordering::SeqCst);
                mine.fetch_add(1, Ordering::SeqCst);
                let _live = Live(running, mine);
                std::future::pending::<()>().await;
            })
        })
        .await
        .expect("the lease namespace exists");
    });
    Candidate {
        leading,
        stop,
        task,
    }
}

/// A client whose requests hang, as to an API server gone silent, while `stalled` is set.
fn stallable(client: kube::Client, stalled: Arc<AtomicBool>) -> kube::Client {
    let namespace = client.default_namespace().to_owned();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let client = client.clone();
        let stalled = stalled.clone();
        async move {
            if stalled.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            client.send(request).await
        }
    });
    kube::Client::new(service, namespace)
}

async fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..100 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn one_leader_at_a_time_and_a_standby_takes_over_when_the_holder_stops() {
    let cluster = TestCluster::from_env_or_start().await.expect("cluster");
    let ns = cluster.namespace("lease").await.expect("namespace");
    let running = Arc::new(AtomicUsize::new(0));
    let a = candidate(cluster.client(), &ns, "replica-a", running.clone());
    let b = candidate(cluster.client(), &ns, "replica-b", running.clone());

    wait_until("one replica leads", || running.load(Ordering::SeqCst) == 1).await;
    // Over several renewal periods, never two leaders.
    for _ in 0..10 {
        tokio::time::sleep(RETRY).await;
        assert_eq!(running.load(Ordering::SeqCst), 1, "exactly one leader");
    }
    let (leader, standby) = if a.leading.load(Ordering::SeqCst) == 1 {
        (a, b)
    } else {
        (b, a)
    };
    let lease = Api::<Lease>::namespaced(cluster.client(), &ns)
        .get(LEASE)
        .await
        .expect("lease");
    let holder = lease.spec.and_then(|s| s.holder_identity).expect("holder");
    assert!(holder == "replica-a" || holder == "replica-b");

    // The leader stops: it releases the lease and the standby takes over well before
    // the lease would have expired.
    let _ = leader.stop.send(());
    leader.task.await.expect("leader stopped cleanly");
    wait_until("the standby leads", || {
        standby.leading.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(running.load(Ordering::SeqCst), 1);
    let lease = Api::<Lease>::namespaced(cluster.client(), &ns)
        .get(LEASE)
        .await
        .expect("lease");
    let spec = lease.spec.expect("spec");
    assert_ne!(spec.holder_identity.as_deref(), Some(holder.as_str()));
    assert!(spec.lease_transitions.unwrap_or(0) >= 1);

    let _ = standby.stop.send(());
    standby.task.await.expect("standby stopped cleanly");
    assert_eq!(running.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_holder_that_vanishes_without_releasing_is_replaced_after_expiry() {
    let cluster = TestCluster::from_env_or_start().await.expect("cluster");
    let ns = cluster.namespace("lease").await.expect("namespace");
    let running = Arc::new(AtomicUsize::new(0));
    let a = candidate(cluster.client(), &ns, "crashing", running.clone());
    wait_until("the first replica leads", || {
        running.load(Ordering::SeqCst) == 1
    })
    .await;
    // A crash: the task dies without releasing the lease.
    a.task.abort();
    let _ = a.task.await;
    let b = candidate(cluster.client(), &ns, "survivor", running.clone());
    tokio::time::sleep(DURATION / 2).await;
    assert_eq!(
        b.leading.load(Ordering::SeqCst),
        0,
        "the lease is still live"
    );
    wait_until("the survivor leads", || {
        b.leading.load(Ordering::SeqCst) == 1
    })
    .await;
    let _ = b.stop.send(());
    b.task.await.expect("stopped");
}

#[tokio::test]
async fn a_holder_whose_api_server_goes_silent_stops_before_a_standby_takes_over() {
    let cluster = TestCluster::from_env_or_start().await.expect("cluster");
    let ns = cluster.namespace("lease").await.expect("namespace");
    let running = Arc::new(AtomicUsize::new(0));
    let stalled = Arc::new(AtomicBool::new(false));
    let silenced = stallable(cluster.client(), stalled.clone());
    let a = candidate(silenced, &ns, "silenced", running.clone());
    wait_until("the first replica leads", || {
        a.leading.load(Ordering::SeqCst) == 1
    })
    .await;
    let b = candidate(cluster.client(), &ns, "standby", running.clone());
    stalled.store(true, Ordering::SeqCst);
    let silent_since = std::time::Instant::now();
    // Sampled holder first: a holder seen stopped while the standby was not yet leading
    // stopped before the takeover.
    let mut a_stopped_after = None;
    loop {
        let a_runs = a.leading.load(Ordering::SeqCst);
        let b_runs = b.leading.load(Ordering::SeqCst);
        if b_runs == 1 {
            assert_eq!(a_runs, 0, "two leaders at once");
            break;
        }
        if a_runs == 0 && a_stopped_after.is_none() {
            a_stopped_after = Some(silent_since.elapsed());
        }
        assert!(
            silent_since.elapsed() < DURATION * 5,
            "the standby never took over"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = a_stopped_after.expect("the silenced holder stopped before the takeover");
    // Its last renewal went out before the silence: it stops within two thirds of the
    // lease duration of it, while a standby waits the whole duration.
    assert!(
        stopped <= DURATION * 2 / 3 + Duration::from_millis(300),
        "stopped {stopped:?} after the silence"
    );

    stalled.store(false, Ordering::SeqCst);
    let _ = a.stop.send(());
    a.task.await.expect("stopped");
    let _ = b.stop.send(());
    b.task.await.expect("stopped");
}

#[tokio::test]
async fn a_lease_namespace_that_does_not_exist_stops_the_election_with_what_to_do() {
    let cluster = TestCluster::from_env_or_start().await.expect("cluster");
    let elector = LeaderElector::new(
        cluster.client(),
        "verda-no-such-namespace",
        LEASE,
        "replica-a",
        DURATION,
    );
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        run_elected(&elector, RETRY, std::future::pending(), || {
            panic!("no controllers may start without the lease")
        }),
    )
    .await
    .expect("the election stops at once instead of retrying");
    let message = result.expect_err("refused").to_string();
    assert!(
        message.contains("namespaces \"verda-no-such-namespace\" not found")
            && message.contains("kubectl create namespace verda-no-such-namespace")
            && !message.contains("Status {"),
        "{message}"
    );
}
