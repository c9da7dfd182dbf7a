//! The real-systems harness: a real kube-apiserver and real OpenStack, started by
//! `hack/real-systems.sh`, which passes where they are through `VERDA_REAL_*` variables.
//! The operator runs as its own binary, authenticated as the ServiceAccount that
//! `config/rbac` ships; the tests drive it with `kubectl` and look at (or break) the
//! cloud with the `openstack` CLI, as a user would (its commands run by one Python
//! process for the whole test binary: `support/openstack_cli.rs`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::collections::BTreeSet;

use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::cloud::ids::PoolId;
use verda_operator::cloud::model::compute::ServerStatus;
use verda_operator::cloud::model::loadbalancing::LbFilter;
use verda_operator::cloud::owner::{ClusterId, Owner};
use verda_operator::cloud::user_agent;
use verda_operator::cloud::{
    ClientOptions, CloudSelection, CloudSource, Compute, Environment, LoadBalancing,
    OpenStackClient, resolve,
};
use verda_operator::metrics::Metrics;

use super::openstack_cli;

/// Where the real systems are.
pub struct Real {
    pub operator_kubeconfig: PathBuf,
    pub admin_kubeconfig: PathBuf,
    pub clouds: PathBuf,
    pub openstack_cli: PathBuf,
    pub openstack_logs: PathBuf,
    /// How many Nova compute hosts there are (hard anti-affinity places one per host).
    pub compute_hosts: usize,
    /// The quoted user agent access logs show for this cluster's operator, once read.
    user_agent_end: std::sync::OnceLock<String>,
}

fn var(name: &str) -> PathBuf {
    std::env::var_os(name)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("{name} is not set: run these tests through hack/real-systems.sh")
        })
}

impl Real {
    pub fn from_env() -> Self {
        Self {
            operator_kubeconfig: var("VERDA_REAL_OPERATOR_KUBECONFIG"),
            admin_kubeconfig: var("VERDA_REAL_ADMIN_KUBECONFIG"),
            clouds: var("VERDA_REAL_CLOUDS"),
            openstack_cli: var("VERDA_REAL_OPENSTACK_CLI"),
            openstack_logs: var("VERDA_REAL_OPENSTACK_LOGS"),
            compute_hosts: var("VERDA_REAL_COMPUTE_HOSTS")
                .to_str()
                .and_then(|n| n.parse().ok())
                .expect("VERDA_REAL_COMPUTE_HOSTS is a number"),
            user_agent_end: std::sync::OnceLock::new(),
        }
    }

    /// A client for the cluster, as its administrator (to read what the operator wrote).
    pub async fn kube(&self) -> kube::Client {
        let kubeconfig = Kubeconfig::read_from(&self.admin_kubeconfig).expect("admin kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("kube config");
        kube::Client::try_from(config).expect("kube client")
    }

    /// Runs kubectl as the administrator; panics with its output when it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        self.kubectl_with_input(args, None)
    }

    pub fn kubectl_with_input(&self, args: &[&str], input: Option<&str>) -> String {
        let mut cmd = Command::new("kubectl");
        cmd.args(args).env("KUBECONFIG", &self.admin_kubeconfig);
        run(cmd, input, &format!("kubectl {}", args.join(" ")))
    }

    /// Runs `openstack ... -f json` as the demo project (or `osh-admin`), parsed.
    pub fn openstack(&self, cloud: &str, args: &[&str]) -> Value {
        let out = self.openstack_run(cloud, &[args, &["-f", "json"]].concat());
        serde_json::from_str(&out).unwrap_or(Value::Null)
    }

    /// Runs an `openstack` command that prints nothing (delete, set).
    pub fn openstack_do(&self, cloud: &str, args: &[&str]) {
        self.openstack_run(cloud, args);
    }

    /// The same as `cloud` of the clouds.yaml `clouds`.
    pub fn openstack_do_in(&self, clouds: &std::path::Path, cloud: &str, args: &[&str]) {
        self.openstack_run_in(clouds, cloud, args);
    }

    fn openstack_run(&self, cloud: &str, args: &[&str]) -> String {
        self.openstack_run_in(&self.clouds, cloud, args)
    }

    /// Runs `openstack ... -f json` as `cloud` of the clouds.yaml `clouds`, parsed.
    pub fn openstack_in(&self, clouds: &std::path::Path, cloud: &str, args: &[&str]) -> Value {
        let out = self.openstack_run_in(clouds, cloud, &[args, &["-f", "json"]].concat());
        serde_json::from_str(&out).unwrap_or(Value::Null)
    }

    fn openstack_run_in(&self, clouds: &std::path::Path, cloud: &str, args: &[&str]) -> String {
        self.openstack_try_in(clouds, cloud, args)
            .unwrap_or_else(|failed| panic!("openstack {} failed: {failed}", args.join(" ")))
    }

    /// Runs an `openstack` command as `cloud` of the demo project's clouds.yaml: its
    /// output, or what it printed on stderr when it failed.
    pub fn openstack_try(&self, cloud: &str, args: &[&str]) -> Result<String, String> {
        self.openstack_try_in(&self.clouds, cloud, args)
    }

    fn openstack_try_in(
        &self,
        clouds: &std::path::Path,
        cloud: &str,
        args: &[&str],
    ) -> Result<String, String> {
        let argv: Vec<&str> = ["--os-cloud", cloud].iter().chain(args).copied().collect();
        openstack_cli::run(&self.openstack_cli, clouds, &argv)
    }

    /// Our own OpenStack client on the demo project, for sampling faster than the CLI can.
    pub fn cloud(&self) -> OpenStackClient {
        self.cloud_in(&self.clouds, "osh-demo")
    }

    /// Our own OpenStack client as `cloud` of the clouds.yaml `clouds`.
    pub fn cloud_in(&self, clouds: &Path, cloud: &str) -> OpenStackClient {
        let selection = CloudSelection {
            cloud: Some(cloud.into()),
            config_file: Some(clouds.to_path_buf()),
        };
        let CloudSource::Configured(config) =
            resolve(&selection, &Environment::from_process()).expect("clouds.yaml")
        else {
            panic!("{cloud} is not in {}", clouds.display());
        };
        OpenStackClient::new(config, Metrics::new(), ClientOptions::default()).expect("client")
    }

    /// How an access log line of this build's requests from this cluster's operators
    /// ends: their user agent, quoted, which names the cluster by its `kube-system` UID
    /// (no test configures a `clusterName`). Tests run side by side against clusters of
    /// their own count only their own cluster's requests.
    fn user_agent_end(&self) -> &str {
        self.user_agent_end.get_or_init(|| {
            let uid = self.kubectl(&[
                "get",
                "namespace",
                "kube-system",
                "-o",
                "jsonpath={.metadata.uid}",
            ]);
            let cluster = ClusterId::new(uid.trim()).expect("the kube-system UID names a cluster");
            format!("\"{}\"", user_agent::of_cluster(&cluster))
        })
    }

    /// Requests the operator has made so far, counted from the services' access logs
    /// (every API logs one line per request with the caller's user agent).
    pub fn operator_requests(&self) -> usize {
        let end = self.user_agent_end();
        let mut total = 0;
        for entry in std::fs::read_dir(&self.openstack_logs).expect("log dir") {
            let path = entry.expect("entry").path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            total += text.lines().filter(|l| l.ends_with(end)).count();
        }
        total
    }

    /// Writes (POST, PUT, DELETE) the operator has sent to Octavia so far, from its
    /// access log.
    pub fn octavia_writes(&self) -> usize {
        self.octavia_requests_where(|l| !l.contains("\"GET "))
    }

    /// Requests (every method) the operator has sent to Octavia so far, from its access
    /// log.
    pub fn octavia_requests(&self) -> usize {
        self.octavia_requests_where(|_| true)
    }

    /// Writes the operator has sent to Barbican so far, from its access log.
    pub fn barbican_writes(&self) -> usize {
        self.requests_where("barbican-api.log", |l| !l.contains("\"GET "))
    }

    fn octavia_requests_where(&self, keep: impl Fn(&str) -> bool) -> usize {
        self.requests_where("octavia-api.log", keep)
    }

    /// The operator's lines of the access log `log` that `keep` keeps.
    fn requests_where(&self, log: &str, keep: impl Fn(&str) -> bool) -> usize {
        let end = self.user_agent_end();
        std::fs::read_to_string(self.openstack_logs.join(log))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.ends_with(end) && keep(l))
            .count()
    }

    /// Runs a one-shot `verda-operator` command (`orphans …`) as the operator's
    /// ServiceAccount on the demo project; panics with its output when it fails.
    pub fn operator_command(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_verda-operator"));
        cmd.args(args)
            .env("KUBECONFIG", &self.operator_kubeconfig)
            .env("OS_CLIENT_CONFIG_FILE", &self.clouds)
            .env("OS_CLOUD", "osh-demo")
            .env_remove("VERDA_CONFIG");
        run(cmd, None, &format!("verda-operator {}", args.join(" ")))
    }

    /// Starts the operator binary the way docs/src/installation.md runs it outside a cluster, plus `args`.
    pub fn operator(&self, name: &str, args: &[&str], config: Option<&str>) -> Operator {
        let binary = std::path::Path::new(env!("CARGO_BIN_EXE_verda-operator"));
        self.operator_binary(binary, name, args, config)
    }

    /// As [`Real::operator`], running `binary` (another release of the operator).
    pub fn operator_binary(
        &self,
        binary: &std::path::Path,
        name: &str,
        args: &[&str],
        config: Option<&str>,
    ) -> Operator {
        self.spawn(binary, name, args, config, &[])
    }

    /// As [`Real::operator`], with `env` set for it (e.g. `RUST_LOG`).
    pub fn operator_with_env(
        &self,
        name: &str,
        args: &[&str],
        config: Option<&str>,
        env: &[(&str, &str)],
    ) -> Operator {
        let binary = std::path::Path::new(env!("CARGO_BIN_EXE_verda-operator"));
        self.spawn(binary, name, args, config, env)
    }

    fn spawn(
        &self,
        binary: &std::path::Path,
        name: &str,
        args: &[&str],
        config: Option<&str>,
        env: &[(&str, &str)],
    ) -> Operator {
        let port = free_port();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("real-systems");
        std::fs::create_dir_all(&dir).expect("dir");
        let log_path = dir.join(format!("operator-{name}.log"));
        let log = std::fs::File::create(&log_path).expect("log file");
        let mut cmd = Command::new(binary);
        cmd.arg("run")
            .args(args)
            .env("KUBECONFIG", &self.operator_kubeconfig)
            .env("OS_CLIENT_CONFIG_FILE", &self.clouds)
            .env("OS_CLOUD", "osh-demo")
            .env("VERDA_LISTEN", format!("127.0.0.1:{port}"))
            .env_remove("VERDA_CONFIG")
            .env_remove("POD_NAMESPACE")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        if let Some(text) = config {
            let path = dir.join(format!("config-{name}.yaml"));
            std::fs::write(&path, text).expect("config");
            cmd.env("VERDA_CONFIG", path);
        }
        let child = cmd.spawn().expect("operator starts");
        Operator {
            child,
            log_path,
            metrics_port: port,
        }
    }
}

/// A running operator process; killed on drop.
pub struct Operator {
    child: Child,
    pub log_path: PathBuf,
    pub metrics_port: u16,
}

impl Operator {
    /// SIGKILL: no lease release, no cleanup, as a crashed node.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for the process to end.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The sum of the samples of `family` whose labels contain every one of `labels`
    /// (`key="value"`) on its `/metrics`; `None` while it serves no such sample.
    pub async fn metric(&self, family: &str, labels: &[&str]) -> Option<f64> {
        let url = format!("http://127.0.0.1:{}/metrics", self.metrics_port);
        let text = reqwest::get(url).await.ok()?.text().await.ok()?;
        let samples: Vec<f64> = text
            .lines()
            .filter(|l| {
                l.strip_prefix(family)
                    .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
            })
            .filter(|l| labels.iter().all(|want| l.contains(want)))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect();
        (!samples.is_empty()).then(|| samples.iter().sum())
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `sql` in Octavia's database (as root, through the harness's MariaDB socket): what
/// a health manager or an amphora would write, in a harness that runs neither.
pub fn octavia_sql(sql: &str) {
    let out = Command::new("mysql")
        .args([
            "--protocol=socket",
            "-S",
            "/opt/osharness/run/mysqld.sock",
            "-uroot",
            "octavia",
            "-e",
            sql,
        ])
        .output()
        .expect("mysql runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The messages of the namespace's events with `reason`, about `object` (any object when
/// `None`), as `kubectl get events -o json` lists them.
pub fn event_notes(real: &Real, ns: &Namespace, reason: &str, object: Option<&str>) -> Vec<String> {
    let events = real.kubectl(&["-n", &ns.name, "get", "events", "-o", "json"]);
    let events: Value = serde_json::from_str(&events).expect("events JSON");
    let items = events["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|e| e["reason"] == reason)
        .filter(|e| object.is_none_or(|o| e["involvedObject"]["name"] == o))
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect()
}

/// A port on 127.0.0.1 nothing listens on now, for a process started next to listen on.
///
/// It lies below the kernel's ephemeral range: a port from that range (what binding port 0
/// gives) can be taken by any outgoing connection's local end before the process binds it.
/// Each call in this process tries the next port, so two calls never hand out the same one.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOWEST: u32 = 10_000;
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral_low.saturating_sub(LOWEST).max(1_000);
    // test binaries run one after another: start each process somewhere else in the span
    let start = std::process::id().wrapping_mul(7_919) % span;
    (0..span)
        .map(|_| LOWEST + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok())
        .map(|port| port as u16)
        .expect("a free port below the ephemeral range")
}

fn run(mut cmd: Command, input: Option<&str>, what: &str) -> String {
    use std::io::Write;
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(text) = input {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Polls `check` every 500 ms until it gives `Some`, for at most `limit`; the panic
/// message names what was awaited and, through `context`, the operator's last log lines.
pub async fn until<T, F, Fut>(
    what: &str,
    limit: Duration,
    context: &dyn Fn() -> String,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if start.elapsed() > limit {
            panic!(
                "timed out after {limit:?} waiting until {what}\n{}",
                context()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The path of a published manifest (`../shared/verda-manifests/<file>`).
pub fn published(file: &str) -> String {
    super::crd_schema::repo_root()
        .join("../shared/verda-manifests")
        .join(file)
        .to_string_lossy()
        .into_owned()
}

/// The three published manifests: a VirtualMachine, a group, a LoadBalancer for it.
pub fn published_scenario() -> Vec<String> {
    [
        "virtualmachine.yaml",
        "virtualmachinegroup.yaml",
        "loadbalancer.yaml",
    ]
    .map(published)
    .to_vec()
}

/// The published group and the LoadBalancer drawing on it.
pub const PUBLISHED_GROUP: &str = "virtualmachinegroup-sample";
pub const PUBLISHED_LB: &str = "loadbalancer-sample";

/// Member addresses per port, as the LoadBalancer's status reports them.
pub async fn pool_members(api: &Api<LoadBalancer>) -> Option<Vec<BTreeSet<String>>> {
    let lb = api.get(PUBLISHED_LB).await.ok()?;
    let status = lb.status?;
    is_true(&status.conditions, READY).then_some(())?;
    Some(
        status
            .ports
            .iter()
            .map(|p| p.members.iter().map(|m| m.address.clone()).collect())
            .collect(),
    )
}

/// Addresses of the group's Ready VirtualMachines.
pub async fn group_addresses(
    api: &Api<VirtualMachine>,
    replicas: usize,
) -> Option<BTreeSet<String>> {
    let list = api.list(&Default::default()).await.ok()?;
    let ready: BTreeSet<String> = list
        .items
        .iter()
        .filter(|vm| {
            vm.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(PUBLISHED_GROUP))
        })
        .filter_map(|vm| {
            let s = vm.status.as_ref()?;
            is_true(&s.conditions, READY).then(|| s.primary_ip.clone())?
        })
        .collect();
    (ready.len() == replicas).then_some(ready)
}

/// Waits until every pool of the published LoadBalancer holds exactly the published
/// group's `replicas` Ready VirtualMachines.
pub async fn pools_hold_the_group(
    ns: &Namespace,
    client: &kube::Client,
    operator: &Operator,
    replicas: usize,
) -> Vec<BTreeSet<String>> {
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    until(
        &format!("every pool holds the group's {replicas} VirtualMachines"),
        Duration::from_secs(240),
        &context(operator),
        || async {
            let want = group_addresses(&vms, replicas).await?;
            let pools = pool_members(&lbs).await?;
            (pools.len() == 2 && pools.iter().all(|p| *p == want)).then_some(pools)
        },
    )
    .await
}

/// The operator's last log lines, for a timed-out wait to show.
pub fn context(operator: &Operator) -> impl Fn() -> String + '_ {
    move || format!("operator log (last lines):\n{}", tail(&operator.log(), 25))
}

/// The last `n` lines of a log.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A fresh namespace for one test; deleted (with what is left in it) on drop.
pub struct Namespace {
    pub name: String,
    real: Arc<Real>,
}

impl Namespace {
    /// `prefix` plus a random suffix, so a namespace an interrupted run left behind
    /// (stuck on finalizers) never blocks the next run.
    pub fn create(real: Arc<Real>, prefix: &str) -> Self {
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..5];
        let name = format!("{prefix}-{suffix}");
        real.kubectl(&["create", "namespace", &name]);
        Self { name, real }
    }

    pub fn api<K>(&self, client: kube::Client) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(client, &self.name)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("kubectl")
            .args(["delete", "namespace", &self.name, "--wait=false"])
            .env("KUBECONFIG", &self.real.admin_kubeconfig)
            .output();
    }
}

/// The clouds.yaml of the second project (`VERDA_REAL_TENANT_CLOUDS`).
pub fn tenant_clouds() -> PathBuf {
    std::env::var_os("VERDA_REAL_TENANT_CLOUDS")
        .map(PathBuf::from)
        .expect("VERDA_REAL_TENANT_CLOUDS is set: run through hack/real-systems.sh")
}

/// The second project's cloud by its application credential (`<project>-appcred` in
/// [`tenant_clouds`]: `team-b-appcred`, or lane b's `lane-b-team-appcred`).
pub fn tenant_appcred_cloud() -> String {
    let file = tenant_clouds();
    let text = std::fs::read_to_string(&file).expect("clouds.yaml");
    let root: serde_json::Value = serde_saphyr::from_str(&text).expect("YAML");
    root["clouds"]
        .as_object()
        .and_then(|clouds| clouds.keys().find(|name| name.ends_with("-appcred")))
        .cloned()
        .unwrap_or_else(|| panic!("an application credential's cloud in {}", file.display()))
}

/// A clouds.yaml holding only `cloud` of `file`, so a Secret needs no cloudName.
pub fn single_cloud(file: &Path, cloud: &str) -> String {
    use serde_json::{Map, Value};
    let text = std::fs::read_to_string(file).expect("clouds.yaml");
    let root: Value = serde_saphyr::from_str(&text).expect("YAML");
    let entry = root["clouds"][cloud].clone();
    assert!(!entry.is_null(), "{cloud} in {}", file.display());
    let mut clouds = Map::new();
    clouds.insert(cloud.to_owned(), entry);
    let mut top = Map::new();
    top.insert("clouds".to_owned(), Value::Object(clouds));
    serde_saphyr::to_string(&top).expect("YAML")
}

/// Creates or replaces the namespace's default Secret with `clouds_yaml`, as
/// `kubectl create secret … --dry-run=client -o yaml | kubectl apply -f -` does.
pub fn put_secret(real: &Real, ns: &str, clouds_yaml: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("real-systems");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(format!("clouds-{ns}.yaml"));
    std::fs::write(&path, clouds_yaml).expect("write");
    let from = format!("--from-file=clouds.yaml={}", path.display());
    let manifest = real.kubectl(&[
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "verda-cloud-credentials",
        &from,
        "--dry-run=client",
        "-o",
        "yaml",
    ]);
    std::fs::remove_file(&path).expect("remove");
    real.kubectl_with_input(&["-n", ns, "apply", "-f", "-"], Some(&manifest));
}

/// What the demo project holds: the IDs of its servers, server groups, load balancers
/// and floating IPs.
pub fn project_inventory(real: &Real) -> BTreeSet<String> {
    let ids = |what: &str, args: &[&str]| -> Vec<String> {
        real.openstack("osh-demo", args)
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| {
                        format!(
                            "{what} {}",
                            i["ID"].as_str().or(i["id"].as_str()).unwrap_or("?")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut all = BTreeSet::new();
    all.extend(ids("server", &["server", "list"]));
    all.extend(ids("server group", &["server", "group", "list"]));
    all.extend(ids("load balancer", &["loadbalancer", "list"]));
    all.extend(ids("floating IP", &["floating", "ip", "list"]));
    all
}

/// Deletes `objects` (kind, name) of `ns` one after the other, each waited for (their
/// cloud resources go with them), then checks the project is back to `baseline`.
pub fn delete_all(
    real: &Real,
    ns: &Namespace,
    objects: &[(&str, &str)],
    baseline: &BTreeSet<String>,
) {
    for (kind, name) in objects {
        real.kubectl(&[
            "-n",
            &ns.name,
            "delete",
            kind,
            name,
            "--wait=true",
            "--timeout=240s",
        ]);
    }
    nothing_left(real, baseline);
}

/// Nothing in the project that was not there before the test.
pub fn nothing_left(real: &Real, baseline: &BTreeSet<String>) {
    let left: Vec<String> = project_inventory(real)
        .difference(baseline)
        .cloned()
        .collect();
    assert!(left.is_empty(), "left in the project: {left:?}");
}

/// Deletes what `files` created and checks the project is back to `baseline`.
pub async fn all_deleted(
    real: &Real,
    client: &kube::Client,
    ns: &Namespace,
    operator: &Operator,
    files: &[String],
    baseline: BTreeSet<String>,
) {
    let mut args = vec!["-n", ns.name.as_str(), "delete", "--wait=false"];
    for f in files {
        args.extend(["-f", f.as_str()]);
    }
    real.kubectl(&args);
    let vms: Api<VirtualMachine> = ns.api(client.clone());
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    until(
        "every object is gone",
        Duration::from_secs(240),
        &context(operator),
        || async {
            let n = vms.list(&Default::default()).await.ok()?.items.len()
                + groups.list(&Default::default()).await.ok()?.items.len()
                + lbs.list(&Default::default()).await.ok()?.items.len();
            (n == 0).then_some(())
        },
    )
    .await;
    nothing_left(real, &baseline);
}

/// The state the published group and LoadBalancer in `ns` must reach at `replicas`
/// (in Kubernetes and in the cloud itself: Octavia's pools, no duplicate), or why it
/// has not yet.
pub async fn converged(
    real: &Real,
    client: &kube::Client,
    ns: &Namespace,
    replicas: u32,
) -> Result<(), String> {
    let groups: Api<VirtualMachineGroup> = ns.api(client.clone());
    let lbs: Api<LoadBalancer> = ns.api(client.clone());
    let group = groups
        .get(PUBLISHED_GROUP)
        .await
        .map_err(|e| e.to_string())?;
    let status = group.status.ok_or("group has no status")?;
    if status.ready_replicas != replicas as i32 || status.replicas != replicas as i32 {
        return Err(format!(
            "group: {}/{} ready",
            status.ready_replicas, status.replicas
        ));
    }
    let addresses = group_addresses(&ns.api(client.clone()), replicas as usize)
        .await
        .ok_or("not every VirtualMachine is Ready")?;
    let pools = pool_members(&lbs).await.ok_or("LoadBalancer not Ready")?;
    if pools.len() != 2 || pools.iter().any(|p| *p != addresses) {
        return Err(format!("status pools {pools:?}, group {addresses:?}"));
    }
    let cloud = real.cloud();
    let lb = lbs.get(PUBLISHED_LB).await.map_err(|e| e.to_string())?;
    for port in lb.status.ok_or("no status")?.ports {
        let pool = PoolId::from(port.pool_id.ok_or("no pool")?);
        let members = LoadBalancing::list_members(&cloud, &pool)
            .await
            .map_err(|e| e.to_string())?;
        let octavia: BTreeSet<String> = members.into_iter().map(|m| m.address).collect();
        if octavia != addresses {
            return Err(format!(
                "Octavia's pool {pool}: {octavia:?}, group {addresses:?}"
            ));
        }
    }
    no_duplicates(&cloud, ns, replicas).await
}

/// In the cloud: `replicas` ACTIVE servers of the namespace, one server group and one
/// load balancer.
pub async fn no_duplicates(
    cloud: &verda_operator::cloud::OpenStackClient,
    ns: &Namespace,
    replicas: u32,
) -> Result<(), String> {
    let servers: Vec<_> = cloud
        .list_managed_servers()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|s| Owner::from_metadata(&s.metadata).is_some_and(|o| o.namespace == ns.name))
        .collect();
    if servers.len() != replicas as usize
        || servers.iter().any(|s| s.status != ServerStatus::Active)
    {
        let seen: Vec<String> = servers
            .iter()
            .map(|s| format!("{} {:?}", s.name, s.status))
            .collect();
        return Err(format!("servers: {seen:?}"));
    }
    let groups = cloud
        .list_server_groups()
        .await
        .map_err(|e| e.to_string())?;
    let ours = groups.iter().filter(|g| g.name.contains(&ns.name)).count();
    let lbs = LoadBalancing::list_load_balancers(cloud, &LbFilter::default())
        .await
        .map_err(|e| e.to_string())?;
    let lbs = lbs.iter().filter(|l| l.name.contains(&ns.name)).count();
    if ours != 1 || lbs != 1 {
        return Err(format!("{ours} server groups, {lbs} load balancers"));
    }
    Ok(())
}

/// The PID of the real OpenStack service `name`, from the start script's pid file
/// (each service leads a process group of its own).
fn service_pid(name: &str) -> String {
    let dir = std::env::var_os("VERDA_REAL_OPENSTACK_PIDS")
        .map(PathBuf::from)
        .expect("VERDA_REAL_OPENSTACK_PIDS is set: run through hack/real-systems.sh");
    std::fs::read_to_string(dir.join(format!("{name}.pid")))
        .expect("the service's pid file")
        .trim()
        .to_owned()
}

/// Sends `signal` to the process group of the service `name`.
pub fn signal_service(name: &str, signal: &str) {
    let group = format!("-{}", service_pid(name));
    let _ = Command::new("kill").args([signal, "--", &group]).status();
}

/// Stops the service `name` (TERM, then KILL whatever is left of its group).
pub fn stop_service(name: &str) {
    let pid = service_pid(name);
    signal_service(name, "-TERM");
    let proc = PathBuf::from("/proc").join(&pid);
    for _ in 0..50 {
        if !proc.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    signal_service(name, "-KILL");
}

/// Starts what is not running, the way the real systems start (their start script
/// leaves running services alone and waits until every one answers).
pub fn start_services() {
    let script = std::env::var_os("VERDA_REAL_OPENSTACK_START")
        .expect("VERDA_REAL_OPENSTACK_START is set: run through hack/real-systems.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("the start script runs");
    assert!(
        out.status.success(),
        "the OpenStack start script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
