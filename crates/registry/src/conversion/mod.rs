//! One stored form per kind, served in several versions (kube-apiserver's
//! storage versions and conversion): HorizontalPodAutoscalers are stored as
//! `autoscaling/v2` and served as `v2` and `v1`; Events are stored as core
//! `v1` and served as core `v1` and `events.k8s.io/v1`.
//!
//! A version that is not the stored one gets a [`Converted`] value layer
//! ([`ubernetes_storage::layered`]) over the engine: every value read (get, list, watch events and
//! their previous values, the value a write returns) goes through
//! [`Converter::to_served`], every value written through
//! [`Converter::to_stored`]. The version's [`Store`](crate::Store) and watch
//! cache sit above this layer and therefore see only the served form: field
//! selectors, patches (applied to the served form, as kube applies a patch in
//! the request's version), guaranteed updates and admission work unchanged,
//! and a write in one version is a watch event in every other.
//!
//! [`served_from`] says which versions are converted and where their stored
//! form lives; [`migrate`] moves objects that an older release stored under
//! a separate per-version prefix into the shared one.

pub mod events;
pub mod hpa;
pub mod review;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use bytes::Bytes;
use serde_json::Value;
use ubernetes_storage::layered::{Read, ValueLayer};
use ubernetes_storage::{KeyValue, ListOptions, Revision, Storage, StorageError};

use crate::strategy::Strategy;

/// The two directions of one served version's conversion.
pub trait Converter: Send + Sync {
    /// The stored form (JSON of the storage version) as the served version.
    fn to_served(&self, stored: Value) -> Result<Value, String>;
    /// A served object as the stored form.
    fn to_stored(&self, served: Value) -> Result<Value, String>;
}

/// Where a converted version's objects live.
pub struct Conversion {
    /// The storage prefix of the stored form (`/registry/core/events/`).
    pub prefix: String,
    /// The prefix an older release kept this version's objects under (its
    /// own copy, no conversion), migrated by [`migrate`].
    pub legacy_prefix: String,
    pub converter: Arc<dyn Converter>,
}

/// The conversion of a served version, if the kind declares it served from
/// another version's storage ([`Strategy::stored_as`]).
pub fn served_from(strategy: &dyn Strategy) -> Option<Conversion> {
    let s = strategy.stored_as()?;
    Some(Conversion {
        prefix: crate::store::storage_prefix_of(s.group, s.resource),
        legacy_prefix: s.legacy_prefix.into(),
        converter: (s.converter)(),
    })
}

/// Move what an older release stored under `conversion.legacy_prefix` (a
/// second copy per version, before conversion existed) into the stored
/// form's prefix, converted; each moved key is deleted from the old prefix.
/// An object whose name is taken in the shared prefix (both versions had
/// one of that name) is left where it was and logged, not overwritten.
/// Safe to run by several replicas at once: creates and deletes are
/// conditional. Returns how many objects moved.
pub async fn migrate(
    storage: &Arc<dyn Storage>,
    conversion: &Conversion,
) -> Result<usize, StorageError> {
    let mut moved = 0;
    let mut start_after = None;
    loop {
        let page = storage
            .list(
                &conversion.legacy_prefix,
                ListOptions {
                    start_after: start_after.clone(),
                    limit: Some(500),
                    revision: None,
                },
            )
            .await?;
        let Some(last) = page.items.last() else {
            break;
        };
        start_after = Some(last.key.clone());
        let more = page.remaining > 0;
        for kv in page.items {
            let suffix = kv.key.trim_start_matches(&conversion.legacy_prefix);
            let key = format!("{}{suffix}", conversion.prefix);
            let stored = match serde_json::from_slice::<Value>(&kv.value)
                .map_err(|e| e.to_string())
                .and_then(|mut v| {
                    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("resourceVersion");
                    }
                    conversion.converter.to_stored(v)
                })
                .and_then(|v| serde_json::to_vec(&v).map_err(|e| e.to_string()))
            {
                Ok(v) => v,
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "cannot convert an object stored by an older release; left where it is");
                    continue;
                }
            };
            match storage.create(&key, Bytes::from(stored)).await {
                Ok(_) => {}
                Err(StorageError::AlreadyExists { .. }) => {
                    tracing::warn!(old = %kv.key, new = %key, "an object of that name is already stored in the shared prefix; the older release's copy is left where it is");
                    continue;
                }
                Err(e) => return Err(e),
            }
            match storage.delete(&kv.key, Some(kv.mod_revision)).await {
                Ok(_) | Err(StorageError::NotFound { .. }) => {}
                // Changed meanwhile (an older replica still serving): the
                // next start moves it again only if the new key is free.
                Err(StorageError::Conflict { .. }) => {}
                Err(e) => return Err(e),
            }
            moved += 1;
            tracing::info!(old = %kv.key, new = %key, "moved an object stored by an older release into the shared storage of its kind");
        }
        if !more {
            break;
        }
    }
    Ok(moved)
}

/// The storage prefix shared by every served version of a converted kind
/// (the storage version's own store included), for [`WriteMarked`]: that of
/// the version it is stored as, or its own when another built-in version is
/// stored as it.
pub fn shared_prefix(strategy: &dyn Strategy) -> Option<String> {
    static STORAGE_VERSIONS: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
        crate::kinds::builtin()
            .iter()
            .filter_map(|k| k.stored_as())
            .map(|s| (s.group, s.resource))
            .collect()
    });
    if let Some(s) = strategy.stored_as() {
        return Some(crate::store::storage_prefix_of(s.group, s.resource));
    }
    let info = strategy.info();
    STORAGE_VERSIONS
        .iter()
        .any(|(g, r)| *g == info.group && *r == info.resource)
        .then(|| crate::store::storage_prefix_of(&info.group, &info.resource))
}

/// The highest revision written through any of the stores that share one
/// prefix, so that each of them reads its own version's writes and the
/// others' (a store waits for the writes it made itself; on one process
/// without etcd, nothing else tells it about a write made through another
/// version's store). A value layer that changes no value: it marks every
/// write ([`ValueLayer::wrote`]) and reports the mark as
/// [`Storage::consistent_read_revision`] (the higher of it and the
/// storage's own).
pub struct WriteMarked {
    last_write: Arc<AtomicU64>,
}

impl WriteMarked {
    pub fn new(last_write: Arc<AtomicU64>) -> Self {
        Self { last_write }
    }
}

#[async_trait::async_trait]
impl ValueLayer for WriteMarked {
    async fn transform_to_storage(&self, _key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        Ok(value)
    }

    async fn transform_from_storage(
        &self,
        _key: &str,
        value: Bytes,
        _read: Read,
    ) -> Result<(Bytes, bool), StorageError> {
        Ok((value, false))
    }

    async fn transform_from_storage_batch(
        &self,
        _kvs: &mut [KeyValue],
        _read: Read,
    ) -> Result<(), StorageError> {
        Ok(())
    }

    fn wrote(&self, revision: Revision) {
        self.last_write.fetch_max(revision, Ordering::AcqRel);
    }

    fn consistent_read_revision(
        &self,
        below: Option<Revision>,
    ) -> Result<Option<Revision>, StorageError> {
        let mine = self.last_write.load(Ordering::Acquire);
        Ok(match below {
            Some(r) => Some(r.max(mine)),
            None if mine > 0 => Some(mine),
            None => None,
        })
    }
}

/// The value layer that serves one version of objects stored in another:
/// every value read goes through [`Converter::to_served`], every value
/// written through [`Converter::to_stored`], and a write answers with its
/// stored form converted back (what a read returns).
pub struct Converted {
    converter: Arc<dyn Converter>,
}

impl Converted {
    pub fn new(converter: Arc<dyn Converter>) -> Self {
        Self { converter }
    }
}

/// Stored bytes as the served version. A value that does not parse, or does
/// not convert, is logged and passed on as it is (the reader then reports
/// it, as for any corrupt value); reads never fail a whole list or watch.
fn read(converter: &dyn Converter, key: &str, value: Bytes) -> Bytes {
    let Ok(v) = serde_json::from_slice::<Value>(&value) else {
        return value;
    };
    match converter
        .to_served(v)
        .and_then(|v| serde_json::to_vec(&v).map_err(|e| e.to_string()))
    {
        Ok(out) => Bytes::from(out),
        Err(e) => {
            tracing::error!(%key, error = %e, "cannot convert a stored object to the served version");
            value
        }
    }
}

/// Served bytes as the stored version; a failure fails the write.
fn write(converter: &dyn Converter, key: &str, value: Bytes) -> Result<Bytes, StorageError> {
    let v: Value = serde_json::from_slice(&value)
        .map_err(|e| StorageError::Engine(format!("converting {key}: {e}")))?;
    let stored = converter.to_stored(v).map_err(|e| {
        StorageError::Engine(format!("converting {key} to its storage version: {e}"))
    })?;
    serde_json::to_vec(&stored)
        .map(Bytes::from)
        .map_err(|e| StorageError::Engine(format!("converting {key}: {e}")))
}

#[async_trait::async_trait]
impl ValueLayer for Converted {
    async fn transform_to_storage(&self, key: &str, value: Bytes) -> Result<Bytes, StorageError> {
        write(&*self.converter, key, value)
    }

    async fn transform_from_storage(
        &self,
        key: &str,
        value: Bytes,
        _read: Read,
    ) -> Result<(Bytes, bool), StorageError> {
        Ok((read(&*self.converter, key, value), false))
    }

    async fn written(
        &self,
        key: &str,
        _written: Bytes,
        stored: Bytes,
    ) -> Result<Bytes, StorageError> {
        Ok(read(&*self.converter, key, stored))
    }
}

/// Helpers shared by the converters: JSON object field moves.
pub(crate) mod json {
    use serde_json::{Map, Value};

    /// Move `from` of `src` to `to` of `dst` when present.
    pub fn carry(src: &mut Map<String, Value>, from: &str, dst: &mut Map<String, Value>, to: &str) {
        if let Some(v) = src.remove(from) {
            dst.insert(to.into(), v);
        }
    }

    /// The object map of a value (an empty one for anything else).
    pub fn into_map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}
