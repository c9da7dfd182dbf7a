//! Logging: `tracing` to stderr, as text for people or JSON for log pipelines.
//!
//! The filter comes from `RUST_LOG` (default `info`). Nothing here decides what is
//! logged; call sites never log secrets, tokens or init scripts.

use tracing_subscriber::EnvFilter;

/// `info`, without kube's per-request error lines and its watcher's warnings (a debug
/// dump of each 403, once per retry): the operator reports each failure once, with its
/// context.
const DEFAULT_FILTER: &str = "info,kube_client::client::builder=off,kube_runtime::watcher=error";

/// Output format of the log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Installs the global subscriber. Safe to call once per process.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // A second initialisation (tests) keeps the first subscriber.
    drop(result);
}

/// The exit status of a process stopped by a panic (EX_SOFTWARE).
pub const PANIC_EXIT_CODE: i32 = 70;

/// Makes a panic anywhere (any task, any thread) stop the process with one `error:`
/// line. A replica whose controller or Lease task died would otherwise run on looking
/// alive and doing nothing; stopped, its Deployment starts it again.
pub fn exit_on_panic() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_owned());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "error: internal fault{place}: {what}; the process stops so that it is started afresh"
        );
        std::process::exit(PANIC_EXIT_CODE);
    }));
}
