//! Helpers for the simulator's HTTP tests: start a simulator, get a token, and send
//! requests with the headers real clients send.
#![allow(dead_code, clippy::unwrap_used)]

use reqwest::{Method, RequestBuilder, Response};
use serde_json::{Value, json};
use verda_operator::sim::{SimConfig, SimCredentials, Simulator};

pub struct Client {
    pub sim: Simulator,
    pub http: reqwest::Client,
    pub token: String,
    pub base: String,
}

pub fn password_auth() -> Value {
    json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"name": "demo", "domain": {"name": "Default"}, "password": "verda-sim-password"}}},
        "scope": {"project": {"name": "demo", "domain": {"name": "Default"}}}
    }})
}

/// A token request with the application credential of identity `c` (no scope: the
/// credential's project is the token's).
pub fn app_cred_auth(c: &SimCredentials) -> Value {
    json!({"auth": {"identity": {"methods": ["application_credential"],
        "application_credential": {"id": c.application_credential_id,
                                   "secret": c.application_credential_secret}}}})
}

pub async fn issue_token(http: &reqwest::Client, sim: &Simulator) -> String {
    issue_token_with(http, sim, &password_auth()).await.0
}

/// A token issued for the request `auth` (which must succeed), and its body.
pub async fn issue_token_with(
    http: &reqwest::Client,
    sim: &Simulator,
    auth: &Value,
) -> (String, Value) {
    let resp = http
        .post(format!("{}/auth/tokens", sim.auth_url()))
        .json(auth)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let token = resp.headers()["x-subject-token"]
        .to_str()
        .unwrap()
        .to_string();
    (token, json_of(resp).await)
}

impl Client {
    pub async fn start(config: SimConfig) -> Client {
        let sim = Simulator::start(config).await.unwrap();
        let http = reqwest::Client::new();
        let token = issue_token(&http, &sim).await;
        let base = format!("http://{}", sim.addr());
        Client {
            sim,
            http,
            token,
            base,
        }
    }

    pub async fn fast() -> Client {
        Client::start(SimConfig::fast()).await
    }

    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .header("x-auth-token", &self.token)
            .header("accept", "application/json")
    }

    /// A Nova request at microversion 2.`minor`.
    pub fn nova(&self, method: Method, path: &str, minor: u32) -> RequestBuilder {
        self.req(method, &format!("/compute/v2.1{path}"))
            .header("openstack-api-version", format!("compute 2.{minor}"))
    }

    pub async fn create_server(&self, name: &str, extra: Value) -> String {
        let mut server = json!({"name": name, "imageRef": "244965c2-7e98-469d-b7cc-fe423698200a", "flavorRef": "10",
            "networks": [{"uuid": "89908bff-e0fe-45be-b92d-5828f5ddc763"}]});
        let mut body = json!({});
        if let Some(hints) = extra.get("os:scheduler_hints") {
            body["os:scheduler_hints"] = hints.clone();
        }
        for (k, v) in extra.as_object().unwrap() {
            if k != "os:scheduler_hints" {
                server[k] = v.clone();
            }
        }
        body["server"] = server;
        let resp = self
            .nova(Method::POST, "/servers", 64)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202, "create {name}");
        json_of(resp).await["server"]["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Polls a Nova server until its status is not `BUILD`/`RESIZE` (bounded).
    pub async fn wait_server(&self, id: &str) -> Value {
        for _ in 0..200 {
            let v = json_of(
                self.nova(Method::GET, &format!("/servers/{id}"), 64)
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            let task = v["server"]["OS-EXT-STS:task_state"].as_str();
            let powering = task.is_some_and(|t| t.starts_with("powering"));
            if !powering
                && !matches!(
                    v["server"]["status"].as_str(),
                    Some("BUILD") | Some("RESIZE")
                )
            {
                return v["server"].clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("server {id} did not settle");
    }
}

pub async fn json_of(resp: Response) -> Value {
    resp.json().await.unwrap()
}
