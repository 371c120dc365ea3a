//! The revisions of federated workloads, kept in the federation the way
//! kube keeps them in a cluster, so `kubectl rollout history` and
//! `kubectl rollout undo` work against the federation unchanged (SPEC
//! §3.11, issue 23 item 3):
//!
//! - a Deployment's history is the **ReplicaSets** it controls
//!   (ownerReference `controller: true` with its uid, the labels of its
//!   template plus `pod-template-hash`, annotation
//!   `deployment.kubernetes.io/revision`, `spec.replicas: 0`); unlike
//!   kube's controller it does not write that annotation on the Deployment
//!   (the user's object is the user's, SPEC §3.8: a Deployment's annotation
//!   change bumps its generation) — kubectl reads the ReplicaSets;
//! - a StatefulSet's or DaemonSet's is the **ControllerRevisions** it
//!   controls (`data` = the strategic merge patch that puts the template
//!   back, `{"spec":{"template":{…,"$patch":"replace"}}}`, and `revision`).
//!
//! These objects never leave the federation (a [`crate::policy`] rule: a
//! ReplicaSet or ControllerRevision controlled by an `apps` workload stays
//! home) and the garbage collector removes them with their owner. Each
//! member's own controllers keep the member's history of its copy.
//!
//! [`History`] is the shared cache of them (one reflector per kind,
//! started on first use); [`list`] reads a workload's revisions from it.
//! The controller that writes them ([`run`], leader only) lives in
//! [`controller`]; the pure rules (names, hashes, what to create, bump or
//! prune) in [`plan`] and [`hash`].

pub mod controller;
pub mod hash;
pub mod plan;

use std::sync::{Arc, OnceLock};

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use controller::run;

/// The annotation holding a Deployment revision's number (on the
/// ReplicaSet; kube's controller also writes it on the Deployment, ours
/// does not, and member copies never carry it).
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// The annotation kubectl's `--record` and users write the reason of a
/// change into; kubectl's history prints it.
pub const CHANGE_CAUSE_ANNOTATION: &str = "kubernetes.io/change-cause";
/// The label a Deployment's ReplicaSets carry their template hash in.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// The label a StatefulSet's ControllerRevisions carry their hash in.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// The label a DaemonSet's ControllerRevisions carry their hash in.
pub const DAEMON_SET_HASH_LABEL: &str = "controller-revision-hash";

/// One revision of a federated workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Revision {
    /// Its number (`deployment.kubernetes.io/revision`, or a
    /// ControllerRevision's `revision`).
    pub number: i64,
    /// Its hash (the `pod-template-hash` label of a ReplicaSet, the hash
    /// label of a ControllerRevision).
    pub hash: String,
    /// The workload's `spec.template` of that revision, as the workload
    /// carried it: a ReplicaSet's template without the `pod-template-hash`
    /// label kube adds, a ControllerRevision's `data.spec.template` without
    /// its `$patch` directive. What to send a member to put it back.
    pub template: Value,
}

/// The federated workload's revisions known to the federation, oldest
/// (lowest number) first, read from [`History`]'s cache (no API call;
/// empty until the cache has listed). `workload` is the federated object
/// as JSON with its `apiVersion`, `kind` and `metadata.uid`
/// ([`crate::kinds::to_value`]); other kinds have none.
pub fn list(ctx: &crate::Context, workload: &Value) -> Vec<Revision> {
    ctx.revisions.of(workload)
}

/// Whether the federated workload is paused (`spec.paused`, which
/// `kubectl rollout pause` sets on a Deployment): no new revision is
/// recorded while it is, as kube's deployment controller does, and no new
/// rollout wave may start (SPEC §3.11: pause holds the waves where they
/// are).
pub fn is_paused(workload: &Value) -> bool {
    workload.pointer("/spec/paused").and_then(Value::as_bool) == Some(true)
}

/// Which history a workload kind keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keeper {
    /// ReplicaSets (a Deployment).
    ReplicaSets,
    /// ControllerRevisions of a StatefulSet (kube's `history` package).
    StatefulSet,
    /// ControllerRevisions of a DaemonSet (its controller's own names).
    DaemonSet,
}

impl Keeper {
    /// The keeper of `apps` kind `kind`; `None` for other kinds.
    pub fn of(group: &str, kind: &str) -> Option<Self> {
        match (group, kind) {
            ("apps", "Deployment") => Some(Self::ReplicaSets),
            ("apps", "StatefulSet") => Some(Self::StatefulSet),
            ("apps", "DaemonSet") => Some(Self::DaemonSet),
            _ => None,
        }
    }

    /// The keeper of the workload `obj` (by its `apiVersion` and `kind`).
    pub fn of_object(obj: &Value) -> Option<Self> {
        let gk = crate::policy::GroupKind::of_object(obj)?;
        Self::of(&gk.group, &gk.kind)
    }
}

/// The `apps/v1` ReplicaSet resource.
pub fn replica_sets() -> ApiResource {
    crate::kinds::FederatedKind::new("apps", "v1", "ReplicaSet", "replicasets", true).resource
}

/// The `apps/v1` ControllerRevision resource.
pub fn controller_revisions() -> ApiResource {
    crate::kinds::FederatedKind::new(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        true,
    )
    .resource
}

/// The kind of the `apps` workload controlling `obj` (its ownerReference
/// with `controller: true`), with the owner's uid.
pub fn controller_of(obj: &Value) -> Option<(&str, &str)> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .filter(|r| {
            r.get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with("apps/"))
        })
        .and_then(|r| Some((r.get("kind")?.as_str()?, r.get("uid")?.as_str()?)))
}

struct Stores {
    replica_sets: Store<DynamicObject>,
    controller_revisions: Store<DynamicObject>,
}

/// The shared cache of the federation's ReplicaSets and
/// ControllerRevisions, each lean: metadata (no `managedFields`) and, for
/// one controlled by an `apps` workload, what a revision is made of (a
/// ReplicaSet's `spec.template`, a ControllerRevision's `data` and
/// `revision`). Started on first use, stopped with the context's token.
pub struct History {
    fed: kube::Client,
    stop: CancellationToken,
    stores: OnceLock<Stores>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("started", &self.stores.get().is_some())
            .finish_non_exhaustive()
    }
}

impl History {
    /// Not started yet; it watches the federation through `fed` until
    /// `stop` once used.
    pub fn new(fed: kube::Client, stop: CancellationToken) -> Arc<Self> {
        Arc::new(Self {
            fed,
            stop,
            stores: OnceLock::new(),
        })
    }

    fn stores(&self) -> &Stores {
        self.stores.get_or_init(|| Stores {
            replica_sets: self.watch(replica_sets()),
            controller_revisions: self.watch(controller_revisions()),
        })
    }

    fn watch(&self, ar: ApiResource) -> Store<DynamicObject> {
        let writer = reflector::store::Writer::new(ar.clone());
        let store = writer.as_reader();
        let api: Api<DynamicObject> = Api::all_with(self.fed.clone(), &ar);
        let stop = self.stop.clone();
        let plural = ar.plural.clone();
        let mut stream = reflector::reflector(
            writer,
            watcher::watcher(api, watcher::Config::default()).modify(lean),
        )
        .default_backoff()
        .boxed();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    () = stop.cancelled() => break,
                    e = stream.next() => e,
                };
                match event {
                    None => break,
                    Some(Err(e)) => {
                        tracing::debug!(resource = %plural, error = %e, "revision watch failed; retrying");
                    }
                    Some(Ok(_)) => {}
                }
            }
        });
        store
    }

    /// The ReplicaSets' cache.
    pub fn replica_set_store(&self) -> &Store<DynamicObject> {
        &self.stores().replica_sets
    }

    /// The ControllerRevisions' cache.
    pub fn controller_revision_store(&self) -> &Store<DynamicObject> {
        &self.stores().controller_revisions
    }

    /// Wait until both caches have listed (they start now if not yet).
    pub async fn wait_until_ready(&self) {
        let s = self.stores();
        // Not `Store::wait_until_ready`: see crate::ready.
        crate::ready::wait_listed(&s.replica_sets).await;
        crate::ready::wait_listed(&s.controller_revisions).await;
    }

    /// The revision objects (lean, as JSON) `keeper` keeps in `namespace`
    /// for the workload of uid `owner`.
    pub fn objects(&self, keeper: Keeper, namespace: &str, owner: &str) -> Vec<Value> {
        let store = match keeper {
            Keeper::ReplicaSets => &self.stores().replica_sets,
            Keeper::StatefulSet | Keeper::DaemonSet => &self.stores().controller_revisions,
        };
        store
            .state()
            .iter()
            .filter(|o| o.metadata.namespace.as_deref() == Some(namespace))
            .filter_map(|o| serde_json::to_value(&**o).ok())
            .filter(|v| controller_of(v).is_some_and(|(_, uid)| uid == owner))
            .collect()
    }

    /// The revisions of `workload` ([`list`]).
    pub fn of(&self, workload: &Value) -> Vec<Revision> {
        let Some(keeper) = Keeper::of_object(workload) else {
            return Vec::new();
        };
        let (Some(ns), Some(uid)) = (
            workload
                .pointer("/metadata/namespace")
                .and_then(Value::as_str),
            workload.pointer("/metadata/uid").and_then(Value::as_str),
        ) else {
            return Vec::new();
        };
        let mut out: Vec<Revision> = self
            .objects(keeper, ns, uid)
            .iter()
            .filter_map(|o| plan::revision_of(keeper, o))
            .collect();
        out.sort_by_key(|r| r.number);
        out
    }
}

/// What [`History`] keeps of a ReplicaSet or ControllerRevision.
fn lean(obj: &mut DynamicObject) {
    obj.metadata.managed_fields = None;
    let controlled = obj
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|r| r.controller == Some(true) && r.api_version.starts_with("apps/"));
    let mut kept = Map::new();
    if controlled {
        if let Some(t) = obj.data.pointer("/spec/template") {
            kept.insert("spec".into(), serde_json::json!({ "template": t }));
        }
        for field in ["data", "revision"] {
            if let Some(v) = obj.data.get(field) {
                kept.insert(field.into(), v.clone());
            }
        }
    }
    obj.data = Value::Object(kept);
}
