//! Validation at apply time: the published manifests and every sample are accepted, and
//! each rule of the schema refuses the bad input it is written for, with its message.

use crate::support;
use support::merge;

use serde_json::{Value, json};
use support::crd_schema::{documents, refusals, repo_root};
use verda_api::v1alpha1::{LoadBalancer, VirtualMachine, VirtualMachineGroup};

fn vm(spec: Value) -> Value {
    json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachine",
           "metadata": {"name": "vm"}, "spec": spec})
}

fn vmg(spec: Value) -> Value {
    json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "VirtualMachineGroup",
           "metadata": {"name": "vmg"}, "spec": spec})
}

fn lb(spec: Value) -> Value {
    json!({"apiVersion": "verda.linecorp.com/v1alpha1", "kind": "LoadBalancer",
           "metadata": {"name": "lb"}, "spec": spec})
}

fn lb_port(port: i64, real_servers: Value) -> Value {
    json!({"port": port, "protocol": "http", "realServers": real_servers})
}

fn group_servers() -> Value {
    json!({"protocol": "http", "port": 80, "virtualMachineGroupRef": "web"})
}

fn assert_refused(object: &Value, old: Option<&Value>, expected: &str) {
    let why = refusals(object, old);
    assert!(
        why.iter().any(|line| line.contains(expected)),
        "expected a refusal containing {expected:?}, got {why:?} for {object}"
    );
}

fn assert_accepted(object: &Value, old: Option<&Value>) {
    let why = refusals(object, old);
    assert!(
        why.is_empty(),
        "expected {object} to be accepted, got {why:?}"
    );
}

/// Deserializes a manifest document into our types, as the controllers would read it.
fn deserialize_typed(doc: &Value) {
    let kind = doc["kind"].as_str().unwrap_or_default();
    let result = match kind {
        "VirtualMachine" => serde_json::from_value::<VirtualMachine>(doc.clone()).map(drop),
        "VirtualMachineGroup" => {
            serde_json::from_value::<VirtualMachineGroup>(doc.clone()).map(drop)
        }
        "LoadBalancer" => serde_json::from_value::<LoadBalancer>(doc.clone()).map(drop),
        _ => Ok(()),
    };
    result.unwrap_or_else(|e| panic!("{kind} does not deserialize: {e}"));
}

#[test]
fn published_manifests_and_every_sample_deserialize_and_validate() {
    let mut checked = 0;
    for entry in std::fs::read_dir(repo_root().join("samples")).expect("samples/ exists") {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("readable sample");
        for doc in documents(&text) {
            if doc["apiVersion"] != "verda.linecorp.com/v1alpha1" {
                continue;
            }
            deserialize_typed(&doc);
            let why = refusals(&doc, None);
            assert!(why.is_empty(), "{} is refused: {why:?}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 6, "only {checked} objects found in samples/");
}

#[test]
fn samples_hold_the_published_manifests_unchanged() {
    let published = repo_root().join("../shared/verda-manifests");
    let Ok(entries) = std::fs::read_dir(&published) else {
        // The published set lives beside the repository; without it there is nothing
        // to compare, and the samples are still validated above.
        eprintln!("{} not present; skipped", published.display());
        return;
    };
    for entry in entries {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().expect("file name");
        let ours = std::fs::read(repo_root().join("samples").join(name))
            .unwrap_or_else(|_| panic!("samples/ lacks {}", name.to_string_lossy()));
        assert_eq!(
            ours,
            std::fs::read(&path).expect("readable"),
            "{name:?} differs"
        );
    }
}

#[test]
fn virtual_machine_rules_refuse_bad_input_with_their_message() {
    let ok = json!({"image": "centos79", "flavor": "n3-1vcpu-2gb"});
    assert_accepted(&vm(ok.clone()), None);
    // Nova's limits exactly: 124 items (128 less the operator's 4), any allowed character.
    let mut at_limit: serde_json::Map<String, Value> =
        (0..123).map(|i| (format!("k{i}"), json!("v"))).collect();
    at_limit.insert("team:app.tier -_x".into(), json!("v".repeat(255)));
    assert_accepted(
        &vm(json!({"image": "i", "flavor": "f", "metadata": at_limit})),
        None,
    );
    let cases: Vec<(Value, &str)> = vec![
        (json!({"image": "", "flavor": "f"}), "/spec/image"),
        (json!({"image": "i", "flavor": ""}), "/spec/flavor"),
        (json!({"flavor": "f"}), "\"image\" is a required property"),
        (
            json!({"image": "i", "flavor": "f", "initScript": {"value": "ls", "configMapKeyRef": {"name": "c", "key": "k"}}}),
            "initScript needs exactly one of value, configMapKeyRef or secretKeyRef",
        ),
        (
            json!({"image": "i", "flavor": "f", "initScript": {}}),
            "initScript needs exactly one of value, configMapKeyRef or secretKeyRef",
        ),
        (
            json!({"image": "i", "flavor": "f", "metadata": {"verda.linecorp.com:uid": "x"}}),
            "metadata keys starting with verda.linecorp.com: are reserved",
        ),
        (
            json!({"image": "i", "flavor": "f", "description": "two\nlines"}),
            "/spec/description",
        ),
        (
            json!({"image": "i", "flavor": "f", "initScript": {"value": "x".repeat(49150)}}),
            "/spec/initScript/value",
        ),
        (
            json!({"image": "i", "flavor": "f", "metadata": {"team/app": "x"}}),
            "metadata keys must be 1-255 letters, digits",
        ),
        (
            json!({"image": "i", "flavor": "f", "metadata": {"": "x"}}),
            "metadata keys must be 1-255 letters, digits",
        ),
        (
            json!({"image": "i", "flavor": "f", "metadata": {"k": "v".repeat(256)}}),
            "/spec/metadata/k",
        ),
        (
            json!({"image": "i", "flavor": "f", "metadata": (0..126).map(|i| (format!("k{i}"), json!("v"))).collect::<serde_json::Map<_, _>>()}),
            "/spec/metadata",
        ),
        (
            json!({"image": "i", "flavor": "f", "networks": []}),
            "/spec/networks",
        ),
        (
            json!({"image": "i", "flavor": "f", "import": {"id": "web-1"}}),
            "/spec/import/id",
        ),
    ];
    for (spec, expected) in cases {
        assert_refused(&vm(spec), None, expected);
    }
}

#[test]
fn fields_nova_cannot_change_are_immutable_and_flavor_is_not() {
    let old = vm(
        json!({"image": "centos79", "flavor": "small", "keyName": "a",
                        "initScript": {"value": "ls"}, "description": "x"}),
    );
    let changes: Vec<(Value, &str)> = vec![
        (json!({"image": "ubuntu"}), "spec.image is immutable"),
        (json!({"keyName": "b"}), "spec.keyName is immutable"),
        (json!({"keyName": null}), "spec.keyName is immutable"),
        (
            json!({"initScript": {"value": "rm"}}),
            "spec.initScript is immutable",
        ),
        (json!({"networks": ["other"]}), "spec.networks is immutable"),
        (
            json!({"securityGroups": ["web"]}),
            "spec.securityGroups is immutable",
        ),
        (
            json!({"availabilityZone": "az2"}),
            "spec.availabilityZone is immutable",
        ),
    ];
    for (patch, expected) in changes {
        let mut new = old.clone();
        merge(&mut new["spec"], &patch);
        assert_refused(&new, Some(&old), expected);
    }
    let imported = vm(json!({"image": "i", "flavor": "f",
        "import": {"id": "3f1c2a4e-0000-4000-8000-000000000001"}}));
    let mut other = imported.clone();
    merge(
        &mut other["spec"],
        &json!({"import": {"id": "3f1c2a4e-0000-4000-8000-000000000002"}}),
    );
    assert_refused(&other, Some(&imported), "spec.import is immutable");
    let mut resized = old.clone();
    merge(
        &mut resized["spec"],
        &json!({"flavor": "large", "description": "y", "metadata": {"a": "b"}}),
    );
    assert_accepted(&resized, Some(&old));
}

#[test]
fn group_rules_refuse_bad_input_with_their_message() {
    let template = json!({"image": "centos79", "flavor": "n3-1vcpu-2gb"});
    assert_accepted(&vmg(json!({"replicas": 0, "template": template})), None);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"replicas": -1, "template": template}),
            "/spec/replicas",
        ),
        (
            json!({"replicas": 101, "template": template}),
            "/spec/replicas",
        ),
        (
            json!({"replicas": 1, "haPolicy": "medium", "template": template}),
            "/spec/haPolicy",
        ),
        (
            json!({"replicas": 1, "template": {"image": "", "flavor": "f"}}),
            "/spec/template/image",
        ),
        (
            json!({"replicas": 1, "updateStrategy": "Sometimes", "template": template}),
            "/spec/updateStrategy",
        ),
    ];
    for (spec, expected) in cases {
        assert_refused(&vmg(spec), None, expected);
    }
    // A rollout that can neither add nor take away a replica, in a Deployment's words.
    let rollout =
        |update: Value| vmg(json!({"replicas": 2, "template": template, "rollingUpdate": update}));
    let never = "maxUnavailable may not be 0 when maxSurge is 0";
    assert_refused(
        &rollout(json!({"maxSurge": 0, "maxUnavailable": 0})),
        None,
        never,
    );
    assert_refused(
        &rollout(json!({"maxSurge": "0%", "maxUnavailable": 0})),
        None,
        never,
    );
    assert_refused(
        &rollout(json!({"maxSurge": 0, "maxUnavailable": "0%"})),
        None,
        never,
    );
    // (The fields' own count-or-percent rule asks CEL's type(), which the client-side
    // evaluator lacks: only this rule's verdict is read here.)
    for fine in [
        json!({"maxSurge": 0}),
        json!({"maxUnavailable": 0}),
        json!({"maxSurge": 0, "maxUnavailable": 1}),
        json!({"maxSurge": "10%", "maxUnavailable": 0}),
        json!({"maxSurge": 0, "maxUnavailable": "10%"}),
    ] {
        let why = refusals(&rollout(fine.clone()), None);
        assert!(
            !why.iter().any(|w| w.contains(never)),
            "{fine} refused: {why:?}"
        );
    }
    let old = vmg(json!({"replicas": 2, "haPolicy": "soft", "template": template}));
    let new = vmg(json!({"replicas": 2, "haPolicy": "hard", "template": template}));
    assert_refused(&new, Some(&old), "haPolicy is immutable");
    // Template changes roll out; they are not refused.
    let rolled = vmg(json!({"replicas": 3, "haPolicy": "soft",
                            "template": {"image": "ubuntu", "flavor": "big"}}));
    assert_accepted(&rolled, Some(&old));
}

#[test]
fn load_balancer_rules_refuse_bad_input_with_their_message() {
    let good = lb(json!({"ports": [lb_port(80, group_servers())]}));
    assert_accepted(&good, None);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"ports": [lb_port(0, group_servers())]}),
            "/spec/ports/0/port",
        ),
        (
            json!({"ports": [lb_port(65536, group_servers())]}),
            "/spec/ports/0/port",
        ),
        (json!({"ports": []}), "/spec/ports"),
        (
            json!({"ports": [lb_port(80, group_servers()), lb_port(80, group_servers())]}),
            "each port may appear only once in spec.ports",
        ),
        (
            json!({"ports": [{"port": 80, "protocol": "ftp", "realServers": group_servers()}]}),
            "/spec/ports/0/protocol",
        ),
        (
            json!({"vipType": "dmz", "ports": [lb_port(80, group_servers())]}),
            "/spec/vipType",
        ),
        (
            json!({"ports": [lb_port(80, json!({"protocol": "http", "port": 80}))]}),
            "realServers needs exactly one of virtualMachineGroupRef, groups, virtualMachines or addresses",
        ),
        (
            json!({"ports": [lb_port(80, json!({"protocol": "http", "port": 80,
                   "virtualMachineGroupRef": "web", "addresses": ["10.0.0.1"]}))]}),
            "realServers needs exactly one of virtualMachineGroupRef, groups, virtualMachines or addresses",
        ),
        (
            json!({"ports": [lb_port(80, json!({"protocol": "http", "port": 0, "virtualMachineGroupRef": "web"}))]}),
            "/spec/ports/0/realServers/port",
        ),
        (
            json!({"ports": [lb_port(80, json!({"protocol": "tcp", "port": 80, "addresses": ["not-an-ip"]}))]}),
            "addresses must be IPv4 or IPv6 addresses",
        ),
        (
            json!({"ports": [{"port": 80, "protocol": "http", "realServers": group_servers(),
                   "monitors": [{"protocol": "http", "delaySeconds": 2, "timeoutSeconds": 5}]}]}),
            "timeoutSeconds must not exceed delaySeconds",
        ),
        (
            json!({"ports": [{"port": 80, "protocol": "tcp", "realServers": group_servers(),
                   "monitors": [{"protocol": "tcp", "endpoint": "/health"}]}]}),
            "endpoint applies only to http and https monitors",
        ),
        (
            json!({"ports": [{"port": 80, "protocol": "http", "realServers": group_servers(),
                   "monitors": [{"protocol": "smtp"}]}]}),
            "/spec/ports/0/monitors/0/protocol",
        ),
    ];
    for (spec, expected) in cases {
        assert_refused(&lb(spec), None, expected);
    }
}

#[test]
fn load_balancer_options_refuse_wrong_combinations_with_their_reason() {
    let full = json!({"port": 80, "protocol": "http",
        "timeouts": {"clientData": "50s", "memberConnect": "5s", "memberData": "1m30s", "tcpInspect": "0s"},
        "connectionLimit": 10000, "allowedCIDRs": ["10.0.0.0/8"],
        "insertHeaders": {"X-Forwarded-For": true, "X-Forwarded-Proto": true},
        "realServers": {"protocol": "proxy", "port": 80, "algorithm": "least-connections",
            "sessionPersistence": {"type": "app-cookie", "cookieName": "sid"},
            "groups": [{"name": "web-blue", "weight": 90}, {"name": "web-green", "weight": 10}]},
        "monitors": [{"protocol": "http", "endpoint": "/health", "delay": "5s", "timeout": "3s", "maxRetriesDown": 3, "httpMethod": "HEAD"}]});
    assert_accepted(&lb(json!({"ports": [full.clone()]})), None);
    let with = |patch: Value| {
        let mut port = full.clone();
        merge(&mut port, &patch);
        lb(json!({ "ports": [port] }))
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"realServers": {"protocol": "https"}}),
            "realServers.protocol does not fit the listener's protocol",
        ),
        (
            json!({"protocol": "proxy"}),
            "proxy and proxyv2 are protocols of realServers",
        ),
        (
            json!({"protocol": "tcp", "realServers": {"protocol": "tcp"}}),
            "insertHeaders applies only to http and terminated-https listeners",
        ),
        (
            json!({"realServers": {"sessionPersistence": {"type": "app-cookie", "cookieName": null}}}),
            "cookieName is required with app-cookie and allowed with it only",
        ),
        (
            json!({"realServers": {"sessionPersistence": {"type": "source-ip", "cookieName": "sid"}}}),
            "cookieName is required with app-cookie and allowed with it only",
        ),
        (
            json!({"allowedCIDRs": ["10.0.0.0/33"]}),
            "allowedCIDRs must be networks",
        ),
        (
            json!({"timeouts": {"clientData": "5x"}}),
            "/spec/ports/0/timeouts/clientData",
        ),
        (
            json!({"timeouts": {"memberData": "577h"}}),
            "a listener timeout may be at most 576h",
        ),
        (
            json!({"realServers": {"groups": [{"name": "web-blue", "weight": 1}, {"name": "web-blue", "weight": 2}]}}),
            "each group may appear only once in groups",
        ),
        (
            json!({"realServers": {"groups": [{"name": "web-blue", "weight": 257}]}}),
            "/spec/ports/0/realServers/groups/0/weight",
        ),
        (
            json!({"realServers": {"virtualMachineGroupRef": "web"}}),
            "realServers needs exactly one of virtualMachineGroupRef, groups, virtualMachines or addresses",
        ),
        (
            json!({"monitors": [{"protocol": "tcp", "httpMethod": "GET"}]}),
            "httpMethod applies only to http and https monitors",
        ),
        (
            json!({"monitors": [{"protocol": "tcp", "delay": "500ms"}]}),
            "/spec/ports/0/monitors/0/delay",
        ),
        (
            json!({"monitors": [{"protocol": "tcp", "delay": "2h"}]}),
            "a monitor delay or timeout is 1s to 1h",
        ),
        (
            json!({"monitors": [{"protocol": "tcp", "delay": "5s", "timeout": "6s"}]}),
            "timeout must not exceed delay",
        ),
        (
            json!({"monitors": [{"protocol": "tcp", "delay": "5s", "delaySeconds": 5}]}),
            "delay and delaySeconds (timeout and timeoutSeconds) say the same",
        ),
    ];
    for (patch, expected) in cases {
        assert_refused(&with(patch), None, expected);
    }
    // Octavia cannot change a listener's or pool's protocol: refused, the rest edits.
    let old = lb(json!({ "ports": [full.clone()] }));
    for patch in [
        json!({"protocol": "tcp", "insertHeaders": null}),
        json!({"realServers": {"protocol": "http"}}),
    ] {
        assert_refused(
            &with(patch),
            Some(&old),
            "the protocol and realServers.protocol of a port cannot change",
        );
    }
    assert_accepted(&with(json!({"connectionLimit": 5})), Some(&old));
    // Nor a monitor's type: refused; taking the monitor out (and back later) is not.
    assert_refused(
        &with(json!({"monitors": [{"protocol": "tcp"}]})),
        Some(&old),
        "the protocol of a port's monitor cannot change",
    );
    assert_accepted(&with(json!({"monitors": null})), Some(&old));
    let moved = json!({"port": 8080, "protocol": "tcp", "realServers": {"protocol": "tcp", "port": 80, "addresses": ["10.0.0.1"]}});
    assert_accepted(&lb(json!({ "ports": [moved] })), Some(&old));
    let udp = json!({"port": 53, "protocol": "udp",
        "realServers": {"protocol": "udp", "port": 53, "addresses": ["10.0.0.1"],
            "sessionPersistence": {"type": "http-cookie"}}});
    assert_refused(
        &lb(json!({ "ports": [udp] })),
        None,
        "udp members keep sessions by source-ip only",
    );
}

#[test]
fn a_terminated_https_port_names_its_certificate_secrets_and_no_other_port_does() {
    let tls = json!({"port": 443, "protocol": "terminated-https",
        "tls": {"secretName": "web-tls", "sniSecretNames": ["api-tls"]},
        "insertHeaders": {"X-Forwarded-Proto": true},
        "realServers": {"protocol": "http", "port": 80, "addresses": ["10.0.0.1"]}});
    assert_accepted(&lb(json!({"ports": [tls.clone()]})), None);
    let with = |patch: Value| {
        let mut port = tls.clone();
        merge(&mut port, &patch);
        lb(json!({ "ports": [port] }))
    };
    for (patch, expected) in [
        (
            json!({"tls": null}),
            "tls (the certificate Secret) is required with protocol terminated-https",
        ),
        (
            json!({"protocol": "https", "insertHeaders": null, "realServers": {"protocol": "https"}}),
            "tls (the certificate Secret) is required with protocol terminated-https and allowed with it only",
        ),
        (
            json!({"realServers": {"protocol": "tcp"}}),
            "realServers.protocol does not fit the listener's protocol",
        ),
        (
            json!({"tls": {"sniSecretNames": ["web-tls"]}}),
            "sniSecretNames must not repeat secretName",
        ),
        (
            json!({"tls": {"sniSecretNames": ["a", "a"]}}),
            "each Secret may appear only once in sniSecretNames",
        ),
        (
            json!({"tls": {"secretName": ""}}),
            "/spec/ports/0/tls/secretName",
        ),
    ] {
        assert_refused(&with(patch), None, expected);
    }
    // A renewed or another Secret is an edit; terminating TLS or not is the protocol's.
    let old = lb(json!({ "ports": [tls.clone()] }));
    assert_accepted(
        &with(json!({"tls": {"secretName": "web-tls-2"}})),
        Some(&old),
    );
    let http = json!({"protocol": "http", "tls": null});
    assert_refused(
        &with(http),
        Some(&old),
        "the protocol and realServers.protocol of a port cannot change",
    );
}

#[test]
fn load_balancer_location_is_immutable() {
    let old =
        lb(json!({"region": "tokyo1", "zone": "dev", "ports": [lb_port(80, group_servers())]}));
    for (patch, expected) in [
        (json!({"region": "RegionOne"}), "spec.region is immutable"),
        (json!({"zone": "prod"}), "spec.zone is immutable"),
        (json!({"vipSubnet": "other"}), "spec.vipSubnet is immutable"),
    ] {
        let mut new = old.clone();
        merge(&mut new["spec"], &patch);
        assert_refused(&new, Some(&old), expected);
    }
    let mut more_ports = old.clone();
    merge(
        &mut more_ports["spec"],
        &json!({"ports": [lb_port(80, group_servers()), lb_port(81, group_servers())]}),
    );
    assert_accepted(&more_ports, Some(&old));
}

/// JSON merge patch (RFC 7386): what `kubectl patch --type merge` does.

#[test]
fn load_balancer_service_type_is_immutable() {
    let old = lb(json!({"serviceType": "generic", "ports": [lb_port(80, group_servers())]}));
    let mut new = old.clone();
    merge(&mut new["spec"], &json!({"serviceType": "premium"}));
    assert_refused(&new, Some(&old), "spec.serviceType is immutable");
    assert_accepted(&old, Some(&old));
}

#[test]
fn volumes_grow_never_shrink_keep_their_type_and_names_and_the_boot_volume_is_fixed() {
    let base = json!({"image": "centos79", "flavor": "m1.small",
        "bootVolume": {"size": 20},
        "volumes": [{"name": "data", "size": 10, "type": "ssd"}, {"name": "logs", "size": 1}]});
    let old = vm(base.clone());
    let with = |patch: Value| {
        let mut spec = base.clone();
        merge(&mut spec, &patch);
        vm(spec)
    };
    let grown = with(
        json!({"volumes": [{"name": "data", "size": 12, "type": "ssd"}, {"name": "logs", "size": 1}]}),
    );
    assert_accepted(&grown, Some(&old));
    let shrunk = with(
        json!({"volumes": [{"name": "data", "size": 9, "type": "ssd"}, {"name": "logs", "size": 1}]}),
    );
    assert_refused(&shrunk, Some(&old), "can grow, never shrink");
    let retyped = with(
        json!({"volumes": [{"name": "data", "size": 10, "type": "hdd"}, {"name": "logs", "size": 1}]}),
    );
    assert_refused(&retyped, Some(&old), "volumes[].type is immutable");
    let typed = with(
        json!({"volumes": [{"name": "data", "size": 10, "type": "ssd"}, {"name": "logs", "size": 1, "type": "ssd"}]}),
    );
    assert_refused(&typed, Some(&old), "volumes[].type is immutable");
    let reboot = with(json!({"bootVolume": {"size": 30}}));
    assert_refused(&reboot, Some(&old), "spec.bootVolume is immutable");
    assert_refused(
        &with(json!({"volumes": [{"name": "Data_1", "size": 1}]})),
        None,
        "volumes/0/name",
    );
    assert_refused(
        &with(json!({"volumes": [{"name": "data", "size": 0}]})),
        None,
        "volumes/0/size",
    );
    // A new volume added later, or one removed, is an ordinary edit.
    let added = with(
        json!({"volumes": [{"name": "data", "size": 10, "type": "ssd"}, {"name": "logs", "size": 1}, {"name": "wal", "size": 2}]}),
    );
    assert_accepted(&added, Some(&old));
}

#[test]
fn a_groups_template_leaves_volume_retention_to_the_group() {
    let template = json!({"image": "centos79", "flavor": "m1.small",
        "volumes": [{"name": "data", "size": 10}]});
    let ok = vmg(json!({"replicas": 3, "template": template,
        "volumeRetention": {"whenScaled": "Delete", "whenDeleted": "Retain"}}));
    assert_accepted(&ok, None);
    let mut in_template = template.clone();
    in_template["volumeRetention"] = json!({"whenDeleted": "Delete"});
    let refused = vmg(json!({"replicas": 3, "template": in_template}));
    assert_refused(&refused, None, "set volumeRetention on the group");
    let unknown = vmg(
        json!({"replicas": 3, "template": template, "volumeRetention": {"whenScaled": "Keep"}}),
    );
    assert_refused(&unknown, None, "whenScaled");
    // A template change (the boot volume included) rolls out; nothing is immutable there.
    let mut old_template = template.clone();
    old_template["bootVolume"] = json!({"size": 20});
    let mut new_template = template.clone();
    new_template["bootVolume"] = json!({"size": 40});
    let old = vmg(json!({"replicas": 3, "template": old_template}));
    assert_accepted(
        &vmg(json!({"replicas": 3, "template": new_template})),
        Some(&old),
    );
}

#[test]
fn declared_ports_keep_their_networks_addresses_and_the_port_taken_over() {
    const PORT: &str = "3f1c2a4e-0000-4000-8000-00000000000a";
    let ports = |entry: Value| json!({"image": "i", "flavor": "f", "ports": [entry]});
    let old = vm(ports(json!({"network": "db", "portID": PORT})));
    assert_accepted(&old, None);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"image": "i", "flavor": "f", "networks": ["a"], "ports": [{"network": "db"}]}),
            "give either spec.networks or spec.ports",
        ),
        (
            json!({"image": "i", "flavor": "f", "floatingIP": {"network": "public"}}),
            "spec.floatingIP needs spec.ports",
        ),
        (
            ports(json!({"network": "db", "portID": PORT, "fixedIPs": ["10.0.0.5"]})),
            "give either portID",
        ),
        (ports(json!({"network": "db", "portID": "p-1"})), "portID"),
    ];
    for (spec, expected) in cases {
        assert_refused(&vm(spec), None, expected);
    }
    let other = vm(ports(
        json!({"network": "db", "portID": PORT.replace('a', "b")}),
    ));
    assert_refused(&other, Some(&old), "portID is immutable");
    let dropped = vm(ports(json!({"network": "db"})));
    assert_refused(&dropped, Some(&old), "portID is immutable");
    let moved = vm(ports(json!({"network": "web", "portID": PORT})));
    assert_refused(
        &moved,
        Some(&old),
        "the networks of spec.ports are immutable",
    );
    let fixed = vm(ports(json!({"network": "db", "fixedIPs": ["10.0.0.5"]})));
    let refixed = vm(ports(json!({"network": "db", "fixedIPs": ["10.0.0.6"]})));
    assert_refused(&refixed, Some(&fixed), "fixedIPs is immutable");
    let paired = vm(ports(json!({"network": "db", "fixedIPs": ["10.0.0.5"],
        "allowedAddressPairs": [{"ipAddress": "10.0.0.100"}]})));
    assert_accepted(&paired, Some(&fixed));
    // A template's ports neither choose addresses nor take a port over.
    for entry in [
        json!({"network": "db", "portID": PORT}),
        json!({"network": "db", "fixedIPs": ["10.0.0.5"]}),
    ] {
        let template = json!({"image": "i", "flavor": "f", "ports": [entry]});
        let group = vmg(json!({"replicas": 2, "template": template}));
        assert_refused(&group, None, "a template's ports may not");
    }
}
