//! `multicluster.x-k8s.io/v1alpha1` ServiceExport and ServiceImport (the
//! Multi-cluster Services API, KEP-1645), everything about the two kinds in
//! one file: discovery facts (the upstream CRDs' short names, the `status`
//! subresource), validation of what the CRDs' schemas require, and the
//! Table printers of their `additionalPrinterColumns` (ServiceExport: AGE;
//! ServiceImport: TYPE, IP, AGE). Never propagated as objects: the
//! federation's MCS controller writes the member side (`ubernetes-federation`
//! `policy` and `mcs`).

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::{Value, json};
use ubernetes_api::mcs::{ServiceExport, ServiceImport, TYPE_CLUSTER_SET_IP, TYPE_HEADLESS};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use crate::printers::{self, AGE, Column, TablePrinter, age, col, name};
use crate::strategy::Strategy;

/// The ServiceExport and ServiceImport strategies.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<ServiceExport>::new(info::<ServiceExport>(
                "serviceexport",
                &["svcex", "svcexport"],
                &[],
                &["status"],
            ))
            .printer(printers::NAME_AGE)
            .without_protobuf()
            .generation(),
        ),
        Arc::new(
            Builtin::<ServiceImport>::new(info::<ServiceImport>(
                "serviceimport",
                &["svcim", "svcimport"],
                &[],
                &["status"],
            ))
            .printer(IMPORT_PRINTER)
            .without_protobuf()
            .generation()
            .validate(validate_import),
        ),
    ]
}

/// What the upstream ServiceImport CRD's schema requires: `spec.type` one
/// of `ClusterSetIP`, `Headless`; at most two `ips` and `ipFamilies`.
fn validate_import(i: &ServiceImport) -> Vec<Cause> {
    let Some(spec) = &i.spec else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if spec.type_.is_empty() {
        out.push(field::required("spec.type", ""));
    } else if spec.type_ != TYPE_CLUSTER_SET_IP && spec.type_ != TYPE_HEADLESS {
        out.push(field::not_supported(
            "spec.type",
            &json!(spec.type_),
            &[TYPE_CLUSTER_SET_IP, TYPE_HEADLESS],
        ));
    }
    for (path, n) in [
        ("spec.ips", spec.ips.as_ref().map_or(0, Vec::len)),
        (
            "spec.ipFamilies",
            spec.ip_families.as_ref().map_or(0, Vec::len),
        ),
    ] {
        if n > 2 {
            out.push(Cause::new(
                "FieldValueTooMany",
                format!("Too many: {n}: must have at most 2 items"),
                path,
            ));
        }
    }
    out
}

/// The ServiceImport CRD's printer columns: `Type`, `IP`, `Age`.
pub const IMPORT_PRINTER: TablePrinter = TablePrinter::new(import_columns, import_cells);

#[rustfmt::skip]
fn import_columns() -> Vec<Column> {
    vec![
        printers::NAME,
        col("Type", "string", "The type of this ServiceImport"),
        col("IP", "string", "The VIP for this ServiceImport"),
        AGE,
    ]
}

fn import_cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ips = obj
        .pointer("/spec/ips")
        .filter(|v| !v.is_null())
        .map(Value::to_string)
        .unwrap_or_default();
    vec![
        name(obj),
        json!(
            obj.pointer("/spec/type")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
        json!(ips),
        age(obj, now),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn import(v: Value) -> ServiceImport {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn an_import_needs_a_known_type_and_at_most_two_ips() {
        let ok = import(json!({"spec": {"type": "ClusterSetIP", "ports": [{"port": 80}]}}));
        assert!(validate_import(&ok).is_empty());
        let bad = import(json!({"spec": {"type": "LoadBalancer", "ips": ["a", "b", "c"]}}));
        let fields: Vec<_> = validate_import(&bad).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["spec.type", "spec.ips"]);
        let none = import(json!({"spec": {"ports": []}}));
        assert_eq!(validate_import(&none).len(), 1);
    }

    #[test]
    fn the_import_table_shows_type_and_ips() {
        let obj = json!({"metadata": {"name": "web"}, "spec": {"type": "ClusterSetIP", "ips": ["10.0.0.9"]}});
        let cells = import_cells(&obj, Timestamp::now());
        assert_eq!(cells[1], "ClusterSetIP");
        assert_eq!(cells[2], "[\"10.0.0.9\"]");
        assert_eq!(import_columns().len(), cells.len());
    }
}
