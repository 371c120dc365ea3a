//! The APIService controllers kube-apiserver's aggregator runs, here over
//! the registry directly (see [`crate::controllers`] for why):
//!
//! - **autoregister** (`kube-aggregator/pkg/controllers/autoregister` with
//!   kube-apiserver's `apiServicesToRegister` and `crdregistration`): one
//!   `Local` APIService per group/version this server serves, named
//!   `version.group` (`v1.` for core). The built-in ones carry the label
//!   `kube-aggregator.kubernetes.io/automanaged: onstart` and kube's
//!   priorities; those of custom resources (every served version of every
//!   CRD) carry `automanaged: "true"` and priorities 1000 / 100 and go when
//!   the version is no longer served or the CRD is deleted. An automanaged
//!   APIService that is edited is put back; one that is deleted comes back;
//!   an APIService without the label is the user's and left alone.
//! - **availability** (`kube-aggregator/pkg/controllers/status`): the
//!   `Available` condition of every APIService. `Local` ones are available;
//!   one backed by a Service is not: `ServiceNotFound` / `ServicePortError`
//!   as kube says them, else `FailedDiscoveryCheck` saying that this server
//!   does not proxy to aggregated API servers yet.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use crate::controllers::{Queue, follow, spawn_until};
use crate::kinds::apiregistration::{self, CRD_PRIORITY, GROUP, api_service_name};
use crate::registry::Registry;
use crate::store::{DeleteOptions, ReadAt, Store, WriteOptions, now_rfc3339};

/// The label kube's autoregister controller marks its APIServices with.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
/// Its value on the built-in group/versions (synced once at start in kube).
pub const ON_START: &str = "onstart";
/// Its value on custom resources' group/versions (always kept in sync).
pub const ALWAYS: &str = "true";

/// The message of a Local APIService's `Available` condition (kube's).
const LOCAL_MESSAGE: &str = "Local APIServices are always available";

/// Who the controller's writes are attributed to.
const FIELD_MANAGER: &str = "kube-apiserver";

/// What an automanaged APIService should look like.
#[derive(Debug, Clone, PartialEq)]
struct Desired {
    group: String,
    version: String,
    priority: (i32, i32),
    label: &'static str,
}

impl Desired {
    fn spec(&self) -> Value {
        let mut spec = json!({
            "version": self.version,
            "groupPriorityMinimum": self.priority.0,
            "versionPriority": self.priority.1,
        });
        if !self.group.is_empty() {
            spec["group"] = json!(self.group);
        }
        spec
    }
}

/// The autoregister and availability controllers.
pub struct ApiServiceController {
    registry: Arc<Registry>,
    /// The built-in group/versions, by APIService name.
    builtin: BTreeMap<String, Desired>,
    /// Each CRD's served group/versions, by CRD name.
    crds: Mutex<HashMap<String, Vec<(String, String)>>>,
    /// Service-backed APIServices → `(namespace, name)` of their Service.
    backed_by: Mutex<HashMap<String, (String, String)>>,
    queue: Arc<Queue<String>>,
}

impl ApiServiceController {
    /// Start the controllers. Call before any CRD's resource is added to the
    /// registry: the group/versions served at that point, with those of
    /// `also_served` (resources served outside the registry, such as the
    /// review APIs), are the built-in ones (every one but
    /// `apiregistration.k8s.io` itself, which kube-apiserver does not register
    /// either). `None` when APIServices are not served.
    ///
    /// The built-in APIServices are registered, Available, before this
    /// returns (kube's `autoregister-completion` check passes from the start).
    pub async fn start(
        registry: Arc<Registry>,
        also_served: Vec<ubernetes_apimachinery::ResourceInfo>,
    ) -> Option<Arc<Self>> {
        let builtin: Vec<_> = registry
            .resources()
            .into_iter()
            .chain(also_served)
            .collect();
        let stop = registry.stop_token();
        Self::start_until(registry, builtin, stop).await
    }

    /// [`ApiServiceController::start`] with the built-in resources taken
    /// beforehand (the controller may start later, in a leadership term,
    /// when CRDs are already served), working until `stop`.
    pub async fn start_until(
        registry: Arc<Registry>,
        builtin_resources: Vec<ubernetes_apimachinery::ResourceInfo>,
        stop: tokio_util::sync::CancellationToken,
    ) -> Option<Arc<Self>> {
        let store = registry.get(GROUP, "v1", "apiservices")?;
        let mut builtin = BTreeMap::new();
        for r in builtin_resources {
            if r.group == GROUP {
                continue;
            }
            builtin
                .entry(api_service_name(&r.group, &r.version))
                .or_insert_with(|| Desired {
                    priority: apiregistration::priority(&r.group, &r.version),
                    group: r.group.clone(),
                    version: r.version.clone(),
                    label: ON_START,
                });
        }
        let c = Arc::new(Self {
            registry,
            builtin,
            crds: Mutex::new(HashMap::new()),
            backed_by: Mutex::new(HashMap::new()),
            queue: Queue::new(),
        });
        for name in c.builtin.keys() {
            c.queue.add(name.clone());
        }
        let observer = c.clone();
        follow(stop.clone(), store, move |_, kind, obj| {
            observer.observe_api_service(kind, &obj)
        });
        if let Some(crds) =
            c.registry
                .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        {
            let observer = c.clone();
            follow(stop.clone(), crds, move |_, kind, obj| {
                observer.observe_crd(kind, &obj)
            });
        }
        if let Some(services) = c.registry.get("", "v1", "services") {
            let observer = c.clone();
            follow(stop.clone(), services, move |_, _, obj| {
                observer.observe_service(&obj)
            });
        }
        // The first pass creates what is missing, the second sets statuses.
        for _ in 0..2 {
            for name in c.builtin.keys() {
                if let Err(e) = c.sync(name).await {
                    tracing::debug!(apiservice = %name, error = %e, "initial APIService sync failed; the worker retries");
                }
            }
        }
        // Reads (and health checks) see them from here on.
        if let Some(store) = c.store() {
            let _ = store.sync_revision().await;
        }
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let name = worker.queue.next().await;
                if let Err(e) = worker.sync(&name).await {
                    tracing::debug!(apiservice = %name, error = %e, "APIService sync failed; retrying");
                    worker.queue.add_after(name, Duration::from_secs(1));
                }
            }
        });
        Some(c)
    }

    fn observe_api_service(&self, kind: EventType, obj: &Value) {
        let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        let service = obj.pointer("/spec/service").filter(|s| !s.is_null());
        {
            let mut backed = self.backed_by.lock();
            match service {
                Some(svc) if kind != EventType::Deleted => {
                    let field = |f: &str| {
                        svc.get(f)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    backed.insert(name.to_string(), (field("namespace"), field("name")));
                }
                _ => {
                    backed.remove(name);
                }
            }
        }
        self.queue.add(name.to_string());
    }

    fn observe_crd(&self, kind: EventType, crd: &Value) {
        let Some(crd_name) = crd.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        let served: Vec<(String, String)> = if kind == EventType::Deleted {
            Vec::new()
        } else {
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default();
            crd.pointer("/spec/versions")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
                        .filter_map(|v| v.get("name")?.as_str())
                        .map(|v| (group.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let old = {
            let mut crds = self.crds.lock();
            if served.is_empty() {
                crds.remove(crd_name).unwrap_or_default()
            } else {
                crds.insert(crd_name.to_string(), served.clone())
                    .unwrap_or_default()
            }
        };
        let touched: HashSet<String> = old
            .iter()
            .chain(&served)
            .map(|(g, v)| api_service_name(g, v))
            .collect();
        for name in touched {
            self.queue.add(name);
        }
    }

    fn observe_service(&self, svc: &Value) {
        let ns = svc
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = svc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let names: Vec<String> = self
            .backed_by
            .lock()
            .iter()
            .filter(|(_, (n, s))| n == ns && s == name)
            .map(|(a, _)| a.clone())
            .collect();
        for a in names {
            self.queue.add(a);
        }
    }

    /// What the APIService called `name` should be, if it is automanaged.
    fn desired(&self, name: &str) -> Option<Desired> {
        if let Some(d) = self.builtin.get(name) {
            return Some(d.clone());
        }
        let crds = self.crds.lock();
        crds.values()
            .flatten()
            .find(|(g, v)| api_service_name(g, v) == name)
            .map(|(g, v)| Desired {
                group: g.clone(),
                version: v.clone(),
                priority: CRD_PRIORITY,
                label: ALWAYS,
            })
    }

    /// Whether a stored CRD serves the group/version of APIService `name`.
    async fn crd_serves(&self, name: &str) -> Result<bool, ApiError> {
        let Some(crds) =
            self.registry
                .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        else {
            return Ok(false);
        };
        let list = crds.list(None, None, 0, None, ReadAt::Latest).await?;
        Ok(list.items.iter().any(|item| {
            let Ok(crd) = serde_json::from_slice::<Value>(item) else {
                return false;
            };
            let group = crd
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default();
            crd.pointer("/spec/versions")
                .and_then(Value::as_array)
                .is_some_and(|vs| {
                    vs.iter().any(|v| {
                        v.get("served").and_then(Value::as_bool) == Some(true)
                            && v.get("name")
                                .and_then(Value::as_str)
                                .is_some_and(|v| api_service_name(group, v) == name)
                    })
                })
        }))
    }

    fn store(&self) -> Option<Arc<Store>> {
        self.registry.get(GROUP, "v1", "apiservices")
    }

    async fn sync(&self, name: &str) -> Result<(), ApiError> {
        let Some(store) = self.store() else {
            return Ok(());
        };
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let desired = self.desired(name);
        let current = match store.get_value(None, name).await {
            Ok(cur) => cur,
            Err(e) if e.code == 404 => {
                let Some(d) = desired else {
                    return Ok(());
                };
                let obj = json!({
                    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": name, "labels": {AUTOMANAGED_LABEL: d.label}},
                    "spec": d.spec(),
                });
                return match store.create(None, None, obj, &opts).await {
                    // Its ADDED event brings it back here for its status.
                    Ok(_) => Ok(()),
                    Err(e) if e.code == 409 => Ok(()),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let managed = current
            .pointer("/metadata/labels")
            .and_then(|l| l.get(AUTOMANAGED_LABEL))
            .and_then(Value::as_str)
            .is_some();
        if managed && current.pointer("/metadata/deletionTimestamp").is_none() {
            match &desired {
                None => {
                    // The CRDs may not all have been observed yet (at start):
                    // ask their store before deleting.
                    if self.crd_serves(name).await? {
                        return Ok(());
                    }
                    tracing::info!(apiservice = %name, "group/version no longer served; deleting its APIService");
                    return match store.delete(None, name, &DeleteOptions::default()).await {
                        Ok(_) => Ok(()),
                        Err(e) if e.code == 404 => Ok(()),
                        Err(e) => Err(e),
                    };
                }
                Some(d) => {
                    let label = current
                        .pointer("/metadata/labels")
                        .and_then(|l| l.get(AUTOMANAGED_LABEL))
                        .and_then(Value::as_str);
                    if current.get("spec") != Some(&d.spec()) || label != Some(d.label) {
                        let d = d.clone();
                        store
                            .patch(None, name, None, &opts, move |cur| {
                                let mut obj = cur.clone();
                                obj["spec"] = d.spec();
                                if !obj["metadata"]["labels"].is_object() {
                                    obj["metadata"]["labels"] = json!({});
                                }
                                obj["metadata"]["labels"][AUTOMANAGED_LABEL] = json!(d.label);
                                Ok(obj)
                            })
                            .await?;
                        // Its MODIFIED event brings it back for its status.
                        return Ok(());
                    }
                }
            }
        }
        self.sync_status(&store, name, &current).await
    }

    /// The `Available` condition `(status, reason, message)` an APIService
    /// should have.
    async fn availability(&self, obj: &Value) -> Result<(String, String, String), ApiError> {
        let Some(svc) = obj.pointer("/spec/service").filter(|s| !s.is_null()) else {
            return Ok(("True".into(), "Local".into(), LOCAL_MESSAGE.into()));
        };
        let field = |f: &str| svc.get(f).and_then(Value::as_str).unwrap_or_default();
        let (ns, name) = (field("namespace"), field("name"));
        let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
        let ns_json = Value::String(ns.to_string());
        let services = self.registry.get("", "v1", "services");
        let service = match &services {
            Some(store) => match store.get_value(Some(ns), name).await {
                Ok(s) => Some(s),
                Err(e) if e.code == 404 => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let Some(service) = service else {
            return Ok((
                "False".into(),
                "ServiceNotFound".into(),
                format!("service/{name} in {ns_json} is not present"),
            ));
        };
        let external =
            service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
        let listens = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .is_some_and(|ps| {
                ps.iter()
                    .any(|p| p.get("port").and_then(Value::as_i64) == Some(port))
            });
        if !external && !listens {
            return Ok((
                "False".into(),
                "ServicePortError".into(),
                format!("service/{name} in {ns_json} is not listening on port {port}"),
            ));
        }
        Ok((
            "False".into(),
            "FailedDiscoveryCheck".into(),
            format!(
                "service/{name} in {ns_json} is not contacted: this server does not proxy to aggregated API servers yet"
            ),
        ))
    }

    async fn sync_status(&self, store: &Store, name: &str, obj: &Value) -> Result<(), ApiError> {
        let (status, reason, message) = self.availability(obj).await?;
        let same = |c: &Value| {
            c.get("status").and_then(Value::as_str) == Some(status.as_str())
                && c.get("reason").and_then(Value::as_str) == Some(reason.as_str())
                && c.get("message").and_then(Value::as_str) == Some(message.as_str())
        };
        let available = |o: &Value| -> Option<Value> {
            o.pointer("/status/conditions")
                .and_then(Value::as_array)?
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
                .cloned()
        };
        if available(obj).is_some_and(|c| same(&c)) {
            return Ok(());
        }
        let res = store
            .system_update(None, name, |mut cur| {
                let old = available(&cur);
                if old.as_ref().is_some_and(same) {
                    return Ok(None);
                }
                // kube: the transition time moves only when the status does.
                let since = old
                    .as_ref()
                    .filter(|c| c.get("status").and_then(Value::as_str) == Some(status.as_str()))
                    .and_then(|c| c.get("lastTransitionTime").cloned())
                    .unwrap_or_else(|| json!(now_rfc3339()));
                let condition = json!({
                    "type": "Available", "status": status, "lastTransitionTime": since,
                    "reason": reason, "message": message,
                });
                if !cur["status"].is_object() {
                    cur["status"] = json!({});
                }
                let mut conditions: Vec<Value> = cur["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("Available"));
                conditions.push(condition);
                cur["status"]["conditions"] = json!(conditions);
                Ok(Some(cur))
            })
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}
