//! Kind-independent validation the store runs on every write: object
//! metadata (kube's `ValidateObjectMeta` / `ValidateObjectMetaUpdate`, with
//! the kind's name rule from its strategy), and the hook for unknown fields
//! against the kind's schema (for `fieldValidation`).

use serde_json::Value;
use ubernetes_apimachinery::meta;
use ubernetes_apimachinery::{Cause, ResourceInfo};

use crate::strategy::Strategy;

/// `ValidateObjectMeta` for a new or updated object, with the kind's name rule.
pub fn object_meta(strategy: &std::sync::Arc<dyn Strategy>, obj: &Value) -> Vec<Cause> {
    let strategy = strategy.clone();
    let namespaced = strategy.info().namespaced;
    let kube_finalizers = strategy.checks_finalizer_names();
    let name_fn = move |name: &str, prefix: bool| -> Vec<String> {
        if prefix {
            // A generateName prefix may end in '-' (kube masks it).
            let masked = match name.strip_suffix('-') {
                Some(stem) => format!("{stem}a"),
                None => name.to_string(),
            };
            strategy.validate_name(&masked)
        } else {
            strategy.validate_name(name)
        }
    };
    if kube_finalizers {
        meta::validate_object_meta(obj, namespaced, &name_fn)
    } else {
        meta::validate_object_meta_generic(obj, namespaced, &name_fn)
    }
}

/// `ValidateObjectMetaUpdate`: immutable metadata, no new finalizers while
/// deleting, generation never decremented.
pub fn object_meta_update(new: &Value, old: &Value) -> Vec<Cause> {
    meta::validate_object_meta_update_generic(new, old)
}

/// Finds the paths of fields a kind's schema does not know (`spec.foo`),
/// for `fieldValidation`. Supplied by the server from the OpenAPI schemas
/// (and, for custom resources, from their CRD's schema), so the registry does
/// not depend on where schemas come from.
pub type UnknownFieldsFn =
    std::sync::Arc<dyn Fn(&ResourceInfo, &Value) -> Vec<String> + Send + Sync>;
