//! Protobuf responses through the public API: objects serialised by
//! `k8s-openapi` (as the registry stores them) encode to bytes that the
//! `k8s-pb` prost types, like client-go's generated code, read back; a watch
//! stream of several frames splits on its length prefixes.

#![allow(clippy::unwrap_used)]

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message as _;
use serde_json::json;
use ubernetes_apiserver::protobuf::{decode, encodable, encode, encode_watch_event};

fn deployment() -> serde_json::Value {
    let labels = [("app".to_string(), "web".to_string())].into();
    let d = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: None,
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        status: None,
    };
    let mut v = serde_json::to_value(&d).unwrap();
    v["apiVersion"] = json!("apps/v1");
    v["kind"] = json!("Deployment");
    v
}

#[test]
fn a_k8s_openapi_deployment_reads_back_with_the_generated_protobuf_types() {
    let v = deployment();
    assert!(encodable("apps/v1", "Deployment"));
    let bytes = encode(&v).unwrap();
    assert_eq!(decode(&bytes).unwrap(), v);
    let unknown = Unknown::decode(&bytes[4..]).unwrap();
    let d = k8s_pb::api::apps::v1::Deployment::decode(unknown.raw.unwrap().as_slice()).unwrap();
    let spec = d.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(spec.selector.unwrap().match_labels["app"], "web");
    let pod = spec.template.unwrap().spec.unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some("nginx"));
}

#[test]
fn a_watch_stream_splits_into_events_on_its_length_prefixes() {
    let mut v = deployment();
    let mut stream = encode_watch_event("ADDED", &v).unwrap();
    v["spec"]["replicas"] = json!(5);
    stream.extend(encode_watch_event("MODIFIED", &v).unwrap());
    stream.extend(encode_watch_event("DELETED", &v).unwrap());

    let mut events = Vec::new();
    let mut rest = stream.as_slice();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let ev = meta::WatchEvent::decode(&rest[4..4 + len]).unwrap();
        let obj = decode(&ev.object.unwrap().raw.unwrap()).unwrap();
        events.push((ev.r#type.unwrap(), obj["spec"]["replicas"].clone()));
        rest = &rest[4 + len..];
    }
    assert_eq!(
        events,
        vec![
            ("ADDED".to_string(), json!(2)),
            ("MODIFIED".to_string(), json!(5)),
            ("DELETED".to_string(), json!(5)),
        ]
    );
}

/// The fuzz target's property on its seed corpus (`fuzz/corpus/decode_protobuf`,
/// hand-encoded bodies of every kind family: core, apps, CRDs with every
/// JSONSchemaProps wrapper form, DeleteOptions, federation Clusters, Scale):
/// the well-formed seeds decode, and decode → encode → decode is a fixed point.
#[test]
fn the_fuzz_seeds_decode_and_round_trip() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/decode_protobuf");
    let mut decoded = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(v) = decode(&std::fs::read(&path).unwrap()) else {
            continue;
        };
        decoded.push(name.clone());
        let (av, kind) = (
            v["apiVersion"].as_str().unwrap(),
            v["kind"].as_str().unwrap(),
        );
        if !encodable(av, kind) {
            continue;
        }
        let once = decode(&encode(&v).unwrap()).unwrap();
        assert_eq!(once, v, "{name}: decode → encode → decode changed it");
    }
    for seed in [
        "configmap.pb",
        "customresourcedefinition.pb",
        "deleteoptions.pb",
        "cluster.pb",
        "scale.pb",
    ] {
        assert!(decoded.iter().any(|d| d == seed), "{seed} does not decode");
    }
}
