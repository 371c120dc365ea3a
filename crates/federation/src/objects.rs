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
        let this = Arc::new(Self {
            store: writer.as_reader(),
            subscribers: Mutex::new(Vec::new()),
            synced: AtomicBool::new(false),
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
        let watch =
            watcher::watcher(api, watcher::Config::default()).modify(move |o| lean(o, &keep));
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
                    Some(Ok(Event::Apply(o) | Event::Delete(o))) => {
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

    /// The object `cached` as the federation holds it now, in full (the
    /// cache keeps metadata only); `None` when it is gone or was re-created
    /// (a new uid: its own event reconciles it).
    pub async fn fetch(&self, cached: &DynamicObject) -> kube::Result<Option<DynamicObject>> {
        let api: Api<DynamicObject> = match cached.namespace() {
            Some(ns) => Api::namespaced_with(self.fed.clone(), &ns, &self.kind.resource),
            None => Api::all_with(self.fed.clone(), &self.kind.resource),
        };
        Ok(api
            .get_opt(&cached.name_any())
            .await?
            .filter(|o| o.uid().is_some() && o.uid() == cached.uid()))
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
