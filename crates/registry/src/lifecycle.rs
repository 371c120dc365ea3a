//! Kind-specific steps of deletion that kube-apiserver's REST storage does
//! for a few kinds (namespaces enter the `Terminating` phase).

use serde_json::{Value, json};
use ubernetes_apimachinery::ResourceInfo;

/// Called when an object is marked for deletion (deletionTimestamp set).
pub fn on_delete_marked(info: &ResourceInfo, obj: &mut Value) {
    if info.group.is_empty() && info.resource == "namespaces" {
        obj["status"] = json!({"phase": "Terminating"});
        // kube's namespace storage marks it without a grace period (its own
        // Delete, not the generic store's markAsDeleting).
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("deletionGracePeriodSeconds");
        }
    }
}
