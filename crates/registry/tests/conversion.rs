//! One stored form per kind over a real sled engine: what autoscaling/v1 and
//! events.k8s.io/v1 write is stored as autoscaling/v2 and core v1, and what
//! an older release stored apart per version is moved at start.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use ubernetes_registry::store::WriteOptions;
use ubernetes_registry::{Registry, RegistryOptions};
use ubernetes_storage::Storage;
use ubernetes_storage::sled_engine::SledStorage;

async fn registry(storage: Arc<dyn Storage>) -> Arc<Registry> {
    Registry::new(
        storage,
        ubernetes_registry::kinds::builtin(),
        RegistryOptions::default(),
    )
    .await
    .expect("registry")
}

async fn raw(storage: &Arc<dyn Storage>, key: &str) -> Option<Value> {
    let kv = storage.get(key).await.expect("get")?;
    Some(serde_json::from_slice(&kv.value).expect("stored JSON"))
}

#[tokio::test]
async fn v1_writes_are_stored_in_the_storage_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("sled"));
    let reg = registry(storage.clone()).await;
    let hpa_v1 = reg
        .get("autoscaling", "v1", "horizontalpodautoscalers")
        .expect("v1");
    hpa_v1
        .create(
            None,
            Some("default"),
            json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "maxReplicas": 5, "targetCPUUtilizationPercentage": 42}}),
            &WriteOptions::default(),
        )
        .await
        .map_err(|e| e.message)
        .expect("create v1");
    let stored = raw(
        &storage,
        "/registry/autoscaling/horizontalpodautoscalers/default/web",
    )
    .await
    .expect("stored under the v2 prefix");
    assert_eq!(stored["apiVersion"], "autoscaling/v2");
    assert_eq!(
        stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        42
    );
    assert!(
        raw(
            &storage,
            "/registry/autoscaling/horizontalpodautoscalers.v1/default/web"
        )
        .await
        .is_none()
    );
    // The v2 store reads the same object.
    let v2 = reg
        .get("autoscaling", "v2", "horizontalpodautoscalers")
        .expect("v2")
        .get_value(Some("default"), "web")
        .await
        .map_err(|e| e.message)
        .expect("get v2");
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["name"], "cpu");

    let events = reg
        .get("events.k8s.io", "v1", "events")
        .expect("events.k8s.io");
    events
        .create(
            None,
            Some("default"),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
                "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/c",
                "reportingInstance": "i1", "action": "Act", "reason": "Because", "type": "Normal",
                "note": "hello", "regarding": {"kind": "Pod", "name": "p"}}),
            &WriteOptions::default(),
        )
        .await
        .map_err(|e| e.message)
        .expect("create events.k8s.io");
    let stored = raw(&storage, "/registry/core/events/default/e1")
        .await
        .expect("core prefix");
    assert_eq!(stored["apiVersion"], "v1");
    assert_eq!(stored["message"], "hello");
    assert_eq!(stored["involvedObject"]["name"], "p");
    assert_eq!(stored["reportingComponent"], "example.com/c");
}

#[tokio::test]
async fn objects_stored_apart_by_an_older_release_are_moved_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("sled"));
    let old_hpa = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "old", "namespace": "ns1", "uid": "u-hpa", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 4, "targetCPUUtilizationPercentage": 33}});
    let old_ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "oldev", "namespace": "ns1", "uid": "u-ev"},
        "reason": "R", "note": "kept", "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal"});
    // A name both versions had: the core one wins, the other stays put.
    let clash = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "clash", "namespace": "ns1"}, "note": "second"});
    let core_clash = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "clash", "namespace": "ns1"}, "message": "first"});
    for (key, v) in [
        (
            "/registry/autoscaling/horizontalpodautoscalers.v1/ns1/old",
            &old_hpa,
        ),
        ("/registry/events.k8s.io/events/ns1/oldev", &old_ev),
        ("/registry/events.k8s.io/events/ns1/clash", &clash),
        ("/registry/core/events/ns1/clash", &core_clash),
    ] {
        storage
            .create(key, Bytes::from(v.to_string()))
            .await
            .expect("seed");
    }
    let reg = registry(storage.clone()).await;
    let hpa = reg
        .get("autoscaling", "v2", "horizontalpodautoscalers")
        .expect("v2")
        .get_value(Some("ns1"), "old")
        .await
        .map_err(|e| e.message)
        .expect("old HPA readable as v2");
    assert_eq!(hpa["metadata"]["uid"], "u-hpa");
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        33
    );
    let ev = reg
        .get("", "v1", "events")
        .expect("core events")
        .get_value(Some("ns1"), "oldev")
        .await
        .map_err(|e| e.message)
        .expect("old event readable as core v1");
    assert_eq!(ev["message"], "kept");
    assert!(
        raw(
            &storage,
            "/registry/autoscaling/horizontalpodautoscalers.v1/ns1/old"
        )
        .await
        .is_none()
    );
    assert!(
        raw(&storage, "/registry/events.k8s.io/events/ns1/oldev")
            .await
            .is_none()
    );
    assert_eq!(
        raw(&storage, "/registry/core/events/ns1/clash")
            .await
            .expect("core")["message"],
        "first"
    );
    assert!(
        raw(&storage, "/registry/events.k8s.io/events/ns1/clash")
            .await
            .is_some()
    );
}
