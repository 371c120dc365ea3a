//! Serving one stored resource in several versions without conversion
//! (CustomResourceDefinitions with `conversion.strategy: None`): every
//! version's store shares the storage prefix, and this [`Storage`] adapter
//! stamps the version it serves as `apiVersion` on every value it reads
//! (gets, lists, watches), so each version's watch cache, reads and
//! guaranteed updates see the object in their own version, as kube-apiserver's
//! `None` converter does. The kind's [`Strategy::on_read`] runs on every
//! value read too (a custom resource's schema defaults, which kube applies
//! when decoding from storage). Writes pass through unchanged.

use std::sync::Arc;

use bytes::Bytes;

use crate::strategy::Strategy;
use futures::StreamExt;
use ubernetes_storage::{
    Event, KeyValue, ListOptions, ListResult, ProgressWatchStream, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// Reads through `inner` with `apiVersion` set to `api_version`.
pub struct ApiVersionStamp {
    inner: Arc<dyn Storage>,
    stamp: Arc<Stamp>,
}

/// What is done to every value read.
struct Stamp {
    api_version: String,
    on_read: Option<Arc<dyn Strategy>>,
}

impl ApiVersionStamp {
    pub fn new(inner: Arc<dyn Storage>, api_version: &str) -> Self {
        Self {
            inner,
            stamp: Arc::new(Stamp {
                api_version: api_version.to_string(),
                on_read: None,
            }),
        }
    }

    /// Also run `strategy`'s [`Strategy::on_read`] on every value read.
    pub fn with_on_read(
        inner: Arc<dyn Storage>,
        api_version: &str,
        strategy: Arc<dyn Strategy>,
    ) -> Self {
        Self {
            inner,
            stamp: Arc::new(Stamp {
                api_version: api_version.to_string(),
                on_read: Some(strategy),
            }),
        }
    }
}

fn stamp_value(value: &Bytes, stamp: &Stamp) -> Bytes {
    match serde_json::from_slice::<serde_json::Value>(value) {
        Ok(mut v) => {
            let original = v.clone();
            if let Some(m) = v.as_object_mut() {
                m.insert(
                    "apiVersion".into(),
                    serde_json::Value::String(stamp.api_version.clone()),
                );
            }
            if let Some(strategy) = &stamp.on_read {
                strategy.on_read(&mut v);
            }
            if v == original {
                return value.clone();
            }
            serde_json::to_vec(&v)
                .map(Bytes::from)
                .unwrap_or_else(|_| value.clone())
        }
        // Not JSON: leave it to the reader to complain.
        Err(_) => value.clone(),
    }
}

fn stamp_kv(mut kv: KeyValue, stamp: &Stamp) -> KeyValue {
    kv.value = stamp_value(&kv.value, stamp);
    kv
}

fn stamp_event(mut ev: Event, stamp: &Stamp) -> Event {
    ev.kv = stamp_kv(ev.kv, stamp);
    ev.prev = ev.prev.map(|p| stamp_kv(p, stamp));
    ev
}

#[async_trait::async_trait]
impl Storage for ApiVersionStamp {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        Ok(self
            .inner
            .get(key)
            .await?
            .map(|kv| stamp_kv(kv, &self.stamp)))
    }

    async fn get_with_staleness(
        &self,
        key: &str,
    ) -> Result<Option<(KeyValue, bool)>, StorageError> {
        Ok(self
            .inner
            .get_with_staleness(key)
            .await?
            .map(|(kv, stale)| (stamp_kv(kv, &self.stamp), stale)))
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let mut res = self.inner.list(prefix, opts).await?;
        res.items = res
            .items
            .into_iter()
            .map(|kv| stamp_kv(kv, &self.stamp))
            .collect();
        Ok(res)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        self.inner.create(key, value).await
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        self.inner.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        Ok(stamp_kv(
            self.inner.delete(key, expected).await?,
            &self.stamp,
        ))
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        let v = self.stamp.clone();
        let events = self.inner.watch(prefix, from).await?;
        Ok(Box::pin(
            events.map(move |item| item.map(|ev| stamp_event(ev, &v))),
        ))
    }

    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<ProgressWatchStream, StorageError> {
        let v = self.stamp.clone();
        let items = self.inner.watch_progress(prefix, from).await?;
        Ok(Box::pin(items.map(move |item| {
            item.map(|it| match it {
                WatchItem::Event(ev) => WatchItem::Event(stamp_event(ev, &v)),
                other => other,
            })
        })))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    // A layer must forward these two, or consistent reads across replicas
    // (issue 14) silently fall back to this process's own writes.
    async fn consistent_read_revision(&self) -> Result<Option<Revision>, StorageError> {
        self.inner.consistent_read_revision().await
    }

    fn request_progress(&self) {
        self.inner.request_progress();
    }

    fn serves_progress_requests(&self) -> bool {
        self.inner.serves_progress_requests()
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.inner.compacted_revision().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_carry_the_served_version_and_other_fields_stay() {
        let stored =
            Bytes::from_static(br#"{"apiVersion":"example.com/v1","kind":"Foo","spec":{"a":1}}"#);
        let stamp = Stamp {
            api_version: "example.com/v2".into(),
            on_read: None,
        };
        let out: serde_json::Value =
            serde_json::from_slice(&stamp_value(&stored, &stamp)).unwrap_or_default();
        assert_eq!(out["apiVersion"], "example.com/v2");
        assert_eq!(out["spec"]["a"], 1);
        assert_eq!(out["kind"], "Foo");
    }
}
