//! The storage conformance suite through every storage layer the server
//! has, stacked on one engine (sled, and a real etcd when one is
//! installed): the real layer types, with in-process converters.
//!
//! ```text
//! ApiVersionStamp   reads stamped conformance.ubernetes.io/v1
//! Converted         served `value` ⇄ stored `stored` (a built-in conversion;
//!                   it serves another apiVersion, which the stamp corrects)
//! Reviewed          v1 ⇄ v2 (`stored` ⇄ `storedV2`) by an ObjectConverter
//! WriteMarked       shared write mark
//! EncryptedStorage  aesgcm for every resource
//! engine
//! ```
//!
//! The suite compares every value read with the value written, so a layer
//! that forgets a transformation on any path fails it; what the engine
//! keeps is checked to be encrypted and in the storage version (no layer
//! forgot to transform a write); [`conformance::forwards_every_method`]
//! checks that each `Storage` method reaches the engine; and a value
//! encrypted with an older key reads as stale through the whole stack.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use bytes::Bytes;
use serde_json::Value;
use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};
use ubernetes_registry::Strategy;
use ubernetes_registry::conversion::review::{ObjectConverter, Reviewed};
use ubernetes_registry::conversion::{Converted, Converter, WriteMarked};
use ubernetes_registry::stamp::ApiVersionStamp;
use ubernetes_storage::encryption::{EncryptedStorage, EncryptionConfig};
use ubernetes_storage::etcd_engine::{EtcdOptions, EtcdStorage};
use ubernetes_storage::etcd_process::EtcdProcess;
use ubernetes_storage::layered::Layered;
use ubernetes_storage::sled_engine::SledStorage;
use ubernetes_storage::{ListOptions, Storage, conformance};

const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY=";
const STORAGE_VERSION: &str = "conformance.ubernetes.io/v2";

/// Every resource encrypted with aesgcm, with the named keys in order.
fn encryption(keys: &[(&str, &str)]) -> Arc<EncryptionConfig> {
    let mut text = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n\
         resources:\n  - resources: ['*.*']\n    providers:\n      - aesgcm:\n          keys:\n",
    );
    for (name, secret) in keys {
        text.push_str(&format!(
            "            - name: {name}\n              secret: {secret}\n"
        ));
    }
    Arc::new(EncryptionConfig::parse(&text).expect("valid encryption config"))
}

/// Rename field `from` to `to` of an object (the renamed field goes last,
/// where the suite's `value` already is, so bytes round-trip exactly).
fn rename(mut v: Value, from: &str, to: &str) -> Result<Value, String> {
    let m = v.as_object_mut().ok_or("not an object")?;
    let field = m.remove(from).ok_or_else(|| format!("no field {from}"))?;
    m.insert(to.into(), field);
    Ok(v)
}

/// What the built-in style conversion serves as `apiVersion`: the stamp
/// above it makes it the suite's again (so a stamp that is not applied
/// shows).
const UNSTAMPED: &str = "conformance.ubernetes.io/unstamped";

/// A built-in style conversion: served `value` ⇄ stored `stored`.
struct Rename;

impl Converter for Rename {
    fn to_served(&self, stored: Value) -> Result<Value, String> {
        let mut v = rename(stored, "stored", "value")?;
        v["apiVersion"] = UNSTAMPED.into();
        Ok(v)
    }
    fn to_stored(&self, served: Value) -> Result<Value, String> {
        let mut v = rename(served, "value", "stored")?;
        v["apiVersion"] = conformance::API_VERSION.into();
        Ok(v)
    }
}

/// A webhook's conversion, in process: `v1` `stored` ⇄ `v2` `storedV2`.
struct Webhook;

#[async_trait::async_trait]
impl ObjectConverter for Webhook {
    async fn convert(
        &self,
        _input_gvk: &str,
        objects: Vec<Value>,
        desired: &str,
    ) -> Result<Vec<Value>, String> {
        objects
            .into_iter()
            .map(|o| {
                let mut o = if desired == STORAGE_VERSION {
                    rename(o, "stored", "storedV2")?
                } else {
                    rename(o, "storedV2", "stored")?
                };
                o["apiVersion"] = desired.into();
                Ok(o)
            })
            .collect()
    }
}

/// The served kind of the Reviewed layer.
struct Probes(ResourceInfo);

impl Strategy for Probes {
    fn info(&self) -> &ResourceInfo {
        &self.0
    }
    fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
        Ok(obj)
    }
    fn validate_create(&self, _: &Value) -> Vec<Cause> {
        Vec::new()
    }
}

fn probes() -> Arc<dyn Strategy> {
    let (group, version) = conformance::API_VERSION
        .split_once('/')
        .expect("group/version");
    Arc::new(Probes(ResourceInfo {
        group: group.into(),
        version: version.into(),
        resource: "probes".into(),
        singular: "probe".into(),
        kind: conformance::KIND.into(),
        namespaced: true,
        verbs: Vec::new(),
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        definition: String::new(),
    }))
}

/// Every layer over `engine`, encrypting with `keys`.
fn stack(engine: Arc<dyn Storage>, keys: &[(&str, &str)]) -> Arc<dyn Storage> {
    let encrypted: Arc<dyn Storage> = Arc::new(EncryptedStorage::new(engine, encryption(keys)));
    let marked: Arc<dyn Storage> = Arc::new(Layered::new(
        encrypted,
        Arc::new(WriteMarked::new(Arc::new(AtomicU64::new(0)))),
    ));
    let reviewed: Arc<dyn Storage> = Arc::new(Layered::new(
        marked,
        Arc::new(Reviewed::new(probes(), STORAGE_VERSION, Arc::new(Webhook))),
    ));
    let converted: Arc<dyn Storage> = Arc::new(Layered::new(
        reviewed,
        Arc::new(Converted::new(Arc::new(Rename))),
    ));
    Arc::new(Layered::new(
        converted,
        Arc::new(ApiVersionStamp::new(conformance::API_VERSION)),
    ))
}

fn full_stack(engine: Arc<dyn Storage>) -> Arc<dyn Storage> {
    stack(engine, &[("key1", KEY1)])
}

/// Run the suite through the stack over engines from `make`, then check
/// what the engines kept: encrypted, and (decrypted) in the storage
/// version with the stored field names.
async fn suite_through_every_layer<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Storage>>,
{
    let engines = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let keep = engines.clone();
    let make = Arc::new(make);
    conformance::run_all(move || {
        let (engines, make) = (keep.clone(), make.clone());
        async move {
            let engine = make().await;
            engines.lock().push(engine.clone());
            full_stack(engine)
        }
    })
    .await;
    let engines: Vec<Arc<dyn Storage>> = engines.lock().clone();
    let mut checked = 0;
    for engine in engines {
        let decrypting = EncryptedStorage::new(engine.clone(), encryption(&[("key1", KEY1)]));
        let raw = engine
            .list("/conformance/", ListOptions::default())
            .await
            .expect("raw list");
        let plain = decrypting
            .list("/conformance/", ListOptions::default())
            .await
            .expect("decrypted list");
        for (raw, plain) in raw.items.iter().zip(&plain.items) {
            // `/conformance/GROUP/RESOURCE…` names a resource; shorter keys
            // are stored as they are.
            if raw.key.matches('/').count() >= 3 {
                assert!(
                    raw.value.starts_with(b"k8s:enc:aesgcm:v1:key1:"),
                    "{} kept as {:?}",
                    raw.key,
                    raw.value
                );
            }
            let v: Value = serde_json::from_slice(&plain.value).expect("JSON");
            assert_eq!(v["apiVersion"], STORAGE_VERSION, "{}: {v}", plain.key);
            assert!(
                v.get("storedV2").is_some()
                    && v.get("stored").is_none()
                    && v.get("value").is_none(),
                "{} kept as {v}",
                plain.key
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "the suite left values to check");
}

/// A value written with key1 reads as stale once key2 is first, through
/// every layer; rewriting it (a guaranteed update's read, change, write)
/// stores it with key2 in the storage version.
async fn stale_values_are_stale_at_the_top(engine: Arc<dyn Storage>) {
    let key = "/conformance/stale/probes/a";
    let old = full_stack(engine.clone());
    let kv = old
        .create(key, conformance::value("one"))
        .await
        .expect("create");
    let rotated = stack(engine.clone(), &[("key2", KEY2), ("key1", KEY1)]);
    let (got, stale) = rotated
        .get_with_staleness(key)
        .await
        .expect("get")
        .expect("present");
    assert_eq!((&got, stale), (&kv, true));
    // The update sees the decoded value and stores the new one encoded.
    let mut v: Value = serde_json::from_slice(&got.value).expect("JSON");
    v["value"] = "two".into();
    let written = rotated
        .update(key, Bytes::from(v.to_string()), got.mod_revision)
        .await
        .expect("update");
    assert_eq!(written.value, conformance::value("two"));
    let (got, stale) = rotated
        .get_with_staleness(key)
        .await
        .expect("get")
        .expect("present");
    assert_eq!((&got, stale), (&written, false));
    // A consistent read waits for the write (the write mark; on etcd, etcd's
    // revision too).
    let wait_for = rotated
        .consistent_read_revision()
        .await
        .expect("consistent_read_revision");
    assert!(
        wait_for >= Some(written.mod_revision),
        "{wait_for:?} < {}",
        written.mod_revision
    );
    let raw = engine.get(key).await.expect("get").expect("present");
    assert!(raw.value.starts_with(b"k8s:enc:aesgcm:v1:key2:"));
    let plain = EncryptedStorage::new(engine, encryption(&[("key2", KEY2)]))
        .get(key)
        .await
        .expect("get")
        .expect("present");
    let v: Value = serde_json::from_slice(&plain.value).expect("JSON");
    assert_eq!(
        v,
        serde_json::json!({"apiVersion": STORAGE_VERSION, "kind": "Probe", "storedV2": "two"})
    );
}

fn sled() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let engine: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("open"));
    (dir, engine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_layer_over_sled_passes_the_conformance_suite() {
    let dirs = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let keep = dirs.clone();
    suite_through_every_layer(move || {
        let dirs = keep.clone();
        async move {
            let (dir, engine) = sled();
            dirs.lock().push(dir);
            engine
        }
    })
    .await;
    let (_dir, engine) = sled();
    conformance::forwards_every_method(engine, full_stack).await;
    let (_dir, engine) = sled();
    stale_values_are_stale_at_the_top(engine).await;
}

async fn etcd_engine(etcd: &EtcdProcess, prefix: &str) -> Arc<dyn Storage> {
    let engine = EtcdStorage::connect(&EtcdOptions {
        endpoints: vec![etcd.url.clone()],
        prefix: prefix.to_string(),
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("connecting to etcd: {e}\n{}", etcd.log()));
    Arc::new(engine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_layer_over_etcd_passes_the_conformance_suite() {
    let Some(etcd) =
        EtcdProcess::start_for_test("every_layer_over_etcd_passes_the_conformance_suite")
    else {
        return;
    };
    let etcd = Arc::new(etcd);
    let n = Arc::new(AtomicU32::new(0));
    let (e, counter) = (etcd.clone(), n.clone());
    suite_through_every_layer(move || {
        let (etcd, n) = (e.clone(), counter.clone());
        async move {
            // Every case on a fresh key prefix of the same etcd.
            let prefix = format!("/case{}", n.fetch_add(1, Ordering::SeqCst));
            etcd_engine(&etcd, &prefix).await
        }
    })
    .await;
    conformance::forwards_every_method(etcd_engine(&etcd, "/forwards").await, full_stack).await;
    stale_values_are_stale_at_the_top(etcd_engine(&etcd, "/stale").await).await;
}
