//! Server-side printing: `meta.k8s.io/v1` `Table` responses
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), with the
//! columns and cells kube-apiserver's printers produce for each built-in kind
//! (`pkg/printers/internalversion/printers.go`), the federation Cluster's own
//! columns, and the `Name, Created At` default for anything else.
//!
//! Pure functions over JSON objects. A kind's printer is a [`TablePrinter`]
//! (kube's `TableHandler(columns, printFunc)`: columns and cells together),
//! chosen by the kind's declaration ([`crate::Strategy::printer`]); this
//! module knows no kind list. Start with [`to_table`]; the printers are in
//! `kinds.rs`, `platform.rs` and `cluster_policy.rs` (re-exported here), the
//! formatting helpers (`HumanDuration`, selectors) in `format.rs`.

mod cluster_policy;
mod format;
mod kinds;
mod platform;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

pub use cluster_policy::{
    ADMISSION_POLICY_BINDING, CERTIFICATE_SIGNING_REQUEST, CSI_DRIVER, CSI_NODE,
    MUTATING_ADMISSION_POLICY, RUNTIME_CLASS, STORAGE_CLASS, VALIDATING_ADMISSION_POLICY,
    VOLUME_ATTACHMENT, VOLUME_ATTRIBUTES_CLASS, WEBHOOK_CONFIGURATION,
};
pub use format::human_duration;
pub use kinds::*;
pub use platform::{
    COMPONENT_STATUS, FLOW_SCHEMA, IP_ADDRESS, PRIORITY_LEVEL_CONFIGURATION, RESOURCE_CLAIM,
    RESOURCE_SLICE, SERVICE_CIDR,
};

/// A Table printer, kube's `TableHandler(columns, printFunc)`: the column
/// definitions (every column, wide ones with priority 1) and the function
/// printing one object's cells, in that order. A kind declares its printer
/// ([`crate::Strategy::printer`]); [`DEFAULT`] is `Name, Created At`.
#[derive(Clone, Copy)]
pub struct TablePrinter {
    columns: fn() -> Vec<Column>,
    cells: Cells,
    sort: Option<fn(&mut [Value])>,
}

/// One row's cells and its `conditions` (a finished Pod's `Completed`).
pub type Row = (Vec<Value>, Option<Value>);

#[derive(Clone, Copy)]
enum Cells {
    Plain(fn(&Value, Timestamp) -> Vec<Value>),
    /// Cells and the row's `conditions` (a finished Pod's `Completed`).
    WithConditions(fn(&Value, Timestamp) -> Row),
}

impl TablePrinter {
    /// Columns and the cells of one object as of a time (for ages).
    pub const fn new(
        columns: fn() -> Vec<Column>,
        cells: fn(&Value, Timestamp) -> Vec<Value>,
    ) -> Self {
        Self {
            columns,
            cells: Cells::Plain(cells),
            sort: None,
        }
    }

    /// Columns, and cells with the row's `conditions`.
    pub const fn with_conditions(
        columns: fn() -> Vec<Column>,
        cells: fn(&Value, Timestamp) -> Row,
    ) -> Self {
        Self {
            columns,
            cells: Cells::WithConditions(cells),
            sort: None,
        }
    }

    /// Rows in the order `sort` leaves the objects (kube sorts FlowSchemas
    /// by precedence), not the list's.
    pub const fn sorted_by(mut self, sort: fn(&mut [Value])) -> Self {
        self.sort = Some(sort);
        self
    }

    /// Every column, wide ones (priority 1) included.
    pub fn columns(&self) -> Vec<Column> {
        (self.columns)()
    }

    /// One object's cells (one per column) and its row's `conditions`.
    pub fn cells(&self, obj: &Value, now: Timestamp) -> Row {
        match self.cells {
            Cells::Plain(f) => (f(obj, now), None),
            Cells::WithConditions(f) => f(obj, now),
        }
    }
}

impl std::fmt::Debug for TablePrinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.columns().iter().map(|c| c.name).collect();
        f.debug_struct("TablePrinter")
            .field("columns", &names)
            .finish()
    }
}

/// What each row carries in `object` (the `includeObject` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `"object": null`.
    None,
    /// A `meta.k8s.io/v1` `PartialObjectMetadata` (kube's default).
    #[default]
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parse the `includeObject` query parameter (`None`, `Metadata`,
    /// `Object`; empty means `Metadata`). `None` (the Rust one) for anything
    /// else, which kube-apiserver rejects with 400.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "None" => Some(Self::None),
            "" | "Metadata" => Some(Self::Metadata),
            "Object" => Some(Self::Object),
            _ => Option::None,
        }
    }
}

fn column_json(c: &Column) -> Value {
    json!({
        "name": c.name,
        "type": c.kind,
        "format": c.format,
        "description": c.description,
        "priority": c.priority,
    })
}

/// The `columnDefinitions` of a resource's tables (every column, wide ones
/// with priority 1), e.g. for watch events.
pub fn table_columns(printer: &TablePrinter) -> Vec<Value> {
    printer.columns().iter().map(column_json).collect()
}

/// One `TableRow` for an object, as of `now`.
pub fn table_row(
    printer: &TablePrinter,
    object: &Value,
    wide_columns_included: bool,
    include_object: IncludeObject,
    now: Timestamp,
) -> Value {
    let cols = printer.columns();
    let (cells, conditions) = printer.cells(object, now);
    let cells: Vec<Value> = cells
        .into_iter()
        .zip(cols.iter())
        .filter(|(_, c)| wide_columns_included || c.priority == 0)
        .map(|(v, _)| v)
        .collect();
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    if let Some(c) = conditions {
        row.insert("conditions".into(), c);
    }
    row.insert("object".into(), row_object(object, include_object));
    Value::Object(row)
}

fn row_object(object: &Value, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => object.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

/// A `meta.k8s.io/v1` `Table` of `objects` as of the current time. See
/// [`to_table_at`].
pub fn to_table(
    printer: &TablePrinter,
    objects: &[Value],
    wide_columns_included: bool,
    include_object: IncludeObject,
    list_meta: Option<Value>,
) -> Value {
    to_table_at(
        printer,
        objects,
        wide_columns_included,
        include_object,
        list_meta,
        Timestamp::now(),
    )
}

/// A `meta.k8s.io/v1` `Table` of `objects`, ages computed against `now`.
///
/// `wide_columns_included`: kube-apiserver always prints with `Wide: true`
/// (every column, wide ones with priority 1); `false` drops them.
/// `list_meta`: the list's `metadata` (`resourceVersion`, `continue`,
/// `remainingItemCount` are kept); without it, a single object's
/// `resourceVersion` becomes the table's, as kube does for a get.
pub fn to_table_at(
    printer: &TablePrinter,
    objects: &[Value],
    wide_columns_included: bool,
    include_object: IncludeObject,
    list_meta: Option<Value>,
    now: Timestamp,
) -> Value {
    let columns: Vec<Value> = printer
        .columns()
        .iter()
        .filter(|c| wide_columns_included || c.priority == 0)
        .map(column_json)
        .collect();
    let mut sorted;
    let mut objects = objects;
    if let Some(sort) = printer.sort {
        sorted = objects.to_vec();
        sort(&mut sorted);
        objects = &sorted;
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| table_row(printer, o, wide_columns_included, include_object, now))
        .collect();
    let mut metadata = Map::new();
    match list_meta {
        Some(Value::Object(m)) => {
            for key in ["resourceVersion", "continue", "remainingItemCount"] {
                if let Some(v) = m.get(key).filter(|v| !v.is_null() && *v != "") {
                    metadata.insert(key.into(), v.clone());
                }
            }
        }
        _ => {
            if let [single] = objects
                && let Some(rv) = single
                    .pointer("/metadata/resourceVersion")
                    .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
            {
                metadata.insert("resourceVersion".into(), rv.clone());
            }
        }
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": Value::Object(metadata),
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// Drop a table's headers as kube does with `NoHeaders` (every watch event
/// after the first, or `?noHeaders=true` through TableOptions): the
/// `columnDefinitions` become `null`.
pub fn strip_headers(table: &mut Value) {
    if let Value::Object(m) = table {
        m.insert("columnDefinitions".into(), Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_object_parses_kube_values() {
        assert_eq!(IncludeObject::parse(""), Some(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse("None"), Some(IncludeObject::None));
        assert_eq!(IncludeObject::parse("Object"), Some(IncludeObject::Object));
        assert_eq!(IncludeObject::parse("object"), None);
    }

    #[test]
    fn metadata_rows_are_partial_object_metadata() {
        let o =
            json!({"kind": "ConfigMap", "metadata": {"name": "a", "uid": "u"}, "data": {"k": "v"}});
        let v = row_object(&o, IncludeObject::Metadata);
        assert_eq!(
            v,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a", "uid": "u"}})
        );
        assert_eq!(row_object(&o, IncludeObject::None), Value::Null);
        assert_eq!(row_object(&o, IncludeObject::Object), o);
    }

    #[test]
    fn stripped_headers_are_null_as_on_later_watch_events() {
        let mut t = json!({"kind": "Table", "columnDefinitions": [{"name": "Name"}], "rows": []});
        strip_headers(&mut t);
        assert_eq!(t["columnDefinitions"], Value::Null);
        assert_eq!(t["rows"], json!([]));
    }
}
