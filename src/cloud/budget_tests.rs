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
