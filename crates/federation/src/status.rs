//! The status controller (SPEC §3.7): writes the federated object's status
//! subresource from its member copies ([`status_aggregate`]), as
//! kube-controller-manager's controllers write theirs — a status write is
//! the only write the federation makes to a user's object, and only when
//! the status changes.
//!
//! One controller per aggregated kind (Deployments, ReplicaSets,
//! StatefulSets, DaemonSets, Jobs, Services, Ingresses). It reads:
//! - the kind's federated informer (the member copies, with status); a
//!   change of a copy re-queues its federated object, a cluster event
//!   every object;
//! - the kind's propagation records (whether each copy carries the
//!   object's current generation), from a watch of its own.
//!
//! A copy counts as carrying the current generation when its record says
//! `InSync` for that generation and the cached copy is not older than the
//! apply the record remembers (resourceVersions compared as numbers when
//! both are, as kube's and ours are). While some member has not observed
//! its copy, the object is looked at again every few seconds.
//!
//! It also keeps each Cluster's `status.objectsInSync` and
//! `status.objectsPlaced` (the OBJECTS IN SYNC column of `kubectl get
//! clusters -o wide`) counted from the propagation records.
//!
//! For Services and Ingresses the per-cluster addresses in Federation v1's
//! `federation.kubernetes.io/service-ingresses` format go on the object's
//! propagation record (an annotation of the federation's own object; a
//! status write cannot carry annotations, and the user's object is not
//! written otherwise, SPEC §3.8).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Config as ControllerConfig};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Resource as _, ResourceExt as _};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_api::PropagationRecord;

use crate::Context;
use crate::informer::{Federated as _, FederatedInformer, ObjectKey};
use crate::kinds::{self, FederatedKind};
use crate::member_object;
use crate::placement;
use crate::status_aggregate::{self, MemberView, SERVICE_INGRESSES_ANNOTATION, StatusSum};
use crate::version::{self, ClusterRecord, SyncState};

/// The field manager of status writes.
pub const FIELD_MANAGER: &str = "ubernetes-status";
/// How soon an object whose members have not all observed their copy is
/// looked at again.
const RECHECK: Duration = Duration::from_secs(3);

/// Run a status controller for each aggregated built-in kind until `stop`.
pub async fn run(ctx: Arc<Context>, stop: CancellationToken) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for kind in ctx.options.builtin_kinds.iter().cloned() {
        if kind.policy().status.is_none() || ctx.options.disabled_for(&kind) {
            continue;
        }
        tasks.spawn(StatusController::run(ctx.clone(), kind, stop.child_token()));
    }
    tasks.spawn(count_objects(ctx.clone(), stop.child_token()));
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Per cluster, `(in sync, placed)`: the records with an entry for the
/// cluster, and those whose entry is `InSync`.
pub fn objects_per_cluster<'a>(
    records: impl IntoIterator<Item = &'a PropagationRecord>,
) -> BTreeMap<String, (i64, i64)> {
    per_cluster(records)
        .into_iter()
        .map(|(c, n)| (c, (n.in_sync, n.placed)))
        .collect()
}

/// Per cluster, the workload replicas placed there: the sum of the
/// `replicas` its entries in the records carry (set by scheduling).
pub fn replicas_per_cluster<'a>(
    records: impl IntoIterator<Item = &'a PropagationRecord>,
) -> BTreeMap<String, i64> {
    per_cluster(records)
        .into_iter()
        .map(|(c, n)| (c, n.replicas))
        .collect()
}

/// The counts of `records` per cluster, summed from scratch.
fn per_cluster<'a>(
    records: impl IntoIterator<Item = &'a PropagationRecord>,
) -> BTreeMap<String, ClusterCounts> {
    let mut out: BTreeMap<String, ClusterCounts> = BTreeMap::new();
    for r in records {
        for (cluster, share) in shares(r) {
            out.entry(cluster.to_owned()).or_default().add(share);
        }
    }
    out
}

/// What the records say about one cluster: how many have an entry for it
/// (`placed`), how many of those entries are `InSync`, and the workload
/// replicas the entries carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterCounts {
    /// Records whose entry for the cluster is `InSync`.
    pub in_sync: i64,
    /// Records with an entry for the cluster.
    pub placed: i64,
    /// The sum of the entries' `replicas`.
    pub replicas: i64,
}

impl ClusterCounts {
    fn add(&mut self, s: Share) {
        self.placed += 1;
        self.in_sync += i64::from(s.in_sync);
        self.replicas += s.replicas;
    }

    fn sub(&mut self, s: Share) {
        self.placed -= 1;
        self.in_sync -= i64::from(s.in_sync);
        self.replicas -= s.replicas;
    }
}

/// One record's entry for one cluster, as far as the counts go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Share {
    in_sync: bool,
    replicas: i64,
}

/// A record's entries, per cluster.
fn shares(r: &PropagationRecord) -> impl Iterator<Item = (&str, Share)> {
    r.status.iter().flat_map(|s| &s.clusters).map(|c| {
        (
            c.name.as_str(),
            Share {
                in_sync: c.state == SyncState::InSync.as_str(),
                replicas: c.replicas.unwrap_or(0),
            },
        )
    })
}

/// A record's key: namespace and name.
type RecordKey = (String, String);
/// A record's shares, per cluster (the cluster names shared with the totals).
type RecordShares = Box<[(Arc<str>, Share)]>;

/// The per-cluster counts of every propagation record, kept incrementally
/// from a watch of the records: per record only its share of each cluster
/// (a cluster name shared with the totals, whether in sync, its replicas),
/// so an event costs the record's entries, not the whole set, and an
/// unchanged set costs nothing.
#[derive(Debug, Default)]
pub struct ObjectCounts {
    records: HashMap<RecordKey, RecordShares>,
    totals: BTreeMap<Arc<str>, ClusterCounts>,
    /// A relist under way: the records listed so far (swapped in at its end).
    relist: Option<HashMap<RecordKey, RecordShares>>,
    changed: bool,
}

impl ObjectCounts {
    /// Take in one event of a watch of the records (a relist replaces the
    /// set at its end, so records deleted while the watch was down go).
    pub fn on_event(&mut self, event: watcher::Event<PropagationRecord>) {
        match event {
            watcher::Event::Apply(r) => self.apply(&r),
            watcher::Event::Delete(r) => self.delete(&r),
            watcher::Event::Init => self.relist = Some(HashMap::new()),
            watcher::Event::InitApply(r) => {
                let shares = self.shares_of(&r);
                self.relist
                    .get_or_insert_with(HashMap::new)
                    .insert(key_of(&r), shares);
            }
            watcher::Event::InitDone => {
                if let Some(records) = self.relist.take() {
                    self.replace(records);
                }
            }
        }
    }

    /// A record was created or changed.
    pub fn apply(&mut self, r: &PropagationRecord) {
        let new = self.shares_of(r);
        let key = key_of(r);
        if self.records.get(&key) == Some(&new) {
            return;
        }
        for (c, s) in &new {
            self.total(c).add(*s);
        }
        if let Some(old) = self.records.insert(key, new) {
            self.subtract(&old);
        }
        self.changed = true;
    }

    /// A record was deleted.
    pub fn delete(&mut self, r: &PropagationRecord) {
        if let Some(old) = self.records.remove(&key_of(r)) {
            self.subtract(&old);
            self.changed = true;
        }
    }

    /// The counts of `cluster` (zero for a cluster no record names).
    pub fn get(&self, cluster: &str) -> ClusterCounts {
        self.totals.get(cluster).copied().unwrap_or_default()
    }

    /// Whether any count changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    fn replace(&mut self, records: HashMap<RecordKey, RecordShares>) {
        let before = std::mem::take(&mut self.totals);
        for (c, s) in records.values().flat_map(|v| v.iter()) {
            self.totals.entry(c.clone()).or_default().add(*s);
        }
        self.records = records;
        self.changed |= self.totals != before;
    }

    fn subtract(&mut self, old: &[(Arc<str>, Share)]) {
        for (c, s) in old {
            let t = self.total(c);
            t.sub(*s);
            if *t == ClusterCounts::default() {
                self.totals.remove(c);
            }
        }
    }

    fn total(&mut self, cluster: &Arc<str>) -> &mut ClusterCounts {
        self.totals.entry(cluster.clone()).or_default()
    }

    /// `r`'s shares, the cluster names shared with the totals' keys.
    fn shares_of(&self, r: &PropagationRecord) -> RecordShares {
        shares(r)
            .map(|(c, s)| {
                let name = self
                    .totals
                    .get_key_value(c)
                    .map_or_else(|| Arc::from(c), |(k, _)| k.clone());
                (name, s)
            })
            .collect()
    }
}

fn key_of(r: &PropagationRecord) -> RecordKey {
    (
        r.metadata.namespace.clone().unwrap_or_default(),
        r.metadata.name.clone().unwrap_or_default(),
    )
}

/// Keep each Cluster's `status.objectsInSync` / `status.objectsPlaced`
/// (the OBJECTS IN SYNC column of `kubectl get clusters -o wide`) up to
/// date from the propagation records, written only when they change, at
/// most once per cluster monitor period (10 s at most); and the per-cluster
/// metrics of the same counts and of the replicas placed. The counts follow
/// the record watch's events ([`ObjectCounts`]); a period in which no
/// record changed and no member joined does nothing.
async fn count_objects(ctx: Arc<Context>, stop: CancellationToken) {
    let api: Api<PropagationRecord> = Api::all(ctx.fed.clone());
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let period = ctx
        .options
        .cluster_monitor_period
        .min(Duration::from_secs(10));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let clusters: Api<ubernetes_api::Cluster> = Api::all(ctx.fed.clone());
    let mut counts = ObjectCounts::default();
    // What each member's Cluster status and metrics last got.
    let mut written: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut reported: BTreeMap<String, ClusterCounts> = BTreeMap::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            event = events.next() => match event {
                Some(Ok(event)) => counts.on_event(event),
                Some(Err(e)) => tracing::debug!(error = %e, "propagation record watch"),
                None => break,
            },
            _ = tick.tick() => {
                written.retain(|name, _| ctx.members.get(name).is_some());
                reported.retain(|name, _| ctx.members.get(name).is_some());
                let members = ctx.members.snapshot();
                let changed = counts.take_changed();
                if !changed && members.iter().all(|m| written.contains_key(&m.name)) {
                    continue;
                }
                for m in members {
                    let c = counts.get(&m.name);
                    if reported.get(&m.name) != Some(&c) {
                        crate::metrics::metrics().placed(&m.name, c.in_sync, c.placed, c.replicas);
                        reported.insert(m.name.clone(), c);
                    }
                    let c = (c.in_sync, c.placed);
                    if written.get(&m.name) == Some(&c) {
                        continue;
                    }
                    let patch = json!({"status": {"objectsInSync": c.0, "objectsPlaced": c.1}});
                    match clusters
                        .patch_status(&m.name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => {
                            written.insert(m.name.clone(), c);
                        }
                        Err(e) => {
                            // Not written: tried again next period.
                            written.remove(&m.name);
                            tracing::debug!(cluster = %m.name, error = %e, "objects in sync");
                        }
                    }
                }
            }
        }
    }
}

struct StatusController {
    ctx: Arc<Context>,
    kind: FederatedKind,
    informer: Arc<FederatedInformer>,
    records: Store<PropagationRecord>,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("the federation API: {0}")]
    Federation(#[from] kube::Error),
    #[error("the federated object cannot be read: {0}")]
    Decode(#[from] serde_json::Error),
}

impl StatusController {
    async fn run(ctx: Arc<Context>, kind: FederatedKind, stop: CancellationToken) {
        let ar = kind.resource.clone();
        let informer = ctx.informers.for_kind(&kind);
        let (records, records_writer) = reflector::store();
        // Records: a change re-queues the object it is about.
        let records_api: Api<PropagationRecord> = Api::all(ctx.fed.clone());
        let selector = format!(
            "{}={}",
            version::RESOURCE_LABEL,
            version::resource_label(&kind)
        );
        let record_changes = reflector::reflector(
            records_writer,
            watcher(records_api, watcher::Config::default().labels(&selector)),
        )
        .default_backoff()
        .applied_objects()
        .filter_map(move |r| {
            futures::future::ready(match r {
                Ok(r) => {
                    let o = &r.spec.resource;
                    Some(ObjectKey::new(Some(&o.namespace), &o.name).to_ref(&ar))
                }
                Err(e) => {
                    tracing::debug!(error = %e, "record watch");
                    None
                }
            })
        });
        let objects = ctx.objects.for_kind(&kind);
        let this = Arc::new(Self {
            ctx: ctx.clone(),
            kind,
            informer: informer.clone(),
            records,
        });
        let closing = stop.clone();
        // No member, no status to sum (see `reconcile`): a change is not
        // even queued; a member joining re-queues every object.
        let members = ctx.members.clone();
        objects
            .controller_while(move || !members.is_empty())
            .with_config(ControllerConfig::default().concurrency(16))
            .federated(&informer)
            .reconcile_on(record_changes)
            .graceful_shutdown_on(async move { closing.cancelled().await })
            .run(reconcile, error_policy, this)
            .for_each(|_| async {})
            .await;
    }

    fn record(&self, ns: Option<&str>, name: &str) -> Option<Arc<PropagationRecord>> {
        let key = ObjectRef::<PropagationRecord>::new(&version::record_name(&self.kind, name))
            .within(&version::record_namespace(ns));
        self.records.get(&key)
    }
}

fn error_policy(_obj: Arc<DynamicObject>, err: &Error, ctx: Arc<StatusController>) -> Action {
    tracing::debug!(kind = %ctx.kind.id(), error = %err, "status aggregation failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

fn now() -> String {
    let t = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Whether the cached copy is at least as new as the one the record
/// remembers applying (unknown → assume so).
fn not_older(copy_rv: Option<&str>, applied_rv: Option<&str>) -> bool {
    match (
        copy_rv.and_then(|v| v.parse::<u64>().ok()),
        applied_rv.and_then(|v| v.parse::<u64>().ok()),
    ) {
        (Some(c), Some(a)) => c >= a,
        _ => true,
    }
}

/// The merge patch that turns status `old` into `new` (fields of `old`
/// missing from `new` are set to null: a counter back at 0 is omitted).
fn status_patch(old: Option<&Value>, new: &Value) -> Value {
    let mut patch = new.as_object().cloned().unwrap_or_default();
    if let Some(old) = old.and_then(Value::as_object) {
        for k in old.keys() {
            if !patch.contains_key(k) {
                patch.insert(k.clone(), Value::Null);
            }
        }
    }
    json!({ "status": Value::Object(patch) })
}

async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<StatusController>) -> Result<Action, Error> {
    if obj.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let Some(uid) = obj.uid() else {
        return Ok(Action::await_change());
    };
    let members = ctx.ctx.members.snapshot();
    if members.is_empty() {
        // A federation with no member is a plain API server: the object's
        // status is nobody's business here.
        return Ok(Action::await_change());
    }
    let fed = kinds::to_value(&obj, &ctx.kind)?;
    if !member_object::is_propagated(ctx.kind.policy(), &fed) {
        // Kept to the federation (say, annotated federation-control-plane):
        // no member copy, so no status of the federation's to write.
        return Ok(Action::await_change());
    }
    let name = obj.name_any();
    let ns = obj.namespace();
    let key = ObjectKey::new(ns.as_deref(), &name);
    let generation = obj.meta().generation.unwrap_or(0);
    let record = ctx.record(ns.as_deref(), &name);
    let state: BTreeMap<String, ClusterRecord> = record
        .as_deref()
        .filter(|r| r.spec.resource.uid == uid)
        .map(version::state_of)
        .unwrap_or_default();
    let placement = placement::placement_of(&fed);

    let empty = json!({});
    let mut copies: Vec<(String, Value, bool)> = Vec::new();
    for m in members
        .iter()
        .filter(|m| m.ready && placement.selects(&m.labels))
    {
        let rec = state.get(&m.name);
        let copy = ctx
            .informer
            .get(&m.name, &key)
            .and_then(|c| serde_json::to_value(&*c).ok())
            .filter(|c| {
                c.pointer("/metadata/annotations/federation.kubernetes.io~1origin-uid")
                    .and_then(Value::as_str)
                    == Some(uid.as_str())
            });
        let in_sync = match (&copy, rec) {
            (Some(c), Some(r)) => {
                r.state == SyncState::InSync
                    && r.observed_generation == generation
                    && not_older(
                        c.pointer("/metadata/resourceVersion")
                            .and_then(Value::as_str),
                        r.resource_version.as_deref(),
                    )
            }
            _ => false,
        };
        copies.push((
            m.name.clone(),
            copy.unwrap_or_else(|| empty.clone()),
            in_sync,
        ));
    }
    // A rollout wave by wave (SPEC §3.11): clusters not on the template
    // rolling out count no updated replicas; a halted rollout fails.
    let rollout = record
        .as_deref()
        .filter(|r| r.spec.resource.uid == uid)
        .and_then(|r| r.status.as_ref())
        .and_then(|s| s.rollout.as_ref());
    let held = |cluster: &str| {
        rollout.is_some_and(|r| {
            state.get(cluster).and_then(|c| c.template_hash.as_deref())
                != Some(r.template_hash.as_str())
        })
    };
    let views: Vec<MemberView> = copies
        .iter()
        .map(|(c, o, s)| {
            let mut v = MemberView {
                cluster: c,
                object: o,
                applied_generation: None,
                in_sync: *s,
                held: false,
            };
            // A wave's copy that its member has not observed yet reports
            // the counters of the template before: none is updated. (The
            // federated object's generation, observed since the first
            // wave, does not make kubectl wait here.)
            v.held = held(c) || (rollout.is_some() && !v.observed());
            v
        })
        .collect();
    let all_observed = views.iter().all(MemberView::observed);
    let Some(sum) = ctx.kind.policy().status else {
        return Ok(Action::await_change());
    };
    let halted = rollout.and_then(|r| r.halted.as_deref());
    let status = status_aggregate::aggregate_rollout(sum, &fed, &views, &now(), halted);

    let api: Api<DynamicObject> = match ns.as_deref() {
        Some(ns) => Api::namespaced_with(ctx.ctx.fed.clone(), ns, &ctx.kind.resource),
        None => Api::all_with(ctx.ctx.fed.clone(), &ctx.kind.resource),
    };
    let old = fed.get("status");
    if old != Some(&status) {
        let patch = status_patch(old, &status);
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }

    if sum == StatusSum::LoadBalancer
        && let Some(record) = record.as_deref()
        && record.spec.resource.uid == uid
    {
        let want = status_aggregate::service_ingresses_annotation(&views);
        let have = record
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SERVICE_INGRESSES_ANNOTATION))
            .cloned();
        if want != have {
            let mut ann = Map::new();
            ann.insert(
                SERVICE_INGRESSES_ANNOTATION.into(),
                want.map_or(Value::Null, Value::String),
            );
            let records: Api<PropagationRecord> = Api::namespaced(
                ctx.ctx.fed.clone(),
                &version::record_namespace(ns.as_deref()),
            );
            let patch = json!({"metadata": {"annotations": Value::Object(ann)}});
            if let Some(rname) = record.metadata.name.as_deref() {
                records
                    .patch(rname, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
        }
    }

    Ok(if all_observed {
        Action::await_change()
    } else {
        Action::requeue(RECHECK)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn stale_cache_is_detected_by_numeric_resource_versions() {
        assert!(not_older(Some("12"), Some("12")));
        assert!(not_older(Some("13"), Some("12")));
        assert!(!not_older(Some("11"), Some("12")));
        assert!(not_older(Some("opaque"), Some("12")));
        assert!(not_older(None, None));
    }

    #[test]
    fn status_patch_clears_fields_that_went_away() {
        let old = json!({"replicas": 3, "readyReplicas": 3, "observedGeneration": 1});
        let new = json!({"observedGeneration": 2});
        assert_eq!(
            status_patch(Some(&old), &new),
            json!({"status": {"replicas": null, "readyReplicas": null, "observedGeneration": 2}})
        );
        assert_eq!(
            status_patch(None, &json!({"replicas": 1})),
            json!({"status": {"replicas": 1}})
        );
    }

    #[test]
    fn objects_are_counted_per_cluster_from_the_records() {
        let rec = |clusters: Value| -> PropagationRecord {
            serde_json::from_value(json!({
                "apiVersion": "federation/v1beta1", "kind": "PropagationRecord",
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "resource": "configmaps",
                                      "name": "x", "uid": "u"}},
                "status": {"clusters": clusters},
            }))
            .unwrap()
        };
        let records = [
            rec(json!([{"name": "a", "state": "InSync"}, {"name": "b", "state": "Failed"}])),
            rec(json!([{"name": "a", "state": "InSync"}, {"name": "b", "state": "InSync"}])),
            rec(json!([{"name": "a", "state": "Pending"}])),
        ];
        let c = objects_per_cluster(&records);
        assert_eq!(c.get("a"), Some(&(2, 3)));
        assert_eq!(c.get("b"), Some(&(1, 2)));
        assert_eq!(c.get("c"), None);
    }

    /// A record `name` with an entry per `(cluster, state, replicas)`.
    fn record(name: &str, clusters: &[(&str, &str, i64)]) -> PropagationRecord {
        let clusters: Vec<Value> = clusters
            .iter()
            .map(|(c, s, r)| json!({"name": c, "state": s, "replicas": r}))
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "federation/v1beta1", "kind": "PropagationRecord",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "resource": "configmaps",
                                  "name": name, "uid": "u"}},
            "status": {"clusters": clusters},
        }))
        .unwrap()
    }

    /// The incremental counts after a long run of creates, updates,
    /// deletes and relists equal the counts summed from scratch over the
    /// records that are left (no drift), and an event that changes no
    /// count reports no change.
    #[test]
    fn incremental_counts_do_not_drift() {
        let clusters = ["a", "b", "c", "d"];
        let states = ["InSync", "Pending", "Failed"];
        let mut live: BTreeMap<String, PropagationRecord> = BTreeMap::new();
        let mut counts = ObjectCounts::default();
        // A fixed pseudo-random sequence (an LCG), so a failure repeats.
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for step in 0..2_000 {
            let name = format!("r{}", next(25));
            match next(10) {
                0..=5 => {
                    let mut entries: Vec<(&str, &str, i64)> = Vec::new();
                    for c in clusters {
                        if next(3) > 0 {
                            let s = states[usize::try_from(next(3)).unwrap()];
                            entries.push((c, s, i64::try_from(next(4)).unwrap()));
                        }
                    }
                    let r = record(&name, &entries);
                    counts.on_event(watcher::Event::Apply(r.clone()));
                    live.insert(name, r);
                }
                6..=8 => {
                    if let Some(r) = live.remove(&name) {
                        counts.on_event(watcher::Event::Delete(r));
                    }
                }
                _ => {
                    // A relist that misses one deletion: it must go too.
                    live.remove(&name);
                    counts.on_event(watcher::Event::Init);
                    for r in live.values() {
                        counts.on_event(watcher::Event::InitApply(r.clone()));
                    }
                    counts.on_event(watcher::Event::InitDone);
                }
            }
            let want = per_cluster(live.values());
            for c in clusters {
                assert_eq!(
                    counts.get(c),
                    want.get(c).copied().unwrap_or_default(),
                    "cluster {c} after step {step}"
                );
            }
            assert!(counts.totals.keys().all(|c| want.contains_key(&**c)));
        }
        // Applying a record again as it is changes nothing.
        counts.take_changed();
        for r in live.values() {
            counts.on_event(watcher::Event::Apply(r.clone()));
        }
        assert!(!counts.take_changed());
        // A real change is reported once.
        let r = record("new", &[("a", "InSync", 2)]);
        let before = counts.get("a");
        counts.on_event(watcher::Event::Apply(r.clone()));
        assert!(counts.take_changed());
        assert!(!counts.take_changed());
        let after = counts.get("a");
        assert_eq!(
            (after.in_sync, after.placed, after.replicas),
            (before.in_sync + 1, before.placed + 1, before.replicas + 2)
        );
        counts.on_event(watcher::Event::Delete(r));
        assert_eq!(counts.get("a"), before);
    }

    #[test]
    fn times_are_rfc3339_seconds() {
        let t = now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z'));
    }
}
