//! `scheduling.k8s.io/v1` PriorityClass, everything about the kind in one
//! file (issue 22): its discovery facts, defaults, validation, Table
//! printer (columns and cells together), admission plugin and federation.
//! Registering it is one line in the group's list (`platform.rs`); nothing
//! else in the server names it. The system classes created at start and the
//! Pod side of the priority admission are elsewhere (`platform.rs`,
//! `crate::priority`).

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Value, json};

use super::builtin::{Builtin, info};
use super::validation::invalid_num;
use crate::printers::{AGE, Column, NAME, TablePrinter, age, col, name};
use crate::strategy::Strategy;

/// The PriorityClass strategy, as kube-apiserver's
/// `pkg/registry/scheduling/priorityclass`.
pub fn strategy() -> Arc<dyn Strategy> {
    Arc::new(
        Builtin::<PriorityClass>::new(info::<PriorityClass>("priorityclass", &["pc"], &[], &[]))
            .printer(PRINTER)
            .admission(crate::priority::class_plugin)
            .federated()
            // kube 1.36 keeps metadata.generation on PriorityClasses.
            .generation()
            .defaults(|pc| {
                if pc.preemption_policy.is_none() {
                    pc.preemption_policy = Some("PreemptLowerPriority".into());
                }
            })
            .validate_update(|new, old| {
                if new.value != old.value {
                    return vec![invalid_num(
                        "value",
                        new.value.unwrap_or_default().into(),
                        "field is immutable",
                    )];
                }
                Vec::new()
            }),
    )
}

/// kube's PriorityClass printer (`printPriorityClass`).
pub const PRINTER: TablePrinter = TablePrinter::new(columns, cells);

fn columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Value",
            "integer",
            "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        ),
        col(
            "Global-Default",
            "boolean",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
        ),
        AGE,
        col(
            "PreemptionPolicy",
            "string",
            "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        ),
    ]
}

fn cells(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(obj.get("value").and_then(Value::as_i64).unwrap_or(0)),
        json!(
            obj.get("globalDefault")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age(obj, now),
        json!(
            obj.get("preemptionPolicy")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
    ]
}
