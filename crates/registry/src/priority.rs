//! kube-apiserver's `Priority` admission plugin
//! (`plugin/pkg/admission/priority`), declared by the Pod and PriorityClass
//! kinds (`Builtin::admission`):
//! - a new pod gets `spec.priority` and `spec.preemptionPolicy` from its
//!   `priorityClassName`, or from the global default class (whose name it
//!   then takes), or 0 and `PreemptLowerPriority`; an unknown class, or a
//!   priority or policy in the pod that differs from the class's, is 403
//!   with kube's words;
//! - a PriorityClass may be `globalDefault` only when no other one is.
//!
//! As in kube, the pod plugin mutates before the mutating webhooks and
//! admission policies ([`Admission::mutates_before_webhooks`]): they see the
//! computed priority.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use ubernetes_apimachinery::ApiError;

use crate::admission::{Admission, Attributes, Operation};
use crate::registry::Registry;
use crate::store::{ReadAt, Store};

const GROUP: &str = "scheduling.k8s.io";
const DEFAULT_POLICY: &str = "PreemptLowerPriority";

/// The Pod kind's plugin.
pub fn pod_plugin(registry: &Registry) -> Result<Arc<dyn Admission>, ApiError> {
    Ok(Arc::new(PodPriority {
        registry: registry.weak(),
    }))
}

/// The PriorityClass kind's plugin.
pub fn class_plugin(registry: &Registry) -> Result<Arc<dyn Admission>, ApiError> {
    Ok(Arc::new(OneGlobalDefault {
        registry: registry.weak(),
    }))
}

fn classes(registry: &Weak<Registry>) -> Option<Arc<Store>> {
    registry.upgrade()?.get(GROUP, "v1", "priorityclasses")
}

async fn all_classes(store: &Store) -> Result<Vec<Value>, ApiError> {
    let list = store.list(None, None, 0, None, ReadAt::Latest).await?;
    Ok(list
        .items
        .iter()
        .filter_map(|b| serde_json::from_slice(b).ok())
        .collect())
}

fn is_global_default(class: &Value) -> bool {
    class.get("globalDefault").and_then(Value::as_bool) == Some(true)
}

/// A class's (name, value, preemption policy).
fn resolved(class: &Value) -> (String, i64, String) {
    (
        class
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        class.get("value").and_then(Value::as_i64).unwrap_or(0),
        class
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_POLICY)
            .to_string(),
    )
}

struct PodPriority {
    registry: Weak<Registry>,
}

#[async_trait::async_trait]
impl Admission for PodPriority {
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
        let named = obj
            .pointer("/spec/priorityClassName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let store = classes(&self.registry);
        let (class, value, policy) = match (&store, named.as_str()) {
            (None, _) => (String::new(), 0, DEFAULT_POLICY.to_string()),
            (Some(store), "") => {
                // The global default; of several (a race), the lowest value.
                let defaults = all_classes(store).await?;
                defaults
                    .iter()
                    .filter(|c| is_global_default(c))
                    .map(resolved)
                    .min_by_key(|(_, value, _)| *value)
                    .unwrap_or((String::new(), 0, DEFAULT_POLICY.to_string()))
            }
            (Some(store), name) => match store.get_value(None, name).await {
                Ok(c) => resolved(&c),
                Err(e) if e.code == 404 => {
                    return Err(forbid(format!(
                        "no PriorityClass with name {name} was found"
                    )));
                }
                Err(e) => return Err(e),
            },
        };
        if let Some(given) = obj.pointer("/spec/priority").and_then(Value::as_i64)
            && given != value
        {
            return Err(forbid(format!(
                "the integer value of priority ({given}) must not be provided in pod spec; \
                 priority admission controller computed {value} from the given PriorityClass name"
            )));
        }
        if let Some(given) = obj
            .pointer("/spec/preemptionPolicy")
            .and_then(Value::as_str)
            && given != policy
        {
            return Err(forbid(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; \
                 priority admission controller computed {policy} from the given PriorityClass name"
            )));
        }
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            if !class.is_empty() {
                spec.insert("priorityClassName".into(), json!(class));
            }
            spec.insert("priority".into(), json!(value));
            spec.insert("preemptionPolicy".into(), json!(policy));
        }
        Ok(Vec::new())
    }

    fn mutates_before_webhooks(&self) -> bool {
        true
    }
}

struct OneGlobalDefault {
    registry: Weak<Registry>,
}

#[async_trait::async_trait]
impl Admission for OneGlobalDefault {
    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        let writes = matches!(attrs.operation, Operation::Create | Operation::Update);
        if !writes || attrs.subresource.is_some() || !is_global_default(obj) {
            return Ok(Vec::new());
        }
        let Some(store) = classes(&self.registry) else {
            return Ok(Vec::new());
        };
        let other = all_classes(&store).await?.into_iter().find(|c| {
            is_global_default(c)
                && c.pointer("/metadata/name").and_then(Value::as_str) != Some(attrs.name)
        });
        if let Some(other) = other {
            let (name, _, _) = resolved(&other);
            return Err(ApiError::forbidden(
                &attrs.info.group,
                &attrs.info.resource,
                attrs.name,
                &format!(
                    "PriorityClass {name} is already marked as default. Only one default can exist"
                ),
            ));
        }
        Ok(Vec::new())
    }
}
