//! kube-controller-manager's **endpoints**, **endpointslice** and
//! **endpointslice-mirroring** controllers over the federation's own API,
//! as one level-triggered loop keyed by Service name
//! ([`ServiceEndpointsController`]):
//!
//! - this file: the loop, and the endpoints controller's part
//!   (`pkg/controller/endpoint`): every Service with a selector has an
//!   Endpoints of its name with the addresses of the matching Pods that
//!   have an IP (ready or not ready), the Service's labels (plus
//!   `service.kubernetes.io/headless` for a headless one) and the
//!   `endpoints.kubernetes.io/last-change-trigger-time` annotation; the
//!   Endpoints goes with its Service;
//! - [`super::endpointslice`]: the EndpointSlices of a Service with a
//!   selector (`managed-by: endpointslice-controller.k8s.io`, owned by the
//!   Service; a placeholder slice when no Pod matches);
//! - [`super::mirroring`]: the EndpointSlices mirrored from a user's
//!   Endpoints of a Service without a selector.
//!
//! The federation's Pods normally are none (Pods run in the members), so a
//! Service's Endpoints and EndpointSlices here are empty; the members'
//! endpoints are served through the Multi-cluster Services API, clusterset
//! DNS and the member views. None of this propagates: Endpoints and
//! EndpointSlices are not federated kinds, and each member's own
//! controllers make its own.
//!
//! kube's start-up sweep of Endpoints without a Service
//! (`checkLeftoverEndpoints`) is not done: here an Endpoints goes when its
//! Service's deletion is seen.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use super::endpointslice::{self, MANAGED_BY_LABEL, SERVICE_NAME_LABEL};
use super::replicaset::pod_ready;
pub(crate) use super::standalone::labels_of as labels;
use super::{Queue, follow, mirroring, spawn_until};
use crate::registry::Registry;
use crate::store::{DeleteOptions, ReadAt, Store, WriteOptions};

/// The annotation with the time of the change the Endpoints reflect.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// kube's label on the Endpoints and EndpointSlices of a headless Service.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// kube's annotation on Endpoints truncated to 1000 addresses.
const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// Who the controllers' writes are attributed to in `managedFields`.
pub(crate) const FIELD_MANAGER: &str = "kube-controller-manager";

/// (namespace, Service name).
pub(crate) type Key = (String, String);

/// What the trigger-time tracker remembers of a Service's last sync.
#[derive(Default)]
struct TriggerState {
    service: String,
    pods: HashMap<String, String>,
}

/// The endpoints, endpointslice and mirroring controllers (see the module
/// docs), one queue of Service keys.
pub struct ServiceEndpointsController {
    registry: Arc<Registry>,
    queue: Arc<Queue<Key>>,
    /// namespace → the Services with a selector (a Pod's change queues them).
    selected: Mutex<HashMap<String, HashSet<String>>>,
    /// kube's `TriggerTimeTracker`.
    triggers: Mutex<HashMap<Key, TriggerState>>,
    /// Services seen deleted whose Endpoints are still to delete (kube
    /// deletes the Endpoints on the Service's deletion only: an Endpoints
    /// written without any Service is left alone).
    gone: Mutex<HashSet<Key>>,
}

impl ServiceEndpointsController {
    /// Start following Services, Pods, Endpoints and EndpointSlices until
    /// `stop`; `None` when the registry serves none of them.
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) -> Option<Arc<Self>> {
        let services = registry.get("", "v1", "services")?;
        let pods = registry.get("", "v1", "pods")?;
        let endpoints = registry.get("", "v1", "endpoints")?;
        let slices = registry.get("discovery.k8s.io", "v1", "endpointslices")?;
        let c = Arc::new(Self {
            registry,
            queue: Queue::new(),
            selected: Mutex::new(HashMap::new()),
            triggers: Mutex::new(HashMap::new()),
            gone: Mutex::new(HashSet::new()),
        });
        let observer = c.clone();
        follow(stop.clone(), services, move |_, kind, svc| {
            let Some((ns, name)) = key_of(&svc) else {
                return;
            };
            {
                let mut selected = observer.selected.lock();
                let set = selected.entry(ns.clone()).or_default();
                if kind != EventType::Deleted && selector(&svc).is_some() {
                    set.insert(name.clone());
                } else {
                    set.remove(&name);
                }
            }
            let key = (ns.clone(), name.clone());
            if kind == EventType::Deleted {
                observer.gone.lock().insert(key);
            } else {
                observer.gone.lock().remove(&key);
            }
            observer.queue.add((ns, name));
        });
        let observer = c.clone();
        follow(stop.clone(), pods, move |_, _, pod| {
            let Some((ns, _)) = key_of(&pod) else {
                return;
            };
            let names: Vec<String> = observer
                .selected
                .lock()
                .get(&ns)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default();
            for name in names {
                observer.queue.add((ns.clone(), name));
            }
        });
        let observer = c.clone();
        follow(stop.clone(), endpoints, move |_, _, ep| {
            if let Some(key) = key_of(&ep) {
                observer.queue.add(key);
            }
        });
        let observer = c.clone();
        follow(stop.clone(), slices, move |_, _, slice| {
            let managed = matches!(
                label(&slice, MANAGED_BY_LABEL),
                Some(endpointslice::CONTROLLER_NAME | mirroring::CONTROLLER_NAME)
            );
            if let (true, Some((ns, _)), Some(svc)) =
                (managed, key_of(&slice), label(&slice, SERVICE_NAME_LABEL))
            {
                observer.queue.add((ns, svc.to_string()));
            }
        });
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let key = worker.queue.next().await;
                if let Err(e) = worker.sync(&key).await {
                    tracing::debug!(namespace = %key.0, service = %key.1, error = %e, "endpoints sync failed; retrying");
                    worker.queue.add_after(key, Duration::from_secs(1));
                }
            }
        });
        Some(c)
    }

    /// Bring the Endpoints, the EndpointSlices and the mirrored
    /// EndpointSlices of one Service name to what they should be.
    async fn sync(&self, key: &Key) -> Result<(), ApiError> {
        let (ns, name) = key;
        let services = self.store("", "services")?;
        let svc = match services.get_value(Some(ns), name).await {
            Ok(s) => Some(s),
            Err(e) if e.code == 404 => None,
            Err(e) => return Err(e),
        };
        let pods = match svc.as_ref().and_then(selector) {
            Some(sel) => self.matching_pods(ns, &sel).await?,
            None => Vec::new(),
        };
        let trigger = match &svc {
            Some(svc) => self.trigger_time(key, svc, &pods),
            None => {
                self.triggers.lock().remove(key);
                None
            }
        };
        let mut first_err = None;
        let steps = [
            self.sync_endpoints(key, svc.as_ref(), &pods, trigger.as_deref())
                .await,
            endpointslice::sync(&self.registry, key, svc.as_ref(), &pods, trigger.as_deref()).await,
            mirroring::sync(&self.registry, key, svc.as_ref()).await,
        ];
        for res in steps {
            if let Err(e) = res {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    fn store(&self, group: &str, resource: &str) -> Result<Arc<Store>, ApiError> {
        store(&self.registry, group, resource)
    }

    async fn matching_pods(
        &self,
        ns: &str,
        sel: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, ApiError> {
        let pods = self.store("", "pods")?;
        let list = pods.list(Some(ns), None, 0, None, ReadAt::Latest).await?;
        Ok(list
            .items
            .iter()
            .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
            .filter(|p| {
                let labels = labels(p);
                sel.iter().all(|(k, v)| labels.get(k) == Some(v))
            })
            .collect())
    }

    /// kube's `ComputeEndpointLastChangeTriggerTime`: the earliest of the
    /// trigger times (a Pod's Ready transition, the Service's creation)
    /// that changed since the last sync; `None` when none did.
    fn trigger_time(&self, key: &Key, svc: &Value, pods: &[Value]) -> Option<String> {
        let mut triggers = self.triggers.lock();
        let prev = triggers.get(key);
        let mut earliest: Option<String> = None;
        let mut keep = |t: &str| {
            if earliest.as_deref().is_none_or(|e| t < e) {
                earliest = Some(t.to_string());
            }
        };
        let mut now = TriggerState::default();
        for pod in pods {
            let (Some(name), Some(t)) = (
                pod.pointer("/metadata/name").and_then(Value::as_str),
                ready_transition(pod),
            ) else {
                continue;
            };
            if prev
                .and_then(|p| p.pods.get(name))
                .is_none_or(|old| t > old.as_str())
            {
                keep(t);
            }
            now.pods.insert(name.to_string(), t.to_string());
        }
        let created = svc
            .pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !created.is_empty() && prev.is_none_or(|p| created > p.service.as_str()) {
            keep(created);
        }
        now.service = created.to_string();
        triggers.insert(key.clone(), now);
        earliest
    }

    /// The endpoints controller's `syncService`.
    async fn sync_endpoints(
        &self,
        key: &Key,
        svc: Option<&Value>,
        pods: &[Value],
        trigger: Option<&str>,
    ) -> Result<(), ApiError> {
        let (ns, name) = key;
        let endpoints = self.store("", "endpoints")?;
        let Some(svc) = svc else {
            // The Service was deleted: so is its Endpoints (whoever wrote
            // it). One without a Service all along is left alone.
            if !self.gone.lock().contains(key) {
                return Ok(());
            }
            let res = match endpoints
                .delete(Some(ns), name, &DeleteOptions::default())
                .await
            {
                Ok(_) => {
                    tracing::debug!(namespace = %ns, name = %name, "deleted the Endpoints of a deleted Service");
                    Ok(())
                }
                Err(e) if e.code == 404 || e.code == 409 => Ok(()),
                Err(e) => Err(e),
            };
            if res.is_ok() {
                self.gone.lock().remove(key);
            }
            return res;
        };
        if selector(svc).is_none() {
            // No selector (or ExternalName): the user's Endpoints, if any.
            return Ok(());
        }
        let subsets = subsets_for(svc, pods);
        let current = match endpoints.get_value(Some(ns), name).await {
            Ok(c) => Some(c),
            Err(e) if e.code == 404 => None,
            Err(e) => return Err(e),
        };
        let svc_labels = labels(svc);
        if let Some(cur) = &current {
            let mut cur_labels = labels(cur);
            cur_labels.remove(HEADLESS_LABEL);
            let cur_subsets = cur.get("subsets").cloned().unwrap_or(json!([]));
            let cur_subsets = if cur_subsets.is_null() {
                json!([])
            } else {
                cur_subsets
            };
            if cur_subsets == subsets
                && cur_labels == svc_labels
                && annotation(cur, OVER_CAPACITY_ANNOTATION).is_none()
            {
                return Ok(());
            }
        }
        let mut next = current.clone().unwrap_or_else(|| {
            json!({"apiVersion": "v1", "kind": "Endpoints",
                   "metadata": {"name": name, "namespace": ns}})
        });
        next["subsets"] = subsets;
        let mut new_labels: Map<String, Value> = svc_labels
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        if headless(svc) {
            new_labels.insert(HEADLESS_LABEL.into(), json!(""));
        }
        let meta = next
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| ApiError::internal("an Endpoints without metadata"))?;
        meta.insert("labels".into(), Value::Object(new_labels));
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            match trigger {
                Some(t) => {
                    a.insert(TRIGGER_TIME_ANNOTATION.into(), json!(t));
                }
                None => {
                    a.remove(TRIGGER_TIME_ANNOTATION);
                }
            }
            a.remove(OVER_CAPACITY_ANNOTATION);
            if a.is_empty() {
                meta.remove("annotations");
            }
        }
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let res = if current.is_some() {
            endpoints.update(Some(ns), name, next, None, &opts).await
        } else {
            let namespaces = self.registry.namespaces();
            endpoints
                .create(namespaces.as_deref(), Some(ns), next, &opts)
                .await
        };
        match res {
            Ok(_) => {
                tracing::debug!(namespace = %ns, name = %name, "wrote the Endpoints of a Service");
                Ok(())
            }
            // kube: a terminating namespace refuses the create; drop it.
            Err(e) if current.is_none() && e.code == 403 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

pub(crate) fn store(
    registry: &Registry,
    group: &str,
    resource: &str,
) -> Result<Arc<Store>, ApiError> {
    registry
        .get(group, "v1", resource)
        .ok_or_else(|| ApiError::internal(format!("{resource} are not served")))
}

/// (namespace, name) of a namespaced object.
pub(crate) fn key_of(obj: &Value) -> Option<Key> {
    let ns = obj.pointer("/metadata/namespace")?.as_str()?;
    let name = obj.pointer("/metadata/name")?.as_str()?;
    (!ns.is_empty()).then(|| (ns.to_string(), name.to_string()))
}

pub(crate) fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")?.get(key)?.as_str()
}

pub(crate) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// A Service's selector when the controllers make its endpoints: `None`
/// for an ExternalName Service and a Service without a selector (an empty
/// map is none: kube's stored form drops it).
pub(crate) fn selector(svc: &Value) -> Option<BTreeMap<String, String>> {
    if svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return None;
    }
    let sel: BTreeMap<String, String> = svc
        .pointer("/spec/selector")?
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    (!sel.is_empty()).then_some(sel)
}

/// Whether a Service is headless (`clusterIP: None`).
pub(crate) fn headless(svc: &Value) -> bool {
    svc.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None")
}

/// When the Pod's Ready condition last changed.
fn ready_transition(pod: &Value) -> Option<&str> {
    pod.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))?
        .get("lastTransitionTime")?
        .as_str()
}

/// kube's `ShouldPodBeInEndpoints`: not terminal, has an IP, and (unless
/// terminating Pods are included) not being deleted.
pub(crate) fn pod_in_endpoints(pod: &Value, include_terminating: bool) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Failed" | "Succeeded")) {
        return false;
    }
    if pod_ips(pod).is_empty() {
        return false;
    }
    include_terminating || pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// The Pod's IPs (`status.podIPs`, else `status.podIP`).
pub(crate) fn pod_ips(pod: &Value) -> Vec<&str> {
    let ips: Vec<&str> = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.get("ip")?.as_str())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    if !ips.is_empty() {
        return ips;
    }
    pod.pointer("/status/podIP")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .into_iter()
        .collect()
}

/// The Service's IP families (`spec.ipFamilies`, else by its cluster IP).
pub(crate) fn ip_families(svc: &Value) -> Vec<&'static str> {
    let fams: Vec<&'static str> = svc
        .pointer("/spec/ipFamilies")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| match f.as_str()? {
                    "IPv6" => Some("IPv6"),
                    "IPv4" => Some("IPv4"),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if !fams.is_empty() {
        return fams;
    }
    let ip = svc
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or_default();
    vec![if ip.contains(':') { "IPv6" } else { "IPv4" }]
}

/// The Pod's IP of `family`.
pub(crate) fn pod_ip_of<'a>(pod: &'a Value, family: &str) -> Option<&'a str> {
    pod_ips(pod)
        .into_iter()
        .find(|ip| ip.contains(':') == (family == "IPv6"))
}

/// kube's `FindPort`: the Pod's port a Service port targets (a number, or
/// a container port's name with the same protocol).
pub(crate) fn find_port(pod: &Value, svc_port: &Value) -> Option<i64> {
    let protocol = svc_port
        .get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP");
    match svc_port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => {
            if let Ok(n) = name.parse::<i64>() {
                return Some(n);
            }
            let containers = ["containers", "initContainers"].into_iter().flat_map(|f| {
                pod.pointer(&format!("/spec/{f}"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            });
            for c in containers {
                for p in c
                    .get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if p.get("name").and_then(Value::as_str) == Some(name.as_str())
                        && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP") == protocol
                    {
                        return p.get("containerPort").and_then(Value::as_i64);
                    }
                }
            }
            None
        }
        _ => svc_port.get("port").and_then(Value::as_i64),
    }
}

/// kube's `ShouldSetHostname`: the Pod's hostname when its subdomain is
/// the Service.
pub(crate) fn pod_hostname<'a>(pod: &'a Value, svc: &Value) -> Option<&'a str> {
    let hostname = pod.pointer("/spec/hostname")?.as_str()?;
    let subdomain = pod.pointer("/spec/subdomain")?.as_str()?;
    (!hostname.is_empty()
        && Some(subdomain) == svc.pointer("/metadata/name").and_then(Value::as_str)
        && pod.pointer("/metadata/namespace") == svc.pointer("/metadata/namespace"))
    .then_some(hostname)
}

/// The endpoint port of Service port `sp` served on port `n` (kube's
/// `endpointPortFromServicePort`).
pub(crate) fn endpoint_port(sp: &Value, n: i64) -> Value {
    let mut p = json!({
        "name": sp.get("name").cloned().unwrap_or(json!("")),
        "port": n,
        "protocol": sp.get("protocol").cloned().unwrap_or(json!("TCP")),
    });
    if let Some(ap) = sp.get("appProtocol") {
        p["appProtocol"] = ap.clone();
    }
    p
}

/// A Pod as an object reference.
pub(crate) fn pod_ref(pod: &Value) -> Value {
    json!({
        "kind": "Pod",
        "namespace": pod.pointer("/metadata/namespace").cloned().unwrap_or(Value::Null),
        "name": pod.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "uid": pod.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
    })
}

/// The Endpoints `subsets` of a Service with a selector and its matching
/// Pods (kube's `syncService` and `RepackSubsets`: one subset per set of
/// addresses offering the same ports, addresses sorted by IP).
pub fn subsets_for(svc: &Value, pods: &[Value]) -> Value {
    let publish_not_ready = svc
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let family = ip_families(svc)[0];
    let svc_ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // port (as JSON text) → address (as JSON text) → ready.
    let mut by_port: BTreeMap<String, BTreeMap<String, (Value, bool)>> = BTreeMap::new();
    for pod in pods {
        if !pod_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        let Some(ip) = pod_ip_of(pod, family) else {
            continue;
        };
        let mut addr = json!({"ip": ip, "targetRef": pod_ref(pod)});
        if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
            addr["nodeName"] = json!(node);
        }
        if let Some(h) = pod_hostname(pod, svc) {
            addr["hostname"] = json!(h);
        }
        let ready = publish_not_ready || pod_ready(pod);
        let mut ports = Vec::new();
        if svc_ports.is_empty() {
            if headless(svc) {
                ports.push(Value::Null);
            }
        } else {
            for sp in &svc_ports {
                let Some(n) = find_port(pod, sp) else {
                    continue;
                };
                let mut p = endpoint_port(sp, n);
                if p["name"] == json!("")
                    && let Some(o) = p.as_object_mut()
                {
                    o.remove("name");
                }
                ports.push(p);
            }
        }
        for p in ports {
            by_port
                .entry(p.to_string())
                .or_default()
                .insert(format!("{ip}/{addr}"), (addr.clone(), ready));
        }
    }
    // address set → (the addresses with their readiness, the ports).
    type Addresses = Vec<(Value, bool)>;
    let mut by_addrs: BTreeMap<String, (Addresses, Vec<Value>)> = BTreeMap::new();
    for (port, addrs) in by_port {
        let set_key = addrs.keys().cloned().collect::<Vec<_>>().join("|");
        let entry = by_addrs
            .entry(set_key)
            .or_insert_with(|| (addrs.values().cloned().collect(), Vec::new()));
        if let Ok(p) = serde_json::from_str::<Value>(&port)
            && !p.is_null()
        {
            entry.1.push(p);
        }
    }
    let subsets: Vec<Value> = by_addrs
        .into_values()
        .map(|(addrs, ports)| {
            let mut s = Map::new();
            let ready: Vec<Value> = addrs.iter().filter(|a| a.1).map(|a| a.0.clone()).collect();
            let not_ready: Vec<Value> =
                addrs.iter().filter(|a| !a.1).map(|a| a.0.clone()).collect();
            if !ready.is_empty() {
                s.insert("addresses".into(), Value::Array(ready));
            }
            if !not_ready.is_empty() {
                s.insert("notReadyAddresses".into(), Value::Array(not_ready));
            }
            if !ports.is_empty() {
                s.insert("ports".into(), Value::Array(ports));
            }
            Value::Object(s)
        })
        .collect();
    Value::Array(subsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "app"}, "spec": spec})
    }

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "app", "uid": format!("u-{name}")},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [
                   {"name": "http", "containerPort": 8080}]}]},
               "status": {"podIP": ip, "conditions": [
                   {"type": "Ready", "status": if ready {"True"} else {"False"}}]}})
    }

    #[test]
    fn a_selector_is_needed_and_external_name_gets_none() {
        assert!(selector(&svc(json!({"selector": {"app": "web"}}))).is_some());
        assert!(selector(&svc(json!({"selector": {}}))).is_none());
        assert!(selector(&svc(json!({}))).is_none());
        assert!(
            selector(&svc(
                json!({"type": "ExternalName", "selector": {"app": "web"}})
            ))
            .is_none()
        );
    }

    #[test]
    fn no_pods_give_no_subsets() {
        let s = svc(json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}));
        assert_eq!(subsets_for(&s, &[]), json!([]));
        // A pod without an IP (no kubelet ran it) is no address either.
        let mut p = pod("a", "", true);
        p["status"]["podIP"] = json!("");
        assert_eq!(subsets_for(&s, &[p]), json!([]));
    }

    #[test]
    fn pods_with_ips_are_ready_or_not_ready_addresses_on_their_target_port() {
        let s = svc(json!({"selector": {"app": "web"},
            "ports": [{"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP"}]}));
        let subsets = subsets_for(
            &s,
            &[pod("a", "10.0.0.2", true), pod("b", "10.0.0.1", false)],
        );
        assert_eq!(
            subsets,
            json!([{
                "addresses": [{"ip": "10.0.0.2", "nodeName": "n1", "targetRef":
                    {"kind": "Pod", "namespace": "app", "name": "a", "uid": "u-a"}}],
                "notReadyAddresses": [{"ip": "10.0.0.1", "nodeName": "n1", "targetRef":
                    {"kind": "Pod", "namespace": "app", "name": "b", "uid": "u-b"}}],
                "ports": [{"name": "web", "port": 8080, "protocol": "TCP"}]
            }])
        );
        // publishNotReadyAddresses: both ready.
        let mut s2 = s.clone();
        s2["spec"]["publishNotReadyAddresses"] = json!(true);
        let subsets = subsets_for(&s2, &[pod("b", "10.0.0.1", false)]);
        assert!(subsets[0].get("addresses").is_some());
        assert!(subsets[0].get("notReadyAddresses").is_none());
    }

    #[test]
    fn a_named_port_the_pod_lacks_is_left_out() {
        let s = svc(json!({"selector": {"app": "web"},
            "ports": [{"port": 80, "targetPort": "metrics"}]}));
        assert_eq!(subsets_for(&s, &[pod("a", "10.0.0.2", true)]), json!([]));
        let numeric = svc(json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}));
        assert_eq!(
            subsets_for(&numeric, &[pod("a", "10.0.0.2", true)])[0]["ports"],
            json!([{"port": 80, "protocol": "TCP"}])
        );
    }
}
