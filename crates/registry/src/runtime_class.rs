//! kube-apiserver's `RuntimeClass` admission plugin
//! (`plugin/pkg/admission/runtimeclass`), declared by the Pod kind
//! (`Builtin::admission`). On a pod's create:
//! - a `runtimeClassName` that names no RuntimeClass is 403 (`pod
//!   rejected: RuntimeClass "x" not found`);
//! - the class's `overhead.podFixed` becomes the pod's `spec.overhead`; an
//!   overhead in the pod that differs from the class's, or one without a
//!   class that defines it, is 403 with kube's words;
//! - the class's `scheduling.nodeSelector` is merged into the pod's (a key
//!   with another value is 403) and its `scheduling.tolerations` appended
//!   where the pod lacks them.
//!
//! As kube's plugin it mutates before the mutating webhooks and policies.

use std::sync::{Arc, Weak};

use serde_json::{Map, Value};
use ubernetes_apimachinery::ApiError;

use crate::admission::{Admission, Attributes, Operation};
use crate::registry::Registry;

/// The Pod kind's plugin.
pub fn pod_plugin(registry: &Registry) -> Result<Arc<dyn Admission>, ApiError> {
    Ok(Arc::new(RuntimeClassAdmission {
        registry: registry.weak(),
    }))
}

struct RuntimeClassAdmission {
    registry: Weak<Registry>,
}

#[async_trait::async_trait]
impl Admission for RuntimeClassAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        if attrs.operation != Operation::Create || attrs.subresource.is_some() {
            return Ok(Vec::new());
        }
        let forbid = |why: String| {
            ApiError::forbidden(&attrs.info.group, &attrs.info.resource, attrs.name, &why)
        };
        let name = obj
            .pointer("/spec/runtimeClassName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let class = match (&name, self.registry.upgrade()) {
            (Some(name), Some(registry)) => {
                match registry.get("node.k8s.io", "v1", "runtimeclasses") {
                    None => None,
                    Some(store) => match store.get_value(None, name).await {
                        Ok(c) => Some(c),
                        Err(e) if e.code == 404 => {
                            return Err(forbid(format!(
                                "pod rejected: RuntimeClass {name:?} not found"
                            )));
                        }
                        Err(e) => return Err(e),
                    },
                }
            }
            _ => None,
        };
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(Vec::new());
        };
        apply_class(spec, class.as_ref()).map_err(forbid)?;
        Ok(Vec::new())
    }

    fn mutates_before_webhooks(&self) -> bool {
        true
    }
}

/// What the plugin does to a pod's spec given its RuntimeClass (kube's
/// `setOverhead`, `setScheduling` and `validateOverhead`); the error is the
/// reason of the 403.
fn apply_class(spec: &mut Map<String, Value>, class: Option<&Value>) -> Result<(), String> {
    let fixed = class
        .and_then(|c| c.pointer("/overhead/podFixed"))
        .filter(|f| !f.is_null());
    match (fixed, spec.get("overhead").filter(|o| !o.is_null())) {
        (Some(fixed), Some(given)) if given != fixed => {
            return Err(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            );
        }
        (Some(fixed), _) => {
            spec.insert("overhead".into(), fixed.clone());
        }
        (None, Some(_)) => {
            return Err(
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                    .into(),
            );
        }
        (None, None) => {}
    }
    let Some(scheduling) = class.and_then(|c| c.get("scheduling")) else {
        return Ok(());
    };
    if let Some(selector) = scheduling.get("nodeSelector").and_then(Value::as_object) {
        let pod = spec
            .entry("nodeSelector")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(pod) = pod.as_object_mut() {
            for (k, v) in selector {
                match pod.get(k) {
                    Some(have) if have != v => {
                        return Err(format!(
                            "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {}; pod.spec.nodeSelector[{k}] = {}",
                            v.as_str().unwrap_or_default(),
                            have.as_str().unwrap_or_default()
                        ));
                    }
                    _ => {
                        pod.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    if let Some(tolerations) = scheduling.get("tolerations").and_then(Value::as_array) {
        let pod = spec
            .entry("tolerations")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(pod) = pod.as_array_mut() {
            for t in tolerations {
                if !pod.contains(t) {
                    pod.push(t.clone());
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_class_sets_overhead_and_scheduling() {
        let class = json!({"overhead": {"podFixed": {"cpu": "10m"}},
            "scheduling": {"nodeSelector": {"zone": "a"},
                           "tolerations": [{"key": "k", "operator": "Exists"}]}});
        let mut s = spec(json!({"nodeSelector": {"disk": "ssd"}}));
        apply_class(&mut s, Some(&class)).unwrap();
        assert_eq!(s["overhead"], json!({"cpu": "10m"}));
        assert_eq!(s["nodeSelector"], json!({"disk": "ssd", "zone": "a"}));
        assert_eq!(
            s["tolerations"],
            json!([{"key": "k", "operator": "Exists"}])
        );
    }

    #[test]
    fn conflicts_and_stray_overheads_are_rejected() {
        let class = json!({"overhead": {"podFixed": {"cpu": "10m"}},
            "scheduling": {"nodeSelector": {"zone": "a"}}});
        let mut s = spec(json!({"overhead": {"cpu": "20m"}}));
        assert!(
            apply_class(&mut s, Some(&class))
                .unwrap_err()
                .contains("doesn't match")
        );
        let mut s = spec(json!({"nodeSelector": {"zone": "b"}}));
        assert_eq!(
            apply_class(&mut s, Some(&class)).unwrap_err(),
            "conflict: runtimeClass.scheduling.nodeSelector[zone] = a; pod.spec.nodeSelector[zone] = b"
        );
        let mut s = spec(json!({"overhead": {"cpu": "20m"}}));
        assert!(
            apply_class(&mut s, None)
                .unwrap_err()
                .contains("without corresponding")
        );
    }
}
