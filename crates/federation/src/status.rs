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

use std::collections::BTreeMap;
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
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for r in records {
        for (cluster, rec) in version::state_of(r) {
            let e = out.entry(cluster).or_default();
            e.1 += 1;
            if rec.state == SyncState::InSync {
                e.0 += 1;
            }
        }
    }
    out
}

/// Per cluster, the workload replicas placed there: the sum of the
/// `replicas` its entries in the records carry (set by scheduling).
pub fn replicas_per_cluster<'a>(
    records: impl IntoIterator<Item = &'a PropagationRecord>,
) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    for r in records {
        for (cluster, rec) in version::state_of(r) {
            *out.entry(cluster).or_default() += rec.replicas.unwrap_or(0);
        }
    }
    out
}

/// Keep each Cluster's `status.objectsInSync` / `status.objectsPlaced`
/// (the OBJECTS IN SYNC column of `kubectl get clusters -o wide`) up to
/// date from the propagation records, written only when they change, at
/// most once per cluster monitor period (10 s at most); and the per-cluster
/// metrics of the same counts and of the replicas placed.
async fn count_objects(ctx: Arc<Context>, stop: CancellationToken) {
    let (records, writer) = reflector::store::<PropagationRecord>();
    let api: Api<PropagationRecord> = Api::all(ctx.fed.clone());
    let watch = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
                .default_backoff()
                .for_each(|_| async {});
            tokio::select! {
                () = stop.cancelled() => {},
                () = stream => {},
            }
        })
    };
    let period = ctx
        .options
        .cluster_monitor_period
        .min(Duration::from_secs(10));
    let clusters: Api<ubernetes_api::Cluster> = Api::all(ctx.fed.clone());
    let mut written: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(period) => {},
        }
        let state = records.state();
        let counts = objects_per_cluster(state.iter().map(|r| &**r));
        let replicas = replicas_per_cluster(state.iter().map(|r| &**r));
        for m in ctx.members.snapshot() {
            let c = counts.get(&m.name).copied().unwrap_or_default();
            crate::metrics::metrics().placed(
                &m.name,
                c.0,
                c.1,
                replicas.get(&m.name).copied().unwrap_or_default(),
            );
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
                Err(e) => tracing::debug!(cluster = %m.name, error = %e, "objects in sync"),
            }
        }
        written.retain(|name, _| ctx.members.get(name).is_some());
    }
    let _ = watch.await;
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
        objects
            .controller()
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

    #[test]
    fn times_are_rfc3339_seconds() {
        let t = now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z'));
    }
}
