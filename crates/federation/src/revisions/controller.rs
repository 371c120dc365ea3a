//! The revision controller (leader only): on each pod-template change of
//! a federated Deployment, StatefulSet or DaemonSet it writes the
//! workload's history into the federation ([`super::plan`]), as kube's
//! controllers write it into a cluster.
//!
//! - One kube-runtime controller per workload kind over the kind's shared
//!   federation-side cache ([`crate::objects`]); cluster lifecycle
//!   re-queues every workload (the first member joining starts the
//!   history). A federation with no member is a plain API server and gets
//!   no history, as the status controller writes no status there.
//! - A workload is read in full only when its generation or annotations
//!   changed since it was last handled.
//! - While a Deployment is paused no revision is recorded (kube's
//!   deployment controller creates no ReplicaSet then); resuming records
//!   it.
//! - After its writes it waits (briefly) until [`super::History`]'s cache
//!   shows them, so the next change is numbered from an up-to-date list.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use parking_lot::Mutex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::plan::{self, Step};
use super::{History, Keeper, REVISION_ANNOTATION, controller_revisions, replica_sets};
use crate::Context;
use crate::informer::Federated as _;
use crate::kinds::{self, FederatedKind};

/// The field manager of the controller's writes.
pub const FIELD_MANAGER: &str = "ubernetes-revisions";
/// How long after its writes a reconcile waits for the cache to show them.
const SETTLE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("the federation API: {0}")]
    Federation(#[from] kube::Error),
    #[error("the workload cannot be read: {0}")]
    Decode(#[from] serde_json::Error),
}

/// What a workload looked like when last handled: generation and
/// annotations (less the revision annotation this controller writes).
type Seen = (i64, Option<String>);

struct Ctl {
    ctx: Arc<Context>,
    kind: FederatedKind,
    keeper: Keeper,
    history: Arc<History>,
    seen: Mutex<HashMap<String, Seen>>,
}

/// Run a revision controller for each federated `apps` workload kind
/// (Deployments, StatefulSets, DaemonSets; not those whose built-in
/// controllers are disabled) until `stop`.
pub async fn run(ctx: Arc<Context>, stop: CancellationToken) -> anyhow::Result<()> {
    let history = ctx.revisions.clone();
    tokio::select! {
        () = stop.cancelled() => return Ok(()),
        () = history.wait_until_ready() => {}
    }
    let mut tasks = tokio::task::JoinSet::new();
    for kind in ctx.options.builtin_kinds.iter().cloned() {
        let Some(keeper) = Keeper::of(&kind.resource.group, &kind.resource.kind) else {
            continue;
        };
        if ctx.options.disabled_for(&kind) {
            continue;
        }
        let ctl = Arc::new(Ctl {
            ctx: ctx.clone(),
            kind,
            keeper,
            history: history.clone(),
            seen: Mutex::new(HashMap::new()),
        });
        tasks.spawn(ctl.run(stop.child_token()));
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

impl Ctl {
    async fn run(self: Arc<Self>, stop: CancellationToken) {
        let informer = self.ctx.informers.for_kind(&self.kind);
        let objects = self.ctx.objects.for_kind(&self.kind);
        objects
            .controller()
            .federated(&informer)
            .graceful_shutdown_on(async move { stop.cancelled().await })
            .run(reconcile, error_policy, self)
            .for_each(|_| async {})
            .await;
    }

    fn api(&self, ns: &str) -> Api<DynamicObject> {
        let ar = match self.keeper {
            Keeper::ReplicaSets => replica_sets(),
            Keeper::StatefulSet | Keeper::DaemonSet => controller_revisions(),
        };
        Api::namespaced_with(self.ctx.fed.clone(), ns, &ar)
    }

    /// Every name of the revision kind in `ns`.
    fn taken(&self, ns: &str) -> BTreeSet<String> {
        let store = match self.keeper {
            Keeper::ReplicaSets => self.history.replica_set_store(),
            Keeper::StatefulSet | Keeper::DaemonSet => self.history.controller_revision_store(),
        };
        store
            .state()
            .iter()
            .filter(|o| o.metadata.namespace.as_deref() == Some(ns))
            .map(|o| o.name_any())
            .collect()
    }

    async fn write(&self, fed: &Value, ns: &str, steps: &[Step]) -> Result<(), Error> {
        let api = self.api(ns);
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        for step in steps {
            match step {
                Step::Create(obj) => {
                    let obj: DynamicObject = serde_json::from_value(obj.clone())?;
                    let pp = PostParams {
                        field_manager: Some(FIELD_MANAGER.into()),
                        ..PostParams::default()
                    };
                    api.create(&pp, &obj).await?;
                    tracing::info!(workload = %fed_name(fed), revision = %obj.name_any(), "revision recorded");
                }
                Step::Patch { name, patch } => {
                    api.patch(name, &pp, &Patch::Merge(patch)).await?;
                }
                Step::Delete(name) => match api.delete(name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(e.into()),
                },
            }
        }
        Ok(())
    }

    /// Wait until the cache shows `steps` (at most [`SETTLE`]).
    async fn settle(&self, ns: &str, uid: &str, steps: &[Step]) {
        let deadline = tokio::time::Instant::now() + SETTLE;
        while tokio::time::Instant::now() < deadline {
            let owned = self.history.objects(self.keeper, ns, uid);
            let has = |n: &str| {
                owned
                    .iter()
                    .any(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(n))
            };
            let shown = steps.iter().all(|s| match s {
                Step::Create(o) => has(o
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()),
                Step::Delete(n) => !has(n),
                Step::Patch { name, patch } => owned.iter().any(|o| {
                    o.pointer("/metadata/name").and_then(Value::as_str) == Some(name.as_str())
                        && contains(o, patch)
                }),
            });
            if shown {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether `obj` carries every field of merge patch `patch`.
fn contains(obj: &Value, patch: &Value) -> bool {
    match (obj, patch) {
        (_, Value::Object(p)) => p.iter().all(|(k, v)| match obj.get(k) {
            None => v.is_null(),
            Some(o) => contains(o, v),
        }),
        (o, p) => o == p,
    }
}

fn fed_name(fed: &Value) -> String {
    fed.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn seen_of(obj: &DynamicObject) -> Seen {
    let annotations = obj.metadata.annotations.as_ref().map(|a| {
        let mut a = a.clone();
        a.remove(REVISION_ANNOTATION);
        serde_json::to_string(&a).unwrap_or_default()
    });
    (obj.metadata.generation.unwrap_or(0), annotations)
}

async fn reconcile(obj: Arc<DynamicObject>, ctl: Arc<Ctl>) -> Result<Action, Error> {
    // Revisions are kept for the workloads the federation rolls out itself
    // (a rollout strategy): a plain federated Deployment lists no
    // ReplicaSet of the federation's, so a client cannot tell that members
    // are joined (SPEC §3.8; the kubectl tests run again with members).
    let rolled_out = obj
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(crate::rollout::ROLLOUT_STRATEGY_ANNOTATION));
    if !rolled_out
        || ctl.ctx.members.snapshot().is_empty()
        || obj.metadata.deletion_timestamp.is_some()
    {
        return Ok(Action::await_change());
    }
    let (Some(uid), Some(ns)) = (obj.uid(), obj.namespace()) else {
        return Ok(Action::await_change());
    };
    let seen = seen_of(&obj);
    if ctl.seen.lock().get(&uid) == Some(&seen) {
        return Ok(Action::await_change());
    }
    let objects = ctl.ctx.objects.for_kind(&ctl.kind);
    let Some(full) = objects.fetch(&obj).await? else {
        ctl.seen.lock().remove(&uid);
        return Ok(Action::await_change());
    };
    let fed = kinds::to_value(&full, &ctl.kind)?;
    if !super::is_paused(&fed) {
        let owned = ctl.history.objects(ctl.keeper, &ns, &uid);
        let steps = plan::plan(ctl.keeper, &fed, &owned, &ctl.taken(&ns));
        if !steps.is_empty() {
            ctl.write(&fed, &ns, &steps).await?;
            ctl.settle(&ns, &uid, &steps).await;
        }
    }
    ctl.seen.lock().insert(uid, seen_of(&full));
    Ok(Action::await_change())
}

fn error_policy(obj: Arc<DynamicObject>, err: &Error, ctl: Arc<Ctl>) -> Action {
    tracing::debug!(kind = %ctl.kind.id(), name = %obj.name_any(), error = %err, "recording revisions failed; retrying");
    Action::requeue(Duration::from_secs(1))
}
