//! The controllers this server runs for itself, since there is no
//! kube-controller-manager beside it:
//!
//! - the **garbage collector** over `ownerReferences` (Background deletion of
//!   dependents whose owners are gone, Foreground via the `foregroundDeletion`
//!   finalizer, Orphan via the `orphan` finalizer);
//! - the **namespace lifecycle** controller (a terminating namespace has its
//!   contents deleted, then its `kubernetes` finalizer removed, then goes);
//! - the **service-account** controller (every active namespace gets a
//!   `default` ServiceAccount);
//! - the **root-CA publisher** ([`RootCaPublisher`], kube-controller-manager's
//!   `root-ca-cert-publisher`): every namespace holds the `kube-root-ca.crt`
//!   ConfigMap with the CA that verifies this server, recreated when deleted
//!   and put back when edited;
//! - [`bootstrap`]: the namespaces and the `default/kubernetes` Service every
//!   cluster has.
//!
//! They act on the [`Registry`] directly rather than through HTTP: they are
//! part of the API server's own housekeeping (kube-apiserver also runs its
//! bootstrap controllers in-process). The federation controllers, which are
//! API clients, use an in-process `kube::Client` instead.

pub mod cronjob;
pub mod deployment;
pub mod replicaset;
pub mod standalone;
// kube-controller-manager's endpoints, endpointslice, endpointslice-mirroring
// and disruption controllers over the federation's own API.
pub mod disruption;
pub mod endpoints;
pub mod endpointslice;
pub mod mirroring;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use crate::registry::Registry;
use crate::store::{DeleteOptions, ReadAt, Store, WriteOptions, finalizers};

/// Where an object lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjRef {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjRef {
    fn of(store: &Store, obj: &Value) -> Option<Self> {
        let info = store.info();
        Some(Self {
            group: info.group.clone(),
            version: info.version.clone(),
            resource: info.resource.clone(),
            namespace: obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            name: obj.pointer("/metadata/name")?.as_str()?.to_string(),
        })
    }

    fn store(&self, registry: &Registry) -> Option<Arc<Store>> {
        registry.get(&self.group, &self.version, &self.resource)
    }
}

fn uid(obj: &Value) -> Option<String> {
    obj.pointer("/metadata/uid")?.as_str().map(str::to_string)
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Follow every change of `store` from its current state: `handle` gets each
/// object (initially as `Added`), forever; the watch is re-established after
/// errors (e.g. a 410 after falling behind) with a fresh list.
pub(crate) fn follow<H>(stop: CancellationToken, store: Arc<Store>, handle: H)
where
    H: Fn(&Arc<Store>, EventType, Value) + Send + Sync + 'static,
{
    follow_listed(stop, store, handle, |_| {});
}

/// [`follow`], and `listed` after each (re)list has been handed to `handle`:
/// what changed before the list, a delete above all, has no event of its
/// own, so a controller counting objects counts again then.
pub(crate) fn follow_listed<H, L>(stop: CancellationToken, store: Arc<Store>, handle: H, listed: L)
where
    H: Fn(&Arc<Store>, EventType, Value) + Send + Sync + 'static,
    L: Fn(&Arc<Store>) + Send + Sync + 'static,
{
    follow_decoded(stop, store, false, decode_full, handle, listed);
}

/// [`follow`] for a controller that reads only the objects' metadata: what
/// `handle` gets is `apiVersion`, `kind` and `metadata` without
/// `managedFields` (see [`decode_head`]). A follower of every store (the
/// garbage collector) or of a busy one then does not parse each write's
/// data, spec and status again; and a live event's head comes from the
/// watch cache's own decode of it ([`CacheEvent::head`]), shared by all
/// these followers, rather than from a parse per follower.
///
/// [`CacheEvent::head`]: ubernetes_storage::cache::CacheEvent::head
pub(crate) fn follow_meta<H>(stop: CancellationToken, store: Arc<Store>, handle: H)
where
    H: Fn(&Arc<Store>, EventType, Arc<Value>) + Send + Sync + 'static,
{
    follow_decoded(stop, store, true, decode_head_shared, handle, |_| {});
}

/// [`follow_listed`] with [`follow_meta`]'s partial objects.
pub(crate) fn follow_listed_meta<H, L>(
    stop: CancellationToken,
    store: Arc<Store>,
    handle: H,
    listed: L,
) where
    H: Fn(&Arc<Store>, EventType, Arc<Value>) + Send + Sync + 'static,
    L: Fn(&Arc<Store>) + Send + Sync + 'static,
{
    follow_decoded(stop, store, true, decode_head_shared, handle, listed);
}

fn decode_full(bytes: &[u8], _: Option<&Arc<Value>>) -> Option<Value> {
    serde_json::from_slice(bytes).ok()
}

/// The head the watch cache decoded, or [`decode_head`] of `bytes`.
fn decode_head_shared(bytes: &[u8], head: Option<&Arc<Value>>) -> Option<Arc<Value>> {
    match head {
        Some(h) => Some(h.clone()),
        None => decode_head(bytes).map(Arc::new),
    }
}

/// An object's `apiVersion`, `kind` and `metadata` (less `managedFields`)
/// as a JSON object; every other member is skipped by the parser without
/// being built.
fn decode_head(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Head>(bytes).ok().map(|h| h.0)
}

/// [`decode_head`]'s result.
struct Head(Value);

impl<'de> serde::Deserialize<'de> for Head {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(HeadVisitor { top: true }).map(Head)
    }
}

/// Visits the object (`top`) keeping `apiVersion`, `kind` and `metadata`,
/// then `metadata` keeping all but `managedFields`.
struct HeadVisitor {
    top: bool,
}

/// `metadata` as [`HeadVisitor`] keeps it.
struct MetaSeed;

impl<'de> serde::de::DeserializeSeed<'de> for MetaSeed {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(HeadVisitor { top: false })
    }
}

impl<'de> serde::de::Visitor<'de> for HeadVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match (self.top, key.as_str()) {
                (true, "apiVersion" | "kind") | (false, _) if key != "managedFields" => {
                    let v = map.next_value::<Value>()?;
                    out.insert(key, v);
                }
                (true, "metadata") => {
                    let v = map.next_value_seed(MetaSeed)?;
                    out.insert(key, v);
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Follow `store`, handing `handle` each object as `decode` makes it from
/// its JSON and, with `heads`, the head the watch cache decoded.
fn follow_decoded<T, H, L>(
    stop: CancellationToken,
    store: Arc<Store>,
    heads: bool,
    decode: fn(&[u8], Option<&Arc<Value>>) -> Option<T>,
    handle: H,
    listed: L,
) where
    T: Send + 'static,
    H: Fn(&Arc<Store>, EventType, T) + Send + Sync + 'static,
    L: Fn(&Arc<Store>) + Send + Sync + 'static,
{
    spawn_until(stop, async move {
        loop {
            let list = match store.list(None, None, 0, None, ReadAt::Latest).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(resource = %store.info().resource, error = %e, "controller list failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            for item in &list.items {
                if let Some(v) = decode(item, None) {
                    handle(&store, EventType::Added, v);
                }
            }
            listed(&store);
            let watch = if heads {
                store.watch_heads(None, list.resource_version, None).await
            } else {
                store.watch(None, list.resource_version, None).await
            };
            let mut rx = match watch {
                Ok(rx) => rx,
                Err(e) => {
                    tracing::warn!(resource = %store.info().resource, error = %e, "controller watch failed; relisting");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            while let Some(ev) = rx.recv().await {
                match ev {
                    Ok(ev) => {
                        if let Some(v) = decode(&ev.object.json, ev.head.as_ref()) {
                            handle(&store, ev.kind, v);
                        }
                    }
                    Err(e) => {
                        tracing::debug!(resource = %store.info().resource, error = %e, "controller watch ended; relisting");
                        break;
                    }
                }
            }
        }
    });
}

/// Run `work` until it ends or the server stops.
pub(crate) fn spawn_until(
    stop: CancellationToken,
    work: impl std::future::Future<Output = ()> + Send + 'static,
) {
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = work => {}
        }
    });
}

/// A deduplicating work queue with delayed retries.
pub(crate) struct Queue<T> {
    items: Mutex<(VecDeque<T>, HashSet<T>)>,
    notify: Notify,
}

impl<T: Clone + Eq + std::hash::Hash + Send + 'static> Queue<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            items: Mutex::new((VecDeque::new(), HashSet::new())),
            notify: Notify::new(),
        })
    }

    pub(crate) fn add(&self, item: T) {
        let mut g = self.items.lock();
        if g.1.insert(item.clone()) {
            g.0.push_back(item);
            drop(g);
            self.notify.notify_one();
        }
    }

    pub(crate) fn add_after(self: &Arc<Self>, item: T, delay: Duration) {
        let q = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            q.add(item);
        });
    }

    pub(crate) async fn next(&self) -> T {
        loop {
            {
                let mut g = self.items.lock();
                if let Some(item) = g.0.pop_front() {
                    g.1.remove(&item);
                    return item;
                }
            }
            self.notify.notified().await;
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum GcWork {
    /// Check whether a dependent's owners still exist.
    Dependent(ObjRef),
    /// An owner is being deleted with the orphan or foregroundDeletion finalizer.
    Owner(ObjRef, String),
}

#[derive(Default)]
struct GcIndex {
    /// owner uid → dependents.
    dependents: HashMap<String, HashSet<ObjRef>>,
    /// object → its owners' uids (to update the index on change).
    owners: HashMap<ObjRef, Vec<String>>,
    /// uid → object, for objects being deleted: a dependent that goes away
    /// re-queues its owners found here (those waiting in foreground
    /// deletion). Not kept for every object: that cost ~400 bytes per stored
    /// object for nothing (docs/benchmarks.md).
    by_uid: HashMap<String, ObjRef>,
}

/// The garbage collector.
pub struct GarbageCollector {
    registry: Arc<Registry>,
    /// Ends its work: the server's stop, or the end of a leadership term.
    stop: CancellationToken,
    index: Mutex<GcIndex>,
    queue: Arc<Queue<GcWork>>,
}

impl GarbageCollector {
    /// Start following every store and processing work.
    pub fn start(registry: Arc<Registry>) -> Arc<Self> {
        let stop = registry.stop_token();
        Self::start_until(registry, stop)
    }

    /// [`GarbageCollector::start`], working until `stop` (a leadership term).
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) -> Arc<Self> {
        let gc = Arc::new(Self {
            stop: stop.clone(),
            registry: registry.clone(),
            index: Mutex::new(GcIndex::default()),
            queue: Queue::new(),
        });
        for store in registry.stores() {
            gc.follow_store(store);
        }
        let worker = gc.clone();
        spawn_until(stop, async move {
            loop {
                let work = worker.queue.next().await;
                if let Err(e) = worker.process(&work).await {
                    tracing::debug!(?work, error = %e, "garbage collection step failed; retrying");
                    worker.queue.add_after(work, Duration::from_millis(500));
                }
            }
        });
        gc
    }

    /// Also follow a store added later (CRDs).
    pub fn follow_store(self: &Arc<Self>, store: Arc<Store>) {
        let gc = self.clone();
        // Owners, uid, finalizers and deletionTimestamp: metadata only.
        follow_meta(self.stop.clone(), store, move |store, kind, obj| {
            gc.observe(store, kind, &obj)
        });
    }

    fn observe(&self, store: &Store, kind: EventType, obj: &Value) {
        let Some(r) = ObjRef::of(store, obj) else {
            return;
        };
        let my_uid = uid(obj).unwrap_or_default();
        let new_owners = if kind == EventType::Deleted {
            Vec::new()
        } else {
            owner_uids(obj)
        };
        let mut to_check_owners = Vec::new();
        let mut dependents_of_deleted = Vec::new();
        {
            let mut idx = self.index.lock();
            let old = idx.owners.remove(&r).unwrap_or_default();
            for o in &old {
                if let Some(set) = idx.dependents.get_mut(o) {
                    set.remove(&r);
                    if set.is_empty() {
                        idx.dependents.remove(o);
                    }
                }
            }
            let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
            if kind == EventType::Deleted || !deleting {
                idx.by_uid.remove(&my_uid);
            } else if !my_uid.is_empty() {
                idx.by_uid.insert(my_uid.clone(), r.clone());
            }
            if kind == EventType::Deleted {
                // Owners waiting in foreground deletion may now finish.
                to_check_owners.extend(old);
                if let Some(deps) = idx.dependents.get(&my_uid) {
                    dependents_of_deleted.extend(deps.iter().cloned());
                }
            } else if !new_owners.is_empty() {
                for o in &new_owners {
                    idx.dependents
                        .entry(o.clone())
                        .or_default()
                        .insert(r.clone());
                }
                idx.owners.insert(r.clone(), new_owners.clone());
            }
        }
        if kind == EventType::Added && !new_owners.is_empty() {
            self.queue.add(GcWork::Dependent(r.clone()));
        }
        for d in dependents_of_deleted {
            self.queue.add(GcWork::Dependent(d));
        }
        if kind != EventType::Deleted && obj.pointer("/metadata/deletionTimestamp").is_some() {
            let f = finalizers(obj);
            if f.iter().any(|f| f == "orphan" || f == "foregroundDeletion") {
                self.queue.add(GcWork::Owner(r.clone(), my_uid.clone()));
            }
        }
        // A dependent that went away: its foreground-deleting owners re-check.
        if kind == EventType::Deleted && !to_check_owners.is_empty() {
            for owner_uid in to_check_owners {
                if let Some(owner) = self.find_by_uid(&owner_uid) {
                    self.queue.add(GcWork::Owner(owner, owner_uid));
                }
            }
        }
    }

    /// Find an object by uid.
    fn find_by_uid(&self, owner_uid: &str) -> Option<ObjRef> {
        self.index.lock().by_uid.get(owner_uid).cloned()
    }

    async fn owner_exists(&self, dependent: &ObjRef, owner_ref: &Value) -> Result<bool, ApiError> {
        let api_version = owner_ref
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = owner_ref
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = owner_ref
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let want_uid = owner_ref
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let Some(store) = self.registry.by_kind(group, kind) else {
            // Not served (yet): a custom resource whose CRD is still being
            // set up (at start, the GC runs before the CRDs are served) or
            // a reference to an invalid group/version. kube's GC cannot
            // tell these apart either and retries (its restMappingError):
            // an owner that cannot be looked up is never taken for gone.
            return Err(ApiError::internal(format!(
                "the owner {kind} {name} ({api_version}) is of a kind not served (yet); retrying"
            )));
        };
        let ns = if store.info().namespaced {
            dependent.namespace.as_deref()
        } else {
            None
        };
        match store.get_value(ns, name).await {
            Ok(owner) => Ok(uid(&owner).as_deref() == Some(want_uid)),
            Err(e) if e.code == 404 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether one of `obj`'s dependents is itself deleting dependents of
    /// its own (deletionTimestamp and the `foregroundDeletion` finalizer):
    /// kube's sign of a possible ownership circle.
    async fn has_waiting_dependent(&self, obj: &Value) -> Result<bool, ApiError> {
        let Some(my_uid) = uid(obj) else {
            return Ok(false);
        };
        let dependents: Vec<ObjRef> = self
            .index
            .lock()
            .dependents
            .get(&my_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for d in &dependents {
            let Some(dstore) = d.store(&self.registry) else {
                continue;
            };
            match dstore.get_value(d.namespace.as_deref(), &d.name).await {
                Ok(o) => {
                    // Waiting, and for dependents of its own: one without
                    // any (a leaf whose foregroundDeletion finalizer is
                    // about to be dropped) cannot be part of a circle.
                    if o.pointer("/metadata/deletionTimestamp").is_some()
                        && finalizers(&o).iter().any(|f| f == "foregroundDeletion")
                        && uid(&o).is_some_and(|u| {
                            self.index
                                .lock()
                                .dependents
                                .get(&u)
                                .is_some_and(|s| !s.is_empty())
                        })
                    {
                        return Ok(true);
                    }
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }

    async fn process(&self, work: &GcWork) -> Result<(), ApiError> {
        match work {
            GcWork::Dependent(r) => self.process_dependent(r).await,
            GcWork::Owner(r, owner_uid) => self.process_owner(r, owner_uid).await,
        }
    }

    async fn process_dependent(&self, r: &ObjRef) -> Result<(), ApiError> {
        let Some(store) = r.store(&self.registry) else {
            return Ok(());
        };
        let obj = match store.get_value(r.namespace.as_deref(), &r.name).await {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        let refs: Vec<Value> = obj
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if refs.is_empty() {
            return Ok(());
        }
        let mut dangling = Vec::new();
        for owner in &refs {
            if !self.owner_exists(r, owner).await?
                && let Some(u) = owner.get("uid").and_then(Value::as_str)
            {
                dangling.push(u.to_string());
            }
        }
        if dangling.is_empty() {
            return Ok(());
        }
        if dangling.len() == refs.len() {
            if obj.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(());
            }
            tracing::info!(resource = %r.resource, namespace = ?r.namespace, name = %r.name, "garbage collecting: every owner is gone");
            let opts = DeleteOptions {
                propagation_policy: Some("Background".into()),
                precondition_uid: uid(&obj),
                ..Default::default()
            };
            return match store.delete(r.namespace.as_deref(), &r.name, &opts).await {
                Ok(_) => Ok(()),
                Err(e) if e.code == 404 || e.code == 409 => Ok(()),
                Err(e) => Err(e),
            };
        }
        // Some owners remain: drop the references to the ones that are gone.
        store
            .system_update(r.namespace.as_deref(), &r.name, |mut cur| {
                if let Some(list) = cur
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    list.retain(|o| {
                        o.get("uid")
                            .and_then(Value::as_str)
                            .is_none_or(|u| !dangling.iter().any(|d| d == u))
                    });
                }
                Ok(Some(cur))
            })
            .await
            .map(|_| ())
    }

    async fn process_owner(&self, r: &ObjRef, owner_uid: &str) -> Result<(), ApiError> {
        let Some(store) = r.store(&self.registry) else {
            return Ok(());
        };
        let obj = match store.get_value(r.namespace.as_deref(), &r.name).await {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        if uid(&obj).as_deref() != Some(owner_uid)
            || obj.pointer("/metadata/deletionTimestamp").is_none()
        {
            return Ok(());
        }
        let fins = finalizers(&obj);
        let dependents: Vec<ObjRef> = self
            .index
            .lock()
            .dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        if fins.iter().any(|f| f == "orphan") {
            for d in &dependents {
                let Some(dstore) = d.store(&self.registry) else {
                    continue;
                };
                let res = dstore
                    .system_update(d.namespace.as_deref(), &d.name, |mut cur| {
                        let Some(list) = cur
                            .pointer_mut("/metadata/ownerReferences")
                            .and_then(Value::as_array_mut)
                        else {
                            return Ok(None);
                        };
                        let before = list.len();
                        list.retain(|o| o.get("uid").and_then(Value::as_str) != Some(owner_uid));
                        if list.len() == before {
                            return Ok(None);
                        }
                        if list.is_empty()
                            && let Some(m) = cur.get_mut("metadata").and_then(Value::as_object_mut)
                        {
                            m.remove("ownerReferences");
                        }
                        Ok(Some(cur))
                    })
                    .await;
                match res {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            tracing::info!(resource = %r.resource, name = %r.name, dependents = dependents.len(), "orphaned dependents");
            // A federated object's member copies follow through its
            // PropagationRecord, an ordinary dependent: orphaned here (its
            // ownerReference dropped), the federation lets the copies go.
            return remove_finalizer(&store, r, "orphan").await;
        }
        if fins.iter().any(|f| f == "foregroundDeletion") {
            // kube's foreground deletion: every dependent is deleted, and the
            // owner waits for those whose reference to it blocks
            // (`blockOwnerDeletion`). A dependent itself waiting for its own
            // dependents, one of which waits too, may be waiting through a
            // cycle for this owner: its reference is made non-blocking
            // (kube's circle detection and unblockOwnerReferences), so a
            // circle of owners drains. A dependent that only waits for
            // dependents that are not waiting (say, a finalizer-held one)
            // keeps blocking, as in kube.
            let mut blocking = 0usize;
            for d in &dependents {
                let Some(dstore) = d.store(&self.registry) else {
                    continue;
                };
                let dobj = match dstore.get_value(d.namespace.as_deref(), &d.name).await {
                    Ok(o) => o,
                    Err(e) if e.code == 404 => continue,
                    Err(e) => return Err(e),
                };
                let mut blocks = blocks_owner(&dobj, owner_uid);
                let waiting = dobj.pointer("/metadata/deletionTimestamp").is_some()
                    && finalizers(&dobj).iter().any(|f| f == "foregroundDeletion");
                if waiting {
                    if blocks && self.has_waiting_dependent(&dobj).await? {
                        unblock_owner(&dstore, d, owner_uid).await?;
                        blocks = false;
                    }
                } else {
                    let opts = DeleteOptions {
                        propagation_policy: Some("Foreground".into()),
                        ..Default::default()
                    };
                    match dstore.delete(d.namespace.as_deref(), &d.name, &opts).await {
                        Ok(_) => {}
                        Err(e) if e.code == 404 => continue,
                        Err(e) => return Err(e),
                    }
                }
                if blocks {
                    blocking += 1;
                }
            }
            if blocking == 0 {
                tracing::info!(resource = %r.resource, name = %r.name, "foreground deletion: no dependent blocks it any more");
                return remove_finalizer(&store, r, "foregroundDeletion").await;
            }
            // Dependents' DELETED events re-queue this owner; also poll.
            self.queue.add_after(
                GcWork::Owner(r.clone(), owner_uid.to_string()),
                Duration::from_secs(2),
            );
        }
        Ok(())
    }
}

/// Whether `obj`'s reference to the owner `owner_uid` blocks the owner's
/// foreground deletion.
fn blocks_owner(obj: &Value, owner_uid: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|o| {
                o.get("uid").and_then(Value::as_str) == Some(owner_uid)
                    && o.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            })
        })
}

/// Make the dependent's reference to `owner_uid` non-blocking.
async fn unblock_owner(store: &Store, d: &ObjRef, owner_uid: &str) -> Result<(), ApiError> {
    let res = store
        .system_update(d.namespace.as_deref(), &d.name, |mut cur| {
            let Some(refs) = cur
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)
            else {
                return Ok(None);
            };
            let mut changed = false;
            for o in refs.iter_mut() {
                if o.get("uid").and_then(Value::as_str) == Some(owner_uid)
                    && o.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
                {
                    o["blockOwnerDeletion"] = json!(false);
                    changed = true;
                }
            }
            Ok(changed.then_some(cur))
        })
        .await;
    match res {
        Ok(_) => {
            tracing::info!(resource = %d.resource, name = %d.name, "unblocked its owner reference to break a foreground-deletion cycle");
            Ok(())
        }
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn remove_finalizer(store: &Store, r: &ObjRef, finalizer: &str) -> Result<(), ApiError> {
    let res = store
        .system_update(r.namespace.as_deref(), &r.name, |mut cur| {
            let mut f = finalizers(&cur);
            let before = f.len();
            f.retain(|x| x != finalizer);
            if f.len() == before {
                return Ok(None);
            }
            if let Some(m) = cur.get_mut("metadata").and_then(Value::as_object_mut) {
                if f.is_empty() {
                    m.remove("finalizers");
                } else {
                    m.insert("finalizers".into(), json!(f));
                }
            }
            Ok(Some(cur))
        })
        .await;
    match res {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The namespace lifecycle and default-ServiceAccount controllers.
pub struct NamespaceController {
    registry: Arc<Registry>,
    queue: Arc<Queue<String>>,
}

impl NamespaceController {
    pub fn start(registry: Arc<Registry>) -> Option<Arc<Self>> {
        let stop = registry.stop_token();
        Self::start_until(registry, stop)
    }

    /// [`NamespaceController::start`], working until `stop`.
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) -> Option<Arc<Self>> {
        let namespaces = registry.namespaces()?;
        let c = Arc::new(Self {
            registry,
            queue: Queue::new(),
        });
        let observer = c.clone();
        follow(stop.clone(), namespaces, move |_, kind, obj| {
            if kind == EventType::Deleted {
                return;
            }
            if let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str) {
                observer.queue.add(name.to_string());
            }
        });
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let ns = worker.queue.next().await;
                match worker.sync(&ns).await {
                    Ok(true) => {}
                    Ok(false) => worker.queue.add_after(ns, Duration::from_millis(300)),
                    Err(e) => {
                        tracing::debug!(namespace = %ns, error = %e, "namespace sync failed; retrying");
                        worker.queue.add_after(ns, Duration::from_secs(1));
                    }
                }
            }
        });
        Some(c)
    }

    /// Returns Ok(true) when done with this namespace for now.
    async fn sync(&self, ns: &str) -> Result<bool, ApiError> {
        let Some(namespaces) = self.registry.namespaces() else {
            return Ok(true);
        };
        let obj = match namespaces.get_value(None, ns).await {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Ok(true),
            Err(e) => return Err(e),
        };
        if obj.pointer("/metadata/deletionTimestamp").is_none() {
            self.ensure_default_service_account(ns).await?;
            return Ok(true);
        }
        // Terminating: delete everything in it.
        let mut remaining = 0usize;
        for store in self.registry.stores() {
            if !store.info().namespaced {
                continue;
            }
            let list = store.list(Some(ns), None, 0, None, ReadAt::Latest).await?;
            for item in list.items {
                remaining += 1;
                let Ok(v) = serde_json::from_slice::<Value>(&item) else {
                    continue;
                };
                if v.pointer("/metadata/deletionTimestamp").is_some() {
                    continue;
                }
                let Some(name) = v.pointer("/metadata/name").and_then(Value::as_str) else {
                    continue;
                };
                let opts = DeleteOptions {
                    propagation_policy: Some("Background".into()),
                    ..Default::default()
                };
                match store.delete(Some(ns), name, &opts).await {
                    Ok(_) => {}
                    Err(e) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if remaining > 0 {
            return Ok(false);
        }
        tracing::info!(namespace = %ns, "namespace is empty; removing its kubernetes finalizer");
        let res = namespaces
            .system_update(None, ns, |mut cur| {
                let Some(list) = cur
                    .pointer_mut("/spec/finalizers")
                    .and_then(Value::as_array_mut)
                else {
                    return Ok(None);
                };
                let before = list.len();
                list.retain(|f| f.as_str() != Some("kubernetes"));
                if list.len() == before {
                    return Ok(None);
                }
                Ok(Some(cur))
            })
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if e.code == 404 => Ok(true),
            Err(e) => Err(e),
        }
    }

    async fn ensure_default_service_account(&self, ns: &str) -> Result<(), ApiError> {
        let Some(sas) = self.registry.get("", "v1", "serviceaccounts") else {
            return Ok(());
        };
        match sas.get(Some(ns), "default").await {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
        let namespaces = self.registry.namespaces();
        match sas
            .create(
                namespaces.as_deref(),
                Some(ns),
                sa,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            // 409: raced with another writer; 403: the namespace started terminating.
            Err(e) if e.code == 409 || e.code == 403 || e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// The ConfigMap every namespace gets (kube's `RootCACertConfigMapName`).
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
/// The annotation describing it, and its text, as kube-controller-manager
/// writes them.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
pub const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
/// Who the publisher's writes are attributed to in `managedFields`.
const ROOT_CA_FIELD_MANAGER: &str = "kube-controller-manager";

/// kube-controller-manager's root-CA publisher
/// (`pkg/controller/certificates/rootcacertpublisher`): every namespace gets
/// the `kube-root-ca.crt` ConfigMap whose `ca.crt` is the CA bundle that
/// verifies this server's serving certificate (what kube's controller gets
/// from `--root-ca-file`, here the same CA written into the admin kubeconfig
/// and service-account token Secrets). A namespace is synced when it is added
/// or updated while Active, and when its ConfigMap is changed or deleted: a
/// missing ConfigMap is created, one whose `data` differs or whose
/// description annotation is missing is put back (other keys of `data` are
/// dropped; other annotations and labels are kept), as kube's controller does.
pub struct RootCaPublisher {
    registry: Arc<Registry>,
    root_ca: String,
    queue: Arc<Queue<String>>,
}

impl RootCaPublisher {
    /// Start following namespaces and ConfigMaps; `None` when the registry
    /// serves neither.
    pub fn start(registry: Arc<Registry>, root_ca: String) -> Option<Arc<Self>> {
        let stop = registry.stop_token();
        Self::start_until(registry, root_ca, stop)
    }

    /// [`RootCaPublisher::start`], working until `stop`.
    pub fn start_until(
        registry: Arc<Registry>,
        root_ca: String,
        stop: CancellationToken,
    ) -> Option<Arc<Self>> {
        let namespaces = registry.namespaces()?;
        let configmaps = registry.get("", "v1", "configmaps")?;
        let c = Arc::new(Self {
            registry,
            root_ca,
            queue: Queue::new(),
        });
        let observer = c.clone();
        follow(stop.clone(), namespaces, move |_, kind, obj| {
            let active = obj.pointer("/status/phase").and_then(Value::as_str) == Some("Active");
            // kube: every add; an update only while the namespace is Active.
            if kind == EventType::Deleted || (kind == EventType::Modified && !active) {
                return;
            }
            if let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str) {
                observer.queue.add(name.to_string());
            }
        });
        let observer = c.clone();
        // Every ConfigMap write passes here: its name and namespace only.
        follow_meta(stop.clone(), configmaps, move |_, kind, obj| {
            // The initial list's ConfigMaps are covered by the namespaces'
            // initial adds; changes and deletions re-sync their namespace.
            if kind == EventType::Added
                || obj.pointer("/metadata/name").and_then(Value::as_str) != Some(ROOT_CA_CONFIGMAP)
            {
                return;
            }
            if let Some(ns) = obj.pointer("/metadata/namespace").and_then(Value::as_str) {
                observer.queue.add(ns.to_string());
            }
        });
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let ns = worker.queue.next().await;
                if let Err(e) = worker.sync(&ns).await {
                    tracing::debug!(namespace = %ns, error = %e, "publishing kube-root-ca.crt failed; retrying");
                    worker.queue.add_after(ns, Duration::from_secs(1));
                }
            }
        });
        Some(c)
    }

    fn wanted_data(&self) -> Value {
        json!({ "ca.crt": self.root_ca })
    }

    async fn sync(&self, ns: &str) -> Result<(), ApiError> {
        let Some(configmaps) = self.registry.get("", "v1", "configmaps") else {
            return Ok(());
        };
        let opts = WriteOptions {
            field_manager: Some(ROOT_CA_FIELD_MANAGER.into()),
            ..Default::default()
        };
        let current = match configmaps.get_value(Some(ns), ROOT_CA_CONFIGMAP).await {
            Ok(cm) => cm,
            Err(e) if e.code == 404 => {
                let cm = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {
                        "name": ROOT_CA_CONFIGMAP, "namespace": ns,
                        "annotations": {DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION},
                    },
                    "data": self.wanted_data(),
                });
                let namespaces = self.registry.namespaces();
                return match configmaps
                    .create(namespaces.as_deref(), Some(ns), cm, &opts)
                    .await
                {
                    Ok(_) => Ok(()),
                    // kube: no retry when the namespace is gone or
                    // terminating; 409 is a racing create (its event re-syncs).
                    Err(e) if matches!(e.code, 404 | 403 | 409) => Ok(()),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        if self.up_to_date(&current) {
            return Ok(());
        }
        let data = self.wanted_data();
        let res = configmaps
            .patch(Some(ns), ROOT_CA_CONFIGMAP, None, &opts, |cur| {
                let mut cm = cur.clone();
                cm["data"] = data.clone();
                if let Some(meta) = cm.get_mut("metadata").and_then(Value::as_object_mut) {
                    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                    if !annotations.is_object() {
                        *annotations = json!({});
                    }
                    annotations[DESCRIPTION_ANNOTATION] = json!(ROOT_CA_DESCRIPTION);
                }
                Ok(cm)
            })
            .await;
        match res {
            Ok(_) => {
                tracing::info!(namespace = %ns, "put kube-root-ca.crt back to the server's CA");
                Ok(())
            }
            // Deleted meanwhile: its DELETED event re-syncs the namespace.
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// kube: `data` equal to `{ca.crt: rootCA}` and a non-empty description.
    fn up_to_date(&self, cm: &Value) -> bool {
        cm.get("data") == Some(&self.wanted_data())
            && cm
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
                .and_then(Value::as_str)
                .is_some_and(|d| !d.is_empty())
    }
}

/// Settings for [`bootstrap`].
#[derive(Debug, Clone)]
pub struct BootstrapOptions {
    /// The address clients reach this server at (the `kubernetes` Endpoints).
    pub advertise_address: String,
    pub secure_port: u16,
}

/// Create what every cluster has: namespaces `default`, `kube-system`,
/// `kube-public`, `kube-node-lease`, and the `default/kubernetes` Service and
/// Endpoints. Idempotent.
pub async fn bootstrap(registry: &Registry, opts: &BootstrapOptions) -> Result<(), ApiError> {
    let Some(namespaces) = registry.namespaces() else {
        return Ok(());
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match namespaces
            .create(None, None, obj, &WriteOptions::default())
            .await
        {
            Ok(_) => tracing::info!(namespace = ns, "created bootstrap namespace"),
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(services) = registry.get("", "v1", "services") {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                          "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": opts.secure_port}]}
        });
        match services
            .create(
                Some(&namespaces),
                Some("default"),
                svc,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) | Err(ApiError { code: 409, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    // kube-apiserver's endpoint reconciler: the `kubernetes` Endpoints and
    // its EndpointSlice (`endpointSliceFromEndpoints`) name this server's
    // advertise address and secure port, put right when they changed since
    // the last start (the port of `--secure-port 0`).
    let address_type = if opts.advertise_address.contains(':') {
        "IPv6"
    } else {
        "IPv4"
    };
    let port = json!({"name": "https", "port": opts.secure_port, "protocol": "TCP"});
    let ep = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": opts.advertise_address}], "ports": [port]}]
    });
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": address_type,
        "endpoints": [{"addresses": [opts.advertise_address], "conditions": {"ready": true}}],
        "ports": [port]
    });
    for (group, resource, obj, fields) in [
        ("", "endpoints", ep, &["subsets"][..]),
        (
            "discovery.k8s.io",
            "endpointslices",
            slice,
            &["addressType", "endpoints", "ports"][..],
        ),
    ] {
        if let Some(store) = registry.get(group, "v1", resource) {
            ensure_default_object(&store, &namespaces, obj, fields).await?;
        }
    }
    Ok(())
}

/// Create `obj` in namespace `default`; when it exists, write `fields` of
/// `obj` where they differ.
async fn ensure_default_object(
    store: &Store,
    namespaces: &Store,
    obj: Value,
    fields: &[&str],
) -> Result<(), ApiError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let opts = WriteOptions::default();
    match store
        .create(Some(namespaces), Some("default"), obj.clone(), &opts)
        .await
    {
        Ok(_) => return Ok(()),
        Err(e) if e.code == 409 => {}
        Err(e) => return Err(e),
    }
    let current = store.get_value(Some("default"), &name).await?;
    if fields.iter().all(|f| current.get(*f) == obj.get(*f)) {
        return Ok(());
    }
    store
        .patch(Some("default"), &name, None, &opts, |cur| {
            let mut next = cur.clone();
            for f in fields {
                next[*f] = obj.get(*f).cloned().unwrap_or(Value::Null);
            }
            Ok(next)
        })
        .await?;
    tracing::info!(resource = %store.info().resource, name, "updated to this server's address");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    /// A metadata-only follower sees the type and metadata as a full decode
    /// does, without managedFields and without the object's other members.
    #[test]
    fn decode_head_keeps_type_and_metadata_only() {
        let obj = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a",
                "namespace": "ns",
                "uid": "u1",
                "ownerReferences": [{"uid": "o1", "kind": "Deployment"}],
                "finalizers": ["orphan"],
                "deletionTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {}}}]
            },
            "data": {"metadata": "not this one", "k": "v"},
            "status": {"phase": "Active"}
        });
        let bytes = serde_json::to_vec(&obj).unwrap();
        let head = decode_head(&bytes).unwrap();
        let mut want = obj.clone();
        want.as_object_mut().unwrap().remove("data");
        want.as_object_mut().unwrap().remove("status");
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(head, want);
        assert_eq!(owner_uids(&head), vec!["o1".to_string()]);
        assert_eq!(decode_full(&bytes, None), Some(obj));
        assert_eq!(decode_head(b"[1]"), None);
        assert_eq!(decode_head(b"{\"metadata\": 3}"), None);
    }

    /// A metadata follower takes the head the watch cache decoded (the
    /// same value, not a parse of its own); an event without one (a
    /// replay) is decoded.
    #[test]
    fn decode_head_shared_takes_the_caches_head() {
        let bytes = br#"{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#;
        let cached = Arc::new(json!({"kind": "ConfigMap", "metadata": {"name": "a"}}));
        let taken = decode_head_shared(bytes, Some(&cached)).unwrap();
        assert!(Arc::ptr_eq(&taken, &cached));
        let decoded = decode_head_shared(bytes, None).unwrap();
        assert_eq!(*decoded, *cached);
        assert!(!Arc::ptr_eq(&decoded, &cached));
    }
}
