//! Events as `kubectl describe` reads them (core/v1, per object), through a scale up,
//! a scale down and the member changes they cause: every event's note is the latest
//! truth, an identical repeat counts up one event, and a new note is a new event.

use crate::support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::ResourceExt;
use kube::api::ListParams;
use support::e2e::{Env, eventually, sample, test_timing, within};
use verda_api::conditions::{READY, find_condition};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};
use verda_operator::sim::SimConfig;

const LIMIT: Duration = Duration::from_secs(60);
const GROUP: &str = "virtualmachinegroup-sample";
const LB: &str = "loadbalancer-sample";

/// `(reason, message, count)` of every event about the object `kind/name`, oldest first.
async fn described(env: &Env, kind: &str, name: &str) -> Vec<(String, String, i32)> {
    let params = ListParams::default().fields(&format!(
        "involvedObject.kind={kind},involvedObject.name={name}"
    ));
    let mut events = env
        .api::<Event>()
        .list(&params)
        .await
        .expect("events")
        .items;
    events.sort_by_key(|e| e.first_timestamp.clone().map(|t| t.0));
    events
        .into_iter()
        .map(|e| {
            (
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
                e.count.unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits until the object's events include `(reason, message)`; returns them all.
async fn until_described(
    env: &Env,
    kind: &str,
    name: &str,
    reason: &str,
    message: &str,
) -> Vec<(String, String, i32)> {
    eventually(
        &format!("{kind}/{name} has the event {reason}: {message}"),
        LIMIT,
        || async {
            let events = described(env, kind, name).await;
            events
                .iter()
                .any(|(r, m, _)| r == reason && m == message)
                .then_some(events)
        },
    )
    .await
}

/// Each replica's creation time and Ready condition (status, reason, message, when).
async fn replicas_ready(env: &Env) -> Vec<String> {
    let vms = env
        .api::<VirtualMachine>()
        .list(&ListParams::default())
        .await
        .expect("virtual machines")
        .items;
    vms.iter()
        .map(|vm| {
            let ready = vm
                .status
                .as_ref()
                .and_then(|s| find_condition(&s.conditions, READY))
                .map(|c| {
                    format!(
                        "{} {} {:?} since {}",
                        c.status, c.reason, c.message, c.last_transition_time.0
                    )
                });
            format!(
                "{} created {:?}: Ready {}",
                vm.name_any(),
                vm.metadata.creation_timestamp.as_ref().map(|t| t.0),
                ready.unwrap_or_else(|| "not set".to_owned())
            )
        })
        .collect()
}

fn members(n: usize) -> String {
    let names: Vec<String> = (0..n).map(|i| format!("{GROUP}-{i}")).collect();
    let noun = if n == 1 { "member" } else { "members" };
    format!("{n} {noun} ({})", names.join(", "))
}

#[tokio::test]
async fn every_event_tells_the_latest_truth_through_a_scale_up_and_down() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.create_from_yaml::<VirtualMachineGroup>(&sample("virtualmachinegroup.yaml"))
        .await;
    env.create_from_yaml::<LoadBalancer>(&sample("loadbalancer.yaml"))
        .await;
    let first = format!("created VirtualMachines {GROUP}-0, {GROUP}-1");
    until_described(&env, "VirtualMachineGroup", GROUP, "Created", &first).await;
    // The load balancer waits for the replicas, and its create carries them.
    let two = format!("(port 80: {}; port 443: {})", members(2), members(2));
    let create_named_both = within(LIMIT, || async {
        let events = described(&env, "LoadBalancer", LB).await;
        events
            .iter()
            .any(|(r, m, _)| r == "Created" && m.ends_with(&two))
            .then_some(())
    })
    .await;
    if create_named_both.is_none() {
        panic!(
            "the load balancer's create did not name both members within {LIMIT:?}; its events: \
             {:#?}; the replicas: {:#?}",
            described(&env, "LoadBalancer", LB).await,
            replicas_ready(&env).await
        );
    }

    env.scale(GROUP, 3).await;
    let second = format!("created VirtualMachines {GROUP}-2");
    let group_events =
        until_described(&env, "VirtualMachineGroup", GROUP, "Created", &second).await;
    let created: Vec<&(String, String, i32)> =
        group_events.iter().filter(|e| e.0 == "Created").collect();
    assert_eq!(
        created,
        [
            &("Created".to_owned(), first.clone(), 1),
            &("Created".to_owned(), second, 1)
        ],
        "each scale is an event of its own, with its own note"
    );
    let three = format!("port 80: {}", members(3));
    until_described(&env, "LoadBalancer", LB, "MembersUpdated", &three).await;

    env.scale(GROUP, 1).await;
    until_described(
        &env,
        "LoadBalancer",
        LB,
        "MembersUpdated",
        &format!("port 80: {}", members(1)),
    )
    .await;
    let deleted = |events: &[(String, String, i32)]| -> Vec<(String, i32)> {
        events
            .iter()
            .filter(|(r, ..)| r == "Deleted")
            .map(|(_, m, n)| (m.clone(), *n))
            .collect()
    };
    let removed = [format!("{GROUP}-1"), format!("{GROUP}-2")];
    let naming = |told: &[(String, i32)], name: &str| -> usize {
        told.iter()
            .filter(|(note, _)| {
                note.trim_start_matches("deleted VirtualMachines ")
                    .split(", ")
                    .any(|n| n == name)
            })
            .count()
    };
    eventually("the group reports both deletions", LIMIT, || async {
        let told = deleted(&described(&env, "VirtualMachineGroup", GROUP).await);
        removed
            .iter()
            .all(|name| naming(&told, name) > 0)
            .then_some(())
    })
    .await;
    // Let further reconciles of the group happen. Each VirtualMachine's deletion is
    // told once: the two may go in one event or in two (a load balancer may drop the
    // first drained one from its pools before the group marks the second), but no
    // event is repeated and no VirtualMachine is named twice.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = described(&env, "VirtualMachineGroup", GROUP).await;
    let told = deleted(&events);
    assert!(told.iter().all(|(_, count)| *count == 1), "{events:#?}");
    for name in &removed {
        assert_eq!(naming(&told, name), 1, "{name} in {events:#?}");
    }
}
