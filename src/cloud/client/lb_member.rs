//! Octavia pool members: list, and the batch update that replaces the whole set in one
//! call (`PUT /v2/lbaas/pools/{id}/members`, 202 with an empty body). The batch PUT is
//! idempotent by design (it states the desired set), so the transport may retry it.

use http::Method;
use serde_json::json;

use super::OpenStackClient;
use super::octavia::octavia;
use crate::cloud::ids::PoolId;
use crate::cloud::model::loadbalancing::{Member, MemberSpec};
use crate::cloud::services::CloudResult;

pub(super) async fn list(client: &OpenStackClient, pool: &PoolId) -> CloudResult<Vec<Member>> {
    let req = octavia(
        "list_members",
        Method::GET,
        format!("/pools/{pool}/members"),
    );
    client
        .list_all(req, "members", &format!("list members of pool {pool}"))
        .await
}

pub(super) async fn replace(
    client: &OpenStackClient,
    pool: &PoolId,
    members: &[MemberSpec],
) -> CloudResult<()> {
    let req = octavia(
        "replace_members",
        Method::PUT,
        format!("/pools/{pool}/members"),
    )
    .json(json!({"members": members}));
    let action = format!("set {} members of pool {pool}", members.len());
    client.execute(&req, &action).await
}
