//! Telling a change made outside Kubernetes from one the spec or the backends asked for:
//! a member batch that puts a pool back to the members it had when the object last
//! converged corrects drift; one that gives it new members (a scale, a spec edit) does
//! not. What "last converged" was is kept in memory, per project (a restart forgets it:
//! the first correction after one is reported as an ordinary member update).

use verda_api::v1alpha1::LoadBalancer;

use crate::caches::cloud_view::OctaviaTree;
use crate::caches::cloud_view::{MemberMemory, MemberSet};
use crate::cloud::model::loadbalancing::MemberSpec;
use crate::controllers::load_balancer::desired::{self, Backend};
use crate::controllers::load_balancer::plan::{Step, member_list, wanted_addresses};

/// Remembers the members `backends` give each port of a converged `lb`.
pub fn converged(memory: &MemberMemory, uid: &str, lb: &LoadBalancer, backends: &[Vec<Backend>]) {
    let sets = lb
        .spec
        .ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            set(
                memory,
                &desired::members(port, backends.get(i).map_or(&[], Vec::as_slice)),
            )
        })
        .collect();
    memory.remember(uid, sets);
}

fn set(memory: &MemberMemory, members: &[MemberSpec]) -> MemberSet {
    memory.set(wanted_addresses(members))
}

/// The note of a `DriftCorrected` event when `step` rewrites a pool's members back to
/// what they were when the object last converged; `None` for any other step.
pub fn members(
    memory: &MemberMemory,
    uid: &str,
    lb: &LoadBalancer,
    tree: &OctaviaTree,
    step: &Step,
) -> Option<String> {
    let Step::ReplaceMembers(index, pool, wanted) = step else {
        return None;
    };
    if memory.of(uid, *index)? != set(memory, wanted) {
        return None;
    }
    let found = tree
        .members
        .get(pool.as_str())
        .map_or(&[][..], Vec::as_slice);
    let port = lb.spec.ports.get(*index).map_or(0, |p| p.port);
    Some(format!(
        "the pool of port {port} had members {} (changed outside Kubernetes?); restored to {}",
        member_list(found.iter().map(|m| (m.address.as_str(), m.protocol_port))),
        member_list(wanted_addresses(wanted))
    ))
}
