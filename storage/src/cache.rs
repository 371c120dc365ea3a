//! The watch cache (kube-apiserver's "cacher"): one upstream [`Storage::watch`]
//! per resource prefix, the current state in memory, and a ring buffer of
//! recent events so watches can resume from any revision still in the window.
//!
//! Every object entering the cache is decoded once: its JSON gets
//! `metadata.resourceVersion` set to its `mod_revision`, is serialised once into
//! [`CachedObject::json`], and its label/field attributes are extracted once by
//! the registry-supplied [`AttrsFn`]. Gets, lists and every watcher then share
//! those bytes (`Arc`), never re-serialising per reader.
//!
//! TO BE IMPLEMENTED (storage helper): see the signatures below; they are the
//! contract the registry builds on.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::{EventType, Revision, Storage, StorageError};

/// Label and field values of an object, for selector matching without
/// re-parsing its JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    pub labels: BTreeMap<String, String>,
    /// Selectable fields, e.g. `metadata.name`, `metadata.namespace`, `type`.
    pub fields: BTreeMap<String, String>,
}

/// Extracts [`Attrs`] from an object's JSON (supplied per resource by the registry).
pub type AttrsFn = Arc<dyn Fn(&serde_json::Value) -> Attrs + Send + Sync>;

/// A filter over cached objects (selectors), evaluated per event and per list item.
pub type FilterFn = Arc<dyn Fn(&CachedObject) -> bool + Send + Sync>;

/// One object as served: final JSON with its resourceVersion, and its attributes.
#[derive(Debug)]
pub struct CachedObject {
    pub key: String,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    /// The object's JSON with `metadata.resourceVersion` = `mod_revision`.
    pub json: Bytes,
    pub attrs: Attrs,
}

/// One change as delivered to a cache watcher.
#[derive(Debug, Clone)]
pub struct CacheEvent {
    pub kind: EventType,
    /// For `Deleted`: the last state, with resourceVersion = the deletion revision.
    pub object: Arc<CachedObject>,
}

/// What a cache watcher receives: events, then possibly one terminal error
/// (`WatcherTooSlow` when its bounded queue overflowed, `Compacted`).
pub type CacheWatchReceiver = tokio::sync::mpsc::Receiver<Result<CacheEvent, StorageError>>;

/// Settings of a [`WatchCache`]; defaults follow kube-apiserver's cacher.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Events kept for resume (kube-apiserver: 100 by default, grown to the
    /// event rate over 75 s). Default here: 10,000.
    pub window: usize,
    /// Bounded queue per watcher before it is closed with `WatcherTooSlow`.
    /// Default: 1,000.
    pub watcher_queue: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            window: 10_000,
            watcher_queue: 1_000,
        }
    }
}

/// The cache of one key prefix.
pub struct WatchCache {
    _storage: Arc<dyn Storage>,
}

impl WatchCache {
    /// List `prefix` from storage, then follow its watch. Returns once the
    /// initial list is loaded.
    pub async fn start(
        _storage: Arc<dyn Storage>,
        _prefix: String,
        _attrs: AttrsFn,
        _config: CacheConfig,
    ) -> Result<Arc<Self>, StorageError> {
        Err(StorageError::Engine("watch cache not implemented".into()))
    }

    /// The revision the cache has caught up to.
    pub fn revision(&self) -> Revision {
        0
    }

    /// Wait (bounded by a few seconds) until the cache has seen `revision`;
    /// used so a read after a write sees that write.
    pub async fn wait_for_revision(&self, _revision: Revision) -> Result<(), StorageError> {
        Ok(())
    }

    /// The current object at `key`.
    pub fn get(&self, _key: &str) -> Option<Arc<CachedObject>> {
        None
    }

    /// Objects under `prefix` (a sub-prefix of the cache's, e.g. one namespace),
    /// in key order, after `start_after`, matching `filter`, at most `limit`
    /// (0 = all). Returns (items, the cache revision, how many more match).
    pub fn list(
        &self,
        _prefix: &str,
        _start_after: Option<&str>,
        _filter: Option<&FilterFn>,
        _limit: usize,
    ) -> (Vec<Arc<CachedObject>>, Revision, u64) {
        (Vec::new(), 0, 0)
    }

    /// Events under `prefix` with revision `> from`, filtered: an object that
    /// stops matching is delivered as `Deleted`, one that starts matching as
    /// `Added` (kube-apiserver's cacher semantics). `from` older than the
    /// window → `Err(Compacted)`.
    pub fn watch(
        &self,
        _prefix: &str,
        _from: Revision,
        _filter: Option<FilterFn>,
    ) -> Result<CacheWatchReceiver, StorageError> {
        Err(StorageError::Engine("watch cache not implemented".into()))
    }
}
