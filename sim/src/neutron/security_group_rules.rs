//! Neutron security group rules: create (body checks in `rule_body.rs`; then the
//! groups it names, and duplicates as Neutron sees them), list (ordered by ID, filters
//! on any attribute, no tags), show and delete. A rule lives in its group
//! (`SecurityGroup::rules`); creating or deleting one moves the group's revision.
//!
//! Deliberately not here: update (Neutron has none but `description`), tags on
//! rules, and rules in another project's groups.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};

use super::address_groups;
use super::envelope::{Cx, enter, list_answer, no_tag_filters, show};
use super::rule_body::{self, view};
use super::schema;
use super::security_groups;
use crate::model::SecurityGroupRule;
use crate::query::Params;
use crate::state::Sim;
use crate::world::World;
use crate::world::security_groups::DEFAULT;

pub(super) fn routes(r: Router<Sim>) -> Router<Sim> {
    r.route("/network/v2.0/security-group-rules", get(list).post(create))
        .route(
            "/network/v2.0/security-group-rules/{id}",
            get(get_one).delete(delete),
        )
}

/// A rule as its own resource answers it (nested in a group, it also has `tags` and
/// `standard_attr_id`).
fn not_found(cx: &Cx, id: &str) -> Response {
    let msg = format!("Security group rule {id} does not exist");
    cx.err(404, "SecurityGroupRuleNotFound", &msg)
}

async fn list(
    State(sim): State<Sim>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "list_security_group_rules", &headers).await?;
    no_tag_filters(&cx, &q)?;
    let w = sim.world_of(&cx.project);
    let mut rules: Vec<&SecurityGroupRule> = w.security_group_rules().collect();
    rules.sort_by(|a, b| a.id.cmp(&b.id));
    let items: Vec<Value> = rules.into_iter().map(|r| view(&cx.project, r)).collect();
    drop(w);
    list_answer(&cx, "security_group_rules", items, &q, &|_, _, _| None)
}

async fn get_one(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<Params>,
) -> Result<Response, Response> {
    let cx = enter(&sim, "get_security_group_rule", &headers).await?;
    let w = sim.world_of(&cx.project);
    let mut rules = w.security_group_rules();
    match rules.find(|r| r.id == id) {
        Some(r) => Ok(show(&cx, "security_group_rule", view(&cx.project, r), &q)),
        None => Err(not_found(&cx, &id)),
    }
}

/// The checks that need the world: the remote group, the remote address group, the
/// rule's own group, then duplicates. Whether the rule belongs to `default`.
fn admit(cx: &Cx, w: &World, rule: &SecurityGroupRule) -> Result<bool, Response> {
    let group = |id: &str| w.security_groups.iter().find(|g| g.id == id);
    if let Some(remote) = rule.remote_group_id.as_deref() {
        group(remote).ok_or_else(|| security_groups::not_found(cx, remote))?;
    }
    if let Some(a) = rule.remote_address_group_id.as_deref()
        && !w.address_groups.iter().any(|g| g.id == a)
    {
        return Err(address_groups::not_found(cx, a));
    }
    let id = rule.security_group_id.as_str();
    let g = group(id).ok_or_else(|| security_groups::not_found(cx, id))?;
    if let Some(same) = g.rules.iter().find(|r| r.same_as(rule)) {
        let msg = format!(
            "Security group rule already exists. Rule id is {}.",
            same.id
        );
        return Err(cx.err(409, "SecurityGroupRuleExists", &msg));
    }
    Ok(g.name == DEFAULT)
}

async fn create(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, Response> {
    let cx = enter(&sim, "create_security_group_rule", &headers).await?;
    let req = schema::body(&cx, &bytes, "security_group_rule")?;
    let mut rule = rule_body::check(&cx, &req)?;
    let mut w = sim.world_of(&cx.project);
    rule.belongs_to_default_sg = admit(&cx, &w, &rule)?;
    rule.id = w.uuid();
    rule.seq = w.next_seq();
    let answer = json!({"security_group_rule": view(&cx.project, &rule)});
    if let Some(g) = w.security_group_mut(&rule.security_group_id) {
        g.rules.push(rule);
        g.touch();
    }
    Ok(cx.ok(201, &answer))
}

async fn delete(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let cx = enter(&sim, "delete_security_group_rule", &headers).await?;
    match sim.world_of(&cx.project).delete_security_group_rule(&id) {
        true => Ok(cx.empty()),
        false => Err(not_found(&cx, &id)),
    }
}
