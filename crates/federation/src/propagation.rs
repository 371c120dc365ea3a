//! Propagation (SPEC §3.4, §3.5, §3.8): one kube-runtime `Controller` per
//! federated kind keeps every federated object applied to each Ready
//! member cluster its placement selects.
//!
//! Per kind ([`TypeSync`]):
//! - the controller watches the kind in the federation (in-process client);
//! - a watcher per member cluster (label `federation.kubernetes.io/managed=true`)
//!   keeps a cache of our copies there and re-queues the federated object on
//!   every change of a copy: drift repair, as the seeds' federated informer;
//! - every change of the member set (join, unjoin, readiness, labels)
//!   re-queues every object of the kind, so a cluster that becomes Ready
//!   is reconciled with no manual step.
//!
//! A reconcile ([`reconcile`]) of one object, for each member:
//! - selected and Ready: build the member copy ([`member_object::member_copy`]);
//!   if the record of what was last applied there
//!   ([`record::ClusterRecord`]: hash of the copy, member resourceVersion)
//!   still matches and the member's copy still carries every field we
//!   applied, nothing is sent (kubefed's version cache, kept in the
//!   `federation.kubernetes.io/propagation` annotation so it survives
//!   restarts); else the copy is server-side applied with field manager
//!   `ubernetes` (forced: the federation owns its fields; others' fields stay);
//! - not selected: our copy there is deleted;
//! - not Ready: left Pending, retried when the cluster comes back.
//!
//! Clusters are handled concurrently; a failure in one never blocks the
//! others and is retried with a per-cluster backoff (5 s doubling to 1 min,
//! as Federation v1). Deletion: the finalizer
//! `federation.kubernetes.io/delete-from-underlying-clusters` keeps the
//! federated object until every member copy is deleted (or, with the
//! `orphan` finalizer, let go: our label and annotation removed).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use futures::channel::mpsc;
use http::StatusCode;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::Request;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, watcher as watch_fn};
use kube::{Resource as _, ResourceExt as _};
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::FederationOptions;
use crate::events::{EventType, Recorder};
use crate::kinds::{self, FederatedKind};
use crate::member_object::{
    self, CONFLICT_RESOLUTION_ANNOTATION, FEDERATED_CRD_LABEL, MANAGED_LABEL, ORIGIN_UID_ANNOTATION,
};
use crate::members::{Member, Members};
use crate::placement::{self, Placement};
use crate::record::{self, ClusterRecord, PROPAGATION_ANNOTATION, PropagationRecord, SyncState};

/// The finalizer that holds a federated object until its member copies are
/// gone (Federation v1's name).
pub const DELETE_FINALIZER: &str = "federation.kubernetes.io/delete-from-underlying-clusters";
/// The field manager of every write to a member.
pub const FIELD_MANAGER: &str = "ubernetes";
/// kube's orphan finalizer (DeleteOptions propagationPolicy=Orphan).
const ORPHAN_FINALIZER: &str = "orphan";
/// Federation v1's backoff bounds.
const BACKOFF_MIN: Duration = Duration::from_secs(5);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How many objects of one kind are reconciled at once.
const CONCURRENCY: u16 = 32;

/// What the propagation controllers share.
struct Shared {
    fed: kube::Client,
    members: Arc<Members>,
    options: FederationOptions,
    recorder: Recorder,
}

/// Run the propagation controllers until `stop`: one per built-in federated
/// kind, and one per federated CRD while it exists.
pub async fn run(
    client: kube::Client,
    members: Arc<Members>,
    options: FederationOptions,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let shared = Arc::new(Shared {
        recorder: Recorder::new(client.clone()),
        fed: client,
        members,
        options,
    });
    let mut tasks = JoinSet::new();
    for kind in kinds::builtin() {
        tasks.spawn(TypeSync::run(shared.clone(), kind, stop.child_token()));
    }
    tasks.spawn(custom_resource_kinds(shared.clone(), stop.clone()));
    stop.cancelled().await;
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Start a [`TypeSync`] for the custom resources of every CRD labelled
/// `federation.kubernetes.io/federated: "true"` once it is Established, and
/// stop it when the CRD goes (or loses the label).
async fn custom_resource_kinds(shared: Arc<Shared>, stop: CancellationToken) {
    let api: Api<CustomResourceDefinition> = Api::all(shared.fed.clone());
    let wc = watcher::Config::default().labels(&format!("{FEDERATED_CRD_LABEL}=true"));
    let mut running: HashMap<String, (String, CancellationToken)> = HashMap::new();
    let mut tasks = JoinSet::new();
    let mut stream = watch_fn(api, wc).default_backoff().boxed();
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => break,
            e = stream.next() => e,
        };
        let Some(event) = event else { break };
        let event = match event {
            Ok(e) => e,
            Err(err) => {
                tracing::debug!(error = %err, "watch of federated CRDs");
                continue;
            }
        };
        match event {
            Event::Apply(crd) | Event::InitApply(crd) => {
                let name = crd.name_any();
                match crd_kind(&crd) {
                    Some(kind) => {
                        let id = format!("{}/{}", kind.resource.api_version, kind.resource.plural);
                        if running.get(&name).map(|(i, _)| i) != Some(&id) {
                            if let Some((_, old)) = running.remove(&name) {
                                old.cancel();
                            }
                            tracing::info!(crd = %name, kind = %kind.id(), "propagating custom resources");
                            let token = stop.child_token();
                            tasks.spawn(TypeSync::run(shared.clone(), kind, token.clone()));
                            running.insert(name, (id, token));
                        }
                    }
                    None => {
                        if let Some((_, old)) = running.remove(&name) {
                            old.cancel();
                        }
                    }
                }
            }
            Event::Delete(crd) => {
                if let Some((_, old)) = running.remove(&crd.name_any()) {
                    tracing::info!(crd = %crd.name_any(), "stopped propagating custom resources");
                    old.cancel();
                }
            }
            Event::Init | Event::InitDone => {}
        }
    }
    for (_, (_, token)) in running {
        token.cancel();
    }
    while tasks.join_next().await.is_some() {}
}

/// The federated kind of a CRD's objects: its storage version, once the CRD
/// is Established.
fn crd_kind(crd: &CustomResourceDefinition) -> Option<FederatedKind> {
    let established = crd.status.as_ref().is_some_and(|s| {
        s.conditions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    });
    if !established || crd.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let spec = &crd.spec;
    let version = spec
        .versions
        .iter()
        .find(|v| v.storage)
        .or_else(|| spec.versions.iter().find(|v| v.served))?;
    Some(
        FederatedKind::new(
            &spec.group,
            &version.name,
            &spec.names.kind,
            &spec.names.plural,
            spec.scope == "Namespaced",
        )
        .custom(),
    )
}

/// What placement sees of the member set: readiness and labels by name.
type PlacementView = BTreeMap<String, (bool, BTreeMap<String, String>)>;

/// The cache of our copies in one member cluster, for one kind.
struct MemberCache {
    uid: String,
    server: String,
    ready: bool,
    store: Store<DynamicObject>,
    synced: Arc<AtomicBool>,
    stop: CancellationToken,
}

/// The propagation of one federated kind.
struct TypeSync {
    shared: Arc<Shared>,
    kind: FederatedKind,
    caches: RwLock<HashMap<String, MemberCache>>,
    /// Consecutive failures per (object uid, cluster).
    failures: Mutex<HashMap<(String, String), u32>>,
    /// The last placement error reported per object uid (no repeats).
    placement_errors: Mutex<HashMap<String, String>>,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("writing the federated object: {0}")]
    Federation(#[from] kube::Error),
    #[error("the federated object cannot be read: {0}")]
    Decode(#[from] serde_json::Error),
}

impl TypeSync {
    async fn run(shared: Arc<Shared>, kind: FederatedKind, stop: CancellationToken) {
        let ar = kind.resource.clone();
        let this = Arc::new(Self {
            shared: shared.clone(),
            kind,
            caches: RwLock::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            placement_errors: Mutex::new(HashMap::new()),
        });
        let (refs_tx, refs_rx) = mpsc::unbounded::<ObjectRef<DynamicObject>>();
        let (all_tx, all_rx) = mpsc::unbounded::<()>();
        let manager = tokio::spawn(this.clone().manage_member_watchers(
            refs_tx,
            all_tx,
            stop.clone(),
        ));
        let api: Api<DynamicObject> = Api::all_with(shared.fed.clone(), &ar);
        let closing = stop.clone();
        // The controller's cache keeps only what decides whether and how to
        // reconcile (metadata, a Secret's type): reconcile reads the content
        // itself when it has members to write to. Holding every federated
        // object in full cost ~5 KiB per object (heaptrack, docs/benchmarks.md).
        let writer = reflector::store::Writer::new(ar.clone());
        let reader = writer.as_reader();
        let objects = reflector::reflector(
            writer,
            watch_fn(api, watcher::Config::default()).modify(slim),
        )
        .applied_objects();
        Controller::for_stream_with(objects, reader, ar)
            .with_config(ControllerConfig::default().concurrency(CONCURRENCY))
            .reconcile_on(refs_rx)
            .reconcile_all_on(all_rx)
            .graceful_shutdown_on(async move { closing.cancelled().await })
            .run(reconcile, error_policy, this.clone())
            .for_each(|_| async {})
            .await;
        stop.cancel();
        let _ = manager.await;
        for cache in this.caches.write().drain() {
            cache.1.stop.cancel();
        }
    }

    /// Keep one watcher per member in step with the member set, and re-queue
    /// every object when the set changes in a way placement cares about.
    async fn manage_member_watchers(
        self: Arc<Self>,
        refs: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
        all: mpsc::UnboundedSender<()>,
        stop: CancellationToken,
    ) {
        let mut changes = self.shared.members.subscribe();
        let mut last_view: Option<PlacementView> = None;
        loop {
            let members = self.shared.members.snapshot();
            let view: BTreeMap<_, _> = members
                .iter()
                .map(|m| (m.name.clone(), (m.ready, m.labels.clone())))
                .collect();
            self.sync_watchers(&members, &refs, &all);
            if last_view.as_ref() != Some(&view) {
                last_view = Some(view);
                let _ = all.unbounded_send(());
            }
            tokio::select! {
                () = stop.cancelled() => break,
                r = changes.changed() => if r.is_err() { break },
            }
        }
    }

    fn sync_watchers(
        &self,
        members: &[Arc<Member>],
        refs: &mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
        all: &mpsc::UnboundedSender<()>,
    ) {
        let mut caches = self.caches.write();
        let names: BTreeSet<&str> = members.iter().map(|m| m.name.as_str()).collect();
        caches.retain(|name, cache| {
            let keep = names.contains(name.as_str());
            if !keep {
                cache.stop.cancel();
            }
            keep
        });
        for m in members {
            let restart = match caches.get(&m.name) {
                None => true,
                Some(c) => c.uid != m.uid || c.server != m.server || (!c.ready && m.ready),
            };
            if restart {
                if let Some(old) = caches.remove(&m.name) {
                    old.stop.cancel();
                }
                caches.insert(
                    m.name.clone(),
                    self.start_watcher(m, refs.clone(), all.clone()),
                );
            } else if let Some(c) = caches.get_mut(&m.name) {
                c.ready = m.ready;
            }
        }
    }

    fn start_watcher(
        &self,
        member: &Member,
        refs: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
        all: mpsc::UnboundedSender<()>,
    ) -> MemberCache {
        let ar = self.kind.resource.clone();
        let api: Api<DynamicObject> = Api::all_with(member.client.clone(), &ar);
        let wc = watcher::Config::default().labels(&format!("{MANAGED_LABEL}=true"));
        let writer = reflector::store::Writer::new(ar.clone());
        let store = writer.as_reader();
        let synced = Arc::new(AtomicBool::new(false));
        let stop = CancellationToken::new();
        let task_synced = synced.clone();
        let task_stop = stop.clone();
        let cluster = member.name.clone();
        let kind = self.kind.id();
        tokio::spawn(async move {
            let mut stream = reflector::reflector(
                writer,
                watch_fn(api, wc).modify(slim_copy).default_backoff(),
            )
            .boxed();
            loop {
                let event = tokio::select! {
                    () = task_stop.cancelled() => break,
                    e = stream.next() => e,
                };
                match event {
                    None => break,
                    Some(Ok(Event::Apply(o) | Event::Delete(o))) => {
                        let mut r = ObjectRef::new_with(&o.name_any(), ar.clone());
                        if let Some(ns) = o.namespace() {
                            r = r.within(&ns);
                        }
                        let _ = refs.unbounded_send(r);
                    }
                    Some(Ok(Event::InitDone)) => {
                        task_synced.store(true, Ordering::Release);
                        let _ = all.unbounded_send(());
                    }
                    Some(Ok(Event::Init | Event::InitApply(_))) => {}
                    Some(Err(err)) => {
                        tracing::debug!(%cluster, %kind, error = %err, "member watch failed; retrying");
                    }
                }
            }
        });
        MemberCache {
            uid: member.uid.clone(),
            server: member.server.clone(),
            ready: member.ready,
            store,
            synced,
            stop,
        }
    }

    fn cache_of(&self, cluster: &str) -> Option<(Store<DynamicObject>, bool)> {
        self.caches
            .read()
            .get(cluster)
            .map(|c| (c.store.clone(), c.synced.load(Ordering::Acquire)))
    }

    fn object_ref(&self, name: &str, ns: Option<&str>) -> ObjectRef<DynamicObject> {
        let r = ObjectRef::new_with(name, self.kind.resource.clone());
        match ns {
            Some(ns) => r.within(ns),
            None => r,
        }
    }

    fn fed_api(&self, ns: Option<&str>) -> Api<DynamicObject> {
        match ns {
            Some(ns) => Api::namespaced_with(self.shared.fed.clone(), ns, &self.kind.resource),
            None => Api::all_with(self.shared.fed.clone(), &self.kind.resource),
        }
    }

    fn timeout(&self) -> Duration {
        self.shared.options.member_request_timeout
    }

    fn note_failure(&self, uid: &str, cluster: &str) -> Duration {
        let mut f = self.failures.lock();
        let n = f.entry((uid.to_string(), cluster.to_string())).or_insert(0);
        *n = n.saturating_add(1);
        backoff(*n)
    }

    fn note_success(&self, uid: &str, cluster: &str) {
        self.failures
            .lock()
            .remove(&(uid.to_string(), cluster.to_string()));
    }
}

/// The wait before retry `n` (1-based): 5 s doubling, at most 1 min.
fn backoff(n: u32) -> Duration {
    let shift = n.saturating_sub(1).min(8);
    (BACKOFF_MIN * (1u32 << shift)).min(BACKOFF_MAX)
}

fn error_policy(_obj: Arc<DynamicObject>, err: &Error, ctx: Arc<TypeSync>) -> Action {
    tracing::debug!(kind = %ctx.kind.id(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(1))
}

/// A member call's failure, with the member's own message when it sent a
/// Status.
#[derive(Debug)]
struct MemberError {
    code: u16,
    message: String,
}

impl MemberError {
    fn transport(message: String) -> Self {
        Self { code: 0, message }
    }
    fn not_found(&self) -> bool {
        self.code == 404
    }
}

impl std::fmt::Display for MemberError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Send a request to a member and read its JSON answer, with the timeout.
async fn send(
    client: &kube::Client,
    req: http::Request<Vec<u8>>,
    timeout: Duration,
) -> Result<(StatusCode, Value), MemberError> {
    let call = async {
        let res = client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(|e| MemberError::transport(e.to_string()))?;
        let status = res.status();
        let bytes = res
            .into_body()
            .collect_bytes()
            .await
            .map_err(|e| MemberError::transport(e.to_string()))?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            Ok((status, body))
        } else {
            let message = body
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{status}: {}", String::from_utf8_lossy(&bytes)));
            Err(MemberError {
                code: status.as_u16(),
                message,
            })
        }
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(r) => r,
        Err(_) => Err(MemberError::transport(format!(
            "no answer within {}s",
            timeout.as_secs_f64()
        ))),
    }
}

/// What the controller's cache keeps of a federated object: its metadata
/// without managedFields, and a Secret's `type` (which decides whether it is
/// propagated at all).
fn slim(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
    let kept = obj.data.get("type").cloned();
    obj.data = match kept {
        Some(t) => json!({ "type": t }),
        None => json!({}),
    };
}

/// What a member cache keeps of a copy: everything but managedFields and
/// status, which the in-sync check never reads.
fn slim_copy(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
    if let Some(m) = obj.data.as_object_mut() {
        m.remove("status");
    }
}

fn as_value(obj: &DynamicObject, kind: &FederatedKind) -> Result<Value, serde_json::Error> {
    let mut v = serde_json::to_value(obj)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), json!(kind.resource.api_version));
        m.insert("kind".into(), json!(kind.resource.kind));
    }
    Ok(v)
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn is_ours(actual: &Value, uid: &str) -> (bool, bool) {
    let managed = actual
        .pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_LABEL))
        .and_then(Value::as_str)
        == Some("true");
    let origin = actual
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ORIGIN_UID_ANNOTATION))
        .and_then(Value::as_str)
        == Some(uid);
    (managed, origin)
}

/// What happened in one cluster during a reconcile.
struct Outcome {
    record: Option<ClusterRecord>,
    event: Option<(EventType, &'static str)>,
    retry: Option<Duration>,
}

impl Outcome {
    fn keep(record: ClusterRecord) -> Self {
        Self {
            record: Some(record),
            event: None,
            retry: None,
        }
    }
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<TypeSync>) -> Result<Action, Error> {
    let fed = as_value(&obj, &ctx.kind)?;
    let name = obj.name_any();
    let ns = obj.namespace();
    let Some(uid) = obj.uid() else {
        return Ok(Action::await_change());
    };
    let has_finalizer = obj.finalizers().iter().any(|f| f == DELETE_FINALIZER);
    if obj.meta().deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        return delete_everywhere(&ctx, &fed, &name, ns.as_deref(), &uid, &obj).await;
    }
    if !member_object::is_propagated(&ctx.kind.resource.plural, &fed) {
        return Ok(Action::await_change());
    }
    // A federation with no member cluster is a plain API server: objects
    // get the finalizer (and a record) once a cluster joins, as every
    // change of the member set re-queues every object.
    let members = ctx.shared.members.snapshot();
    if members.is_empty() {
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        let mut finalizers = obj.finalizers().to_vec();
        finalizers.push(DELETE_FINALIZER.to_string());
        let patch = json!({"metadata": {
            "resourceVersion": obj.resource_version(),
            "finalizers": finalizers,
        }});
        match ctx
            .fed_api(ns.as_deref())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            // The change comes back through the watch and is reconciled then.
            Ok(_) => return Ok(Action::await_change()),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {
                return Ok(Action::requeue(Duration::from_millis(200)));
            }
            Err(e) => return Err(e.into()),
        }
    }

    // The cached object is metadata only (see `slim`): read the content to
    // propagate, from the federation's own watch cache.
    let obj = match ctx.fed_api(ns.as_deref()).get_opt(&name).await? {
        Some(o) if o.uid().as_deref() == Some(uid.as_str()) => Arc::new(o),
        // Gone or re-created: its own watch event reconciles it.
        _ => return Ok(Action::await_change()),
    };
    if obj.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let fed = as_value(&obj, &ctx.kind)?;

    let placement = placement::placement_of(&fed);
    if let Placement::Invalid(msg) = &placement {
        let mut seen = ctx.placement_errors.lock();
        if seen.get(&uid) != Some(msg) {
            seen.insert(uid.clone(), msg.clone());
            ctx.shared.recorder.record(
                &fed,
                EventType::Warning,
                "InvalidClusterSelector",
                format!(
                    "annotation {}: {msg}; the object is placed on no cluster",
                    placement::CLUSTER_SELECTOR_ANNOTATION
                ),
            );
        }
    } else {
        ctx.placement_errors.lock().remove(&uid);
    }

    let previous = record::read_record(&fed);
    let generation = obj.meta().generation.unwrap_or(0);
    let jobs = members.iter().map(|m| {
        let ctx = ctx.clone();
        let fed = &fed;
        let placement = &placement;
        let prev = previous.get(&m.name).cloned();
        let uid = uid.clone();
        let name = name.clone();
        let ns = ns.clone();
        async move {
            let selected = placement.selects(&m.labels);
            let outcome = if selected && m.ready {
                sync_cluster(&ctx, m, fed, &name, ns.as_deref(), &uid, prev, generation).await
            } else if selected {
                let mut r = prev.unwrap_or_default();
                if r.state != SyncState::Failed || r.message.is_empty() {
                    r.state = SyncState::Pending;
                    r.message = format!("cluster {} is not ready", m.name);
                }
                Outcome::keep(r)
            } else {
                remove_unselected(&ctx, m, fed, &name, ns.as_deref(), &uid, prev).await
            };
            (m.name.clone(), outcome)
        }
    });
    let outcomes = futures::future::join_all(jobs).await;

    let mut next = PropagationRecord::new();
    let mut events: BTreeMap<(&'static str, bool), Vec<String>> = BTreeMap::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut retry: Option<Duration> = None;
    for (cluster, outcome) in outcomes {
        if let Some((kind, reason)) = outcome.event {
            events
                .entry((reason, kind == EventType::Warning))
                .or_default()
                .push(cluster.clone());
        }
        if let Some(r) = &outcome.record
            && r.state == SyncState::Failed
            && outcome.event.is_some()
        {
            failures.push((cluster.clone(), r.message.clone()));
        }
        if let Some(d) = outcome.retry {
            retry = Some(retry.map_or(d, |r| r.min(d)));
        }
        if let Some(r) = outcome.record {
            next.insert(cluster, r);
        }
    }
    for ((reason, warning), clusters) in events {
        let message = if warning {
            failures
                .iter()
                .filter(|(c, _)| clusters.contains(c))
                .map(|(c, m)| format!("cluster {c}: {m}"))
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            event_message(reason, &clusters)
        };
        let message = if message.is_empty() {
            event_message(reason, &clusters)
        } else {
            message
        };
        let kind = if warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        ctx.shared.recorder.record(&fed, kind, reason, message);
    }

    if next != previous {
        let patch = json!({"metadata": {"annotations": {
            PROPAGATION_ANNOTATION: record::record_json(&next)
        }}});
        match ctx
            .fed_api(ns.as_deref())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(match retry {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

fn event_message(reason: &str, clusters: &[String]) -> String {
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

/// Bring one selected, Ready cluster in step.
#[allow(clippy::too_many_arguments)] // the parts of one reconcile, named
async fn sync_cluster(
    ctx: &TypeSync,
    member: &Member,
    fed: &Value,
    name: &str,
    ns: Option<&str>,
    uid: &str,
    prev: Option<ClusterRecord>,
    generation: i64,
) -> Outcome {
    let prev = prev.unwrap_or_default();
    let failed = |message: String, reason: &'static str| {
        let retry = ctx.note_failure(uid, &member.name);
        let event = (prev.state != SyncState::Failed || prev.message != message)
            .then_some((EventType::Warning, reason));
        Outcome {
            record: Some(ClusterRecord {
                state: SyncState::Failed,
                observed_generation: prev.observed_generation,
                message,
                hash: prev.hash.clone(),
                resource_version: prev.resource_version.clone(),
            }),
            event,
            retry: Some(retry),
        }
    };
    let desired = match member_object::member_copy(&ctx.kind.resource.plural, fed, &member.name) {
        Ok(d) => d,
        Err(msg) => return failed(format!("overrides: {msg}"), "FailedUpdateInCluster"),
    };
    let hash = member_object::content_hash(&desired);

    let Some((store, synced)) = ctx.cache_of(&member.name) else {
        return Outcome::keep(pending(prev, "waiting for the watch on the cluster"));
    };
    if !synced {
        return Outcome {
            retry: Some(Duration::from_secs(2)),
            ..Outcome::keep(pending(
                prev,
                "waiting for the watch on the cluster to sync",
            ))
        };
    }
    let actual: Option<Value> = match store.get(&ctx.object_ref(name, ns)) {
        Some(o) => serde_json::to_value(&*o).ok(),
        None => match get_copy(ctx, member, name, ns).await {
            Ok(v) => v,
            Err(e) => return failed(e.message, "FailedUpdateInCluster"),
        },
    };

    let (managed, origin) = actual.as_ref().map_or((false, false), |a| is_ours(a, uid));
    if let Some(actual) = &actual
        && managed
        && origin
        && prev.hash.as_deref() == Some(hash.as_str())
        && (prev.resource_version.as_deref() == str_at(actual, "/metadata/resourceVersion")
            || member_object::is_subset(&desired, actual))
    {
        ctx.note_success(uid, &member.name);
        return Outcome::keep(ClusterRecord {
            state: SyncState::InSync,
            observed_generation: generation,
            message: String::new(),
            hash: prev.hash.clone(),
            resource_version: prev.resource_version.clone(),
        });
    }
    let adopting = actual.is_some() && !managed;
    if adopting
        && fed
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(CONFLICT_RESOLUTION_ANNOTATION))
            .and_then(Value::as_str)
            == Some("abort")
    {
        let message = format!(
            "{} {name} already exists in cluster {} and is not managed by the federation; \
             not adopted because of {CONFLICT_RESOLUTION_ANNOTATION}: abort \
             (delete it there or remove the annotation)",
            ctx.kind.resource.kind, member.name
        );
        let mut out = failed(message, "FailedAdoptInCluster");
        out.retry = Some(BACKOFF_MAX);
        return out;
    }

    let created = actual.is_none();
    let failed_reason = if created {
        "FailedCreateInCluster"
    } else {
        "FailedUpdateInCluster"
    };
    let mut result = apply(ctx, member, &desired, name, ns).await;
    if let Err(e) = &result
        && e.not_found()
        && let Some(ns) = ns
        && ensure_namespace(ctx, member, ns).await
    {
        result = apply(ctx, member, &desired, name, Some(ns)).await;
    }
    match result {
        Ok(applied) => {
            ctx.note_success(uid, &member.name);
            let reason = if created {
                "CreateInCluster"
            } else if adopting {
                "Adopted"
            } else {
                "UpdateInCluster"
            };
            tracing::debug!(cluster = %member.name, kind = %ctx.kind.id(), %name, reason, "propagated");
            Outcome {
                record: Some(ClusterRecord {
                    state: SyncState::InSync,
                    observed_generation: generation,
                    message: String::new(),
                    hash: Some(hash),
                    resource_version: str_at(&applied, "/metadata/resourceVersion")
                        .map(str::to_string),
                }),
                event: Some((EventType::Normal, reason)),
                retry: None,
            }
        }
        Err(e) if e.not_found() && ctx.kind.custom => Outcome {
            retry: Some(Duration::from_secs(2)),
            ..Outcome::keep(pending(
                prev,
                &format!(
                    "waiting for {} to be served in the cluster: {}",
                    ctx.kind.id(),
                    e.message
                ),
            ))
        },
        Err(e) => failed(e.message, failed_reason),
    }
}

fn pending(mut prev: ClusterRecord, why: &str) -> ClusterRecord {
    prev.state = SyncState::Pending;
    prev.message = why.to_string();
    prev
}

/// Server-side apply of the member copy (forced: the federation owns the
/// fields it sets).
async fn apply(
    ctx: &TypeSync,
    member: &Member,
    desired: &Value,
    name: &str,
    ns: Option<&str>,
) -> Result<Value, MemberError> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let req = Request::new(DynamicObject::url_path(&ctx.kind.resource, ns))
        .patch(name, &params, &Patch::Apply(desired))
        .map_err(|e| MemberError::transport(e.to_string()))?;
    send(&member.client, req, ctx.timeout())
        .await
        .map(|(_, v)| v)
}

/// Create the namespace `ns` in a member from its federated twin, before
/// an object in it. False when the federation does not propagate it.
async fn ensure_namespace(ctx: &TypeSync, member: &Member, ns: &str) -> bool {
    let kind = kinds::namespaces();
    let api: Api<DynamicObject> = Api::all_with(ctx.shared.fed.clone(), &kind.resource);
    let Ok(obj) = api.get(ns).await else {
        return false;
    };
    let Ok(fed_ns) = as_value(&obj, &kind) else {
        return false;
    };
    if !member_object::is_propagated("namespaces", &fed_ns) {
        return false;
    }
    let Ok(copy) = member_object::member_copy("namespaces", &fed_ns, &member.name) else {
        return false;
    };
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let Ok(req) = Request::new(DynamicObject::url_path(&kind.resource, None)).patch(
        ns,
        &params,
        &Patch::Apply(&copy),
    ) else {
        return false;
    };
    match send(&member.client, req, ctx.timeout()).await {
        Ok(_) => {
            tracing::debug!(cluster = %member.name, namespace = ns, "created the namespace first");
            true
        }
        Err(e) => {
            tracing::debug!(cluster = %member.name, namespace = ns, error = %e, "cannot create the namespace");
            false
        }
    }
}

/// Whether our copy of the object may be in `member` (the record says we
/// applied it, or the cache holds a copy of ours).
fn may_have_copy(
    ctx: &TypeSync,
    member: &Member,
    name: &str,
    ns: Option<&str>,
    uid: &str,
    prev: Option<&ClusterRecord>,
) -> bool {
    if prev.is_some_and(|r| r.hash.is_some() || r.resource_version.is_some()) {
        return true;
    }
    match ctx.cache_of(&member.name) {
        Some((store, true)) => store.get(&ctx.object_ref(name, ns)).is_some_and(|o| {
            o.annotations()
                .get(ORIGIN_UID_ANNOTATION)
                .map(String::as_str)
                == Some(uid)
        }),
        // Not synced yet: do not guess.
        _ => false,
    }
}

/// Delete our copy from a cluster the placement no longer selects (when
/// it is Ready; else keep the record and try when it is back).
async fn remove_unselected(
    ctx: &TypeSync,
    member: &Member,
    _fed: &Value,
    name: &str,
    ns: Option<&str>,
    uid: &str,
    prev: Option<ClusterRecord>,
) -> Outcome {
    if !may_have_copy(ctx, member, name, ns, uid, prev.as_ref()) {
        return Outcome {
            record: None,
            event: None,
            retry: None,
        };
    }
    if !member.ready {
        return Outcome::keep(pending(
            prev.unwrap_or_default(),
            "no longer selected; the copy is removed when the cluster is ready",
        ));
    }
    match delete_copy(ctx, member, name, ns, uid).await {
        Ok(deleted) => {
            ctx.note_success(uid, &member.name);
            Outcome {
                record: None,
                event: deleted.then_some((EventType::Normal, "DeleteInCluster")),
                retry: None,
            }
        }
        Err(e) => {
            let retry = ctx.note_failure(uid, &member.name);
            let prev = prev.unwrap_or_default();
            let event = (prev.message != e.message)
                .then_some((EventType::Warning, "FailedDeleteInCluster"));
            Outcome {
                record: Some(ClusterRecord {
                    state: SyncState::Failed,
                    message: e.message,
                    ..prev
                }),
                event,
                retry: Some(retry),
            }
        }
    }
}

/// The object `name` in `member` as it is there; `None` when absent.
async fn get_copy(
    ctx: &TypeSync,
    member: &Member,
    name: &str,
    ns: Option<&str>,
) -> Result<Option<Value>, MemberError> {
    let get = Request::new(DynamicObject::url_path(&ctx.kind.resource, ns))
        .get(name, &Default::default())
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match send(&member.client, get, ctx.timeout()).await {
        Ok((_, v)) => Ok(Some(v)),
        Err(e) if e.not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Delete our copy in a member; Ok(false) when there was none (or it is
/// not ours: never delete what the federation does not manage).
async fn delete_copy(
    ctx: &TypeSync,
    member: &Member,
    name: &str,
    ns: Option<&str>,
    uid: &str,
) -> Result<bool, MemberError> {
    let Some(actual) = get_copy(ctx, member, name, ns).await? else {
        return Ok(false);
    };
    let (managed, origin) = is_ours(&actual, uid);
    if !(managed && origin) {
        return Ok(false);
    }
    let mut dp = DeleteParams::background();
    if let Some(member_uid) = str_at(&actual, "/metadata/uid") {
        dp.preconditions = Some(kube::api::Preconditions {
            uid: Some(member_uid.to_string()),
            resource_version: None,
        });
    }
    let del = Request::new(DynamicObject::url_path(&ctx.kind.resource, ns))
        .delete(name, &dp)
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match send(&member.client, del, ctx.timeout()).await {
        Ok(_) => Ok(true),
        Err(e) if e.not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Let our copy in a member go (Orphan): remove our label and annotation.
async fn orphan_copy(
    ctx: &TypeSync,
    member: &Member,
    name: &str,
    ns: Option<&str>,
    uid: &str,
) -> Result<bool, MemberError> {
    let Some(actual) = get_copy(ctx, member, name, ns).await? else {
        return Ok(false);
    };
    if !is_ours(&actual, uid).1 {
        return Ok(false);
    }
    let patch = json!({"metadata": {
        "labels": {MANAGED_LABEL: null},
        "annotations": {ORIGIN_UID_ANNOTATION: null},
    }});
    let req = Request::new(DynamicObject::url_path(&ctx.kind.resource, ns))
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .map_err(|e| MemberError::transport(e.to_string()))?;
    match send(&member.client, req, ctx.timeout()).await {
        Ok(_) => Ok(true),
        Err(e) if e.not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The federated object is being deleted: delete (or orphan) every member
/// copy, then drop our finalizer (and `orphan`, which the garbage
/// collector leaves to us).
async fn delete_everywhere(
    ctx: &Arc<TypeSync>,
    fed: &Value,
    name: &str,
    ns: Option<&str>,
    uid: &str,
    obj: &DynamicObject,
) -> Result<Action, Error> {
    let orphan = obj.finalizers().iter().any(|f| f == ORPHAN_FINALIZER);
    let previous = record::read_record(fed);
    let members = ctx.shared.members.snapshot();
    let jobs = members.iter().map(|m| {
        let prev = previous.get(&m.name);
        async move {
            let candidate = may_have_copy(ctx, m, name, ns, uid, prev)
                || matches!(ctx.cache_of(&m.name), Some((_, false)));
            if !candidate {
                return (m.name.clone(), Ok(false));
            }
            if !m.ready {
                if prev.is_some() {
                    return (
                        m.name.clone(),
                        Err(format!("cluster {} is not ready", m.name)),
                    );
                }
                return (m.name.clone(), Ok(false));
            }
            let r = if orphan {
                orphan_copy(ctx, m, name, ns, uid).await
            } else {
                delete_copy(ctx, m, name, ns, uid).await
            };
            (m.name.clone(), r.map_err(|e| e.message))
        }
    });
    let results = futures::future::join_all(jobs).await;
    let mut done = Vec::new();
    let mut waiting = Vec::new();
    for (cluster, r) in results {
        match r {
            Ok(true) => done.push(cluster),
            Ok(false) => {}
            Err(msg) => waiting.push((cluster, msg)),
        }
    }
    if !done.is_empty() {
        let reason = if orphan {
            "OrphanInCluster"
        } else {
            "DeleteInCluster"
        };
        ctx.shared
            .recorder
            .record(fed, EventType::Normal, reason, event_message(reason, &done));
    }
    if !waiting.is_empty() {
        let message = format!(
            "waiting to delete the copies in: {}",
            waiting
                .iter()
                .map(|(c, m)| format!("cluster {c} ({m})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut seen = ctx.placement_errors.lock();
        if seen.get(uid) != Some(&message) {
            seen.insert(uid.to_string(), message.clone());
            ctx.shared
                .recorder
                .record(fed, EventType::Warning, "FailedDeleteInCluster", message);
        }
        return Ok(Action::requeue(BACKOFF_MIN));
    }
    let finalizers: Vec<&String> = obj
        .finalizers()
        .iter()
        .filter(|f| *f != DELETE_FINALIZER && !(orphan && *f == ORPHAN_FINALIZER))
        .collect();
    let patch = json!({"metadata": {
        "resourceVersion": obj.resource_version(),
        "finalizers": finalizers,
    }});
    match ctx
        .fed_api(ns)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        Err(e) => return Err(e.into()),
    }
    ctx.placement_errors.lock().remove(uid);
    ctx.failures.lock().retain(|(u, _), _| u != uid);
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_starts_at_five_seconds_and_doubles_to_a_minute() {
        assert_eq!(backoff(1), Duration::from_secs(5));
        assert_eq!(backoff(2), Duration::from_secs(10));
        assert_eq!(backoff(3), Duration::from_secs(20));
        assert_eq!(backoff(4), Duration::from_secs(40));
        assert_eq!(backoff(5), Duration::from_secs(60));
        assert_eq!(backoff(50), Duration::from_secs(60));
    }

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
    fn ownership_needs_the_label_and_our_uid() {
        let v = json!({"metadata": {"labels": {MANAGED_LABEL: "true"},
            "annotations": {ORIGIN_UID_ANNOTATION: "u1"}}});
        assert_eq!(is_ours(&v, "u1"), (true, true));
        assert_eq!(is_ours(&v, "u2"), (true, false));
        assert_eq!(is_ours(&json!({"metadata": {}}), "u1"), (false, false));
    }
}
