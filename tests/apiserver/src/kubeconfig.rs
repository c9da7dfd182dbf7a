//! A kubeconfig pointing at the test server (plain HTTP on loopback, no credentials), for separate processes
//! such as `kubectl` or the `verda-operator` binary.

use std::path::Path;

/// The kubeconfig text for `server_url` with `namespace` as the context's default namespace.
pub fn render(server_url: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: verda-test
  cluster:
    server: {server_url}
contexts:
- name: verda-test
  context:
    cluster: verda-test
    user: verda-test
    namespace: {namespace}
current-context: verda-test
users:
- name: verda-test
  user: {{}}
"
    )
}

pub fn write(path: &Path, server_url: &str, namespace: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, render(server_url, namespace))
}
