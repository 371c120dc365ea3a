//! **Standalone mode**: while the federation has no joined Cluster it is a
//! cluster of its own, and runs kube-controller-manager's workload
//! controllers for its own API ([`super::replicaset`],
//! [`super::deployment`], [`super::cronjob`]), as kube-apiserver + kcm
//! without nodes would (pods stay Pending). The moment a
//! `clusters.federation` object exists they stand back: the members'
//! controllers do that work and the federation sums their status; what they
//! made (Pods, ReplicaSets, Jobs, each labelled [`LABEL`] = the
//! controller's name) is deleted ([`delete_made`]), and none of it ever
//! propagates (a federation policy rule on the label). When the last
//! Cluster goes they start again.
//!
//! [`standalone`] is the predicate (read from the Cluster watch cache, no
//! list per call); [`run`] is the level-triggered loop each controller
//! shares: it follows the owner kind and its children over the registry's
//! watch, queues an owner on every change of it or of what it controls, and
//! syncs only while [`standalone`]. The controllers run only when
//! [`set_enabled`] said so (`ubernetes serve` with the federation
//! controllers and `--standalone-controllers` on; a member or the
//! difference harness's server, `--federation-controllers=false`, is a
//! plain kube-apiserver without kcm).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::labels::Selector;

use super::{Queue, follow, follow_listed, spawn_until};
use crate::registry::Registry;
use crate::store::{DeleteOptions, ReadAt, Store, WriteOptions};

/// The label on everything a standalone controller made; its value is the
/// controller's name (`replicaset`, `replicationcontroller`, `deployment`,
/// `cronjob`).
pub const LABEL: &str = "federation.kubernetes.io/standalone-controller";

/// The kinds a standalone controller makes: (group, version, resource).
const MADE: &[(&str, &str, &str)] = &[
    ("", "v1", "pods"),
    ("apps", "v1", "replicasets"),
    ("batch", "v1", "jobs"),
];

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether the standalone controllers run in this process (off unless the
/// binary turns them on: an embedded registry, as in tests, is a plain
/// API server).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Release);
}

/// See [`set_enabled`].
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// True while no `clusters.federation` object exists (or the registry
/// serves no Clusters): the federation stands alone. One lookup in the
/// Cluster store's watch cache, limited to one item.
pub fn standalone(registry: &Registry) -> bool {
    let Some(clusters) = registry.get(ubernetes_api::GROUP, ubernetes_api::VERSION, "clusters")
    else {
        return true;
    };
    let prefix = clusters.list_prefix(None);
    clusters.cache().list(&prefix, None, None, 1).0.is_empty()
}

/// Start kcm's workload controllers for standalone mode (ReplicaSets,
/// ReplicationControllers, Deployments, CronJobs) until `stop`, when
/// [`enabled`]; each acts only while [`standalone`].
pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) {
    if !enabled() {
        return;
    }
    tracing::info!(
        "starting the standalone controllers (deployment, replicaset, replicationcontroller, cronjob)"
    );
    super::replicaset::ReplicaSetController::start_until(registry.clone(), stop.clone());
    super::deployment::DeploymentController::start_until(registry.clone(), stop.clone());
    super::cronjob::CronJobController::start_until(registry, stop);
}

/// Delete every Pod, ReplicaSet and Job labelled [`LABEL`] = `controller`
/// (in the background: their own dependents follow through the garbage
/// collector). Returns how many were deleted.
pub async fn delete_made(registry: &Registry, controller: &str) -> usize {
    let mut deleted = 0;
    for (group, version, resource) in MADE {
        let Some(store) = registry.get(group, version, resource) else {
            continue;
        };
        let list = match store.list(None, None, 0, None, ReadAt::Latest).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(resource, error = %e, "standalone cleanup: list failed");
                continue;
            }
        };
        for item in &list.items {
            let Ok(obj) = serde_json::from_slice::<Value>(item) else {
                continue;
            };
            if made_by(&obj) != Some(controller) {
                continue;
            }
            let (ns, name) = key_of(&obj);
            let opts = DeleteOptions {
                propagation_policy: Some("Background".into()),
                ..Default::default()
            };
            match store.delete(ns.as_deref(), &name, &opts).await {
                Ok(_) => deleted += 1,
                Err(e) if e.code == 404 => {}
                Err(e) => {
                    tracing::warn!(resource, name, error = %e, "standalone cleanup: delete failed");
                }
            }
        }
    }
    if deleted > 0 {
        tracing::info!(
            controller,
            deleted,
            "a Cluster exists: the standalone controller stands back and deleted what it made"
        );
    }
    deleted
}

/// The controller that made `obj` ([`LABEL`]'s value).
pub fn made_by(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/labels")?.get(LABEL)?.as_str()
}

/// (namespace, name) of an object.
pub fn key_of(obj: &Value) -> (Option<String>, String) {
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    (ns, name)
}

/// The `controller: true` ownerReference of `obj`: (kind, name, uid).
pub fn controller_ref(obj: &Value) -> Option<(&str, &str, &str)> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| {
            Some((
                r.get("kind")?.as_str()?,
                r.get("name")?.as_str()?,
                r.get("uid")?.as_str()?,
            ))
        })
}

/// The ownerReference a controller puts on what it makes.
pub fn owner_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": owner.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "uid": owner.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Every object of `store` in `namespace` (all namespaces: `None`), from
/// its watch cache.
pub fn cached(store: &Store, namespace: Option<&str>) -> Vec<Value> {
    let prefix = store.list_prefix(namespace);
    store
        .cache()
        .list(&prefix, None, None, 0)
        .0
        .iter()
        .filter_map(|o| serde_json::from_slice(&o.json).ok())
        .collect()
}

/// Wait until `store`'s watch cache shows the write that produced `obj`,
/// so the next sync, which reads the cache, counts it (kube's controllers
/// keep "expectations" for the same reason).
pub async fn settle(store: &Store, obj: &Value) {
    let rv = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<u64>().ok());
    if let Some(rv) = rv {
        let _ = store.cache().wait_for_revision(rv).await;
    }
}

/// The labels of `obj` (none: empty).
pub fn labels_of(obj: &Value) -> BTreeMap<String, String> {
    crate::policy::labels_of(Some(obj))
}

/// The object `namespace/name` of `store`, from its watch cache.
pub fn cached_one(store: &Store, namespace: &str, name: &str) -> Option<Value> {
    let obj = store.cache().get(&store.key(Some(namespace), name))?;
    serde_json::from_slice(&obj.json).ok()
}

/// What a controller builds a child from: the owner's name, the template
/// at `template_ptr`, and the template's labels plus [`LABEL`] = `controller`.
pub fn template_parts(
    owner: &Value,
    template_ptr: &str,
    controller: &str,
) -> (String, Value, Value) {
    let name = owner
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let template = owner.pointer(template_ptr).cloned().unwrap_or(json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or(json!({}));
    labels[LABEL] = json!(controller);
    (name, template, labels)
}

/// Whether `obj` is being deleted.
pub fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// kube's `ControllerRefManager`: of `candidates` (objects of `store` in
/// the owner's namespace), those `owner` controls after adopting the
/// orphans `selector` matches and releasing those it controls that stopped
/// matching. A failed adopt or release is logged and left to the next sync.
pub async fn claim(
    store: &Store,
    owner: &Value,
    owner_ref: &Value,
    selector: &Selector,
    candidates: Vec<Value>,
) -> Vec<Value> {
    let owner_uid = owner.pointer("/metadata/uid").and_then(Value::as_str);
    let owner_deleting = deleting(owner);
    let mut owned = Vec::new();
    for obj in candidates {
        let matches = selector.matches(&labels_of(&obj));
        let (ns, name) = key_of(&obj);
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        match controller_ref(&obj) {
            Some((_, _, uid)) if Some(uid) == owner_uid => {
                if matches || deleting(&obj) {
                    owned.push(obj);
                    continue;
                }
                // Release: drop this owner's reference.
                let uid = uid.to_string();
                let res = store
                    .patch(ns.as_deref(), &name, None, &opts, |cur| {
                        let mut o = cur.clone();
                        if let Some(refs) = o
                            .pointer_mut("/metadata/ownerReferences")
                            .and_then(Value::as_array_mut)
                        {
                            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(&uid));
                        }
                        Ok(o)
                    })
                    .await;
                if let Err(e) = res {
                    tracing::debug!(name, error = %e, "release failed");
                }
            }
            None if matches && !owner_deleting && !deleting(&obj) => {
                let res = store
                    .patch(ns.as_deref(), &name, None, &opts, |cur| {
                        let mut o = cur.clone();
                        let meta = o
                            .get_mut("metadata")
                            .and_then(Value::as_object_mut)
                            .ok_or_else(|| ApiError::bad_request("no metadata"))?;
                        let refs = meta.entry("ownerReferences").or_insert_with(|| json!([]));
                        if let Some(refs) = refs.as_array_mut() {
                            refs.push(owner_ref.clone());
                        }
                        Ok(o)
                    })
                    .await;
                match res {
                    Ok(w) => {
                        settle(store, &w.object).await;
                        owned.push(w.object);
                    }
                    Err(e) => tracing::debug!(name, error = %e, "adopt failed"),
                }
            }
            _ => {}
        }
    }
    owned
}

/// The field manager of the standalone controllers' writes (kcm's).
pub const FIELD_MANAGER: &str = "kube-controller-manager";

/// Write `status` as `obj`'s status (the `status` subresource) when it
/// differs from the stored one.
pub async fn write_status(store: &Store, obj: &Value, status: Value) -> Result<(), ApiError> {
    if obj.get("status") == Some(&status) {
        return Ok(());
    }
    let (ns, name) = key_of(obj);
    let opts = WriteOptions {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match store
        .patch(ns.as_deref(), &name, Some("status"), &opts, |cur| {
            let mut o = cur.clone();
            o["status"] = status.clone();
            Ok(o)
        })
        .await
    {
        Ok(w) => {
            settle(store, &w.object).await;
            Ok(())
        }
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// A namespaced owner: (namespace, name).
pub type Key = (String, String);

/// One standalone controller: an owner kind, the kinds it controls, and a
/// sync of one owner.
pub trait Reconciler: Send + Sync + 'static {
    /// The controller's name, [`LABEL`]'s value on what it makes.
    fn name(&self) -> &'static str;
    /// The owner kind's `kind` and store.
    fn owner(&self) -> (&'static str, Arc<Store>);
    /// The stores of the kinds it controls (their changes queue the owner
    /// named by their controller reference; orphans queue every owner of
    /// their namespace, which may adopt them).
    fn children(&self) -> Vec<Arc<Store>>;
    /// Bring one owner to its wanted state; `Some(d)`: look again after `d`.
    fn sync(
        self: Arc<Self>,
        key: Key,
    ) -> impl Future<Output = Result<Option<Duration>, ApiError>> + Send;
}

pub(crate) fn queue_all(queue: &Queue<Key>, owner: &Store, namespace: Option<&str>) {
    for obj in cached(owner, namespace) {
        if let (Some(ns), name) = key_of(&obj) {
            queue.add((ns, name));
        }
    }
}

/// Run `r` until `stop`: follow its owner kind, its children and the
/// Clusters; sync queued owners while [`standalone`]; when standalone ends,
/// delete what `r` made (and again after a sync that was running when it
/// ended, which may have made something after that cleanup listed); when it
/// starts again, queue every owner.
pub fn run<R: Reconciler>(registry: Arc<Registry>, r: Arc<R>, stop: CancellationToken) {
    let queue: Arc<Queue<Key>> = Queue::new();
    let (owner_kind, owners) = r.owner();
    {
        let queue = queue.clone();
        follow(stop.clone(), owners.clone(), move |_, _, obj| {
            if let (Some(ns), name) = key_of(&obj) {
                queue.add((ns, name));
            }
        });
    }
    for child in r.children() {
        let queue = queue.clone();
        let owners = owners.clone();
        follow(stop.clone(), child, move |_, kind, obj| {
            let (ns, _) = key_of(&obj);
            let Some(ns) = ns else { return };
            match controller_ref(&obj) {
                Some((k, name, _)) if k == owner_kind => queue.add((ns, name.to_string())),
                Some(_) => {}
                None if kind != ubernetes_storage::EventType::Deleted => {
                    queue_all(&queue, &owners, Some(&ns));
                }
                None => {}
            }
        });
    }
    if let Some(clusters) = registry.get(ubernetes_api::GROUP, ubernetes_api::VERSION, "clusters") {
        let last: Arc<Mutex<Option<bool>>> = Arc::new(Mutex::new(None));
        let check = {
            let registry = registry.clone();
            let r = r.clone();
            let queue = queue.clone();
            let owners = owners.clone();
            let stop = stop.clone();
            move || {
                let now = standalone(&registry);
                let changed = last.lock().replace(now) != Some(now);
                if !changed {
                    return;
                }
                if now {
                    tracing::info!(
                        controller = r.name(),
                        "no Cluster: the standalone controller runs"
                    );
                    queue_all(&queue, &owners, None);
                } else {
                    let registry = registry.clone();
                    let name = r.name();
                    spawn_until(stop.clone(), async move {
                        delete_made(&registry, name).await;
                    });
                }
            }
        };
        let check = Arc::new(check);
        let on_event = check.clone();
        follow_listed(
            stop.clone(),
            clusters,
            move |_, _, _| on_event(),
            move |_| check(),
        );
    }
    spawn_until(stop, async move {
        loop {
            let key = queue.next().await;
            if !standalone(&registry) {
                continue;
            }
            let synced = r.clone().sync(key.clone()).await;
            if !standalone(&registry) {
                // A Cluster appeared while this sync ran: what it made after
                // the transition's cleanup listed goes too.
                delete_made(&registry, r.name()).await;
                continue;
            }
            match synced {
                Ok(Some(after)) => queue.add_after(key, after),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(controller = r.name(), namespace = %key.0, name = %key.1, error = %e, "standalone sync failed; retrying");
                    queue.add_after(key, Duration::from_secs(1));
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_ref_is_the_controlling_owner() {
        let obj = json!({"metadata": {"ownerReferences": [
            {"kind": "Foo", "name": "a", "uid": "1"},
            {"kind": "ReplicaSet", "name": "rs", "uid": "2", "controller": true},
        ]}});
        assert_eq!(controller_ref(&obj), Some(("ReplicaSet", "rs", "2")));
        assert_eq!(controller_ref(&json!({"metadata": {}})), None);
    }

    #[test]
    fn made_by_reads_the_label() {
        let obj = json!({"metadata": {"labels": {LABEL: "deployment"}}});
        assert_eq!(made_by(&obj), Some("deployment"));
        assert_eq!(made_by(&json!({"metadata": {"labels": {}}})), None);
    }
}
