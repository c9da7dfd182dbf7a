//! The `verda-operator` command: `run` the operator, `crdgen` the CRDs, list `orphans`,
//! and, in a build with the embedded simulator (feature `embedded-sim`, on by default),
//! `simulate` an OpenStack cloud.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use verda_operator::cloud::CloudSelection;
#[cfg(feature = "embedded-sim")]
use verda_operator::sim::{SimConfig, SimCredentials, Simulator};
use verda_operator::{config, crdgen, run, telemetry};

/// mimalloc: at 5,000 VMs the system allocator took a quarter of the operator's CPU
/// (`perf` during `hack/bench-fleet.sh 500`) and fragmented its memory.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "verda-operator",
    version,
    about = "Kubernetes operator for OpenStack servers, server groups and Octavia load balancers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator against the current Kubernetes cluster.
    Run(Box<RunArgs>),
    /// Run the OpenStack simulator alone and print a clouds.yaml for it.
    #[cfg(feature = "embedded-sim")]
    Simulate {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8774")]
        listen: SocketAddr,
        /// Seconds a server stays in BUILD and an Octavia object in PENDING_*.
        #[arg(long, default_value = "1.5s", value_parser = parse_seconds)]
        delay: Duration,
        #[command(flatten)]
        capacity: SimCapacity,
        #[command(flatten)]
        pace: SimPace,
        /// Also write a clouds.yaml of the simulator's second project (`team-b`) here.
        #[arg(long = "team-clouds")]
        team_clouds: Option<PathBuf>,
        #[command(flatten)]
        tenants: SimTenants,
    },
    /// List the cloud resources of this cluster whose owner object is gone (servers,
    /// server groups, load balancers, floating IPs), and with --delete remove them.
    Orphans(OrphansArgs),
    /// Write the CustomResourceDefinitions (to stdout, or one file per kind with --out).
    Crdgen {
        /// Directory to write `<group>_<plural>.yaml` files into.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// How big the simulated cloud is: enough for a fleet-size benchmark when raised.
#[cfg(feature = "embedded-sim")]
#[derive(Args, Clone, Copy)]
struct SimCapacity {
    /// Nova `instances` quota of the simulated project.
    #[arg(
        long = "sim-instance-quota",
        env = "VERDA_SIM_INSTANCE_QUOTA",
        default_value_t = 100,
        value_parser = clap::value_parser!(u32).range(0..=10_000_000)
    )]
    instance_quota: u32,
    /// Hypervisor hosts the simulated scheduler places servers on.
    #[arg(long = "sim-hosts", env = "VERDA_SIM_HOSTS", default_value_t = 3,
          value_parser = clap::value_parser!(u16).range(1..=10_000))]
    hosts: u16,
}

#[cfg(feature = "embedded-sim")]
impl SimCapacity {
    fn apply(self, config: SimConfig) -> SimConfig {
        SimConfig {
            instance_quota: self.instance_quota as usize,
            hosts: self.hosts.into(),
            ..config
        }
    }
}

/// Projects of the simulated cloud beyond the two seeded ones, for a shared cluster
/// where every namespace has a project of its own.
#[cfg(feature = "embedded-sim")]
#[derive(Args, Clone)]
struct SimTenants {
    /// How many (`tenant-1`, `tenant-2`, ...), each with its own user and networks.
    #[arg(long = "sim-tenants", default_value_t = 0,
          value_parser = clap::value_parser!(u16).range(0..=1000))]
    count: u16,
    /// Write one clouds.yaml per tenant (`tenant-1.yaml`, ...) into this directory.
    #[arg(long = "tenant-clouds")]
    clouds: Option<PathBuf>,
}

/// How fast the simulated cloud answers, for benchmarks at a real cloud's pace.
#[cfg(feature = "embedded-sim")]
#[derive(Args, Clone, Copy)]
struct SimPace {
    /// Seconds a server stays in BUILD, when not --delay.
    #[arg(long = "sim-build-delay", value_parser = parse_seconds)]
    build_delay: Option<Duration>,
    /// Seconds every request takes before it is answered.
    #[arg(long = "sim-latency", default_value = "0s", value_parser = parse_seconds)]
    latency: Duration,
}

#[derive(Args)]
struct OrphansArgs {
    /// Delete what is listed (after printing it).
    #[arg(long)]
    delete: bool,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "table")]
    output: OutputFormat,
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, or the in-cluster account).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use.
    #[arg(long)]
    context: Option<String>,
    /// Operator configuration file (for clusterName).
    #[arg(long, env = "VERDA_CONFIG")]
    config: Option<PathBuf>,
    /// OpenStack cloud whose project is inspected: the clouds.yaml entry (default: OS_CLOUD).
    #[arg(long, env = "OS_CLOUD")]
    cloud: Option<String>,
    /// clouds.yaml to read (default: OS_CLIENT_CONFIG_FILE and the standard places).
    #[arg(long, env = "OS_CLIENT_CONFIG_FILE")]
    clouds_file: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OutputFormat {
    Table,
    Json,
}

#[derive(Args)]
struct RunArgs {
    /// Kubeconfig file (default: KUBECONFIG, ~/.kube/config, or the in-cluster account).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use.
    #[arg(long)]
    context: Option<String>,
    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "VERDA_LISTEN", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,
    /// Operator configuration file (cloud layout; see docs/src/configuration.md).
    #[arg(long, env = "VERDA_CONFIG")]
    config: Option<PathBuf>,
    /// Log format.
    #[arg(long, env = "VERDA_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: telemetry::LogFormat,
    /// Watch only this namespace (default: every namespace).
    #[arg(long, env = "VERDA_WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// Hold a leader-election Lease before running the controllers, so that of several
    /// replicas only one acts (default: on inside a cluster, off outside one).
    #[arg(long, env = "VERDA_LEADER_ELECT", num_args = 0..=1, default_missing_value = "true")]
    leader_elect: Option<bool>,
    /// Run as one of several active shards that divide the namespaces among themselves
    /// through Leases in --lease-namespace, --lease-name naming the ring (instead of one
    /// leader doing all). Preview.
    #[arg(long, env = "VERDA_SHARDS", num_args = 0..=1, default_missing_value = "true", conflicts_with = "namespace")]
    shards: Option<bool>,
    /// With --shards: divide only the namespaces with these labels (a label selector).
    #[arg(long, env = "VERDA_SHARD_NAMESPACE_SELECTOR")]
    shard_namespace_selector: Option<String>,
    /// Namespace of the leader-election Lease (default: the pod's namespace).
    #[arg(long, env = "POD_NAMESPACE", default_value = "verda-system")]
    lease_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "verda-operator-leader")]
    lease_name: String,
    /// This replica's identity in the Lease (default: the host name plus a random suffix).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// OpenStack cloud: the clouds.yaml entry to use (default: OS_CLOUD). With no cloud
    /// configured anywhere, the embedded simulator is started.
    #[arg(long, env = "OS_CLOUD")]
    cloud: Option<String>,
    /// clouds.yaml to read (default: OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
    /// ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml).
    #[arg(long, env = "OS_CLIENT_CONFIG_FILE")]
    clouds_file: Option<PathBuf>,
    /// How long a Lease stays valid without renewal, e.g. 15s.
    #[arg(long, default_value = "15s", value_parser = |s: &str| config::duration::LEASE_DURATION.parse(s))]
    lease_duration: Duration,
    /// Threads that run the operator. One is what a replica needs (it mostly waits on
    /// the API server and the cloud) and holds the least memory; more for one that keeps
    /// a core busy.
    #[arg(long, env = "VERDA_WORKER_THREADS", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    worker_threads: u16,
    /// The embedded simulator's size (used only when no cloud is configured).
    #[cfg(feature = "embedded-sim")]
    #[command(flatten)]
    sim: SimCapacity,
}

/// The async runtime of `threads` threads: one runs every task on the calling thread
/// (each thread more holds allocator pages and a stack of its own).
fn runtime(threads: u16) -> Result<tokio::runtime::Runtime, String> {
    let mut builder = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(n.into());
            builder
        }
    };
    builder
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

fn main() -> ExitCode {
    telemetry::exit_on_panic();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // One clear line, not clap's usage block: `--help` shows the rest.
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            eprintln!("{first} (see verda-operator --help)");
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let result = match cli.command {
        Command::Crdgen { out } => write_crds(out),
        Command::Run(args) => run_operator(*args),
        Command::Orphans(args) => orphans(args),
        #[cfg(feature = "embedded-sim")]
        Command::Simulate {
            listen,
            delay,
            capacity,
            pace,
            team_clouds,
            tenants,
        } => simulate(listen, delay, (capacity, pace), (team_clouds, tenants)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn write_crds(out: Option<PathBuf>) -> Result<(), String> {
    match out {
        Some(dir) => {
            for path in crdgen::write_all(&dir).map_err(|e| e.to_string())? {
                println!("wrote {path}");
            }
        }
        None => print!("{}", crdgen::render_all().map_err(|e| e.to_string())?),
    }
    Ok(())
}

fn run_operator(args: RunArgs) -> Result<(), String> {
    telemetry::init(args.log_format);
    let options = run::RunOptions {
        kubeconfig: args.kubeconfig,
        context: args.context,
        listen: args.listen,
        config: args.config,
        namespace: args.namespace,
        leader_elect: args.leader_elect.unwrap_or_else(in_cluster),
        shards: args.shards.unwrap_or(false),
        shard_namespace_selector: args.shard_namespace_selector,
        lease_namespace: args.lease_namespace,
        lease_name: args.lease_name,
        identity: args.identity.unwrap_or_else(default_identity),
        lease_duration: args.lease_duration,
        cloud: CloudSelection {
            cloud: args.cloud,
            config_file: args.clouds_file,
        },
        #[cfg(feature = "embedded-sim")]
        embedded_simulator: args.sim.apply(SimConfig::default()),
        #[cfg(not(feature = "embedded-sim"))]
        embedded_simulator: Default::default(),
    };
    runtime(args.worker_threads)?
        .block_on(run::run(options))
        .map_err(|e| e.to_string())
}

fn orphans(args: OrphansArgs) -> Result<(), String> {
    let options = verda_operator::orphans::command::OrphansOptions {
        kubeconfig: args.kubeconfig,
        context: args.context,
        config: args.config,
        cloud: CloudSelection {
            cloud: args.cloud,
            config_file: args.clouds_file,
        },
        delete: args.delete,
        json: matches!(args.output, OutputFormat::Json),
    };
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime
        .block_on(verda_operator::orphans::command::run(options))
        .map_err(|e| e.to_string())
}

#[cfg(feature = "embedded-sim")]
fn simulate(
    listen: SocketAddr,
    delay: Duration,
    (capacity, pace): (SimCapacity, SimPace),
    (team_clouds, tenants): (Option<PathBuf>, SimTenants),
) -> Result<(), String> {
    telemetry::init(telemetry::LogFormat::Text);
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let config = capacity.apply(SimConfig {
            build_delay: pace.build_delay.unwrap_or(delay),
            lb_delay: delay,
            latency: pace.latency,
            tenants: tenants.count.into(),
            ..SimConfig::default()
        });
        let sim = Simulator::start_on(listen, config)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        println!(
            "# OpenStack simulator on http://{}; save as clouds.yaml and use OS_CLOUD=verda-sim",
            sim.addr()
        );
        let write = |path: &std::path::Path, credentials: &SimCredentials| {
            std::fs::write(path, sim.clouds_yaml_of(credentials))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        };
        if let Some(path) = &team_clouds {
            write(path, &sim.team_credentials())?;
        }
        if let Some(dir) = &tenants.clouds {
            for tenant in sim.tenant_credentials() {
                write(&dir.join(format!("{}.yaml", tenant.project_name)), tenant)?;
            }
        }
        print!("{}", sim.clouds_yaml());
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| format!("cannot wait for Ctrl-C: {e}"))
    })
}

/// `1.5s`, `200ms` or a bare number of seconds, at most an hour (a simulated delay).
#[cfg(feature = "embedded-sim")]
fn parse_seconds(text: &str) -> Result<Duration, String> {
    const MAX_SECONDS: f64 = 3600.0;
    let (number, scale) = if let Some(ms) = text.strip_suffix("ms") {
        (ms, 0.001)
    } else {
        (text.strip_suffix('s').unwrap_or(text), 1.0)
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| n * scale)
        .filter(|n| (0.0..=MAX_SECONDS).contains(n))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("invalid delay {text:?}: use 0s to 1h, e.g. 1.5s or 200ms"))
}

/// Whether this process runs in a Kubernetes Pod (the kubelet sets this variable).
fn in_cluster() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// Host name plus a random suffix, so two replicas on one host still differ.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "verda-operator".to_owned());
    format!("{host}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}
