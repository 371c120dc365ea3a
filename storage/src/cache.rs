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
//! How it works: a background task applies upstream events in batches under
//! a write lock (state map, ring buffer, revision), then hands the batch to
//! the registered watchers while still holding the watcher list, so a watcher
//! registering concurrently either replays an event from the ring or receives
//! it live, never both and never neither. A watcher's queue is bounded; when it
//! is full the watcher gets `Err(WatcherTooSlow)` (one slot is always kept for
//! it) and is dropped: the dispatcher never waits on a watcher. Upstream
//! progress reports ([`Storage::watch_progress`]) advance the cache revision
//! even when the latest writes were under other prefixes, which is what makes
//! [`WatchCache::wait_for_revision`] work for any revision the store handed
//! out. If the upstream watch fails (e.g. compacted), the cache re-lists,
//! replaces its state, and closes every watcher with `Compacted` (their resume
//! point is gone), as kube-apiserver's cacher does.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, oneshot, watch};

use crate::{
    Event, EventType, KeyValue, ListOptions, ProgressWatchStream, Revision, Storage, StorageError,
    WatchItem,
};

/// Label and field values of an object, for selector matching without
/// re-parsing its JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    pub labels: Pairs,
    /// Selectable fields, e.g. `metadata.name`, `metadata.namespace`, `type`.
    pub fields: Pairs,
}

impl Attrs {
    /// Give back spare capacity: attributes live as long as the cached object.
    fn shrink(&mut self) {
        self.labels.0.shrink_to_fit();
        self.fields.0.shrink_to_fit();
    }
}

/// A small string map kept as a vector sorted by key. Every cached object
/// holds two of them; a `BTreeMap` allocates a node for 11 entries (about
/// 540 bytes) even for one label, which made attributes cost more than 1 KiB
/// per object (heaptrack, see docs/benchmarks.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairs(Vec<(String, String)>);

impl Pairs {
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| self.0[i].1.as_str())
    }

    /// Set `key` to `value` (replacing an earlier value).
    pub fn insert(&mut self, key: String, value: String) {
        match self.find(&key) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// The pairs, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<&str> for Pairs {
    type Output = str;

    /// The value of `key`; panics when it is absent (as `BTreeMap`'s index).
    fn index(&self, key: &str) -> &str {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no entry {key:?}"),
        }
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Pairs {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut p = Pairs::default();
        for (k, v) in iter {
            p.insert(k.into(), v.into());
        }
        p
    }
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
    /// For a watcher that asked for heads ([`WatchCache::watch_heads`]):
    /// `object`'s `apiVersion`, `kind` and `metadata` (with its
    /// resourceVersion, without `managedFields`), taken from the decode the
    /// cache made for the attributes when the event came in. Shared by every
    /// such watcher and dropped once they are done with it: no copy is kept
    /// in the cache. `None` when the cache had no such decode (a replayed
    /// event, an object that stopped matching the filter, a stored value
    /// not shaped like an object): then decode `object.json`.
    pub head: Option<Arc<serde_json::Value>>,
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

/// How long [`WatchCache::wait_for_revision`] waits (kube-apiserver's
/// cacher: 3 s before "Too large resource version").
const WAIT_FOR_REVISION: Duration = Duration::from_secs(3);
/// Upstream items applied per lock acquisition, at most.
const APPLY_BATCH: usize = 256;
/// Delay between failed re-list attempts (doubling up to the max).
const RELIST_BACKOFF: Duration = Duration::from_millis(100);
const RELIST_BACKOFF_MAX: Duration = Duration::from_secs(5);

impl CachedObject {
    /// Decode `value` once, stamp `metadata.resourceVersion` = `mod_revision`,
    /// re-encode once and extract its attributes. A value that is not JSON is
    /// kept as is (with empty attributes) rather than failing the whole cache.
    fn build(
        key: String,
        value: &[u8],
        create_revision: Revision,
        mod_revision: Revision,
        attrs: &AttrsFn,
    ) -> Self {
        Self::build_with_head(key, value, create_revision, mod_revision, attrs).0
    }

    /// [`CachedObject::build`], and the object's head (see
    /// [`CacheEvent::head`]) when the attributes came from the usual decode.
    fn build_with_head(
        key: String,
        value: &[u8],
        create_revision: Revision,
        mod_revision: Revision,
        attrs: &AttrsFn,
    ) -> (Self, Option<serde_json::Value>) {
        // The usual case: the stored bytes with the resourceVersion put in
        // place (no second encoding of what the writer just encoded), and the
        // attributes read from a decode that skips `metadata.managedFields`
        // (half the nodes of a typical object; no label or selectable field
        // lives there: field selectors cannot index into lists).
        if let Some(bytes) = with_resource_version(value, mod_revision)
            && let Ok(mut v) = decode_without_managed_fields(value)
        {
            set_resource_version(&mut v, mod_revision);
            let mut a = attrs(&v);
            a.shrink();
            let object = Self {
                key,
                create_revision,
                mod_revision,
                json: bytes,
                attrs: a,
            };
            return (object, head_of(v));
        }
        let (json, attrs) = match serde_json::from_slice::<serde_json::Value>(value) {
            Ok(mut v) => {
                set_resource_version(&mut v, mod_revision);
                let mut a = attrs(&v);
                a.shrink();
                // The decoded value re-encoded only when the bytes do not
                // allow the in-place stamp (no metadata object, or one that
                // has a resourceVersion).
                if let Some(bytes) = with_resource_version(value, mod_revision) {
                    (bytes, a)
                } else {
                    match encode_exact(&v, value.len()) {
                        Ok(bytes) => (bytes, a),
                        Err(e) => {
                            tracing::warn!(%key, error = %e, "re-encoding a cached object failed");
                            (Bytes::copy_from_slice(value), a)
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(%key, error = %e, "stored value is not JSON; cached as is");
                (Bytes::copy_from_slice(value), Attrs::default())
            }
        };
        let object = Self {
            key,
            create_revision,
            mod_revision,
            json,
            attrs,
        };
        (object, None)
    }

    fn from_kv(kv: &KeyValue, attrs: &AttrsFn) -> Self {
        Self::build(
            kv.key.clone(),
            &kv.value,
            kv.create_revision,
            kv.mod_revision,
            attrs,
        )
    }

    /// This object's content with another resourceVersion (for the `Deleted`
    /// event of an object that stopped matching a watcher's filter).
    fn at_revision(&self, revision: Revision) -> Self {
        let json = match serde_json::from_slice::<serde_json::Value>(&self.json) {
            Ok(mut v) => {
                set_resource_version(&mut v, revision);
                encode_exact(&v, self.json.len()).unwrap_or_else(|_| self.json.clone())
            }
            Err(_) => self.json.clone(),
        };
        Self {
            key: self.key.clone(),
            create_revision: self.create_revision,
            mod_revision: revision,
            json,
            attrs: self.attrs.clone(),
        }
    }
}

/// The list behind [`WatchCache::list`] and [`WatchCache::list_at`]:
/// `revision` must be within the window (`floor..=revision` of `state`).
fn list_locked(
    state: &State,
    prefix: &str,
    start_after: Option<&str>,
    filter: Option<&FilterFn>,
    limit: usize,
    revision: Revision,
) -> (Vec<Arc<CachedObject>>, u64) {
    let limit = if limit == 0 { usize::MAX } else { limit };
    let start = match start_after {
        Some(s) if s >= prefix => Bound::Excluded(s),
        _ => Bound::Included(prefix),
    };
    let after_start = |key: &str| match start {
        Bound::Excluded(s) => key > s,
        _ => true,
    };
    // Keys changed after `revision` → their state at `revision`
    // (`None`: absent then). Newest first, so the earliest change wins.
    let mut then: BTreeMap<&str, Option<&Arc<CachedObject>>> = BTreeMap::new();
    for ev in state.ring.iter().rev() {
        if ev.revision <= revision {
            break;
        }
        let key = ev.object.key.as_str();
        if key.starts_with(prefix) && after_start(key) {
            then.insert(key, ev.prev.as_ref());
        }
    }
    let mut now = state
        .objects
        .range::<str, _>((start, Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(prefix))
        .peekable();
    let mut old = then.into_iter().peekable();
    let mut items = Vec::new();
    let mut remaining = 0u64;
    loop {
        let obj = match (now.peek(), old.peek()) {
            (None, None) => break,
            (Some((nk, _)), Some((ok, _))) if nk.as_str() == *ok => {
                now.next();
                old.next().and_then(|(_, o)| o)
            }
            (Some((nk, _)), Some((ok, _))) if nk.as_str() > *ok => old.next().and_then(|(_, o)| o),
            (Some(_), _) => now.next().map(|(_, o)| o),
            (None, Some(_)) => old.next().and_then(|(_, o)| o),
        };
        let Some(obj) = obj else { continue };
        if filter.is_some_and(|f| !f(obj)) {
            continue;
        }
        if items.len() < limit {
            items.push(obj.clone());
        } else {
            remaining += 1;
        }
    }
    (items, remaining)
}

/// `v` as JSON bytes that own no spare capacity: they live as long as the
/// object is cached, and `serde_json::to_vec`'s doubling growth left up to
/// half of each buffer unused (heaptrack, docs/benchmarks.md).
/// An object's JSON as a [`serde_json::Value`] without
/// `metadata.managedFields`, for attribute extraction. Errors when the value
/// or its `metadata` is not a JSON object (the caller then decodes it whole).
fn decode_without_managed_fields(json: &[u8]) -> Result<serde_json::Value, serde_json::Error> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
    use serde_json::{Map, Value};

    /// A JSON object; at the top, its `metadata` member is read by the
    /// same visitor with `top` false, which drops `managedFields`.
    struct Obj {
        top: bool,
    }
    impl<'de> Visitor<'de> for Obj {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut out = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if self.top && key == "metadata" {
                    let meta = map.next_value_seed(Obj { top: false })?;
                    out.insert(key, meta);
                } else if !self.top && key == "managedFields" {
                    map.next_value::<IgnoredAny>()?;
                } else {
                    let v = map.next_value::<Value>()?;
                    out.insert(key, v);
                }
            }
            Ok(Value::Object(out))
        }
    }
    impl<'de> DeserializeSeed<'de> for Obj {
        type Value = Value;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(json);
    let v = Obj { top: true }.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// `v`'s `apiVersion`, `kind` and `metadata` members, in their order; the
/// rest is dropped. The parts are moved, not copied: `v` was to be dropped.
fn head_of(v: serde_json::Value) -> Option<serde_json::Value> {
    let serde_json::Value::Object(map) = v else {
        return None;
    };
    Some(serde_json::Value::Object(
        map.into_iter()
            .filter(|(k, _)| matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .collect(),
    ))
}

fn encode_exact(v: &serde_json::Value, hint: usize) -> Result<Bytes, serde_json::Error> {
    let mut buf = Vec::with_capacity(hint + 32);
    serde_json::to_writer(&mut buf, v)?;
    buf.shrink_to_fit();
    Ok(Bytes::from(buf))
}

/// `json` (an object, as a writer stored it) with
/// `"resourceVersion":"<revision>"` added as the last member of its
/// top-level `metadata` object: the bytes a decode, an insert into the
/// (insertion-ordered) metadata map and a compact re-encoding give for a
/// compactly encoded object, without either step. `None` when `json` is not
/// an object with a `metadata` object, or its metadata already has a
/// `resourceVersion` (the caller then decodes and re-encodes).
fn with_resource_version(json: &[u8], revision: Revision) -> Option<Bytes> {
    let open = skip_ws(json, 0);
    if json.get(open) != Some(&b'{') {
        return None;
    }
    let (mut meta, mut metas) = (None, 0);
    let close = scan_object(json, open, &mut |key, at| {
        if key == b"metadata" {
            metas += 1;
            meta = (json.get(at) == Some(&b'{')).then_some(at);
        }
    })?;
    if metas != 1 {
        return None;
    }
    if json[close + 1..].iter().any(|b| !b.is_ascii_whitespace()) {
        return None;
    }
    let meta_open = meta?;
    let mut has_rv = false;
    let meta_close = scan_object(json, meta_open, &mut |key, _| {
        has_rv |= key == b"resourceVersion";
    })?;
    if has_rv {
        return None;
    }
    let empty = json[meta_open + 1..meta_close]
        .iter()
        .all(u8::is_ascii_whitespace);
    let rv = revision.to_string();
    let mut out = Vec::with_capacity(json.len() + rv.len() + 22);
    out.extend_from_slice(&json[..meta_close]);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(b"\"resourceVersion\":\"");
    out.extend_from_slice(rv.as_bytes());
    out.push(b'"');
    out.extend_from_slice(&json[meta_close..]);
    Some(Bytes::from(out))
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while json.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index just past the string whose opening quote is at `i`.
fn skip_string(json: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match json.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// The index just past the JSON value starting at `i` (not validated
/// beyond what finding its end needs).
fn skip_value(json: &[u8], i: usize) -> Option<usize> {
    match json.get(i)? {
        b'"' => skip_string(json, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match json.get(j)? {
                    b'"' => {
                        j = skip_string(json, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while json
                .get(j)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Walk the members of the object whose `{` is at `open`, calling
/// `member(raw key, index of its value)` for each (the key as written,
/// without its quotes; a key with escapes never equals a plain name), and
/// return the index of its closing `}`. `None` for malformed input.
fn scan_object(json: &[u8], open: usize, member: &mut dyn FnMut(&[u8], usize)) -> Option<usize> {
    let mut i = skip_ws(json, open + 1);
    if json.get(i) == Some(&b'}') {
        return Some(i);
    }
    loop {
        if json.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(json, i)?;
        let key = &json[i + 1..key_end - 1];
        i = skip_ws(json, key_end);
        if json.get(i) != Some(&b':') {
            return None;
        }
        let at = skip_ws(json, i + 1);
        member(key, at);
        i = skip_ws(json, skip_value(json, at)?);
        match json.get(i)? {
            b',' => i = skip_ws(json, i + 1),
            b'}' => return Some(i),
            _ => return None,
        }
    }
}

fn set_resource_version(v: &mut serde_json::Value, revision: Revision) {
    if let Some(obj) = v.as_object_mut() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "resourceVersion".to_owned(),
                serde_json::Value::String(revision.to_string()),
            );
        }
    }
}

/// One change kept in the ring buffer, shared by every watcher.
struct RingEvent {
    kind: EventType,
    revision: Revision,
    object: Arc<CachedObject>,
    /// The cached object before this change.
    prev: Option<Arc<CachedObject>>,
    /// `prev`'s content at `revision`, built the first time a watcher needs it.
    prev_at_revision: OnceLock<Arc<CachedObject>>,
}

impl RingEvent {
    /// The event as seen through `filter` (kube-apiserver's
    /// `cacheWatcher.convertToWatchEvent`): an object that stops matching is
    /// delivered as `Deleted` (its previous content at this revision), one that
    /// starts matching as `Added`.
    fn for_watcher(&self, filter: Option<&FilterFn>) -> Option<CacheEvent> {
        let Some(filter) = filter else {
            return Some(CacheEvent {
                kind: self.kind,
                object: self.object.clone(),
                head: None,
            });
        };
        let cur = self.kind != EventType::Deleted && filter(&self.object);
        let old = match (&self.prev, self.kind) {
            (Some(prev), _) => filter(prev),
            (None, EventType::Deleted) => filter(&self.object),
            (None, _) => false,
        };
        let (kind, object) = match (cur, old) {
            (false, false) => return None,
            (true, false) => (EventType::Added, self.object.clone()),
            (true, true) => (EventType::Modified, self.object.clone()),
            (false, true) => match (self.kind, &self.prev) {
                (EventType::Deleted, _) | (_, None) => (EventType::Deleted, self.object.clone()),
                (_, Some(prev)) => (
                    EventType::Deleted,
                    self.prev_at_revision
                        .get_or_init(|| Arc::new(prev.at_revision(self.revision)))
                        .clone(),
                ),
            },
        };
        Some(CacheEvent {
            kind,
            object,
            head: None,
        })
    }
}

struct State {
    objects: BTreeMap<String, Arc<CachedObject>>,
    /// The last `window` events, in revision order.
    ring: VecDeque<Arc<RingEvent>>,
    /// Every event with a revision above this one is in `ring`.
    floor: Revision,
    revision: Revision,
}

struct Watcher {
    prefix: String,
    /// Live events at or below this revision were replayed or are not wanted.
    from: Revision,
    filter: Option<FilterFn>,
    /// Live events carry [`CacheEvent::head`].
    heads: bool,
    tx: mpsc::Sender<Result<CacheEvent, StorageError>>,
}

impl Watcher {
    /// Queue `ev` (whose object's head is `head`); false when the watcher
    /// is gone or was closed as too slow.
    fn offer(&self, ev: &RingEvent, head: Option<&Arc<serde_json::Value>>) -> bool {
        if ev.revision <= self.from || !ev.object.key.starts_with(&self.prefix) {
            return true;
        }
        let Some(mut event) = ev.for_watcher(self.filter.as_ref()) else {
            return true;
        };
        if self.heads && Arc::ptr_eq(&event.object, &ev.object) {
            event.head = head.cloned();
        }
        // One slot is always kept for the terminal error.
        if self.tx.capacity() <= 1 {
            let _ = self.tx.try_send(Err(StorageError::WatcherTooSlow));
            return false;
        }
        self.tx.try_send(Ok(event)).is_ok()
    }
}

struct Inner {
    storage: Arc<dyn Storage>,
    prefix: String,
    attrs: AttrsFn,
    config: CacheConfig,
    revision: AtomicU64,
    state: RwLock<State>,
    /// Lock order: `state` before `watchers`.
    watchers: Mutex<Vec<Watcher>>,
    revision_tx: watch::Sender<Revision>,
}

/// The cache of one key prefix. Dropping it stops its background task and
/// ends its watchers' streams.
pub struct WatchCache {
    inner: Arc<Inner>,
    _stop: oneshot::Sender<()>,
}

impl std::fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCache")
            .field("prefix", &self.inner.prefix)
            .field("revision", &self.revision())
            .finish()
    }
}

impl WatchCache {
    /// List `prefix` from storage, then follow its watch. Returns once the
    /// initial list is loaded.
    pub async fn start(
        storage: Arc<dyn Storage>,
        prefix: String,
        attrs: AttrsFn,
        config: CacheConfig,
    ) -> Result<Arc<Self>, StorageError> {
        let (state, upstream) = initial_state(&storage, &prefix, &attrs).await?;
        let revision = state.revision;
        let (revision_tx, _) = watch::channel(revision);
        let inner = Arc::new(Inner {
            storage,
            prefix,
            attrs,
            config,
            revision: AtomicU64::new(revision),
            state: RwLock::new(state),
            watchers: Mutex::new(Vec::new()),
            revision_tx,
        });
        let (stop, stopped) = oneshot::channel();
        tokio::spawn(run(inner.clone(), upstream, stopped));
        Ok(Arc::new(Self { inner, _stop: stop }))
    }

    /// The revision the cache has caught up to.
    pub fn revision(&self) -> Revision {
        self.inner.revision.load(Ordering::Acquire)
    }

    /// Wait (bounded by a few seconds) until the cache has seen `revision`;
    /// used so a read after a write sees that write.
    pub async fn wait_for_revision(&self, revision: Revision) -> Result<(), StorageError> {
        if self.revision() >= revision {
            return Ok(());
        }
        let mut rx = self.inner.revision_tx.subscribe();
        match tokio::time::timeout(WAIT_FOR_REVISION, rx.wait_for(|r| *r >= revision)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(StorageError::Engine("watch cache stopped".into())),
            Err(_) => Err(StorageError::Engine(format!(
                "timeout: Too large resource version: {revision}, current: {}",
                self.revision()
            ))),
        }
    }

    /// The current object at `key`.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.inner.state.read().objects.get(key).cloned()
    }

    /// Objects under `prefix` (a sub-prefix of the cache's, e.g. one namespace),
    /// in key order, after `start_after`, matching `filter`, at most `limit`
    /// (0 = all). Returns (items, the cache revision, how many more match).
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        filter: Option<&FilterFn>,
        limit: usize,
    ) -> (Vec<Arc<CachedObject>>, Revision, u64) {
        let state = self.inner.state.read();
        let (items, remaining) =
            list_locked(&state, prefix, start_after, filter, limit, state.revision);
        (items, state.revision, remaining)
    }

    /// [`WatchCache::list`] as of an earlier `revision` (a `continue` page,
    /// or an `Exact` read): the current state with every object changed
    /// after `revision` replaced by its state then, taken from the ring (the
    /// `prev` of its first event after `revision`). Returns (items, how many
    /// more match), or `None` when `revision` is outside the window (older
    /// than the ring, newer than the cache): then read storage history.
    ///
    /// kube-apiserver serves such pages from the cacher too (its
    /// ListFromCacheSnapshot); reading them from storage history made paging
    /// through 10,000 objects cost 10x one full list (docs/benchmarks.md).
    pub fn list_at(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        filter: Option<&FilterFn>,
        limit: usize,
        revision: Revision,
    ) -> Option<(Vec<Arc<CachedObject>>, u64)> {
        let state = self.inner.state.read();
        if revision < state.floor || revision > state.revision {
            return None;
        }
        Some(list_locked(
            &state,
            prefix,
            start_after,
            filter,
            limit,
            revision,
        ))
    }

    /// Events under `prefix` with revision `> from`, filtered: an object that
    /// stops matching is delivered as `Deleted`, one that starts matching as
    /// `Added` (kube-apiserver's cacher semantics). `from` older than the
    /// window → `Err(Compacted)`.
    pub fn watch(
        &self,
        prefix: &str,
        from: Revision,
        filter: Option<FilterFn>,
    ) -> Result<CacheWatchReceiver, StorageError> {
        self.watch_with(prefix, from, filter, false)
    }

    /// [`WatchCache::watch`] whose live events carry [`CacheEvent::head`]:
    /// for a follower that reads only the objects' metadata, which then
    /// need not parse each event's JSON again (one decode per event however
    /// many such followers there are).
    pub fn watch_heads(
        &self,
        prefix: &str,
        from: Revision,
        filter: Option<FilterFn>,
    ) -> Result<CacheWatchReceiver, StorageError> {
        self.watch_with(prefix, from, filter, true)
    }

    fn watch_with(
        &self,
        prefix: &str,
        from: Revision,
        filter: Option<FilterFn>,
        heads: bool,
    ) -> Result<CacheWatchReceiver, StorageError> {
        let state = self.inner.state.read();
        if from < state.floor {
            return Err(StorageError::Compacted {
                requested: from,
                compacted: state.floor,
            });
        }
        let start = state.ring.partition_point(|e| e.revision <= from);
        let replay: Vec<CacheEvent> = state
            .ring
            .range(start..)
            .filter(|e| e.object.key.starts_with(prefix))
            .filter_map(|e| e.for_watcher(filter.as_ref()))
            .collect();
        let (tx, rx) = mpsc::channel(replay.len() + self.inner.config.watcher_queue + 1);
        for ev in replay {
            // Cannot fail: the channel has room for the whole replay.
            let _ = tx.try_send(Ok(ev));
        }
        // Registered while `state` is still read-locked: events applied after
        // this point are dispatched to us, earlier ones were in the replay.
        self.inner.watchers.lock().push(Watcher {
            prefix: prefix.to_owned(),
            from: from.max(state.revision),
            filter,
            heads,
            tx,
        });
        drop(state);
        Ok(rx)
    }
}

/// The initial list and the upstream watch following it.
async fn initial_state(
    storage: &Arc<dyn Storage>,
    prefix: &str,
    attrs: &AttrsFn,
) -> Result<(State, ProgressWatchStream), StorageError> {
    let list = storage.list(prefix, ListOptions::default()).await?;
    let upstream = storage.watch_progress(prefix, list.revision).await?;
    let objects = list
        .items
        .iter()
        .map(|kv| (kv.key.clone(), Arc::new(CachedObject::from_kv(kv, attrs))))
        .collect();
    Ok((
        State {
            objects,
            ring: VecDeque::new(),
            floor: list.revision,
            revision: list.revision,
        },
        upstream,
    ))
}

/// The cache's background task: apply upstream items until stopped; re-list
/// when the upstream watch fails.
async fn run(
    inner: Arc<Inner>,
    mut upstream: ProgressWatchStream,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        let first = tokio::select! {
            _ = &mut stop => return,
            item = upstream.next() => item,
        };
        let mut failure = None;
        let mut batch = Vec::new();
        match first {
            Some(Ok(item)) => batch.push(item),
            Some(Err(e)) => failure = Some(e),
            None => failure = Some(StorageError::Engine("upstream watch ended".into())),
        }
        while failure.is_none() && batch.len() < APPLY_BATCH {
            match upstream.next().now_or_never() {
                Some(Some(Ok(item))) => batch.push(item),
                Some(Some(Err(e))) => failure = Some(e),
                Some(None) => failure = Some(StorageError::Engine("upstream watch ended".into())),
                None => break,
            }
        }
        if !batch.is_empty() {
            inner.apply(batch);
        }
        if let Some(e) = failure {
            tracing::warn!(prefix = %inner.prefix, error = %e, "watch cache upstream failed; re-listing");
            let mut backoff = RELIST_BACKOFF;
            loop {
                match initial_state(&inner.storage, &inner.prefix, &inner.attrs).await {
                    Ok((state, stream)) => {
                        inner.replace(state);
                        upstream = stream;
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(prefix = %inner.prefix, error = %e, "watch cache re-list failed");
                    }
                }
                tokio::select! {
                    _ = &mut stop => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(RELIST_BACKOFF_MAX);
            }
        }
    }
}

/// An upstream item, decoded (an event with its object's head).
enum Built {
    Event(EventType, Arc<CachedObject>, Option<serde_json::Value>),
    Progress(Revision),
}

impl Inner {
    fn build(&self, ev: &Event) -> (Arc<CachedObject>, Option<serde_json::Value>) {
        // For a deletion `kv` is the last state with the deletion's revision.
        let kv = &ev.kv;
        let (object, head) = CachedObject::build_with_head(
            kv.key.clone(),
            &kv.value,
            kv.create_revision,
            kv.mod_revision,
            &self.attrs,
        );
        (Arc::new(object), head)
    }

    /// Apply a batch of upstream items, then dispatch its events.
    fn apply(&self, batch: Vec<WatchItem>) {
        // Decode outside the lock.
        let built: Vec<Built> = batch
            .into_iter()
            .map(|item| match item {
                WatchItem::Event(ev) => {
                    let (object, head) = self.build(&ev);
                    Built::Event(ev.kind, object, head)
                }
                WatchItem::Progress(r) => Built::Progress(r),
            })
            .collect();
        let mut state = self.state.write();
        let mut fresh = Vec::new();
        for item in built {
            let (kind, object, head) = match item {
                Built::Progress(r) => {
                    state.revision = state.revision.max(r);
                    continue;
                }
                Built::Event(kind, object, head) => (kind, object, head),
            };
            let revision = object.mod_revision;
            if revision <= state.revision {
                continue;
            }
            let prev = match kind {
                EventType::Deleted => state.objects.remove(&object.key),
                _ => state.objects.insert(object.key.clone(), object.clone()),
            };
            let ring_event = Arc::new(RingEvent {
                kind,
                revision,
                object,
                prev,
                prev_at_revision: OnceLock::new(),
            });
            state.ring.push_back(ring_event.clone());
            while state.ring.len() > self.config.window {
                if let Some(old) = state.ring.pop_front() {
                    state.floor = old.revision;
                }
            }
            state.revision = revision;
            fresh.push((ring_event, head.map(Arc::new)));
        }
        let revision = state.revision;
        self.revision.store(revision, Ordering::Release);
        let mut watchers = self.watchers.lock();
        drop(state);
        if !fresh.is_empty() {
            watchers.retain(|w| fresh.iter().all(|(ev, head)| w.offer(ev, head.as_ref())));
        }
        watchers.retain(|w| !w.tx.is_closed());
        drop(watchers);
        self.revision_tx.send_replace(revision);
    }

    /// Replace the whole state after a re-list; every watcher loses its
    /// resume point and is closed with `Compacted`.
    fn replace(&self, new: State) {
        let mut state = self.state.write();
        let old_revision = state.revision;
        *state = new;
        let revision = state.revision;
        let floor = state.floor;
        self.revision.store(revision, Ordering::Release);
        let mut watchers = self.watchers.lock();
        drop(state);
        for w in watchers.drain(..) {
            let _ = w.tx.try_send(Err(StorageError::Compacted {
                requested: old_revision,
                compacted: floor,
            }));
        }
        drop(watchers);
        self.revision_tx.send_replace(revision);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs_fn() -> AttrsFn {
        Arc::new(|v: &serde_json::Value| {
            let mut a = Attrs::default();
            if let Some(app) = v["metadata"]["labels"]["app"].as_str() {
                a.labels.insert("app".into(), app.into());
            }
            a
        })
    }

    fn object(app: &str, rev: Revision) -> Arc<CachedObject> {
        let v = serde_json::json!({"metadata": {"name": "o", "labels": {"app": app}}, "data": app});
        let bytes = serde_json::to_vec(&v).unwrap_or_default();
        Arc::new(CachedObject::build(
            "/k/o".into(),
            &bytes,
            1,
            rev,
            &attrs_fn(),
        ))
    }

    fn event(
        kind: EventType,
        new: Arc<CachedObject>,
        prev: Option<Arc<CachedObject>>,
    ) -> RingEvent {
        RingEvent {
            kind,
            revision: new.mod_revision,
            object: new,
            prev,
            prev_at_revision: OnceLock::new(),
        }
    }

    fn app_is(app: &'static str) -> FilterFn {
        Arc::new(move |o: &CachedObject| o.attrs.labels.get("app") == Some(app))
    }

    fn json(o: &CachedObject) -> serde_json::Value {
        serde_json::from_slice(&o.json).unwrap_or_default()
    }

    #[test]
    fn building_stamps_the_resource_version_and_extracts_attrs_once() {
        let o = object("x", 42);
        assert_eq!(json(&o)["metadata"]["resourceVersion"], "42");
        assert_eq!(json(&o)["metadata"]["name"], "o");
        assert_eq!(o.attrs.labels.get("app"), Some("x"));
        let no_meta = CachedObject::build("/k".into(), b"{\"a\":1}", 1, 7, &attrs_fn());
        assert_eq!(json(&no_meta)["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn attributes_are_read_without_managed_fields_and_the_json_keeps_them() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let attrs: AttrsFn = {
            let seen = seen.clone();
            Arc::new(move |v: &serde_json::Value| {
                seen.lock().push(v.clone());
                let mut a = Attrs::default();
                if let Some(l) = v.pointer("/metadata/labels/app").and_then(|l| l.as_str()) {
                    a.labels.insert("app".into(), l.into());
                }
                if let Some(t) = v.pointer("/type").and_then(|t| t.as_str()) {
                    a.fields.insert("type".into(), t.into());
                }
                a
            })
        };
        let stored = br#"{"kind":"Secret","metadata":{"name":"s","labels":{"app":"x"},"managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}]},"type":"t","data":{"k":"dg=="}}"#;
        let o = CachedObject::build("/s".into(), stored, 3, 9, &attrs);
        assert_eq!(o.attrs.labels.get("app"), Some("x"));
        assert_eq!(o.attrs.fields.get("type"), Some("t"));
        let served = json(&o);
        assert_eq!(served["metadata"]["managedFields"][0]["manager"], "m");
        assert_eq!(served["metadata"]["resourceVersion"], "9");
        let seen = seen.lock();
        assert_eq!(seen.len(), 1);
        assert!(seen[0]["metadata"].get("managedFields").is_none());
        assert_eq!(seen[0]["data"]["k"], "dg==");
        assert_eq!(seen[0]["metadata"]["resourceVersion"], "9");
        // Not objects: the whole-value decode (and its errors) as before.
        assert!(decode_without_managed_fields(br#"{"metadata":"x"}"#).is_err());
        assert!(decode_without_managed_fields(br#"[1]"#).is_err());
        assert!(decode_without_managed_fields(br#"{"a":1} x"#).is_err());
    }

    #[test]
    fn the_resource_version_is_spliced_as_a_re_encoding_would_put_it() {
        let reencoded = |json: &str, rev: Revision| {
            let mut v: serde_json::Value = serde_json::from_str(json).expect("json");
            set_resource_version(&mut v, rev);
            serde_json::to_vec(&v).expect("encode")
        };
        for json in [
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","labels":{"metadata":"{x}"}},"data":{"k":"v \" } { [","metadata":"no"}}"#,
            r#"{"metadata":{},"kind":"X"}"#,
            r#"{"kind":"X","list":[{"metadata":{}},[1,2,{"a":"]"}]],"n":-1.5,"t":true,"z":null,"metadata":{"uid":"u\\"}}"#,
        ] {
            let spliced = with_resource_version(json.as_bytes(), 42).expect("spliced");
            assert_eq!(
                std::str::from_utf8(&spliced).expect("utf8"),
                std::str::from_utf8(&reencoded(json, 42)).expect("utf8"),
                "{json}"
            );
        }
        // Not spliced: the caller decodes and re-encodes.
        for json in [
            r#"{"kind":"X"}"#,
            r#"{"metadata":"x"}"#,
            r#"{"metadata":{"resourceVersion":"3"}}"#,
            r#"{"metadata":{"a":1},"metadata":{"b":2}}"#,
            r#"[{"metadata":{}}]"#,
            r#"{"metadata":{"a":1}} trailing"#,
        ] {
            assert!(
                with_resource_version(json.as_bytes(), 7).is_none(),
                "{json}"
            );
        }
        // Through the cache's build, both ways give the same object.
        let attrs: AttrsFn = Arc::new(|_| Attrs::default());
        for (json, rev) in [
            (r#"{"metadata":{"name":"a"},"data":{}}"#, 5),
            (r#"{"metadata":{"resourceVersion":"1","name":"a"}}"#, 6),
        ] {
            let o = CachedObject::build("k".into(), json.as_bytes(), 1, rev, &attrs);
            assert_eq!(&o.json[..], &reencoded(json, rev)[..]);
        }
    }

    #[test]
    fn values_that_are_not_json_are_cached_verbatim() {
        let o = CachedObject::build("/k".into(), b"not json", 1, 7, &attrs_fn());
        assert_eq!(&o.json[..], b"not json");
        assert_eq!(o.attrs, Attrs::default());
    }

    #[test]
    fn an_object_that_stops_matching_is_deleted_with_its_old_content_at_the_new_revision() {
        let ev = event(EventType::Modified, object("y", 5), Some(object("x", 3)));
        let got = ev
            .for_watcher(Some(&app_is("x")))
            .map(|e| (e.kind, e.object));
        let Some((kind, obj)) = got else {
            panic!("expected an event");
        };
        assert_eq!(kind, EventType::Deleted);
        assert_eq!(obj.mod_revision, 5);
        assert_eq!(json(&obj)["data"], "x");
        assert_eq!(json(&obj)["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn filter_transitions_follow_the_cacher() {
        let kinds = |ev: &RingEvent, f: &FilterFn| ev.for_watcher(Some(f)).map(|e| e.kind);
        let x = app_is("x");
        let starts = event(EventType::Modified, object("x", 5), Some(object("y", 3)));
        assert_eq!(kinds(&starts, &x), Some(EventType::Added));
        let stays = event(EventType::Modified, object("x", 5), Some(object("x", 3)));
        assert_eq!(kinds(&stays, &x), Some(EventType::Modified));
        let never = event(EventType::Modified, object("y", 5), Some(object("z", 3)));
        assert_eq!(kinds(&never, &x), None);
        let added = event(EventType::Added, object("x", 5), None);
        assert_eq!(kinds(&added, &x), Some(EventType::Added));
        let deleted = event(EventType::Deleted, object("x", 5), Some(object("x", 3)));
        assert_eq!(kinds(&deleted, &x), Some(EventType::Deleted));
        let deleted_other = event(EventType::Deleted, object("y", 5), Some(object("y", 3)));
        assert_eq!(kinds(&deleted_other, &x), None);
        assert_eq!(
            never.for_watcher(None).map(|e| e.kind),
            Some(EventType::Modified),
            "no filter: every event as is"
        );
    }
}
