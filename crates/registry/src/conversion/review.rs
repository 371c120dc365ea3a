//! Versions converted by a call rather than by code compiled in: a
//! CustomResourceDefinition with `spec.conversion.strategy: Webhook`.
//!
//! Every served version of such a CRD (the storage version's too) gets a
//! [`Reviewed`] value layer ([`ubernetes_storage::layered`]) over the
//! shared prefix: a value read
//! whose `apiVersion` is not the served one is converted by an
//! [`ObjectConverter`] (gets, a list page in one call, a watch event and its
//! previous value in one call), and a value written whose `apiVersion` is
//! not the storage version is converted to it before it is stored, as
//! kube-apiserver's codec calls the CRD's converter when it decodes from and
//! encodes to etcd. The registry knows no HTTP: the converter that calls the
//! webhook (a `ConversionReview`) lives above it (crates/webhook) and reaches
//! the CRD controller through [`crate::Registry::set_conversion_webhooks`].
//!
//! A conversion that fails is [`StorageError::Conversion`] with kube's
//! message (`conversion webhook for example.com/v2, Kind=Widget failed: …`),
//! which the store answers as kube does: 500 with that message. A watch
//! event that cannot be converted ends the upstream watch with that error;
//! the watch cache above then re-lists (with backoff) until the webhook
//! answers again. Until a conversion succeeds again, the layer reports the
//! error from [`Storage::consistent_read_revision`], so the store's reads
//! fail with it too instead of serving a cache that cannot catch up (kube
//! converts on each read from etcd, failing the same way).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
#[cfg(doc)]
use ubernetes_storage::Storage;
use ubernetes_storage::layered::{Read, ValueLayer};
use ubernetes_storage::{KeyValue, Revision, StorageError};

use crate::strategy::Strategy;

/// Converts objects to another version of their kind by a call (kube's
/// `crConverterInterface` for the `Webhook` strategy).
#[async_trait::async_trait]
pub trait ObjectConverter: Send + Sync {
    /// `objects` (each in some version other than `desired_api_version`) as
    /// `desired_api_version`, in the same order. `input_gvk` names the input
    /// in errors as Go prints a GroupVersionKind (`example.com/v1,
    /// Kind=Widget`, or `…, Kind=WidgetList` for a list). The error is the
    /// whole message kube answers with.
    async fn convert(
        &self,
        input_gvk: &str,
        objects: Vec<Value>,
        desired_api_version: &str,
    ) -> Result<Vec<Value>, String>;
}

/// Builds the converter of a CRD's `spec.conversion.webhook`
/// (`clientConfig`, `conversionReviewVersions`); set on the registry by the
/// server, used by the CRD controller.
pub trait ConversionWebhooks: Send + Sync {
    fn converter(&self, webhook: &Value) -> Result<Arc<dyn ObjectConverter>, String>;
}

/// Serves one version of objects stored in the storage version (or in any
/// version an older configuration stored), converting through an
/// [`ObjectConverter`]: a value layer
/// (`Layered::new(storage, Arc::new(Reviewed::new(..)))`).
pub struct Reviewed {
    /// The version this layer's store serves (`example.com/v2`).
    served: String,
    /// The CRD's storage version (`example.com/v1`).
    storage: String,
    kind: String,
    converter: Arc<dyn ObjectConverter>,
    /// Run after conversion on every value read (schema defaults).
    on_read: Arc<dyn Strategy>,
    /// The error of the last read conversion, while they fail.
    failing: parking_lot::Mutex<Option<String>>,
}

impl Reviewed {
    pub fn new(
        strategy: Arc<dyn Strategy>,
        storage_api_version: &str,
        converter: Arc<dyn ObjectConverter>,
    ) -> Self {
        let info = strategy.info().clone();
        Self {
            served: info.api_version(),
            storage: storage_api_version.to_string(),
            kind: info.kind.clone(),
            converter,
            on_read: strategy,
            failing: parking_lot::Mutex::new(None),
        }
    }
}

fn api_version(v: &Value) -> &str {
    v.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

/// Go's `GroupVersionKind.String()`: `group/version, Kind=Kind`.
fn gvk(api_version: &str, kind: &str) -> String {
    if api_version.contains('/') {
        format!("{api_version}, Kind={kind}")
    } else {
        format!("/{api_version}, Kind={kind}")
    }
}

fn conversion_error(e: String) -> StorageError {
    StorageError::Conversion(e)
}

impl Reviewed {
    /// Convert to `desired` those of `values` not in it already (kube sends
    /// only those), in one call. `list` names the input a list in errors.
    async fn convert(
        &self,
        values: Vec<Value>,
        desired: &str,
        list: bool,
    ) -> Result<Vec<Value>, StorageError> {
        let pending: Vec<usize> = values
            .iter()
            .enumerate()
            .filter(|(_, v)| api_version(v) != desired)
            .map(|(i, _)| i)
            .collect();
        if pending.is_empty() {
            return Ok(values);
        }
        let first = api_version(&values[pending[0]]).to_string();
        let input = if list {
            gvk(&first, &format!("{}List", self.kind))
        } else {
            gvk(&first, &self.kind)
        };
        let send: Vec<Value> = pending.iter().map(|&i| values[i].clone()).collect();
        let converted = self
            .converter
            .convert(&input, send, desired)
            .await
            .map_err(conversion_error)?;
        if converted.len() != pending.len() {
            // The converter checks this; a second guard keeps the zip below honest.
            return Err(conversion_error(format!(
                "conversion webhook for {input} returned {} objects, expected {}",
                converted.len(),
                pending.len()
            )));
        }
        let mut out = values;
        for (i, c) in pending.into_iter().zip(converted) {
            out[i] = c;
        }
        Ok(out)
    }

    /// Stored values as served: parsed, converted in one call, then the
    /// served version's read hook. A value that is not JSON is passed on as
    /// it is (the reader reports it, as for any corrupt value). `list` names
    /// the input a list in errors. A failure of a watch event (`track`: what
    /// keeps the watch cache current) is remembered for
    /// [`Storage::consistent_read_revision`]; any successful conversion
    /// forgets it.
    async fn read_tracked(
        &self,
        values: Vec<&Bytes>,
        list: bool,
        track: bool,
    ) -> Result<Vec<Bytes>, StorageError> {
        let mut parsed = Vec::with_capacity(values.len());
        let mut json_at = Vec::new();
        for (i, b) in values.iter().enumerate() {
            if let Ok(v) = serde_json::from_slice::<Value>(b) {
                json_at.push(i);
                parsed.push(v);
            }
        }
        let converted = match self.convert(parsed, &self.served, list).await {
            Ok(c) => {
                if self.failing.lock().take().is_some() {
                    tracing::info!(version = %self.served, "conversions succeed again");
                }
                c
            }
            Err(e) => {
                if track {
                    *self.failing.lock() = Some(e.to_string());
                }
                return Err(e);
            }
        };
        let mut out: Vec<Bytes> = values.iter().map(|b| (*b).clone()).collect();
        for (i, mut v) in json_at.into_iter().zip(converted) {
            self.on_read.on_read(&mut v);
            out[i] = serde_json::to_vec(&v)
                .map(Bytes::from)
                .map_err(|e| StorageError::Engine(e.to_string()))?;
        }
        Ok(out)
    }

    /// A served value as the storage version; a failure fails the write.
    async fn write(&self, key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        let v: Value = serde_json::from_slice(&value)
            .map_err(|e| StorageError::Engine(format!("converting {key}: {e}")))?;
        let Some(stored) = self.convert(vec![v], &self.storage, false).await?.pop() else {
            return Err(conversion_error(format!(
                "conversion webhook for {} failed, no objects returned",
                gvk(&self.served, &self.kind)
            )));
        };
        serde_json::to_vec(&stored)
            .map(Bytes::from)
            .map_err(|e| StorageError::Engine(format!("converting {key}: {e}")))
    }
}

/// Writes are converted to the storage version; a write answers with the
/// served value it was given (what was just stored, in this version) rather
/// than converting the stored form back: one webhook call per write, and a
/// write that was stored is not reported failed because the way back
/// failed. Reads convert a list page, or a watch event and its previous
/// value, in one call.
#[async_trait::async_trait]
impl ValueLayer for Reviewed {
    async fn transform_to_storage(&self, key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        self.write(key, value).await
    }

    async fn transform_from_storage(
        &self,
        key: &str,
        value: Bytes,
        read: Read,
    ) -> Result<(Bytes, bool), StorageError> {
        let mut kvs = [KeyValue {
            key: key.to_string(),
            value,
            create_revision: 0,
            mod_revision: 0,
        }];
        self.transform_from_storage_batch(&mut kvs, read).await?;
        let [kv] = kvs;
        Ok((kv.value, false))
    }

    async fn transform_from_storage_batch(
        &self,
        kvs: &mut [KeyValue],
        read: Read,
    ) -> Result<(), StorageError> {
        let values = kvs.iter().map(|kv| &kv.value).collect();
        let out = self
            .read_tracked(values, read == Read::List, read == Read::Event)
            .await?;
        for (kv, b) in kvs.iter_mut().zip(out) {
            kv.value = b;
        }
        Ok(())
    }

    // The conversion error while reads cannot be converted (the module
    // documentation).
    fn consistent_read_revision(
        &self,
        below: Option<Revision>,
    ) -> Result<Option<Revision>, StorageError> {
        if let Some(e) = self.failing.lock().clone() {
            return Err(StorageError::Conversion(e));
        }
        Ok(below)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use ubernetes_apimachinery::{ApiError, Cause, ResourceInfo};
    use ubernetes_storage::layered::Layered;
    use ubernetes_storage::sled_engine::SledStorage;
    use ubernetes_storage::{ListOptions, Storage};

    struct Widgets(ResourceInfo);

    impl Strategy for Widgets {
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

    fn widgets(version: &str) -> Arc<dyn Strategy> {
        Arc::new(Widgets(ResourceInfo {
            group: "example.com".into(),
            version: version.into(),
            resource: "widgets".into(),
            singular: "widget".into(),
            kind: "Widget".into(),
            namespaced: true,
            verbs: Vec::new(),
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: Vec::new(),
            definition: String::new(),
        }))
    }

    /// v1 `spec.size` (string) ⇄ v2 `spec.sizeInt` (integer), counting
    /// calls and objects; fails every call once `broken` is set.
    #[derive(Default)]
    struct SizeConverter {
        calls: AtomicUsize,
        objects: AtomicUsize,
        broken: std::sync::atomic::AtomicBool,
    }

    #[async_trait::async_trait]
    impl ObjectConverter for SizeConverter {
        async fn convert(
            &self,
            input_gvk: &str,
            objects: Vec<Value>,
            desired: &str,
        ) -> Result<Vec<Value>, String> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.objects.fetch_add(objects.len(), Ordering::SeqCst);
            if self.broken.load(Ordering::SeqCst) {
                return Err(format!("conversion webhook for {input_gvk} failed: down"));
            }
            Ok(objects
                .into_iter()
                .map(|mut o| {
                    let spec = o["spec"].as_object_mut().unwrap();
                    if desired.ends_with("/v2") {
                        let s = spec.remove("size").unwrap();
                        spec.insert(
                            "sizeInt".into(),
                            s.as_str().unwrap().parse::<i64>().unwrap().into(),
                        );
                    } else {
                        let s = spec.remove("sizeInt").unwrap();
                        spec.insert("size".into(), s.to_string().into());
                    }
                    o["apiVersion"] = desired.into();
                    o
                })
                .collect())
        }
    }

    fn obj(api_version: &str, name: &str, spec: Value) -> Bytes {
        Bytes::from(
            serde_json::to_vec(&serde_json::json!({
                "apiVersion": api_version, "kind": "Widget",
                "metadata": {"name": name, "namespace": "default"}, "spec": spec}))
            .unwrap(),
        )
    }

    fn parse(b: &Bytes) -> Value {
        serde_json::from_slice(b).unwrap()
    }

    #[tokio::test]
    async fn writes_are_stored_in_the_storage_version_and_reads_served_in_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let engine: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).unwrap());
        let converter = Arc::new(SizeConverter::default());
        let v2 = Layered::new(
            engine.clone(),
            Arc::new(Reviewed::new(
                widgets("v2"),
                "example.com/v1",
                converter.clone(),
            )),
        );
        let v1 = Layered::new(
            engine.clone(),
            Arc::new(Reviewed::new(
                widgets("v1"),
                "example.com/v1",
                converter.clone(),
            )),
        );
        let prefix = "/registry/example.com/widgets/";
        let mut watch = v2.watch(prefix, 0).await.unwrap();

        // Written as v2: stored as v1, answered as v2.
        let kv = v2
            .create(
                &format!("{prefix}default/a"),
                obj("example.com/v2", "a", serde_json::json!({"sizeInt": 3})),
            )
            .await
            .unwrap();
        assert_eq!(parse(&kv.value)["spec"], serde_json::json!({"sizeInt": 3}));
        let stored = engine
            .get(&format!("{prefix}default/a"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(parse(&stored.value)["apiVersion"], "example.com/v1");
        assert_eq!(
            parse(&stored.value)["spec"],
            serde_json::json!({"size": "3"})
        );
        // The storage version reads it without a call.
        let calls = converter.calls.load(Ordering::SeqCst);
        let got = v1
            .get(&format!("{prefix}default/a"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(parse(&got.value)["spec"], serde_json::json!({"size": "3"}));
        assert_eq!(converter.calls.load(Ordering::SeqCst), calls);
        // The watch in v2 sees it converted.
        let ev = watch.next().await.unwrap().unwrap();
        assert_eq!(
            parse(&ev.kv.value)["spec"],
            serde_json::json!({"sizeInt": 3})
        );

        // A list page in one call.
        v1.create(
            &format!("{prefix}default/b"),
            obj("example.com/v1", "b", serde_json::json!({"size": "5"})),
        )
        .await
        .unwrap();
        let calls = converter.calls.load(Ordering::SeqCst);
        let list = v2.list(prefix, ListOptions::default()).await.unwrap();
        assert_eq!(converter.calls.load(Ordering::SeqCst), calls + 1);
        let sizes: Vec<Value> = list
            .items
            .iter()
            .map(|kv| parse(&kv.value)["spec"]["sizeInt"].clone())
            .collect();
        assert_eq!(sizes, vec![Value::from(3), Value::from(5)]);

        // A failing converter fails the write (nothing stored) and the read.
        converter.broken.store(true, Ordering::SeqCst);
        let err = v2
            .create(
                &format!("{prefix}default/c"),
                obj("example.com/v2", "c", serde_json::json!({"sizeInt": 1})),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "conversion webhook for example.com/v2, Kind=Widget failed: down"
        );
        assert!(
            engine
                .get(&format!("{prefix}default/c"))
                .await
                .unwrap()
                .is_none()
        );
        let err = v2.list(prefix, ListOptions::default()).await.unwrap_err();
        assert!(
            matches!(err, StorageError::Conversion(ref m) if m == "conversion webhook for example.com/v1, Kind=WidgetList failed: down"),
            "{err}"
        );
        // ... and ends a watch with the error (the next event, b's).
        assert!(matches!(
            watch.next().await,
            Some(Err(StorageError::Conversion(_)))
        ));
        // Consistent reads report it until a conversion succeeds again.
        assert!(matches!(
            v2.consistent_read_revision().await,
            Err(StorageError::Conversion(_))
        ));
        converter.broken.store(false, Ordering::SeqCst);
        assert_eq!(
            v2.list(prefix, ListOptions::default())
                .await
                .unwrap()
                .items
                .len(),
            2
        );
        assert!(v2.consistent_read_revision().await.is_ok());
    }
}
