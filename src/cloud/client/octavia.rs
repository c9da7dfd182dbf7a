//! Octavia requests: every path under `/v2/lbaas` (the endpoint carries `/v2`), and the
//! list filters the load balancer resources share.

use http::Method;

use crate::cloud::auth::Service;
use crate::cloud::model::loadbalancing::LbFilter;
use crate::cloud::transport::Request;

pub(super) fn octavia(op: &'static str, method: Method, path: impl Into<String>) -> Request {
    Request::new(
        Service::LoadBalancer,
        op,
        method,
        format!("/lbaas{}", path.into()),
    )
}

/// Octavia list filters: `name` exact, `tags` match-all (comma separated).
pub(super) fn filtered(req: Request, filter: &LbFilter) -> Request {
    let tags = (!filter.tags.is_empty()).then(|| filter.tags.join(","));
    req.query_opt("name", filter.name.as_deref())
        .query_opt("tags", tags)
        .query_opt(
            "loadbalancer_id",
            filter.loadbalancer_id.as_ref().map(|i| i.to_string()),
        )
}
