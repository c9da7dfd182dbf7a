//! An in-process Kubernetes API server for verda-operator's end-to-end tests.
//!
//! [`ApiServer::start`] serves our CRDs (from `config/crd/bases`) and the built-in kinds the operator uses on
//! `127.0.0.1` on a free port, over plain HTTP, in a few milliseconds, and stops when dropped. kube's client
//! talks to it like to a real cluster: CRUD with optimistic concurrency, list/watch with resourceVersions and
//! bookmarks, `/status` and `/scale`, merge/JSON patches and server-side apply, finalizers, ownerReference
//! garbage collection, schema validation and CEL rules. Responses follow real kube-apiserver recordings
//! (`kube-wire/`). It is a test double: no authentication, authorization, admission webhooks, conversion,
//! persistence or high availability. [`TestCluster`] picks it or a real cluster from the environment.

pub mod cluster;
pub mod discovery;
pub mod error;
pub mod events;
pub mod gc;
pub mod handlers;
pub mod kubeconfig;
pub mod ops;
pub mod patch;
pub mod registry;
pub mod selector;
pub mod state;
pub mod store;
pub mod table;
pub mod validation;
pub mod watch;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use serde_json::json;
use tokio::sync::{Notify, broadcast, watch as tokio_watch};

pub use cluster::TestCluster;
pub use error::StartError;
use registry::{Registry, ResourceType};
use state::{AppState, NAMESPACES, Options};
use store::Store;

/// Environment variable overriding the CRD directory of [`ApiServer::start`].
pub const CRD_DIR_ENV: &str = "VERDA_CRD_DIR";

/// Where the CRDs come from: `$VERDA_CRD_DIR`, else the repository's generated `config/crd/bases`.
pub fn default_crd_dir() -> PathBuf {
    match std::env::var_os(CRD_DIR_ENV) {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crd/bases"),
    }
}

/// Configures a server before starting it.
#[derive(Debug, Clone, Default)]
pub struct ApiServerBuilder {
    crd_dirs: Vec<PathBuf>,
    crd_yaml: Vec<String>,
    opts: Options,
}

impl ApiServerBuilder {
    /// Loads CRDs from `dir` instead of `config/crd/bases` (may be called several times).
    pub fn crd_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.crd_dirs.push(dir.into());
        self
    }

    /// Adds CRDs from YAML text (multi-document).
    pub fn crd_yaml(mut self, yaml: impl Into<String>) -> Self {
        self.crd_yaml.push(yaml.into());
        self
    }

    /// How many changes watches can resume from before older resourceVersions answer 410 Expired.
    pub fn history_limit(mut self, n: usize) -> Self {
        self.opts.history_limit = n;
        self
    }

    /// Period of BOOKMARK events on idle watches (default 60 s, like the watch cache).
    pub fn bookmark_interval(mut self, d: Duration) -> Self {
        self.opts.bookmark_interval = d;
        self
    }

    pub async fn start(self) -> Result<ApiServer, StartError> {
        let mut crds: Vec<ResourceType> = Vec::new();
        let dirs = if self.crd_dirs.is_empty() && self.crd_yaml.is_empty() {
            vec![default_crd_dir()]
        } else {
            self.crd_dirs
        };
        for d in &dirs {
            crds.extend(registry::load_crd_dir(d)?);
        }
        for y in &self.crd_yaml {
            crds.extend(
                registry::parse_crds(y).map_err(|message| StartError::ParseCrd {
                    path: "<inline>".into(),
                    message,
                })?,
            );
        }
        let registry = Registry::new(crds);
        let (tx, _) = broadcast::channel(16_384);
        let mut store = Store::new(self.opts.history_limit, tx);
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let obj = json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "uid": uuid::Uuid::new_v4().to_string(), "creationTimestamp": ops::now(), "labels": {"kubernetes.io/metadata.name": ns}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"},
            });
            store.put(NAMESPACES, "", ns, obj);
        }
        let (shutdown_tx, shutdown_rx) = tokio_watch::channel(false);
        let state = Arc::new(AppState {
            registry,
            store: Mutex::new(store),
            gc: Notify::new(),
            shutdown: shutdown_rx,
            opts: self.opts,
            denied: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(StartError::Bind)?;
        let addr = listener.local_addr().map_err(StartError::Bind)?;
        let app = Router::new()
            .fallback(handlers::dispatch)
            .with_state(state.clone());
        let mut stop = shutdown_tx.subscribe();
        let server = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stop.changed().await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::warn!(error = %e, "test apiserver stopped");
            }
        });
        let gc = tokio::spawn(gc::run(state.clone()));
        Ok(ApiServer {
            addr,
            state,
            shutdown: shutdown_tx,
            tasks: vec![server, gc],
        })
    }
}

/// A running server; dropping it stops it (open watches end).
pub struct ApiServer {
    addr: SocketAddr,
    state: Arc<AppState>,
    shutdown: tokio_watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl ApiServer {
    /// Starts a server with the CRDs of `config/crd/bases`.
    pub async fn start() -> Result<Self, StartError> {
        Self::builder().start().await
    }

    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client configuration for this server (default namespace `default`).
    pub fn config(&self) -> kube::Config {
        let uri = self.url().parse::<axum::http::Uri>().unwrap_or_default();
        let mut c = kube::Config::new(uri);
        c.default_namespace = "default".into();
        c
    }

    pub fn client(&self) -> Result<kube::Client, kube::Error> {
        kube::Client::try_from(self.config())
    }

    /// Writes a kubeconfig for this server (for kubectl or another process).
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        kubeconfig::write(path.as_ref(), &self.url(), "default")
    }

    /// The current cluster-wide resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state.lock().rv()
    }

    /// Refuses every read (get, list, watch) of `plural` in `namespace` with RBAC's 403,
    /// as for a client granted no Role there; `allow` lifts it.
    pub fn deny_reads(&self, plural: &str, namespace: &str) {
        let mut denied = self.state.denied.lock().unwrap_or_else(|e| e.into_inner());
        denied.insert((plural.to_owned(), namespace.to_owned()));
    }

    pub fn allow_reads(&self, plural: &str, namespace: &str) {
        let mut denied = self.state.denied.lock().unwrap_or_else(|e| e.into_inner());
        denied.remove(&(plural.to_owned(), namespace.to_owned()));
    }

    /// Forgets the watch history, as an etcd compaction: watches from older resourceVersions get 410 Expired.
    pub fn compact(&self) {
        self.state.lock().compact();
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for t in &self.tasks {
            t.abort();
        }
    }
}
