//! The federated informer (seed 000's `util.NewFederatedInformer`): for one
//! federated kind, one watch per member cluster on the copies the
//! federation manages there (label `federation.kubernetes.io/managed=true`),
//! each kept in a **lean** cache, indexed by object (namespace/name, the
//! same as the federated object's) and by origin (annotation
//! `federation.kubernetes.io/origin-uid`).
//!
//! What the cache keeps of a copy is what sync, status, scheduling and DNS
//! read ([`lean_copy`]): its resourceVersion, uid, generation and
//! timestamps, its labels and the federation's own annotations, `status`
//! and `spec` without pod templates, as compact JSON; plus a hash of its
//! content ([`CopyState`]: everything but status and server-set
//! metadata, taken as the watch event arrives) and the resourceVersion at
//! which that content last changed, so sync knows a status-only change from
//! a content change without the object. A ConfigMap or Secret copy keeps
//! no data. The getters ([`FederatedInformer::get`] and friends) build a
//! `DynamicObject` of what is kept, on demand; sync reads the copy whole
//! from its member only when the content changed under it.
//!
//! Every controller of the kind reads the same caches: sync compares
//! against them, scheduling and status aggregation read the members'
//! status from them, a user's own federated controller (see
//! `examples/foo_controller.rs`) does both. One informer per kind is shared
//! through [`Informers`].
//!
//! Controllers learn of changes from [`FederatedInformer::subscribe`]: an
//! [`InformerEvent`] stream with a [`InformerEvent::Changed`] for every
//! change of a copy (the federated object's key to re-queue: drift repair,
//! status aggregation) and the cluster lifecycle callbacks of Federation
//! v1's `ClusterLifecycleHandlerFuncs` as events: a cluster added, ready,
//! not ready, removed, and its cache synced (listed in full).
//!
//! Most controllers want those events as kube-runtime triggers, as
//! kube-rs's `Controller::watches` gives them: [`FederatedInformer::watches`]
//! maps each copy change to the objects to reconcile (a stream of
//! `ObjectRef`s), [`FederatedInformer::copy_triggers`] is the common
//! mapping (a copy → its federated object) and
//! [`FederatedInformer::cluster_triggers`] the cluster lifecycle (every
//! object); [`Federated::federated`] adds both to a `Controller`:
//!
//! ```ignore
//! Controller::for_stream_with(stream::pending(), store, ar)
//!     .federated(&informer) // copies and cluster lifecycle
//!     .run(reconcile, error_policy, ctx)
//! ```
//!
//! The same informer watches member objects that are not copies
//! ([`Informers::for_member_objects`]: a label selector of one's own and
//! what the cache keeps of each object), e.g. the EndpointSlices the DNS
//! records count endpoints from.
//!
//! The informer follows the shared [`Members`] set: it starts a watch when
//! a member joins, restarts it when the member's client changes or it
//! becomes Ready again (a fresh list, so what happened while it was away
//! is seen), and stops it when the member leaves.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt as _;
use futures::channel::mpsc;
use futures::stream::BoxStream;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, ObjectMeta, TypeMeta};
use kube::discovery::ApiResource;
use kube::runtime::Controller;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, watcher as watch_fn};
use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use crate::kinds::FederatedKind;
use crate::member_object::{MANAGED_LABEL, ORIGIN_UID_ANNOTATION};
use crate::members::{Member, Members};

/// An object's key: its namespace (none for a cluster-scoped kind) and
/// name. A member copy has the key of its federated object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// A key from its parts (an empty namespace is none).
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            namespace: namespace.filter(|n| !n.is_empty()).map(str::to_string),
            name: name.to_string(),
        }
    }

    /// The key of an object.
    pub fn of(obj: &DynamicObject) -> Self {
        Self::new(obj.namespace().as_deref(), &obj.name_any())
    }

    /// The reference to the object of this key of kind `ar`, as a
    /// kube-runtime `Controller` takes it.
    pub fn to_ref(&self, ar: &ApiResource) -> ObjectRef<DynamicObject> {
        let r = ObjectRef::new_with(&self.name, ar.clone());
        match &self.namespace {
            Some(ns) => r.within(ns),
            None => r,
        }
    }
}

/// A copy that was added, changed or deleted in a member cluster (what a
/// [`FederatedInformer::watches`] mapper is given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The member cluster.
    pub cluster: String,
    /// The copy's key (the key of its federated object).
    pub key: ObjectKey,
    /// The copy's `federation.kubernetes.io/origin-uid`, if it has one.
    pub origin_uid: Option<String>,
    /// The copy's resourceVersion in the event (`None` after a relist
    /// found it gone).
    pub resource_version: Option<String>,
    /// Whether the copy was deleted.
    pub deleted: bool,
}

/// kube-runtime's `Controller`, reconciling on a federated informer's
/// events (see [`FederatedInformer::copy_triggers`] and
/// [`FederatedInformer::cluster_triggers`]).
pub trait Federated {
    /// Reconcile a federated object when one of its copies changes, and
    /// every object when a cluster is added, becomes Ready or not, changes
    /// labels, is removed or is listed anew.
    #[must_use]
    fn federated(self, informer: &FederatedInformer) -> Self;
}

impl Federated for Controller<DynamicObject> {
    fn federated(self, informer: &FederatedInformer) -> Self {
        self.reconcile_on(informer.copy_triggers())
            .reconcile_all_on(informer.cluster_triggers())
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// What a subscriber of a [`FederatedInformer`] is told.
#[derive(Clone, Debug)]
pub enum InformerEvent {
    /// A copy in `cluster` was added, changed or deleted: the federated
    /// object `key` (origin uid `origin_uid`, when the copy carried one)
    /// should be reconciled.
    Changed {
        /// The member cluster.
        cluster: String,
        /// The copy's (and its federated object's) key.
        key: ObjectKey,
        /// The copy's `federation.kubernetes.io/origin-uid`.
        origin_uid: Option<String>,
        /// The copy's resourceVersion in the event (`None` after a relist
        /// found it gone).
        resource_version: Option<String>,
        /// Whether the copy was deleted.
        deleted: bool,
    },
    /// A member joined (its watch starts).
    ClusterAdded(Arc<Member>),
    /// A member became Ready.
    ClusterReady(Arc<Member>),
    /// A member stopped being Ready (its cache keeps the last known copies).
    ClusterNotReady(Arc<Member>),
    /// A member's labels changed (placement may select it differently).
    ClusterChanged(Arc<Member>),
    /// A member left the federation (its Cluster was deleted); its cache is
    /// dropped.
    ClusterRemoved(String),
    /// The cache of a member holds a full list (after a start or restart
    /// of its watch): every object may need a look.
    ClusterSynced(String),
}

/// What a [`FederatedInformer`] watches in each member: the objects of a
/// label selector, and what its cache keeps of each.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The label selector of the member watch.
    pub labels: String,
    /// What the cache keeps of an object (it may drop fields).
    pub modify: fn(&mut DynamicObject),
}

impl Default for Selection {
    /// The federation's copies ([`MANAGED_LABEL`]), kept lean
    /// ([`lean_copy`]).
    fn default() -> Self {
        Self {
            labels: format!("{MANAGED_LABEL}=true"),
            modify: lean_copy,
        }
    }
}

/// What a cache keeps of one member object (see the module docs), sized
/// for a million copies on one host (issue 21 item 3): the uid and origin
/// uid as 128-bit numbers, the two resourceVersions as integers, the
/// content hash, whether it carries [`MANAGED_LABEL`]`=true`, and the rest
/// that [`Selection::modify`] kept (other metadata, labels, annotations,
/// `spec`, `status`) as compact JSON. A value that has no compact form (a
/// uid that is not a lowercase UUID, a resourceVersion that is not a plain
/// integer) is kept as it came, in `odd`. The creationTimestamp is kept
/// as its second. About 100 bytes plus the JSON (none for a copy of a
/// ConfigMap).
#[derive(Debug)]
struct Entry {
    /// `metadata.uid` as a UUID (zero: none, or kept in `odd`).
    uid: [u64; 2],
    /// The `federation.kubernetes.io/origin-uid` annotation as a UUID
    /// (zero: none, or kept in `odd`).
    origin: [u64; 2],
    resource_version: u64,
    /// The resourceVersion at which `content_hash` was first seen.
    content_version: u64,
    content_hash: u64,
    /// `metadata.creationTimestamp` in seconds since the epoch
    /// ([`NO_TIME`]: none). Kubernetes writes it in whole seconds, and so
    /// did the JSON this replaces (`Time` serializes no fraction).
    created: i64,
    /// Whether the object carries [`MANAGED_LABEL`]`=true` (the label is
    /// not kept in `rest` then).
    managed: bool,
    /// The values above that have no compact form.
    odd: Option<Box<Odd>>,
    /// What `modify` kept beside the fields above (other metadata, labels
    /// and annotations, `spec`, `status`), as JSON; `None` when nothing.
    rest: Option<Box<str>>,
}

/// [`Entry::created`] when there is none.
const NO_TIME: i64 = i64::MIN;

/// An [`Entry`]'s values that have no compact form, as they came.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Odd {
    uid: Option<Box<str>>,
    origin: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    content_version: Option<Box<str>>,
}

/// A lowercase UUID (`8-4-4-4-12` hex digits) as two numbers; `None` for
/// anything else and for the nil UUID (zero stands for "none"). Only the
/// form [`uuid_text`] prints back byte for byte is kept compactly (the
/// `uuid` crate also reads uppercase digits, which would not round-trip).
fn uuid_bits(s: &str) -> Option<[u64; 2]> {
    if s.len() != uuid::fmt::Hyphenated::LENGTH || s.bytes().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    let (hi, lo) = uuid::Uuid::try_parse(s).ok()?.as_u64_pair();
    let bits = [hi, lo];
    (bits != [0, 0]).then_some(bits)
}

/// The UUID text of [`uuid_bits`]' numbers.
fn uuid_text(bits: [u64; 2]) -> String {
    uuid::Uuid::from_u64_pair(bits[0], bits[1])
        .hyphenated()
        .to_string()
}

/// A resourceVersion as an integer, when it is one written plainly (it
/// prints back the same).
fn version_number(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|n| n.to_string() == s)
}

/// An id kept compactly, or in `odd` (`zero` + the text) when it has no
/// compact form.
fn compact_id(s: Option<String>, odd: &mut Option<Box<str>>) -> [u64; 2] {
    match s {
        None => [0, 0],
        Some(s) => uuid_bits(&s).unwrap_or_else(|| {
            *odd = Some(s.into_boxed_str());
            [0, 0]
        }),
    }
}

/// An id's text back from [`compact_id`]'s form.
fn id_text(bits: [u64; 2], odd: Option<&str>) -> Option<String> {
    if bits == [0, 0] {
        odd.map(str::to_string)
    } else {
        Some(uuid_text(bits))
    }
}

impl Entry {
    /// The lean entry of `obj` (its content hashed first, then `modify`
    /// applied).
    fn of(mut obj: DynamicObject, modify: fn(&mut DynamicObject)) -> (ObjectKey, Self) {
        let content_hash = content_hash(&obj);
        modify(&mut obj);
        let key = ObjectKey::of(&obj);
        let meta = &mut obj.metadata;
        let mut odd = Odd::default();
        let uid = compact_id(meta.uid.take(), &mut odd.uid);
        let origin = compact_id(
            meta.annotations
                .as_mut()
                .and_then(|a| a.remove(ORIGIN_UID_ANNOTATION)),
            &mut odd.origin,
        );
        let rv = meta.resource_version.take().unwrap_or_default();
        let resource_version = version_number(&rv).unwrap_or_else(|| {
            odd.content_version = Some(rv.clone().into_boxed_str());
            odd.resource_version = Some(rv.into_boxed_str());
            0
        });
        let managed = meta
            .labels
            .as_mut()
            .is_some_and(|l| match l.remove(MANAGED_LABEL) {
                Some(v) if v == "true" => true,
                Some(v) => {
                    l.insert(MANAGED_LABEL.to_string(), v);
                    false
                }
                None => false,
            });
        let created = meta
            .creation_timestamp
            .take()
            .map_or(NO_TIME, |t| t.0.as_second());
        if meta.labels.as_ref().is_some_and(BTreeMap::is_empty) {
            meta.labels = None;
        }
        if meta.annotations.as_ref().is_some_and(BTreeMap::is_empty) {
            meta.annotations = None;
        }
        meta.name = None;
        meta.namespace = None;
        meta.managed_fields = None;
        obj.types = None;
        let empty_meta = obj.metadata == ObjectMeta::default();
        let empty_data = obj.data.as_object().is_none_or(serde_json::Map::is_empty);
        let rest = if empty_meta && empty_data {
            None
        } else {
            let mut v = std::mem::take(&mut obj.data);
            if !v.is_object() {
                v = Value::Object(serde_json::Map::new());
            }
            if !empty_meta
                && let (Some(o), Ok(m)) = (v.as_object_mut(), serde_json::to_value(&obj.metadata))
            {
                o.insert("metadata".into(), m);
            }
            serde_json::to_string(&v).ok().map(String::into_boxed_str)
        };
        let entry = Self {
            uid,
            origin,
            resource_version,
            content_version: resource_version,
            content_hash,
            created,
            managed,
            odd: (odd != Odd::default()).then(|| Box::new(odd)),
            rest,
        };
        (key, entry)
    }

    fn odd(&self) -> Option<&Odd> {
        self.odd.as_deref()
    }

    fn origin_uid(&self) -> Option<String> {
        id_text(self.origin, self.odd().and_then(|o| o.origin.as_deref()))
    }

    /// Whether its origin uid is `origin`.
    fn has_origin(&self, origin: &OriginKey) -> bool {
        match origin {
            OriginKey::Uuid(bits) => self.origin == *bits,
            OriginKey::Other(text) => {
                self.origin == [0, 0]
                    && self.odd().and_then(|o| o.origin.as_deref()) == Some(&**text)
            }
        }
    }

    /// The origin uid as an index key.
    fn origin_key(&self) -> Option<OriginKey> {
        if self.origin == [0, 0] {
            self.odd()
                .and_then(|o| o.origin.clone())
                .map(OriginKey::Other)
        } else {
            Some(OriginKey::Uuid(self.origin))
        }
    }

    fn uid(&self) -> Option<String> {
        id_text(self.uid, self.odd().and_then(|o| o.uid.as_deref()))
    }

    fn resource_version(&self) -> String {
        match self.odd().and_then(|o| o.resource_version.as_deref()) {
            Some(v) => v.to_string(),
            None => self.resource_version.to_string(),
        }
    }

    fn content_version(&self) -> String {
        match self.odd().and_then(|o| o.content_version.as_deref()) {
            Some(v) => v.to_string(),
            None => self.content_version.to_string(),
        }
    }

    /// Take `old`'s content version (the content did not change since).
    fn keep_content_version(&mut self, old: &Entry) {
        self.content_version = old.content_version;
        let old_odd = old.odd().and_then(|o| o.content_version.clone());
        if old_odd.is_some() || self.odd.is_some() {
            let odd = self.odd.get_or_insert_default();
            odd.content_version = old_odd;
            if **odd == Odd::default() {
                self.odd = None;
            }
        }
    }

    /// The object as a `DynamicObject` of what is kept.
    fn to_object(&self, key: &ObjectKey, ar: &ApiResource) -> DynamicObject {
        let mut data = self
            .rest
            .as_deref()
            .and_then(|r| serde_json::from_str::<Value>(r).ok())
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        let mut metadata: ObjectMeta = data
            .as_object_mut()
            .and_then(|o| o.remove("metadata"))
            .and_then(|m| serde_json::from_value(m).ok())
            .unwrap_or_default();
        metadata.name = Some(key.name.clone());
        metadata.namespace = key.namespace.clone();
        metadata.uid = self.uid();
        metadata.resource_version = Some(self.resource_version());
        if self.created != NO_TIME {
            metadata.creation_timestamp = k8s_openapi::jiff::Timestamp::from_second(self.created)
                .ok()
                .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time);
        }
        if self.managed {
            metadata
                .labels
                .get_or_insert_default()
                .insert(MANAGED_LABEL.to_string(), "true".to_string());
        }
        if let Some(o) = self.origin_uid() {
            metadata
                .annotations
                .get_or_insert_default()
                .insert(ORIGIN_UID_ANNOTATION.to_string(), o);
        }
        DynamicObject {
            types: Some(TypeMeta {
                api_version: ar.api_version.clone(),
                kind: ar.kind.clone(),
            }),
            metadata,
            data,
        }
    }

    fn state(&self) -> CopyState {
        CopyState {
            resource_version: self.resource_version(),
            content_version: self.content_version(),
            managed: self.managed,
            origin_uid: self.origin_uid(),
        }
    }
}

/// What sync needs of a cached copy, without the copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyState {
    /// The copy's resourceVersion.
    pub resource_version: String,
    /// The resourceVersion at which the copy's content (everything but
    /// status and server-set metadata) was first as it is now: equal to
    /// the resourceVersion an apply of ours returned means nobody changed
    /// the content since (a member controller may have written status).
    pub content_version: String,
    /// Whether it carries [`MANAGED_LABEL`]`=true`.
    pub managed: bool,
    /// Its `federation.kubernetes.io/origin-uid`.
    pub origin_uid: Option<String>,
}

/// A hash of what a member object holds beside its status and the
/// metadata its server sets: labels, annotations and every other
/// top-level field (as the watch event brought them).
pub fn content_hash(obj: &DynamicObject) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    obj.metadata.labels.hash(&mut h);
    obj.metadata.annotations.hash(&mut h);
    if let Some(o) = obj.data.as_object() {
        for (k, v) in o {
            if k == "status" {
                continue;
            }
            k.hash(&mut h);
            let mut w = HashWriter(&mut h);
            let _ = serde_json::to_writer(&mut w, v);
        }
    }
    h.finish()
}

/// Feeds serialized bytes to a hasher.
struct HashWriter<'a>(&'a mut std::hash::DefaultHasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A copy's key in a cache: `namespace/name`, or `name` for a
/// cluster-scoped object (a name has no `/`), one allocation shared by
/// both indexes and by every member's cache of the kind ([`Keys`]).
type SlotKey = Arc<str>;

/// The keys of one informer's caches, interned: the copies of one object
/// in 100 members share one `namespace/name` allocation (issue 21 item 3).
/// A key leaves when the last cache holding it lets it go
/// ([`Keys::release`]).
#[derive(Default)]
struct Keys(Mutex<std::collections::HashSet<SlotKey>>);

impl Keys {
    /// The shared key of `slot`.
    fn intern(&self, slot: &str) -> SlotKey {
        let mut set = self.0.lock();
        if let Some(k) = set.get(slot) {
            return k.clone();
        }
        let k: SlotKey = Arc::from(slot);
        set.insert(k.clone());
        k
    }

    /// `key` was let go by a cache (which holds no other clone of it):
    /// forget it unless another cache holds it.
    fn release(&self, key: SlotKey) {
        let mut set = self.0.lock();
        // Here: the set's and `key`; no cache can clone it meanwhile (the
        // lock).
        if Arc::strong_count(&key) == 2 {
            set.remove(&key);
        }
    }
}

fn slot_key(key: &ObjectKey) -> String {
    key.to_string()
}

fn object_key(slot: &str) -> ObjectKey {
    match slot.split_once('/') {
        Some((ns, name)) => ObjectKey::new(Some(ns), name),
        None => ObjectKey::new(None, slot),
    }
}

/// An origin uid as an index key: a UUID as its number, anything else
/// as it came.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum OriginKey {
    Uuid([u64; 2]),
    Other(Box<str>),
}

impl OriginKey {
    fn of(origin_uid: &str) -> Self {
        uuid_bits(origin_uid).map_or_else(|| Self::Other(origin_uid.into()), Self::Uuid)
    }
}

/// One cached copy: its key and entry.
struct Slot {
    key: SlotKey,
    entry: Entry,
}

/// The copies of one member cluster, sized for 10,000 copies of each of 100
/// members on one host (issue 21 item 3): the slots in a vector, found by
/// key and by origin through two hash tables of slot numbers (4 bytes a
/// bucket, where maps of keys to entries spent a whole slot on every empty
/// bucket: ~250 bytes a copy at 61 % load against ~140).
#[derive(Default)]
struct Copies {
    slots: Vec<Slot>,
    /// Slot numbers by key.
    by_key: hashbrown::HashTable<u32>,
    /// Slot numbers by origin uid (the last copy seen with that origin).
    by_origin: hashbrown::HashTable<u32>,
    hasher: std::hash::RandomState,
    /// Where the keys come from (shared by the informer's caches).
    keys: Arc<Keys>,
}

impl Drop for Copies {
    fn drop(&mut self) {
        self.by_key.clear();
        self.by_origin.clear();
        for s in self.slots.drain(..) {
            self.keys.release(s.key);
        }
    }
}

impl Copies {
    /// No copies; keys interned in `keys`.
    fn new(keys: Arc<Keys>) -> Self {
        Self {
            slots: Vec::new(),
            by_key: hashbrown::HashTable::new(),
            by_origin: hashbrown::HashTable::new(),
            hasher: std::hash::RandomState::new(),
            keys,
        }
    }

    fn key_hash(&self, slot: &str) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, slot)
    }

    fn origin_hash(&self, origin: &OriginKey) -> u64 {
        std::hash::BuildHasher::hash_one(&self.hasher, origin)
    }

    /// The slot number of `slot`.
    fn find(&self, slot: &str) -> Option<usize> {
        let slots = &self.slots;
        self.by_key
            .find(self.key_hash(slot), |&i| &*slots[i as usize].key == slot)
            .map(|&i| i as usize)
    }

    /// Index slot `i` under `origin` (it takes the origin from any other
    /// slot, as the last copy seen with it).
    fn index_origin(&mut self, origin: &OriginKey, i: usize) {
        let hash = self.origin_hash(origin);
        let Self {
            slots,
            by_origin,
            hasher,
            ..
        } = self;
        match by_origin.find_mut(hash, |&j| slots[j as usize].entry.has_origin(origin)) {
            Some(j) => *j = i as u32,
            None => {
                by_origin.insert_unique(hash, i as u32, |&j| {
                    // Every indexed slot has the origin it is indexed under.
                    slots[j as usize]
                        .entry
                        .origin_key()
                        .map_or(0, |o| std::hash::BuildHasher::hash_one(&*hasher, &o))
                });
            }
        }
    }

    /// Stop indexing slot `i` under `origin` (if it is indexed there).
    fn unindex_origin(&mut self, origin: &OriginKey, i: usize) {
        let hash = self.origin_hash(origin);
        if let Ok(e) = self.by_origin.find_entry(hash, |&j| j as usize == i) {
            let _ = e.remove();
        }
    }

    /// Keep `entry` under `key`; its content version carries over from the
    /// entry it replaces when the content is the same. (Not over a relist:
    /// the versions in between were not seen, so the content may have
    /// changed and changed back.)
    fn insert(&mut self, key: &ObjectKey, mut entry: Entry) -> Option<String> {
        let origin = entry.origin_key();
        let origin_uid = entry.origin_uid();
        let slot = slot_key(key);
        let i = match self.find(&slot) {
            Some(i) => {
                let old = &self.slots[i].entry;
                if old.content_hash == entry.content_hash {
                    entry.keep_content_version(old);
                }
                if let Some(old_origin) = old.origin_key()
                    && Some(&old_origin) != origin.as_ref()
                {
                    self.unindex_origin(&old_origin, i);
                }
                self.slots[i].entry = entry;
                i
            }
            None => {
                let i = self.slots.len();
                if self.slots.len() == self.slots.capacity() {
                    // Grow by a quarter, not double: less left unused.
                    self.slots.reserve_exact((i / 4).max(16));
                }
                let shared = self.keys.intern(&slot);
                let hash = self.key_hash(&slot);
                self.slots.push(Slot { key: shared, entry });
                let Self {
                    slots,
                    by_key,
                    hasher,
                    ..
                } = self;
                by_key.insert_unique(hash, i as u32, |&j| {
                    std::hash::BuildHasher::hash_one(&*hasher, &*slots[j as usize].key)
                });
                i
            }
        };
        if let Some(o) = origin {
            self.index_origin(&o, i);
        }
        origin_uid
    }

    /// The entry of `key`.
    fn get(&self, key: &ObjectKey) -> Option<&Entry> {
        self.find(&slot_key(key)).map(|i| &self.slots[i].entry)
    }

    /// The key and entry of the copy of origin `origin_uid`.
    fn of_origin(&self, origin_uid: &str) -> Option<(ObjectKey, &Entry)> {
        let origin = OriginKey::of(origin_uid);
        let slots = &self.slots;
        let &i = self.by_origin.find(self.origin_hash(&origin), |&j| {
            slots[j as usize].entry.has_origin(&origin)
        })?;
        let s = &slots[i as usize];
        Some((object_key(&s.key), &s.entry))
    }

    /// Every copy: its key and entry.
    fn iter(&self) -> impl Iterator<Item = (&SlotKey, &Entry)> {
        self.slots.iter().map(|s| (&s.key, &s.entry))
    }

    /// Whether a copy of `slot` is kept.
    fn contains(&self, slot: &str) -> bool {
        self.find(slot).is_some()
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    fn remove(&mut self, obj: &DynamicObject) -> (ObjectKey, Option<String>) {
        let key = ObjectKey::of(obj);
        let slot = slot_key(&key);
        let Some(i) = self.find(&slot) else {
            return (key, origin_uid(obj));
        };
        let origin = self.slots[i].entry.origin_uid();
        if let Some(o) = self.slots[i].entry.origin_key() {
            self.unindex_origin(&o, i);
        }
        let hash = self.key_hash(&slot);
        if let Ok(e) = self.by_key.find_entry(hash, |&j| j as usize == i) {
            let _ = e.remove();
        }
        // The last slot moves into `i`: its index entries follow.
        let last = self.slots.len() - 1;
        if i != last {
            let hash = self.key_hash(&self.slots[last].key);
            if let Some(j) = self.by_key.find_mut(hash, |&j| j as usize == last) {
                *j = i as u32;
            }
            if let Some(o) = self.slots[last].entry.origin_key() {
                let hash = self.origin_hash(&o);
                if let Some(j) = self.by_origin.find_mut(hash, |&j| j as usize == last) {
                    *j = i as u32;
                }
            }
        }
        let removed = self.slots.swap_remove(i);
        self.keys.release(removed.key);
        (key, origin.or_else(|| origin_uid(obj)))
    }
}

fn origin_uid(obj: &DynamicObject) -> Option<String> {
    obj.annotations().get(ORIGIN_UID_ANNOTATION).cloned()
}

/// One member's watch and cache.
struct ClusterCache {
    member: Arc<Member>,
    copies: Arc<RwLock<Copies>>,
    synced: Arc<AtomicBool>,
    stop: CancellationToken,
}

/// The federated informer of one kind. Build it with
/// [`FederatedInformer::start`] (or share one through [`Informers`]).
pub struct FederatedInformer {
    kind: FederatedKind,
    selection: Selection,
    members: Arc<Members>,
    clusters: RwLock<BTreeMap<String, ClusterCache>>,
    /// The keys of every cluster's cache, shared.
    keys: Arc<Keys>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<InformerEvent>>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for FederatedInformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FederatedInformer")
            .field("kind", &self.kind.id())
            .field("clusters", &self.clusters.read().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl FederatedInformer {
    /// Start the informer of `kind` over the member set: it follows
    /// `members` until `stop` is cancelled.
    pub fn start(kind: FederatedKind, members: Arc<Members>, stop: CancellationToken) -> Arc<Self> {
        Self::start_with(kind, Selection::default(), members, stop)
    }

    /// [`FederatedInformer::start`] on the member objects `selection`
    /// names (say, objects that are not the federation's copies).
    pub fn start_with(
        kind: FederatedKind,
        selection: Selection,
        members: Arc<Members>,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let this = Arc::new(Self {
            kind,
            selection,
            members,
            clusters: RwLock::new(BTreeMap::new()),
            keys: Arc::default(),
            subscribers: Mutex::new(Vec::new()),
            stop,
        });
        tokio::spawn(this.clone().follow_members());
        this
    }

    /// The kind this informer watches.
    pub fn kind(&self) -> &FederatedKind {
        &self.kind
    }

    /// The member set it follows.
    pub fn members(&self) -> &Arc<Members> {
        &self.members
    }

    /// A new stream of [`InformerEvent`]s (from now on; what is cached
    /// already is read with the getters). Dropping the receiver
    /// unsubscribes.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<InformerEvent> {
        let (tx, rx) = mpsc::unbounded();
        self.subscribers.lock().push(tx);
        rx
    }

    /// kube-rs's `watches`: every change of a copy, through `mapper`, as
    /// the objects to reconcile (a stream for `Controller::reconcile_on`).
    /// Cluster lifecycle events are not in it (see
    /// [`FederatedInformer::cluster_triggers`]).
    pub fn watches<K, I, F>(&self, mut mapper: F) -> BoxStream<'static, ObjectRef<K>>
    where
        K: kube::Resource + 'static,
        K::DynamicType: Send,
        F: FnMut(Change) -> I + Send + 'static,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.subscribe()
            .flat_map(move |e| {
                let refs: Vec<ObjectRef<K>> = match e {
                    InformerEvent::Changed {
                        cluster,
                        key,
                        origin_uid,
                        resource_version,
                        deleted,
                    } => mapper(Change {
                        cluster,
                        key,
                        origin_uid,
                        resource_version,
                        deleted,
                    })
                    .into_iter()
                    .collect(),
                    _ => Vec::new(),
                };
                futures::stream::iter(refs)
            })
            .boxed()
    }

    /// The federated object of every copy that changes (kube-rs's
    /// `trigger_self` for copies: drift repair, status).
    pub fn copy_triggers(&self) -> BoxStream<'static, ObjectRef<DynamicObject>> {
        let ar = self.kind.resource.clone();
        self.watches(move |c| Some(c.key.to_ref(&ar)))
    }

    /// One `()` per cluster lifecycle event (added, Ready, not Ready,
    /// labels changed, removed, listed anew): every object may need a look
    /// (a stream for `Controller::reconcile_all_on`).
    pub fn cluster_triggers(&self) -> BoxStream<'static, ()> {
        self.subscribe()
            .filter_map(|e| {
                futures::future::ready(match e {
                    InformerEvent::Changed { .. } => None,
                    _ => Some(()),
                })
            })
            .boxed()
    }

    /// The copy of `key` in `cluster`, as last seen: what the cache keeps
    /// of it (see the module docs), built on each call.
    pub fn get(&self, cluster: &str, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        let clusters = self.clusters.read();
        let cache = clusters.get(cluster)?;
        let copies = cache.copies.read();
        let e = copies.get(key)?;
        Some(Arc::new(e.to_object(key, &self.kind.resource)))
    }

    /// What sync needs of the copy of `key` in `cluster` (its versions and
    /// whose it is), without building the copy.
    pub fn state(&self, cluster: &str, key: &ObjectKey) -> Option<CopyState> {
        let clusters = self.clusters.read();
        let cache = clusters.get(cluster)?;
        let copies = cache.copies.read();
        copies.get(key).map(Entry::state)
    }

    /// Every cached copy of `key`, by cluster.
    pub fn copies(&self, key: &ObjectKey) -> BTreeMap<String, Arc<DynamicObject>> {
        let ar = &self.kind.resource;
        self.clusters
            .read()
            .iter()
            .filter_map(|(name, c)| {
                c.copies
                    .read()
                    .get(key)
                    .map(|o| (name.clone(), Arc::new(o.to_object(key, ar))))
            })
            .collect()
    }

    /// Every cached copy whose origin is the federated object with uid
    /// `origin_uid`, by cluster.
    pub fn copies_of_origin(&self, origin_uid: &str) -> BTreeMap<String, Arc<DynamicObject>> {
        let ar = &self.kind.resource;
        self.clusters
            .read()
            .iter()
            .filter_map(|(name, c)| {
                let copies = c.copies.read();
                let (key, o) = copies.of_origin(origin_uid)?;
                Some((name.clone(), Arc::new(o.to_object(&key, ar))))
            })
            .collect()
    }

    /// Every cached copy in `cluster`.
    pub fn list(&self, cluster: &str) -> Vec<Arc<DynamicObject>> {
        let ar = &self.kind.resource;
        self.each(cluster, |k, o| Some(Arc::new(o.to_object(k, ar))))
    }

    /// The key and origin uid of every cached copy in `cluster` that has
    /// one, without building the copies (the orphan sweep reads only
    /// these).
    pub fn origins(&self, cluster: &str) -> Vec<(ObjectKey, String)> {
        self.each(cluster, |k, o| o.origin_uid().map(|u| (k.clone(), u)))
    }

    /// `f` of every cached entry in `cluster` that it maps to something.
    fn each<T>(&self, cluster: &str, f: impl Fn(&ObjectKey, &Entry) -> Option<T>) -> Vec<T> {
        self.clusters
            .read()
            .get(cluster)
            .map(|c| {
                c.copies
                    .read()
                    .iter()
                    .filter_map(|(k, o)| f(&object_key(k), o))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the cache of `cluster` holds a full list (`None`: the
    /// cluster is not watched).
    pub fn is_synced(&self, cluster: &str) -> Option<bool> {
        self.clusters
            .read()
            .get(cluster)
            .map(|c| c.synced.load(Ordering::Acquire))
    }

    /// The members watched now, as the informer last saw them.
    pub fn clusters(&self) -> Vec<Arc<Member>> {
        self.clusters
            .read()
            .values()
            .map(|c| c.member.clone())
            .collect()
    }

    /// How many copies are cached over all clusters (for measurements).
    pub fn len(&self) -> usize {
        self.clusters
            .read()
            .values()
            .map(|c| c.copies.read().len())
            .sum()
    }

    /// Whether no copy is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn publish(&self, event: InformerEvent) {
        self.subscribers
            .lock()
            .retain(|tx| tx.unbounded_send(event.clone()).is_ok());
    }

    async fn follow_members(self: Arc<Self>) {
        let mut changes = self.members.subscribe();
        loop {
            let members = self.members.snapshot();
            self.sync_watches(&members);
            tokio::select! {
                () = self.stop.cancelled() => break,
                r = changes.changed() => if r.is_err() { break },
            }
        }
        for (_, c) in std::mem::take(&mut *self.clusters.write()) {
            c.stop.cancel();
        }
    }

    fn sync_watches(self: &Arc<Self>, members: &[Arc<Member>]) {
        let mut events = Vec::new();
        {
            let mut clusters = self.clusters.write();
            clusters.retain(|name, cache| {
                let keep = members.iter().any(|m| &m.name == name);
                if !keep {
                    cache.stop.cancel();
                    events.push(InformerEvent::ClusterRemoved(name.clone()));
                }
                keep
            });
            for m in members {
                match clusters.get_mut(&m.name) {
                    None => {
                        events.push(InformerEvent::ClusterAdded(m.clone()));
                        if m.ready {
                            events.push(InformerEvent::ClusterReady(m.clone()));
                        }
                        clusters.insert(m.name.clone(), self.start_watch(m.clone()));
                    }
                    Some(c) => {
                        let was_ready = c.member.ready;
                        let restart = c.member.uid != m.uid
                            || c.member.server != m.server
                            || (!was_ready && m.ready);
                        if m.ready != was_ready {
                            events.push(if m.ready {
                                InformerEvent::ClusterReady(m.clone())
                            } else {
                                InformerEvent::ClusterNotReady(m.clone())
                            });
                        } else if c.member.labels != m.labels {
                            events.push(InformerEvent::ClusterChanged(m.clone()));
                        }
                        if restart {
                            c.stop.cancel();
                            *c = self.start_watch(m.clone());
                        } else {
                            c.member = m.clone();
                        }
                    }
                }
            }
        }
        for e in events {
            self.publish(e);
        }
    }

    fn start_watch(self: &Arc<Self>, member: Arc<Member>) -> ClusterCache {
        let ar = self.kind.resource.clone();
        // The watches (and their lists) go over the member's HTTP/1.1
        // client, one connection each, as client-go's informers do; the
        // requests of sync and status share `member.client` (one HTTP/2
        // connection per member when the member speaks it): see
        // `clusters::member_client`.
        let api: Api<DynamicObject> = Api::all_with(member.proxy_client.clone(), &ar);
        let wc = watcher::Config::default().labels(&self.selection.labels);
        let modify = self.selection.modify;
        let keys = self.keys.clone();
        let copies = Arc::new(RwLock::new(Copies::new(keys.clone())));
        let synced = Arc::new(AtomicBool::new(false));
        let stop = self.stop.child_token();
        let cache = ClusterCache {
            member: member.clone(),
            copies: copies.clone(),
            synced: synced.clone(),
            stop: stop.clone(),
        };
        let this = Arc::downgrade(self);
        let cluster = member.name.clone();
        let kind = self.kind.id();
        tokio::spawn(async move {
            let mut stream = watch_fn(api, wc).default_backoff().boxed();
            let mut buffer: Option<Copies> = None;
            loop {
                let event = tokio::select! {
                    () = stop.cancelled() => break,
                    e = stream.next() => e,
                };
                let Some(this) = this.upgrade() else { break };
                match event {
                    None => break,
                    Some(Ok(Event::Apply(o))) => {
                        let (key, entry) = Entry::of(o, modify);
                        let rv = entry.resource_version();
                        let origin_uid = copies.write().insert(&key, entry);
                        this.publish(InformerEvent::Changed {
                            cluster: cluster.clone(),
                            key,
                            origin_uid,
                            resource_version: Some(rv),
                            deleted: false,
                        });
                    }
                    Some(Ok(Event::Delete(o))) => {
                        let rv = o.metadata.resource_version.clone();
                        let (key, origin_uid) = copies.write().remove(&o);
                        this.publish(InformerEvent::Changed {
                            cluster: cluster.clone(),
                            key,
                            origin_uid,
                            resource_version: rv,
                            deleted: true,
                        });
                    }
                    Some(Ok(Event::Init)) => buffer = Some(Copies::new(keys.clone())),
                    Some(Ok(Event::InitApply(o))) => {
                        let (key, entry) = Entry::of(o, modify);
                        buffer
                            .get_or_insert_with(|| Copies::new(keys.clone()))
                            .insert(&key, entry);
                    }
                    Some(Ok(Event::InitDone)) => {
                        let fresh = buffer.take().unwrap_or_else(|| Copies::new(keys.clone()));
                        let old = std::mem::replace(&mut *copies.write(), fresh);
                        // Copies gone while the watch was away.
                        let gone: Vec<_> = {
                            let now = copies.read();
                            old.iter()
                                .filter(|(k, _)| !now.contains(k))
                                .map(|(k, o)| (object_key(k), o.origin_uid()))
                                .collect()
                        };
                        for (key, origin_uid) in gone {
                            this.publish(InformerEvent::Changed {
                                cluster: cluster.clone(),
                                key,
                                origin_uid,
                                resource_version: None,
                                deleted: true,
                            });
                        }
                        synced.store(true, Ordering::Release);
                        this.publish(InformerEvent::ClusterSynced(cluster.clone()));
                    }
                    Some(Err(err)) => {
                        tracing::debug!(%cluster, %kind, error = %err, "member watch failed; retrying");
                    }
                }
            }
        });
        cache
    }
}

/// What a cache of member objects that are not copies may keep: everything
/// but `managedFields`, which no controller reads and which is the largest
/// part of a small object.
pub fn lean(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
}

/// What a cache keeps of a federation's copy (the default
/// [`Selection`]): what sync, status, scheduling, rollouts, MCS and DNS
/// read. Metadata: name, namespace, uid, resourceVersion, generation,
/// creation and deletion timestamps, labels and the federation's own
/// annotations (`federation.kubernetes.io/…`); `status`; and `spec`
/// without its pod templates (`template`, `jobTemplate`: replicas, update
/// strategy, a Service's ports and an Ingress's rules stay). Data of a
/// ConfigMap or Secret, and every other top-level field, is dropped: sync
/// reads a copy whole from its member when it needs it.
pub fn lean_copy(obj: &mut DynamicObject) {
    let meta = &mut obj.metadata;
    meta.managed_fields = None;
    meta.owner_references = None;
    meta.finalizers = None;
    meta.generate_name = None;
    meta.self_link = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.retain(|k, _| k.starts_with(FEDERATION_PREFIX));
    }
    if let Some(o) = obj.data.as_object_mut() {
        o.retain(|k, _| k == "spec" || k == "status");
        if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("template");
            spec.remove("jobTemplate");
        }
    }
}

/// The prefix of the annotations the federation reads on a copy.
const FEDERATION_PREFIX: &str = "federation.kubernetes.io/";

/// The federated informers of a process, one per kind, shared by every
/// controller of that kind. An informer starts on first use.
pub struct Informers {
    members: Arc<Members>,
    stop: CancellationToken,
    by_kind: Mutex<HashMap<String, (Arc<FederatedInformer>, CancellationToken)>>,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers")
            .field("kinds", &self.by_kind.lock().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Informers {
    /// No informer yet; they follow `members` until `stop`.
    pub fn new(members: Arc<Members>, stop: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            members,
            stop,
            by_kind: Mutex::new(HashMap::new()),
        })
    }

    /// The member set the informers follow.
    pub fn members(&self) -> &Arc<Members> {
        &self.members
    }

    /// The informer of `kind` (its `apiVersion` and plural), started now
    /// if it is the first use.
    pub fn for_kind(&self, kind: &FederatedKind) -> Arc<FederatedInformer> {
        let key = informer_key(kind);
        let mut by_kind = self.by_kind.lock();
        if let Some((i, _)) = by_kind.get(&key) {
            return i.clone();
        }
        let token = self.stop.child_token();
        let informer = FederatedInformer::start(kind.clone(), self.members.clone(), token.clone());
        by_kind.insert(key, (informer.clone(), token));
        informer
    }

    /// The informer of the member objects of `kind` that `selection` names
    /// (objects that are not the federation's copies, e.g. EndpointSlices),
    /// started now if it is the first use; shared as [`Informers::for_kind`].
    pub fn for_member_objects(
        &self,
        kind: &FederatedKind,
        selection: Selection,
    ) -> Arc<FederatedInformer> {
        let key = format!("{}?{}", informer_key(kind), selection.labels);
        let mut by_kind = self.by_kind.lock();
        if let Some((i, _)) = by_kind.get(&key) {
            return i.clone();
        }
        let token = self.stop.child_token();
        let informer = FederatedInformer::start_with(
            kind.clone(),
            selection,
            self.members.clone(),
            token.clone(),
        );
        by_kind.insert(key, (informer.clone(), token));
        informer
    }

    /// The informers of the federation's copies that run now, one per
    /// federated kind (not those of [`Informers::for_member_objects`]).
    pub fn copy_informers(&self) -> Vec<Arc<FederatedInformer>> {
        self.by_kind
            .lock()
            .iter()
            .filter(|(key, _)| !key.contains('?'))
            .map(|(_, (i, _))| i.clone())
            .collect()
    }

    /// The informer of `kind` if one runs.
    pub fn get(&self, kind: &FederatedKind) -> Option<Arc<FederatedInformer>> {
        self.by_kind
            .lock()
            .get(&informer_key(kind))
            .map(|(i, _)| i.clone())
    }

    /// Stop and forget the informer of `kind` (a federated CRD went away).
    pub fn remove(&self, kind: &FederatedKind) {
        if let Some((_, token)) = self.by_kind.lock().remove(&informer_key(kind)) {
            token.cancel();
        }
    }

    /// How many copies are cached over every kind and cluster.
    pub fn cached_copies(&self) -> usize {
        self.by_kind.lock().values().map(|(i, _)| i.len()).sum()
    }
}

fn informer_key(kind: &FederatedKind) -> String {
    format!("{}/{}", kind.resource.api_version, kind.resource.plural)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn copy(ns: &str, name: &str, origin: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns,
                "annotations": {ORIGIN_UID_ANNOTATION: origin},
                "managedFields": [{"manager": "x"}]},
            "status": {"ready": true}
        }))
        .unwrap()
    }

    fn insert(c: &mut Copies, obj: DynamicObject) -> (ObjectKey, Option<String>) {
        let (key, entry) = Entry::of(obj, lean_copy);
        let origin = c.insert(&key, entry);
        (key, origin)
    }

    #[test]
    fn copies_are_indexed_by_key_and_origin() {
        let mut c = Copies::default();
        let (key, origin) = insert(&mut c, copy("app", "cfg", "u1"));
        assert_eq!(key, ObjectKey::new(Some("app"), "cfg"));
        assert_eq!(origin.as_deref(), Some("u1"));
        assert_eq!(c.of_origin("u1").map(|(k, _)| k), Some(key.clone()));
        // Re-created federated object: the copy now points at a new origin.
        insert(&mut c, copy("app", "cfg", "u2"));
        assert!(c.of_origin("u1").is_none());
        assert_eq!(c.of_origin("u2").map(|(k, _)| k), Some(key.clone()));
        let (_, origin) = c.remove(&copy("app", "cfg", "u2"));
        assert_eq!(origin.as_deref(), Some("u2"));
        assert!(c.by_key.is_empty() && c.by_origin.is_empty());
    }

    /// Removing a copy moves the last slot into its place: every other
    /// copy is still found by key and by origin, through growth and
    /// removals in any order.
    #[test]
    fn removals_keep_every_other_copy_findable() {
        let mut c = Copies::default();
        let name = |i: usize| format!("cfg-{i}");
        let uid = |i: usize| format!("00000000-0000-4000-8000-{i:012}");
        for i in 0..300 {
            insert(&mut c, copy("app", &name(i), &uid(i)));
        }
        // A non-UUID origin, kept as text, in the mix.
        insert(&mut c, copy("app", "odd", "not-a-uuid"));
        let mut left: Vec<usize> = (0..300).collect();
        for i in (0..300).step_by(3).chain((1..300).step_by(7)) {
            if let Some(p) = left.iter().position(|&x| x == i) {
                left.remove(p);
                let (_, origin) = c.remove(&copy("app", &name(i), &uid(i)));
                assert_eq!(origin, Some(uid(i)));
            }
        }
        assert_eq!(c.len(), left.len() + 1);
        for &i in &left {
            let key = ObjectKey::new(Some("app"), &name(i));
            assert!(c.get(&key).is_some(), "{i}");
            assert_eq!(c.of_origin(&uid(i)).map(|(k, _)| k), Some(key));
        }
        assert_eq!(
            c.of_origin("not-a-uuid").map(|(k, _)| k.name),
            Some("odd".to_string())
        );
        assert!(
            c.of_origin(&uid(0)).is_none()
                && c.get(&ObjectKey::new(Some("app"), &name(0))).is_none()
        );
        assert_eq!(c.by_key.len(), c.len());
        assert_eq!(c.by_origin.len(), c.len());
    }

    #[test]
    fn lean_drops_managed_fields_and_keeps_status() {
        let mut o = copy("app", "cfg", "u1");
        lean(&mut o);
        assert!(o.metadata.managed_fields.is_none());
        assert_eq!(o.data["status"]["ready"], true);
    }

    fn deployment(rv: &str, replicas: i64, ready: i64) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "app", "uid": "m1",
                "resourceVersion": rv, "generation": 2,
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {MANAGED_LABEL: "true", "app": "web"},
                "annotations": {ORIGIN_UID_ANNOTATION: "u1", "note": "big text"},
                "managedFields": [{"manager": "x"}],
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "o"}]},
            "spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate"},
                "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"readyReplicas": ready}
        }))
        .unwrap()
    }

    #[test]
    fn a_copy_is_kept_lean_and_built_back_with_what_readers_use() {
        let (key, e) = Entry::of(deployment("5", 3, 1), lean_copy);
        let kind = FederatedKind::new("apps", "v1", "Deployment", "deployments", true);
        let o = e.to_object(&key, &kind.resource);
        assert_eq!(o.metadata.name.as_deref(), Some("web"));
        assert_eq!(o.metadata.namespace.as_deref(), Some("app"));
        assert_eq!(o.metadata.uid.as_deref(), Some("m1"));
        assert_eq!(o.metadata.resource_version.as_deref(), Some("5"));
        assert_eq!(o.metadata.generation, Some(2));
        assert!(o.metadata.creation_timestamp.is_some());
        assert_eq!(o.labels().get("app").map(String::as_str), Some("web"));
        assert_eq!(
            o.annotations()
                .get(ORIGIN_UID_ANNOTATION)
                .map(String::as_str),
            Some("u1")
        );
        assert!(
            !o.annotations().contains_key("note"),
            "not the federation's"
        );
        assert!(o.metadata.managed_fields.is_none() && o.metadata.owner_references.is_none());
        assert_eq!(o.data["spec"]["replicas"], 3);
        assert_eq!(o.data["spec"]["strategy"]["type"], "RollingUpdate");
        assert!(o.data["spec"].get("template").is_none(), "no pod template");
        assert_eq!(o.data["status"]["readyReplicas"], 1);
        assert_eq!(
            o.types.as_ref().map(|t| t.kind.as_str()),
            Some("Deployment")
        );
        // A ConfigMap copy keeps no data.
        let cm: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "app", "resourceVersion": "1",
                "annotations": {ORIGIN_UID_ANNOTATION: "u1"}},
            "data": {"k": "v".repeat(1000)}
        }))
        .unwrap();
        let (_, e) = Entry::of(cm, lean_copy);
        assert!(e.rest.is_none(), "{:?}", e.rest);
    }

    #[test]
    fn a_status_only_change_keeps_the_content_version() {
        let mut c = Copies::default();
        let key = ObjectKey::new(Some("app"), "web");
        let (k, e) = Entry::of(deployment("5", 3, 0), lean_copy);
        c.insert(&k, e);
        // The member's controller writes status: content unchanged since 5.
        let (k, e) = Entry::of(deployment("6", 3, 3), lean_copy);
        c.insert(&k, e);
        let st = c.get(&key).unwrap().state();
        assert_eq!(
            (st.resource_version.as_str(), st.content_version.as_str()),
            ("6", "5")
        );
        assert!(st.managed);
        assert_eq!(st.origin_uid.as_deref(), Some("u1"));
        // Someone scales the copy: the content changed at 7.
        let (k, e) = Entry::of(deployment("7", 5, 3), lean_copy);
        c.insert(&k, e);
        assert_eq!(c.get(&key).unwrap().state().content_version, "7");
        // Pod template edits (not kept) still change the content.
        let mut d = deployment("9", 5, 4);
        d.data["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        let (k, e) = Entry::of(d, lean_copy);
        c.insert(&k, e);
        assert_eq!(c.get(&key).unwrap().state().content_version, "9");
        // So do labels; annotations too, even those not kept.
        let mut d = deployment("10", 5, 4);
        d.data["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        d.metadata
            .annotations
            .get_or_insert_default()
            .insert("note".into(), "x".into());
        let (k, e) = Entry::of(d, lean_copy);
        c.insert(&k, e);
        assert_eq!(c.get(&key).unwrap().state().content_version, "10");
    }

    #[tokio::test]
    async fn triggers_map_copies_to_their_objects_and_clusters_to_all() {
        let kind = FederatedKind::new("apps", "v1", "Deployment", "deployments", true);
        let stop = CancellationToken::new();
        let informer = FederatedInformer::start(kind.clone(), Members::new(), stop.clone());
        let mut copies = informer.copy_triggers();
        let mut clusters = informer.cluster_triggers();
        let ar = kind.resource.clone();
        let mut mapped = informer.watches(move |c: Change| {
            let twin = ObjectKey::new(c.key.namespace.as_deref(), &format!("{}-hpa", c.key.name));
            [c.key.to_ref(&ar), twin.to_ref(&ar)]
        });
        let changed = |ns: Option<&str>, name: &str| InformerEvent::Changed {
            cluster: "east".into(),
            key: ObjectKey::new(ns, name),
            origin_uid: Some("u1".into()),
            resource_version: Some("1".into()),
            deleted: false,
        };
        informer.publish(changed(Some("app"), "web"));
        informer.publish(InformerEvent::ClusterSynced("east".into()));
        informer.publish(changed(None, "global"));
        let r = copies.next().await.unwrap();
        assert_eq!(
            (r.name.as_str(), r.namespace.as_deref()),
            ("web", Some("app"))
        );
        assert_eq!(r.dyntype.kind, "Deployment");
        let r = copies.next().await.unwrap();
        assert_eq!((r.name.as_str(), r.namespace), ("global", None));
        // One `()` for the cluster event, none for the copies.
        assert_eq!(clusters.next().await, Some(()));
        let none = tokio::time::timeout(Duration::from_millis(50), clusters.next()).await;
        assert!(none.is_err(), "a copy change is not a cluster event");
        let names: Vec<String> = mapped.by_ref().take(4).map(|r| r.name).collect().await;
        assert_eq!(names, ["web", "web-hpa", "global", "global-hpa"]);
        stop.cancel();
    }

    /// Every field a reader takes from a cached copy comes back as it
    /// came, whether kept compactly (UUIDs, integer resourceVersions, the
    /// managed label) or as it came (anything else), and the indexes find
    /// it by key and by origin.
    #[test]
    fn compact_fields_come_back_as_they_came() {
        let kind = FederatedKind::new("", "v1", "ConfigMap", "configmaps", true);
        let uid = "0f8e2a1c-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
        let origin = "ffffffff-0000-4000-8000-000000000001";
        let cases = [
            // (uid, origin, resourceVersion, managed label)
            (Some(uid), Some(origin), "12345", Some("true")),
            (Some("m1"), Some("u1"), "0012", Some("false")),
            (None, None, "abc", None),
            (
                Some("0F8E2A1C-3B4D-4E5F-8A9B-0C1D2E3F4A5B"),
                Some("00000000-0000-0000-0000-000000000000"),
                "18446744073709551615",
                Some("true"),
            ),
        ];
        for (uid, origin, rv, managed) in cases {
            let mut meta = json!({"name": "c", "namespace": "app", "resourceVersion": rv,
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "web"}, "annotations": {"federation.kubernetes.io/x": "y"}});
            if let Some(u) = uid {
                meta["uid"] = json!(u);
            }
            if let Some(o) = origin {
                meta["annotations"][ORIGIN_UID_ANNOTATION] = json!(o);
            }
            if let Some(m) = managed {
                meta["labels"][MANAGED_LABEL] = json!(m);
            }
            let obj: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}
            }))
            .unwrap();
            let mut c = Copies::default();
            let (key, got_origin) = insert(&mut c, obj);
            assert_eq!(got_origin.as_deref(), origin, "{rv}");
            let e = c.get(&key).unwrap();
            let o = e.to_object(&key, &kind.resource);
            assert_eq!(o.metadata.uid.as_deref(), uid, "{rv}");
            assert_eq!(o.metadata.resource_version.as_deref(), Some(rv));
            assert_eq!(o.labels().get(MANAGED_LABEL).map(String::as_str), managed);
            assert_eq!(o.labels().get("app").map(String::as_str), Some("web"));
            assert_eq!(
                o.annotations()
                    .get(ORIGIN_UID_ANNOTATION)
                    .map(String::as_str),
                origin
            );
            assert_eq!(
                o.annotations()
                    .get("federation.kubernetes.io/x")
                    .map(String::as_str),
                Some("y")
            );
            assert_eq!(
                o.metadata.creation_timestamp.map(|t| t.0.to_string()),
                Some("2026-01-01T00:00:00Z".to_string())
            );
            let st = e.state();
            assert_eq!(
                (st.resource_version.as_str(), st.content_version.as_str()),
                (rv, rv)
            );
            assert_eq!(st.managed, managed == Some("true"));
            assert_eq!(st.origin_uid.as_deref(), origin);
            if let Some(o) = origin {
                assert_eq!(c.of_origin(o).map(|(k, _)| k), Some(key.clone()));
            }
            let (_, removed) = c.remove(&e.to_object(&key, &kind.resource));
            assert_eq!(removed.as_deref(), origin);
            assert!(c.slots.is_empty() && c.by_key.is_empty() && c.by_origin.is_empty());
        }
        // A UUID is kept as its number, the creationTimestamp as its
        // second, with no text beside them.
        let (_, e) = Entry::of(
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "uid": uid, "resourceVersion": "7",
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                    "annotations": {ORIGIN_UID_ANNOTATION: origin}}}))
            .unwrap(),
            lean_copy,
        );
        assert!(e.odd.is_none() && e.rest.is_none(), "{e:?}");
    }

    /// The copies of one object in several members' caches share one key
    /// allocation; the key is forgotten when the last cache lets it go
    /// (a removed copy, a cache replaced by a relist or dropped).
    #[test]
    fn members_share_a_key_until_the_last_lets_it_go() {
        let keys = Arc::new(Keys::default());
        let interned = || keys.0.lock().len();
        let mut east = Copies::new(keys.clone());
        let mut west = Copies::new(keys.clone());
        insert(&mut east, copy("app", "cfg", "u1"));
        insert(&mut west, copy("app", "cfg", "u1"));
        insert(&mut west, copy("app", "other", "u2"));
        let e = &east.slots[east.find("app/cfg").unwrap()].key;
        let w = &west.slots[west.find("app/cfg").unwrap()].key;
        assert!(Arc::ptr_eq(e, w), "one allocation for both members");
        assert_eq!(interned(), 2);
        east.remove(&copy("app", "cfg", "u1"));
        assert_eq!(interned(), 2, "west still holds app/cfg");
        west.remove(&copy("app", "cfg", "u1"));
        assert_eq!(interned(), 1);
        // A cache dropped (a relist's replacement, a member gone).
        drop(west);
        assert_eq!(interned(), 0);
        drop(east);
    }

    #[test]
    fn keys_print_as_kubectl_does() {
        assert_eq!(ObjectKey::new(Some("app"), "cfg").to_string(), "app/cfg");
        assert_eq!(ObjectKey::new(Some(""), "ns1").to_string(), "ns1");
    }
}
