//! Simulator configuration: timings, capacity and the seed of every random choice.
//! It does not hold seed data (see `seed.rs`) or faults (see `faults.rs`).

use std::time::Duration;

/// How the simulated cloud behaves. `Default` is a small, realistic cloud (delays of a
/// second or two, three hypervisors); [`SimConfig::fast`] is for tests.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Time a new server spends in `BUILD` (and a resize in `RESIZE`, a delete in `deleting`).
    pub build_delay: Duration,
    /// Time an Octavia object spends in `PENDING_*` after a write.
    pub lb_delay: Duration,
    /// Time a Cinder volume spends `creating`, `extending` or `deleting`.
    pub volume_delay: Duration,
    /// Lifetime of a Keystone token.
    pub token_lifetime: Duration,
    /// Number of hypervisor hosts the scheduler places servers on.
    pub hosts: usize,
    /// Nova availability zones (Octavia's have the same names); host `i` is in zone
    /// `zones[i mod len]`, as the real systems' three hosts are in `az-1`..`az-3`.
    pub zones: Vec<String>,
    /// Nova `instances` quota of the project.
    pub instance_quota: usize,
    /// Seed of the random generator (IDs, fault rates), so runs repeat.
    pub seed: u64,
    /// Nova `max_limit`: the largest page a list answers.
    pub page_size_max: usize,
    /// Time every request takes before it is answered, as a loaded API server's would.
    pub latency: Duration,
    /// Projects beyond the two seeded ones (`tenant-1`, `tenant-2`, ...), each with its
    /// own user, application credential and networks: a shared cluster where every
    /// namespace acts in a project of its own.
    pub tenants: usize,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            build_delay: Duration::from_millis(1500),
            lb_delay: Duration::from_millis(1500),
            volume_delay: Duration::from_millis(1000),
            token_lifetime: Duration::from_secs(24 * 3600),
            hosts: 3,
            zones: ["az-1", "az-2", "az-3"].map(String::from).to_vec(),
            instance_quota: 100,
            seed: 42,
            page_size_max: 1000,
            latency: Duration::ZERO,
            tenants: 0,
        }
    }
}

impl SimConfig {
    /// Near-zero delays for tests: state changes are still observable right after a
    /// write (a few milliseconds), so `PENDING_*`/`BUILD` handling is exercised.
    pub fn fast() -> Self {
        SimConfig {
            build_delay: Duration::from_millis(10),
            lb_delay: Duration::from_millis(10),
            volume_delay: Duration::from_millis(10),
            ..SimConfig::default()
        }
    }
}

/// The credentials the simulator accepts (seeded; never secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimCredentials {
    pub username: String,
    pub password: String,
    pub user_id: String,
    pub project_name: String,
    pub project_id: String,
    pub user_domain: String,
    pub project_domain: String,
    pub application_credential_id: String,
    pub application_credential_name: String,
    pub application_credential_secret: String,
}
