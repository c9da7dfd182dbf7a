use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::cloud::model::compute::ServerFault;

const REPLACE: Duration = Duration::from_secs(30);

fn vm(yaml: &str) -> VirtualMachine {
    serde_saphyr::from_str(yaml).expect("fixture is a VirtualMachine")
}

fn published() -> VirtualMachine {
    vm(r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachine
metadata: {name: vm-sample, namespace: default, uid: u-1}
spec:
  image: centos79
  flavor: n3-1vcpu-2gb
  initScript: {value: ls}
  description: generated operator
"#)
}

fn owner() -> Owner {
    Owner::new("u-1", "default", "vm-sample")
}

fn server(id: &str, status: ServerStatus) -> Server {
    let vm = published();
    Server {
        id: ServerId::new(id),
        name: "vm-sample".into(),
        status,
        task_state: None,
        addresses: vec![],
        metadata: desired_metadata(&vm, &owner()),
        tags: owner().tags(),
        description: vm.spec.description.clone(),
        flavor: Some("n3-1vcpu-2gb".into()),
        image: None,
        fault: None,
        availability_zone: None,
        volumes_attached: vec![],
    }
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn timing() -> Timing {
    Timing {
        error_replace: REPLACE,
        ..Timing::from_config(&crate::config::Config::default())
    }
}

fn plan_for(vm: &VirtualMachine, servers: &[Server]) -> Step {
    plan(
        vm,
        &owner(),
        servers,
        &FlavorCheck::Matches,
        &timing(),
        false,
        at(0),
    )
}

#[test]
fn no_server_means_create() {
    assert_eq!(plan_for(&published(), &[]), Step::Create);
}

#[test]
fn an_active_matching_server_is_converged() {
    assert_eq!(
        plan_for(&published(), &[server("s1", ServerStatus::Active)]),
        Step::Converged
    );
}

#[test]
fn a_building_server_is_waited_for() {
    assert_eq!(
        plan_for(&published(), &[server("s1", ServerStatus::Build)]),
        Step::Wait
    );
}

#[test]
fn duplicates_are_deleted_keeping_the_recorded_server() {
    let mut vm = published();
    vm.status = Some(verda_api::v1alpha1::VirtualMachineStatus {
        server_id: Some("s2".into()),
        ..Default::default()
    });
    let servers = [
        server("s1", ServerStatus::Active),
        server("s2", ServerStatus::Build),
    ];
    assert_eq!(
        plan_for(&vm, &servers),
        Step::DeleteDuplicates(vec![ServerId::new("s1")])
    );
}

#[test]
fn a_flavor_change_resizes_and_verify_resize_is_confirmed() {
    let vm = published();
    let active = [server("s1", ServerStatus::Active)];
    let step = plan(
        &vm,
        &owner(),
        &active,
        &FlavorCheck::Differs(FlavorId::new("11")),
        &timing(),
        false,
        at(0),
    );
    assert_eq!(step, Step::Resize(ServerId::new("s1"), FlavorId::new("11")));
    let verify = [server("s1", ServerStatus::VerifyResize)];
    assert_eq!(
        plan_for(&vm, &verify),
        Step::ConfirmResize(ServerId::new("s1"))
    );
}

#[test]
fn description_and_metadata_drift_is_corrected_in_place() {
    let mut vm = published();
    vm.spec.description = Some("new text".into());
    let step = plan_for(&vm, &[server("s1", ServerStatus::Active)]);
    assert_eq!(
        step,
        Step::UpdateDescription(ServerId::new("s1"), Some("new text".into()))
    );

    let mut vm = published();
    vm.spec.metadata = Some(BTreeMap::from([("team".into(), "web".into())]));
    let Step::SetMetadata(id, metadata) = plan_for(&vm, &[server("s1", ServerStatus::Active)])
    else {
        panic!("expected a metadata update");
    };
    assert_eq!(id, ServerId::new("s1"));
    assert_eq!(metadata.get("team").map(String::as_str), Some("web"));
    assert_eq!(
        metadata.get("verda.linecorp.com:uid").map(String::as_str),
        Some("u-1")
    );
}

#[test]
fn a_server_missing_an_owner_tag_gets_it_added_to_its_own() {
    let vm = published();
    let mut old = server("s1", ServerStatus::Active);
    // As an earlier version tagged it: the owner only, plus a tag of the user's.
    old.tags = vec![owner().tag(), "team:web".into()];
    let Step::RecordOwner(id, tags) = plan_for(&vm, &[old]) else {
        panic!("expected the owner's tags to be recorded");
    };
    assert_eq!(id, ServerId::new("s1"));
    assert!(tags.contains(&"team:web".to_owned()), "{tags:?}");
    assert!(owner().tags().iter().all(|t| tags.contains(t)), "{tags:?}");
    assert_eq!(
        plan_for(&vm, &[server("s1", ServerStatus::Active)]),
        Step::Converged
    );
}

fn failed(
    server_id: &str,
    count: i32,
    since: Timestamp,
) -> verda_api::v1alpha1::VirtualMachineStatus {
    verda_api::v1alpha1::VirtualMachineStatus {
        server_id: Some(server_id.into()),
        last_failure: Some(Box::new(verda_api::v1alpha1::ServerFailure {
            server_id: server_id.into(),
            reason: NO_VALID_HOST.into(),
            message: String::new(),
            since: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(since),
            count,
        })),
        ..Default::default()
    }
}

fn no_valid_host(id: &str) -> Server {
    let mut errored = server(id, ServerStatus::Error);
    errored.fault = Some(ServerFault {
        code: 500,
        message: "No valid host was found. There are not enough hosts available.".into(),
    });
    errored
}

#[test]
fn an_errored_server_is_reported_then_replaced_after_the_delay() {
    let errored = no_valid_host("s1");
    let mut vm = published();
    let Step::ReportError { reason, first, .. } = plan_for(&vm, std::slice::from_ref(&errored))
    else {
        panic!("expected a report first");
    };
    assert_eq!(reason, NO_VALID_HOST);
    assert!(first, "the first report carries the event");

    // Once reported, the replacement waits for the delay to pass.
    vm.status = Some(failed("s1", 1, at(0)));
    let early = plan(
        &vm,
        &owner(),
        std::slice::from_ref(&errored),
        &FlavorCheck::Matches,
        &timing(),
        false,
        at(10),
    );
    let Step::ReportError {
        first, retry_in, ..
    } = early
    else {
        panic!("expected the report to stand: {early:?}");
    };
    assert!(!first, "no second event for the same server");
    assert_eq!(retry_in, Duration::from_secs(20));
    let due = plan(
        &vm,
        &owner(),
        &[errored],
        &FlavorCheck::Matches,
        &timing(),
        false,
        at(31),
    );
    assert_eq!(due, Step::ReplaceErrored(ServerId::new("s1")));
}

#[test]
fn each_failure_in_a_row_doubles_the_wait_before_the_replacement() {
    // The third server in a row fails: 4 × the base delay, not counted from an older
    // condition transition.
    let errored = no_valid_host("s3");
    let mut vm = published();
    vm.status = Some(failed("s2", 2, at(0)));
    let Step::ReportError {
        first, retry_in, ..
    } = plan(
        &vm,
        &owner(),
        std::slice::from_ref(&errored),
        &FlavorCheck::Matches,
        &timing(),
        false,
        at(500),
    )
    else {
        panic!("a new failed server is reported first");
    };
    assert!(first);
    assert_eq!(retry_in, REPLACE * 4);
    assert_eq!(replace_delay(REPLACE, 6), REPLACE * 32);
    assert_eq!(replace_delay(REPLACE, 60), REPLACE * 32, "capped");
}

fn replica() -> VirtualMachine {
    vm(r#"
apiVersion: verda.linecorp.com/v1alpha1
kind: VirtualMachine
metadata:
  name: vm-sample
  namespace: default
  uid: u-1
  labels: {verda.linecorp.com/index: "4"}
  ownerReferences:
    - {apiVersion: verda.linecorp.com/v1alpha1, kind: VirtualMachineGroup, name: vm, uid: g-1, controller: true}
spec:
  image: centos79
  flavor: n3-1vcpu-2gb
  initScript: {value: ls}
  description: generated operator
"#)
}

#[test]
fn a_replica_records_its_index_on_new_servers_and_leaves_older_ones_alone() {
    let wanted = desired_metadata(&replica(), &owner());
    assert_eq!(wanted.get(META_INDEX).map(String::as_str), Some("4"));
    assert_eq!(
        desired_metadata(&published(), &owner()).get(META_INDEX),
        None
    );
    // A server of an earlier release, without the index: converged as it is.
    let older = server("s1", ServerStatus::Active);
    assert_eq!(plan_for(&replica(), &[older]), Step::Converged);
    // One that records another index is corrected.
    let mut moved = server("s1", ServerStatus::Active);
    moved.metadata.insert(META_INDEX.to_owned(), "3".into());
    let Step::SetMetadata(_, metadata) = plan_for(&replica(), &[moved]) else {
        panic!("expected a metadata update");
    };
    assert_eq!(metadata.get(META_INDEX).map(String::as_str), Some("4"));
}
