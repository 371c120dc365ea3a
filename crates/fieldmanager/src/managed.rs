//! [`Managed`]: an object's `metadata.managedFields`, decoded into one
//! [`ManagedEntry`] per [`ManagerId`] (upstream's `managedfields/internal`
//! `DecodeManagedFields` / `EncodeObjectManagedFields`), and written back in
//! kube's entry order: `Apply` before `Update`, then oldest first, then by
//! manager, apiVersion and subresource.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value, json};

use crate::set::FieldSet;

/// `metadata.managedFields[].operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// Who owns a field set (upstream's manager identifier): the manager name,
/// the operation, the subresource and, for `Update` only, the apiVersion —
/// an applier keeps one entry whatever version it applies with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    /// Empty for `Apply`.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    /// The identifier of an applier.
    pub fn apply(manager: &str, subresource: &str) -> Self {
        Self {
            manager: manager.to_string(),
            operation: Operation::Apply,
            api_version: String::new(),
            subresource: subresource.to_string(),
        }
    }

    /// The identifier of an updater at an apiVersion.
    pub fn update(manager: &str, api_version: &str, subresource: &str) -> Self {
        Self {
            manager: manager.to_string(),
            operation: Operation::Update,
            api_version: api_version.to_string(),
            subresource: subresource.to_string(),
        }
    }
}

impl fmt::Display for ManagerId {
    /// Upstream's `printManager`: `"name"`, then ` with subresource "s"`,
    /// then for updaters ` using <apiVersion>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Value::String(self.manager.clone()))?;
        if !self.subresource.is_empty() {
            write!(
                f,
                " with subresource {}",
                Value::String(self.subresource.clone())
            )?;
        }
        if self.operation == Operation::Update {
            write!(f, " using {}", self.api_version)?;
        }
        Ok(())
    }
}

/// What one manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedEntry {
    pub fields: FieldSet,
    /// The apiVersion the fields are expressed in.
    pub api_version: String,
    /// RFC 3339 time of the manager's last change, if known.
    pub time: Option<String>,
}

/// All managers of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Managed {
    pub entries: BTreeMap<ManagerId, ManagedEntry>,
}

/// `metadata.managedFields` that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

impl Managed {
    /// Whether no manager owns anything.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Decode an object's `metadata.managedFields` (absent → empty).
    pub fn from_object(object: &Value) -> Result<Managed, DecodeError> {
        match object.pointer("/metadata/managedFields") {
            None | Some(Value::Null) => Ok(Managed::default()),
            Some(list) => Managed::decode(list),
        }
    }

    /// Decode a `managedFields` list.
    pub fn decode(list: &Value) -> Result<Managed, DecodeError> {
        let items = list
            .as_array()
            .ok_or_else(|| DecodeError("managedFields must be a list".into()))?;
        let mut managed = Managed::default();
        for (i, item) in items.iter().enumerate() {
            let text = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or("");
            let operation = match text("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err(DecodeError("operation must be `Apply` or `Update`".into())),
            };
            if text("apiVersion").is_empty() {
                return Err(DecodeError("apiVersion must not be empty".into()));
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => {
                    return Err(DecodeError(format!(
                        "missing fieldsType in managed fields entry {i}"
                    )));
                }
                other => {
                    return Err(DecodeError(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    )));
                }
            }
            let fields = match item.get("fieldsV1") {
                None | Some(Value::Null) => FieldSet::new(),
                Some(v) => FieldSet::from_fields_v1(v).map_err(|e| {
                    DecodeError(format!("error decoding versioned set from entry {i}: {e}"))
                })?,
            };
            let id = ManagerId {
                manager: text("manager").to_string(),
                operation,
                api_version: match operation {
                    Operation::Apply => String::new(),
                    Operation::Update => text("apiVersion").to_string(),
                },
                subresource: text("subresource").to_string(),
            };
            managed.entries.insert(
                id,
                ManagedEntry {
                    fields,
                    api_version: text("apiVersion").to_string(),
                    time: item.get("time").and_then(Value::as_str).map(String::from),
                },
            );
        }
        Ok(managed)
    }

    /// The `managedFields` list in kube's order; `None` when empty.
    pub fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut entries: Vec<(&ManagerId, &ManagedEntry)> = self.entries.iter().collect();
        entries.sort_by(|(p, pe), (q, qe)| {
            p.operation
                .cmp(&q.operation)
                .then_with(|| time_key(pe).cmp(&time_key(qe)))
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| pe.api_version.cmp(&qe.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
        let list = entries
            .into_iter()
            .map(|(id, entry)| {
                let mut m = Map::new();
                if !id.manager.is_empty() {
                    m.insert("manager".into(), json!(id.manager));
                }
                m.insert("operation".into(), json!(id.operation.as_str()));
                m.insert("apiVersion".into(), json!(entry.api_version));
                if let Some(t) = &entry.time {
                    m.insert("time".into(), json!(t));
                }
                m.insert("fieldsType".into(), json!("FieldsV1"));
                m.insert("fieldsV1".into(), entry.fields.to_fields_v1());
                if !id.subresource.is_empty() {
                    m.insert("subresource".into(), json!(id.subresource));
                }
                Value::Object(m)
            })
            .collect();
        Some(Value::Array(list))
    }

    /// Write (or remove, when empty) `metadata.managedFields` on `object`.
    pub fn write_to(&self, object: &mut Value) {
        let Some(obj) = object.as_object_mut() else {
            return;
        };
        match self.encode() {
            Some(list) => {
                let meta = obj
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("managedFields".into(), list);
                }
            }
            None => {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                }
            }
        }
    }

    /// Drop managers that own nothing.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|_, e| !e.fields.is_empty());
    }
}

/// Sort key of an entry's time: whole seconds, absent first. RFC 3339 UTC
/// times of one format order as strings; fractions are ignored as Go's
/// `Time.Unix()` ignores them.
fn time_key(entry: &ManagedEntry) -> String {
    entry
        .time
        .as_deref()
        .map(|t| {
            t.split('.')
                .next()
                .unwrap_or(t)
                .trim_end_matches('Z')
                .to_string()
        })
        .unwrap_or_default()
}

/// Remove `metadata.managedFields` from an object.
pub fn strip_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_fields_round_trip_in_kube_order() {
        let list = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:09Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "subresource": "status"}
        ]);
        let m = Managed::decode(&list).expect("decode");
        let out = m.encode().expect("entries");
        let managers: Vec<&str> = out
            .as_array()
            .expect("list")
            .iter()
            .map(|e| e["manager"].as_str().expect("manager"))
            .collect();
        assert_eq!(managers, ["kubectl", "a", "b"]);
        assert_eq!(out[1]["subresource"], "status");
        assert_eq!(
            serde_json::to_string(&out[0]).expect("json"),
            r#"{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-01-01T00:00:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}"#
        );
    }

    #[test]
    fn bad_entries_are_decode_errors() {
        let no_type = json!([{"manager": "a", "operation": "Update", "apiVersion": "v1"}]);
        assert_eq!(
            Managed::decode(&no_type).expect_err("missing").to_string(),
            "missing fieldsType in managed fields entry 0"
        );
        let bad_op = json!([{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
        assert!(Managed::decode(&bad_op).is_err());
    }

    #[test]
    fn managers_print_as_upstream_does() {
        assert_eq!(
            ManagerId::update("kubectl-client-side-apply", "v1", "").to_string(),
            r#""kubectl-client-side-apply" using v1"#
        );
        assert_eq!(
            ManagerId::apply("m", "status").to_string(),
            r#""m" with subresource "status""#
        );
    }
}
