//! kube-controller-manager's **endpointslice** controller
//! (`pkg/controller/endpointslice`, the reconciler of
//! `k8s.io/endpointslice`) for one Service, run by
//! [`super::endpoints::ServiceEndpointsController`]: a Service with a
//! selector has EndpointSlices `NAME-xxxxx` labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by:
//! endpointslice-controller.k8s.io`, owned by the Service (the garbage
//! collector removes them with it), one per address family of the Service
//! and set of ports, with an endpoint per matching Pod that has an IP; when
//! none does, one placeholder slice without endpoints or ports, as kube
//! keeps. The slice writer ([`reconcile`]) is shared with
//! [`super::mirroring`].

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ApiError;

use super::endpoints::{
    FIELD_MANAGER, HEADLESS_LABEL, Key, TRIGGER_TIME_ANNOTATION, endpoint_port, find_port,
    headless, ip_families, label, labels, pod_hostname, pod_in_endpoints, pod_ip_of, pod_ref,
    selector, store,
};
use super::replicaset::pod_ready;
use super::standalone::owner_ref;
use crate::registry::Registry;
use crate::store::{DeleteOptions, ReadAt, WriteOptions};

/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming the controller that manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// This controller's [`MANAGED_BY_LABEL`] value.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";

/// One slice the controller wants: its address type, ports, endpoints,
/// and the metadata it is made with.
pub(crate) struct Wanted {
    pub address_type: &'static str,
    pub ports: Vec<Value>,
    pub endpoints: Vec<Value>,
}

/// What every slice of one owner carries: labels, annotations and the
/// owner reference.
pub(crate) struct SliceMeta {
    pub controller: &'static str,
    pub name_prefix: String,
    pub labels: Map<String, Value>,
    pub annotations: Map<String, Value>,
    pub owner: Value,
}

impl SliceMeta {
    /// The metadata of `controller`'s slices for `name`: `from`'s labels
    /// (but the two reserved ones), [`SERVICE_NAME_LABEL`] and
    /// [`MANAGED_BY_LABEL`], generateName `NAME-`.
    pub(crate) fn new(
        controller: &'static str,
        name: &str,
        from: &Value,
        annotations: Map<String, Value>,
        owner: Value,
    ) -> Self {
        let mut labels: Map<String, Value> = labels(from)
            .into_iter()
            .filter(|(k, _)| k != SERVICE_NAME_LABEL && k != MANAGED_BY_LABEL)
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        labels.insert(SERVICE_NAME_LABEL.into(), json!(name));
        labels.insert(MANAGED_BY_LABEL.into(), json!(controller));
        Self {
            controller,
            name_prefix: format!("{name}-"),
            labels,
            annotations,
            owner,
        }
    }
}

/// The endpointslice controller's `syncService` for one Service name.
pub(crate) async fn sync(
    registry: &Registry,
    key: &Key,
    svc: Option<&Value>,
    pods: &[Value],
    trigger: Option<&str>,
) -> Result<(), ApiError> {
    // A deleted Service's slices go through the garbage collector (their
    // owner reference), as in kube; a Service without a selector gets
    // none from this controller.
    let Some(svc) = svc else {
        return Ok(());
    };
    if selector(svc).is_none() {
        return Ok(());
    }
    let (ns, name) = key;
    let mut annotations = Map::new();
    if let Some(t) = trigger {
        annotations.insert(TRIGGER_TIME_ANNOTATION.into(), json!(t));
    }
    let mut meta = SliceMeta::new(
        CONTROLLER_NAME,
        name,
        svc,
        annotations,
        owner_ref(svc, "v1", "Service"),
    );
    if headless(svc) {
        meta.labels.insert(HEADLESS_LABEL.into(), json!(""));
    }
    let families = ip_families(svc);
    let wanted = wanted_slices(svc, pods, &families);
    reconcile(registry, ns, name, &meta, &families, wanted).await
}

/// The slices a Service's Pods call for: per address family, one per set
/// of ports (kube's `reconcileByAddressType`, without its 100-endpoint
/// split: the federation's own Pods are few).
fn wanted_slices(svc: &Value, pods: &[Value], families: &[&'static str]) -> Vec<Wanted> {
    let publish_not_ready = svc
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let svc_ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for family in families {
        let mut by_ports: BTreeMap<String, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
        for pod in pods {
            // Terminating Pods are endpoints (not ready) in slices.
            if !pod_in_endpoints(pod, true) {
                continue;
            }
            let Some(ip) = pod_ip_of(pod, family) else {
                continue;
            };
            let ports: Vec<Value> = svc_ports
                .iter()
                .filter_map(|sp| Some(endpoint_port(sp, find_port(pod, sp)?)))
                .collect();
            let ready = pod_ready(pod);
            let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
            let mut ep = json!({
                "addresses": [ip],
                "conditions": {
                    "ready": publish_not_ready || (ready && !terminating),
                    "serving": ready,
                    "terminating": terminating,
                },
                "targetRef": pod_ref(pod),
            });
            if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
                ep["nodeName"] = json!(node);
            }
            if let Some(h) = pod_hostname(pod, svc) {
                ep["hostname"] = json!(h);
            }
            let entry = by_ports
                .entry(Value::Array(ports.clone()).to_string())
                .or_insert_with(|| (ports, Vec::new()));
            entry.1.push(ep);
        }
        for (_, (ports, mut endpoints)) in by_ports {
            endpoints.sort_by(|a, b| a["addresses"].to_string().cmp(&b["addresses"].to_string()));
            out.push(Wanted {
                address_type: family,
                ports,
                endpoints,
            });
        }
    }
    out
}

/// What of a slice's ports or endpoints the controller compares: the
/// stored form fills defaults (`protocol`, an empty port `name`) and may
/// drop empty lists.
fn canonical(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => json!([]),
        Some(v) => v.clone(),
    }
}

fn canonical_ports(v: Option<&Value>) -> Value {
    let mut ports = canonical(v);
    for p in ports.as_array_mut().into_iter().flatten() {
        if let Some(o) = p.as_object_mut() {
            o.entry("name").or_insert(json!(""));
            o.entry("protocol").or_insert(json!("TCP"));
            o.retain(|_, v| !v.is_null());
        }
    }
    ports
}

/// Make the slices of `owner` (those labelled with its name and managed by
/// `meta.controller`) the `wanted` ones: update a slice with the same
/// address type and ports, create the missing ones (generateName
/// `NAME-`), delete the rest; with nothing wanted, one placeholder per
/// address family of `families` (no endpoints, no ports) stays.
pub(crate) async fn reconcile(
    registry: &Registry,
    ns: &str,
    owner: &str,
    meta: &SliceMeta,
    families: &[&'static str],
    mut wanted: Vec<Wanted>,
) -> Result<(), ApiError> {
    let slices = store(registry, "discovery.k8s.io", "endpointslices")?;
    let list = slices.list(Some(ns), None, 0, None, ReadAt::Latest).await?;
    let mut existing: Vec<Value> = list
        .items
        .iter()
        .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
        .filter(|s| {
            label(s, SERVICE_NAME_LABEL) == Some(owner)
                && label(s, MANAGED_BY_LABEL) == Some(meta.controller)
                && s.pointer("/metadata/deletionTimestamp").is_none()
        })
        .collect();
    if wanted.is_empty() && meta.controller == CONTROLLER_NAME {
        for family in families {
            wanted.push(Wanted {
                address_type: family,
                ports: Vec::new(),
                endpoints: Vec::new(),
            });
        }
    }
    let opts = WriteOptions {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    for w in wanted {
        let ports = canonical_ports(Some(&Value::Array(w.ports.clone())));
        let found = existing.iter().position(|s| {
            s.get("addressType").and_then(Value::as_str) == Some(w.address_type)
                && canonical_ports(s.get("ports")) == ports
        });
        let endpoints = Value::Array(w.endpoints);
        let Some(i) = found else {
            let mut obj = json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {
                    "generateName": meta.name_prefix, "namespace": ns,
                    "labels": meta.labels, "ownerReferences": [meta.owner],
                },
                "addressType": w.address_type,
                "endpoints": endpoints,
                "ports": w.ports,
            });
            if !meta.annotations.is_empty() {
                obj["metadata"]["annotations"] = Value::Object(meta.annotations.clone());
            }
            let namespaces = registry.namespaces();
            match slices
                .create(namespaces.as_deref(), Some(ns), obj, &opts)
                .await
            {
                Ok(r) => {
                    tracing::debug!(namespace = %ns, owner, slice = ?r.object.pointer("/metadata/name"), "created an EndpointSlice");
                }
                // A terminating namespace refuses it, as kube's controller drops it.
                Err(e) if e.code == 403 => {}
                Err(e) => return Err(e),
            }
            continue;
        };
        let cur = existing.swap_remove(i);
        let cur_labels = cur
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(json!({}));
        if canonical(cur.get("endpoints")) == endpoints
            && cur_labels == Value::Object(meta.labels.clone())
        {
            continue;
        }
        let Some(name) = cur.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let mut next = cur.clone();
        next["endpoints"] = endpoints;
        next["metadata"]["labels"] = Value::Object(meta.labels.clone());
        let annotations = next["metadata"]
            .as_object_mut()
            .map(|m| m.entry("annotations").or_insert_with(|| json!({})));
        if let Some(Value::Object(a)) = annotations {
            for (k, v) in &meta.annotations {
                a.insert(k.clone(), v.clone());
            }
            if !meta.annotations.contains_key(TRIGGER_TIME_ANNOTATION) {
                a.remove(TRIGGER_TIME_ANNOTATION);
            }
        }
        match slices.update(Some(ns), name, next, None, &opts).await {
            Ok(_) => {
                tracing::debug!(namespace = %ns, owner, slice = name, "updated an EndpointSlice")
            }
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    for stale in existing {
        let Some(name) = stale.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let opts = DeleteOptions {
            precondition_uid: stale
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Default::default()
        };
        match slices.delete(Some(ns), name, &opts).await {
            Ok(_) => {
                tracing::debug!(namespace = %ns, owner, slice = name, "deleted an EndpointSlice")
            }
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "app", "uid": "u"},
               "spec": {"containers": [{"name": "c"}]},
               "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}})
    }

    #[test]
    fn no_pods_want_no_slice_and_the_reconciler_adds_the_placeholder() {
        let svc = json!({"metadata": {"name": "web"}, "spec": {"selector": {"a": "b"},
            "ports": [{"port": 80}]}});
        assert!(wanted_slices(&svc, &[], &["IPv4"]).is_empty());
        assert!(wanted_slices(&svc, &[pod("p", "")], &["IPv4"]).is_empty());
    }

    #[test]
    fn a_pod_is_an_endpoint_of_its_family_only() {
        let svc = json!({"metadata": {"name": "web"}, "spec": {"selector": {"a": "b"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});
        let w = wanted_slices(&svc, &[pod("p", "10.0.0.1")], &["IPv4"]);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].address_type, "IPv4");
        assert_eq!(
            w[0].ports,
            vec![json!({"name": "http", "port": 8080, "protocol": "TCP"})]
        );
        assert_eq!(w[0].endpoints[0]["addresses"], json!(["10.0.0.1"]));
        assert_eq!(
            w[0].endpoints[0]["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert!(wanted_slices(&svc, &[pod("p", "10.0.0.1")], &["IPv6"]).is_empty());
    }

    #[test]
    fn stored_defaults_compare_equal() {
        let want = canonical_ports(Some(&json!([{"port": 80}])));
        let stored = canonical_ports(Some(&json!([{"name": "", "port": 80, "protocol": "TCP"}])));
        assert_eq!(want, stored);
        assert_eq!(canonical(None), canonical(Some(&json!([]))));
    }
}
