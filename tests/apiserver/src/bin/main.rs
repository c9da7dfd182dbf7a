//! `verda-test-apiserver --kubeconfig PATH`: serves the test Kubernetes API server until interrupted and
//! writes a kubeconfig for it, so kubectl or the operator binary can use it.

use std::path::PathBuf;

use clap::Parser;
use verda_test_apiserver::ApiServer;

#[derive(Parser, Debug)]
#[command(about = "In-process Kubernetes API server for verda-operator tests")]
struct Args {
    /// Where to write the kubeconfig of the running server.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Directory of CRD YAML files (default: the repository's config/crd/bases).
    #[arg(long)]
    crd_dir: Option<PathBuf>,
    /// Changes the watch history keeps before older resourceVersions (and continue
    /// tokens) answer 410 Expired: raise it for fleets of many thousand objects, as a
    /// real API server's watch cache and compaction interval would allow.
    #[arg(long, default_value_t = 10_000)]
    history_limit: usize,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut builder = ApiServer::builder().history_limit(args.history_limit);
    if let Some(d) = args.crd_dir {
        builder = builder.crd_dir(d);
    }
    let server = builder.start().await?;
    server.write_kubeconfig(&args.kubeconfig)?;
    eprintln!(
        "serving on {} (kubeconfig: {})",
        server.url(),
        args.kubeconfig.display()
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}
