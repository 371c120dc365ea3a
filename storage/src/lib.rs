//! # ubernetes-storage
//!
//! The persistence layer of the Ubernetes API server: an object-safe [`Storage`]
//! trait over a flat, ordered key space of opaque byte values, with a single
//! global revision counter (etcd's model, and therefore Kubernetes'
//! `resourceVersion`).
//!
//! What it is:
//! - [`Storage`]: get / list / create / update (compare-and-swap on the key's
//!   `mod_revision`) / delete / watch / compact / current revision.
//! - engines beside it: [`sled_engine::SledStorage`] (embedded, the default);
//!   [`etcd_engine::EtcdStorage`] on an etcd v3 cluster (`--etcd-servers`).
//! - [`cache::WatchCache`]: one upstream watch per key prefix, lists and gets
//!   served from memory, a ring buffer of recent events for watch resume
//!   (too old → [`StorageError::Compacted`], i.e. HTTP 410), bounded
//!   per-watcher queues.
//! - [`conformance`]: one test suite every engine must pass.
//! - [`layered`]: storage layers in one place: a [`layered::ValueLayer`]
//!   transforms values on their way in and out (kube's `value.Transformer`),
//!   and [`layered::Layered`] is the one `Storage` wrapper, which forwards
//!   everything else. A new `Storage` method is implemented there once.
//! - [`encryption::EncryptedStorage`]: encryption at rest over any engine
//!   (`--encryption-provider-config`, kube-apiserver's format), a value layer.
//!
//! What it is not: it knows nothing of kinds, namespaces or HTTP. Keys are
//! `/<resource-prefix>/<namespace>/<name>` strings built by the registry, values
//! are the objects' JSON bytes as the registry wrote them.
//!
//! Where to start reading: the [`Storage`] trait below, then `sled_engine.rs`.
#![forbid(unsafe_code)]

use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;

pub mod cache;
pub mod conformance;
pub mod encryption;
pub mod etcd_engine;
pub mod etcd_process;
pub mod layered;
pub mod sled_engine;

/// A global, strictly increasing revision. Every successful write (create,
/// update, delete) bumps it by one. It is what clients see as
/// `metadata.resourceVersion`.
pub type Revision = u64;

/// One stored key and its value at a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// The revision at which this key was created (unchanged by updates).
    pub create_revision: Revision,
    /// The revision of the last write to this key.
    pub mod_revision: Revision,
}

/// Options of a [`Storage::list`] call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only keys strictly greater than this one (a continue token's position).
    pub start_after: Option<String>,
    /// At most this many items (`None` or `Some(0)`: no limit).
    pub limit: Option<usize>,
    /// Read at this revision instead of the latest (used to keep paged lists
    /// consistent). Older than the compacted revision → [`StorageError::Compacted`].
    pub revision: Option<Revision>,
}

/// The answer of a [`Storage::list`] call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListResult {
    pub items: Vec<KeyValue>,
    /// The revision the list is consistent at.
    pub revision: Revision,
    /// How many matching keys come after the last returned item (0 if none).
    pub remaining: u64,
}

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as delivered to watchers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    /// For `Added`/`Modified`: the new value. For `Deleted`: the last value
    /// before deletion, with `mod_revision` set to the deletion's revision.
    pub kv: KeyValue,
    /// The value before this change (`None` for `Added`).
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The revision at which this change happened.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// A stream of watch events in revision order. An `Err` item ends the stream
/// (e.g. [`StorageError::Compacted`] when the watcher fell too far behind).
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<Event, StorageError>> + Send>>;

/// One item of a [`Storage::watch_progress`] stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchItem {
    /// A change under the watched prefix.
    Event(Event),
    /// Every change under the prefix with revision `<=` this one has been
    /// delivered (etcd's progress notification). Lets a watch cache know it is
    /// current even when the latest writes were to other prefixes.
    Progress(Revision),
}

/// A stream of [`WatchItem`]s in revision order; an `Err` ends it.
pub type ProgressWatchStream = Pin<Box<dyn Stream<Item = Result<WatchItem, StorageError>> + Send>>;

/// The events of a progress watch, its progress reports dropped: what
/// [`Storage::watch`] gives from [`Storage::watch_progress`]'s items.
pub fn events_only(
    items: impl Stream<Item = Result<WatchItem, StorageError>> + Send + 'static,
) -> WatchStream {
    Box::pin(futures::StreamExt::filter_map(items, |item| async move {
        match item {
            Ok(WatchItem::Event(ev)) => Some(Ok(ev)),
            Ok(WatchItem::Progress(_)) => None,
            Err(e) => Some(Err(e)),
        }
    }))
}

/// Errors of every engine, named after what the caller must do about them.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    #[error("key {key} not found")]
    NotFound { key: String },
    #[error("key {key} already exists")]
    AlreadyExists { key: String },
    /// Compare-and-swap failed: the key's `mod_revision` is not the expected
    /// one (or the key is gone).
    #[error("key {key} was modified: expected revision {expected}, found {actual}")]
    Conflict {
        key: String,
        expected: Revision,
        actual: Revision,
    },
    /// The requested revision is older than the oldest one still kept.
    #[error("revision {requested} has been compacted; oldest available is {compacted}")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    /// A watcher could not keep up and its bounded queue overflowed.
    #[error("watcher fell behind and was closed")]
    WatcherTooSlow,
    /// The engine itself failed (I/O, corruption, connection).
    #[error("storage engine error: {0}")]
    Engine(String),
    /// A value could not be converted between the served and the stored
    /// version (a CRD's conversion webhook failed); the message is kube's.
    #[error("{0}")]
    Conversion(String),
}

/// The storage interface every engine implements. Object safe: the registry
/// holds an `Arc<dyn Storage>`.
///
/// Semantics every engine must provide (checked by [`conformance`]):
/// - each successful write bumps the global revision by exactly one and
///   returns the stored [`KeyValue`] with that `mod_revision`;
/// - a write is durable when it returns (engines may share one flush between
///   concurrent writers: group commit);
/// - `watch(prefix, rev)` yields every change under `prefix` with revision
///   `> rev`, in order, with no gaps, then live changes;
/// - `list` at `revision: Some(r)` returns the state as of `r`.
#[async_trait::async_trait]
pub trait Storage: Send + Sync + 'static {
    /// The latest value of `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError>;

    /// [`Storage::get`], and whether the stored value is *stale*: readable,
    /// but not in the form a write would store now (encrypted with a provider
    /// or key that is no longer the first one, or plaintext where encryption
    /// is now configured: kube's `TransformFromStorage` `stale`). A
    /// guaranteed update writes a stale value back even when the object did
    /// not change, which is how rewriting every object re-encrypts it. Engines
    /// store values as given: never stale (this default).
    /// [`layered::Layered`] forwards it and adds its layer's own answer.
    async fn get_with_staleness(
        &self,
        key: &str,
    ) -> Result<Option<(KeyValue, bool)>, StorageError> {
        Ok(self.get(key).await?.map(|kv| (kv, false)))
    }

    /// Keys starting with `prefix`, in key order, per [`ListOptions`].
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError>;

    /// Create `key`; fails with `AlreadyExists` if it is present.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError>;

    /// Replace `key`'s value if its `mod_revision` is `expected`; else `Conflict`
    /// (or `NotFound` if the key is gone).
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError>;

    /// Delete `key`, optionally only if its `mod_revision` is `expected`.
    /// Returns the deleted value with `mod_revision` = the deletion's revision.
    async fn delete(&self, key: &str, expected: Option<Revision>)
    -> Result<KeyValue, StorageError>;

    /// Changes under `prefix` with revision `> from`. `from` older than the
    /// compacted revision → `Err(Compacted)` immediately.
    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError>;

    /// Like [`Storage::watch`], interleaved with [`WatchItem::Progress`]
    /// reports. The default reports no progress (engines should override it:
    /// the watch cache relies on progress to answer "wait until revision r"
    /// when the latest writes were under other prefixes).
    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<ProgressWatchStream, StorageError> {
        use futures::StreamExt;
        let events = self.watch(prefix, from).await?;
        Ok(Box::pin(events.map(|item| item.map(WatchItem::Event))))
    }

    /// The latest revision (of any key).
    async fn current_revision(&self) -> Result<Revision, StorageError>;

    /// The revision a consistent read must wait for, when other processes
    /// may write to the same store (kube's consistent reads from cache,
    /// KEP-2340: the store's current revision, read at each such read).
    /// `None` (the default) when this process is the only writer, so the
    /// revision of its own last write is enough (the embedded engine).
    async fn consistent_read_revision(&self) -> Result<Option<Revision>, StorageError> {
        Ok(None)
    }

    /// A reader waits for the watch caches to reach a revision: ask the
    /// engine's watches for a progress report now rather than at their next
    /// tick (kube's `RequestWatchProgress`). Default: nothing to do.
    fn request_progress(&self) {}

    /// Whether a watch cache over this engine can serve a read that must see
    /// every acknowledged write ([`Storage::consistent_read_revision`] is
    /// `Some`): its watches report progress on request, and a report never
    /// runs ahead of the events it covers. `false`: such reads are served by
    /// the engine itself (kube-apiserver does the same with an etcd older
    /// than 3.4.31 / 3.5.13). No default, so a layer over an engine cannot
    /// forget to pass the engine's answer on.
    fn serves_progress_requests(&self) -> bool;

    /// Forget history at or below `revision` (events and old values kept for
    /// list-at-revision and watch resume).
    async fn compact(&self, revision: Revision) -> Result<(), StorageError>;

    /// The oldest revision still available for `watch`/`list` at a revision.
    async fn compacted_revision(&self) -> Result<Revision, StorageError>;
}
