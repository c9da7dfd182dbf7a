//! Octavia provisioning state machine.

use std::time::Instant;

use crate::sim::state::World;

pub(crate) fn settle(_w: &mut World, _now: Instant) {}
