//! `multicluster.x-k8s.io/v1alpha1` ClusterProfile (sig-multicluster's
//! cluster inventory API, KEP-4322), everything about the kind in one file:
//! discovery facts (the upstream CRD's: no short names, the `status`
//! subresource), validation of what the CRD's schema requires
//! (`spec.clusterManager.name`, immutable; property names and values of 1
//! to 253 and 1 to 1024 characters, unique names) and its Table printer.
//!
//! The upstream CRD declares no `additionalPrinterColumns` (kubectl would
//! show `NAME AGE`); the federation adds the health the inventory is read
//! for: `HEALTHY` (the `ControlPlaneHealthy` condition), `JOINED`,
//! `VERSION`, and with `-o wide` the `MANAGER`. Never propagated: the
//! federation's `cluster_profiles` controller writes one per Cluster
//! (`ubernetes-federation` `policy` and `cluster_profiles`).

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::Timestamp;
use serde_json::{Value, json};
use ubernetes_api::cluster_inventory::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, ClusterProfile,
};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use crate::printers::{self, AGE, Column, TablePrinter, age, col, name, wide};
use crate::strategy::Strategy;

/// The ClusterProfile strategy.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![Arc::new(
        Builtin::<ClusterProfile>::new(info::<ClusterProfile>(
            "clusterprofile",
            &[],
            &[],
            &["status"],
        ))
        .printer(PRINTER)
        .without_protobuf()
        .generation()
        .validate(validate)
        .validate_update(validate_update),
    )]
}

/// What the upstream CRD's schema requires of a ClusterProfile.
fn validate(p: &ClusterProfile) -> Vec<Cause> {
    let mut out = Vec::new();
    match &p.spec {
        None => out.push(field::required("spec", "")),
        Some(s) if s.cluster_manager.name.is_empty() => {
            out.push(field::required("spec.clusterManager.name", ""));
        }
        Some(_) => {}
    }
    let Some(status) = &p.status else {
        return out;
    };
    let mut seen = BTreeSet::new();
    for (i, prop) in status.properties.iter().enumerate() {
        let path = format!("status.properties[{i}]");
        for (f, v, max) in [("name", &prop.name, 253), ("value", &prop.value, 1024)] {
            if v.is_empty() {
                out.push(field::required(&format!("{path}.{f}"), ""));
            } else if v.chars().count() > max {
                out.push(field::too_long(&format!("{path}.{f}"), max));
            }
        }
        if !seen.insert(prop.name.as_str()) {
            out.push(field::duplicate(&format!("{path}.name"), &json!(prop.name)));
        }
    }
    let mut types = BTreeSet::new();
    for (i, c) in status.conditions.iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        if !["True", "False", "Unknown"].contains(&c.status.as_str()) {
            out.push(field::not_supported(
                &format!("{path}.status"),
                &json!(c.status),
                &["True", "False", "Unknown"],
            ));
        }
        if c.reason.is_empty() {
            out.push(field::required(&format!("{path}.reason"), ""));
        }
        if !types.insert(c.type_.as_str()) {
            out.push(field::duplicate(&format!("{path}.type"), &json!(c.type_)));
        }
    }
    out
}

/// `spec.clusterManager` is immutable (the CRD's `self == oldSelf`).
fn validate_update(new: &ClusterProfile, old: &ClusterProfile) -> Vec<Cause> {
    let manager = |p: &ClusterProfile| p.spec.as_ref().map(|s| s.cluster_manager.clone());
    if old.spec.is_some() && manager(new) != manager(old) {
        return vec![Cause::new(
            "FieldValueInvalid",
            "Invalid value: \"object\": ClusterManager is immutable",
            "spec.clusterManager",
        )];
    }
    Vec::new()
}

/// `NAME HEALTHY JOINED VERSION AGE`, `-o wide` adds `MANAGER`.
pub const PRINTER: TablePrinter = TablePrinter::new(columns, cells);

#[rustfmt::skip]
fn columns() -> Vec<Column> {
    vec![
        printers::NAME,
        col("Healthy", "string", "The status of the cluster's ControlPlaneHealthy condition"),
        col("Joined", "string", "The status of the cluster's Joined condition"),
        col("Version", "string", "The Kubernetes version of the cluster"),
        AGE,
        wide("Manager", "string", "The cluster manager that owns this ClusterProfile"),
    ]
}

fn condition_status(obj: &Value, type_: &str) -> Value {
    let status = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        })
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("Unknown");
    json!(status)
}

fn cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    let text = |p: &str| json!(obj.pointer(p).and_then(Value::as_str).unwrap_or_default());
    vec![
        name(obj),
        condition_status(obj, CONDITION_CONTROL_PLANE_HEALTHY),
        condition_status(obj, CONDITION_JOINED),
        text("/status/version/kubernetes"),
        age(obj, now),
        text("/spec/clusterManager/name"),
    ]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn profile(v: Value) -> ClusterProfile {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_profile_needs_a_manager_and_valid_properties() {
        let ok = profile(json!({"spec": {"clusterManager": {"name": "ubernetes"}},
            "status": {"properties": [{"name": "a", "value": "b"}]}}));
        assert!(validate(&ok).is_empty());
        let bad = profile(json!({"spec": {"displayName": "x"},
            "status": {"properties": [{"name": "a", "value": ""}, {"name": "a", "value": "b"}],
                       "conditions": [{"type": "Joined", "status": "Yes", "reason": "",
                                       "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let fields: Vec<_> = validate(&bad).into_iter().map(|c| c.field).collect();
        assert_eq!(
            fields,
            [
                "spec.clusterManager.name",
                "status.properties[0].value",
                "status.properties[1].name",
                "status.conditions[0].status",
                "status.conditions[0].reason"
            ]
        );
        assert_eq!(validate(&profile(json!({}))).len(), 1);
    }

    #[test]
    fn the_cluster_manager_is_immutable() {
        let a = profile(json!({"spec": {"clusterManager": {"name": "ubernetes"}}}));
        let b = profile(
            json!({"spec": {"displayName": "new", "clusterManager": {"name": "ubernetes"}}}),
        );
        let c = profile(json!({"spec": {"clusterManager": {"name": "other"}}}));
        assert!(validate_update(&b, &a).is_empty());
        assert_eq!(validate_update(&c, &a).len(), 1);
    }

    #[test]
    fn the_table_shows_health_joined_and_version() {
        let obj = json!({"metadata": {"name": "east"},
            "spec": {"clusterManager": {"name": "ubernetes"}},
            "status": {"version": {"kubernetes": "v1.36.2"}, "conditions": [
                {"type": "ControlPlaneHealthy", "status": "False"},
                {"type": "Joined", "status": "True"}]}});
        let cells = cells(&obj, Timestamp::now());
        assert_eq!(
            cells[1..4],
            [json!("False"), json!("True"), json!("v1.36.2")]
        );
        assert_eq!(cells[5], "ubernetes");
        assert_eq!(columns().len(), cells.len());
        let none = super::cells(&json!({"metadata": {"name": "x"}}), Timestamp::now());
        assert_eq!(none[1], "Unknown");
    }
}
