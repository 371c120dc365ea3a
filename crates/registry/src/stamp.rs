//! Serving one stored resource in several versions without conversion
//! (CustomResourceDefinitions with `conversion.strategy: None`): every
//! version's store shares the storage prefix, and this [`Storage`] adapter
//! stamps the version it serves as `apiVersion` on every value it reads
//! (gets, lists, watches), so each version's watch cache, reads and
//! guaranteed updates see the object in their own version, as kube-apiserver's
//! `None` converter does. Writes pass through unchanged.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use ubernetes_storage::{
    Event, KeyValue, ListOptions, ListResult, ProgressWatchStream, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// Reads through `inner` with `apiVersion` set to `api_version`.
pub struct ApiVersionStamp {
    inner: Arc<dyn Storage>,
    api_version: Arc<str>,
}

impl ApiVersionStamp {
    pub fn new(inner: Arc<dyn Storage>, api_version: &str) -> Self {
        Self {
            inner,
            api_version: Arc::from(api_version),
        }
    }
}

fn stamp_value(value: &Bytes, api_version: &str) -> Bytes {
    match serde_json::from_slice::<serde_json::Value>(value) {
        Ok(mut v) => {
            if v.get("apiVersion").and_then(serde_json::Value::as_str) == Some(api_version) {
                return value.clone();
            }
            if let Some(m) = v.as_object_mut() {
                m.insert(
                    "apiVersion".into(),
                    serde_json::Value::String(api_version.into()),
                );
            }
            serde_json::to_vec(&v)
                .map(Bytes::from)
                .unwrap_or_else(|_| value.clone())
        }
        // Not JSON: leave it to the reader to complain.
        Err(_) => value.clone(),
    }
}

fn stamp_kv(mut kv: KeyValue, api_version: &str) -> KeyValue {
    kv.value = stamp_value(&kv.value, api_version);
    kv
}

fn stamp_event(mut ev: Event, api_version: &str) -> Event {
    ev.kv = stamp_kv(ev.kv, api_version);
    ev.prev = ev.prev.map(|p| stamp_kv(p, api_version));
    ev
}

#[async_trait::async_trait]
impl Storage for ApiVersionStamp {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        Ok(self
            .inner
            .get(key)
            .await?
            .map(|kv| stamp_kv(kv, &self.api_version)))
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let mut res = self.inner.list(prefix, opts).await?;
        res.items = res
            .items
            .into_iter()
            .map(|kv| stamp_kv(kv, &self.api_version))
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
            &self.api_version,
        ))
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        let v = self.api_version.clone();
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
        let v = self.api_version.clone();
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
        let out: serde_json::Value =
            serde_json::from_slice(&stamp_value(&stored, "example.com/v2")).unwrap_or_default();
        assert_eq!(out["apiVersion"], "example.com/v2");
        assert_eq!(out["spec"]["a"], 1);
        assert_eq!(out["kind"], "Foo");
    }
}
