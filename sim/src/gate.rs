//! The door every API request passes: count it, apply injected faults (latency,
//! error status, 429), then check the token. Services turn a [`Reject`] into their
//! own error shape; this module knows nothing about bodies.

use axum::http::HeaderMap;

use super::faults::{Refusal, lock};
use super::state::Sim;

/// Why a request was refused before reaching its handler.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reject {
    /// Missing, unknown or expired token.
    Unauthorized,
    /// Injected error status.
    Status(u16),
    /// Injected 429 with this `Retry-After`.
    RateLimited(u64),
}

impl Reject {
    pub fn status(&self) -> u16 {
        match self {
            Reject::Unauthorized => 401,
            Reject::Status(s) => *s,
            Reject::RateLimited(_) => 429,
        }
    }

    /// Message for an injected fault, worded like the services' own.
    pub fn message(&self) -> String {
        match self {
            Reject::Unauthorized => super::wire::UNAUTHORIZED_MSG.to_string(),
            Reject::RateLimited(_) => "This request was rate-limited.".to_string(),
            Reject::Status(503) => {
                "The server is currently unavailable. Please try again at a later time.".to_string()
            }
            Reject::Status(s) if *s >= 500 => {
                "An unexpected error prevented the server from fulfilling your request.".to_string()
            }
            Reject::Status(s) => super::wire::title(*s).to_string(),
        }
    }

    /// `Retry-After` header for a 429.
    pub fn retry_after(&self) -> Option<(&'static str, String)> {
        match self {
            Reject::RateLimited(secs) => Some(("retry-after", secs.to_string())),
            _ => None,
        }
    }
}

/// Counts the request and applies faults; with `auth`, also requires a valid token and
/// returns the project it acts in (empty without `auth`).
pub(crate) async fn enter(
    sim: &Sim,
    service: &'static str,
    operation: &'static str,
    headers: &HeaderMap,
    auth: bool,
) -> Result<String, Reject> {
    sim.counters.bump(service, operation);
    let verdict = sim.faults.check(service, operation);
    if !verdict.delay.is_zero() {
        tokio::time::sleep(verdict.delay).await;
    }
    match verdict.refusal {
        Some(Refusal::Status(s)) => return Err(Reject::Status(s)),
        Some(Refusal::RateLimited(secs)) => return Err(Reject::RateLimited(secs)),
        None => {}
    }
    if !auth {
        return Ok(String::new());
    }
    token_project(sim, headers).ok_or(Reject::Unauthorized)
}

/// The project of the live, project-scoped token `X-Auth-Token` names.
pub(crate) fn token_project(sim: &Sim, headers: &HeaderMap) -> Option<String> {
    let token = headers.get("x-auth-token").and_then(|v| v.to_str().ok())?;
    lock(&sim.tokens)
        .get(token)
        .filter(|t| t.scoped && crate::state::live(sim, t))
        .map(|t| sim.identities[t.identity].project_id.clone())
}
