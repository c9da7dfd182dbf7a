//! The choke point: every HTTP request to the cloud, Keystone included, goes through
//! [`Transport::send`]. Here and only here: the Keystone token (fetched lazily, renewed
//! before expiry, renewed once after a 401 without failing the caller), the concurrency
//! cap per cloud (a semaphore held only while a request is on the wire, not while backing
//! off), retries with backoff and jitter under the rules of `retry.rs`, Retry-After, Nova
//! microversion headers, and the Prometheus metrics (`verda_cloud_requests` per attempt
//! with its status code, `verda_cloud_request_duration_seconds` per call, retries
//! included).
//!
//! Secrets: the token travels only in a header marked sensitive; logs carry service,
//! operation, method, path and status, never headers or bodies. Not here: what a body
//! means (the verb modules) or how an error body reads (`error_body.rs`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue, USER_AGENT};
use http::{Method, StatusCode};
use tokio::sync::{Mutex, RwLock, Semaphore};
use tokio::time::Instant;
use tracing::{debug, warn};
use url::Url;

use super::auth::{self, Service, Token};
use super::budget::{Budget, Budgets};
use super::config::CloudConfig;
use super::error::ErrorKind;
use super::error_body;
use super::http_clients::{self, HttpClient, NoAnswer};
use super::proxy::Proxies;
pub(crate) use super::request::{Reply, Request};
use super::retry::{Failure, RetryPolicy, is_retryable};
use crate::lock::Lock;
use crate::metrics::{CloudOperationLabels, CloudRequestLabels, Metrics, ServiceLabels};

/// Nova microversion for every compute call: tags filter (2.26), tags at create (2.52),
/// server group `policy` (2.64), description (2.19), a boot volume's type (2.67).
pub(crate) const NOVA_MICROVERSION: &str = "2.67";
/// Cinder microversion for every block storage call: extending an attached volume (3.42).
pub(crate) const CINDER_MICROVERSION: &str = "3.42";
/// Wait before renewing a token a second time: long enough that the next token is
/// issued in a later whole second than the revocation that refused the last one.
const REVOCATION_SECOND: Duration = Duration::from_millis(1100);

/// Tuning of one cloud connection.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub retry: RetryPolicy,
    /// Requests on the wire at once, across all regions of the cloud.
    pub max_concurrency: usize,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// How long a name lookup (image, flavor, network, subnet, Octavia flavor) is
    /// remembered; zero asks the cloud every time.
    pub lookup_lifetime: Duration,
    /// The request budgets of the projects, shared by every client of the operator;
    /// `None` sends as fast as the concurrency cap allows.
    pub budgets: Option<Arc<Budgets>>,
    /// The proxies of the cloud's requests; `None`: those the environment names
    /// (`HTTPS_PROXY`, `NO_PROXY` and the like), read as each connection is made.
    pub proxies: Option<Proxies>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            max_concurrency: 16,
            request_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            lookup_lifetime: Duration::from_secs(300),
            budgets: None,
            proxies: None,
        }
    }
}

pub(crate) struct Transport {
    http: HttpClient,
    config: CloudConfig,
    token_url: String,
    token: RwLock<Option<Arc<Token>>>,
    /// Serializes renewals; holds the generation of the last token fetched.
    renew: Mutex<u64>,
    /// When the latest revocation's second seen passes: a renewed token was refused, so
    /// a revocation fell in the last [`REVOCATION_SECOND`], and a token another task
    /// asked for in that second would be refused too.
    revocation_passes: Lock<Option<Instant>>,
    permits: Semaphore,
    budgets: Option<Arc<Budgets>>,
    metrics: Arc<Metrics>,
    retry: RetryPolicy,
    /// The project of the first token: credentials never change project.
    project: std::sync::OnceLock<String>,
}

impl Transport {
    pub fn new(
        config: CloudConfig,
        metrics: Arc<Metrics>,
        options: &ClientOptions,
    ) -> Result<Self, ErrorKind> {
        let mut roots = Vec::new();
        if let Some(path) = &config.tls.cacert {
            let pem = std::fs::read(path).map_err(|e| ErrorKind::Config {
                message: format!("cannot read cacert {}: {e}", path.display()),
            })?;
            roots.push((format!("cacert {}", path.display()), pem));
        }
        if let Some(pem) = &config.tls.ca_bundle {
            roots.push((
                "the cacert key of the credentials Secret".to_owned(),
                pem.clone(),
            ));
        }
        if config.tls.insecure {
            warn!(cloud = %config.name, "TLS certificate verification is disabled (verify: false)");
        }
        let http = http_clients::client(&http_clients::Settings {
            roots,
            insecure: config.tls.insecure,
            request_timeout: options.request_timeout,
            connect_timeout: options.connect_timeout,
            proxies: options.proxies.clone().unwrap_or_else(Proxies::from_env),
        })?;
        Ok(Self {
            http,
            token_url: auth::token_url(&config),
            config,
            token: RwLock::new(None),
            renew: Mutex::new(0),
            revocation_passes: Lock::default(),
            permits: Semaphore::new(options.max_concurrency.max(1)),
            budgets: options.budgets.clone(),
            metrics,
            retry: options.retry,
            project: std::sync::OnceLock::new(),
        })
    }

    pub fn config(&self) -> &CloudConfig {
        &self.config
    }

    /// Send one call with retries; records the per-call duration.
    pub async fn send(&self, region: Option<&str>, req: &Request) -> Result<Reply, ErrorKind> {
        let started = Instant::now();
        let result = self.run(region, req, started).await;
        self.observe(req, started);
        result
    }

    fn observe(&self, req: &Request, started: Instant) {
        let labels = CloudOperationLabels {
            service: req.service.label(),
            operation: req.operation,
        };
        self.metrics
            .cloud_request_duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
    }

    async fn run(
        &self,
        region: Option<&str>,
        req: &Request,
        started: Instant,
    ) -> Result<Reply, ErrorKind> {
        let mut attempt = 0;
        let mut renewals = 0;
        loop {
            attempt += 1;
            let (url, token) = if req.service == Service::Identity {
                (self.token_url.clone(), None)
            } else {
                let token = self.token().await?;
                let base = token.endpoint(req.service, self.config.interface, region)?;
                (format!("{base}{}", req.path), Some(token))
            };
            let request = http_request(req, &url, token.as_deref())?;
            let (failure, kind) = match self.exchange(req, request).await {
                Ok(reply) if reply.status.is_success() => return Ok(reply),
                Ok(reply) if reply.status == StatusCode::UNAUTHORIZED && renewals < 2 => {
                    if let Some(stale) = &token {
                        // Revoked or expired early: renew, transparently. A renewed token
                        // refused too was issued in the second of a revocation (a password
                        // change): Keystone compares whole seconds, so the next second's
                        // token is good. Every task refused so waits for the latest such
                        // second to pass, then one of them renews for all.
                        if renewals == 1 {
                            self.wait_for_revocation_to_pass().await;
                        }
                        renewals += 1;
                        attempt -= 1;
                        self.invalidate(stale).await;
                        continue;
                    }
                    let kind = error_body::classify(reply.status, &reply.headers, &reply.body);
                    (Failure::Status(401), kind)
                }
                Ok(reply) => {
                    let kind = error_body::classify(reply.status, &reply.headers, &reply.body);
                    (Failure::Status(reply.status.as_u16()), kind)
                }
                Err(e) => transport_failure(e),
            };
            let Some(wait) = self.retry_wait(req, attempt, started, failure, &kind) else {
                return Err(kind);
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// How long to wait before attempt `attempt + 1` after `failure`; `None` when the
    /// request must not be retried (not idempotent, or the retry budget is spent).
    fn retry_wait(
        &self,
        req: &Request,
        attempt: u32,
        started: Instant,
        failure: Failure,
        kind: &ErrorKind,
    ) -> Option<Duration> {
        if !is_retryable(&req.method, req.idempotent, failure) {
            return None;
        }
        let retry_after = match kind {
            ErrorKind::RateLimited { retry_after, .. }
            | ErrorKind::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        };
        // The cloud said how long to hold off: the whole project holds off.
        if let (ErrorKind::RateLimited { .. }, Some(pause), Some(budget)) =
            (kind, retry_after, self.budget())
        {
            budget.pause(pause);
        }
        let jitter: f64 = rand::random();
        let wait = self
            .retry
            .next_delay(attempt, started.elapsed(), retry_after, jitter)?;
        warn!(
            service = req.service.label(),
            operation = req.operation,
            attempt,
            wait_ms = wait.as_millis() as u64,
            failure = ?failure,
            "retrying cloud request"
        );
        Some(wait)
    }

    /// The budget of the project this cloud connection acts in (named by the cloud
    /// until the first token says which project it is).
    fn budget(&self) -> Option<Arc<Budget>> {
        let budgets = self.budgets.as_ref()?;
        Some(match self.project.get() {
            Some(project) => budgets.of(project),
            None => budgets.of(&format!("cloud {}", self.config.name)),
        })
    }

    /// Waits for the project's request budget (writes first), then counts the wait.
    async fn spend_budget(&self, req: &Request) {
        let Some(budget) = self.budget() else {
            return;
        };
        let waited = budget.acquire(req.is_write()).await;
        self.metrics
            .cloud_request_wait
            .get_or_create(&ServiceLabels {
                service: req.service.label(),
            })
            .observe(waited.as_secs_f64());
    }

    /// One HTTP exchange within the project's budget, under a concurrency permit;
    /// counts it in the metrics.
    async fn exchange(
        &self,
        req: &Request,
        request: http::Request<Bytes>,
    ) -> Result<Reply, NoAnswer> {
        self.spend_budget(req).await;
        // The semaphore is never closed; without a permit we would still be correct.
        let _permit = self.permits.acquire().await.ok();
        let began = Instant::now();
        let write = req.is_write();
        if write {
            super::write_log::sent();
        }
        let result = self.http.send(request).await;
        if write {
            super::write_log::done();
        }
        self.record(req, &result, began);
        result
    }

    /// Logs the exchange and counts it, by code and by project.
    fn record(&self, req: &Request, result: &Result<Reply, NoAnswer>, began: Instant) {
        let code = match result {
            Ok(reply) => reply.status.as_u16().to_string(),
            Err(_) => "error".to_owned(),
        };
        debug!(
            service = req.service.label(),
            operation = req.operation,
            method = %req.method,
            path = %req.path,
            code = %code,
            elapsed_ms = began.elapsed().as_millis() as u64,
            "cloud request"
        );
        let labels = CloudRequestLabels {
            service: req.service.label(),
            operation: req.operation,
            code,
        };
        self.metrics.cloud_requests.get_or_create(&labels).inc();
        self.metrics
            .count_project_request(self.project.get().map(String::as_str), req.service.label());
    }

    /// The current token, authenticating when there is none or it is about to expire.
    async fn token(&self) -> Result<Arc<Token>, ErrorKind> {
        if let Some(t) = self.token.read().await.as_ref()
            && t.is_fresh(chrono::Utc::now())
        {
            return Ok(t.clone());
        }
        let mut generation = self.renew.lock().await;
        // Someone else may have renewed while we waited for the lock.
        if let Some(t) = self.token.read().await.as_ref()
            && t.is_fresh(chrono::Utc::now())
        {
            return Ok(t.clone());
        }
        let requested = Instant::now();
        let token = Arc::new(self.authenticate(*generation + 1, requested).await?);
        if let Some(project) = &token.project_id {
            let _ = self.project.set(project.clone());
        }
        *generation += 1;
        *self.token.write().await = Some(token.clone());
        Ok(token)
    }

    /// Marks a revocation as having fallen within the last [`REVOCATION_SECOND`], waits
    /// until the latest one so marked has passed, and forgets the current token if it
    /// was asked for before then: the first task to wake renews for all.
    async fn wait_for_revocation_to_pass(&self) {
        let mut passes = {
            let mut latest = self.revocation_passes.lock();
            let this = Instant::now() + REVOCATION_SECOND;
            let passes = latest.map_or(this, |known| known.max(this));
            *latest = Some(passes);
            passes
        };
        loop {
            tokio::time::sleep_until(passes).await;
            let latest = self.revocation_passes.lock().unwrap_or(passes);
            if latest <= passes {
                break;
            }
            passes = latest;
        }
        let mut current = self.token.write().await;
        if current.as_ref().is_some_and(|t| t.requested < passes) {
            *current = None;
        }
    }

    /// Forget `stale` unless another task already replaced it.
    async fn invalidate(&self, stale: &Token) {
        let mut current = self.token.write().await;
        if current
            .as_ref()
            .is_some_and(|t| t.generation == stale.generation)
        {
            *current = None;
        }
    }

    /// `POST /v3/auth/tokens` through the same retry loop (boxed: `run` calls back here).
    fn authenticate(
        &self,
        generation: u64,
        requested: Instant,
    ) -> futures::future::BoxFuture<'_, Result<Token, ErrorKind>> {
        Box::pin(async move {
            let req = Request::new(Service::Identity, "issue_token", Method::POST, "")
                .json(auth::token_request(&self.config))
                .idempotent();
            let reply = self.send(None, &req).await?;
            let subject = reply
                .headers
                .get("x-subject-token")
                .and_then(|v| v.to_str().ok());
            Token::from_response(subject, &reply.body, generation, requested)
        })
    }

    /// Authenticate now (start-up check); later calls reuse the token.
    pub async fn ensure_token(&self) -> Result<(), ErrorKind> {
        self.token().await.map(|_| ())
    }

    /// The ID of the project the token acts in (authenticating if need be).
    pub async fn project_id(&self) -> Result<String, ErrorKind> {
        let token = self.token().await?;
        token
            .project_id
            .clone()
            .ok_or_else(|| ErrorKind::InvalidResponse {
                message: "Keystone issued a token without a project: the credentials must be scoped to a project".into(),
            })
    }
}

/// The request with its headers: JSON, the token (marked sensitive: never logged),
/// Nova's and Cinder's microversions. One that cannot be made (a catalog's endpoint
/// that is no URL) is a configuration error, not retried.
fn http_request(
    req: &Request,
    url: &str,
    token: Option<&Token>,
) -> Result<http::Request<Bytes>, ErrorKind> {
    // Without the URL: an auth_url may carry user info.
    let unusable = |what: &str| ErrorKind::Config {
        message: format!(
            "cannot make the {} request {}: {what}",
            req.service.label(),
            req.operation
        ),
    };
    let mut url = Url::parse(url).map_err(|e| unusable(&format!("not a URL ({e})")))?;
    if !req.query.is_empty() {
        url.query_pairs_mut().extend_pairs(&req.query);
    }
    let mut builder = http::Request::builder()
        .method(req.method.clone())
        .uri(url.as_str())
        .header(ACCEPT, "application/json")
        .header(USER_AGENT, super::user_agent::header());
    if let Some(token) = token
        && let Ok(mut value) = HeaderValue::from_str(token.value())
    {
        value.set_sensitive(true);
        builder = builder.header("X-Auth-Token", value);
    }
    let microversion = match req.service {
        Service::Compute => Some(format!("compute {NOVA_MICROVERSION}")),
        Service::BlockStorage => Some(format!("volume {CINDER_MICROVERSION}")),
        _ => None,
    };
    if let Some(version) = microversion {
        builder = builder.header("OpenStack-API-Version", version);
    }
    let body = match &req.body {
        Some(body) => {
            builder = builder.header(CONTENT_TYPE, "application/json");
            Bytes::from(serde_json::to_vec(body).map_err(|e| unusable(&e.to_string()))?)
        }
        None => Bytes::new(),
    };
    builder.body(body).map_err(|e| unusable(&e.to_string()))
}

fn transport_failure(e: NoAnswer) -> (Failure, ErrorKind) {
    let failure = match e.connect {
        true => Failure::Connect,
        false => Failure::NoResponse,
    };
    (
        failure,
        ErrorKind::Unavailable {
            status: None,
            retry_after: None,
            message: e.message,
        },
    )
}
