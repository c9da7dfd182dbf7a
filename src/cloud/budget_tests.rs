use std::sync::PoisonError;

use super::*;

fn budget(rate: f64, burst: u32) -> Budget {
    Budget::new(BudgetSpec {
        requests_per_second: rate,
        burst,
    })
}

#[tokio::test(start_paused = true)]
async fn a_burst_goes_at_once_then_the_rate_holds() {
    let b = budget(20.0, 40);
    for _ in 0..40 {
        assert_eq!(b.acquire(false).await, Duration::ZERO);
    }
    let started = Instant::now();
    for _ in 0..20 {
        b.acquire(false).await;
    }
    let took = started.elapsed().as_secs_f64();
    assert!(
        (0.95..=1.05).contains(&took),
        "20 more took {took} s at 20/s"
    );
}

#[tokio::test(start_paused = true)]
async fn a_waiting_write_goes_before_the_reads_waiting_with_it() {
    let b = Arc::new(budget(10.0, 1));
    b.acquire(false).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (i, write) in [(0, false), (1, false), (2, true)] {
        let (b, order) = (b.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            b.acquire(write).await;
            order.lock().unwrap_or_else(PoisonError::into_inner).push(i);
        }));
        tokio::task::yield_now().await;
    }
    for t in tasks {
        t.await.expect("the task ends");
    }
    let order = order.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(order[0], 2, "the write came last and went first: {order:?}");
}

#[tokio::test(start_paused = true)]
async fn a_pause_holds_every_request_of_the_project() {
    let budgets = Budgets::new(BudgetSpec::default());
    budgets.of("p1").pause(Duration::from_secs(3));
    let waited = budgets.of("p1").acquire(true).await;
    assert!(waited >= Duration::from_secs(3), "{waited:?}");
    assert_eq!(
        budgets.of("p2").acquire(true).await,
        Duration::ZERO,
        "another project"
    );
}

#[tokio::test(start_paused = true)]
async fn a_budget_shared_by_three_replicas_spends_a_third_of_it() {
    let budgets = Budgets::new(BudgetSpec {
        requests_per_second: 30.0,
        burst: 30,
    });
    let p1 = budgets.of("p1");
    let changed = budgets.share([("p1".to_owned(), 3), ("p3".to_owned(), 3)].into());
    assert_eq!(changed, [("p1".to_owned(), 3)], "p3 has no budget yet");
    let took = |n: usize, budget: Arc<Budget>| async move {
        let started = Instant::now();
        for _ in 0..n {
            budget.acquire(false).await;
        }
        started.elapsed().as_secs_f64()
    };
    // A third of the burst at once, then a third of the rate.
    assert_eq!(took(10, p1.clone()).await, 0.0, "a third of the burst");
    let rate = took(10, p1.clone()).await;
    assert!(
        (0.95..=1.05).contains(&rate),
        "10 more took {rate} s at 10/s"
    );
    // A budget made after the sharing starts with its part of the burst.
    assert_eq!(budgets.sharers_of("p3"), 3);
    assert_eq!(took(10, budgets.of("p3")).await, 0.0);
    assert!(took(1, budgets.of("p3")).await > 0.09, "the 11th waits");
    assert_eq!(
        took(30, budgets.of("p2")).await,
        0.0,
        "p2 is spent by this one alone"
    );
    // The others gone: the whole budget again.
    let changed = budgets.share(HashMap::new());
    assert_eq!(changed, [("p1".to_owned(), 1), ("p3".to_owned(), 1)]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(took(30, p1).await, 0.0, "the whole burst");
}
