//! Stateful VirtualMachines end to end (test API server and simulator): a boot volume
//! and data volumes, the same data volume back on a replacement server, grown sizes,
//! drift, retention on delete; a group's per-replica volumes across a replacement, a
//! template change, a scale-down and scale-up, and the group's deletion.

use crate::support;

use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use support::e2e::{Env, eventually, test_timing};
use verda_api::conditions::{READY, is_true};
use verda_api::v1alpha1::{VirtualMachine, VirtualMachineGroup};
use verda_operator::sim::{SimConfig, SimVolume};

const LIMIT: Duration = Duration::from_secs(30);

fn stateful_vm(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {{name: {name}}}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  bootVolume: {{size: 20, type: ssd}}\n  volumes:\n    - {{name: data, size: 10}}\n    - {{name: logs, size: 1, type: ssd}}\n{extra}"
    )
}

/// The simulator's data volumes (boot volumes aside), by name.
fn data_volumes(env: &Env) -> Vec<SimVolume> {
    env.sim
        .volumes()
        .into_iter()
        .filter(|v| !v.bootable)
        .collect()
}

/// Waits until the VirtualMachine is Ready with every declared volume attached.
async fn ready_with_volumes(env: &Env, name: &str, attached: &str) -> VirtualMachine {
    let api = env.api::<VirtualMachine>();
    eventually(
        &format!("{name} is Ready with {attached} volumes"),
        LIMIT,
        || async {
            let vm = api.get(name).await.ok()?;
            let s = vm.status.as_ref()?;
            (is_true(&s.conditions, READY) && s.volumes_attached.as_deref() == Some(attached))
                .then_some(vm)
        },
    )
    .await
}

#[tokio::test]
async fn a_virtual_machine_boots_from_a_volume_keeps_its_data_volumes_and_grows_them() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env.create_from_yaml(&stateful_vm("db", "")).await;
    let vm = ready_with_volumes(&env, "db", "2/2").await;
    let status = vm.status.expect("status");
    let server = status.server_id.clone().expect("server");
    let names: Vec<(&str, Option<&str>)> = status
        .volumes
        .iter()
        .map(|v| (v.name.as_str(), v.device.as_deref()))
        .collect();
    assert_eq!(
        names,
        [("data", Some("/dev/vdb")), ("logs", Some("/dev/vdc"))]
    );
    let boot = status.boot_volume.expect("the boot volume is reported");
    assert_eq!((boot.size, boot.type_.as_deref()), (20, Some("ssd")));
    let volumes = data_volumes(&env);
    assert_eq!(volumes.len(), 2, "{volumes:?}");
    assert!(
        volumes
            .iter()
            .all(|v| v.attached_to.as_ref().map(|a| &a.0) == Some(&server))
    );
    assert_eq!(volumes[0].name, "db-data");
    let data_id = status.volumes[0].id.clone();

    // The server deleted outside Kubernetes: the new one gets the same volumes.
    env.sim.delete_server_out_of_band(&server);
    let api = env.api::<VirtualMachine>();
    let replaced = eventually("a new server with the volumes attached", LIMIT, || async {
        let vm = api.get("db").await.ok()?;
        let s = vm.status?;
        let id = s.server_id.clone()?;
        (id != server
            && is_true(&s.conditions, READY)
            && s.volumes_attached.as_deref() == Some("2/2"))
        .then_some(s)
    })
    .await;
    assert_eq!(
        replaced.volumes[0].id, data_id,
        "the same data volume, not a new one"
    );
    assert_eq!(data_volumes(&env).len(), 2, "no second set of volumes");
    assert_eq!(
        env.sim.volumes().iter().filter(|v| v.bootable).count(),
        1,
        "the old boot volume went with its server"
    );

    // Growing a volume extends it in place.
    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"volumes": [{"name": "data", "size": 12}, {"name": "logs", "size": 1, "type": "ssd"}]}})),
    )
    .await
    .expect("a larger size is accepted");
    eventually("the data volume is 12 GiB", LIMIT, || async {
        let vm = api.get("db").await.ok()?;
        let s = vm.status?;
        (s.volumes.first()?.size == 12
            && s.volumes.first()?.id == data_id
            && is_true(&s.conditions, READY))
        .then_some(())
    })
    .await;

    // Deleted with the default retention: the server goes, the data stays.
    api.delete("db", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("the VirtualMachine is gone", LIMIT, || async {
        api.get_opt("db").await.ok()?.is_none().then_some(())
    })
    .await;
    let kept = data_volumes(&env);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(
        kept.iter()
            .all(|v| v.status == "available" && v.attached_to.is_none())
    );
    assert!(
        env.sim.servers().iter().all(|s| s.deleting),
        "the server is gone"
    );

    // Their owner gone, the orphan inventory lists the retained volumes and deletes them.
    let cloud = env.cloud();
    let cluster = &env.ctx.cluster;
    let listing = verda_operator::orphans::list(cloud.as_ref(), cluster)
        .await
        .expect("listed");
    let orphans = verda_operator::orphans::classify(&listing, cluster, &Default::default());
    let mut volumes: Vec<&str> = orphans
        .iter()
        .filter(|o| o.kind.as_str() == "volume")
        .map(|o| o.name.as_str())
        .collect();
    volumes.sort();
    assert_eq!(volumes, ["db-data", "db-logs"], "{orphans:?}");
    let deleted = verda_operator::orphans::delete(cloud.as_ref(), &orphans).await;
    assert!(deleted.iter().all(|(_, r)| r.is_ok()), "{deleted:?}");
    eventually("the orphaned volumes are gone", LIMIT, || async {
        data_volumes(&env).is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn detach_on_delete_leaves_the_volumes_without_the_operators_records() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = stateful_vm("kept", "").replace(
        "metadata: {name: kept}",
        "metadata: {name: kept, annotations: {verda.linecorp.com/reconcile-policy: detach-on-delete}}",
    );
    let _: VirtualMachine = env.create_from_yaml(&manifest).await;
    ready_with_volumes(&env, "kept", "2/2").await;
    let api = env.api::<VirtualMachine>();
    api.delete("kept", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("the VirtualMachine is gone", LIMIT, || async {
        api.get_opt("kept").await.ok()?.is_none().then_some(())
    })
    .await;
    let volumes = data_volumes(&env);
    assert_eq!(volumes.len(), 2, "{volumes:?}");
    for v in &volumes {
        assert!(
            v.metadata
                .keys()
                .all(|k| !k.starts_with("verda.linecorp.com:")),
            "{v:?}"
        );
        assert!(
            v.attached_to.is_some(),
            "still attached to the running server: {v:?}"
        );
    }
}

#[tokio::test]
async fn cinders_quota_is_reported_with_its_words() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    env.sim.set_volume_quota(1, 5);
    let _: VirtualMachine = env.create_from_yaml(&stateful_vm("full", "")).await;
    let api = env.api::<VirtualMachine>();
    let message = eventually("QuotaExceeded", LIMIT, || async {
        let vm = api.get("full").await.ok()?;
        vm.status?
            .conditions
            .iter()
            .find(|c| c.type_ == READY && c.reason == "QuotaExceeded")
            .map(|c| c.message.clone())
    })
    .await;
    assert!(message.contains("gigabytes quota"), "{message}");
}

#[tokio::test]
async fn a_detached_volume_is_attached_again_and_a_deleted_one_comes_back_empty_with_a_warning() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let extra = "  volumeRetention: {whenDeleted: Delete}\n";
    let _: VirtualMachine = env.create_from_yaml(&stateful_vm("drift", extra)).await;
    let vm = ready_with_volumes(&env, "drift", "2/2").await;
    let status = vm.status.expect("status");
    let (data, logs) = (status.volumes[0].id.clone(), status.volumes[1].id.clone());

    env.sim.detach_volume_out_of_band(&data);
    env.sim.delete_volume_out_of_band(&logs);
    let api = env.api::<VirtualMachine>();
    eventually("both volumes attached again", LIMIT, || async {
        let vm = api.get("drift").await.ok()?;
        let s = vm.status?;
        let ids: Vec<String> = s.volumes.iter().map(|v| v.id.clone()).collect();
        (s.volumes_attached.as_deref() == Some("2/2") && ids[0] == data && ids[1] != logs)
            .then_some(())
    })
    .await;
    env.event_seen("DriftCorrected").await;
    env.event_seen("VolumeRecreated").await;

    // whenDeleted: Delete: the volumes go once the server has.
    api.delete("drift", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually(
        "the VirtualMachine and its volumes are gone",
        LIMIT,
        || async {
            (api.get_opt("drift").await.ok()?.is_none() && env.sim.volumes().is_empty())
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn a_volume_in_error_is_reported_and_not_looped_on() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let _: VirtualMachine = env.create_from_yaml(&stateful_vm("broken", "")).await;
    let vm = ready_with_volumes(&env, "broken", "2/2").await;
    let data = vm.status.expect("status").volumes[0].id.clone();
    env.sim.detach_volume_out_of_band(&data);
    env.sim.set_volume_error(&data);
    let api = env.api::<VirtualMachine>();
    eventually("VolumeError is the Ready reason", LIMIT, || async {
        let vm = api.get("broken").await.ok()?;
        vm.status?
            .conditions
            .iter()
            .any(|c| c.type_ == READY && c.reason == "VolumeError" && c.message.contains(&data))
            .then_some(())
    })
    .await;
    let before = env.sim.total_requests();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls = env.sim.total_requests() - before;
    assert!(
        calls <= 4,
        "{calls} cloud calls in 2 s while a volume is in error"
    );
    assert_eq!(data_volumes(&env).len(), 2, "no replacement volume");
}

#[tokio::test]
async fn a_boot_volume_smaller_than_the_images_min_disk_is_refused_before_any_create() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachine\nmetadata: {name: small}\nspec:\n  image: centos79\n  flavor: n3-1vcpu-2gb\n  bootVolume: {size: 5}\n";
    let _: VirtualMachine = env.create_from_yaml(manifest).await;
    let api = env.api::<VirtualMachine>();
    let message = eventually("BootVolumeTooSmall", LIMIT, || async {
        let vm = api.get("small").await.ok()?;
        vm.status?
            .conditions
            .iter()
            .find(|c| c.type_ == READY && c.reason == "BootVolumeTooSmall")
            .map(|c| c.message.clone())
    })
    .await;
    assert!(message.contains("10 GiB"), "{message}");
    assert_eq!(env.sim.requests("compute", "create_server"), 0);
}

#[tokio::test]
async fn a_group_keeps_each_replicas_volumes_across_replacement_rollout_and_scaling() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: db}\nspec:\n  replicas: 3\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    volumes: [{name: data, size: 10}]\n  volumeRetention: {whenScaled: Retain, whenDeleted: Delete}\n";
    let _: VirtualMachineGroup = env.create_from_yaml(manifest).await;
    let groups = env.api::<VirtualMachineGroup>();
    let vms = env.api::<VirtualMachine>();
    let ids = || async {
        let mut ids = Vec::new();
        for i in 0..3 {
            let vm = vms.get_opt(&format!("db-{i}")).await.ok()??;
            let s = vm.status?;
            (is_true(&s.conditions, READY) && s.volumes_attached.as_deref() == Some("1/1"))
                .then_some(())?;
            ids.push(s.volumes.first()?.id.clone());
        }
        Some(ids)
    };
    let first = eventually("three replicas with a volume each", LIMIT, ids).await;
    let mut names: Vec<String> = data_volumes(&env).iter().map(|v| v.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["db-0-data", "db-1-data", "db-2-data"]);

    // Replica 1's server deleted outside: the new server has replica 1's volume.
    let server = vms
        .get("db-1")
        .await
        .expect("db-1")
        .status
        .and_then(|s| s.server_id)
        .expect("server");
    env.sim.delete_server_out_of_band(&server);
    let after = eventually("replica 1 is back with its volume", LIMIT, || async {
        let s = vms.get("db-1").await.ok()?.status?;
        (s.server_id.as_deref() != Some(server.as_str())
            && s.volumes_attached.as_deref() == Some("1/1"))
        .then(|| s.volumes[0].id.clone())
    })
    .await;
    assert_eq!(after, first[1]);

    // A template change rolls every replica; each keeps its volume.
    groups
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"template": {"flavor": "n3-2vcpu-4gb"}}})),
        )
        .await
        .expect("template edited");
    eventually(
        "every replica rolled and kept its volume",
        Duration::from_secs(60),
        || async {
            let g = groups.get("db").await.ok()?.status?;
            (g.updated_replicas == 3 && g.ready_replicas == 3).then_some(())?;
            for i in 0..3 {
                let s = vms.get(&format!("db-{i}")).await.ok()?.status?;
                (s.flavor.as_deref() == Some("n3-2vcpu-4gb")).then_some(())?;
            }
            (ids().await? == first).then_some(())
        },
    )
    .await;
    assert_eq!(data_volumes(&env).len(), 3, "no new volumes");

    // Scale 3 -> 2: db-2's volume is retained and counted; 2 -> 3 attaches it again.
    groups
        .patch_scale(
            "db",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 2}})),
        )
        .await
        .expect("scaled");
    eventually("one retained volume", LIMIT, || async {
        let g = groups.get("db").await.ok()?.status?;
        (g.replicas == 2 && g.retained_volumes == 1).then_some(())
    })
    .await;
    let retained = data_volumes(&env);
    assert_eq!(retained.len(), 3);
    env.event_seen("VolumesRetained").await;
    groups
        .patch_scale(
            "db",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaled");
    let back = eventually("db-2 is back with its volume", LIMIT, ids).await;
    assert_eq!(back, first);

    // Deleting the group with whenDeleted: Delete leaves no volume.
    groups
        .delete("db", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually(
        "the group and every volume are gone",
        Duration::from_secs(60),
        || async {
            (groups.get_opt("db").await.ok()?.is_none() && env.sim.volumes().is_empty())
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn a_scale_down_with_when_scaled_delete_deletes_the_removed_replicas_volumes_and_says_so() {
    let env = Env::start(SimConfig::fast(), test_timing()).await;
    let manifest = "apiVersion: verda.linecorp.com/v1alpha1\nkind: VirtualMachineGroup\nmetadata: {name: cache}\nspec:\n  replicas: 3\n  template:\n    image: centos79\n    flavor: n3-1vcpu-2gb\n    volumes: [{name: data, size: 1}]\n  volumeRetention: {whenScaled: Delete}\n";
    let _: VirtualMachineGroup = env.create_from_yaml(manifest).await;
    let groups = env.api::<VirtualMachineGroup>();
    eventually("three replicas with their volumes", LIMIT, || async {
        let s = groups.get("cache").await.ok()?.status?;
        (s.ready_replicas == 3 && data_volumes(&env).len() == 3).then_some(())
    })
    .await;
    env.scale("cache", 2).await;
    eventually("cache-2's volume is deleted with it", LIMIT, || async {
        let names: Vec<String> = data_volumes(&env).into_iter().map(|v| v.name).collect();
        (names.len() == 2 && !names.contains(&"cache-2-data".to_owned())).then_some(())
    })
    .await;
    env.event_seen("VolumesDeleted").await;
    let status = groups
        .get("cache")
        .await
        .expect("group")
        .status
        .expect("status");
    assert_eq!(status.retained_volumes, 0);

    // Deleted with the default whenDeleted (Retain): the volumes stay, and say whose.
    groups
        .delete("cache", &DeleteParams::default())
        .await
        .expect("deleted");
    eventually("the group is gone", LIMIT, || async {
        groups.get_opt("cache").await.ok()?.is_none().then_some(())
    })
    .await;
    let kept = data_volumes(&env);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.iter().all(|v| v.status == "available"));
}
