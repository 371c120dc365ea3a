//! Kind-specific steps of deletion that kube-apiserver's REST storage does
//! for a few kinds (namespaces enter the `Terminating` phase).

use serde_json::{Value, json};
use ubernetes_apimachinery::ResourceInfo;

/// Called when an object is marked for deletion (deletionTimestamp set).
pub fn on_delete_marked(info: &ResourceInfo, obj: &mut Value) {
    if info.group.is_empty() && info.resource == "namespaces" {
        obj["status"] = json!({"phase": "Terminating"});
    }
}
