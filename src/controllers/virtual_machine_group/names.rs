//! A group's DNS names (`spec.dns`): one record set per name holding the addresses of
//! the replicas that serve, kept by the group with its own owner record; with
//! `perReplica`, each replica's VirtualMachine carries `<name>-<n>` in its `spec.dns`
//! and keeps that one itself.
//!
//! A replica leaves the record set in the round that marks it draining (or deletes it),
//! and a draining replica is held from deletion (as a pool that still lists it holds
//! it) while the record set still holds its address or Designate has not yet served
//! the change. Nobody serving, the record set keeps its last addresses: a name that
//! answered nothing would be cached as gone.

use kube::ResourceExt;
use verda_api::v1alpha1::{DnsName, VirtualMachine, VirtualMachineGroup};

use crate::cloud::CloudError;
use crate::cloud::owner::port_record;
use crate::controllers::dns_records::{self, Designate, Kept, Seen};
use crate::controllers::load_balancer::real_servers::serving_backend;
use crate::controllers::virtual_machine_group::plan::{Member, Plan};
use crate::runtime::Context;

/// The names of the serving replicas' record sets.
pub fn shared(group: &VirtualMachineGroup) -> Vec<DnsName> {
    group.spec.dns.iter().map(|n| n.shared()).collect()
}

/// Replica `index`'s own names (`perReplica`), in the order of `spec.dns`.
pub fn of_replica(group: &VirtualMachineGroup, index: u32) -> Vec<DnsName> {
    group
        .spec
        .dns
        .iter()
        .filter_map(|n| n.of_replica(index))
        .collect()
}

/// The owner record of the group's own record sets.
pub fn record(ctx: &Context, group: &VirtualMachineGroup) -> String {
    let uid = group.metadata.uid.clone().unwrap_or_default();
    port_record(&uid, None, &ctx.cluster)
}

/// The record sets of the names the spec asks for and the status still reports (no
/// call without any), and the draining members they hold.
pub async fn observe(
    designate: Designate<'_>,
    ctx: &Context,
    group: &VirtualMachineGroup,
    members: &mut [Member],
    vms: &[VirtualMachine],
) -> Result<Vec<Seen>, CloudError> {
    let reported = group.status.as_ref().map_or(&[][..], |s| &s.dns[..]);
    let seen = dns_records::read(designate, &shared(group), reported).await?;
    hold_draining(members, vms, &seen, &record(ctx, group));
    Ok(seen)
}

/// Holds each draining member whose address a record set of ours still holds, or
/// while one of them is still being published.
fn hold_draining(members: &mut [Member], vms: &[VirtualMachine], seen: &[Seen], record: &str) {
    let ours: Vec<_> = seen
        .iter()
        .flat_map(|s| &s.sets)
        .filter(|set| set.description.as_deref() == Some(record))
        .collect();
    let publishing = ours.iter().any(|set| set.is_pending());
    for member in members.iter_mut().filter(|m| m.draining_since.is_some()) {
        let vm = vms.iter().find(|vm| vm.name_any() == member.name);
        let address = vm.and_then(|vm| vm.status.as_ref()?.primary_ip.clone());
        let held = address.is_some_and(|a| ours.iter().any(|set| set.records.contains(&a)));
        member.in_pools |= held || (publishing && !ours.is_empty());
    }
}

/// The addresses of the replicas that serve after `round`: Ready and ACTIVE, neither
/// draining nor being deleted, nor marked so by the round.
fn serving(vms: &[VirtualMachine], round: &Plan) -> Vec<String> {
    vms.iter()
        .filter(|vm| {
            let name = vm.name_any();
            !round.drain.contains(&name) && !round.delete.contains(&name)
        })
        .filter_map(|vm| serving_backend(vm).map(|b| b.address))
        .collect()
}

/// Brings the group's record sets to the replicas that serve after `round`; `None`
/// (the status keeps its rows) when there are no names or Designate could not be read.
pub async fn converge(
    designate: Designate<'_>,
    ctx: &Context,
    group: &VirtualMachineGroup,
    seen: &Result<Vec<Seen>, CloudError>,
    (vms, round): (&[VirtualMachine], &Plan),
) -> Option<Kept> {
    let seen = match seen {
        Ok(seen) if seen.is_empty() => return None,
        Ok(seen) => seen,
        Err(e) => {
            let key = format!(
                "{}/{}",
                group.namespace().unwrap_or_default(),
                group.name_any()
            );
            tracing::warn!(group = %key, "could not read the DNS record sets of spec.dns: {e}");
            return None;
        }
    };
    let addresses = dns_records::Addresses {
        primary: serving(vms, round),
        floating: None,
    };
    let record = record(ctx, group);
    Some(dns_records::converge(designate, seen, &addresses, &record, true).await)
}

/// The round's DNS events, as the group tells its events (reason, note).
pub fn events(kept: &Kept) -> impl Iterator<Item = (&'static str, String)> + '_ {
    kept.events
        .iter()
        .map(|(_, reason, note)| (*reason, note.clone()))
}
