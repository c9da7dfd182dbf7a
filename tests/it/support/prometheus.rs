//! A real Prometheus (Debian's `prometheus`) on 127.0.0.1 scraping the operator, with
//! the rules we publish, and its HTTP API as the tests read it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running Prometheus; killed on drop.
pub struct Prometheus {
    child: Child,
    pub url: String,
    pub log_path: PathBuf,
    http: reqwest::Client,
}

/// The `spec.groups` of `config/prometheus/rules.yaml` (a PrometheusRule) as a plain
/// Prometheus rule file, every group evaluated every `interval`.
pub fn published_rules(interval: &str) -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/prometheus/rules.yaml");
    let text = std::fs::read_to_string(path).expect("config/prometheus/rules.yaml");
    let rule: Value = serde_saphyr::from_str(&text).expect("the PrometheusRule parses");
    let mut groups = rule["spec"]["groups"].clone();
    for group in groups.as_array_mut().expect("spec.groups is a list") {
        group["interval"] = Value::from(interval);
    }
    serde_json::json!({ "groups": groups })
}

impl Prometheus {
    /// Starts `binary` scraping `target` (host:port) every second, with `rules`.
    pub fn start(binary: &Path, target: &str, rules: &Value, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("prometheus dir");
        let rules_path = dir.join("rules.yaml");
        std::fs::write(&rules_path, serde_saphyr::to_string(rules).expect("yaml")).expect("rules");
        let config = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             rule_files: [{}]\n\
             scrape_configs:\n  - job_name: verda-operator\n    static_configs: [{{targets: ['{target}']}}]\n",
            rules_path.display()
        );
        let config_path = dir.join("prometheus.yml");
        std::fs::write(&config_path, config).expect("config");
        let port = super::real::free_port();
        let log_path = dir.join("prometheus.log");
        let log = std::fs::File::create(&log_path).expect("log");
        let data = dir.join("data");
        let _ = std::fs::remove_dir_all(&data);
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            log_path,
            http: reqwest::Client::new(),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Option<Value> {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .query(query)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .ok()?;
        let body: Value = response.json().await.ok()?;
        Some(body)
    }

    /// Waits (60 s at most) until Prometheus answers and has scraped the target.
    pub async fn wait_for_target(&self) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if let Ok(result) = self.query("up{job=\"verda-operator\"} == 1").await
                && !result.is_empty()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!(
            "Prometheus did not scrape the operator within 60 s:\n{}",
            self.log()
        );
    }

    /// An instant query: its result vector, or Prometheus's error (e.g. a parse error).
    pub async fn query(&self, promql: &str) -> Result<Vec<Value>, String> {
        let body = self
            .get("/api/v1/query", &[("query", promql)])
            .await
            .ok_or_else(|| "no answer from Prometheus".to_owned())?;
        if body["status"] != "success" {
            return Err(format!("{}: {}", body["errorType"], body["error"]));
        }
        Ok(body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// The alerts Prometheus holds now (pending and firing).
    pub async fn alerts(&self) -> Vec<Value> {
        self.get("/api/v1/alerts", &[])
            .await
            .and_then(|b| b["data"]["alerts"].as_array().cloned())
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `expr` of every target of every panel of a Grafana dashboard, with the panel's
/// title, Grafana's interval variables replaced by what fits a 1 s scrape.
pub fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut queries = Vec::new();
    let mut panels: Vec<&Value> = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    while let Some(panel) = panels.pop() {
        panels.extend(panel["panels"].as_array().into_iter().flatten());
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                let expr = expr
                    .replace("$__rate_interval", "15s")
                    .replace("$__interval", "5s")
                    .replace("$__range", "5m");
                queries.push((panel["title"].as_str().unwrap_or("?").to_owned(), expr));
            }
        }
    }
    queries
}
