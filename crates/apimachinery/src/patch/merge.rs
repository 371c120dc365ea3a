//! RFC 7386 JSON merge patch as kube-apiserver applies it
//! (`evanphx/json-patch` `MergePatch`): `null` deletes a member, objects
//! merge recursively, anything else replaces; values newly set have their
//! `null` object members pruned (also inside arrays); a patch that is an
//! array is the result itself; `null` or a scalar patch is 400
//! `Invalid JSON Patch`.

use serde_json::{Map, Value};

use super::parse_json;
use crate::error::ApiError;

/// evanphx's `errBadJSONPatch` text.
const BAD_PATCH: &str = "Invalid JSON Patch";

pub(super) fn apply(doc: &Value, patch_bytes: &[u8]) -> Result<Value, ApiError> {
    let patch = parse_json(patch_bytes).map_err(|_| ApiError::bad_request(BAD_PATCH))?;
    match patch {
        Value::Object(p) => match doc {
            Value::Object(d) => {
                let mut d = d.clone();
                merge_docs(&mut d, p);
                Ok(Value::Object(d))
            }
            // Not a document to merge into: the patch (pruned) is the result.
            _ => {
                let mut v = Value::Object(p);
                prune_nulls(&mut v);
                Ok(v)
            }
        },
        Value::Array(_) => {
            let mut v = patch;
            prune_nulls(&mut v);
            Ok(v)
        }
        _ => Err(ApiError::bad_request(BAD_PATCH)),
    }
}

/// `mergeDocs`. Recursion follows the patch, whose depth `parse_json` bounds.
fn merge_docs(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, mut v) in patch {
        if v.is_null() {
            doc.remove(&k);
            continue;
        }
        match doc.get_mut(&k) {
            Some(cur) if !cur.is_null() => {
                let cur_owned = std::mem::take(cur);
                *cur = merge(cur_owned, v);
            }
            _ => {
                prune_nulls(&mut v);
                doc.insert(k, v);
            }
        }
    }
}

/// `merge(cur, patch)`.
fn merge(cur: Value, mut patch: Value) -> Value {
    let Value::Object(mut cur) = cur else {
        prune_nulls(&mut patch);
        return patch;
    };
    match patch {
        Value::Object(p) => {
            merge_docs(&mut cur, p);
            Value::Object(cur)
        }
        other => other,
    }
}

/// `pruneNulls`: drop `null` object members, recursively (array elements
/// themselves are kept, even when `null`).
fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(prune_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(doc: Value, p: &str) -> Value {
        apply(&doc, p.as_bytes()).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn null_deletes_objects_merge_and_lists_are_replaced() {
        let out = ok(
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"l": [1, 2], "x": 1}}),
            r#"{"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"l": [3]}}"#,
        );
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"l": [3], "x": 1}})
        );
    }

    #[test]
    fn new_values_have_null_members_pruned_even_inside_arrays() {
        let out = ok(
            json!({"a": 1}),
            r#"{"b": {"x": null, "y": [{"z": null, "w": 1}, null]}}"#,
        );
        assert_eq!(out, json!({"a": 1, "b": {"y": [{"w": 1}, null]}}));
    }

    #[test]
    fn null_scalar_and_malformed_patches_are_400_invalid_json_patch() {
        for p in ["null", "5", "\"x\"", "true", "{", "nope"] {
            let e = apply(&json!({}), p.as_bytes())
                .err()
                .map(|e| (e.code, e.message));
            assert_eq!(e, Some((400, "Invalid JSON Patch".to_string())), "{p}");
        }
    }

    #[test]
    fn an_array_patch_is_the_result() {
        assert_eq!(ok(json!({"a": 1}), "[1, {\"b\": null}]"), json!([1, {}]));
    }
}
