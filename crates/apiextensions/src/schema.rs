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

/// kube's checks of a CRD version's `openAPIV3Schema`, in kube's order:
/// the OpenAPI subset CRDs allow (`ValidateCustomResourceDefinitionOpenAPISchema`),
/// then structural-ness (`ValidateStructural`, sorted by message as kube
/// sorts them), then — only for a structural schema — the `default`s
/// validated against their schemas. `path` is where the schema sits.
pub fn validate_schema(schema: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    openapi_checks(schema, path, &mut out);
    let mut structural = Vec::new();
    invariants(schema, path, Level::Root, &mut structural);
    completeness(schema, schema, path, path, &mut structural);
    structural.sort_by_key(text);
    let structural_ok = structural.is_empty();
    out.extend(structural);
    if structural_ok {
        defaults_checks(schema, path, Level::Root, &mut out);
    }
    out
}

fn text(c: &Cause) -> String {
    format!("{}: {}", c.field, c.message)
}

/// The OpenAPI subset: unsupported keywords and types, `uniqueItems`,
/// `additionalProperties` with `properties`, item tuples, extension values,
/// list types, patterns; recursing everywhere a schema can sit.
fn openapi_checks(s: &Value, fld: &str, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else {
        return;
    };
    match m.get("type").and_then(Value::as_str) {
        Some("null") => out.push(field::forbidden(
            &child(fld, "type"),
            "type cannot be set to null",
        )),
        Some(ty) if !ty.is_empty() && !TYPES.contains(&ty) => out.push(field::not_supported(
            &child(fld, "type"),
            &Value::String(ty.into()),
            &TYPES,
        )),
        _ => {}
    }
    for (k, msg) in [
        ("id", "id is not supported"),
        ("$schema", "$schema is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if m.contains_key(k) {
            out.push(field::forbidden(&child(fld, k), msg));
        }
    }
    if m.get("items").is_some_and(Value::is_array) {
        out.push(field::forbidden(
            &child(fld, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
        out.push(field::forbidden(
            &child(fld, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
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
    if let Some(Value::Bool(false)) = m.get(PRESERVE) {
        out.push(field::invalid(
            &child(fld, PRESERVE),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    let ty = type_of(s);
    if flag(s, INT_OR_STRING) && !ty.is_empty() {
        out.push(field::invalid(
            &child(fld, "type"),
            &Value::String(ty.into()),
            "must be empty if x-kubernetes-int-or-string is true",
        ));
    }
    list_type_checks(s, fld, ty, out);
    if let Some(p) = m.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(p)
    {
        out.push(field::invalid(
            &child(fld, "pattern"),
            &Value::String(p.into()),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
    if let Some(ap) = additional_schema(s) {
        openapi_checks(ap, &child(fld, "additionalProperties"), out);
    }
    if let Some(props) = properties(s) {
        let base = child(fld, "properties");
        for (name, p) in props {
            openapi_checks(p, &key(&base, name), out);
        }
    }
    if let Some(not) = m.get("not") {
        openapi_checks(not, &child(fld, "not"), out);
    }
    for junctor in ["allOf", "oneOf", "anyOf"] {
        if let Some(list) = m.get(junctor).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                openapi_checks(sub, &index(&child(fld, junctor), i), out);
            }
        }
    }
    if let Some(it) = items(s) {
        openapi_checks(it, &child(fld, "items"), out);
    }
}

/// kube's `validateStructuralInvariants`.
fn invariants(s: &Value, fld: &str, level: Level, out: &mut Vec<Cause>) {
    if !s.is_object() {
        return;
    }
    let ty = type_of(s);
    if ty == "array"
        && !s
            .get("items")
            .is_some_and(|i| i.is_object() || i.is_array())
    {
        out.push(field::required(&child(fld, "items"), "must be specified"));
    }
    if let Some(it) = items(s) {
        invariants(it, &child(fld, "items"), Level::Item, out);
    }
    if let Some(props) = properties(s) {
        let base = child(fld, "properties");
        for (name, p) in props {
            invariants(p, &key(&base, name), Level::Field, out);
        }
    }
    let has_additional = s
        .get("additionalProperties")
        .is_some_and(|a| a.is_object() || a == &Value::Bool(true));
    if has_additional && level == Level::Root {
        out.push(field::forbidden(
            &child(fld, "additionalProperties"),
            "must not be used at the root",
        ));
    }
    if let Some(ap) = additional_schema(s) {
        invariants(ap, &child(fld, "additionalProperties"), Level::Field, out);
    }
    let embedded = flag(s, EMBEDDED);
    let int_or_string = flag(s, INT_OR_STRING);
    let preserve = flag(s, PRESERVE);
    if int_or_string && preserve {
        out.push(field::invalid(
            &child(fld, PRESERVE),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(field::invalid(
            &child(fld, EMBEDDED),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let any_of = s.get("anyOf").and_then(Value::as_array);
    let skip_any_of = any_of.is_some_and(|a| is_int_or_string_pattern(a));
    let skip_first_all_of_any_of = s
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|f| f.get("anyOf"))
        .and_then(Value::as_array)
        .is_some_and(|a| is_int_or_string_pattern(a));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, fld, out);
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
    } else if ty.is_empty() && !int_or_string && !preserve {
        let msg = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(field::required(&child(fld, "type"), msg));
    }
    if embedded && has_additional {
        out.push(field::forbidden(
            &child(fld, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(field::invalid(
            &child(fld, "type"),
            &Value::String(ty.into()),
            "must be object at the root",
        ));
    }
    let check_metadata = level == Level::Root || embedded;
    let props = properties(s);
    let base = child(fld, "properties");
    for k in ["kind", "apiVersion"] {
        if let Some(p) = props.and_then(|p| p.get(k))
            && check_metadata
            && type_of(p) != "string"
        {
            out.push(field::invalid(
                &child(&key(&base, k), "type"),
                &Value::String(type_of(p).into()),
                "must be string",
            ));
        }
    }
    if let Some(meta) = props.and_then(|p| p.get("metadata")) {
        let mpath = key(&base, "metadata");
        if check_metadata && type_of(meta) != "object" {
            out.push(field::invalid(
                &child(&mpath, "type"),
                &Value::String(type_of(meta).into()),
                "must be object",
            ));
        }
        if level == Level::Root && !metadata_schema_allowed(meta) {
            out.push(field::forbidden(
                &mpath,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && props.is_none_or(|p| p.is_empty()) {
        out.push(field::required(
            &child(fld, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `anyOf: [{type: integer}, {type: string}]`, the int-or-string form kube
/// lets carry types.
fn is_int_or_string_pattern(any_of: &[Value]) -> bool {
    any_of.len() == 2
        && any_of[0] == serde_json::json!({"type": "integer"})
        && any_of[1] == serde_json::json!({"type": "string"})
}

/// kube's `validateValueValidation` over the junctors of a schema.
fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    fld: &str,
    out: &mut Vec<Cause>,
) {
    if !skip_any_of && let Some(list) = s.get("anyOf").and_then(Value::as_array) {
        for (i, sub) in list.iter().enumerate() {
            nested(sub, false, &index(&child(fld, "anyOf"), i), out);
        }
    }
    if let Some(list) = s.get("allOf").and_then(Value::as_array) {
        for (i, sub) in list.iter().enumerate() {
            nested(
                sub,
                skip_first_all_of_any_of && i == 0,
                &index(&child(fld, "allOf"), i),
                out,
            );
        }
    }
    if let Some(list) = s.get("oneOf").and_then(Value::as_array) {
        for (i, sub) in list.iter().enumerate() {
            nested(sub, false, &index(&child(fld, "oneOf"), i), out);
        }
    }
    if let Some(not) = s.get("not") {
        nested(not, false, &child(fld, "not"), out);
    }
}

/// kube's `validateNestedValueValidation`: inside `allOf`/`anyOf`/`oneOf`/
/// `not` only value validations may appear.
fn nested(s: &Value, skip_any_of: bool, fld: &str, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else {
        return;
    };
    value_validation(s, skip_any_of, false, fld, out);
    if let Some(it) = items(s) {
        nested(it, false, &child(fld, "items"), out);
    }
    if let Some(props) = properties(s) {
        let base = child(fld, "properties");
        for (name, p) in props {
            nested(p, false, &key(&base, name), out);
        }
        if props.contains_key("metadata") {
            out.push(field::forbidden(
                &key(&base, "metadata"),
                "must not be specified in a nested context",
            ));
        }
    }
    if m.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty())
    {
        out.push(field::forbidden(
            &child(fld, "type"),
            "must be empty to be structural",
        ));
    }
    if m.contains_key("additionalProperties") {
        out.push(field::forbidden(
            &child(fld, "additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if m.contains_key("default") {
        out.push(field::forbidden(
            &child(fld, "default"),
            "must be undefined to be structural",
        ));
    }
    for k in ["title", "description"] {
        if m.get(k)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
        {
            out.push(field::forbidden(
                &child(fld, k),
                "must be empty to be structural",
            ));
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
    if m.get(LIST_MAP_KEYS)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        out.push(field::forbidden(
            &child(fld, LIST_MAP_KEYS),
            "must be empty to be structural",
        ));
    }
    for k in [LIST_TYPE, "x-kubernetes-map-type"] {
        if m.contains_key(k) {
            out.push(field::forbidden(
                &child(fld, k),
                "must be undefined to be structural",
            ));
        }
    }
    if m.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        out.push(field::forbidden(
            &child(fld, "x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
}

/// kube's `validateStructuralCompleteness`: every property or items named
/// in a junctor must exist in the structural part at the same place.
fn completeness(v: &Value, s: &Value, s_path: &str, v_path: &str, out: &mut Vec<Cause>) {
    if let Some(not) = v.get("not") {
        nested_completeness(not, Some(s), s_path, &child(v_path, "not"), out);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = v.get(junctor).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                nested_completeness(
                    sub,
                    Some(s),
                    s_path,
                    &index(&child(v_path, junctor), i),
                    out,
                );
            }
        }
    }
    // Recurse into the structural tree itself.
    if std::ptr::eq(v, s) {
        if let Some(props) = properties(s) {
            for (name, p) in props {
                let p_path = key(&child(s_path, "properties"), name);
                completeness(p, p, &p_path, &p_path, out);
            }
        }
        if let Some(it) = items(s) {
            let i_path = child(s_path, "items");
            completeness(it, it, &i_path, &i_path, out);
        }
        if let Some(ap) = additional_schema(s) {
            let a_path = child(s_path, "additionalProperties");
            completeness(ap, ap, &a_path, &a_path, out);
        }
    }
}

fn nested_completeness(
    v: &Value,
    s: Option<&Value>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(s) = s else {
        out.push(field::required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    for junctor in ["not"] {
        if let Some(sub) = v.get(junctor) {
            nested_completeness(sub, Some(s), s_path, &child(v_path, junctor), out);
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = v.get(junctor).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                nested_completeness(
                    sub,
                    Some(s),
                    s_path,
                    &index(&child(v_path, junctor), i),
                    out,
                );
            }
        }
    }
    if let Some(vi) = items(v) {
        nested_completeness(
            vi,
            items(s),
            &child(s_path, "items"),
            &child(v_path, "items"),
            out,
        );
    }
    if let Some(props) = properties(v) {
        for (name, vp) in props {
            let sp = key(&child(s_path, "properties"), name);
            let vpp = key(&child(v_path, "properties"), name);
            match properties(s).and_then(|p| p.get(name)) {
                None => out.push(field::required(
                    &sp,
                    &format!("because it is defined in {vpp}"),
                )),
                Some(sfld) => nested_completeness(vp, Some(sfld), &sp, &vpp, out),
            }
        }
    }
}

/// Each `default` must validate against its own schema (kube's
/// `ValidateDefaults`); defaults at the root and inside `metadata` are
/// forbidden.
fn defaults_checks(s: &Value, fld: &str, level: Level, out: &mut Vec<Cause>) {
    let Some(m) = s.as_object() else {
        return;
    };
    if let Some(default) = m.get("default") {
        let path = child(fld, "default");
        if level == Level::Root {
            out.push(field::forbidden(&path, "must not be set at the root"));
        } else {
            out.extend(crate::values::validate(s, default, &path));
        }
    }
    if let Some(props) = properties(s) {
        let base = child(fld, "properties");
        for (name, p) in props {
            defaults_checks(p, &key(&base, name), Level::Field, out);
        }
    }
    if let Some(it) = items(s) {
        defaults_checks(it, &child(fld, "items"), Level::Item, out);
    }
    if let Some(ap) = additional_schema(s) {
        defaults_checks(ap, &child(fld, "additionalProperties"), Level::Field, out);
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

/// The root `metadata` schema may only restrict `name` and `generateName`
/// (kube's `validateStructuralMetadataInvariants`).
fn metadata_schema_allowed(meta: &Value) -> bool {
    let Some(m) = meta.as_object() else {
        return false;
    };
    m.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
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
            // Sorted by message, as kube sorts structural errors.
            vec![
                format!(
                    "{ROOT}.properties[spec].properties[a].items.type: Required value: must not be empty for specified array items"
                ),
                format!(
                    "{ROOT}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
                format!("{ROOT}.type: Required value: must not be empty at the root"),
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
    #[test]
    fn junctor_properties_must_exist_in_the_structural_part() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "string"}},
            "anyOf": [{"properties": {"a": {"minLength": 1}}}, {"properties": {"b": {"minLength": 1}}}]}}});
        assert_eq!(
            messages(s),
            vec![format!(
                "{ROOT}.properties[spec].properties[b]: Required value: because it is defined in {ROOT}.properties[spec].anyOf[1].properties[b]"
            )]
        );
    }

    #[test]
    fn root_additional_properties_and_bare_embedded_resources_are_rejected() {
        let s =
            json!({"type": "object", "additionalProperties": {"type": "string"}, "properties": {}});
        assert_eq!(
            messages(s),
            vec![format!(
                "{ROOT}.additionalProperties: Forbidden: must not be used at the root"
            )]
        );
        let e = json!({"type": "object", "properties": {"t": {"type": "object", "x-kubernetes-embedded-resource": true}}});
        assert_eq!(
            messages(e),
            vec![format!(
                "{ROOT}.properties[t].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
            )]
        );
    }

    #[test]
    fn the_int_or_string_any_of_pattern_may_carry_types() {
        let s = json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}}});
        assert!(messages(s).is_empty());
        let bad = json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "string"}, {"type": "integer"}]}}});
        assert_eq!(
            messages(bad),
            vec![
                format!(
                    "{ROOT}.properties[p].anyOf[0].type: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{ROOT}.properties[p].anyOf[1].type: Forbidden: must be empty to be structural"
                ),
            ]
        );
    }
}
