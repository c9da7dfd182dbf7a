//! The `verda-operator` command: `run` the operator, `crdgen` the CRDs, `simulate` an
//! OpenStack cloud.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use verda_operator::cloud::CloudSelection;
use verda_operator::{config, crdgen, run, telemetry};

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
    /// Write the CustomResourceDefinitions (to stdout, or one file per kind with --out).
    Crdgen {
        /// Directory to write `<group>_<plural>.yaml` files into.
        #[arg(long)]
        out: Option<PathBuf>,
    },
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
    /// Operator configuration file (cloud layout; see the README).
    #[arg(long, env = "VERDA_CONFIG")]
    config: Option<PathBuf>,
    /// Log format.
    #[arg(long, env = "VERDA_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: telemetry::LogFormat,
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
    #[arg(long, default_value = "15s", value_parser = config::duration::parse)]
    lease_duration: Duration,
}

fn main() -> ExitCode {
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
        lease_namespace: args.lease_namespace,
        lease_name: args.lease_name,
        identity: args.identity.unwrap_or_else(default_identity),
        lease_duration: args.lease_duration,
        cloud: CloudSelection {
            cloud: args.cloud,
            config_file: args.clouds_file,
        },
    };
    let runtime = tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime
        .block_on(run::run(options))
        .map_err(|e| e.to_string())
}

/// Host name plus a random suffix, so two replicas on one host still differ.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "verda-operator".to_owned());
    format!("{host}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}
