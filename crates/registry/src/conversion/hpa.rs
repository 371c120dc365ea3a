//! `autoscaling/v2` HorizontalPodAutoscaler (the stored form) ⇄
//! `autoscaling/v1`, as kube's `pkg/apis/autoscaling/v1/conversion.go`.
//!
//! v1 has one metric, `spec.targetCPUUtilizationPercentage` (the CPU
//! `Resource` metric with an `averageUtilization` target), and reports
//! `status.currentCPUUtilizationPercentage`. What v1 cannot express travels
//! in annotations so that a read-modify-write through v1 keeps it:
//!
//! * `autoscaling.alpha.kubernetes.io/metrics`: the other `spec.metrics`,
//!   in autoscaling/v1's (v2beta1-shaped) `MetricSpec` JSON;
//! * `autoscaling.alpha.kubernetes.io/current-metrics`: every
//!   `status.currentMetrics`, as v1 `MetricStatus` JSON;
//! * `autoscaling.alpha.kubernetes.io/conditions`: `status.conditions`;
//! * `autoscaling.alpha.kubernetes.io/behavior`: `spec.behavior`, as kube
//!   writes it (its internal Go type marshalled: `ScaleUp`,
//!   `StabilizationWindowSeconds`…; read back case-insensitively as Go does).
//!
//! Reading v1 → v2 lifts them back out and drops them; a v1 object without a
//! CPU target and without other metrics gets kube's default, CPU at 80 %.
//! Hand-written on JSON (no crate converts Kubernetes API versions, and the
//! v1 metric types exist only in these annotations).

use serde_json::{Map, Value, json};

use super::Converter;
use super::json::into_map;

pub const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
pub const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
pub const BEHAVIOR_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

const ROUND_TRIP: &[&str] = &[
    METRIC_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_SPECS_ANNOTATION,
];

/// `autoscaling/v1` served from `autoscaling/v2` storage.
pub struct V1;

impl Converter for V1 {
    fn to_served(&self, stored: Value) -> Result<Value, String> {
        v2_to_v1(stored)
    }

    fn to_stored(&self, served: Value) -> Result<Value, String> {
        v1_to_v2(served)
    }
}

fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    v.pointer(path).filter(|v| !v.is_null())
}

/// Insert `key` when `value` is present.
fn put(m: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(v) = value {
        m.insert(key.into(), v.clone());
    }
}

fn is_cpu_resource(m: &Value) -> bool {
    m.get("type").and_then(Value::as_str) == Some("Resource")
        && get(m, "/resource/name").and_then(Value::as_str) == Some("cpu")
}

/// A Go non-pointer `resource.Quantity`: `"0"` when unset.
fn quantity_or_zero(v: Option<&Value>) -> Value {
    v.cloned().unwrap_or_else(|| json!("0"))
}

fn annotations_mut(meta: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let a = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !a.is_object() {
        *a = Value::Object(Map::new());
    }
    match a {
        Value::Object(m) => m,
        // Made an object just above.
        _ => unreachable_object(),
    }
}

#[allow(clippy::panic)] // the value was made an object on the line before.
fn unreachable_object() -> ! {
    panic!("annotations is an object")
}

// ------------------------------------------------------------------ v2 → v1

fn v2_to_v1(v2: Value) -> Result<Value, String> {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    let mut meta = v2
        .get("metadata")
        .cloned()
        .map(into_map)
        .unwrap_or_default();
    // Clear round-trip annotations that are not ours to set.
    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
        for k in ROUND_TRIP {
            a.remove(*k);
        }
    }

    let mut spec = Map::new();
    put(
        &mut spec,
        "scaleTargetRef",
        get(&v2, "/spec/scaleTargetRef"),
    );
    put(&mut spec, "minReplicas", get(&v2, "/spec/minReplicas"));
    put(&mut spec, "maxReplicas", get(&v2, "/spec/maxReplicas"));
    let metrics = get(&v2, "/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_resource(m))
        && let Some(u) = get(cpu, "/resource/target/averageUtilization")
    {
        spec.insert("targetCPUUtilizationPercentage".into(), u.clone());
    }
    let other: Vec<Value> = metrics
        .iter()
        .filter(|m| {
            !(is_cpu_resource(m) && get(m, "/resource/target/averageUtilization").is_some())
        })
        .map(metric_spec_to_v1)
        .collect();
    out.insert("metadata".into(), Value::Null);
    out.insert("spec".into(), Value::Object(spec));

    let mut annotations: Vec<(&str, String)> = Vec::new();
    if !other.is_empty() {
        annotations.push((METRIC_SPECS_ANNOTATION, Value::Array(other).to_string()));
    }
    if let Some(status) = v2.get("status").filter(|s| s.is_object()) {
        let mut st = Map::new();
        put(
            &mut st,
            "observedGeneration",
            get(status, "/observedGeneration"),
        );
        put(&mut st, "lastScaleTime", get(status, "/lastScaleTime"));
        st.insert(
            "currentReplicas".into(),
            get(status, "/currentReplicas").cloned().unwrap_or(json!(0)),
        );
        st.insert(
            "desiredReplicas".into(),
            get(status, "/desiredReplicas").cloned().unwrap_or(json!(0)),
        );
        let current = get(status, "/currentMetrics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for m in &current {
            if is_cpu_resource(m)
                && let Some(u) = get(m, "/resource/current/averageUtilization")
            {
                st.insert("currentCPUUtilizationPercentage".into(), u.clone());
            }
        }
        if !current.is_empty() {
            let v1: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
            annotations.push((METRIC_STATUSES_ANNOTATION, Value::Array(v1).to_string()));
        }
        if let Some(c) = get(status, "/conditions").and_then(Value::as_array)
            && !c.is_empty()
        {
            annotations.push((CONDITIONS_ANNOTATION, Value::Array(c.clone()).to_string()));
        }
        out.insert("status".into(), Value::Object(st));
    }
    if let Some(b) = get(&v2, "/spec/behavior") {
        annotations.push((BEHAVIOR_SPECS_ANNOTATION, behavior_to_go(b).to_string()));
    }
    if !annotations.is_empty() {
        let a = annotations_mut(&mut meta);
        for (k, v) in annotations {
            a.insert(k.into(), Value::String(v));
        }
    }
    if meta
        .get("annotations")
        .is_some_and(|a| a.as_object().is_some_and(Map::is_empty))
    {
        meta.remove("annotations");
    }
    out.insert("metadata".into(), Value::Object(meta));
    Ok(Value::Object(out))
}

/// autoscaling/v2 `MetricSpec` → autoscaling/v1 `MetricSpec`.
fn metric_spec_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", get(m, "/type"));
    if let Some(r) = get(m, "/resource") {
        let mut o = Map::new();
        put(&mut o, "name", get(r, "/name"));
        put(
            &mut o,
            "targetAverageUtilization",
            get(r, "/target/averageUtilization"),
        );
        put(&mut o, "targetAverageValue", get(r, "/target/averageValue"));
        out.insert("resource".into(), Value::Object(o));
    }
    if let Some(r) = get(m, "/containerResource") {
        let mut o = Map::new();
        put(&mut o, "name", get(r, "/name"));
        put(&mut o, "container", get(r, "/container"));
        put(
            &mut o,
            "targetAverageUtilization",
            get(r, "/target/averageUtilization"),
        );
        put(&mut o, "targetAverageValue", get(r, "/target/averageValue"));
        out.insert("containerResource".into(), Value::Object(o));
    }
    if let Some(p) = get(m, "/pods") {
        let mut o = Map::new();
        put(&mut o, "metricName", get(p, "/metric/name"));
        o.insert(
            "targetAverageValue".into(),
            quantity_or_zero(get(p, "/target/averageValue")),
        );
        put(&mut o, "selector", get(p, "/metric/selector"));
        out.insert("pods".into(), Value::Object(o));
    }
    if let Some(ob) = get(m, "/object") {
        let mut o = Map::new();
        put(&mut o, "target", get(ob, "/describedObject"));
        put(&mut o, "metricName", get(ob, "/metric/name"));
        o.insert(
            "targetValue".into(),
            quantity_or_zero(get(ob, "/target/value")),
        );
        put(&mut o, "selector", get(ob, "/metric/selector"));
        put(&mut o, "averageValue", get(ob, "/target/averageValue"));
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(e) = get(m, "/external") {
        let mut o = Map::new();
        put(&mut o, "metricName", get(e, "/metric/name"));
        put(&mut o, "metricSelector", get(e, "/metric/selector"));
        put(&mut o, "targetValue", get(e, "/target/value"));
        put(&mut o, "targetAverageValue", get(e, "/target/averageValue"));
        out.insert("external".into(), Value::Object(o));
    }
    Value::Object(out)
}

/// autoscaling/v2 `MetricStatus` → autoscaling/v1 `MetricStatus`.
fn metric_status_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", get(m, "/type"));
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = get(m, &format!("/{key}")) {
            let mut o = Map::new();
            put(&mut o, "name", get(r, "/name"));
            if container {
                put(&mut o, "container", get(r, "/container"));
            }
            put(
                &mut o,
                "currentAverageUtilization",
                get(r, "/current/averageUtilization"),
            );
            o.insert(
                "currentAverageValue".into(),
                quantity_or_zero(get(r, "/current/averageValue")),
            );
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(p) = get(m, "/pods") {
        let mut o = Map::new();
        put(&mut o, "metricName", get(p, "/metric/name"));
        o.insert(
            "currentAverageValue".into(),
            quantity_or_zero(get(p, "/current/averageValue")),
        );
        put(&mut o, "selector", get(p, "/metric/selector"));
        out.insert("pods".into(), Value::Object(o));
    }
    if let Some(ob) = get(m, "/object") {
        let mut o = Map::new();
        put(&mut o, "target", get(ob, "/describedObject"));
        put(&mut o, "metricName", get(ob, "/metric/name"));
        o.insert(
            "currentValue".into(),
            quantity_or_zero(get(ob, "/current/value")),
        );
        put(&mut o, "selector", get(ob, "/metric/selector"));
        put(&mut o, "averageValue", get(ob, "/current/averageValue"));
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(e) = get(m, "/external") {
        let mut o = Map::new();
        put(&mut o, "metricName", get(e, "/metric/name"));
        put(&mut o, "metricSelector", get(e, "/metric/selector"));
        o.insert(
            "currentValue".into(),
            quantity_or_zero(get(e, "/current/value")),
        );
        put(
            &mut o,
            "currentAverageValue",
            get(e, "/current/averageValue"),
        );
        out.insert("external".into(), Value::Object(o));
    }
    Value::Object(out)
}

/// `spec.behavior` as kube's annotation holds it: the internal Go type
/// marshalled without json tags (`ScaleUp`, `Policies`, `PeriodSeconds`…),
/// unset pointers as `null`.
fn behavior_to_go(b: &Value) -> Value {
    let rules = |r: Option<&Value>| match r {
        None => Value::Null,
        Some(r) => json!({
            "StabilizationWindowSeconds": get(r, "/stabilizationWindowSeconds"),
            "SelectPolicy": get(r, "/selectPolicy"),
            "Policies": get(r, "/policies").and_then(Value::as_array).map(|ps| ps.iter().map(|p| json!({
                "Type": get(p, "/type").cloned().unwrap_or(json!("")),
                "Value": get(p, "/value").cloned().unwrap_or(json!(0)),
                "PeriodSeconds": get(p, "/periodSeconds").cloned().unwrap_or(json!(0)),
            })).collect::<Vec<_>>()),
            "Tolerance": get(r, "/tolerance"),
        }),
    };
    json!({
        "ScaleUp": rules(get(b, "/scaleUp")),
        "ScaleDown": rules(get(b, "/scaleDown")),
    })
}

/// The annotation back as v2 `spec.behavior`: keys matched
/// case-insensitively (Go's `encoding/json`), nulls dropped; `None` when it
/// does not parse or says nothing (kube keeps only well-formed data).
fn behavior_from_go(s: &str) -> Option<Value> {
    fn camel(v: Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| {
                        let key = match k.to_ascii_lowercase().as_str() {
                            "scaleup" => "scaleUp".to_string(),
                            "scaledown" => "scaleDown".into(),
                            "stabilizationwindowseconds" => "stabilizationWindowSeconds".into(),
                            "selectpolicy" => "selectPolicy".into(),
                            "periodseconds" => "periodSeconds".into(),
                            lower => lower.to_string(),
                        };
                        (key, camel(v))
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.into_iter().map(camel).collect()),
            other => other,
        }
    }
    let v = camel(serde_json::from_str::<Value>(s).ok()?);
    v.as_object().filter(|m| !m.is_empty())?;
    // Only well-formed data moves into the field (kube: the unmarshal must
    // succeed into the typed struct).
    serde_json::from_value::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerBehavior>(
        v.clone(),
    )
    .ok()?;
    Some(v)
}

// ------------------------------------------------------------------ v1 → v2

fn v1_to_v2(v1: Value) -> Result<Value, String> {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    let mut meta = v1
        .get("metadata")
        .cloned()
        .map(into_map)
        .unwrap_or_default();
    let mut taken: Map<String, Value> = Map::new();
    if let Some(Value::Object(a)) = meta.get_mut("annotations") {
        for k in ROUND_TRIP {
            if let Some(v) = a.remove(*k) {
                taken.insert((*k).into(), v);
            }
        }
        if a.is_empty() {
            meta.remove("annotations");
        }
    }
    let annotation =
        |k: &str| -> Option<Value> { serde_json::from_str(taken.get(k)?.as_str()?).ok() };

    let mut spec = Map::new();
    put(
        &mut spec,
        "scaleTargetRef",
        get(&v1, "/spec/scaleTargetRef"),
    );
    put(&mut spec, "minReplicas", get(&v1, "/spec/minReplicas"));
    put(&mut spec, "maxReplicas", get(&v1, "/spec/maxReplicas"));
    let mut metrics: Vec<Value> = annotation(METRIC_SPECS_ANNOTATION)
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(metric_spec_to_v2)
        .collect();
    if let Some(t) = get(&v1, "/spec/targetCPUUtilizationPercentage") {
        metrics.push(cpu_metric(t.clone()));
    }
    if metrics.is_empty() {
        metrics.push(cpu_metric(json!(DEFAULT_CPU_UTILIZATION)));
    }
    spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = taken
        .get(BEHAVIOR_SPECS_ANNOTATION)
        .and_then(Value::as_str)
        .and_then(behavior_from_go)
    {
        spec.insert("behavior".into(), b);
    }
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(spec));

    if let Some(status) = v1.get("status").filter(|s| s.is_object()) {
        let mut st = Map::new();
        put(
            &mut st,
            "observedGeneration",
            get(status, "/observedGeneration"),
        );
        put(&mut st, "lastScaleTime", get(status, "/lastScaleTime"));
        put(&mut st, "currentReplicas", get(status, "/currentReplicas"));
        st.insert(
            "desiredReplicas".into(),
            get(status, "/desiredReplicas").cloned().unwrap_or(json!(0)),
        );
        if let Some(u) = get(status, "/currentCPUUtilizationPercentage") {
            st.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}}]),
            );
        }
        if let Some(Value::Array(cur)) = annotation(METRIC_STATUSES_ANNOTATION) {
            // The annotation has more than the CPU percentage: it wins.
            st.insert(
                "currentMetrics".into(),
                Value::Array(cur.iter().map(metric_status_to_v2).collect()),
            );
        }
        if let Some(Value::Array(c)) = annotation(CONDITIONS_ANNOTATION) {
            st.insert("conditions".into(), Value::Array(c));
        }
        out.insert("status".into(), Value::Object(st));
    }
    Ok(Value::Object(out))
}

fn cpu_metric(utilization: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// v1 `targetAverageUtilization`/`targetAverageValue` as a v2 target.
fn utilization_target(r: &Value) -> Value {
    let mut t = Map::new();
    let util = get(r, "/targetAverageUtilization");
    t.insert(
        "type".into(),
        json!(if util.is_some() {
            "Utilization"
        } else {
            "AverageValue"
        }),
    );
    put(&mut t, "averageUtilization", util);
    put(&mut t, "averageValue", get(r, "/targetAverageValue"));
    Value::Object(t)
}

fn metric_id(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), name.cloned().unwrap_or(json!("")));
    put(&mut m, "selector", selector);
    Value::Object(m)
}

/// autoscaling/v1 `MetricSpec` (from the annotation) → autoscaling/v2.
fn metric_spec_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", get(m, "/type"));
    if let Some(r) = get(m, "/resource") {
        let mut o = Map::new();
        put(&mut o, "name", get(r, "/name"));
        o.insert("target".into(), utilization_target(r));
        out.insert("resource".into(), Value::Object(o));
    }
    if let Some(r) = get(m, "/containerResource") {
        let mut o = Map::new();
        put(&mut o, "name", get(r, "/name"));
        put(&mut o, "container", get(r, "/container"));
        o.insert("target".into(), utilization_target(r));
        out.insert("containerResource".into(), Value::Object(o));
    }
    if let Some(p) = get(m, "/pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_id(get(p, "/metricName"), get(p, "/selector")),
                "target": {"type": "AverageValue", "averageValue": quantity_or_zero(get(p, "/targetAverageValue"))},
            }),
        );
    }
    if let Some(ob) = get(m, "/object") {
        let mut t = Map::new();
        let avg = get(ob, "/averageValue");
        t.insert(
            "type".into(),
            json!(if avg.is_none() {
                "Value"
            } else {
                "AverageValue"
            }),
        );
        t.insert("value".into(), quantity_or_zero(get(ob, "/targetValue")));
        put(&mut t, "averageValue", avg);
        out.insert(
            "object".into(),
            json!({
                "describedObject": get(ob, "/target").cloned().unwrap_or(json!({"kind": "", "name": ""})),
                "metric": metric_id(get(ob, "/metricName"), get(ob, "/selector")),
                "target": t,
            }),
        );
    }
    if let Some(e) = get(m, "/external") {
        let mut t = Map::new();
        let value = get(e, "/targetValue");
        t.insert(
            "type".into(),
            json!(if value.is_none() {
                "AverageValue"
            } else {
                "Value"
            }),
        );
        put(&mut t, "value", value);
        put(&mut t, "averageValue", get(e, "/targetAverageValue"));
        out.insert(
            "external".into(),
            json!({
                "metric": metric_id(get(e, "/metricName"), get(e, "/metricSelector")),
                "target": t,
            }),
        );
    }
    Value::Object(out)
}

/// autoscaling/v1 `MetricStatus` (from the annotation) → autoscaling/v2.
fn metric_status_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", get(m, "/type"));
    for (key, container) in [("resource", false), ("containerResource", true)] {
        if let Some(r) = get(m, &format!("/{key}")) {
            let mut o = Map::new();
            put(&mut o, "name", get(r, "/name"));
            if container {
                put(&mut o, "container", get(r, "/container"));
            }
            let mut cur = Map::new();
            cur.insert(
                "averageValue".into(),
                quantity_or_zero(get(r, "/currentAverageValue")),
            );
            put(
                &mut cur,
                "averageUtilization",
                get(r, "/currentAverageUtilization"),
            );
            o.insert("current".into(), Value::Object(cur));
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(p) = get(m, "/pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_id(get(p, "/metricName"), get(p, "/selector")),
                "current": {"averageValue": quantity_or_zero(get(p, "/currentAverageValue"))},
            }),
        );
    }
    if let Some(ob) = get(m, "/object") {
        let mut cur = Map::new();
        cur.insert("value".into(), quantity_or_zero(get(ob, "/currentValue")));
        put(&mut cur, "averageValue", get(ob, "/averageValue"));
        out.insert(
            "object".into(),
            json!({
                "describedObject": get(ob, "/target").cloned().unwrap_or(json!({"kind": "", "name": ""})),
                "metric": metric_id(get(ob, "/metricName"), get(ob, "/selector")),
                "current": cur,
            }),
        );
    }
    if let Some(e) = get(m, "/external") {
        let mut cur = Map::new();
        cur.insert("value".into(), quantity_or_zero(get(e, "/currentValue")));
        put(&mut cur, "averageValue", get(e, "/currentAverageValue"));
        out.insert(
            "external".into(),
            json!({
                "metric": metric_id(get(e, "/metricName"), get(e, "/metricSelector")),
                "current": cur,
            }),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2_full() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "ns", "annotations": {"keep": "me"}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "100"}}},
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}}},
                    {"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"}, "metric": {"name": "rps"}, "target": {"type": "Value", "value": "5"}}}
                ],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120, "selectPolicy": "Min", "policies": [{"type": "Percent", "value": 10, "periodSeconds": 60}]}}
            },
            "status": {
                "currentReplicas": 3, "desiredReplicas": 4,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70, "averageValue": "200m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            }
        })
    }

    #[test]
    fn v2_to_v1_keeps_cpu_in_the_field_and_the_rest_in_annotations() {
        let v1 = V1.to_served(v2_full()).unwrap_or_default();
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
        assert!(v1["spec"].get("metrics").is_none());
        let a = &v1["metadata"]["annotations"];
        assert_eq!(a["keep"], "me");
        let other: Value = serde_json::from_str(a[METRIC_SPECS_ANNOTATION].as_str().unwrap_or(""))
            .unwrap_or_default();
        assert_eq!(other.as_array().map(Vec::len), Some(4), "{other}");
        assert_eq!(other[0]["pods"]["metricName"], "qps");
        assert_eq!(other[0]["pods"]["targetAverageValue"], "100");
        assert_eq!(other[1]["resource"]["targetAverageValue"], "512Mi");
        assert_eq!(other[2]["external"]["targetValue"], "30");
        assert_eq!(other[3]["object"]["target"]["kind"], "Service");
        let behavior: Value =
            serde_json::from_str(a[BEHAVIOR_SPECS_ANNOTATION].as_str().unwrap_or(""))
                .unwrap_or_default();
        assert_eq!(behavior["ScaleDown"]["StabilizationWindowSeconds"], 120);
        assert_eq!(behavior["ScaleDown"]["Policies"][0]["PeriodSeconds"], 60);
        assert!(behavior["ScaleUp"].is_null());
        assert!(a.get(CONDITIONS_ANNOTATION).is_some());
        assert!(a.get(METRIC_STATUSES_ANNOTATION).is_some());
    }

    #[test]
    fn v2_through_v1_and_back_is_lossless_apart_from_metric_order() {
        let back = V1
            .to_stored(V1.to_served(v2_full()).unwrap_or_default())
            .unwrap_or_default();
        let orig = v2_full();
        assert_eq!(back["metadata"], orig["metadata"]);
        assert_eq!(back["spec"]["behavior"], orig["spec"]["behavior"]);
        assert_eq!(back["status"], orig["status"]);
        // kube puts the CPU target after the annotation's metrics.
        let mut want = orig["spec"]["metrics"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let cpu = want.remove(1);
        want.push(cpu);
        assert_eq!(back["spec"]["metrics"], Value::Array(want));
    }

    #[test]
    fn v1_without_target_gets_kubes_default_cpu_80() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
        let v2 = V1.to_stored(v1).unwrap_or_default();
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert!(v2["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_v1_object_round_trips_unchanged() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "ns"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
        let back = V1
            .to_served(V1.to_stored(v1.clone()).unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(back, v1);
    }

    #[test]
    fn malformed_behavior_annotation_is_dropped_not_stored() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "annotations": {BEHAVIOR_SPECS_ANNOTATION: "{not json"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
        let v2 = V1.to_stored(v1).unwrap_or_default();
        assert!(v2["spec"].get("behavior").is_none());
        assert!(v2["metadata"].get("annotations").is_none());
    }
}
