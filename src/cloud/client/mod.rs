//! `OpenStackClient`: the real implementation of the service traits over the choke point.
//!
//! This module holds the client handle and the helpers every verb uses: send with an
//! action for the error message, unwrap a response's wrapper key, follow pagination
//! links, pick exactly one match for a name. The verbs live in one module per service or
//! Octavia sub-resource. We deliberately do not use the `openstack` crate: its calls go
//! through its own session, past our choke point (retries, metrics, concurrency cap,
//! microversions, token renewal after 401).

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::auth::Service;
use super::config::CloudConfig;
use super::error::{CloudError, ErrorKind, Resource};
use super::model::compute::Server;
use super::model::loadbalancing::LoadBalancer;
use super::services::CloudResult;
use super::transport::{ClientOptions, Reply, Request, Transport};
use crate::metrics::Metrics;

mod compute;
mod dns;
mod firewalls;
mod image;
mod key_manager;
mod lb_listener;
mod lb_loadbalancer;
mod lb_member;
mod lb_monitor;
mod lb_pool;
mod lookups;
mod network;
mod octavia;
mod owner_lookups;
mod page;
mod volume;

use lookups::{Kind, Lookups};
use page::{invalid, raw_fields};

/// Pagination guard: a cloud that keeps answering with "next" cannot loop us forever.
pub(crate) const MAX_PAGES: usize = 1000;

/// A connection to one cloud, optionally pinned to a region. Cheap to clone; clones share
/// the token, the concurrency cap and the metrics.
#[derive(Clone)]
pub struct OpenStackClient {
    transport: Arc<Transport>,
    lookups: Arc<Lookups>,
    server_lookups: Arc<owner_lookups::OwnerLookups<Server>>,
    load_balancer_lookups: Arc<owner_lookups::OwnerLookups<LoadBalancer>>,
    region: Option<String>,
}

impl fmt::Debug for OpenStackClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenStackClient")
            .field("cloud", &self.transport.config().name)
            .field("region", &self.region())
            .finish()
    }
}

impl OpenStackClient {
    /// No network traffic: Keystone is asked on the first call (or [`Self::authenticate`]).
    pub fn new(
        config: CloudConfig,
        metrics: Arc<Metrics>,
        options: ClientOptions,
    ) -> Result<Self, CloudError> {
        let name = config.name.clone();
        let transport = Transport::new(config, metrics, &options)
            .map_err(|k| CloudError::new(format!("connect to cloud {name}"), k))?;
        Ok(Self {
            transport: Arc::new(transport),
            lookups: Arc::new(Lookups::new(options.lookup_lifetime)),
            server_lookups: Arc::default(),
            load_balancer_lookups: Arc::default(),
            region: None,
        })
    }

    /// The same cloud, another region (a LoadBalancer's `region`).
    pub fn with_region(&self, region: impl Into<String>) -> Self {
        Self {
            transport: self.transport.clone(),
            lookups: self.lookups.clone(),
            server_lookups: self.server_lookups.clone(),
            load_balancer_lookups: self.load_balancer_lookups.clone(),
            region: Some(region.into()),
        }
    }

    /// The region in use: the pinned one, else the cloud's `region_name`.
    pub fn region(&self) -> Option<&str> {
        self.region
            .as_deref()
            .or(self.transport.config().region.as_deref())
    }

    pub fn cloud_name(&self) -> &str {
        &self.transport.config().name
    }

    /// A name lookup, remembered for the configured lifetime (see [`lookups`]).
    async fn remembered<T: Clone + Send + Sync + 'static>(
        &self,
        kind: Kind,
        name: &str,
        fetch: impl Future<Output = CloudResult<T>>,
    ) -> CloudResult<T> {
        self.lookups
            .get_or_fetch(kind, self.region(), name, fetch)
            .await
    }

    /// A create the cloud refused as a bad request or for a missing object may have used
    /// a stale lookup: forget the kinds it used, so the retry looks them up again.
    fn forget_on_refusal<T>(&self, result: CloudResult<T>, kinds: &[Kind]) -> CloudResult<T> {
        if let Err(e) = &result
            && matches!(
                e.kind(),
                ErrorKind::BadRequest { .. } | ErrorKind::NotFound { .. }
            )
        {
            self.lookups.forget(kinds);
        }
        result
    }

    /// Fetch a token now, to fail fast at start-up on bad credentials.
    pub async fn authenticate(&self) -> CloudResult<()> {
        let action = format!("authenticate to cloud {}", self.cloud_name());
        self.transport
            .ensure_token()
            .await
            .map_err(|k| CloudError::new(action, k))
    }

    /// The ID of the project this client acts in, from its token.
    pub async fn project_id(&self) -> CloudResult<String> {
        let action = format!("authenticate to cloud {}", self.cloud_name());
        self.transport
            .project_id()
            .await
            .map_err(|k| CloudError::new(action, k))
    }

    pub(crate) async fn send(&self, req: &Request, action: &str) -> CloudResult<Reply> {
        self.transport
            .send(self.region(), req)
            .await
            .map_err(|k| CloudError::new(action, k))
    }

    /// Send, then read `{"<key>": T}` from the body.
    pub(crate) async fn fetch<T: DeserializeOwned>(
        &self,
        req: &Request,
        key: &str,
        action: &str,
    ) -> CloudResult<T> {
        let reply = self.send(req, action).await?;
        unwrap_key(&reply, key).map_err(|k| CloudError::new(action, k))
    }

    /// Send, then read the whole body as T (Designate answers unwrapped objects).
    pub(crate) async fn fetch_body<T: DeserializeOwned>(
        &self,
        req: &Request,
        action: &str,
    ) -> CloudResult<T> {
        let reply = self.send(req, action).await?;
        reply.json().map_err(|k| CloudError::new(action, k))
    }

    /// Send and ignore the body (202/204 answers).
    pub(crate) async fn execute(&self, req: &Request, action: &str) -> CloudResult<()> {
        self.send(req, action).await.map(|_| ())
    }

    /// Every item of a paginated list: follow `<key>_links` (Nova, Neutron, Octavia) or
    /// Glance's `next`, re-applying only the link's query to our own endpoint (a cloud
    /// behind a proxy may advertise another host in its links).
    pub(crate) async fn list_all<T: DeserializeOwned + Send>(
        &self,
        req: Request,
        key: &str,
        action: &str,
    ) -> CloudResult<Vec<T>> {
        let mut items = Vec::new();
        self.list_pages(req, key, action, &mut |batch| items.extend(batch))
            .await?;
        Ok(items)
    }

    /// As [`OpenStackClient::list_all`], each page given to `take` as it is read, so
    /// that a caller keeping less than the items never holds the whole list.
    pub(crate) async fn list_pages<T: DeserializeOwned>(
        &self,
        mut req: Request,
        key: &str,
        action: &str,
        take: &mut (dyn FnMut(Vec<T>) + Send),
    ) -> CloudResult<()> {
        let fail = |k| CloudError::new(action, k);
        for _ in 0..MAX_PAGES {
            let reply = self.send(&req, action).await?;
            let (got, rest) = page::each_item::<T>(&reply, key, take).map_err(fail)?;
            let Some(next) = next_query(&rest, key) else {
                return Ok(());
            };
            if got == 0 || next == req.query {
                return Ok(());
            }
            req.query = next;
        }
        Err(fail(ErrorKind::InvalidResponse {
            message: format!("more than {MAX_PAGES} pages of {key}"),
        }))
    }
}

pub(crate) fn unwrap_key<T: DeserializeOwned>(reply: &Reply, key: &str) -> Result<T, ErrorKind> {
    let fields = raw_fields(reply)?;
    let inner = fields.get(key).ok_or_else(|| invalid(key, "missing"))?;
    serde_json::from_str(inner.get()).map_err(|e| invalid(key, e))
}

/// The query of the `next` link of a list page, if any.
fn next_query(page: &Value, key: &str) -> Option<Vec<(String, String)>> {
    let from_links = page
        .get(format!("{key}_links"))
        .and_then(Value::as_array)
        .and_then(|links| {
            links
                .iter()
                .find(|l| l.get("rel").and_then(Value::as_str) == Some("next"))
        })
        .and_then(|l| l.get("href"))
        .and_then(Value::as_str);
    // Designate: `"links": {"self", "next"}`.
    let designate = || page.get("links")?.get("next")?.as_str();
    let href = from_links
        .or_else(|| page.get("next").and_then(Value::as_str))
        .or_else(designate)?;
    let base = url::Url::parse("http://link.invalid/").ok()?;
    let url = base.join(href).ok()?;
    Some(
        url.query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
    )
}

/// Exactly one of `matches`, else `LookupNotFound` / `AmbiguousName` with the candidates.
pub(crate) fn pick_one<T>(
    resource: Resource,
    name: &str,
    mut matches: Vec<T>,
    id_of: impl Fn(&T) -> String,
) -> Result<T, ErrorKind> {
    match matches.len() {
        0 => Err(ErrorKind::LookupNotFound {
            resource,
            name: name.to_owned(),
        }),
        1 => Ok(matches.remove(0)),
        _ => Err(ErrorKind::AmbiguousName {
            resource,
            name: name.to_owned(),
            candidates: matches.iter().map(id_of).collect(),
        }),
    }
}

pub(crate) fn compute(op: &'static str, method: http::Method, path: impl Into<String>) -> Request {
    Request::new(Service::Compute, op, method, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_query_reads_nova_links_and_glance_next() {
        let nova = serde_json::json!({
            "servers": [],
            "servers_links": [{"rel": "next", "href": "http://127.0.0.1:8774/v2.1/servers/detail?limit=1&marker=abc&tags=verda-uid-1"}]
        });
        assert_eq!(
            next_query(&nova, "servers"),
            Some(vec![
                ("limit".into(), "1".into()),
                ("marker".into(), "abc".into()),
                ("tags".into(), "verda-uid-1".into())
            ])
        );
        let glance = serde_json::json!({"images": [], "next": "/v2/images?marker=x&name=centos79"});
        assert_eq!(
            next_query(&glance, "images"),
            Some(vec![
                ("marker".into(), "x".into()),
                ("name".into(), "centos79".into())
            ])
        );
        let neutron_prev_only = serde_json::json!({"networks": [], "networks_links": [{"rel": "previous", "href": "/x?a=1"}]});
        assert_eq!(next_query(&neutron_prev_only, "networks"), None);
    }

    #[test]
    fn pick_one_lists_candidates_when_ambiguous() {
        let err = pick_one(Resource::Flavor, "small", vec!["1", "2"], |s| s.to_string());
        assert_eq!(
            err,
            Err(ErrorKind::AmbiguousName {
                resource: Resource::Flavor,
                name: "small".into(),
                candidates: vec!["1".into(), "2".into()]
            })
        );
        assert_eq!(
            pick_one(Resource::Image, "x", vec!["only"], |s| s.to_string()),
            Ok("only")
        );
    }
}
