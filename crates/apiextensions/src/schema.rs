//! Structural schemas (kube's `apiextensions-apiserver/pkg/apiserver/schema`):
//! [`Structural`] wraps an `openAPIV3Schema` that passed
//! [`validate_schema`], the check kube applies to every `v1` CRD version
//! (types set everywhere, no `$ref`, value validations only in
//! `allOf`/`anyOf`/`oneOf`/`not`, metadata restricted at the root, …),
//! with kube's field paths (`…openAPIV3Schema.properties[spec].type`) and
//! messages. Value validation, pruning and defaulting run over it
//! ([`crate::values`], [`crate::prune`], [`crate::defaults`]).

use serde_json::{Map, Value};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

/// `a.b` (or `b` when `path` is empty), as `field.Path.Child`.
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `a[k]`, as `field.Path.Key`.
pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// `a[3]`, as `field.Path.Index`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// The schema's `type` (empty when unset).
pub(crate) fn type_of(s: &Value) -> &str {
    s.get("type").and_then(Value::as_str).unwrap_or("")
}

/// A boolean extension or keyword, false when unset.
pub(crate) fn flag(s: &Value, name: &str) -> bool {
    s.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// `properties`, if any.
pub(crate) fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

/// The `items` schema (an object; kube forbids the array form).
pub(crate) fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

/// The `additionalProperties` schema when it is one.
pub(crate) fn additional_schema(s: &Value) -> Option<&Value> {
    s.get("additionalProperties").filter(|v| v.is_object())
}

/// `additionalProperties: true`.
pub(crate) fn additional_allowed(s: &Value) -> bool {
    s.get("additionalProperties") == Some(&Value::Bool(true))
}

pub(crate) const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
pub(crate) const EMBEDDED: &str = "x-kubernetes-embedded-resource";
pub(crate) const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
pub(crate) const LIST_TYPE: &str = "x-kubernetes-list-type";
pub(crate) const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";

/// The OpenAPI v3 types a CRD schema may use, as kube lists them.
const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// A structural schema: an `openAPIV3Schema` known to be structural.
#[derive(Debug, Clone, PartialEq)]
pub struct Structural {
    schema: Value,
}

impl Structural {
    /// Check `schema` ([`validate_schema`] with paths relative to `path`,
    /// e.g. `spec.versions[0].schema.openAPIV3Schema`) and wrap it.
    pub fn new(schema: &Value, path: &str) -> Result<Self, Vec<Cause>> {
        let causes = validate_schema(schema, path);
        if causes.is_empty() {
            Ok(Self {
                schema: schema.clone(),
            })
        } else {
            Err(causes)
        }
    }

    /// Wrap without checking (e.g. a stored CRD already validated), or the
    /// permissive `{type: object, x-kubernetes-preserve-unknown-fields: true}`
    /// when there is no schema.
    pub fn unchecked(schema: Option<&Value>) -> Self {
        let schema = schema.cloned().unwrap_or_else(
            || serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        Self { schema }
    }

    /// The schema JSON.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Value validation of a whole custom resource (paths from the root:
    /// `spec.replicas`).
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        crate::values::validate(&self.schema, obj, "")
    }

    /// Prune unknown fields of a whole custom resource (`apiVersion`,
    /// `kind` and `metadata` kept); returns the pruned paths (`spec.foo`).
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        crate::prune::prune(&self.schema, obj, true)
    }

    /// Apply `default`s (and drop non-nullable nulls without default).
    pub fn apply_defaults(&self, obj: &mut Value) {
        crate::defaults::apply(&self.schema, obj);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
}

/// kube's checks of a CRD version's `openAPIV3Schema` (the OpenAPI subset
/// CRDs allow, then structural-ness). `path` is where the schema sits.
pub fn validate_schema(schema: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    walk(schema, path, Level::Root, &mut out);
    out
}

fn walk(s: &Value, fld: &str, level: Level, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else {
        return;
    };
    common_checks(m, fld, out);
    let ty = type_of(s);
    if let Some(Value::Bool(false)) = m.get(PRESERVE) {
        out.push(field::invalid(
            &child(fld, PRESERVE),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    let embedded = flag(s, EMBEDDED);
    let int_or_string = flag(s, INT_OR_STRING);
    let preserve = flag(s, PRESERVE);
    if embedded && ty != "object" {
        if ty.is_empty() {
            out.push(field::required(
                &child(fld, "type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            out.push(field::invalid(
                &child(fld, "type"),
                &Value::String(ty.into()),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    }
    if int_or_string && !ty.is_empty() {
        out.push(field::invalid(
            &child(fld, "type"),
            &Value::String(ty.into()),
            "must be empty if x-kubernetes-int-or-string is true",
        ));
    }
    let typeless_allowed = embedded || int_or_string || (preserve && level != Level::Root);
    if ty.is_empty() && !typeless_allowed {
        let msg = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(field::required(&child(fld, "type"), msg));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(field::invalid(
            &child(fld, "type"),
            &Value::String(ty.into()),
            "must be object at the root",
        ));
    }
    if level == Level::Root
        && let Some(meta) = properties(s).and_then(|p| p.get("metadata"))
        && !metadata_schema_allowed(meta)
    {
        out.push(field::forbidden(
            &key(&child(fld, "properties"), "metadata"),
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
    if ty == "array" && items(s).is_none() && !m.contains_key("items") {
        out.push(field::required(&child(fld, "items"), "must be specified"));
    }
    list_type_checks(s, fld, ty, out);
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = m.get(junctor).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                walk_value_validation(sub, &index(&child(fld, junctor), i), int_or_string, out);
            }
        }
    }
    if let Some(not) = m.get("not") {
        walk_value_validation(not, &child(fld, "not"), int_or_string, out);
    }
    if let Some(props) = properties(s) {
        let base = child(fld, "properties");
        for (name, p) in props {
            walk(p, &key(&base, name), Level::Field, out);
        }
    }
    if let Some(it) = items(s) {
        walk(it, &child(fld, "items"), Level::Item, out);
    }
    if let Some(ap) = additional_schema(s) {
        walk(ap, &child(fld, "additionalProperties"), Level::Field, out);
    }
    if let Some(default) = m.get("default") {
        let path = child(fld, "default");
        if level == Level::Root {
            out.push(field::forbidden(&path, "must not be set at the root"));
        } else {
            out.extend(crate::values::validate(s, default, &path));
        }
    }
}

/// Checks every (sub)schema gets, structural or value-validation part.
fn common_checks(m: &Map<String, Value>, fld: &str, out: &mut Vec<Cause>) {
    if let Some(ty) = m.get("type").and_then(Value::as_str)
        && !ty.is_empty()
        && !TYPES.contains(&ty)
    {
        out.push(field::not_supported(
            &child(fld, "type"),
            &Value::String(ty.into()),
            &TYPES,
        ));
    }
    for (k, msg) in [
        ("$ref", "$ref is not supported"),
        ("$schema", "$schema is not supported"),
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
    ] {
        if m.contains_key(k) {
            out.push(field::forbidden(&child(fld, k), msg));
        }
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
        out.push(field::forbidden(
            &child(fld, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if m.get("items").is_some_and(Value::is_array) {
        out.push(field::forbidden(
            &child(fld, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if let Some(ap) = m.get("additionalProperties")
        && m.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
        && (ap == &Value::Bool(false) || ap.is_object())
    {
        out.push(field::forbidden(
            &child(fld, "additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if let Some(p) = m.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(p)
    {
        out.push(field::invalid(
            &child(fld, "pattern"),
            &Value::String(p.into()),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn list_type_checks(s: &Value, fld: &str, ty: &str, out: &mut Vec<Cause>) {
    let Some(lt) = s.get(LIST_TYPE).and_then(Value::as_str) else {
        if s.get(LIST_MAP_KEYS).is_some() {
            out.push(field::forbidden(
                &child(fld, LIST_MAP_KEYS),
                "must not be set if x-kubernetes-list-type is not map",
            ));
        }
        return;
    };
    let path = child(fld, LIST_TYPE);
    if !["atomic", "map", "set"].contains(&lt) {
        out.push(field::not_supported(
            &path,
            &Value::String(lt.into()),
            &["atomic", "map", "set"],
        ));
        return;
    }
    if ty != "array" {
        out.push(field::invalid(
            &path,
            &Value::String(lt.into()),
            "must only be used if type is array",
        ));
    }
    let keys = s
        .get(LIST_MAP_KEYS)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if lt == "map" {
        if keys.is_empty() {
            out.push(field::required(
                &child(fld, LIST_MAP_KEYS),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        if let Some(it) = items(s)
            && type_of(it) != "object"
        {
            out.push(field::invalid(
                &child(fld, "items.type"),
                &Value::String(type_of(it).into()),
                "must be object if x-kubernetes-list-type is map",
            ));
        }
    } else if s.get(LIST_MAP_KEYS).is_some() {
        out.push(field::forbidden(
            &child(fld, LIST_MAP_KEYS),
            "must not be set if x-kubernetes-list-type is not map",
        ));
    }
}

/// Inside `allOf`/`anyOf`/`oneOf`/`not` only value validations may appear
/// (kube's `validateValueValidation`): no types (except under
/// `x-kubernetes-int-or-string`), defaults, nullability or extensions.
fn walk_value_validation(s: &Value, fld: &str, int_or_string: bool, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else {
        return;
    };
    common_checks(m, fld, out);
    if !int_or_string
        && m.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
    {
        out.push(field::forbidden(
            &child(fld, "type"),
            "must be empty to be structural",
        ));
    }
    for (k, msg) in [
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
    ] {
        if m.contains_key(k) {
            out.push(field::forbidden(&child(fld, k), msg));
        }
    }
    for k in ["nullable", PRESERVE, EMBEDDED, INT_OR_STRING] {
        if flag(s, k) {
            out.push(field::forbidden(
                &child(fld, k),
                "must be false to be structural",
            ));
        }
    }
    for k in [LIST_TYPE, LIST_MAP_KEYS, "x-kubernetes-map-type"] {
        if m.contains_key(k) {
            out.push(field::forbidden(
                &child(fld, k),
                "must be undefined to be structural",
            ));
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = m.get(junctor).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                walk_value_validation(sub, &index(&child(fld, junctor), i), false, out);
            }
        }
    }
    if let Some(not) = m.get("not") {
        walk_value_validation(not, &child(fld, "not"), false, out);
    }
    if let Some(props) = properties(s) {
        let base = child(fld, "properties");
        for (name, p) in props {
            walk_value_validation(p, &key(&base, name), false, out);
        }
    }
    if let Some(it) = items(s) {
        walk_value_validation(it, &child(fld, "items"), false, out);
    }
}

/// The root `metadata` schema may only restrict `name` and `generateName`
/// (kube's `validateStructuralMetadataInvariants`).
fn metadata_schema_allowed(meta: &Value) -> bool {
    let Some(m) = meta.as_object() else {
        return false;
    };
    m.iter().all(|(k, v)| match k.as_str() {
        "type" => v == "object",
        "description" => true,
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

    fn messages(s: Value) -> Vec<String> {
        validate_schema(&s, ROOT)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_typed_schema_is_structural() {
        let s = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "default": 1, "minimum": 0},
                "any": {"x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "list": {"type": "array", "items": {"type": "string"}}
            }}
        }});
        assert_eq!(messages(s), Vec::<String>::new());
    }

    #[test]
    fn a_missing_type_is_reported_with_its_level() {
        let s =
            json!({"properties": {"spec": {"properties": {"a": {"type": "array", "items": {}}}}}});
        assert_eq!(
            messages(s),
            vec![
                format!("{ROOT}.type: Required value: must not be empty at the root"),
                format!(
                    "{ROOT}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
                format!(
                    "{ROOT}.properties[spec].properties[a].items.type: Required value: must not be empty for specified array items"
                ),
            ]
        );
    }

    #[test]
    fn unsupported_keywords_and_types_are_rejected() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "foo"},
            "b": {"$ref": "#/x", "type": "string"},
            "c": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}
        }});
        let m = messages(s);
        assert!(m.contains(&format!("{ROOT}.properties[a].type: Unsupported value: \"foo\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"")), "{m:?}");
        assert!(m.contains(&format!(
            "{ROOT}.properties[b].$ref: Forbidden: $ref is not supported"
        )));
        assert!(m.contains(&format!("{ROOT}.properties[c].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")));
    }

    #[test]
    fn value_validations_may_not_carry_types() {
        let s = json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}});
        assert_eq!(
            messages(s),
            vec![format!(
                "{ROOT}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"
            )]
        );
    }

    #[test]
    fn metadata_may_only_restrict_name_and_generate_name() {
        let ok = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}}});
        assert!(messages(ok).is_empty());
        let bad = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}});
        assert_eq!(
            messages(bad),
            vec![format!(
                "{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            )]
        );
    }

    #[test]
    fn defaults_must_validate_against_their_schema() {
        let s = json!({"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}});
        assert_eq!(
            messages(s),
            vec![format!(
                "{ROOT}.properties[n].default: Invalid value: \"string\": {ROOT}.properties[n].default in body must be of type integer: \"string\""
            )]
        );
    }

    #[test]
    fn preserve_unknown_fields_false_is_invalid() {
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false});
        assert_eq!(
            messages(s),
            vec![format!(
                "{ROOT}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            )]
        );
    }

    #[test]
    fn the_root_must_be_an_object() {
        assert_eq!(
            messages(json!({"type": "string"})),
            vec![format!(
                "{ROOT}.type: Invalid value: \"string\": must be object at the root"
            )]
        );
    }
}
