//! The deletion helper (seed 000's `deletionhelper.NewDeletionHelper`),
//! for one federated kind: it keeps the [`PropagationRecord`]s of the
//! kind's objects and, through them, follows Kubernetes' own deletion
//! semantics in the member clusters (SPEC §3.8) without a finalizer on the
//! user's object:
//!
//! - [`DeletionHelper::track`] makes sure a federated object has its record
//!   (owned by the object, held by [`RECORD_FINALIZER`]) before anything is
//!   written to a member;
//! - [`DeletionHelper::run`] watches the kind's records: a record being
//!   deleted (the garbage collector deletes it after a Background delete of
//!   its object, or first thing in a Foreground one) has every member copy
//!   deleted, then its finalizer removed; a record the collector orphaned
//!   (no ownerReference left: `propagationPolicy: Orphan`) has every copy
//!   let go (our label and annotation removed) and is then deleted. A
//!   member that is not Ready is waited for (an event on the federated
//!   object and on the Cluster says so) and done when it is back, also
//!   after a restart: the record stays until then;
//! - a sweep (after each member cache sync and every
//!   [`SWEEP_PERIOD`]) deletes copies whose federated object and record are
//!   both gone (a record lost, or copies written before records existed).
//!
//! The same helper serves the built-in sync and a user's own federated
//! controller (`examples/foo_controller.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::dispatch;
use crate::events::{EventType, Recorder};
use crate::informer::{FederatedInformer, InformerEvent, ObjectKey};
use crate::kinds::FederatedKind;
use crate::members::Member;
use crate::record_status::Statuses;
use crate::version::{self, PropagationRecord, PropagationState, RECORD_FINALIZER, RESOURCE_LABEL};

/// How often copies without a federated object and a record are looked
/// for, besides after every member cache sync.
pub const SWEEP_PERIOD: Duration = Duration::from_secs(30);
/// How soon a deletion waiting for a member is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// What [`DeletionHelper::track`] found.
#[derive(Debug)]
pub enum Tracked {
    /// The object's record (existing or just created).
    Record(Arc<PropagationRecord>),
    /// A record of an earlier object of the same name is still being
    /// finalized: wait before writing to members.
    Wait,
}

/// What one record's finalization came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Finalized {
    /// The record is not being deleted nor orphaned.
    NotDeleting,
    /// Every copy is gone (or let go) and the record released.
    Done,
    /// Waiting for these clusters (not Ready, or a failed write), with why.
    Waiting(Vec<(String, String)>),
}

/// The deletion helper of one federated kind.
pub struct DeletionHelper {
    fed: kube::Client,
    kind: FederatedKind,
    informer: Arc<FederatedInformer>,
    recorder: Recorder,
    timeout: Duration,
    /// The kind's records as the watch brought them, without their status
    /// (kept packed in `statuses`).
    store: Store<PropagationRecord>,
    writer: Mutex<Option<reflector::store::Writer<PropagationRecord>>>,
    /// The status of each record in `store`, packed.
    statuses: Arc<Statuses>,
    /// The newest record this process wrote, by (namespace, name), until
    /// the watch brings it (or a newer version).
    written: Mutex<HashMap<(String, String), Arc<PropagationRecord>>>,
    /// The last waiting message per record uid (an event once per change).
    waiting: Mutex<HashMap<String, String>>,
    /// The record watch has listed once.
    ready: AtomicBool,
}

impl std::fmt::Debug for DeletionHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeletionHelper")
            .field("kind", &self.kind.id())
            .finish_non_exhaustive()
    }
}

impl DeletionHelper {
    /// A helper for `kind`, writing to the federation with `fed`, reaching
    /// members through `informer`'s member set. Start it with [`Self::run`].
    pub fn new(
        fed: kube::Client,
        informer: Arc<FederatedInformer>,
        recorder: Recorder,
        member_timeout: Duration,
    ) -> Arc<Self> {
        let writer = reflector::store::Writer::default();
        Arc::new(Self {
            kind: informer.kind().clone(),
            fed,
            informer,
            recorder,
            timeout: member_timeout,
            store: writer.as_reader(),
            writer: Mutex::new(Some(writer)),
            statuses: Arc::default(),
            written: Mutex::new(HashMap::new()),
            waiting: Mutex::new(HashMap::new()),
            ready: AtomicBool::new(false),
        })
    }

    /// The kind.
    pub fn kind(&self) -> &FederatedKind {
        &self.kind
    }

    /// The record of the federated object `key`, as last seen or written.
    pub fn record(&self, key: &ObjectKey) -> Option<Arc<PropagationRecord>> {
        let ns = version::record_namespace(key.namespace.as_deref());
        let name = version::record_name(&self.kind, &key.name);
        let seen = self
            .store
            .get(&ObjectRef::new(&name).within(&ns))
            .map(|lean| self.statuses.attach(&lean));
        let key = (ns, name);
        let written = self.written.lock().get(&key).cloned();
        match (seen, written) {
            (Some(s), Some(w)) if rv(&w) > rv(&s) => Some(w),
            (Some(s), Some(_)) => {
                // The watch caught up: keep one copy only.
                self.written.lock().remove(&key);
                Some(s)
            }
            (s, w) => s.or(w),
        }
    }

    fn api(&self, ns: &str) -> Api<PropagationRecord> {
        Api::namespaced(self.fed.clone(), ns)
    }

    /// Drop what this process wrote of `seen`'s record once the watch has
    /// brought it (or a newer version).
    fn forget_written(&self, seen: &PropagationRecord) {
        let key = (seen.namespace().unwrap_or_default(), seen.name_any());
        let mut written = self.written.lock();
        if written.get(&key).is_some_and(|mine| rv(mine) <= rv(seen)) {
            written.remove(&key);
        }
    }

    /// Keep `rec`, just written, until the watch brings it. The watch
    /// event often comes before the write's answer: then the store has it
    /// already and nothing is kept (else such a record stayed here, whole,
    /// until its object was reconciled again: 129 B per member copy after
    /// a bulk at 100 members, by heaptrack). The store is looked at under `written`'s lock, and
    /// the watch updates the store before it takes that lock in
    /// [`Self::forget_written`], so one of the two always drops it.
    fn remember(&self, rec: PropagationRecord) -> Arc<PropagationRecord> {
        let rec = Arc::new(rec);
        keep_written(&mut self.written.lock(), &self.store, rec.clone());
        rec
    }

    /// Make sure the federated object with metadata `meta` has its record,
    /// before anything is written to a member for it.
    pub async fn track(&self, meta: &ObjectMeta) -> Result<Tracked, kube::Error> {
        let uid = meta.uid.clone().unwrap_or_default();
        let key = ObjectKey::new(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or(""),
        );
        let check = |r: Arc<PropagationRecord>| Self::check(r, &uid);
        if let Some(r) = self.record(&key) {
            return Ok(check(r));
        }
        let new = version::new_record(&self.kind, meta);
        let ns = new.namespace().unwrap_or_default();
        match self.api(&ns).create(&PostParams::default(), &new).await {
            Ok(created) => Ok(Tracked::Record(self.remember(created))),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                match self.api(&ns).get_opt(&new.name_any()).await? {
                    Some(r) => Ok(check(self.remember(r))),
                    None => Ok(Tracked::Wait),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The record of the federated object with metadata `meta`, if it has
    /// one (`None`: no record yet; sync then writes to the members and
    /// creates the record once, with their state: [`Self::create_with_status`]).
    /// Until the record watch has listed, the record is read from the API,
    /// so a restart never takes a missing cache entry for a missing record.
    pub async fn lookup(&self, meta: &ObjectMeta) -> Result<Option<Tracked>, kube::Error> {
        let uid = meta.uid.clone().unwrap_or_default();
        let key = ObjectKey::new(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or(""),
        );
        let found = match self.record(&key) {
            Some(r) => Some(r),
            None if !self.ready.load(Ordering::Acquire) => {
                let ns = version::record_namespace(key.namespace.as_deref());
                let name = version::record_name(&self.kind, &key.name);
                self.api(&ns)
                    .get_opt(&name)
                    .await?
                    .map(|r| self.remember(r))
            }
            None => None,
        };
        Ok(found.map(|r| Self::check(r, &uid)))
    }

    fn check(r: Arc<PropagationRecord>, uid: &str) -> Tracked {
        if r.spec.resource.uid == uid
            && r.metadata.deletion_timestamp.is_none()
            && version::is_owned(&r)
        {
            Tracked::Record(r)
        } else {
            Tracked::Wait
        }
    }

    /// Create the record of the federated object with metadata `meta`
    /// with its first `status` in one write (the members were written
    /// already: a record exists only once there is something to record).
    /// Should the server drop the status on create, or another writer
    /// have created the record first, the status is patched on.
    pub async fn create_with_status(
        &self,
        meta: &ObjectMeta,
        status: Value,
    ) -> Result<(), kube::Error> {
        let mut new = version::new_record(&self.kind, meta);
        new.status = serde_json::from_value(status.clone()).ok();
        let ns = new.namespace().unwrap_or_default();
        match self.api(&ns).create(&PostParams::default(), &new).await {
            Ok(created) => {
                let kept = created.status == new.status;
                let created = self.remember(created);
                if !kept {
                    self.patch_status(&created, status).await?;
                }
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let uid = meta.uid.clone().unwrap_or_default();
                match self.api(&ns).get_opt(&new.name_any()).await? {
                    Some(r) => match Self::check(self.remember(r), &uid) {
                        Tracked::Record(r) => self.patch_status(&r, status).await,
                        Tracked::Wait => Ok(()),
                    },
                    None => Ok(()),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Write the per-cluster state of `record` (its status subresource).
    pub async fn write_state(
        &self,
        record: &PropagationRecord,
        state: &PropagationState,
    ) -> Result<(), kube::Error> {
        self.patch_status(record, json!(version::status_of(state)))
            .await
    }

    /// Merge `status` into the status of `record` (the per-cluster state
    /// and, say, a rollout's, in one write), remembered as the newest
    /// record until the watch brings it.
    pub async fn patch_status(
        &self,
        record: &PropagationRecord,
        status: Value,
    ) -> Result<(), kube::Error> {
        let ns = record.namespace().unwrap_or_default();
        let patch = json!({ "status": status });
        match self
            .api(&ns)
            .patch_status(
                &record.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(r) => {
                self.remember(r);
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Finalize `record` if it is being deleted or was orphaned: delete
    /// (or let go) its member copies, then release it.
    pub async fn finalize(&self, record: &PropagationRecord) -> Result<Finalized, kube::Error> {
        let orphan = !version::is_owned(record);
        let deleting = record.metadata.deletion_timestamp.is_some();
        let held = record.finalizers().iter().any(|f| f == RECORD_FINALIZER);
        if !orphan && !deleting {
            return Ok(Finalized::NotDeleting);
        }
        if !held {
            // Released already; only the orphaned-but-alive case is ours.
            if orphan && !deleting {
                self.delete_record(record).await?;
            }
            return Ok(Finalized::Done);
        }
        let target = &record.spec.resource;
        let uid = target.uid.as_str();
        let ns = Some(target.namespace.as_str()).filter(|n| !n.is_empty());
        let state = version::state_of(record);
        let members = self.informer.members().snapshot();
        let copies = self.informer.copies_of_origin(uid);
        let jobs = members.iter().map(|m| {
            let known = state
                .get(&m.name)
                .is_some_and(|r| r.hash.is_some() || r.resource_version.is_some())
                || copies.contains_key(&m.name);
            let unsure = self.informer.is_synced(&m.name) != Some(true);
            async move {
                if !(known || unsure) {
                    return (m.name.clone(), Ok(false));
                }
                if !m.ready {
                    return if known {
                        (
                            m.name.clone(),
                            Err(format!("cluster {} is not ready", m.name)),
                        )
                    } else {
                        (m.name.clone(), Ok(false))
                    };
                }
                let r = self.release_copy(m, &target.name, ns, uid, orphan).await;
                (m.name.clone(), r.map_err(|e| e.message))
            }
        });
        let mut results = futures::future::join_all(jobs).await;
        // A cluster the record names that is not (yet) in the member set:
        // still joined (the member set is being built, say after a
        // restart) means wait; unjoined means its copies stay (SPEC §3.8).
        let clusters: Api<ubernetes_api::Cluster> = Api::all(self.fed.clone());
        for (name, r) in &state {
            if (r.hash.is_some() || r.resource_version.is_some())
                && !members.iter().any(|m| &m.name == name)
                && clusters.get_opt(name).await?.is_some()
            {
                results.push((
                    name.clone(),
                    Err(format!("cluster {name} is not connected yet")),
                ));
            }
        }
        tracing::debug!(kind = %self.kind.id(), record = %record.name_any(), orphan, ?results, "finalizing");
        let mut done = Vec::new();
        let mut waiting = Vec::new();
        for (cluster, r) in results {
            match r {
                Ok(true) => done.push(cluster),
                Ok(false) => {}
                Err(msg) => waiting.push((cluster, msg)),
            }
        }
        let about = target_value(record);
        if !done.is_empty() {
            let reason = if orphan {
                "OrphanInCluster"
            } else {
                "DeleteInCluster"
            };
            self.recorder.record(
                &about,
                EventType::Normal,
                reason,
                event_message(reason, &done),
            );
        }
        let rec_uid = record.uid().unwrap_or_default();
        if !waiting.is_empty() {
            let message = format!(
                "waiting to delete the copies in: {}",
                waiting
                    .iter()
                    .map(|(c, m)| format!("cluster {c} ({m})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut seen = self.waiting.lock();
            if seen.get(&rec_uid) != Some(&message) {
                seen.insert(rec_uid, message.clone());
                drop(seen);
                self.recorder
                    .record(&about, EventType::Warning, "FailedDeleteInCluster", message);
                for (cluster, why) in &waiting {
                    self.recorder.record(
                        &cluster_value(cluster),
                        EventType::Warning,
                        "DeletionPending",
                        format!(
                            "{} {} (uid {uid}) is to be deleted from this cluster when it can be reached: {why}",
                            target.kind,
                            ObjectKey::new(ns, &target.name)
                        ),
                    );
                }
            }
            return Ok(Finalized::Waiting(waiting));
        }
        self.waiting.lock().remove(&rec_uid);
        self.release_record(record, orphan && !deleting).await?;
        Ok(Finalized::Done)
    }

    async fn release_copy(
        &self,
        member: &Member,
        name: &str,
        ns: Option<&str>,
        uid: &str,
        orphan: bool,
    ) -> Result<bool, dispatch::MemberError> {
        if orphan {
            dispatch::orphan_copy(member, &self.kind, name, ns, uid, self.timeout).await
        } else {
            dispatch::delete_copy(member, &self.kind, name, ns, uid, self.timeout).await
        }
    }

    /// Remove our finalizer (and delete the record when it was orphaned).
    async fn release_record(
        &self,
        record: &PropagationRecord,
        delete: bool,
    ) -> Result<(), kube::Error> {
        let ns = record.namespace().unwrap_or_default();
        let finalizers: Vec<&String> = record
            .finalizers()
            .iter()
            .filter(|f| *f != RECORD_FINALIZER)
            .collect();
        let patch = json!({"metadata": {
            "resourceVersion": record.resource_version(),
            "finalizers": finalizers,
        }});
        match self
            .api(&ns)
            .patch(
                &record.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        }
        self.written.lock().remove(&(ns, record.name_any()));
        if delete {
            self.delete_record(record).await?;
        }
        Ok(())
    }

    async fn delete_record(&self, record: &PropagationRecord) -> Result<(), kube::Error> {
        let ns = record.namespace().unwrap_or_default();
        let mut dp = DeleteParams::background();
        dp.preconditions = Some(kube::api::Preconditions {
            uid: record.uid(),
            resource_version: None,
        });
        match self.api(&ns).delete(&record.name_any(), &dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Delete copies (in Ready, synced members) whose federated object and
    /// record are both gone. Returns how many were deleted.
    pub async fn sweep(&self) -> usize {
        if !self.store_ready() {
            return 0;
        }
        self.statuses.retain_stored(&self.store);
        let recorded: HashSet<String> = self
            .store
            .state()
            .iter()
            .map(|r| r.spec.resource.uid.clone())
            .chain(
                self.written
                    .lock()
                    .values()
                    .map(|r| r.spec.resource.uid.clone()),
            )
            .collect();
        let mut suspects: BTreeMap<(ObjectKey, String), Vec<Arc<Member>>> = BTreeMap::new();
        for m in self.informer.members().snapshot() {
            if !m.ready || self.informer.is_synced(&m.name) != Some(true) {
                continue;
            }
            for (key, origin) in self.informer.origins(&m.name) {
                if recorded.contains(&origin) {
                    continue;
                }
                suspects.entry((key, origin)).or_default().push(m.clone());
            }
        }
        let mut deleted = 0;
        for ((key, origin), members) in suspects {
            let api: Api<DynamicObject> = match &key.namespace {
                Some(ns) => Api::namespaced_with(self.fed.clone(), ns, &self.kind.resource),
                None => Api::all_with(self.fed.clone(), &self.kind.resource),
            };
            match api.get_metadata_opt(&key.name).await {
                Ok(Some(o)) if o.uid().as_deref() == Some(origin.as_str()) => continue,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(kind = %self.kind.id(), %key, error = %e, "sweep: cannot read the federated object");
                    continue;
                }
            }
            // The record may have come meanwhile.
            if self
                .record(&key)
                .is_some_and(|r| r.spec.resource.uid == origin)
            {
                continue;
            }
            for m in members {
                match dispatch::delete_copy(
                    &m,
                    &self.kind,
                    &key.name,
                    key.namespace.as_deref(),
                    &origin,
                    self.timeout,
                )
                .await
                {
                    Ok(true) => {
                        deleted += 1;
                        tracing::info!(cluster = %m.name, kind = %self.kind.id(), %key, "deleted a copy whose federated object is gone");
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::debug!(cluster = %m.name, %key, error = %e, "sweep: delete failed")
                    }
                }
            }
        }
        deleted
    }

    fn store_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Run until `stop`: watch the kind's records and finalize those being
    /// deleted or orphaned; sweep. Call once.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let Some(writer) = self.writer.lock().take() else {
            return;
        };
        let api: Api<PropagationRecord> = Api::all(self.fed.clone());
        let wc = watcher::Config::default().labels(&format!(
            "{RESOURCE_LABEL}={}",
            version::resource_label(&self.kind)
        ));
        // A record the watch brought replaces the one this process wrote
        // (no second copy of every record kept after a bulk).
        let seen_by = Arc::downgrade(&self);
        let statuses = self.statuses.clone();
        let forgotten = self.statuses.clone();
        let watch = watcher(api, wc)
            .default_backoff()
            .modify(move |r| statuses.take(r));
        let records = reflector::reflector(writer, watch)
            .inspect_ok(move |e| {
                if let watcher::Event::Delete(r) = e {
                    forgotten.forget(r);
                }
            })
            .applied_objects()
            .inspect_ok(move |r| {
                if let Some(this) = seen_by.upgrade() {
                    this.forget_written(r);
                }
            });
        let (all_tx, all_rx) = mpsc::unbounded::<()>();
        let (sweep_tx, mut sweep_rx) = mpsc::unbounded::<()>();
        let mut events = self.informer.subscribe();
        let forward_stop = stop.clone();
        let forward = tokio::spawn(async move {
            loop {
                let e = tokio::select! {
                    () = forward_stop.cancelled() => break,
                    e = events.next() => e,
                };
                match e {
                    None => break,
                    Some(InformerEvent::ClusterReady(_) | InformerEvent::ClusterSynced(_)) => {
                        let _ = all_tx.unbounded_send(());
                        let _ = sweep_tx.unbounded_send(());
                    }
                    Some(_) => {}
                }
            }
        });
        let sweeper_stop = stop.clone();
        let sweeper = {
            let this = self.clone();
            tokio::spawn(async move {
                crate::ready::wait_listed(&this.store).await;
                this.ready.store(true, Ordering::Release);
                let mut tick = tokio::time::interval(SWEEP_PERIOD);
                loop {
                    tokio::select! {
                        () = sweeper_stop.cancelled() => break,
                        _ = tick.tick() => {}
                        s = sweep_rx.next() => if s.is_none() { break },
                    }
                    this.sweep().await;
                }
            })
        };
        let closing = stop.clone();
        Controller::for_stream(records, self.store.clone())
            .reconcile_all_on(all_rx)
            .graceful_shutdown_on(async move { closing.cancelled().await })
            .run(
                |rec: Arc<PropagationRecord>, this: Arc<Self>| async move {
                    match this.finalize(&this.statuses.attach(&rec)).await? {
                        Finalized::Waiting(_) => Ok::<_, kube::Error>(Action::requeue(RETRY)),
                        Finalized::Done | Finalized::NotDeleting => Ok(Action::await_change()),
                    }
                },
                |_rec, err: &kube::Error, this: Arc<Self>| {
                    tracing::debug!(kind = %this.kind.id(), error = %err, "finalizing a record failed; retrying");
                    Action::requeue(Duration::from_secs(1))
                },
                self.clone(),
            )
            .for_each(|_| async {})
            .await;
        forward.abort();
        sweeper.abort();
    }
}

/// Keep `rec` in `written` unless `store` has it (or a newer version)
/// already, see [`DeletionHelper::remember`].
fn keep_written(
    written: &mut HashMap<(String, String), Arc<PropagationRecord>>,
    store: &Store<PropagationRecord>,
    rec: Arc<PropagationRecord>,
) {
    let key = (rec.namespace().unwrap_or_default(), rec.name_any());
    let seen = store
        .get(&ObjectRef::new(&key.1).within(&key.0))
        .is_some_and(|s| rv(&s) >= rv(&rec));
    if seen {
        written.remove(&key);
    } else {
        written.insert(key, rec);
    }
}

fn rv(r: &PropagationRecord) -> u64 {
    r.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The federated object a record is about, as events want it.
fn target_value(record: &PropagationRecord) -> Value {
    let t = &record.spec.resource;
    let mut meta = json!({"name": t.name, "uid": t.uid});
    if !t.namespace.is_empty() {
        meta["namespace"] = json!(t.namespace);
    }
    json!({"apiVersion": t.api_version, "kind": t.kind, "metadata": meta})
}

fn cluster_value(name: &str) -> Value {
    json!({"apiVersion": "federation/v1beta1", "kind": "Cluster", "metadata": {"name": name}})
}

/// An event message naming every cluster.
pub(crate) fn event_message(reason: &str, clusters: &[String]) -> String {
    let what = match reason {
        "CreateInCluster" => "created in",
        "UpdateInCluster" => "updated in",
        "DeleteInCluster" => "deleted from",
        "Adopted" => "adopted an existing object in",
        "OrphanInCluster" => "left to its own in",
        _ => "affects",
    };
    let noun = if clusters.len() == 1 {
        "cluster"
    } else {
        "clusters"
    };
    format!("{what} {noun} {}", clusters.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_messages_name_every_cluster() {
        assert_eq!(
            event_message("CreateInCluster", &["m1".into()]),
            "created in cluster m1"
        );
        assert_eq!(
            event_message("DeleteInCluster", &["m1".into(), "m2".into()]),
            "deleted from clusters m1, m2"
        );
    }

    #[test]
    fn a_write_the_watch_brought_first_is_not_kept() {
        let kind = FederatedKind::new("", "v1", "ConfigMap", "configmaps", true);
        let meta = ObjectMeta {
            name: Some("cfg".into()),
            namespace: Some("app".into()),
            uid: Some("u1".into()),
            ..Default::default()
        };
        let at = |v: &str| {
            let mut r = version::new_record(&kind, &meta);
            r.metadata.resource_version = Some(v.into());
            r
        };
        let mut writer = reflector::store::Writer::<PropagationRecord>::default();
        let store = writer.as_reader();
        let mut written = HashMap::new();
        // The watch has not brought it yet: kept.
        keep_written(&mut written, &store, Arc::new(at("5")));
        assert_eq!(written.len(), 1);
        // The watch brought this write (or a newer one) before its answer
        // came: nothing kept, and an older write of it is dropped.
        writer.apply_watcher_event(&watcher::Event::Apply(at("6")));
        keep_written(&mut written, &store, Arc::new(at("6")));
        assert!(written.is_empty(), "the store has it already");
        keep_written(&mut written, &store, Arc::new(at("7")));
        assert_eq!(written.len(), 1, "newer than the store: kept");
    }

    #[test]
    fn events_about_a_deleted_object_name_it_from_the_record() {
        let kind = FederatedKind::new("", "v1", "ConfigMap", "configmaps", true);
        let meta = ObjectMeta {
            name: Some("cfg".into()),
            namespace: Some("app".into()),
            uid: Some("u1".into()),
            ..Default::default()
        };
        let v = target_value(&version::new_record(&kind, &meta));
        assert_eq!(v["kind"], "ConfigMap");
        assert_eq!(v["metadata"]["namespace"], "app");
        assert_eq!(v["metadata"]["uid"], "u1");
    }
}
