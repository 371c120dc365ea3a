//! Unknown- and duplicate-field detection for `fieldValidation=Strict|Warn`,
//! and pruning of unknown fields (what decoding into a Go struct does
//! silently with `fieldValidation=Ignore`, and what CRD pruning does).
//!
//! Paths are printed as `sigs.k8s.io/json`'s strict decoder prints them:
//! object keys joined with `.`, list elements as `[i]`, the offending key
//! last: `unknown field "spec.template.spec.containers[0].foo"`. Errors come
//! in document order, deduplicated, at most 100, as there. A schema with no
//! `properties`, `additionalProperties` or `items` (`RawExtension`,
//! `FieldsV1`, `x-kubernetes-preserve-unknown-fields` objects) is opaque:
//! nothing below it is reported, as a custom `UnmarshalJSON` reports nothing.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use ubernetes_apimachinery::error::ApiError;
use ubernetes_apimachinery::quote::go_quote;

use crate::definitions::{Snapshot, definitions};

/// The most strict errors kept, as `sigs.k8s.io/json` keeps.
const MAX_ERRORS: usize = 100;

/// One strict decoding error.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StrictFieldError {
    /// `unknown field "<path>"`.
    Unknown(String),
    /// `duplicate field "<path>"`.
    Duplicate(String),
}

impl fmt::Display for StrictFieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(path) => write!(f, "unknown field {}", go_quote(path)),
            Self::Duplicate(path) => write!(f, "duplicate field {}", go_quote(path)),
        }
    }
}

/// The 400 kube-apiserver answers with `fieldValidation=Strict`:
/// `strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`.
pub fn strict_decoding_error(errors: &[StrictFieldError]) -> ApiError {
    let joined = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    ApiError::bad_request(format!("strict decoding error: {joined}"))
}

/// The `Warning: 299` texts kube-apiserver sends with `fieldValidation=Warn`
/// (one per error: `unknown field "spec.foo"`).
pub fn strict_warnings(errors: &[StrictFieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

/// Paths of the fields of `obj` that the schema of `definition` does not
/// know, in document order. Empty for an unknown definition.
pub fn unknown_fields(definition: &str, obj: &Value) -> Vec<String> {
    let snapshot = definitions().snapshot();
    let Some(schema) = snapshot.get(definition) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk_value(&snapshot, schema, obj, &mut String::new(), &mut out);
    dedupe(out)
}

/// Remove the fields [`unknown_fields`] reports; returns their paths.
pub fn prune_unknown_fields(definition: &str, obj: &mut Value) -> Vec<String> {
    let snapshot = definitions().snapshot();
    let Some(schema) = snapshot.get(definition) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    prune_value(&snapshot, schema, obj, &mut String::new(), &mut out);
    dedupe(out)
}

/// Unknown and duplicate fields of a raw JSON body against the schema of
/// `definition`, in document order (duplicates cannot be seen once the body
/// is parsed into a `Value`). Fails only on malformed JSON.
pub fn strict_field_errors(
    definition: &str,
    raw_json: &[u8],
) -> Result<Vec<StrictFieldError>, serde_json::Error> {
    let snapshot = definitions().snapshot();
    let out = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(raw_json);
    Walk {
        snapshot: &snapshot,
        schema: snapshot.get(definition),
        path: String::new(),
        out: &out,
    }
    .deserialize(&mut de)?;
    de.end()?;
    let mut seen = HashSet::new();
    let mut errors = out.into_inner();
    errors.retain(|e| seen.insert(e.clone()));
    errors.truncate(MAX_ERRORS);
    Ok(errors)
}

fn dedupe(paths: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out: Vec<String> = paths
        .into_iter()
        .filter(|p| seen.insert(p.clone()))
        .collect();
    out.truncate(MAX_ERRORS);
    out
}

/// How a schema treats the keys of an object.
enum Shape<'a> {
    /// Known properties; unknown keys are errors unless `preserve`.
    Struct {
        properties: &'a serde_json::Map<String, Value>,
        preserve: bool,
    },
    /// Every key is described by the values schema.
    Map(&'a Value),
    /// Anything goes, nothing below is checked.
    Opaque,
}

fn shape<'a>(snapshot: &'a Snapshot, schema: &'a Value) -> Shape<'a> {
    let resolved = snapshot.resolve(schema);
    let preserve = resolved
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(properties) = resolved.get("properties").and_then(Value::as_object) {
        return Shape::Struct {
            properties,
            preserve,
        };
    }
    match resolved.get("additionalProperties") {
        Some(values) if values.is_object() => Shape::Map(values),
        _ => Shape::Opaque,
    }
}

fn items<'a>(snapshot: &'a Snapshot, schema: &'a Value) -> Option<&'a Value> {
    snapshot
        .resolve(schema)
        .get("items")
        .filter(|i| i.is_object())
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk_value(
    snapshot: &Snapshot,
    schema: &Value,
    value: &Value,
    path: &mut String,
    out: &mut Vec<String>,
) {
    match value {
        Value::Object(obj) => match shape(snapshot, schema) {
            Shape::Struct {
                properties,
                preserve,
            } => {
                for (key, v) in obj {
                    match properties.get(key) {
                        Some(prop) => {
                            with_key(path, key, |p| walk_value(snapshot, prop, v, p, out))
                        }
                        None if !preserve => out.push(child_path(path, key)),
                        None => {}
                    }
                }
            }
            Shape::Map(values) => {
                for (key, v) in obj {
                    with_key(path, key, |p| walk_value(snapshot, values, v, p, out));
                }
            }
            Shape::Opaque => {}
        },
        Value::Array(list) => {
            if let Some(item_schema) = items(snapshot, schema) {
                for (i, v) in list.iter().enumerate() {
                    with_index(path, i, |p| walk_value(snapshot, item_schema, v, p, out));
                }
            }
        }
        _ => {}
    }
}

fn prune_value(
    snapshot: &Snapshot,
    schema: &Value,
    value: &mut Value,
    path: &mut String,
    out: &mut Vec<String>,
) {
    match value {
        Value::Object(obj) => match shape(snapshot, schema) {
            Shape::Struct {
                properties,
                preserve,
            } => {
                if !preserve {
                    obj.retain(|key, _| {
                        let known = properties.contains_key(key);
                        if !known {
                            out.push(child_path(path, key));
                        }
                        known
                    });
                }
                for (key, v) in obj.iter_mut() {
                    if let Some(prop) = properties.get(key) {
                        with_key(path, key, |p| prune_value(snapshot, prop, v, p, out));
                    }
                }
            }
            Shape::Map(values) => {
                for (key, v) in obj.iter_mut() {
                    with_key(path, key, |p| prune_value(snapshot, values, v, p, out));
                }
            }
            Shape::Opaque => {}
        },
        Value::Array(list) => {
            if let Some(item_schema) = items(snapshot, schema) {
                for (i, v) in list.iter_mut().enumerate() {
                    with_index(path, i, |p| prune_value(snapshot, item_schema, v, p, out));
                }
            }
        }
        _ => {}
    }
}

fn with_key(path: &mut String, key: &str, f: impl FnOnce(&mut String)) {
    let len = path.len();
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
    f(path);
    path.truncate(len);
}

fn with_index(path: &mut String, i: usize, f: impl FnOnce(&mut String)) {
    let len = path.len();
    path.push('[');
    path.push_str(&i.to_string());
    path.push(']');
    f(path);
    path.truncate(len);
}

/// A streaming walk over raw JSON that sees duplicate keys.
struct Walk<'a> {
    snapshot: &'a Snapshot,
    /// `None`: opaque, nothing checked below.
    schema: Option<&'a Value>,
    path: String,
    out: &'a RefCell<Vec<StrictFieldError>>,
}

impl Walk<'_> {
    fn push(&self, e: StrictFieldError) {
        let mut out = self.out.borrow_mut();
        if out.len() < MAX_ERRORS * 2 {
            out.push(e);
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.schema {
            Some(_) => d.deserialize_any(self),
            None => d.deserialize_ignored_any(IgnoredAny).map(|_| ()),
        }
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let item_schema = self.schema.and_then(|s| items(self.snapshot, s));
        let mut i = 0usize;
        loop {
            let element = Walk {
                snapshot: self.snapshot,
                schema: item_schema,
                path: format!("{}[{i}]", self.path),
                out: self.out,
            };
            if seq.next_element_seed(element)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let shape = match self.schema {
            Some(s) => shape(self.snapshot, s),
            None => Shape::Opaque,
        };
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let (schema, known) = match &shape {
                Shape::Struct { properties, .. } => match properties.get(&key) {
                    Some(prop) => (Some(prop), true),
                    None => (None, false),
                },
                Shape::Map(values) => (Some(*values), true),
                Shape::Opaque => (None, true),
            };
            let opaque = matches!(shape, Shape::Opaque);
            if known && !opaque && !seen.insert(key.clone()) {
                self.push(StrictFieldError::Duplicate(child_path(&self.path, &key)));
            }
            if let Shape::Struct {
                preserve: false, ..
            } = shape
                && !known
            {
                self.push(StrictFieldError::Unknown(child_path(&self.path, &key)));
            }
            map.next_value_seed(Walk {
                snapshot: self.snapshot,
                schema,
                path: child_path(&self.path, &key),
                out: self.out,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

    #[test]
    fn unknown_spec_field_is_reported_with_its_path() {
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x"}, "spec": {"foo": 1, "replicas": 2}});
        assert_eq!(unknown_fields(DEPLOYMENT, &obj), vec!["spec.foo"]);
    }

    #[test]
    fn list_elements_are_indexed_in_paths() {
        let obj = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "i"},
            {"name": "b", "image": "i", "foo": true, "ports": [{"containerPort": 80, "bar": 1}]}
        ]}}}});
        assert_eq!(
            unknown_fields(DEPLOYMENT, &obj),
            vec![
                "spec.template.spec.containers[1].foo",
                "spec.template.spec.containers[1].ports[0].bar"
            ]
        );
    }

    #[test]
    fn map_values_and_opaque_fields_are_not_unknown() {
        let obj = json!({"metadata": {"labels": {"anything": "goes"},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "top": 1});
        assert_eq!(unknown_fields(DEPLOYMENT, &obj), vec!["top"]);
    }

    #[test]
    fn pruning_removes_exactly_the_unknown_fields() {
        let mut obj =
            json!({"spec": {"foo": 1, "replicas": 2, "template": {"metadata": {"bar": 2}}}});
        let removed = prune_unknown_fields(DEPLOYMENT, &mut obj);
        assert_eq!(removed, vec!["spec.foo", "spec.template.metadata.bar"]);
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 2, "template": {"metadata": {}}}})
        );
    }

    #[test]
    fn raw_json_reports_duplicates_and_unknowns_in_order() {
        let raw = br#"{"kind":"Deployment","spec":{"replicas":1,"replicas":2,"foo":1},"metadata":{"labels":{"a":"1","a":"2"}}}"#;
        let errors = strict_field_errors(DEPLOYMENT, raw).expect("valid json");
        assert_eq!(
            errors,
            vec![
                StrictFieldError::Duplicate("spec.replicas".into()),
                StrictFieldError::Unknown("spec.foo".into()),
                StrictFieldError::Duplicate("metadata.labels.a".into()),
            ]
        );
    }

    #[test]
    fn strict_error_has_kube_apiserver_wording() {
        let e = strict_decoding_error(&[
            StrictFieldError::Unknown("spec.foo".into()),
            StrictFieldError::Duplicate("spec.replicas".into()),
        ]);
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, "BadRequest");
        assert_eq!(
            e.message,
            r#"strict decoding error: unknown field "spec.foo", duplicate field "spec.replicas""#
        );
        assert_eq!(
            strict_warnings(&[StrictFieldError::Unknown("spec.foo".into())]),
            vec![r#"unknown field "spec.foo""#]
        );
    }

    #[test]
    fn malformed_json_is_an_error_not_a_panic() {
        assert!(strict_field_errors(DEPLOYMENT, b"{\"spec\":").is_err());
    }
}
