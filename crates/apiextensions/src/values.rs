//! Value validation of a custom resource against its schema, as kube's
//! `apiextensions-apiserver/pkg/apiserver/validation` (kube-openapi's
//! validator, its errors turned into field errors): types and formats,
//! `enum`, bounds, lengths, `pattern`, item counts, `required`, `nullable`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-embedded-resource`, list
//! types `set`/`map`, and the `allOf`/`anyOf`/`oneOf`/`not` junctors.
//!
//! Messages are kube's, e.g.
//! `spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use base64::Engine;
use serde_json::Value;
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use crate::schema::{
    EMBEDDED, INT_OR_STRING, LIST_MAP_KEYS, LIST_TYPE, additional_schema, child, flag, index,
    items, properties, type_of,
};

/// Validate `v` against schema `s`; `path` is where `v` sits (empty for a
/// whole custom resource).
pub fn validate(s: &Value, v: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    check(s, v, path, &mut out);
    out
}

/// Go's `%v` of a JSON value as kube's messages print it.
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut kv: Vec<_> = m.iter().collect();
            kv.sort_by(|a, b| a.0.cmp(b.0));
            format!(
                "map[{}]",
                kv.iter()
                    .map(|(k, v)| format!("{k}:{}", go_value(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    }
}

/// Go's `%v` of a float64 / int64: no trailing `.0`.
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or_default();
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else {
        f.to_string()
    }
}

/// kube-openapi's name of a value's JSON type.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

fn type_error(path: &str, expected: &str, v: &Value) -> Cause {
    let actual = type_name(v);
    let mut c = field::invalid(
        path,
        &Value::String(actual.into()),
        &format!("{path} in body must be of type {expected}: \"{actual}\""),
    );
    c.reason = "FieldValueTypeInvalid".into();
    c
}

fn shown(v: &Value) -> Value {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => v.clone(),
        other => Value::String(go_value(other)),
    }
}

fn check(s: &Value, v: &Value, path: &str, out: &mut Vec<Cause>) {
    if !s.is_object() {
        return;
    }
    let ty = type_of(s);
    let int_or_string = flag(s, INT_OR_STRING);
    if v.is_null() {
        if flag(s, "nullable") || (ty.is_empty() && !int_or_string) {
            return;
        }
        let expected = if int_or_string { "integer,string" } else { ty };
        out.push(type_error(path, expected, v));
        return;
    }
    if int_or_string && !(is_integer(v) || v.is_string()) {
        out.push(type_error(path, "integer,string", v));
        return;
    }
    if !ty.is_empty() && !type_matches(ty, v) {
        out.push(type_error(path, ty, v));
        return;
    }
    check_enum(s, v, path, out);
    match v {
        Value::String(text) => check_string(s, text, path, out),
        Value::Number(_) => check_number(s, v, path, out),
        Value::Array(list) => check_array(s, list, path, out),
        Value::Object(map) => check_object(s, map, path, out),
        _ => {}
    }
    check_junctors(s, v, path, out);
}

fn check_enum(s: &Value, v: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(options) = s.get("enum").and_then(Value::as_array) else {
        return;
    };
    if options.iter().any(|o| json_equal(o, v)) {
        return;
    }
    let list = options
        .iter()
        .map(|o| match o {
            Value::String(s) => format!("\"{s}\""),
            other => format!("\"{}\"", other.to_string().replace('"', "\\\"")),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let value = match v {
        Value::String(s) => format!("\"{s}\""),
        other => go_value(other),
    };
    out.push(Cause::new(
        "FieldValueNotSupported",
        format!("Unsupported value: {value}: supported values: {list}"),
        path,
    ));
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_equal(a, b)))
        }
        _ => a == b,
    }
}

fn cached_regex(pattern: &str) -> Option<regex::Regex> {
    static CACHE: OnceLock<Mutex<HashMap<String, regex::Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = guard.get(pattern) {
        return Some(r.clone());
    }
    let r = regex::Regex::new(pattern).ok()?;
    if guard.len() > 1024 {
        guard.clear();
    }
    guard.insert(pattern.to_string(), r.clone());
    Some(r)
}

fn check_string(s: &Value, text: &str, path: &str, out: &mut Vec<Cause>) {
    let value = Value::String(text.into());
    let chars = text.chars().count() as u64;
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && chars > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        out.push(Cause::new(
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} {unit}"),
            path,
        ));
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && chars < min
    {
        out.push(field::invalid(
            path,
            &value,
            &format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str)
        && let Some(re) = cached_regex(p)
        && !re.is_match(text)
    {
        out.push(field::invalid(
            path,
            &value,
            &format!("{path} in body should match '{p}'"),
        ));
    }
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && !format_ok(format, text)
    {
        let mut c = field::invalid(
            path,
            &value,
            &format!("{path} in body must be of type {format}: \"{text}\""),
        );
        c.reason = "FieldValueTypeInvalid".into();
        out.push(c);
    }
}

/// kube-openapi's string formats (`strfmt.Default`); unknown formats pass.
fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => {
            s.parse::<jiff::Timestamp>().is_ok()
                || s.parse::<jiff::civil::DateTime>().is_ok() && s.contains('T')
        }
        "date" => s.len() == 10 && s.parse::<jiff::civil::Date>().is_ok(),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "uuid" => {
            static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
            RE.get_or_init(|| {
                regex::Regex::new(
                    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
                )
                .ok()
            })
            .as_ref()
            .is_none_or(|r| r.is_match(s))
        }
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let max = if ip.contains(':') { 128 } else { 32 };
            ip.parse::<std::net::IpAddr>().is_ok() && bits.parse::<u8>().is_ok_and(|b| b <= max)
        }),
        "hostname" => {
            !s.is_empty()
                && s.len() <= 255
                && s.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
        }
        "email" => s
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.') && !b.starts_with('.')),
        _ => true,
    }
}

fn check_number(s: &Value, v: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(x) = v.as_f64() else {
        return;
    };
    let bound = |k: &str| {
        s.get(k)
            .and_then(Value::as_f64)
            .map(|f| (f, go_value(&s[k])))
    };
    if let Some((max, shown_max)) = bound("maximum") {
        let exclusive = flag(s, "exclusiveMaximum");
        if (exclusive && x >= max) || x > max {
            let word = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(field::invalid(
                path,
                v,
                &format!("{path} in body should be {word} {shown_max}"),
            ));
        }
    }
    if let Some((min, shown_min)) = bound("minimum") {
        let exclusive = flag(s, "exclusiveMinimum");
        if (exclusive && x <= min) || x < min {
            let word = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(field::invalid(
                path,
                v,
                &format!("{path} in body should be {word} {shown_min}"),
            ));
        }
    }
    if let Some((m, shown_m)) = bound("multipleOf")
        && m > 0.0
        && ((x / m).fract()).abs() > 1e-9
    {
        out.push(field::invalid(
            path,
            v,
            &format!("{path} in body should be a multiple of {shown_m}"),
        ));
    }
}

fn too_many(path: &str, actual: usize, max: u64) -> Cause {
    Cause::new(
        "FieldValueTooMany",
        format!("Too many: {actual}: must have at most {max} items"),
        path,
    )
}

fn check_array(s: &Value, list: &[Value], path: &str, out: &mut Vec<Cause>) {
    if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
        && list.len() as u64 > max
    {
        out.push(too_many(path, list.len(), max));
    }
    if let Some(min) = s.get("minItems").and_then(Value::as_u64)
        && (list.len() as u64) < min
    {
        out.push(field::invalid(
            path,
            &Value::from(list.len()),
            &format!("{path} in body should have at least {min} items"),
        ));
    }
    if flag(s, "uniqueItems")
        && list
            .iter()
            .enumerate()
            .any(|(j, item)| list[..j].iter().any(|o| json_equal(o, item)))
    {
        out.push(field::invalid(
            path,
            &Value::String(String::new()),
            &format!("{path} in body shouldn't contain duplicates"),
        ));
    }
    if let Some(it) = items(s) {
        for (i, item) in list.iter().enumerate() {
            check(it, item, &index(path, i), out);
        }
    }
    match s.get(LIST_TYPE).and_then(Value::as_str) {
        Some("set") => {
            for (j, item) in list.iter().enumerate() {
                if list[..j].iter().any(|o| json_equal(o, item)) {
                    out.push(field::duplicate(&index(path, j), &shown(item)));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = s
                .get(LIST_MAP_KEYS)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let key_of = |item: &Value| -> Vec<(String, Value)> {
                keys.iter()
                    .filter_map(|k| item.get(*k).map(|v| (k.to_string(), v.clone())))
                    .collect()
            };
            for (j, item) in list.iter().enumerate() {
                let kj = key_of(item);
                if list[..j].iter().any(|o| key_of(o) == kj) {
                    out.push(Cause::new(
                        "FieldValueDuplicate",
                        format!("Duplicate value: {}", go_map_literal(&kj)),
                        index(path, j),
                    ));
                }
            }
        }
        _ => {}
    }
}

/// Go's `%#v` of a `map[string]interface{}` of key fields.
fn go_map_literal(kv: &[(String, Value)]) -> String {
    let body = kv
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => format!("\"{s}\""),
                other => go_value(other),
            };
            format!("\"{k}\":{v}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!("map[string]interface {{}}{{{body}}}")
}

fn check_object(s: &Value, map: &serde_json::Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    if let Some(req) = s.get("required").and_then(Value::as_array) {
        for name in req.iter().filter_map(Value::as_str) {
            if !map.contains_key(name) {
                out.push(field::required(&child(path, name), ""));
            }
        }
    }
    if let Some(max) = s.get("maxProperties").and_then(Value::as_u64)
        && map.len() as u64 > max
    {
        out.push(too_many(path, map.len(), max));
    }
    if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
        && (map.len() as u64) < min
    {
        out.push(field::invalid(
            path,
            &Value::from(map.len()),
            &format!("{path} in body should have at least {min} properties"),
        ));
    }
    if flag(s, EMBEDDED) {
        for k in ["apiVersion", "kind"] {
            if map.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                out.push(field::required(&child(path, k), "must not be empty"));
            }
        }
    }
    let props = properties(s);
    let additional = additional_schema(s);
    for (k, v) in map {
        if let Some(p) = props.and_then(|p| p.get(k)) {
            check(p, v, &child(path, k), out);
        } else if let Some(ap) = additional {
            check(ap, v, &child(path, k), out);
        }
    }
}

fn check_junctors(s: &Value, v: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check(sub, v, path, out);
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array)
        && !any.is_empty()
        && !any.iter().any(|sub| validate(sub, v, path).is_empty())
    {
        out.push(field::invalid(
            path,
            &Value::String(String::new()),
            &format!("{path} in body must validate at least one schema (anyOf)"),
        ));
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array)
        && !one.is_empty()
        && one
            .iter()
            .filter(|sub| validate(sub, v, path).is_empty())
            .count()
            != 1
    {
        out.push(field::invalid(
            path,
            &Value::String(String::new()),
            &format!("{path} in body must validate one and only one schema (oneOf)"),
        ));
    }
    if let Some(not) = s.get("not")
        && validate(not, v, path).is_empty()
    {
        out.push(field::invalid(
            path,
            &Value::String(String::new()),
            &format!("{path} in body must not validate the schema (not)"),
        ));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(s: Value, v: Value) -> Vec<String> {
        validate(&s, &v, "")
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn spec(props: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
    }

    #[test]
    fn a_string_where_an_integer_belongs_is_a_type_error() {
        let s = spec(json!({"replicas": {"type": "integer"}}));
        assert_eq!(
            texts(s, json!({"spec": {"replicas": "3"}})),
            vec![
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
    }

    #[test]
    fn bounds_and_lengths_are_checked_with_kubes_wording() {
        let s = spec(json!({
            "n": {"type": "integer", "minimum": 1, "maximum": 10},
            "m": {"type": "number", "maximum": 5, "exclusiveMaximum": true},
            "name": {"type": "string", "maxLength": 3, "minLength": 2},
        }));
        let got = texts(
            s.clone(),
            json!({"spec": {"n": 11, "m": 5, "name": "abcd"}}),
        );
        assert_eq!(
            got,
            vec![
                "spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10",
                "spec.m: Invalid value: 5: spec.m in body should be less than 5",
                "spec.name: Too long: may not be more than 3 bytes",
            ]
        );
        assert_eq!(
            texts(s, json!({"spec": {"n": 0, "name": "a"}})),
            vec![
                "spec.n: Invalid value: 0: spec.n in body should be greater than or equal to 1",
                "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long",
            ]
        );
    }

    #[test]
    fn enums_patterns_and_required_fields() {
        let s = json!({"type": "object", "required": ["spec"], "properties": {"spec": {
        "type": "object", "required": ["cronSpec"], "properties": {
            "cronSpec": {"type": "string", "pattern": "^\\d+$"},
            "mode": {"type": "string", "enum": ["a", "b"]}
        }}}});
        assert_eq!(texts(s.clone(), json!({})), vec!["spec: Required value"]);
        assert_eq!(
            texts(s, json!({"spec": {"mode": "c"}})),
            vec![
                "spec.cronSpec: Required value",
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
            ]
        );
        let p = spec(json!({"cronSpec": {"type": "string", "pattern": "^\\d+$"}}));
        assert_eq!(
            texts(p, json!({"spec": {"cronSpec": "x"}})),
            vec![
                "spec.cronSpec: Invalid value: \"x\": spec.cronSpec in body should match '^\\d+$'"
            ]
        );
    }

    #[test]
    fn nullable_and_int_or_string() {
        let s = spec(json!({
            "a": {"type": "string", "nullable": true},
            "b": {"type": "string"},
            "port": {"x-kubernetes-int-or-string": true}
        }));
        assert_eq!(
            texts(
                s.clone(),
                json!({"spec": {"a": null, "b": null, "port": "http"}})
            ),
            vec![
                "spec.b: Invalid value: \"null\": spec.b in body must be of type string: \"null\""
            ]
        );
        assert_eq!(
            texts(s, json!({"spec": {"port": true}})),
            vec![
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
            ]
        );
    }

    #[test]
    fn formats_are_checked_for_strings() {
        let s = spec(
            json!({"t": {"type": "string", "format": "date-time"}, "i": {"type": "integer", "format": "int32"}}),
        );
        assert!(
            texts(
                s.clone(),
                json!({"spec": {"t": "2024-01-02T03:04:05Z", "i": 3}})
            )
            .is_empty()
        );
        assert_eq!(
            texts(s, json!({"spec": {"t": "yesterday"}})),
            vec![
                "spec.t: Invalid value: \"yesterday\": spec.t in body must be of type date-time: \"yesterday\""
            ]
        );
    }

    #[test]
    fn item_counts_and_list_types() {
        let s = spec(json!({
            "tags": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "minItems": 1, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
        }));
        assert_eq!(
            texts(
                s.clone(),
                json!({"spec": {"tags": ["a", "b", "a"], "ports": [{"name": "x"}, {"name": "x"}]}})
            ),
            vec![
                "spec.tags: Too many: 3: must have at most 2 items",
                "spec.tags[2]: Duplicate value: \"a\"",
                "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"x\"}",
            ]
        );
        assert_eq!(
            texts(s, json!({"spec": {"ports": []}})),
            vec!["spec.ports: Invalid value: 0: spec.ports in body should have at least 1 items"]
        );
    }

    #[test]
    fn embedded_resources_need_api_version_and_kind() {
        let s = spec(
            json!({"template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
        );
        assert_eq!(
            texts(s, json!({"spec": {"template": {"kind": "Pod"}}})),
            vec!["spec.template.apiVersion: Required value: must not be empty"]
        );
    }

    #[test]
    fn junctors_validate_the_same_value() {
        let s = spec(json!({"x": {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]}}));
        assert!(texts(s.clone(), json!({"spec": {"x": 11}})).is_empty());
        assert_eq!(
            texts(s, json!({"spec": {"x": 5}})),
            vec![
                "spec.x: Invalid value: \"\": spec.x in body must validate at least one schema (anyOf)"
            ]
        );
    }
}
