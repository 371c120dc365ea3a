//! A stored value in a stale form (encrypted with a key that is no longer
//! the first one) is written back by an update even when the object does not
//! change, as kube's GuaranteedUpdate: what makes `kubectl get secrets -A -o
//! json | kubectl replace -f -` re-encrypt. Once current, an unchanged update
//! writes nothing again.

use std::sync::Arc;

use serde_json::json;
use ubernetes_registry::store::WriteOptions;
use ubernetes_registry::{Registry, RegistryOptions};
use ubernetes_storage::Storage;
use ubernetes_storage::encryption::{EncryptedStorage, EncryptionConfig};
use ubernetes_storage::sled_engine::SledStorage;

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY=";

fn encrypted(raw: &Arc<dyn Storage>, keys: &[(&str, &str)]) -> Arc<dyn Storage> {
    let mut text = String::from(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [configmaps]
    providers:
      - aescbc:
          keys:
",
    );
    for (name, secret) in keys {
        text.push_str(&format!(
            "            - name: {name}\n              secret: {secret}\n"
        ));
    }
    let config = EncryptionConfig::parse(&text).expect("valid config");
    Arc::new(EncryptedStorage::new(raw.clone(), Arc::new(config)))
}

async fn registry(storage: Arc<dyn Storage>) -> Arc<Registry> {
    Registry::new(
        storage,
        ubernetes_registry::kinds::builtin(),
        RegistryOptions::default(),
    )
    .await
    .expect("registry")
}

const KEY: &str = "/registry/core/configmaps/default/c";

#[tokio::test]
async fn an_unchanged_update_rewrites_a_value_encrypted_with_an_older_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open sled"));
    let old = registry(encrypted(&raw, &[("key1", KEY1)])).await;
    let cms = old.get("", "v1", "configmaps").expect("configmaps");
    let created = cms
        .create(
            None,
            Some("default"),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "namespace": "default"},
                   "data": {"a": "1"}}),
            &WriteOptions::default(),
        )
        .await
        .expect("create")
        .object;
    let stored = raw.get(KEY).await.expect("raw get").expect("stored");
    assert!(stored.value.starts_with(b"k8s:enc:aescbc:v1:key1:"));
    drop(cms);
    drop(old);

    // Rotated: key2 first.
    let new = registry(encrypted(&raw, &[("key2", KEY2), ("key1", KEY1)])).await;
    let cms = new.get("", "v1", "configmaps").expect("configmaps");
    let current = cms
        .get_value(Some("default"), "c")
        .await
        .expect("readable with key1");
    assert_eq!(current["data"]["a"], "1");
    let res = cms
        .update(
            Some("default"),
            "c",
            current.clone(),
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("update");
    assert_ne!(
        res.object["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"],
        "the stale value was written back"
    );
    let stored = raw.get(KEY).await.expect("raw get").expect("stored");
    assert!(
        stored.value.starts_with(b"k8s:enc:aescbc:v1:key2:"),
        "re-encrypted with the first key"
    );

    // Current now: an unchanged update writes nothing.
    let again = cms
        .update(
            Some("default"),
            "c",
            res.object.clone(),
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("update");
    assert_eq!(
        again.object["metadata"]["resourceVersion"],
        res.object["metadata"]["resourceVersion"]
    );
}
