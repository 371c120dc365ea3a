//! The `LimitRanger` admission plugin (kube's
//! `plugin/pkg/admission/limitranger`): a Pod created in a namespace with
//! LimitRanges gets each container's missing requests and limits from the
//! `Container` items' `defaultRequest` and `default` (recorded in the
//! `kubernetes.io/limit-ranger` annotation), then every Container and Pod
//! item's `min`, `max` and `maxLimitRequestRatio` is enforced; a
//! PersistentVolumeClaim's storage request is held to the
//! `PersistentVolumeClaim` items' `min` and `max`. A violation is kube's
//! 403 (`pods "x" is forbidden: maximum cpu usage per Container is 1, but
//! limit is 2`).
//!
//! Quantities are compared exactly (kube compares milli-values, the same
//! for every quantity a pod can state) and printed in kube's canonical form.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;
use ubernetes_cel::library::Quantity;

use crate::admission::{Admission, Attributes, Operation};
use crate::registry::Registry;
use crate::store::ReadAt;

/// The annotation naming what the plugin defaulted.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

type ResourceList = BTreeMap<String, String>;

fn list(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn quantity(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|_| Quantity::zero())
}

/// `resource.Quantity.String()`.
fn canonical(s: &str) -> String {
    match Quantity::parse(s) {
        Ok(q) => q.canonical(s.contains('i')),
        Err(_) => s.to_string(),
    }
}

/// A LimitRange item with the API's defaults (`SetDefaults_LimitRangeItem`):
/// a Container item's `default` falls back to `max`, its `defaultRequest`
/// to `default`, then to `min`.
struct Item {
    type_: String,
    min: ResourceList,
    max: ResourceList,
    default: ResourceList,
    default_request: ResourceList,
    ratio: ResourceList,
}

fn items(limit_range: &Value) -> Vec<Item> {
    limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|i| {
                    let mut item = Item {
                        type_: i
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        min: list(i.get("min")),
                        max: list(i.get("max")),
                        default: list(i.get("default")),
                        default_request: list(i.get("defaultRequest")),
                        ratio: list(i.get("maxLimitRequestRatio")),
                    };
                    if item.type_ == "Container" {
                        for (k, v) in &item.max {
                            item.default.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                        for (k, v) in &item.default {
                            item.default_request
                                .entry(k.clone())
                                .or_insert_with(|| v.clone());
                        }
                        for (k, v) in &item.min {
                            item.default_request
                                .entry(k.clone())
                                .or_insert_with(|| v.clone());
                        }
                    }
                    item
                })
                .collect()
        })
        .unwrap_or_default()
}

/// kube's `PodMutateLimitFunc`: defaults from one LimitRange into every
/// container and init container, and the annotation.
pub fn default_pod(limit_range: &Value, pod: &mut Value) {
    let mut requests = ResourceList::new();
    let mut limits = ResourceList::new();
    for item in items(limit_range).iter().filter(|i| i.type_ == "Container") {
        requests.extend(item.default_request.clone());
        limits.extend(item.default.clone());
    }
    let mut notes = Vec::new();
    for (field, prefix) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(containers) = pod
            .pointer_mut(&format!("/spec/{field}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in containers.iter_mut() {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let Some(obj) = c.as_object_mut() else {
                continue;
            };
            let resources = obj.entry("resources").or_insert_with(|| json!({}));
            if !resources.is_object() {
                *resources = json!({});
            }
            let mut set = |which: &str, defaults: &ResourceList| -> Vec<String> {
                let entry = &mut resources[which];
                if !entry.is_object() {
                    *entry = json!({});
                }
                let mut set = Vec::new();
                for (k, v) in defaults {
                    if let Some(m) = entry.as_object_mut()
                        && !m.contains_key(k)
                    {
                        m.insert(k.clone(), json!(v));
                        set.push(k.clone());
                    }
                }
                set
            };
            let set_limits = set("limits", &limits);
            let set_requests = set("requests", &requests);
            for which in ["limits", "requests"] {
                if resources[which].as_object().is_some_and(|m| m.is_empty())
                    && let Some(m) = resources.as_object_mut()
                {
                    m.remove(which);
                }
            }
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {prefix} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!(
                    "{} limit for {prefix} {name}",
                    set_limits.join(", ")
                ));
            }
        }
    }
    if !notes.is_empty() {
        let meta = pod
            .as_object_mut()
            .map(|o| o.entry("metadata").or_insert_with(|| json!({})));
        if let Some(meta) = meta.and_then(Value::as_object_mut) {
            let ann = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = ann.as_object_mut() {
                a.insert(
                    ANNOTATION.into(),
                    json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
                );
            }
        }
    }
}

fn min_constraint(
    limit_type: &str,
    resource: &str,
    enforced: &str,
    request: &ResourceList,
    limit: &ResourceList,
) -> Option<String> {
    let e = quantity(enforced);
    let Some(req) = request.get(resource) else {
        return Some(format!(
            "minimum {resource} usage per {limit_type} is {}.  No request is specified",
            canonical(enforced)
        ));
    };
    if quantity(req).cmp(&e).is_lt() {
        return Some(format!(
            "minimum {resource} usage per {limit_type} is {}, but request is {}",
            canonical(enforced),
            canonical(req)
        ));
    }
    if let Some(lim) = limit.get(resource)
        && quantity(lim).cmp(&e).is_lt()
    {
        return Some(format!(
            "minimum {resource} usage per {limit_type} is {}, but limit is {}",
            canonical(enforced),
            canonical(lim)
        ));
    }
    None
}

fn max_constraint(
    limit_type: &str,
    resource: &str,
    enforced: &str,
    request: &ResourceList,
    limit: &ResourceList,
) -> Option<String> {
    let e = quantity(enforced);
    let Some(lim) = limit.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {limit_type} is {}.  No limit is specified",
            canonical(enforced)
        ));
    };
    if quantity(lim).cmp(&e).is_gt() {
        return Some(format!(
            "maximum {resource} usage per {limit_type} is {}, but limit is {}",
            canonical(enforced),
            canonical(lim)
        ));
    }
    if let Some(req) = request.get(resource)
        && quantity(req).cmp(&e).is_gt()
    {
        return Some(format!(
            "maximum {resource} usage per {limit_type} is {}, but request is {}",
            canonical(enforced),
            canonical(req)
        ));
    }
    None
}

fn max_request_constraint(
    limit_type: &str,
    resource: &str,
    enforced: &str,
    request: &ResourceList,
) -> Option<String> {
    let Some(req) = request.get(resource) else {
        return Some(format!(
            "maximum {resource} usage per {limit_type} is {}.  No request is specified",
            canonical(enforced)
        ));
    };
    quantity(req).cmp(&quantity(enforced)).is_gt().then(|| {
        format!(
            "maximum {resource} usage per {limit_type} is {}, but request is {}",
            canonical(enforced),
            canonical(req)
        )
    })
}

fn ratio_constraint(
    limit_type: &str,
    resource: &str,
    enforced: &str,
    request: &ResourceList,
    limit: &ResourceList,
) -> Option<String> {
    let req = request.get(resource).map(|r| quantity(r).as_f64());
    let lim = limit.get(resource).map(|l| quantity(l).as_f64());
    let Some(req) = req.filter(|r| *r != 0.0) else {
        return Some(format!(
            "{resource} max limit to request ratio per {limit_type} is {}, but no request is specified or request is 0",
            canonical(enforced)
        ));
    };
    let Some(lim) = lim.filter(|l| *l != 0.0) else {
        return Some(format!(
            "{resource} max limit to request ratio per {limit_type} is {}, but no limit is specified or limit is 0",
            canonical(enforced)
        ));
    };
    let ratio = lim / req;
    (ratio > quantity(enforced).as_f64()).then(|| {
        format!(
            "{resource} max limit to request ratio per {limit_type} is {}, but provided ratio is {ratio:.6}",
            canonical(enforced)
        )
    })
}

fn add_into(total: &mut BTreeMap<String, Quantity>, l: &ResourceList) {
    for (k, v) in l {
        let q = quantity(v);
        let sum = match total.get(k) {
            Some(t) => t.add(&q).unwrap_or(q),
            None => q,
        };
        total.insert(k.clone(), sum);
    }
}

fn max_into(total: &mut BTreeMap<String, Quantity>, l: &BTreeMap<String, Quantity>) {
    for (k, q) in l {
        if total.get(k).is_none_or(|t| q.cmp(t).is_gt()) {
            total.insert(k.clone(), *q);
        }
    }
}

/// kube's `podRequests` / `podLimits`: the containers' sum, at least any
/// init container (sidecars, `restartPolicy: Always`, add up).
pub(crate) fn pod_total(pod: &Value, which: &str) -> ResourceList {
    let res = |c: &Value| list(c.pointer(&format!("/resources/{which}")));
    let mut total = BTreeMap::new();
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add_into(&mut total, &res(c));
    }
    let mut sidecars = BTreeMap::new();
    let mut init = BTreeMap::new();
    for c in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_into(&mut total, &res(c));
            add_into(&mut sidecars, &res(c));
            max_into(&mut init, &sidecars);
        } else {
            let mut tmp = BTreeMap::new();
            add_into(&mut tmp, &res(c));
            for (k, v) in &sidecars {
                let sum = tmp.get(k).and_then(|t: &Quantity| t.add(v)).unwrap_or(*v);
                tmp.insert(k.clone(), sum);
            }
            max_into(&mut init, &tmp);
        }
    }
    max_into(&mut total, &init);
    total
        .into_iter()
        .map(|(k, q)| {
            let binary = k.contains("memory") || k.contains("storage");
            (k, q.canonical(binary))
        })
        .collect()
}

/// kube's `PodValidateLimitFunc`: the violations of one LimitRange.
pub fn validate_pod(limit_range: &Value, pod: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    for item in items(limit_range) {
        let t = item.type_.as_str();
        if t == "Container" {
            for field in ["containers", "initContainers"] {
                for c in pod
                    .pointer(&format!("/spec/{field}"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let req = list(c.pointer("/resources/requests"));
                    let lim = list(c.pointer("/resources/limits"));
                    errs.extend(
                        item.min
                            .iter()
                            .filter_map(|(k, v)| min_constraint(t, k, v, &req, &lim)),
                    );
                    errs.extend(
                        item.max
                            .iter()
                            .filter_map(|(k, v)| max_constraint(t, k, v, &req, &lim)),
                    );
                    errs.extend(
                        item.ratio
                            .iter()
                            .filter_map(|(k, v)| ratio_constraint(t, k, v, &req, &lim)),
                    );
                }
            }
        }
        if t == "Pod" {
            let req = pod_total(pod, "requests");
            let lim = pod_total(pod, "limits");
            errs.extend(
                item.min
                    .iter()
                    .filter_map(|(k, v)| min_constraint(t, k, v, &req, &lim)),
            );
            errs.extend(
                item.max
                    .iter()
                    .filter_map(|(k, v)| max_constraint(t, k, v, &req, &lim)),
            );
            errs.extend(
                item.ratio
                    .iter()
                    .filter_map(|(k, v)| ratio_constraint(t, k, v, &req, &lim)),
            );
        }
    }
    errs
}

/// kube's `PersistentVolumeClaimValidateLimitFunc`.
pub fn validate_pvc(limit_range: &Value, pvc: &Value) -> Vec<String> {
    let req = list(pvc.pointer("/spec/resources/requests"));
    let mut errs = Vec::new();
    for item in items(limit_range)
        .iter()
        .filter(|i| i.type_ == "PersistentVolumeClaim")
    {
        let t = item.type_.as_str();
        errs.extend(
            item.min
                .iter()
                .filter_map(|(k, v)| min_constraint(t, k, v, &req, &ResourceList::new())),
        );
        errs.extend(
            item.max
                .iter()
                .filter_map(|(k, v)| max_request_constraint(t, k, v, &req)),
        );
    }
    errs
}

/// Go's `utilerrors.NewAggregate(errs).Error()`.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

/// The plugin.
pub struct LimitRanger {
    registry: Weak<Registry>,
}

impl LimitRanger {
    pub fn new(registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::downgrade(registry),
        })
    }

    /// The namespace's LimitRanges (this process's cache).
    async fn limit_ranges(&self, namespace: &str) -> Vec<Value> {
        let Some(store) = self
            .registry
            .upgrade()
            .and_then(|r| r.get("", "v1", "limitranges"))
        else {
            return Vec::new();
        };
        match store
            .list(Some(namespace), None, 0, None, ReadAt::Any)
            .await
        {
            Ok(l) => l
                .items
                .iter()
                .filter_map(|b| serde_json::from_slice(b).ok())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// kube's `SupportsAttributes`: pods on create, claims on create and
    /// update, never a subresource.
    fn applies(attrs: &Attributes<'_>) -> bool {
        let info = attrs.info;
        if attrs.subresource.is_some() || !info.group.is_empty() || attrs.namespace.is_none() {
            return false;
        }
        match info.resource.as_str() {
            "pods" => attrs.operation == Operation::Create,
            "persistentvolumeclaims" => {
                matches!(attrs.operation, Operation::Create | Operation::Update)
            }
            _ => false,
        }
    }
}

#[async_trait::async_trait]
impl Admission for LimitRanger {
    async fn mutate_changed(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<(Vec<String>, bool), ApiError> {
        // Only pods are defaulted: any other write is left as it is, uncopied.
        if !Self::applies(attrs) || attrs.info.resource != "pods" {
            return Ok((Vec::new(), false));
        }
        let before = obj.clone();
        let warnings = self.mutate(attrs, obj).await?;
        let changed = *obj != before;
        Ok((warnings, changed))
    }

    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        if !Self::applies(attrs) || attrs.info.resource != "pods" {
            return Ok(Vec::new());
        }
        for lr in self.limit_ranges(attrs.namespace.unwrap_or_default()).await {
            default_pod(&lr, obj);
        }
        Ok(Vec::new())
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        if !Self::applies(attrs) {
            return Ok(Vec::new());
        }
        for lr in self.limit_ranges(attrs.namespace.unwrap_or_default()).await {
            let errs = if attrs.info.resource == "pods" {
                validate_pod(&lr, obj)
            } else {
                validate_pvc(&lr, obj)
            };
            if !errs.is_empty() {
                let name = crate::policy::forbidden_name(attrs, obj);
                tracing::debug!(namespace = ?attrs.namespace, %name, errors = ?errs, "LimitRanger refused");
                return Err(ApiError::forbidden(
                    &attrs.info.group,
                    &attrs.info.resource,
                    &name,
                    &aggregate(&errs),
                ));
            }
        }
        Ok(Vec::new())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn lr() -> Value {
        json!({"spec": {"limits": [{
            "type": "Container",
            "max": {"cpu": "1", "memory": "1Gi"},
            "default": {"cpu": "500m"},
            "defaultRequest": {"cpu": "250m", "memory": "128Mi"}
        }]}})
    }

    #[test]
    fn defaults_fill_missing_requests_and_limits_with_the_annotation() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "app", "image": "nginx"},
            {"name": "side", "image": "x", "resources": {"limits": {"cpu": "800m"}}}
        ]}});
        default_pod(&lr(), &mut pod);
        let app = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(app["requests"], json!({"cpu": "250m", "memory": "128Mi"}));
        // default.memory comes from max (SetDefaults_LimitRangeItem).
        assert_eq!(app["limits"], json!({"cpu": "500m", "memory": "1Gi"}));
        let side = &pod["spec"]["containers"][1]["resources"];
        assert_eq!(side["limits"]["cpu"], "800m");
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; cpu, memory request for container side; memory limit for container side"
        );
        assert!(validate_pod(&lr(), &pod).is_empty());
    }

    #[test]
    fn max_min_and_ratio_messages() {
        let pod = json!({"spec": {"containers": [{"name": "app", "resources": {
            "limits": {"cpu": "2", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "512Mi"}}}]}});
        assert_eq!(
            validate_pod(&lr(), &pod),
            vec!["maximum cpu usage per Container is 1, but limit is 2"]
        );
        let min = json!({"spec": {"limits": [{"type": "Container", "min": {"cpu": "200m"}}]}});
        assert_eq!(
            validate_pod(&min, &pod),
            vec!["minimum cpu usage per Container is 200m, but request is 100m"]
        );
        let ratio = json!({"spec": {"limits": [{"type": "Container", "maxLimitRequestRatio": {"cpu": "4"}}]}});
        assert_eq!(
            validate_pod(&ratio, &pod),
            vec![
                "cpu max limit to request ratio per Container is 4, but provided ratio is 20.000000"
            ]
        );
        let podmax = json!({"spec": {"limits": [{"type": "Pod", "max": {"memory": "1Gi"}}]}});
        let two = json!({"spec": {"containers": [
            {"name": "a", "resources": {"limits": {"memory": "768Mi"}}},
            {"name": "b", "resources": {"limits": {"memory": "512Mi"}}}]}});
        assert_eq!(
            validate_pod(&podmax, &two),
            vec!["maximum memory usage per Pod is 1Gi, but limit is 1280Mi"]
        );
        let pvc = json!({"spec": {"resources": {"requests": {"storage": "10Gi"}}}});
        let pvclr = json!({"spec": {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "5Gi"}}]}});
        assert_eq!(
            validate_pvc(&pvclr, &pvc),
            vec!["maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi"]
        );
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
