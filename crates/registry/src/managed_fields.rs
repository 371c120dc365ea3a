//! `metadata.managedFields` bookkeeping.
//!
//! The server plugs in a [`FieldManager`] (server-side apply and field
//! ownership over the kinds' schemas: the `ubernetes-fieldmanager` crate),
//! so the registry needs no schema knowledge. Without one, [`record_update`]
//! keeps a coarse `Update` entry per manager listing every field the object
//! has.

use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ResourceInfo;

use ubernetes_apimachinery::ApiError;

use crate::store::{WriteOptions, now_rfc3339};

/// Field ownership, as kube-apiserver's field manager.
pub trait FieldManager: Send + Sync {
    /// `new` with its `metadata.managedFields` recomputed after a create,
    /// update or non-apply patch by `manager` (`old` is `None` on create).
    fn update(
        &self,
        info: &ResourceInfo,
        old: Option<&Value>,
        new: Value,
        manager: &str,
        subresource: &str,
    ) -> Value;

    /// The object after `manager` applies the configuration `applied` to
    /// `live` (`None`: the object does not exist yet), with its managed
    /// fields; conflicts are a 409 unless `force`.
    fn apply(
        &self,
        info: &ResourceInfo,
        live: Option<&Value>,
        applied: &Value,
        manager: &str,
        force: bool,
        subresource: &str,
    ) -> Result<Value, ApiError>;

    /// MutatingAdmissionPolicy's `ApplyConfiguration`: `applied` merged
    /// into `live` as server-side apply merges (kube's
    /// `ApplyStructuredMergeDiff`: no field ownership recorded), refusing a
    /// configuration that sets atomic lists, maps or structs. The error is
    /// kube's text after `error applying patch: `. Without a schema (this
    /// default): objects merge key by key, anything else is replaced.
    fn merge_applied(
        &self,
        info: &ResourceInfo,
        live: &Value,
        applied: &Value,
    ) -> Result<Value, String> {
        let _ = info;
        Ok(merge_untyped(live, applied))
    }
}

/// Objects merged key by key (`applied` wins), anything else replaced.
pub fn merge_untyped(live: &Value, applied: &Value) -> Value {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            let mut out = l.clone();
            for (k, v) in a {
                let merged = match l.get(k) {
                    Some(lv) => merge_untyped(lv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        _ => applied.clone(),
    }
}

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
