//! Table rendering (`as=Table;g=meta.k8s.io`): the registry's printers give
//! each built-in kind kube-apiserver's columns; a custom resource gets its
//! CRD's columns (`Name`, then the version's `additionalPrinterColumns`, or
//! `Age` when none are declared), as kube's CRD table convertor.

use serde_json::Value;
use ubernetes_apimachinery::ResourceInfo;

/// A `meta.k8s.io/v1` Table of `objects`, rows carrying their
/// PartialObjectMetadata (`includeObject=Metadata`, kubectl's default).
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    list_meta: Option<Value>,
    include_metadata: bool,
) -> Value {
    let include = if include_metadata {
        ubernetes_registry::printers::IncludeObject::Metadata
    } else {
        ubernetes_registry::printers::IncludeObject::None
    };
    let printer = ubernetes_registry::kinds::printer_for(&info.group, &info.kind);
    let mut table =
        ubernetes_registry::printers::to_table(&printer, objects, true, include, list_meta);
    if let Some(columns) = ubernetes_apiextensions::controller::printer_columns_of(info) {
        custom_columns(&mut table, &columns, objects);
    }
    table
}

/// Replace the generic columns and cells of `table` (one row per object, in
/// order) by the CRD's.
fn custom_columns(table: &mut Value, columns: &[Value], objects: &[Value]) {
    let Value::Object(t) = table else {
        return;
    };
    t.insert(
        "columnDefinitions".into(),
        Value::Array(ubernetes_apiextensions::column_definitions(columns)),
    );
    if let Some(Value::Array(rows)) = t.get_mut("rows") {
        for (row, obj) in rows.iter_mut().zip(objects) {
            if let Value::Object(r) = row {
                r.insert(
                    "cells".into(),
                    Value::Array(ubernetes_apiextensions::table_cells(columns, obj)),
                );
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn custom_columns_replace_the_generic_ones_row_by_row() {
        let columns = vec![
            json!({"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}),
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
        ];
        let objects = vec![
            json!({"metadata": {"name": "a"}, "spec": {"cronSpec": "* * * * */5", "replicas": 2}}),
            json!({"metadata": {"name": "b"}, "spec": {"cronSpec": "1 * * * *"}}),
        ];
        let mut t = json!({"columnDefinitions": [{"name": "Name"}, {"name": "Age"}],
            "rows": [{"cells": ["a", "1s"]}, {"cells": ["b", "1s"]}]});
        custom_columns(&mut t, &columns, &objects);
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Spec", "Replicas"]);
        assert_eq!(t["rows"][0]["cells"], json!(["a", "* * * * */5", 2]));
        assert_eq!(t["rows"][1]["cells"], json!(["b", "1 * * * *", null]));
    }
}
