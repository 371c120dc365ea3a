//! The CRD controller: what kube's apiextensions-apiserver controllers
//! (naming, establishing, finalizer, the CR handler's serving) do, in one
//! loop over the `customresourcedefinitions` store:
//!
//! - every CRD gets its `status` ([`accepted_status`] against all CRDs:
//!   `acceptedNames`, `NamesAccepted`, `Established`), written when it changed;
//! - an Established CRD is served: one [`Store`] per served version
//!   ([`custom_resource_strategy`]) added to the [`Registry`] (replaced when
//!   the CRD's spec or accepted names change), its schemas published into
//!   the OpenAPI definitions, its stores followed by the garbage collector,
//!   its printer columns remembered for Tables ([`printer_columns_of`]), and
//!   the `customresourcecleanup.apiextensions.k8s.io` finalizer added;
//! - a CRD with `spec.conversion.strategy: Webhook` has its versions served
//!   through its webhook ([`Registry::add_reviewed_version`], the converter
//!   from [`Registry::conversion_webhooks`]): objects are stored in the
//!   storage version, others are converted on every read and write;
//! - a CRD being deleted has every object of its resources deleted (all
//!   namespaces), then stops being served and loses its finalizer, so it goes.
//!
//! At start ([`CrdController::start`]) the existing Established CRDs are
//! served before it returns, so a restarted server answers for them at once.
//!
//! With several replicas ([`CrdController::start_with`] and a
//! [`Leadership`]) every replica serves the Established CRDs, but only the
//! leader writes: statuses, the finalizer, and the deletion of a deleted
//! CRD's objects. A replica that becomes leader re-syncs every CRD.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::mpsc;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_registry::Registry;
use ubernetes_registry::controllers::GarbageCollector;
use ubernetes_registry::conversion::review::ObjectConverter;
use ubernetes_registry::leader_election::Leadership;
use ubernetes_registry::store::{DeleteOptions, ReadAt, Store, finalizers};
use ubernetes_storage::EventType;

use crate::openapi::{publish, unpublish};
use crate::printer::printer_columns;
use crate::status::{accepted_status, is_established, resource_infos};

/// The finalizer kube puts on a CRD so its objects are deleted before it.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const GROUP: &str = "apiextensions.k8s.io";
const RESOURCE: &str = "customresourcedefinitions";

type Gvr = (String, String, String);

/// Printer columns of every served custom resource version, for Tables.
static COLUMNS: LazyLock<RwLock<HashMap<Gvr, Vec<Value>>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

fn gvr(info: &ResourceInfo) -> Gvr {
    (
        info.group.clone(),
        info.version.clone(),
        info.resource.clone(),
    )
}

/// The printer columns ([`printer_columns`]) of a served custom resource,
/// `None` for built-in kinds.
pub fn printer_columns_of(info: &ResourceInfo) -> Option<Vec<Value>> {
    COLUMNS.read().get(&gvr(info)).cloned()
}

/// What is served for one CRD.
/// Whether two resources are the same group/version/resource.
fn same_gvr(a: &ResourceInfo, b: &ResourceInfo) -> bool {
    a.group == b.group && a.version == b.version && a.resource == b.resource
}

struct Served {
    /// The spec and accepted names the stores were built from.
    fingerprint: Value,
    infos: Vec<ResourceInfo>,
    /// The CRD as last served (to unpublish its definitions).
    crd: Value,
}

/// What [`CrdController::sync`] asks of the loop.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    Done,
    /// Objects are still going away: look again soon.
    Again,
}

/// The CRD controller (see the module documentation).
pub struct CrdController {
    registry: Arc<Registry>,
    /// The garbage collector that follows the custom resources' stores
    /// (the leader's current one, with leader election).
    gc: Mutex<Option<Arc<GarbageCollector>>>,
    /// `None`: this process always writes (a single server).
    leadership: Option<Leadership>,
    tx: mpsc::UnboundedSender<String>,
    served: Mutex<HashMap<String, Served>>,
}

/// A storage version (`group/version`) and the converter to and from it.
type WebhookConversion = (String, Arc<dyn ObjectConverter>);

/// For a CRD with `spec.conversion.strategy: Webhook`: its storage
/// version and the converter calling its webhook.
fn webhook_conversion(
    registry: &Registry,
    crd: &Value,
) -> Result<Option<WebhookConversion>, ApiError> {
    let Some(conversion) = crd
        .pointer("/spec/conversion")
        .filter(|c| c.get("strategy").and_then(Value::as_str) == Some("Webhook"))
    else {
        return Ok(None);
    };
    let name = name_of(crd).unwrap_or("");
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .ok_or_else(|| ApiError::internal(format!("CRD {name} has no storage version")))?;
    let webhooks = registry.conversion_webhooks().ok_or_else(|| {
        ApiError::internal(format!(
            "CRD {name} converts by webhook, and this server calls no conversion webhooks"
        ))
    })?;
    let converter = webhooks
        .converter(conversion.get("webhook").unwrap_or(&Value::Null))
        .map_err(|e| ApiError::internal(format!("the conversion webhook of CRD {name}: {e}")))?;
    Ok(Some((format!("{group}/{storage}"), converter)))
}

fn name_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/name").and_then(Value::as_str)
}

fn fingerprint(crd: &Value) -> Value {
    serde_json::json!([
        crd.get("spec").cloned().unwrap_or(Value::Null),
        crd.pointer("/status/acceptedNames")
            .cloned()
            .unwrap_or(Value::Null),
    ])
}

impl CrdController {
    /// Serve the existing Established CRDs, then follow the CRD store until
    /// the registry stops. `None` when the registry has no CRD store.
    pub async fn start(
        registry: Arc<Registry>,
        gc: Option<Arc<GarbageCollector>>,
    ) -> Option<Arc<Self>> {
        Self::start_with(registry, gc, None).await
    }

    /// [`CrdController::start`] where only the leader of `leadership`
    /// writes (see the module documentation).
    pub async fn start_with(
        registry: Arc<Registry>,
        gc: Option<Arc<GarbageCollector>>,
        leadership: Option<Leadership>,
    ) -> Option<Arc<Self>> {
        let crds = registry.get(GROUP, "v1", RESOURCE)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let c = Arc::new(Self {
            registry: registry.clone(),
            gc: Mutex::new(gc),
            leadership,
            tx,
            served: Mutex::new(HashMap::new()),
        });
        // Serve what exists before answering any request.
        if let Ok(list) = crds.list(None, None, 0, None, ReadAt::Latest).await {
            for item in &list.items {
                if let Ok(crd) = serde_json::from_slice::<Value>(item)
                    && is_established(&crd)
                    && crd.pointer("/metadata/deletionTimestamp").is_none()
                    && let Err(e) = c.serve(&crd).await
                {
                    tracing::warn!(crd = name_of(&crd).unwrap_or(""), error = %e, "cannot serve a custom resource");
                }
            }
        }
        let observer = c.clone();
        follow(registry.clone(), crds.clone(), move |_, obj| {
            if let Some(name) = name_of(&obj) {
                let _ = observer.tx.send(name.to_string());
            }
        });
        if let Some(leadership) = &c.leadership {
            // A new leader looks at every CRD (statuses, finalizers).
            let crds = crds.clone();
            let tx = c.tx.clone();
            leadership.on_leading(move |_| {
                let crds = crds.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Ok(list) = crds.list(None, None, 0, None, ReadAt::Latest).await {
                        for item in &list.items {
                            if let Ok(v) = serde_json::from_slice::<Value>(item)
                                && let Some(n) = name_of(&v)
                            {
                                let _ = tx.send(n.to_string());
                            }
                        }
                    }
                });
            });
        }
        let worker = c.clone();
        let stop = registry.stop_token();
        tokio::spawn(async move {
            let work = async {
                while let Some(name) = rx.recv().await {
                    let delay = match worker.sync(&name).await {
                        Ok(Next::Done) => None,
                        Ok(Next::Again) => Some(Duration::from_millis(200)),
                        Err(e) => {
                            tracing::debug!(crd = %name, error = %e, "CRD sync failed; retrying");
                            Some(Duration::from_secs(1))
                        }
                    };
                    if let Some(delay) = delay {
                        let tx = worker.tx.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(delay).await;
                            let _ = tx.send(name);
                        });
                    }
                }
            };
            tokio::select! {
                () = stop.cancelled() => {}
                () = work => {}
            }
        });
        Some(c)
    }

    fn crds(&self) -> Result<Arc<Store>, ApiError> {
        self.registry
            .get(GROUP, "v1", RESOURCE)
            .ok_or_else(|| ApiError::internal("the CRD store is not served"))
    }

    /// Have `gc` follow the custom resources' stores served from now on:
    /// the garbage collector of a new leadership term, started just before
    /// (it follows every store served then, custom ones included).
    pub fn set_garbage_collector(&self, gc: Option<Arc<GarbageCollector>>) {
        *self.gc.lock() = gc;
    }

    fn leads(&self) -> bool {
        self.leadership.as_ref().is_none_or(Leadership::is_leader)
    }

    async fn sync(&self, name: &str) -> Result<Next, ApiError> {
        let crds = self.crds()?;
        let crd = match crds.get_value(None, name).await {
            Ok(c) => c,
            Err(e) if e.code == 404 => {
                self.unserve(name);
                self.requeue_others(&crds, name).await;
                return Ok(Next::Done);
            }
            Err(e) => return Err(e),
        };
        if !self.leads() {
            // Serve what the leader established; write nothing.
            let deleting = crd.pointer("/metadata/deletionTimestamp").is_some();
            if deleting && !finalizers(&crd).iter().any(|f| f == CLEANUP_FINALIZER) {
                self.unserve(name);
            } else if is_established(&crd) && !deleting {
                self.serve(&crd).await?;
            }
            return Ok(Next::Done);
        }
        if crd.pointer("/metadata/deletionTimestamp").is_some() {
            return self.finalize(&crds, name, &crd).await;
        }
        let all: Vec<Value> = crds
            .list(None, None, 0, None, ReadAt::Latest)
            .await?
            .items
            .iter()
            .filter_map(|i| serde_json::from_slice(i).ok())
            .collect();
        let status = accepted_status(&crd, &all);
        if crd.get("status") != Some(&status) {
            // Serve before reporting Established, so a client that waits for
            // the condition can use the resource at once (as kube-apiserver).
            let mut candidate = crd.clone();
            if let Value::Object(m) = &mut candidate {
                m.insert("status".into(), status.clone());
            }
            if is_established(&candidate) {
                self.serve(&candidate).await?;
            }
            let res = crds
                .system_update(None, name, |mut cur| {
                    if cur.get("status") == Some(&status) {
                        return Ok(None);
                    }
                    if let Value::Object(m) = &mut cur {
                        m.insert("status".into(), status.clone());
                    }
                    Ok(Some(cur))
                })
                .await;
            return match res {
                // The update's watch event brings it back here.
                Ok(_) => Ok(Next::Done),
                Err(e) if e.code == 404 => Ok(Next::Done),
                Err(e) => Err(e),
            };
        }
        if !is_established(&crd) {
            return Ok(Next::Done);
        }
        if !finalizers(&crd).iter().any(|f| f == CLEANUP_FINALIZER) {
            let res = crds
                .system_update(None, name, |mut cur| {
                    let mut f = finalizers(&cur);
                    if f.iter().any(|x| x == CLEANUP_FINALIZER) {
                        return Ok(None);
                    }
                    f.push(CLEANUP_FINALIZER.to_string());
                    if let Some(Value::Object(meta)) = cur.get_mut("metadata") {
                        meta.insert("finalizers".into(), serde_json::json!(f));
                    }
                    Ok(Some(cur))
                })
                .await;
            return match res {
                Ok(_) => Ok(Next::Done),
                Err(e) if e.code == 404 => Ok(Next::Done),
                Err(e) => Err(e),
            };
        }
        self.serve(&crd).await?;
        Ok(Next::Done)
    }

    /// Other CRDs of the same group may now get names this one held.
    async fn requeue_others(&self, crds: &Store, gone: &str) {
        if let Ok(list) = crds.list(None, None, 0, None, ReadAt::Latest).await {
            for item in &list.items {
                if let Ok(v) = serde_json::from_slice::<Value>(item)
                    && let Some(n) = name_of(&v)
                    && n != gone
                {
                    let _ = self.tx.send(n.to_string());
                }
            }
        }
    }

    /// Serve the CRD's versions (no-op when already served as it is).
    async fn serve(&self, crd: &Value) -> Result<(), ApiError> {
        let Some(name) = name_of(crd) else {
            return Ok(());
        };
        let fp = fingerprint(crd);
        if self
            .served
            .lock()
            .get(name)
            .is_some_and(|s| s.fingerprint == fp)
        {
            return Ok(());
        }
        // What this CRD served so far keeps being served until its
        // replacement is in place (kube swaps the handler of a changed CRD;
        // clients never see the resource vanish).
        let previous = self.served.lock().remove(name);
        let infos = resource_infos(crd);
        let mut added = Vec::new();
        let mut replaced = Vec::new();
        for info in &infos {
            let ours = previous
                .as_ref()
                .is_some_and(|p| p.infos.iter().any(|i| same_gvr(i, info)));
            if let Some(old) = self
                .registry
                .get(&info.group, &info.version, &info.resource)
            {
                if !ours {
                    // Another CRD (or a built-in) already serves it: leave it.
                    tracing::warn!(resource = %info.resource, group = %info.group, kind = %old.info().kind, "resource already served; not serving it for the CRD");
                    continue;
                }
                replaced.push(old);
            }
            let strategy = crate::custom::custom_resource_strategy(crd, &info.version);
            let store = match webhook_conversion(&self.registry, crd)? {
                Some((storage_version, converter)) => {
                    self.registry
                        .add_reviewed_version(strategy, &storage_version, converter)
                        .await?
                }
                None => self.registry.add_shared_version(strategy).await?,
            };
            COLUMNS
                .write()
                .insert(gvr(info), printer_columns(crd, &info.version));
            if let Some(gc) = &*self.gc.lock() {
                gc.follow_store(store.clone());
            }
            added.push(info.clone());
        }
        for old in &replaced {
            self.registry.retire(old);
        }
        if let Some(previous) = previous {
            for info in previous
                .infos
                .iter()
                .filter(|i| !added.iter().any(|a| same_gvr(a, i)))
            {
                self.registry
                    .remove(&info.group, &info.version, &info.resource);
                COLUMNS.write().remove(&gvr(info));
            }
            unpublish(&previous.crd);
        }
        publish(crd);
        tracing::info!(
            crd = name,
            versions = added.len(),
            "serving custom resource"
        );
        self.served.lock().insert(
            name.to_string(),
            Served {
                fingerprint: fp,
                infos: added,
                crd: crd.clone(),
            },
        );
        Ok(())
    }

    /// Stop serving what was served for the CRD `name`.
    fn unserve(&self, name: &str) {
        let Some(old) = self.served.lock().remove(name) else {
            return;
        };
        for info in &old.infos {
            self.registry
                .remove(&info.group, &info.version, &info.resource);
            COLUMNS.write().remove(&gvr(info));
        }
        unpublish(&old.crd);
    }

    /// A CRD being deleted: delete its objects, then stop serving it and
    /// drop the cleanup finalizer.
    async fn finalize(&self, crds: &Store, name: &str, crd: &Value) -> Result<Next, ApiError> {
        if !finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER) {
            self.unserve(name);
            return Ok(Next::Done);
        }
        if is_established(crd) && !self.served.lock().contains_key(name) {
            // Serve it so its objects can be found and deleted.
            self.serve(crd).await?;
        }
        let infos = self
            .served
            .lock()
            .get(name)
            .map(|s| s.infos.clone())
            .unwrap_or_default();
        let mut remaining = 0usize;
        for info in &infos {
            let Some(store) = self
                .registry
                .get(&info.group, &info.version, &info.resource)
            else {
                continue;
            };
            let list = store.list(None, None, 0, None, ReadAt::Latest).await?;
            for item in &list.items {
                remaining += 1;
                let Ok(v) = serde_json::from_slice::<Value>(item) else {
                    continue;
                };
                if v.pointer("/metadata/deletionTimestamp").is_some() {
                    continue;
                }
                let Some(obj_name) = name_of(&v) else {
                    continue;
                };
                let ns = v
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty());
                match store.delete(ns, obj_name, &DeleteOptions::default()).await {
                    Ok(_) => {}
                    Err(e) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if remaining > 0 {
            return Ok(Next::Again);
        }
        self.unserve(name);
        let res = crds
            .system_update(None, name, |mut cur| {
                let mut f = finalizers(&cur);
                let before = f.len();
                f.retain(|x| x != CLEANUP_FINALIZER);
                if f.len() == before {
                    return Ok(None);
                }
                if let Some(Value::Object(meta)) = cur.get_mut("metadata") {
                    meta.insert("finalizers".into(), serde_json::json!(f));
                }
                Ok(Some(cur))
            })
            .await;
        match res {
            Ok(_) => {
                tracing::info!(crd = name, "custom resources deleted; CRD finalized");
                Ok(Next::Done)
            }
            Err(e) if e.code == 404 => Ok(Next::Done),
            Err(e) => Err(e),
        }
    }
}

/// Follow every change of `store` (initially each object as `Added`) until
/// the registry stops; the watch is re-established after errors.
fn follow<H>(registry: Arc<Registry>, store: Arc<Store>, handle: H)
where
    H: Fn(EventType, Value) + Send + Sync + 'static,
{
    let stop = registry.stop_token();
    drop(registry);
    let work = async move {
        loop {
            let list = match store.list(None, None, 0, None, ReadAt::Latest).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, "CRD list failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            for item in &list.items {
                if let Ok(v) = serde_json::from_slice::<Value>(item) {
                    handle(EventType::Added, v);
                }
            }
            let mut rx = match store.watch(None, list.resource_version, None).await {
                Ok(rx) => rx,
                Err(e) => {
                    tracing::warn!(error = %e, "CRD watch failed; relisting");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            while let Some(ev) = rx.recv().await {
                match ev {
                    Ok(ev) => {
                        if let Ok(v) = serde_json::from_slice::<Value>(&ev.object.json) {
                            handle(ev.kind, v);
                        }
                    }
                    Err(_) => break,
                }
            }
        }
    };
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = work => {}
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;
    use ubernetes_registry::RegistryOptions;
    use ubernetes_registry::store::WriteOptions;
    use ubernetes_storage::Storage;
    use ubernetes_storage::sled_engine::SledStorage;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
        })
    }

    async fn registry(dir: &std::path::Path) -> Arc<Registry> {
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir).unwrap());
        registry_on(storage).await
    }

    async fn registry_on(storage: Arc<dyn Storage>) -> Arc<Registry> {
        Registry::new(
            storage,
            vec![crate::crd_strategy()],
            RegistryOptions::default(),
        )
        .await
        .unwrap()
    }

    /// Poll `f` (the controller works in the background) for up to 10 s.
    async fn until(mut f: impl AsyncFnMut() -> bool) {
        for _ in 0..200 {
            if f().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("condition not met in time");
    }

    #[tokio::test]
    async fn an_established_crd_is_served_and_its_deletion_deletes_its_objects_first() {
        let dir = tempfile::tempdir().unwrap();
        let registry = registry(dir.path()).await;
        CrdController::start(registry.clone(), None).await.unwrap();
        let crds = registry.get(GROUP, "v1", RESOURCE).unwrap();
        crds.create(None, None, crd(), &WriteOptions::default())
            .await
            .unwrap();
        // Served first, then Established is written (as kube-apiserver):
        // wait for the condition, then the resource must already be served.
        until(async || {
            crds.get_value(None, "widgets.example.com")
                .await
                .is_ok_and(|c| is_established(&c))
        })
        .await;
        assert!(registry.get("example.com", "v1", "widgets").is_some());
        let stored = crds.get_value(None, "widgets.example.com").await.unwrap();
        assert_eq!(finalizers(&stored), [CLEANUP_FINALIZER]);
        let info = registry
            .get("example.com", "v1", "widgets")
            .unwrap()
            .info()
            .clone();
        assert_eq!(
            printer_columns_of(&info).unwrap()[0]["jsonPath"],
            ".spec.size"
        );

        let widgets = registry.get("example.com", "v1", "widgets").unwrap();
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 3}});
        widgets
            .create(None, Some("default"), w, &WriteOptions::default())
            .await
            .unwrap();

        crds.delete(None, "widgets.example.com", &DeleteOptions::default())
            .await
            .unwrap();
        until(async || {
            crds.get_value(None, "widgets.example.com")
                .await
                .is_err_and(|e| e.code == 404)
        })
        .await;
        assert!(registry.get("example.com", "v1", "widgets").is_none());
        assert!(printer_columns_of(&info).is_none());
        let left = widgets
            .list(None, None, 0, None, ReadAt::Latest)
            .await
            .unwrap();
        assert!(left.items.is_empty(), "objects outlived their CRD");
        registry.shutdown();
    }

    #[tokio::test]
    async fn established_crds_are_served_again_when_the_controller_starts() {
        let dir = tempfile::tempdir().unwrap();
        // One engine, two servers one after the other (a restart).
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).unwrap());
        {
            let registry = registry_on(storage.clone()).await;
            CrdController::start(registry.clone(), None).await.unwrap();
            let crds = registry.get(GROUP, "v1", RESOURCE).unwrap();
            let mut c = crd();
            c["metadata"]["name"] = json!("gadgets.example.org");
            c["spec"]["group"] = json!("example.org");
            c["spec"]["names"] =
                json!({"plural": "gadgets", "singular": "gadget", "kind": "Gadget"});
            crds.create(None, None, c, &WriteOptions::default())
                .await
                .unwrap();
            // Established is written after the resource is served: wait
            // for it, or the restart below finds a CRD not yet Established.
            until(async || {
                crds.get_value(None, "gadgets.example.org")
                    .await
                    .is_ok_and(|c| is_established(&c))
            })
            .await;
            registry.shutdown();
        }
        let registry = registry_on(storage).await;
        CrdController::start(registry.clone(), None).await.unwrap();
        // Served as soon as start returns, without waiting for the loop.
        assert!(registry.get("example.org", "v1", "gadgets").is_some());
        registry.shutdown();
    }
}
