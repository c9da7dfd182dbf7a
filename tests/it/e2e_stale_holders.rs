//! A server deleted while Cinder or Neutron could not be told leaves its volume
//! attached, its port bound, to a server that no longer exists (the simulator keeps
//! them so, as the real services do). The replica's replacement takes them back with
//! no person involved; a volume held by a live server of someone else is still only
//! waited for, never detached.

use crate::support;

use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::json;

use support::e2e::{Env, eventually, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup};
use verda_operator::sim::{Fault, FaultKind, SimConfig};

const LIMIT: Duration = Duration::from_secs(30);

/// `db-i`'s status once Ready with its volume attached.
async fn ready(env: &Env, name: &str) -> verda_api::v1alpha1::VirtualMachineStatus {
    let vms = env.api::<VirtualMachine>();
    eventually(&format!("{name} is Ready"), LIMIT, || async {
        let s = vms.get_opt(name).await.ok()??.status?;
        (is_true(&s.conditions, READY) && s.volumes_attached.as_deref() != Some("0/1")).then_some(s)
    })
    .await
}

/// Deletes `server` while `service` is down, as Nova does when it cannot reach it.
fn delete_during_outage(env: &Env, service: &str, server: &str) {
    env.sim
        .inject(Fault::new(service, None, FaultKind::Status(503)));
    env.sim.delete_server_out_of_band(server);
    env.sim.clear_faults();
}

#[tokio::test]
async fn replicas_whose_servers_went_while_cinder_was_down_get_their_volumes_back() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: db}\nspec:\n  replicas: 3\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    volumes: [{name: data, size: 10}]\n  volumeRetention: {whenScaled: Retain, whenDeleted: Delete}\n";
    let _: VirtualMachineGroup = env.create_from_yaml(manifest).await;
    let mut before = Vec::new();
    for i in 0..3 {
        let s = ready(&env, &format!("db-{i}")).await;
        before.push((s.server_id.expect("server"), s.volumes[0].id.clone()));
    }
    for (server, _) in &before[..2] {
        delete_during_outage(&env, "block-storage", server);
    }
    let held = env.sim.volumes();
    let stale = held.iter().filter(|v| {
        v.attached_to
            .as_ref()
            .is_some_and(|a| before[..2].iter().any(|(s, _)| *s == a.0))
    });
    assert_eq!(
        stale.count(),
        2,
        "the simulator keeps both attachments: {held:?}"
    );

    let vms = env.api::<VirtualMachine>();
    for (i, (server, volume)) in before.iter().enumerate().take(2) {
        let name = format!("db-{i}");
        eventually(
            &format!("{name} is Ready on its own volume"),
            LIMIT,
            || async {
                let s = vms.get(&name).await.ok()?.status?;
                (is_true(&s.conditions, READY)
                    && s.volumes_attached.as_deref() == Some("1/1")
                    && s.server_id.as_ref() != Some(server)
                    && s.volumes[0].id == *volume)
                    .then_some(())
            },
        )
        .await;
    }
    env.event_seen("StaleAttachmentCleared").await;
    let volumes = env.sim.volumes();
    let data: Vec<_> = volumes.iter().filter(|v| !v.bootable).collect();
    assert_eq!(data.len(), 3, "no volume made anew: {data:?}");
    assert!(
        data.iter().all(|v| v
            .attached_to
            .as_ref()
            .is_some_and(|a| before.iter().all(|(s, _)| *s != a.0) || a.0 == before[2].0)),
        "nothing is attached to a deleted server: {data:?}"
    );
}

#[tokio::test]
async fn a_port_left_bound_to_a_server_deleted_while_neutron_was_down_is_booted_on_again() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: db}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  ports: [{network: private}]\n";
    let _: VirtualMachine = env.create_from_yaml(manifest).await;
    let first = ready(&env, "db").await;
    let server = first.server_id.clone().expect("server");
    let port = first.ports[0].id.clone();
    delete_during_outage(&env, "network", &server);
    let bound = env.sim.ports().into_iter().find(|p| p.id == port);
    assert_eq!(bound.map(|p| p.device_id), Some(server.clone()));

    let vms = env.api::<VirtualMachine>();
    let after = eventually("db is Ready on its own port", LIMIT, || async {
        let s = vms.get("db").await.ok()?.status?;
        (is_true(&s.conditions, READY) && s.server_id.as_ref() != Some(&server)).then_some(s)
    })
    .await;
    assert_eq!(after.ports[0].id, port, "the same port, not a new one");
    env.event_seen("StaleBindingCleared").await;
}

#[tokio::test]
async fn a_volume_held_by_a_live_server_of_someone_else_is_waited_for_never_detached() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let vm = |name: &str, volumes: &str| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n{volumes}"
        )
    };
    let _: VirtualMachine = env
        .create_from_yaml(&vm("db", "  volumes: [{name: data, size: 10}]\n"))
        .await;
    let _: VirtualMachine = env.create_from_yaml(&vm("other", "")).await;
    let db = ready(&env, "db").await;
    let other = ready(&env, "other").await.server_id.expect("server");
    let volume = db.volumes[0].id.clone();
    env.sim.detach_volume_out_of_band(&volume);
    env.sim.attach_volume_out_of_band(&volume, &other);

    let vms = env.api::<VirtualMachine>();
    eventually("db says which server holds its volume", LIMIT, || async {
        let s = vms.get("db").await.ok()?.status?;
        let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
        (ready.status == "False"
            && ready
                .message
                .contains(&format!("attached to server {other}")))
        .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let held = env.sim.volumes().into_iter().find(|v| v.id == volume);
    assert_eq!(
        held.and_then(|v| v.attached_to).map(|a| a.0),
        Some(other),
        "still on the live server"
    );
    assert!(
        !env.event_reasons()
            .await
            .iter()
            .any(|r| r == "StaleAttachmentCleared"),
        "nothing was cleared"
    );
}

/// A replica scaled back up whose retained volume a live server took meanwhile: the
/// attach is decided on Cinder, not on the view of the scale-down, so the replica
/// reports the holder instead of a refused attach.
#[tokio::test]
async fn a_retained_volume_taken_by_a_live_server_is_reported_when_its_replica_returns() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let group = |n: u32| {
        format!(
            "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {{name: db}}\nspec:\n  replicas: {n}\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    volumes: [{{name: data, size: 10}}]\n"
        )
    };
    let _: VirtualMachineGroup = env.create_from_yaml(&group(2)).await;
    let volume = ready(&env, "db-1").await.volumes[0].id.clone();
    let other = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: other}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n";
    let _: VirtualMachine = env.create_from_yaml(other).await;
    let other = ready(&env, "other").await.server_id.expect("server");
    let groups = env.api::<VirtualMachineGroup>();
    let scale = |n: u32| {
        let groups = groups.clone();
        async move {
            let patch = Patch::Merge(json!({"spec": {"replicas": n}}));
            groups
                .patch("db", &PatchParams::default(), &patch)
                .await
                .expect("scaled");
        }
    };
    scale(1).await;
    let vms = env.api::<VirtualMachine>();
    eventually("db-1 is gone, its volume free", LIMIT, || async {
        let gone = vms.get_opt("db-1").await.ok()?.is_none();
        let free = env
            .sim
            .volumes()
            .iter()
            .any(|v| v.id == volume && v.attached_to.is_none());
        (gone && free).then_some(())
    })
    .await;
    // The view's refresh (every resync) sees the retained volume free first.
    tokio::time::sleep(test_timing().resync * 2).await;
    env.sim.attach_volume_out_of_band(&volume, &other);
    scale(2).await;
    eventually(
        "db-1 names the server holding its volume",
        LIMIT,
        || async {
            let s = vms.get_opt("db-1").await.ok()??.status?;
            let ready = s.conditions.iter().find(|c| c.type_ == READY)?;
            ready
                .message
                .contains(&format!("attached to server {other}"))
                .then_some(())
        },
    )
    .await;
    let reasons = env.event_reasons().await;
    assert!(
        !reasons.iter().any(|r| r == "BadRequest"),
        "no refused attach: {reasons:?}"
    );
}
