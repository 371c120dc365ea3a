//! Structural defaulting (kube's `apiserver/schema/defaulting`): a missing
//! property, or a `null` one that is not `nullable`, gets a deep copy of its
//! schema's `default`, then defaulting continues inside it (so nested
//! defaults apply too); items and `additionalProperties` values likewise.
//! Non-nullable `null`s without a default are dropped, as kube's
//! `PruneNonNullableNullsWithoutDefaults`. Run on writes and on reads.

use serde_json::Value;

use crate::schema::{additional_schema, flag, items, properties};

fn non_nullable_null(v: &Value, s: &Value) -> bool {
    v.is_null() && !flag(s, "nullable")
}

/// Apply schema `s`'s defaults to `v` in place.
pub fn apply(s: &Value, v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(props) = properties(s) {
                for (k, p) in props {
                    let Some(default) = p.get("default") else {
                        continue;
                    };
                    let missing = match map.get(k) {
                        None => true,
                        Some(x) => non_nullable_null(x, p),
                    };
                    if missing {
                        map.insert(k.clone(), default.clone());
                    }
                }
                map.retain(|k, x| {
                    !props
                        .get(k)
                        .is_some_and(|p| non_nullable_null(x, p) && p.get("default").is_none())
                });
            }
            let additional = additional_schema(s);
            for (k, x) in map.iter_mut() {
                if let Some(p) = properties(s).and_then(|p| p.get(k)) {
                    apply(p, x);
                } else if let Some(ap) = additional {
                    if non_nullable_null(x, ap)
                        && let Some(d) = ap.get("default")
                    {
                        *x = d.clone();
                    }
                    apply(ap, x);
                }
            }
        }
        Value::Array(list) => {
            if let Some(it) = items(s) {
                for x in list.iter_mut() {
                    if non_nullable_null(x, it)
                        && let Some(d) = it.get("default")
                    {
                        *x = d.clone();
                    }
                    apply(it, x);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "image": {"type": "string"},
            "opt": {"type": "object", "default": {"x": 1}, "properties": {
                "x": {"type": "integer"}, "y": {"type": "string", "default": "why"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "integer", "default": 80}}}},
            "n": {"type": "string", "nullable": true, "default": "d"}
        }}}})
    }

    #[test]
    fn missing_fields_get_defaults_recursively() {
        let mut v = json!({});
        apply(&schema(), &mut v);
        assert_eq!(
            v,
            json!({"spec": {"replicas": 1, "opt": {"x": 1, "y": "why"}, "n": "d"}})
        );
    }

    #[test]
    fn items_are_defaulted_and_present_values_kept() {
        let mut v = json!({"spec": {"replicas": 3, "list": [{}, {"p": 443}], "n": null}});
        apply(&schema(), &mut v);
        assert_eq!(v["spec"]["replicas"], 3);
        assert_eq!(v["spec"]["list"], json!([{"p": 80}, {"p": 443}]));
        assert_eq!(v["spec"]["n"], Value::Null, "nullable nulls stay");
    }

    #[test]
    fn non_nullable_nulls_take_the_default_or_are_dropped() {
        let mut v = json!({"spec": {"replicas": null, "image": null}});
        apply(&schema(), &mut v);
        assert_eq!(v["spec"]["replicas"], 1);
        assert!(v["spec"].get("image").is_none());
    }
}
