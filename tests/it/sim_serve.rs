//! Runs the simulator for manual clients (ignored by default), e.g. to point the
//! python-openstackclient at it: `hack/sim-serve.sh` writes the clouds.yaml to
//! `$SIM_CLOUDS_YAML` (default `/tmp/verda-sim-clouds.yaml`) and serves on
//! `$SIM_LISTEN` (default 127.0.0.1:8999) for `$SIM_SERVE_SECS` seconds (default 600).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use verda_operator::sim::{SimConfig, Simulator};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "serves until SIM_SERVE_SECS elapse; run explicitly"]
async fn serve_simulator_for_manual_clients() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let addr = env("SIM_LISTEN", "127.0.0.1:8999").parse().unwrap();
    let sim = Simulator::start_on(addr, SimConfig::default())
        .await
        .unwrap();
    let path = env("SIM_CLOUDS_YAML", "/tmp/verda-sim-clouds.yaml");
    std::fs::write(&path, sim.clouds_yaml()).unwrap();
    println!(
        "simulator on http://{} (clouds.yaml: {path}, cloud verda-sim)",
        sim.addr()
    );
    let secs: u64 = env("SIM_SERVE_SECS", "600").parse().unwrap();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    for ((service, op), n) in sim.request_counts() {
        println!("{service} {op} {n}");
    }
}
