//! `metadata.managedFields` bookkeeping for non-apply writes: one `Update`
//! entry per (manager, subresource) with the set of fields the object has,
//! in `FieldsV1` form. Server-side apply (a later issue) replaces this with
//! full field ownership.

use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ResourceInfo;

use crate::store::{WriteOptions, now_rfc3339};

/// `FieldsV1` of an object: every map key as `f:<key>`; lists are leaves.
fn fields_v1(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, child) in m {
                out.insert(format!("f:{k}"), fields_v1(child));
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

/// Record that `opts.field_manager` wrote `obj` (kube's Update operation).
/// Without a field manager nothing is recorded besides keeping old entries.
pub fn record_update(
    obj: &mut Value,
    old: Option<&Value>,
    opts: &WriteOptions,
    info: &ResourceInfo,
    subresource: Option<&str>,
) {
    let mut entries: Vec<Value> = old
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // A client sending managedFields explicitly on create keeps them.
    if old.is_none()
        && let Some(given) = obj
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
        && !given.is_empty()
    {
        return;
    }
    let Some(manager) = opts.field_manager.as_deref() else {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if entries.is_empty() {
                meta.remove("managedFields");
            } else {
                meta.insert("managedFields".into(), Value::Array(entries));
            }
        }
        return;
    };
    let mut tracked = obj.clone();
    if let Some(m) = tracked.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "managedFields",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                meta.remove(k);
            }
            if meta.is_empty() {
                m.remove("metadata");
            }
        }
        match subresource {
            Some("status") => {
                let status = m.get("status").cloned();
                m.clear();
                if let Some(s) = status {
                    m.insert("status".into(), s);
                }
            }
            _ => {
                m.remove("status");
            }
        }
    }
    let sub = subresource.unwrap_or("");
    entries.retain(|e| {
        !(e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some("Update")
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == sub)
    });
    let mut entry = json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": info.api_version(),
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(&tracked),
    });
    if !sub.is_empty() {
        entry["subresource"] = json!(sub);
    }
    entries.push(entry);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}
