//! The `kubectl.kubernetes.io/last-applied-configuration` annotation that
//! client-side apply (`kubectl apply`) keeps, and how server-side apply by
//! the `kubectl` manager interacts with it (upstream's `lastAppliedManager`
//! and `lastAppliedUpdater`):
//!
//! - [`allowed_conflicts`]: when `kubectl` server-side applies over an object
//!   last written by client-side apply, conflicts on fields whose live value
//!   still equals the annotation's are not conflicts (the user is taking
//!   over their own configuration).
//! - [`build_last_applied`] / [`set_last_applied`]: after such an apply, the
//!   annotation, if the object has one, is rewritten to the applied
//!   configuration, so a later client-side apply computes the right diff.

use serde_json::{Map, Value};

use crate::path::go_escape;
use crate::schema::Schema;
use crate::set::FieldSet;
use crate::typed::{compare, to_field_set, validate};

/// The annotation's name.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only manager whose applies read and write the annotation.
pub const KUBECTL_MANAGER: &str = "kubectl";

/// kube's limit on the total size of an object's annotations
/// (`apimachineryvalidation.TotalAnnotationSizeLimitB`).
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The annotation's value, if the object has a non-empty one.
pub fn last_applied(object: &Value) -> Option<&str> {
    object
        .get("metadata")?
        .get("annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// The fields on which a `kubectl` server-side apply may silently take
/// ownership: those the annotation sets to the value they still have.
/// `None` when the object has no usable annotation (absent, not JSON, of
/// another apiVersion, or not fitting the schema).
pub fn allowed_conflicts(live: &Value, api_version: &str, schema: Schema<'_>) -> Option<FieldSet> {
    let last: Value = serde_json::from_str(last_applied(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str).unwrap_or("") != api_version {
        return None;
    }
    validate(&last, schema).ok()?;
    let set = to_field_set(&last, schema);
    let c = compare(&last, live, schema);
    Some(
        set.difference(&c.modified)
            .difference(&c.added)
            .difference(&c.removed),
    )
}

/// The annotation value for an applied configuration: the configuration
/// without the annotation itself, encoded as Go's `json.Encoder` does
/// (sorted keys, HTML-escaped, trailing newline).
pub fn build_last_applied(applied: &Value) -> String {
    let mut copy = applied.clone();
    if let Some(annotations) = copy
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = go_json(&copy);
    text.push('\n');
    text
}

/// Set the annotation on `object`, or drop it when the annotations would
/// exceed kube's total size limit.
pub fn set_last_applied(object: &mut Value, value: String) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(annotations) = annotations.as_object_mut() else {
        return;
    };
    annotations.insert(LAST_APPLIED_ANNOTATION.into(), Value::String(value));
    let total: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

/// JSON as Go's `encoding/json` writes a `map[string]interface{}`: object
/// keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn go_json(value: &Value) -> String {
    go_escape(&sort_keys(value).to_string())
}

fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sort_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn last_applied_is_go_encoded_without_itself() {
        let applied = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "c", "annotations": {LAST_APPLIED_ANNOTATION: "old", "z": "a<b"}},
            "data": {"b": "1", "a": "2"}
        });
        assert_eq!(
            build_last_applied(&applied),
            "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"2\",\"b\":\"1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{\"z\":\"a\\u003cb\"},\"name\":\"c\"}}\n"
        );
    }

    #[test]
    fn oversized_annotation_is_dropped() {
        let mut obj = json!({"metadata": {"annotations": {"a": "b"}}});
        set_last_applied(&mut obj, "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT));
        assert_eq!(obj, json!({"metadata": {"annotations": {"a": "b"}}}));
        set_last_applied(&mut obj, "small".into());
        assert_eq!(last_applied(&obj), Some("small"));
    }

    #[test]
    fn unchanged_fields_of_the_annotation_may_be_taken_over() {
        let live = json!({
            "metadata": {"annotations": {LAST_APPLIED_ANNOTATION: "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":\"2\"}}"}},
            "data": {"a": "1", "b": "changed"}
        });
        let defs = ubernetes_openapi::definitions().snapshot();
        let schema = Schema::definition(&defs, "io.k8s.api.core.v1.ConfigMap");
        let allowed = allowed_conflicts(&live, "v1", schema).expect("annotation");
        assert_eq!(
            allowed,
            FieldSet::from_fields_v1(&json!({"f:data": {"f:a": {}}})).expect("set")
        );
        assert!(allowed_conflicts(&live, "v2", schema).is_none());
        assert!(allowed_conflicts(&json!({"metadata": {}}), "v1", schema).is_none());
    }
}
