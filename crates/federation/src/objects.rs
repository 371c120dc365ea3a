//! The federation side of each kind, watched once and shared by every
//! controller of the kind (sync, status, a user's own): one reflector per
//! kind ([`FederationObjects::for_kind`]) whose cache every controller reads
//! and whose changes each controller gets as its own trigger stream.
//!
//! The cache is lean: an object's metadata (without `managedFields`), the
//! fields its kind's rules read ([`crate::policy::KindPolicy::decision_fields`],
//! e.g. a Secret's `type`) and, for a kind whose status the federation sums,
//! its `status` (what the status controller compares against). Holding
//! every federated object in full cost ~5 KiB per object
//! (`docs/benchmarks.md`); a controller that needs an object's content
//! reads it when it writes ([`SharedObjects::fetch`]).
//!
//! The content a watch event brought is not thrown away at once: once a
//! controller of the kind has fetched, each event's object (less
//! `managedFields`) waits in a bounded side table until the first
//! [`SharedObjects::fetch`] of it takes it, so the reconcile an event
//! triggers reads what the event carried instead of sending the API a GET
//! (the sync's fetch was one GET per object change; a bulk of new objects
//! has one event each). What nobody takes (the table is full, an object
//! the controller skips: [`SharedObjects::discard`]) costs a GET later, as
//! before; the table is empty again once the controllers caught up.
//!
//! A controller is a kube-runtime `Controller` over the shared store,
//! triggered by the shared stream ([`SharedObjects::controller`]); add the
//! member side with [`crate::informer::Federated::federated`]:
//!
//! ```ignore
//! let objects = ctx.objects.for_kind(&kind);
//! let informer = ctx.informers.for_kind(&kind);
//! objects.controller()
//!     .federated(&informer)
//!     .run(reconcile, error_policy, ctx)
//! ```
//!
//! (kube-runtime's own shared streams, `Controller::for_shared_stream_with`,
//! need a `Default` dynamic type, which `DynamicObject`'s `ApiResource` is
//! not; so the sharing is done here, with `reconcile_on`.)

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt as _;
use futures::channel::mpsc;
use futures::stream::BoxStream;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, WatchStreamExt as _};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::kinds::FederatedKind;

/// The shared reflector of one kind (see the module docs).
pub struct SharedObjects {
    kind: FederatedKind,
    fed: kube::Client,
    store: Store<DynamicObject>,
    subscribers: Mutex<Vec<mpsc::UnboundedSender<ObjectRef<DynamicObject>>>>,
    synced: AtomicBool,
    /// Objects as their last watch event brought them, until fetched.
    pending: Arc<Pending>,
}

/// Objects (uid → the object less `managedFields`) as their last watch
/// event brought them, not fetched yet (see the module docs). Filled only
/// once some controller fetched (`wanted`): a kind nobody fetches keeps
/// nothing.
#[derive(Default)]
struct Pending {
    wanted: AtomicBool,
    by_uid: Mutex<HashMap<String, DynamicObject>>,
}

/// At most this many objects wait to be fetched (~1–2 KiB each for small
/// objects); past it an event's content is dropped (its fetch is a GET).
/// The oldest stay: a backlog is reconciled oldest first.
const PENDING_MAX: usize = 8192;

impl Pending {
    /// Keep `obj` (its event's content) until fetched; a newer event of
    /// the same uid replaces it.
    fn keep(&self, obj: &DynamicObject) {
        if !self.wanted.load(Ordering::Relaxed) {
            return;
        }
        let Some(uid) = obj.metadata.uid.as_deref() else {
            return;
        };
        let mut by_uid = self.by_uid.lock();
        if by_uid.len() >= PENDING_MAX && !by_uid.contains_key(uid) {
            return;
        }
        by_uid.insert(uid.to_string(), obj.clone());
    }

    fn take(&self, uid: &str) -> Option<DynamicObject> {
        self.wanted.store(true, Ordering::Relaxed);
        self.by_uid.lock().remove(uid)
    }

    fn forget(&self, uid: &str) {
        self.by_uid.lock().remove(uid);
    }
}

impl std::fmt::Debug for SharedObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedObjects")
            .field("kind", &self.kind.id())
            .field("objects", &self.store.state().len())
            .finish_non_exhaustive()
    }
}

impl SharedObjects {
    fn start(kind: FederatedKind, fed: kube::Client, stop: CancellationToken) -> Arc<Self> {
        let ar = kind.resource.clone();
        let writer = reflector::store::Writer::new(ar.clone());
        let pending = Arc::new(Pending::default());
        let this = Arc::new(Self {
            store: writer.as_reader(),
            subscribers: Mutex::new(Vec::new()),
            synced: AtomicBool::new(false),
            pending: pending.clone(),
            kind,
            fed: fed.clone(),
        });
        let policy = this.kind.policy();
        let keep: Vec<&'static str> = policy
            .decision_fields
            .iter()
            .copied()
            .chain(policy.status.map(|_| "status"))
            .collect();
        let api: Api<DynamicObject> = Api::all_with(fed, &ar);
        let watch = watcher::watcher(api, watcher::Config::default()).modify(move |o| {
            o.metadata.managed_fields = None;
            pending.keep(o);
            lean(o, &keep);
        });
        let me = Arc::downgrade(&this);
        tokio::spawn(async move {
            let mut stream = reflector::reflector(writer, watch)
                .default_backoff()
                .boxed();
            loop {
                let event = tokio::select! {
                    () = stop.cancelled() => break,
                    e = stream.next() => e,
                };
                let Some(this) = me.upgrade() else { break };
                match event {
                    None => break,
                    Some(Ok(Event::Apply(o))) => {
                        this.publish(&[ObjectRef::from_obj_with(&o, ar.clone())]);
                    }
                    Some(Ok(Event::Delete(o))) => {
                        if let Some(uid) = o.metadata.uid.as_deref() {
                            this.pending.forget(uid);
                        }
                        this.publish(&[ObjectRef::from_obj_with(&o, ar.clone())]);
                    }
                    Some(Ok(Event::InitDone)) => {
                        this.synced.store(true, Ordering::Release);
                        this.publish(&this.all_refs());
                    }
                    Some(Ok(Event::Init | Event::InitApply(_))) => {}
                    Some(Err(e)) => {
                        tracing::debug!(kind = %this.kind.id(), error = %e, "federation watch failed; retrying");
                    }
                }
            }
        });
        this
    }

    fn all_refs(&self) -> Vec<ObjectRef<DynamicObject>> {
        self.store
            .state()
            .iter()
            .map(|o| ObjectRef::from_obj_with(&**o, self.kind.resource.clone()))
            .collect()
    }

    fn publish(&self, refs: &[ObjectRef<DynamicObject>]) {
        self.subscribers
            .lock()
            .retain(|tx| refs.iter().all(|r| tx.unbounded_send(r.clone()).is_ok()));
    }

    /// The kind.
    pub fn kind(&self) -> &FederatedKind {
        &self.kind
    }

    /// The shared cache (lean objects, see the module docs).
    pub fn store(&self) -> Store<DynamicObject> {
        self.store.clone()
    }

    /// A stream of the objects that changed (and of every object after each
    /// full list), from now on; if the cache is filled already, every
    /// object first. For `Controller::reconcile_on`.
    pub fn triggers(&self) -> BoxStream<'static, ObjectRef<DynamicObject>> {
        let (tx, rx) = mpsc::unbounded();
        let mut subscribers = self.subscribers.lock();
        if self.synced.load(Ordering::Acquire) {
            for r in self.all_refs() {
                let _ = tx.unbounded_send(r);
            }
        }
        subscribers.push(tx);
        rx.boxed()
    }

    /// A kube-runtime `Controller` over the shared cache, reconciling each
    /// object of the kind that changes ([`SharedObjects::triggers`]).
    pub fn controller(&self) -> Controller<DynamicObject> {
        Controller::for_stream_with(
            futures::stream::pending(),
            self.store(),
            self.kind.resource.clone(),
        )
        .reconcile_on(self.triggers())
    }

    /// As [`SharedObjects::controller`], but a change is reconciled only
    /// while `active()` holds when it arrives. For controllers that have
    /// nothing to do while, say, no member cluster is joined (sync,
    /// status): on a standalone server every write would otherwise go
    /// through the controller's queue and a reconcile that returns at
    /// once. Such a controller must also `reconcile_all_on` the event that
    /// makes `active()` true (a member joining), since what changed before
    /// it was dropped here.
    pub fn controller_while(
        &self,
        active: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Controller<DynamicObject> {
        Controller::for_stream_with(
            futures::stream::pending(),
            self.store(),
            self.kind.resource.clone(),
        )
        .reconcile_on(
            self.triggers()
                .filter(move |_| futures::future::ready(active())),
        )
    }

    /// The object `cached` as the federation holds it now, in full (the
    /// cache keeps metadata only); `None` when it is gone or was re-created
    /// (a new uid: its own event reconciles it). The first fetch after a
    /// watch event of the object reads what the event brought (less
    /// `managedFields`; see the module docs); a later one, or one whose
    /// event's content was not kept, asks the API.
    pub async fn fetch(&self, cached: &DynamicObject) -> kube::Result<Option<DynamicObject>> {
        if let Some(uid) = cached.metadata.uid.as_deref()
            && let Some(o) = self.pending.take(uid)
        {
            return Ok(Some(o));
        }
        let api: Api<DynamicObject> = match cached.namespace() {
            Some(ns) => Api::namespaced_with(self.fed.clone(), &ns, &self.kind.resource),
            None => Api::all_with(self.fed.clone(), &self.kind.resource),
        };
        Ok(api
            .get_opt(&cached.name_any())
            .await?
            .filter(|o| o.uid().is_some() && o.uid() == cached.uid()))
    }

    /// `cached` will not be fetched for its last event (a controller
    /// skipped it: not propagated, being deleted…): what that event
    /// brought is let go now rather than held until fetched.
    pub fn discard(&self, cached: &DynamicObject) {
        if let Some(uid) = cached.metadata.uid.as_deref() {
            self.pending.forget(uid);
        }
    }
}

/// What the shared cache keeps of a federated object: its metadata without
/// `managedFields`, and the top-level fields `keep`.
pub fn lean(obj: &mut DynamicObject, keep: &[&str]) {
    obj.metadata.managed_fields = None;
    let mut kept = Map::new();
    for field in keep {
        if let Some(v) = obj.data.get(*field) {
            kept.insert((*field).to_string(), v.clone());
        }
    }
    obj.data = Value::Object(kept);
}

/// A started reflector and the token that stops it.
type Running = (Arc<SharedObjects>, CancellationToken);

/// The shared reflectors of a process, one per kind, started on first use.
pub struct FederationObjects {
    fed: kube::Client,
    stop: CancellationToken,
    by_kind: Mutex<HashMap<String, Running>>,
}

impl std::fmt::Debug for FederationObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FederationObjects")
            .field("kinds", &self.by_kind.lock().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl FederationObjects {
    /// None yet; they watch the federation through `fed` until `stop`.
    pub fn new(fed: kube::Client, stop: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            fed,
            stop,
            by_kind: Mutex::new(HashMap::new()),
        })
    }

    /// The shared reflector of `kind`, started now if it is the first use.
    pub fn for_kind(&self, kind: &FederatedKind) -> Arc<SharedObjects> {
        let key = key(&kind.resource);
        let mut by_kind = self.by_kind.lock();
        if let Some((o, _)) = by_kind.get(&key) {
            return o.clone();
        }
        let token = self.stop.child_token();
        let objects = SharedObjects::start(kind.clone(), self.fed.clone(), token.clone());
        by_kind.insert(key, (objects.clone(), token));
        objects
    }

    /// Stop and forget the reflector of `kind` (a federated CRD went away).
    pub fn remove(&self, kind: &FederatedKind) {
        if let Some((_, token)) = self.by_kind.lock().remove(&key(&kind.resource)) {
            token.cancel();
        }
    }

    /// How many kinds are watched.
    pub fn len(&self) -> usize {
        self.by_kind.lock().len()
    }

    /// Whether no kind is watched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn key(ar: &ApiResource) -> String {
    format!("{}/{}", ar.api_version, ar.plural)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret() -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "managedFields": [{"manager": "x"}]},
            "type": "Opaque", "data": {"k": "dg=="}, "status": {"x": 1}
        }))
        .unwrap_or_else(|_| DynamicObject {
            types: None,
            metadata: Default::default(),
            data: Value::Null,
        })
    }

    fn with_uid(uid: &str, rv: &str) -> DynamicObject {
        let mut o = secret();
        o.metadata.uid = Some(uid.into());
        o.metadata.resource_version = Some(rv.into());
        o
    }

    #[test]
    fn an_events_content_waits_until_its_first_fetch_takes_it() {
        let p = Pending::default();
        // Nobody fetched yet: nothing is kept.
        p.keep(&with_uid("u1", "1"));
        assert!(p.by_uid.lock().is_empty());
        assert!(p.take("u1").is_none());
        // Now wanted: kept, the newest event's, taken once.
        p.keep(&with_uid("u1", "2"));
        p.keep(&with_uid("u1", "3"));
        let o = p.take("u1").expect("kept");
        assert_eq!(o.metadata.resource_version.as_deref(), Some("3"));
        assert_eq!(o.data["data"], json!({"k": "dg=="}));
        assert!(p.take("u1").is_none());
        // Forgotten (deleted, or skipped by the controller).
        p.keep(&with_uid("u2", "4"));
        p.forget("u2");
        assert!(p.take("u2").is_none());
        // Bounded: past the limit a new uid is not kept, a kept one is
        // still replaced.
        for i in 0..PENDING_MAX {
            p.keep(&with_uid(&format!("f{i}"), "1"));
        }
        p.keep(&with_uid("late", "1"));
        assert!(p.take("late").is_none());
        p.keep(&with_uid("f0", "9"));
        assert_eq!(
            p.take("f0").and_then(|o| o.metadata.resource_version),
            Some("9".into())
        );
    }

    #[test]
    fn the_cache_keeps_metadata_and_what_the_kind_reads() {
        let mut o = secret();
        lean(&mut o, crate::policy::of("", "Secret").decision_fields);
        assert!(o.metadata.managed_fields.is_none());
        assert_eq!(o.metadata.name.as_deref(), Some("s"));
        assert_eq!(o.data, json!({"type": "Opaque"}));
        let mut o = secret();
        lean(&mut o, &["status"]);
        assert_eq!(o.data, json!({"status": {"x": 1}}));
        let mut o = secret();
        lean(&mut o, crate::policy::DEFAULT.decision_fields);
        assert_eq!(o.data, json!({}));
    }
}
