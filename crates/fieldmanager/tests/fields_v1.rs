//! `FieldsV1` shapes as kube-apiserver writes them (kubectl create, the
//! deployment controller's status writes, services, custom resources):
//! they decode, say what they own, and encode back byte for byte.

use serde_json::{Value, json};
use ubernetes_fieldmanager::path::path_string;
use ubernetes_fieldmanager::{FieldSet, PathElement};

fn round_trip(text: &str) -> FieldSet {
    let value: Value = serde_json::from_str(text).expect("json");
    let set = FieldSet::from_fields_v1(&value).expect("fieldsV1");
    assert_eq!(
        serde_json::to_string(&set.to_fields_v1()).expect("json"),
        text
    );
    set
}

fn printed(set: &FieldSet) -> Vec<String> {
    set.paths().iter().map(|p| path_string(p)).collect()
}

#[test]
fn deployment_status_entry_round_trips() {
    let set = round_trip(
        r#"{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}"#,
    );
    assert!(set.has(&[
        PathElement::field("status"),
        PathElement::field("conditions"),
        PathElement::key(vec![("type".into(), json!("Available"))]),
        PathElement::field("reason"),
    ]));
    // annotations: 2; status: 5 leaves, conditions itself, 2 items of 1 + 6.
    assert_eq!(set.len(), 2 + 5 + 1 + 14);
}

#[test]
fn service_ports_keyed_by_port_and_protocol_round_trip() {
    let set = round_trip(
        r#"{"f:spec":{"f:internalTrafficPolicy":{},"f:ports":{".":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:selector":{},"f:sessionAffinity":{},"f:type":{}}}"#,
    );
    assert!(
        printed(&set).contains(&r#".spec.ports[port=80,protocol="TCP"].targetPort"#.to_string())
    );
}

#[test]
fn finalizers_and_owner_references_round_trip() {
    let set = round_trip(
        r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"foregroundDeletion\"":{},"v:\"kubernetes.io/pvc-protection\"":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"6f0c5e0e-1f4a-4c39-9a3c-0d6f2a1b2c3d\"}":{}}}}"#,
    );
    assert_eq!(
        printed(&set),
        [
            ".metadata.finalizers",
            ".metadata.ownerReferences",
            r#".metadata.finalizers[="foregroundDeletion"]"#,
            r#".metadata.finalizers[="kubernetes.io/pvc-protection"]"#,
            r#".metadata.ownerReferences[uid="6f0c5e0e-1f4a-4c39-9a3c-0d6f2a1b2c3d"]"#,
        ]
    );
}

#[test]
fn custom_resource_entries_with_owned_structs_round_trip() {
    round_trip(
        r#"{"f:spec":{".":{},"f:replicas":{},"f:selector":{".":{},"f:matchLabels":{".":{},"f:app":{}}}}}"#,
    );
}

#[test]
fn keys_are_written_sorted_whatever_order_they_arrive_in() {
    let value =
        json!({"f:spec": {"f:ports": {"k:{\"protocol\":\"UDP\",\"containerPort\":53}": {}}}});
    let set = FieldSet::from_fields_v1(&value).expect("fieldsV1");
    assert_eq!(
        serde_json::to_string(&set.to_fields_v1()).expect("json"),
        r#"{"f:spec":{"f:ports":{"k:{\"containerPort\":53,\"protocol\":\"UDP\"}":{}}}}"#
    );
}

#[test]
fn set_algebra_matches_kube_ownership_transfer() {
    let applier = FieldSet::from_fields_v1(&json!({"f:data": {"f:a": {}, "f:b": {}}})).expect("a");
    let updater =
        FieldSet::from_fields_v1(&json!({"f:data": {".": {}, "f:b": {}, "f:c": {}}})).expect("u");
    assert_eq!(
        updater.difference(&applier).to_fields_v1(),
        json!({"f:data": {".": {}, "f:c": {}}})
    );
    assert_eq!(
        applier.intersection(&updater).to_fields_v1(),
        json!({"f:data": {"f:b": {}}})
    );
}
