//! Sync (kubefed's `sync` controller; SPEC §3.4, §3.5): per federated kind,
//! one kube-runtime controller keeps every federated object applied to
//! each Ready member cluster its placement selects.
//!
//! Per kind ([`SyncController`]):
//! - the controller watches the kind in the federation (in-process client);
//! - it reads the members through the kind's shared [`FederatedInformer`]
//!   and re-queues a federated object on every change of one of its copies
//!   (drift repair), and every object when a cluster is added, becomes
//!   Ready or not, changes labels or is removed;
//! - its [`DeletionHelper`] keeps the objects' [`PropagationRecord`](crate::version::PropagationRecord)s and
//!   does deletion (the user's object is never written: SPEC §3.8).
//!
//! A reconcile of one object: make sure it has its record, compute the
//! per-cluster fields of a [`ReplicaScheduler`] if one is set (scheduling's
//! extension point), then for each member:
//! - selected and Ready: build the member copy
//!   ([`member_object::member_copy_with`]); if the record of what was last
//!   applied there (hash of the copy, member resourceVersion) still matches
//!   and the member's copy still carries every field we applied, nothing is
//!   sent (kubefed's version cache, kept in the record so it survives
//!   restarts); else the copy is server-side applied ([`dispatch::apply`]).
//!   A member object of the same name that is not ours is left alone (the
//!   cluster is `Failed` in the record, event `FailedAdoptInCluster`)
//!   unless the object says `federation.kubernetes.io/conflict-resolution:
//!   adopt` or the server runs with `--conflict-resolution=adopt` (then it
//!   is applied over: event `Adopted`; Karmada's default is Abort too);
//!   a copy that an override made into something never propagated (a
//!   Secret's type turned into a service-account token, a CRD's federated
//!   label removed…) is not applied (`Failed`, event `FailedCopyCheck`);
//! - not selected: our copy there is deleted;
//! - not Ready: left Pending, retried when the cluster comes back.
//!
//! An object the member namespace denylist keeps home (a denied Namespace,
//! or an object in one) is not propagated, and says so once with a
//! `NotPropagated` event.
//!
//! Clusters are handled concurrently; a failure in one never blocks the
//! others and is retried with a per-cluster backoff (5 s doubling to 1 min,
//! as Federation v1). The record's status is written only when it changed.

pub mod drift;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use futures::channel::mpsc;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt as _, watcher as watch_fn};
use kube::{Resource as _, ResourceExt as _};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use self::drift::DriftPolicy;
use crate::Context;
use crate::deletion::{DeletionHelper, Tracked, event_message};
use crate::dispatch::{self, MemberError};
use crate::events::EventType;
use crate::informer::{Change, FederatedInformer, ObjectKey};
use crate::kinds::{self, FederatedKind};
use crate::member_object::{
    self, CONFLICT_RESOLUTION_ANNOTATION, ClusterFields, FEDERATED_CRD_LABEL, NamespaceDenylist,
};
use crate::members::Member;
use crate::options::ConflictResolution;
use crate::overrides::OVERRIDES_ANNOTATION;
use crate::placement::{self, Placement};
use crate::rollout;
use crate::version::{ClusterRecord, PropagationState, SyncState};

/// Federation v1's backoff bounds.
const BACKOFF_MIN: Duration = Duration::from_secs(5);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// How many objects of one kind are reconciled at once.
const CONCURRENCY: u16 = 32;

/// One member cluster as a [`ReplicaScheduler`] sees it.
#[derive(Clone, Debug)]
pub struct ClusterChoice {
    /// The member (name, labels, readiness).
    pub member: Arc<Member>,
    /// Whether the object's placement (cluster selector) selects it.
    pub selected: bool,
}

/// What a [`ReplicaScheduler`] is given for one federated object.
pub struct ScheduleInput<'a> {
    /// The object's kind.
    pub kind: &'a FederatedKind,
    /// The federated object (full, as JSON).
    pub object: &'a Value,
    /// Every member, with whether placement selects it.
    pub clusters: &'a [ClusterChoice],
    /// The kind's federated informer (the members' copies, with status).
    pub informer: &'a FederatedInformer,
    /// The record of the last reconcile (per cluster: state, replicas).
    pub previous: &'a PropagationState,
}

/// Scheduling's extension point: per cluster, the fields its copy gets on
/// top of the federated object's (e.g. `spec.replicas` = that cluster's
/// share) and the fields it is not sent (e.g. `spec.replicas` of a workload
/// an HPA scales in the member). Set on [`Context::scheduler`]; called on
/// every reconcile of every object of every kind, so it must be cheap and
/// pure (read the informer, do no I/O).
pub trait ReplicaScheduler: Send + Sync + 'static {
    /// The per-cluster fields for `input.object`, or `None` to send the
    /// object as it is everywhere. Clusters absent from the answer get the
    /// object as it is.
    fn schedule(&self, input: &ScheduleInput<'_>) -> Option<BTreeMap<String, ClusterFields>>;

    /// Objects of `kind` whose schedule changed for a reason sync does not
    /// watch (an HPA created, a shortfall that matured): sync reconciles
    /// each key it receives. Asked once per kind; `None`: nothing to add.
    fn wakeups(&self, _kind: &FederatedKind) -> Option<mpsc::UnboundedReceiver<ObjectKey>> {
        None
    }
}

/// Run a [`SyncController`] for each built-in federated kind, and one per
/// federated CRD while it exists, except the kinds
/// `--federation-controllers-disabled-for` names.
pub async fn run(ctx: Arc<Context>, stop: CancellationToken) -> anyhow::Result<()> {
    // Every caller of `member_object::is_propagated` (the namespace-first
    // write, admission) follows the configured denylist from here on.
    member_object::set_namespace_denylist(NamespaceDenylist::new(
        &ctx.options.member_namespace_denylist,
    ));
    let mut tasks = JoinSet::new();
    for kind in ctx.options.builtin_kinds.iter().cloned() {
        if ctx.options.disabled_for(&kind) {
            tracing::info!(kind = %kind.id(), "built-in sync disabled by flag");
            continue;
        }
        tasks.spawn(SyncController::run(ctx.clone(), kind, stop.child_token()));
    }
    tasks.spawn(custom_resource_kinds(ctx.clone(), stop.clone()));
    stop.cancelled().await;
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Start a [`SyncController`] for the custom resources of every CRD
/// labelled `federation.kubernetes.io/federated: "true"` once it is
/// Established, and stop it when the CRD goes (or loses the label).
async fn custom_resource_kinds(ctx: Arc<Context>, stop: CancellationToken) {
    let api: Api<CustomResourceDefinition> = Api::all(ctx.fed.clone());
    let wc = watcher::Config::default().labels(&format!("{FEDERATED_CRD_LABEL}=true"));
    let mut running: HashMap<String, (FederatedKind, CancellationToken)> = HashMap::new();
    let mut tasks = JoinSet::new();
    let mut stream = watch_fn(api, wc).default_backoff().boxed();
    let stop_kind = |ctx: &Context, kind: &FederatedKind, token: &CancellationToken| {
        token.cancel();
        ctx.informers.remove(kind);
        ctx.objects.remove(kind);
    };
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
                match kinds::from_crd(&crd) {
                    Some(kind) if ctx.options.disabled_for(&kind) => {
                        if let Some((old, token)) = running.remove(&name) {
                            stop_kind(&ctx, &old, &token);
                        }
                    }
                    Some(kind) => {
                        let same = running.get(&name).is_some_and(|(k, _)| {
                            k.resource.api_version == kind.resource.api_version
                                && k.resource.plural == kind.resource.plural
                        });
                        if !same {
                            if let Some((old, token)) = running.remove(&name) {
                                stop_kind(&ctx, &old, &token);
                            }
                            tracing::info!(crd = %name, kind = %kind.id(), "propagating custom resources");
                            let token = stop.child_token();
                            tasks.spawn(SyncController::run(
                                ctx.clone(),
                                kind.clone(),
                                token.clone(),
                            ));
                            running.insert(name, (kind, token));
                        }
                    }
                    None => {
                        if let Some((old, token)) = running.remove(&name) {
                            stop_kind(&ctx, &old, &token);
                        }
                    }
                }
            }
            Event::Delete(crd) => {
                if let Some((old, token)) = running.remove(&crd.name_any()) {
                    tracing::info!(crd = %crd.name_any(), "stopped propagating custom resources");
                    stop_kind(&ctx, &old, &token);
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

/// The sync of one federated kind.
pub struct SyncController {
    ctx: Arc<Context>,
    kind: FederatedKind,
    informer: Arc<FederatedInformer>,
    deletion: Arc<DeletionHelper>,
    /// Consecutive failures per (object uid, cluster).
    failures: Mutex<HashMap<(String, String), u32>>,
    /// The last placement error reported per object uid (no repeats).
    placement_errors: Mutex<HashMap<String, String>>,
    /// The last invalid drift policy reported per object uid (no repeats).
    drift_policy_errors: Mutex<HashMap<String, String>>,
    /// The last invalid rollout strategy reported per object uid (no
    /// repeats).
    rollout_errors: Mutex<HashMap<String, String>>,
    /// `--member-namespace-denylist`.
    denylist: NamespaceDenylist,
    /// The uids whose `NotPropagated` event was recorded (no repeats).
    denied_reported: Mutex<HashSet<String>>,
    /// Clusters whose server refused a create-only apply (400: it does not
    /// ignore a resourceVersion on create, as an older Ubernetes): their
    /// cache misses are read first (GET), as before.
    no_create_only: Mutex<HashSet<String>>,
    /// Our applies whose watch event has not come yet: (cluster, key) →
    /// the resourceVersion the apply returned, or the apply is still in
    /// flight (see [`OwnWrite`]). That event is our own write coming back
    /// and re-queues nothing.
    applied: OwnWrites,
}

/// An apply of ours to one copy, as [`SyncController::is_own_write`]
/// judges the copy's watch events by.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OwnWrite {
    /// Sent, no answer yet: the member's watch event may come before the
    /// answer (they travel apart), so the resourceVersions of the events
    /// seen meanwhile are kept and judged when the answer comes.
    InFlight(Vec<String>),
    /// Answered with this resourceVersion; its event has not come yet.
    Applied(String),
}

/// Our applies whose watch event has not come yet, per (cluster, key):
/// that event is our own write coming back and re-queues nothing. The
/// event may come before the apply's answer (they travel apart): while the
/// apply is in flight its events are held back and judged when the answer
/// comes ([`later_write`]), so the object is not reconciled a second time
/// (and its copies fetched again) for its own write.
#[derive(Default)]
struct OwnWrites(Mutex<HashMap<(String, ObjectKey), OwnWrite>>);

impl OwnWrites {
    /// Our apply of `key` to `cluster` is about to be sent.
    fn sending(&self, cluster: &str, key: ObjectKey) {
        let mut applied = self.0.lock();
        if applied.len() >= APPLIED_MAX {
            applied.clear();
        }
        applied.insert((cluster.to_string(), key), OwnWrite::InFlight(Vec::new()));
    }

    /// Our apply of `key` to `cluster` returned `resource_version` (`None`:
    /// it failed). True when an event that came while it was in flight was
    /// another, later write: the object must be reconciled again.
    fn answered(&self, cluster: &str, key: ObjectKey, resource_version: Option<&str>) -> bool {
        let mut applied = self.0.lock();
        let k = (cluster.to_string(), key);
        let seen = match applied.remove(&k) {
            Some(OwnWrite::InFlight(seen)) => seen,
            _ => Vec::new(),
        };
        let again = seen.iter().any(|s| later_write(s, resource_version));
        let came = resource_version.is_some_and(|rv| seen.iter().any(|s| s == rv));
        if let Some(rv) = resource_version
            && !came
        {
            if applied.len() >= APPLIED_MAX {
                applied.clear();
            }
            applied.insert(k, OwnWrite::Applied(rv.to_string()));
        }
        again
    }

    /// Whether the event of the copy `key` in `cluster` at
    /// `resource_version` is our own write's (or came while our apply was
    /// in flight: [`Self::answered`] judges it).
    fn is_own(&self, cluster: &str, key: &ObjectKey, resource_version: &str) -> bool {
        let mut applied = self.0.lock();
        let k = (cluster.to_string(), key.clone());
        match applied.get_mut(&k) {
            Some(OwnWrite::InFlight(seen)) => {
                seen.push(resource_version.to_string());
                true
            }
            Some(OwnWrite::Applied(ours)) => {
                let ours = ours == resource_version;
                applied.remove(&k);
                ours
            }
            None => false,
        }
    }
}

/// One apply of ours in flight ([`SyncController::note_sending`]).
struct InFlight<'a> {
    writes: &'a OwnWrites,
    cluster: String,
    key: Option<ObjectKey>,
}

impl InFlight<'_> {
    /// The apply returned `resource_version` (`None`: it failed); true:
    /// reconcile the object again ([`OwnWrites::answered`]).
    fn answered(mut self, resource_version: Option<&str>) -> bool {
        self.key
            .take()
            .is_some_and(|k| self.writes.answered(&self.cluster, k, resource_version))
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.writes.answered(&self.cluster, k, None);
        }
    }
}

/// Whether a watch event seen while our apply was in flight, at
/// resourceVersion `seen`, is a write other than ours that came after it
/// (ours returned `ours`): then the object must be reconciled again. An
/// earlier write is in what our apply returned; versions that are not
/// numbers are judged unequal = another write.
fn later_write(seen: &str, ours: Option<&str>) -> bool {
    let Some(ours) = ours else {
        return true;
    };
    if seen == ours {
        return false;
    }
    match (seen.parse::<u64>(), ours.parse::<u64>()) {
        (Ok(s), Ok(o)) => s > o,
        _ => true,
    }
}

/// More pending applies than this (events that never came: a relist, a
/// member gone) and the map is dropped (the cost: a few extra reconciles).
const APPLIED_MAX: usize = 1 << 18;

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("the federation API: {0}")]
    Federation(#[from] kube::Error),
    #[error("the federated object cannot be read: {0}")]
    Decode(#[from] serde_json::Error),
}

impl SyncController {
    /// Run the sync of `kind` until `stop`.
    pub async fn run(ctx: Arc<Context>, kind: FederatedKind, stop: CancellationToken) {
        let ar = kind.resource.clone();
        let informer = ctx.informers.for_kind(&kind);
        let deletion = DeletionHelper::new(
            ctx.fed.clone(),
            informer.clone(),
            ctx.recorder.clone(),
            ctx.options.member_request_timeout,
        );
        let this = Arc::new(Self {
            ctx: ctx.clone(),
            kind,
            informer: informer.clone(),
            deletion: deletion.clone(),
            failures: Mutex::new(HashMap::new()),
            placement_errors: Mutex::new(HashMap::new()),
            drift_policy_errors: Mutex::new(HashMap::new()),
            rollout_errors: Mutex::new(HashMap::new()),
            denylist: NamespaceDenylist::new(&ctx.options.member_namespace_denylist),
            denied_reported: Mutex::new(HashSet::new()),
            no_create_only: Mutex::new(HashSet::new()),
            applied: OwnWrites::default(),
        });
        let deletions = tokio::spawn(deletion.run(stop.clone()));
        let objects = ctx.objects.for_kind(&this.kind);
        // A copy's change re-queues its object, except the watch event of
        // our own apply (the reconcile that applied it recorded it).
        let own = Arc::downgrade(&this);
        let copy_ar = ar.clone();
        let copies = informer.watches(move |c: Change| {
            let ours = own.upgrade().is_some_and(|s| s.is_own_write(&c));
            (!ours).then(|| c.key.to_ref(&copy_ar))
        });
        // With no member joined there is nothing to sync: a change is not
        // even queued (a standalone server's every write would be), and a
        // member joining re-queues every object (`cluster_triggers`).
        let members = ctx.members.clone();
        let mut controller = objects
            .controller_while(move || !members.is_empty())
            .with_config(ControllerConfig::default().concurrency(CONCURRENCY))
            .reconcile_on(copies)
            .reconcile_all_on(informer.cluster_triggers());
        if let Some(keys) = ctx.scheduler.as_ref().and_then(|s| s.wakeups(&this.kind)) {
            controller = controller.reconcile_on(keys.map(move |k| k.to_ref(&ar)));
        }
        let closing = stop.clone();
        controller
            .graceful_shutdown_on(async move { closing.cancelled().await })
            .run(reconcile, error_policy, this.clone())
            .for_each(|_| async {})
            .await;
        stop.cancel();
        let _ = deletions.await;
    }

    fn timeout(&self) -> Duration {
        self.ctx.options.member_request_timeout
    }

    /// Our apply of `key` to `cluster` is about to be sent: answer the
    /// guard with its result (dropped unanswered, e.g. a cancelled
    /// reconcile: as a failure, so no entry is left holding events back).
    fn note_sending(&self, cluster: &str, key: ObjectKey) -> InFlight<'_> {
        self.applied.sending(cluster, key.clone());
        InFlight {
            writes: &self.applied,
            cluster: cluster.to_string(),
            key: Some(key),
        }
    }

    /// Whether `c` is the watch event of our own last apply.
    fn is_own_write(&self, c: &Change) -> bool {
        !c.deleted
            && c.resource_version
                .as_deref()
                .is_some_and(|rv| self.applied.is_own(&c.cluster, &c.key, rv))
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

    /// What to do with a member object of the same name that is not ours:
    /// the object's annotation (an unknown value: abort), else the flag.
    fn conflict_resolution(&self, fed: &Value) -> ConflictResolution {
        match fed
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(CONFLICT_RESOLUTION_ANNOTATION))
            .and_then(Value::as_str)
        {
            Some(v) => ConflictResolution::parse(v).unwrap_or(ConflictResolution::Abort),
            None => self.ctx.options.conflict_resolution,
        }
    }

    /// The rollout of `fed` across `choices` (SPEC §3.11), when it is a
    /// workload annotated with a rollout strategy; an unreadable strategy
    /// is reported once (Warning `InvalidRolloutStrategy`) and the
    /// template then goes everywhere at once.
    fn rollout_plan(
        &self,
        fed: &Value,
        uid: &str,
        choices: &[ClusterChoice],
        previous: &PropagationState,
        prev: Option<&rollout::RolloutStatus>,
    ) -> Option<rollout::Plan> {
        let workload = rollout::Workload::of(&self.kind)?;
        let strategy = match rollout::strategy_of(fed) {
            Ok(s) => {
                self.rollout_errors.lock().remove(uid);
                s?
            }
            Err(why) => {
                let mut seen = self.rollout_errors.lock();
                if seen.get(uid) != Some(&why) {
                    seen.insert(uid.to_string(), why.clone());
                    self.ctx.recorder.record(
                        fed,
                        EventType::Warning,
                        rollout::INVALID_ROLLOUT_STRATEGY,
                        format!(
                            "annotation {}: {why}; the pod template goes to every cluster at once",
                            rollout::ROLLOUT_STRATEGY_ANNOTATION
                        ),
                    );
                }
                return None;
            }
        };
        let key = ObjectKey::new(
            fed.pointer("/metadata/namespace").and_then(Value::as_str),
            fed.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );
        let views: Vec<rollout::ClusterView<'_>> = choices
            .iter()
            .map(|c| rollout::ClusterView {
                name: &c.member.name,
                selected: c.selected,
                ready: c.member.ready,
                record: previous.get(&c.member.name),
                copy: self
                    .informer
                    .get(&c.member.name, &key)
                    .and_then(|o| serde_json::to_value(&*o).ok())
                    .filter(|o| {
                        str_at(
                            o,
                            "/metadata/annotations/federation.kubernetes.io~1origin-uid",
                        ) == Some(uid)
                    }),
            })
            .collect();
        Some(rollout::plan(
            workload,
            fed,
            &strategy,
            prev,
            &views,
            jiff::Timestamp::now(),
        ))
    }

    /// An object the namespace denylist alone keeps home: a Warning event
    /// once per object (per process), so the user who made it sees why no
    /// member has it. Objects never propagated anyway (a namespace's
    /// `default` ServiceAccount, `kube-root-ca.crt`, the system namespaces)
    /// stay quiet, as every unpropagated object always has.
    fn report_denied(&self, slim: &Value, uid: &str) {
        let policy = self.kind.policy();
        let Some((ns, pattern)) = member_object::denied_namespace(policy, slim, &self.denylist)
        else {
            return;
        };
        let anyway = NamespaceDenylist::new(Vec::<String>::new());
        if !member_object::is_propagated_with(policy, slim, &anyway)
            || !self.denied_reported.lock().insert(uid.to_string())
        {
            return;
        }
        self.ctx.recorder.record(
            slim,
            EventType::Warning,
            "NotPropagated",
            format!(
                "not propagated to any member cluster: namespace {ns} matches {pattern:?} of the \
                 member namespace denylist (--member-namespace-denylist), and the federation never \
                 writes into such a namespace in a member cluster"
            ),
        );
    }
}

/// The wait before retry `n` (1-based): 5 s doubling, at most 1 min.
fn backoff(n: u32) -> Duration {
    let shift = n.saturating_sub(1).min(8);
    (BACKOFF_MIN * (1u32 << shift)).min(BACKOFF_MAX)
}

fn error_policy(_obj: Arc<DynamicObject>, err: &Error, ctx: Arc<SyncController>) -> Action {
    tracing::debug!(kind = %ctx.kind.id(), error = %err, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(1))
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// What happened in one cluster during a reconcile.
struct Outcome {
    record: Option<ClusterRecord>,
    event: Option<(EventType, &'static str)>,
    retry: Option<Duration>,
    /// A `DriftDetected` Event's message (the cluster's drift list changed).
    drift_event: Option<String>,
}

impl Outcome {
    fn keep(record: ClusterRecord) -> Self {
        Self {
            record: Some(record),
            event: None,
            retry: None,
            drift_event: None,
        }
    }
}

/// One object, one cluster: what a reconcile brings along.
struct Target<'a> {
    fed: &'a Value,
    /// The copy of `fed` for a cluster with no overrides and no
    /// per-cluster fields, and its content hash, when the object has no
    /// overrides (then every such cluster's copy is this one), and it
    /// passes the copy checks.
    shared: Option<&'a SharedCopy>,
    name: &'a str,
    ns: Option<&'a str>,
    uid: &'a str,
    generation: i64,
    /// The object's drift policy (an invalid annotation: `Repair`).
    drift: DriftPolicy,
}

impl Target<'_> {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(self.ns, self.name)
    }
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<SyncController>) -> Result<Action, Error> {
    let slim_value = kinds::to_value(&obj, &ctx.kind)?;
    let name = obj.name_any();
    let ns = obj.namespace();
    let Some(uid) = obj.uid() else {
        return Ok(Action::await_change());
    };
    let objects = ctx.ctx.objects.for_kind(&ctx.kind);
    // Deletion is the record's business (see `deletion`): the garbage
    // collector applies the user's propagationPolicy to it.
    if obj.meta().deletion_timestamp.is_some() {
        objects.discard(&obj);
        return Ok(Action::await_change());
    }
    // A federation with no member cluster is a plain API server: no record
    // until a cluster joins (every change of the member set re-queues
    // every object).
    let members = ctx.ctx.members.snapshot();
    if !member_object::is_propagated_with(ctx.kind.policy(), &slim_value, &ctx.denylist) {
        objects.discard(&obj);
        if !members.is_empty() {
            ctx.report_denied(&slim_value, &uid);
        }
        return Ok(Action::await_change());
    }
    if members.is_empty() {
        objects.discard(&obj);
        return Ok(Action::await_change());
    }

    // The shared cache is metadata only (see `objects`): read the content
    // to propagate (what the object's last watch event brought, when no
    // one read it yet; else from the federation's own API).
    let obj = match objects.fetch(&obj).await? {
        Some(o) => Arc::new(o),
        // Gone or re-created: its own watch event reconciles it.
        None => return Ok(Action::await_change()),
    };
    if obj.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // The record is created once, after the first round of member writes,
    // with their state (one write instead of a create and a status patch).
    let record = match ctx.deletion.lookup(obj.meta()).await? {
        Some(Tracked::Record(r)) => Some(r),
        // The record of an earlier object of this name is being finalized.
        Some(Tracked::Wait) => return Ok(Action::requeue(Duration::from_secs(1))),
        None => None,
    };
    let fed = kinds::to_value(&obj, &ctx.kind)?;

    let placement = placement::placement_of(&fed);
    if let Placement::Invalid(msg) = &placement {
        let mut seen = ctx.placement_errors.lock();
        if seen.get(&uid) != Some(msg) {
            seen.insert(uid.clone(), msg.clone());
            ctx.ctx.recorder.record(
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

    let drift_policy = match DriftPolicy::of(&fed) {
        Ok(p) => {
            ctx.drift_policy_errors.lock().remove(&uid);
            p
        }
        Err(value) => {
            let mut seen = ctx.drift_policy_errors.lock();
            if seen.get(&uid) != Some(&value) {
                seen.insert(uid.clone(), value.clone());
                ctx.ctx.recorder.record(
                    &fed,
                    EventType::Warning,
                    drift::INVALID_DRIFT_POLICY,
                    format!(
                        "annotation {}: {value:?} is not a drift policy (Repair or Report); \
                         drift is repaired",
                        drift::DRIFT_POLICY_ANNOTATION
                    ),
                );
            }
            DriftPolicy::Repair
        }
    };
    let previous = record
        .as_deref()
        .map(crate::version::state_of)
        .unwrap_or_default();
    let generation = obj.meta().generation.unwrap_or(0);
    let choices: Vec<ClusterChoice> = members
        .iter()
        .map(|m| ClusterChoice {
            member: m.clone(),
            selected: placement.selects(&m.labels),
        })
        .collect();
    let schedule = ctx.ctx.scheduler.as_ref().and_then(|s| {
        s.schedule(&ScheduleInput {
            kind: &ctx.kind,
            object: &fed,
            clusters: &choices,
            informer: &ctx.informer,
            previous: &previous,
        })
    });
    let shared = shared_copy(&ctx, &fed);
    let target = Target {
        fed: &fed,
        shared: shared.as_ref(),
        name: &name,
        ns: ns.as_deref(),
        uid: &uid,
        generation,
        drift: drift_policy,
    };
    let prev_rollout = record
        .as_deref()
        .and_then(|r| r.status.as_ref())
        .and_then(|s| s.rollout.as_ref());
    let rollout = ctx.rollout_plan(&fed, &uid, &choices, &previous, prev_rollout);
    // Per cluster: the object as that cluster's copy is made from (a later
    // wave keeps its pod template), and the template's hash.
    let workload = rollout::Workload::of(&ctx.kind).is_some();
    let per_cluster: HashMap<&str, (Option<Value>, Option<String>)> = choices
        .iter()
        .map(|c| {
            let held = rollout
                .as_ref()
                .and_then(|p| p.hold.get(&c.member.name))
                .map(|t| {
                    let mut f = fed.clone();
                    if let Some(spec) = f.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.insert("template".into(), t.clone());
                    }
                    f
                });
            let hash = workload.then(|| rollout::template_hash(held.as_ref().unwrap_or(&fed)));
            (c.member.name.as_str(), (held, hash))
        })
        .collect();
    let jobs = choices.iter().map(|c| {
        let prev = previous.get(&c.member.name).cloned();
        let fields = schedule.as_ref().and_then(|s| s.get(&c.member.name));
        let (held, template_hash) = per_cluster
            .get(c.member.name.as_str())
            .map(|(f, h)| (f.as_ref(), h.clone()))
            .unwrap_or_default();
        let ctx = &ctx;
        let target = &target;
        async move {
            let m = &c.member;
            let outcome = if c.selected && m.ready {
                let mut out = sync_cluster(ctx, m, target, held, prev, fields).await;
                if let Some(r) = out.record.as_mut()
                    && r.state == SyncState::InSync
                {
                    r.template_hash = template_hash;
                }
                out
            } else if c.selected {
                let mut r = prev.unwrap_or_default();
                if r.state != SyncState::Failed || r.message.is_empty() {
                    r.state = SyncState::Pending;
                    r.message = format!("cluster {} is not ready", m.name);
                }
                Outcome::keep(r)
            } else {
                remove_unselected(ctx, m, target, prev).await
            };
            (m.name.clone(), outcome)
        }
    });
    let outcomes = futures::future::join_all(jobs).await;

    let mut next = PropagationState::new();
    let mut events: BTreeMap<(&'static str, bool), Vec<String>> = BTreeMap::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut retry: Option<Duration> = None;
    for (cluster, outcome) in outcomes {
        if let Some(message) = &outcome.drift_event {
            ctx.ctx.recorder.record(
                &fed,
                EventType::Warning,
                drift::DRIFT_DETECTED,
                format!("cluster {cluster}: {message}"),
            );
        }
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
        if let Some(mut r) = outcome.record {
            let wave = rollout.as_ref().and_then(|p| p.waves.get(&cluster));
            r.wave = wave.map(|w| w.0);
            r.wave_state = wave.map(|w| w.1.as_str().to_string());
            next.insert(cluster, r);
        }
    }
    // Clusters not in the member set now (being connected after a
    // restart, or unjoined) keep their entries: the version cache must not
    // be lost to a member set that is still filling.
    for (cluster, r) in &previous {
        if !next.contains_key(cluster) && !members.iter().any(|m| &m.name == cluster) {
            next.insert(cluster.clone(), r.clone());
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
        ctx.ctx.recorder.record(&fed, kind, reason, message);
    }

    // The rollout's state goes with the clusters' in one write.
    let rollout_patch = match (&rollout, prev_rollout) {
        (Some(p), old) if old != Some(&p.status) => Some(match old {
            Some(old) => rollout::merge_patch(
                &serde_json::to_value(old)?,
                &serde_json::to_value(&p.status)?,
            ),
            None => serde_json::to_value(&p.status)?,
        }),
        (None, Some(_)) => Some(Value::Null),
        _ => None,
    };
    if let Some(p) = &rollout {
        for (kind, reason, message) in &p.events {
            ctx.ctx
                .recorder
                .record(&fed, *kind, reason, message.clone());
        }
        if let Some(d) = p.recheck {
            retry = Some(retry.map_or(d, |r| r.min(d)));
        }
    }
    if record.is_none() || next != previous || rollout_patch.is_some() {
        let mut status = serde_json::to_value(crate::version::status_of(&next))?;
        if let (Some(patch), Some(o)) = (rollout_patch, status.as_object_mut()) {
            o.insert("rollout".into(), patch);
        }
        match &record {
            Some(r) => ctx.deletion.patch_status(r, status).await?,
            None => ctx.deletion.create_with_status(obj.meta(), status).await?,
        }
    }
    Ok(match retry {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

/// The copy every cluster without per-cluster fields gets: made and
/// hashed once per reconcile, and serialized at most once, when the first
/// cluster needs an apply (a reconcile that finds every copy in step, as
/// after a restart, serializes nothing).
struct SharedCopy {
    copy: Value,
    hash: String,
    /// `copy` as the apply's body ([`dispatch::serialize`]), once needed.
    body: std::sync::OnceLock<Vec<u8>>,
    /// `copy` as a create-only apply's body ([`dispatch::create_only`]),
    /// once needed.
    create_body: std::sync::OnceLock<Vec<u8>>,
}

impl SharedCopy {
    /// The apply's body, serialized on first use.
    fn body(&self) -> Result<&[u8], dispatch::MemberError> {
        if let Some(b) = self.body.get() {
            return Ok(b);
        }
        let b = dispatch::serialize(&self.copy)?;
        Ok(self.body.get_or_init(|| b))
    }

    /// The create-only apply's body, serialized on first use.
    fn create_body(&self) -> Result<&[u8], dispatch::MemberError> {
        if let Some(b) = self.create_body.get() {
            return Ok(b);
        }
        let b = dispatch::create_only(&self.copy)?;
        Ok(self.create_body.get_or_init(|| b))
    }
}

/// The copy of `fed` every cluster without per-cluster fields gets, and
/// its content hash: `None` when the object has overrides (each cluster's
/// copy is its own) or the copy does not pass the copy checks (each
/// cluster reports it).
fn shared_copy(ctx: &SyncController, fed: &Value) -> Option<SharedCopy> {
    if fed
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(OVERRIDES_ANNOTATION))
        .is_some()
    {
        return None;
    }
    let copy = member_object::member_copy_with(ctx.kind.policy(), fed, "", None).ok()?;
    if member_object::not_propagated_because(ctx.kind.policy(), &copy, &ctx.denylist).is_some() {
        return None;
    }
    let hash = member_object::content_hash(&copy);
    Some(SharedCopy {
        copy,
        hash,
        body: std::sync::OnceLock::new(),
        create_body: std::sync::OnceLock::new(),
    })
}

/// Bring one selected, Ready cluster in step.
async fn sync_cluster(
    ctx: &SyncController,
    member: &Member,
    t: &Target<'_>,
    held: Option<&Value>,
    prev: Option<ClusterRecord>,
    fields: Option<&ClusterFields>,
) -> Outcome {
    let prev = prev.unwrap_or_default();
    let resource = crate::metrics::resource_label(&ctx.kind);
    let failed = |message: String, reason: &'static str| {
        crate::metrics::metrics().propagation_failed(&member.name, &resource, reason);
        let retry = ctx.note_failure(t.uid, &member.name);
        let event = (prev.state != SyncState::Failed || prev.message != message)
            .then_some((EventType::Warning, reason));
        Outcome {
            record: Some(ClusterRecord {
                state: SyncState::Failed,
                message,
                ..prev.clone()
            }),
            event,
            retry: Some(retry),
            drift_event: None,
        }
    };
    // A cluster of a later wave keeps its pod template (`held`: the
    // federated object with that template).
    let source = held.unwrap_or(t.fed);
    // The copy every cluster gets alike (no overrides, no per-cluster
    // fields, no held template) is made and hashed once per reconcile.
    let shared = t.shared.filter(|_| held.is_none() && fields.is_none());
    let desired = match shared {
        Some(s) => Cow::Borrowed(&s.copy),
        None => {
            match member_object::member_copy_with(ctx.kind.policy(), source, &member.name, fields) {
                Ok(d) => Cow::Owned(d),
                Err(msg) => return failed(format!("overrides: {msg}"), "FailedUpdateInCluster"),
            }
        }
    };
    let desired: &Value = &desired;
    // What an override made of the copy must pass the rules the federated
    // object passed (admission checks this too, but an override or the
    // rules can change after the object was written).
    if let Some(why) = shared
        .is_none()
        .then(|| member_object::not_propagated_because(ctx.kind.policy(), desired, &ctx.denylist))
        .flatten()
    {
        let message = format!(
            "the copy for cluster {} is not applied: {why} (after the overrides of \
             {OVERRIDES_ANNOTATION} for this cluster; change them so the copy stays propagatable)",
            member.name
        );
        let mut out = failed(message, "FailedCopyCheck");
        out.retry = Some(BACKOFF_MAX);
        return out;
    }
    let replicas = fields
        .filter(|f| !f.is_empty())
        .and_then(|_| desired.pointer("/spec/replicas"))
        .and_then(Value::as_i64);
    let hash = match shared {
        Some(s) => s.hash.clone(),
        None => member_object::content_hash(desired),
    };

    match ctx.informer.is_synced(&member.name) {
        None => return Outcome::keep(pending(prev, "waiting for the watch on the cluster")),
        Some(false) => {
            return Outcome {
                retry: Some(Duration::from_secs(2)),
                ..Outcome::keep(pending(
                    prev,
                    "waiting for the watch on the cluster to sync",
                ))
            };
        }
        Some(true) => {}
    }
    let same_source = prev.hash.as_deref() == Some(hash.as_str());
    // The cache keeps a copy lean (see `informer`): its versions tell
    // whether its content is still what our last apply made of it.
    let cached = ctx.informer.state(&member.name, &t.key());
    let cached_ours = cached
        .as_ref()
        .is_some_and(|c| c.managed && c.origin_uid.as_deref() == Some(t.uid));
    if let Some(c) = &cached
        && cached_ours
        && same_source
        && prev.drift.is_empty()
        && content_unchanged_since(c, prev.resource_version.as_deref())
    {
        return in_sync(ctx, member, t, prev, replicas);
    }
    // A copy the cache does not know (it holds our copies only): one
    // create-only apply, which writes nothing if the member has an object
    // of that name (ours the cache has not seen yet, or one that is not
    // ours): then it is read as below and the conflict rule decides.
    if cached.is_none() && !ctx.no_create_only.lock().contains(&member.name) {
        let body = match shared {
            Some(s) => s.create_body().map(Cow::Borrowed),
            None => dispatch::create_only(desired).map(Cow::Owned),
        };
        let body = match body {
            Ok(b) => b,
            Err(e) => return failed(e.message, "FailedCreateInCluster"),
        };
        let started = Instant::now();
        let (result, again) = send_apply(ctx, member, t, &body).await;
        match result {
            Ok(applied) => {
                crate::metrics::metrics().propagated(&member.name, &resource, started.elapsed());
                return applied_outcome(
                    ctx,
                    member,
                    t,
                    applied,
                    hash,
                    replicas,
                    &prev,
                    &[],
                    "CreateInCluster",
                    again,
                );
            }
            // No answer: the same as any apply's failure.
            Err(e) if e.code == 0 => return failed(e.message, "FailedCreateInCluster"),
            // The server does not take the precondition on a create: this
            // cluster's misses are read first from now on.
            Err(e) if e.code == 400 && e.message.contains("resourceVersion") => {
                tracing::info!(cluster = %member.name, kind = %ctx.kind.id(), error = %e,
                    "the member refuses a create-only apply; its new copies are read first");
                ctx.no_create_only.lock().insert(member.name.clone());
            }
            // There is an object of that name (409), or the member did not
            // take the precondition: read it and go on as below.
            Err(_) => {}
        }
    }
    // Otherwise the copy whole: a copy that is not ours (adoption, or
    // another origin's) as cached (its metadata decides); ours, changed
    // since, or a cache miss (confirmed) from the member.
    let actual: Option<Value> = match &cached {
        Some(_) if !cached_ours => ctx
            .informer
            .get(&member.name, &t.key())
            .and_then(|o| serde_json::to_value(&*o).ok()),
        _ => match dispatch::get_copy(member, &ctx.kind, t.name, t.ns, ctx.timeout()).await {
            Ok(v) => v,
            Err(e) => return failed(e.message, "FailedUpdateInCluster"),
        },
    };

    let (managed, origin) = actual
        .as_ref()
        .map_or((false, false), |a| dispatch::is_ours(a, t.uid));
    // Drift policy Report: the member's values of our fields stay. The
    // copy is applied only when the federated object changed, with the
    // member's values of the fields the change left alone put back.
    let mut to_apply = None;
    let mut kept_drift = Vec::new();
    if t.drift == DriftPolicy::Report
        && let Some(actual) = &actual
        && managed
        && origin
    {
        let found = drift::diff(desired, actual);
        if same_source {
            ctx.note_success(t.uid, &member.name);
            return drift_outcome(
                ClusterRecord {
                    state: SyncState::InSync,
                    observed_generation: t.generation,
                    replicas,
                    ..prev.clone()
                },
                &prev,
                &found,
            );
        }
        let kept = drift::unchanged_by_source(&found, &prev.drift);
        if !kept.is_empty() {
            let mut copy = desired.clone();
            drift::keep_theirs(&mut copy, &kept);
            to_apply = Some(copy);
        }
        kept_drift = kept.into_iter().cloned().collect();
    }
    // A drift list kept under Report (now Repair, or no annotation) makes
    // the copy applied again: that repairs it.
    if let Some(actual) = &actual
        && managed
        && origin
        && t.drift == DriftPolicy::Repair
        && prev.drift.is_empty()
        && same_source
        && (prev.resource_version.as_deref() == str_at(actual, "/metadata/resourceVersion")
            || member_object::is_subset(desired, actual))
    {
        return in_sync(ctx, member, t, prev, replicas);
    }
    let adopting = actual.is_some() && !managed;
    if adopting && ctx.conflict_resolution(t.fed) == ConflictResolution::Abort {
        let message = format!(
            "{} {} already exists in cluster {} and is not managed by the federation; \
             it is left as it is (conflict resolution: abort). To manage it from the \
             federation, annotate the federated object {CONFLICT_RESOLUTION_ANNOTATION}=adopt \
             (or serve with --conflict-resolution=adopt); or delete it from the cluster",
            ctx.kind.resource.kind,
            t.key(),
            member.name
        );
        let mut out = failed(message, "FailedAdoptInCluster");
        out.retry = Some(BACKOFF_MAX);
        // The record must not claim the member's object: deletion then
        // never touches it.
        if let Some(r) = out.record.as_mut() {
            r.hash = None;
            r.resource_version = None;
        }
        return out;
    }

    let created = actual.is_none();
    let failed_reason = if created {
        "FailedCreateInCluster"
    } else {
        "FailedUpdateInCluster"
    };
    let started = Instant::now();
    // The shared copy goes as serialized once for every cluster.
    let body = match (&to_apply, shared) {
        (None, Some(s)) => match s.body() {
            Ok(b) => Cow::Borrowed(b),
            Err(e) => return failed(e.message, failed_reason),
        },
        (to_apply, _) => match dispatch::serialize(to_apply.as_ref().unwrap_or(desired)) {
            Ok(b) => Cow::Owned(b),
            Err(e) => return failed(e.message, failed_reason),
        },
    };
    let (result, again) = send_apply(ctx, member, t, &body).await;
    crate::metrics::metrics().propagated(&member.name, &resource, started.elapsed());
    match result {
        Ok(applied) => {
            let reason = if created {
                "CreateInCluster"
            } else if adopting {
                "Adopted"
            } else {
                "UpdateInCluster"
            };
            applied_outcome(
                ctx,
                member,
                t,
                applied,
                hash,
                replicas,
                &prev,
                &kept_drift,
                reason,
                again,
            )
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

/// Apply `body` (a serialized copy) to `member`, the namespace first if
/// it lacks it, noting it as our own write in flight: the member's answer,
/// and whether another write came while ours was in flight (reconcile
/// again). Failed: the events that came meanwhile were others' writes (the
/// failure's own retry reconciles the object again).
async fn send_apply(
    ctx: &SyncController,
    member: &Member,
    t: &Target<'_>,
    body: &[u8],
) -> (Result<dispatch::Applied, MemberError>, bool) {
    let in_flight = ctx.note_sending(&member.name, t.key());
    let result = dispatch::apply_body_with_namespace::<dispatch::Applied>(
        &ctx.ctx.fed,
        member,
        &ctx.kind,
        body,
        t.name,
        t.ns,
        ctx.timeout(),
    )
    .await;
    let again = in_flight.answered(
        result
            .as_ref()
            .ok()
            .and_then(|a| a.metadata.resource_version.as_deref()),
    );
    (result, again)
}

/// A copy applied (the member's answer `applied`, our copy's `hash` and
/// `replicas`, with the drift `kept` under Report): the cluster's record
/// and outcome, with its Normal event `reason`; `again`: another write
/// came while ours was in flight (reconcile again at once).
#[allow(clippy::too_many_arguments)]
fn applied_outcome(
    ctx: &SyncController,
    member: &Member,
    t: &Target<'_>,
    applied: dispatch::Applied,
    hash: String,
    replicas: Option<i64>,
    prev: &ClusterRecord,
    kept: &[drift::Drift],
    reason: &'static str,
    again: bool,
) -> Outcome {
    ctx.note_success(t.uid, &member.name);
    let record = ClusterRecord {
        state: SyncState::InSync,
        observed_generation: t.generation,
        message: String::new(),
        hash: Some(hash),
        resource_version: applied.metadata.resource_version,
        replicas,
        drift: Vec::new(),
        ..ClusterRecord::default()
    };
    tracing::debug!(cluster = %member.name, kind = %ctx.kind.id(), name = %t.name, reason, "propagated");
    Outcome {
        event: Some((EventType::Normal, reason)),
        retry: again.then_some(Duration::ZERO),
        ..drift_outcome(record, prev, kept)
    }
}

/// The cluster is in sync: its record says so (and nothing is sent).
fn in_sync(
    ctx: &SyncController,
    member: &Member,
    t: &Target<'_>,
    prev: ClusterRecord,
    replicas: Option<i64>,
) -> Outcome {
    ctx.note_success(t.uid, &member.name);
    Outcome::keep(ClusterRecord {
        state: SyncState::InSync,
        observed_generation: t.generation,
        message: String::new(),
        replicas,
        ..prev
    })
}

/// Whether the content of the cached copy `c` (everything but status and
/// server-set metadata) is still what it was at `applied`, the
/// resourceVersion our last apply returned: the copy is at that version,
/// its content has not changed since that version, or (numeric versions,
/// as our members' and kube's) the content was the same from before it
/// until now.
fn content_unchanged_since(c: &crate::informer::CopyState, applied: Option<&str>) -> bool {
    let Some(applied) = applied else {
        return false;
    };
    if applied == c.resource_version || applied == c.content_version {
        return true;
    }
    match (
        c.content_version.parse::<u64>(),
        applied.parse::<u64>(),
        c.resource_version.parse::<u64>(),
    ) {
        (Ok(since), Ok(at), Ok(now)) => since <= at && at <= now,
        _ => false,
    }
}

/// `record` with the drift `found` listed (and a message saying so), and a
/// `DriftDetected` Event when the list differs from the one `prev` holds.
fn drift_outcome(
    mut record: ClusterRecord,
    prev: &ClusterRecord,
    found: &[drift::Drift],
) -> Outcome {
    record.drift = drift::fields(found);
    record.message = if found.is_empty() {
        String::new()
    } else {
        format!(
            "{} field(s) differ in the cluster and are kept there ({}: Report): {}",
            found.len(),
            drift::DRIFT_POLICY_ANNOTATION,
            drift::summary(&record.drift, found.len())
        )
    };
    let drift_event = (!record.drift.is_empty() && record.drift != prev.drift).then(|| {
        format!(
            "{} field(s) of the copy differ from the federation's and are kept ({}: Report): {}",
            found.len(),
            drift::DRIFT_POLICY_ANNOTATION,
            drift::summary(&record.drift, found.len())
        )
    });
    Outcome {
        record: Some(record),
        event: None,
        retry: None,
        drift_event,
    }
}

fn pending(mut prev: ClusterRecord, why: &str) -> ClusterRecord {
    prev.state = SyncState::Pending;
    prev.message = why.to_string();
    prev
}

/// Whether our copy of the object may be in `member` (the record says we
/// applied it, or the cache holds a copy of ours).
fn may_have_copy(
    ctx: &SyncController,
    member: &Member,
    t: &Target<'_>,
    prev: Option<&ClusterRecord>,
) -> bool {
    if prev.is_some_and(|r| r.hash.is_some() || r.resource_version.is_some()) {
        return true;
    }
    match ctx.informer.is_synced(&member.name) {
        Some(true) => ctx.informer.get(&member.name, &t.key()).is_some_and(|o| {
            o.annotations()
                .get(member_object::ORIGIN_UID_ANNOTATION)
                .map(String::as_str)
                == Some(t.uid)
        }),
        // Not synced yet: do not guess.
        _ => false,
    }
}

/// Delete our copy from a cluster the placement no longer selects (when
/// it is Ready; else keep the record and try when it is back).
async fn remove_unselected(
    ctx: &SyncController,
    member: &Member,
    t: &Target<'_>,
    prev: Option<ClusterRecord>,
) -> Outcome {
    if !may_have_copy(ctx, member, t, prev.as_ref()) {
        return Outcome {
            record: None,
            event: None,
            retry: None,
            drift_event: None,
        };
    }
    if !member.ready {
        return Outcome::keep(pending(
            prev.unwrap_or_default(),
            "no longer selected; the copy is removed when the cluster is ready",
        ));
    }
    match dispatch::delete_copy(member, &ctx.kind, t.name, t.ns, t.uid, ctx.timeout()).await {
        Ok(deleted) => {
            ctx.note_success(t.uid, &member.name);
            Outcome {
                record: None,
                event: deleted.then_some((EventType::Normal, "DeleteInCluster")),
                retry: None,
                drift_event: None,
            }
        }
        Err(MemberError { message, .. }) => {
            crate::metrics::metrics().propagation_failed(
                &member.name,
                &crate::metrics::resource_label(&ctx.kind),
                "FailedDeleteInCluster",
            );
            let retry = ctx.note_failure(t.uid, &member.name);
            let prev = prev.unwrap_or_default();
            let event =
                (prev.message != message).then_some((EventType::Warning, "FailedDeleteInCluster"));
            Outcome {
                record: Some(ClusterRecord {
                    state: SyncState::Failed,
                    message,
                    ..prev
                }),
                event,
                retry: Some(retry),
                drift_event: None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_in_sync_while_its_content_is_what_we_applied() {
        let c = |rv: &str, since: &str| crate::informer::CopyState {
            resource_version: rv.into(),
            content_version: since.into(),
            managed: true,
            origin_uid: Some("u".into()),
        };
        // Our apply's own event.
        assert!(content_unchanged_since(&c("5", "5"), Some("5")));
        // A status write by the member's controller after it.
        assert!(content_unchanged_since(&c("9", "5"), Some("5")));
        // Our apply was a no-op on content already there since 3.
        assert!(content_unchanged_since(&c("9", "3"), Some("6")));
        // Someone changed the content after our apply.
        assert!(!content_unchanged_since(&c("9", "7"), Some("5")));
        // Never applied, or opaque versions that differ.
        assert!(!content_unchanged_since(&c("9", "9"), None));
        assert!(!content_unchanged_since(&c("b", "a"), Some("x")));
        assert!(content_unchanged_since(&c("b", "a"), Some("a")));
    }

    #[test]
    fn own_writes_hold_back_the_events_of_an_apply_in_flight() {
        let w = OwnWrites::default();
        let k = ObjectKey::new(Some("ns"), "a");
        // No apply of ours: every event counts.
        assert!(!w.is_own("m1", &k, "5"));
        // The event of our apply comes after its answer: ours, once.
        w.sending("m1", k.clone());
        assert!(!w.answered("m1", k.clone(), Some("6")));
        assert!(w.is_own("m1", &k, "6"));
        assert!(!w.is_own("m1", &k, "6"));
        // The event comes before the answer: held back, then judged ours
        // (no second reconcile), and the entry is gone.
        w.sending("m1", k.clone());
        assert!(w.is_own("m1", &k, "7"));
        assert!(!w.answered("m1", k.clone(), Some("7")));
        assert!(!w.is_own("m1", &k, "8"));
        // An earlier write's event while in flight: in what we applied.
        w.sending("m1", k.clone());
        assert!(w.is_own("m1", &k, "8"));
        assert!(!w.answered("m1", k.clone(), Some("9")));
        assert!(w.is_own("m1", &k, "9"));
        // A later write's event while in flight: reconcile again.
        w.sending("m1", k.clone());
        assert!(w.is_own("m1", &k, "12"));
        assert!(w.answered("m1", k.clone(), Some("10")));
        // A failed apply: the events that came meanwhile were others'.
        w.sending("m1", k.clone());
        assert!(w.is_own("m1", &k, "13"));
        assert!(w.answered("m1", k.clone(), None));
        assert!(!w.is_own("m1", &k, "14"));
        // Per cluster: another cluster's event is not held back.
        w.sending("m1", k.clone());
        assert!(!w.is_own("m2", &k, "3"));
        // A guard dropped unanswered (a cancelled reconcile) holds nothing
        // back afterwards.
        let g = InFlight {
            writes: &w,
            cluster: "m3".into(),
            key: Some(k.clone()),
        };
        w.sending("m3", k.clone());
        assert!(w.is_own("m3", &k, "20"));
        drop(g);
        assert!(!w.is_own("m3", &k, "21"));
        // Versions that are not numbers: unequal is another write.
        assert!(!later_write("x", Some("x")));
        assert!(later_write("y", Some("x")));
        assert!(!later_write("4", Some("5")));
    }

    #[test]
    fn backoff_starts_at_five_seconds_and_doubles_to_a_minute() {
        assert_eq!(backoff(1), Duration::from_secs(5));
        assert_eq!(backoff(2), Duration::from_secs(10));
        assert_eq!(backoff(3), Duration::from_secs(20));
        assert_eq!(backoff(4), Duration::from_secs(40));
        assert_eq!(backoff(5), Duration::from_secs(60));
        assert_eq!(backoff(50), Duration::from_secs(60));
    }
}
