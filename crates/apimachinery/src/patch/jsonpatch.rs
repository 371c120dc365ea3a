//! RFC 6902 JSON patch as kube-apiserver applies it
//! (`gopkg.in/evanphx/json-patch.v4`), over `serde_json::Value`.
//!
//! Differences from a strict RFC 6902 reading that kube clients can observe,
//! and which are kept: `replace` of a missing object member adds it; array
//! indices may be negative (counted from the end); a missing `value` means
//! `null`; `copy` from a missing object member copies `null`; `test` against
//! an object only compares the members of the document's object. Where the
//! Go library would panic (nil dereferences, negative index reads), this one
//! fails the operation instead.

use serde_json::Value;

use super::{MAX_JSON_PATCH_OPERATIONS, parse_json, unprocessable};
use crate::error::ApiError;
use crate::labels::json_kind;

/// Apply a JSON patch body to a copy of `doc`.
pub(super) fn apply(doc: &Value, patch_bytes: &[u8]) -> Result<Value, ApiError> {
    let patch = parse_json(patch_bytes).map_err(ApiError::bad_request)?;
    let ops = match patch {
        Value::Array(a) => a,
        // Go decodes `null` into an empty patch.
        Value::Null => Vec::new(),
        other => {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                json_kind(&other)
            )));
        }
    };
    for op in &ops {
        if !(op.is_object() || op.is_null()) {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                json_kind(op)
            )));
        }
    }
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::new(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    let mut doc = doc.clone();
    for op in &ops {
        apply_op(&mut doc, op).map_err(|e| unprocessable(&e))?;
    }
    Ok(doc)
}

/// An operation's member as a string: `None` when absent or `null`,
/// `Some(Err)` when not a string.
fn str_member<'a>(op: &'a Value, name: &str) -> Option<Result<&'a str, String>> {
    match op.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Ok(s)),
        Some(other) => Some(Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            json_kind(other)
        ))),
    }
}

/// `Operation.Path()` (errors already wrapped as evanphx does).
fn path_of(op: &Value) -> Result<&str, String> {
    match str_member(op, "path") {
        Some(Ok(p)) => Ok(p),
        Some(Err(e)) => Err(e),
        None => Err("operation missing path field: missing value".to_string()),
    }
}

/// `Operation.From()`.
fn from_of(op: &Value) -> Result<&str, String> {
    match str_member(op, "from") {
        Some(Ok(p)) => Ok(p),
        Some(Err(e)) => Err(e),
        None => Err("operation, missing from field: missing value".to_string()),
    }
}

fn apply_op(doc: &mut Value, op: &Value) -> Result<(), String> {
    let kind = match op.get("op") {
        Some(Value::String(s)) => s.as_str(),
        _ => "unknown",
    };
    let value = op.get("value").cloned().unwrap_or(Value::Null);
    match kind {
        "add" => {
            let path = path_of(op)
                .map_err(|_| "add operation failed to decode path: missing value".to_string())?;
            let (con, key) = find_object(doc, path).ok_or_else(|| {
                format!(
                    "add operation does not apply: doc is missing path: \"{path}\": missing value"
                )
            })?;
            add(con, &key, value).map_err(|e| format!("error in add for path: '{path}': {e}"))
        }
        "remove" => {
            let path = path_of(op)
                .map_err(|_| "remove operation failed to decode path: missing value".to_string())?;
            let (con, key) = find_object(doc, path).ok_or_else(|| {
                format!("remove operation does not apply: doc is missing path: \"{path}\": missing value")
            })?;
            remove(con, &key).map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "replace" => {
            let path =
                path_of(op).map_err(|e| format!("replace operation failed to decode path: {e}"))?;
            let (con, key) = find_object(doc, path).ok_or_else(|| {
                format!(
                    "replace operation does not apply: doc is missing path: {path}: missing value"
                )
            })?;
            if get(con, &key).is_err() {
                return Err(format!(
                    "replace operation does not apply: doc is missing key: {path}: missing value"
                ));
            }
            set(con, &key, value).map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "move" => {
            let from =
                from_of(op).map_err(|e| format!("move operation failed to decode from: {e}"))?;
            let (con, key) = find_object(doc, from).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing from path: {from}: missing value"
                )
            })?;
            let val =
                get(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            remove(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let path =
                path_of(op).map_err(|e| format!("move operation failed to decode path: {e}"))?;
            let (con, key) = find_object(doc, path).ok_or_else(|| {
                format!("move operation does not apply: doc is missing destination path: {path}: missing value")
            })?;
            add(con, &key, val.unwrap_or(Value::Null))
                .map_err(|e| format!("error in move for path: '{path}': {e}"))
        }
        "copy" => {
            let from =
                from_of(op).map_err(|e| format!("copy operation failed to decode from: {e}"))?;
            let (con, key) = find_object(doc, from).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing from path: {from}: missing value"
                )
            })?;
            let val =
                get(con, &key).map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
            let path = path_of(op)
                .map_err(|_| "copy operation failed to decode path: missing value".to_string())?;
            let (con, key) = find_object(doc, path).ok_or_else(|| {
                format!("copy operation does not apply: doc is missing destination path: {path}: missing value")
            })?;
            add(con, &key, val.unwrap_or(Value::Null))
                .map_err(|e| format!("error while adding value during copy: {e}"))
        }
        "test" => {
            let path =
                path_of(op).map_err(|e| format!("test operation failed to decode path: {e}"))?;
            let (con, key) = find_object(doc, path).ok_or_else(|| {
                format!("test operation does not apply: is missing path: {path}: missing value")
            })?;
            let val =
                get(con, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
            let failed = || format!("testing value {path} failed: test failed");
            match (val.filter(|v| !v.is_null()), op.get("value")) {
                (None, Some(Value::Null)) => Ok(()),
                (None, _) | (Some(_), None) => Err(failed()),
                (Some(have), Some(want)) => {
                    if lazy_equal(&have, want, 0) {
                        Ok(())
                    } else {
                        Err(failed())
                    }
                }
            }
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// RFC 6901 unescaping as evanphx does it (`~1` → `/`, then `~0` → `~`, in one pass).
fn decode_key(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    out.push('/');
                    chars.next();
                    continue;
                }
                Some('0') => {
                    out.push('~');
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// `strconv.Atoi`, with Go's error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            crate::quote::go_quote(s)
        ));
    }
    s.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            crate::quote::go_quote(s)
        )
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: invalid index referenced")
}

/// `findObject`: the container holding the path's last segment, and that
/// segment unescaped.
fn find_object<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let key = decode_key(split[split.len() - 1]);
    let mut cur = doc;
    for part in &split[1..split.len() - 1] {
        let part = decode_key(part);
        cur = match cur {
            Value::Object(m) => m.get_mut(&part)?,
            Value::Array(a) => {
                let idx = usize::try_from(atoi(&part).ok()?).ok()?;
                a.get_mut(idx)?
            }
            _ => return None,
        };
        if !(cur.is_object() || cur.is_array()) {
            return None;
        }
    }
    if cur.is_object() || cur.is_array() {
        Some((cur, key))
    } else {
        None
    }
}

/// Resolve an array index for insertion (`len + 1` slots) or access (`len`).
fn resolve_index(key: &str, slots: usize) -> Result<usize, String> {
    let idx = atoi(key)?;
    let n = i64::try_from(slots).unwrap_or(i64::MAX);
    if idx >= n || idx < -n {
        return Err(invalid_index(idx));
    }
    let idx = if idx < 0 { idx + n } else { idx };
    usize::try_from(idx).map_err(|_| invalid_index(idx))
}

fn add(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(val);
                return Ok(());
            }
            let idx = resolve_index(key, a.len() + 1).map_err(|e| {
                if e.starts_with("strconv") {
                    format!("value was not a proper array index: '{key}': {e}")
                } else {
                    e
                }
            })?;
            a.insert(idx, val);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn remove(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Object(m) => match m.remove(key) {
            Some(_) => Ok(()),
            None => Err(format!(
                "Unable to remove nonexistent key: {key}: missing value"
            )),
        },
        Value::Array(a) => {
            let idx = resolve_index(key, a.len())?;
            a.remove(idx);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

/// `get`: `Ok(None)` for a missing object member (not an error in evanphx).
fn get(con: &Value, key: &str) -> Result<Option<Value>, String> {
    match con {
        Value::Object(m) => Ok(m.get(key).cloned()),
        Value::Array(a) => {
            let idx = atoi(key)?;
            // evanphx only checks the upper bound (a negative index panics in Go).
            let i = usize::try_from(idx).map_err(|_| invalid_index(idx))?;
            a.get(i)
                .cloned()
                .map(Some)
                .ok_or_else(|| invalid_index(idx))
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn set(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Array(a) => {
            let idx = atoi(key)?;
            let i = usize::try_from(idx).map_err(|_| invalid_index(idx))?;
            let slot = a.get_mut(i).ok_or_else(|| invalid_index(idx))?;
            *slot = val;
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

/// evanphx's `lazyNode.equal(doc, expected)`: objects compare the members of
/// the document's object only; arrays element-wise; scalars by their JSON.
fn lazy_equal(have: &Value, want: &Value, depth: usize) -> bool {
    if depth > super::MAX_NESTING_DEPTH * 2 {
        return false;
    }
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => h.iter().all(|(k, hv)| match w.get(k) {
            None => false,
            Some(wv) => match (hv.is_null(), wv.is_null()) {
                (true, true) => true,
                (false, false) => lazy_equal(hv, wv, depth + 1),
                _ => false,
            },
        }),
        (Value::Object(_), _) | (_, Value::Object(_)) => false,
        (Value::Array(h), Value::Array(w)) => {
            h.len() == w.len() && h.iter().zip(w).all(|(a, b)| lazy_equal(a, b, depth + 1))
        }
        (Value::Array(_), _) | (_, Value::Array(_)) => false,
        (a, b) => serde_json::to_string(a).ok() == serde_json::to_string(b).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn empty() -> Value {
        json!({})
    }

    fn patch(doc: Value, p: Value) -> Result<Value, ApiError> {
        apply(&doc, p.to_string().as_bytes())
    }

    fn ok(doc: Value, p: Value) -> Value {
        patch(doc, p).unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn add_remove_replace_move_copy_and_test_apply_in_order() {
        let out = ok(
            json!({"a": {"b": 1}, "l": [1, 2, 3]}),
            json!([
                {"op": "add", "path": "/a/c", "value": 2},
                {"op": "remove", "path": "/a/b"},
                {"op": "replace", "path": "/l/0", "value": 9},
                {"op": "add", "path": "/l/-", "value": 4},
                {"op": "add", "path": "/l/1", "value": 8},
                {"op": "move", "from": "/a/c", "path": "/m"},
                {"op": "copy", "from": "/m", "path": "/n"},
                {"op": "test", "path": "/n", "value": 2}
            ]),
        );
        assert_eq!(out, json!({"a": {}, "l": [9, 8, 2, 3, 4], "m": 2, "n": 2}));
    }

    #[test]
    fn escaped_pointer_segments_address_keys_with_slashes() {
        let out = ok(
            json!({"metadata": {"labels": {"app.kubernetes.io/name": "x", "a~b": "y"}}}),
            json!([
                {"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "z"},
                {"op": "remove", "path": "/metadata/labels/a~0b"}
            ]),
        );
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"app.kubernetes.io/name": "z"}}})
        );
    }

    #[test]
    fn kube_quirks_are_kept() {
        // replace of a missing member adds it; negative indices count from the end;
        // a missing value is null.
        let out = ok(
            json!({"l": [1, 2, 3]}),
            json!([
                {"op": "replace", "path": "/new", "value": 1},
                {"op": "remove", "path": "/l/-1"},
                {"op": "add", "path": "/n"}
            ]),
        );
        assert_eq!(out, json!({"l": [1, 2], "new": 1, "n": null}));
    }

    #[test]
    fn failed_operations_are_422_with_kubes_generic_message() {
        for p in [
            json!([{"op": "remove", "path": "/missing"}]),
            json!([{"op": "test", "path": "/a", "value": 2}]),
            json!([{"op": "add", "path": "/x/y", "value": 1}]),
            json!([{"op": "add", "path": "/l/9", "value": 1}]),
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "move", "from": "/nope", "path": "/a"}]),
            json!([{"op": "remove", "path": "/l/-5"}]),
            json!([{"op": "replace", "path": "/l/x", "value": 1}]),
            json!([null]),
        ] {
            let e = patch(json!({"a": 1, "l": [1]}), p.clone())
                .err()
                .unwrap_or_else(|| panic!("{p} applied"));
            assert_eq!(e.code, 422, "{p}");
            let s = e.status();
            assert_eq!(s["reason"], "Invalid");
            assert_eq!(
                s["message"],
                "the server rejected our request due to an error in our request"
            );
            assert_eq!(s["details"], json!({}));
        }
    }

    #[test]
    fn a_failed_operation_leaves_the_input_document_untouched() {
        let doc = json!({"a": 1});
        let r = apply(
            &doc,
            br#"[{"op":"add","path":"/b","value":2},{"op":"remove","path":"/zz"}]"#,
        );
        assert!(r.is_err());
        assert_eq!(doc, json!({"a": 1}));
    }

    #[test]
    fn undecodable_bodies_are_400() {
        let e = apply(&empty(), b"{\"op\":\"add\"}")
            .err()
            .map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((
                400,
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch".to_string()
            ))
        );
        let e = apply(&empty(), b"[1]").err().map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((
                400,
                "json: cannot unmarshal number into Go value of type jsonpatch.Operation"
                    .to_string()
            ))
        );
        let e = apply(&empty(), b"[").err().map(|e| (e.code, e.message));
        assert_eq!(e, Some((400, "unexpected end of JSON input".to_string())));
    }

    #[test]
    fn more_than_ten_thousand_operations_is_413() {
        let ops: Vec<Value> = (0..10_001)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        let e = patch(json!({"a": 1}), Value::Array(ops))
            .err()
            .map(|e| (e.code, e.reason, e.message));
        assert_eq!(
            e,
            Some((
                413,
                "RequestEntityTooLarge".to_string(),
                "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
                    .to_string()
            ))
        );
    }

    #[test]
    fn test_compares_only_the_documents_members() {
        ok(
            json!({"a": {"x": 1}}),
            json!([{"op": "test", "path": "/a", "value": {"x": 1, "y": 2}}]),
        );
        assert!(
            patch(
                json!({"a": {"x": 1, "y": 2}}),
                json!([{"op": "test", "path": "/a", "value": {"x": 1}}])
            )
            .is_err()
        );
        ok(
            json!({}),
            json!([{"op": "test", "path": "/missing", "value": null}]),
        );
    }
}
