//! The patch engines: RFC 6902 JSON patch, RFC 7386 JSON merge patch, and
//! Kubernetes strategic merge patch (SMP) with its directives (`$patch`,
//! `$setElementOrder`, `$retainKeys`, `$deleteFromPrimitiveList`).
//!
//! SMP needs to know, per field, whether a list merges (and by which key) or
//! is replaced: that comes in through [`PatchMeta`], implemented over the
//! OpenAPI schemas by the openapi crate. [`NoPatchMeta`] treats every list as
//! atomic (what SMP does for fields it knows nothing of).
//!
//! The engines reproduce what kube-apiserver runs, quirks included, rather
//! than the RFCs alone: JSON patch behaves as `gopkg.in/evanphx/json-patch.v4`
//! (`replace` of a missing object key adds it, negative array indices count
//! from the end, a missing `value` is `null`, `test` ignores extra keys of
//! the expected object), merge patch as its `MergePatch`, SMP as
//! `k8s.io/apimachinery/pkg/util/strategicpatch` (the apply half). Errors
//! carry the status kube-apiserver's patch handler gives them
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`):
//!
//! | failure | status |
//! | --- | --- |
//! | body is not JSON, or not the expected JSON type | 400 BadRequest (Go's decoder message) |
//! | body nested deeper than [`MAX_NESTING_DEPTH`] | 400 BadRequest `invalid character '[' exceeded max depth` |
//! | JSON patch with more than 10000 operations | 413 RequestEntityTooLarge |
//! | JSON patch operation fails | 422 Invalid, kube's generic message (the detail is only logged, as kube drops it) |
//! | merge patch not an object or array | 400 `Invalid JSON Patch` |
//! | SMP malformed directive lists | 400 BadRequest (`invalid patch format of ...`) |
//! | SMP list of lists | 422 Invalid, generic message |
//! | any other SMP failure (unknown `$patch` value, missing merge key …) | 500 with kube's text and no reason |
//!
//! Bodies are attacker-controlled: nesting is bounded before parsing, every
//! recursion is bounded, nothing panics.

mod jsonpatch;
mod merge;
mod strategic;

use http::StatusCode;
use serde_json::Value;

use crate::error::ApiError;

pub use strategic::strategic_merge_value;

/// Deepest JSON nesting accepted in a patch body (what `serde_json` parses
/// without its recursion limit; kube's Go decoder allows 10000, which a
/// Kubernetes object never approaches).
pub const MAX_NESTING_DEPTH: usize = 127;

/// kube-apiserver's `maxJSONPatchOperations`.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The message kube-apiserver gives every 422 built with
/// `NewGenericServerResponse` (failed JSON patch operations, SMP lists of lists).
pub const GENERIC_UNPROCESSABLE: &str =
    "the server rejected our request due to an error in our request";

/// Apply an RFC 6902 JSON patch (`application/json-patch+json`) to `doc`.
pub fn json_patch(doc: &Value, patch_bytes: &[u8]) -> Result<Value, ApiError> {
    jsonpatch::apply(doc, patch_bytes)
}

/// Apply an RFC 7386 JSON merge patch (`application/merge-patch+json`) to `doc`.
pub fn merge_patch(doc: &Value, patch_bytes: &[u8]) -> Result<Value, ApiError> {
    merge::apply(doc, patch_bytes)
}

/// Apply a strategic merge patch (`application/strategic-merge-patch+json`)
/// to `doc`, with `meta` describing the kind's merge keys and strategies.
/// The result has no directive keys and no `null` map entries left (what
/// kube's typed decode of the patched map leaves).
pub fn strategic_merge_patch(
    doc: &Value,
    patch_bytes: &[u8],
    meta: &dyn PatchMeta,
) -> Result<Value, ApiError> {
    let patch = parse_json(patch_bytes).map_err(ApiError::bad_request)?;
    let patch = match patch {
        Value::Object(m) => m,
        // Go decodes `null` into an empty map: a no-op patch.
        Value::Null => serde_json::Map::new(),
        other => {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                crate::labels::json_kind(&other)
            )));
        }
    };
    strategic_merge_value(doc, patch, meta)
}

/// The 422 kube-apiserver returns for a JSON patch operation that does not
/// apply (`NewGenericServerResponse(422, ...)`: the detail is not in the body).
pub(crate) fn unprocessable(detail: &str) -> ApiError {
    tracing::debug!(detail, "patch rejected");
    let mut e = ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        GENERIC_UNPROCESSABLE,
    );
    e.subject = Some(Box::default());
    e
}

/// A 500 without a reason, as kube-apiserver reports errors that are not a
/// `metav1.Status` (`ErrorToAPIStatus`).
pub(crate) fn internal_unknown(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "", message)
}

/// Parse a JSON request body, failing as kube's Go decoder words it: a body
/// nested deeper than [`MAX_NESTING_DEPTH`] is refused before parsing
/// (`invalid character '{' exceeded max depth`), a truncated one is
/// `unexpected end of JSON input`, other syntax errors
/// `invalid character 'x' ...`. Never recurses deeper than the limit.
pub fn parse_json(bytes: &[u8]) -> Result<Value, String> {
    check_depth(bytes, MAX_NESTING_DEPTH)?;
    serde_json::from_slice(bytes).map_err(|e| go_json_error(bytes, &e))
}

/// Refuse input whose `[`/`{` nesting exceeds `limit` (strings skipped).
fn check_depth(bytes: &[u8], limit: usize) -> Result<(), String> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Err(format!(
                        "invalid character '{}' exceeded max depth",
                        char::from(b)
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Go's `encoding/json` wording for a `serde_json` parse error (best effort).
fn go_json_error(bytes: &[u8], e: &serde_json::Error) -> String {
    if e.classify() == serde_json::error::Category::Eof {
        return "unexpected end of JSON input".to_string();
    }
    // Locate the offending byte from line/column (both 1-based).
    let mut line = 1usize;
    let mut offset = None;
    let mut col = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if line == e.line() {
            col += 1;
            if col == e.column() {
                offset = Some(i);
                break;
            }
        }
        if b == b'\n' {
            line += 1;
        }
    }
    let shown = match offset.and_then(|i| bytes.get(i)) {
        Some(&c) if c.is_ascii_graphic() || c == b' ' => format!("'{}'", char::from(c)),
        Some(&c) => format!("'\\x{c:02x}'"),
        None => return e.to_string(),
    };
    let text = e.to_string();
    let context = if text.starts_with("trailing characters") {
        "after top-level value"
    } else if text.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if text.starts_with("expected `:`") {
        "after object key"
    } else if text.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if text.starts_with("expected `,` or `]`") {
        "after array element"
    } else {
        "looking for beginning of value"
    };
    format!("invalid character {shown} {context}")
}

// ---------------------------------------------------------------------------
// Go `%v` formatting, for error texts that print values as kube does.

/// Go's `%v` of a decoded JSON value (`map[a:1 b:[x y]]`).
pub(crate) fn go_v(v: &Value) -> String {
    let mut out = String::new();
    go_v_into(v, &mut out, 0);
    out
}

fn go_v_into(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_NESTING_DEPTH * 4 {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                go_v_into(x, out, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                if let Some(x) = m.get(k) {
                    go_v_into(x, out, depth + 1);
                }
            }
            out.push(']');
        }
    }
}

/// Go's `%v` of an int64 or float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
fn go_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let Some(f) = n.as_f64() else {
        return n.to_string();
    };
    // %v is %g with the shortest precision: exponent form below 1e-4 and
    // from 1e6 on (`1e+06`).
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Go's `reflect.TypeOf(v).String()` for a decoded JSON value.
pub(crate) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// How a field takes part in a strategic merge patch (Go struct tags
/// `patchStrategy` / `patchMergeKey`, OpenAPI `x-kubernetes-patch-strategy` /
/// `x-kubernetes-patch-merge-key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPatchMeta {
    /// `merge` on a list: merge elements (by `merge_key` for lists of objects,
    /// as a set for lists of primitives). Absent: lists are replaced whole.
    pub merge: bool,
    /// `retainKeys` strategy present (maps: drop keys not in the patch's `$retainKeys`).
    pub retain_keys: bool,
    /// The merge key for lists of objects, e.g. `name`, `containerPort`.
    pub merge_key: Option<String>,
}

/// Schema knowledge for SMP: a node of the schema tree.
pub trait PatchMeta: Send + Sync {
    /// The patch meta of field `name` of the object this node describes, and
    /// the node describing its value (for a list: its items; for a map: its
    /// values). `None` if the field is unknown (treated as atomic lists,
    /// merged maps).
    fn field(&self, name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)>;
}

/// Knows nothing: every list is atomic, every map merges.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPatchMeta;

impl PatchMeta for NoPatchMeta {
    fn field(&self, _name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_errors_are_worded_like_gos_decoder() {
        assert_eq!(
            parse_json(b"{\"a\": 1").err().as_deref(),
            Some("unexpected end of JSON input")
        );
        assert_eq!(
            parse_json(b"{} x").err().as_deref(),
            Some("invalid character 'x' after top-level value")
        );
        assert_eq!(
            parse_json(b"[\"]]]]\"]").ok(),
            Some(json!(["]]]]"])),
            "brackets inside strings do not count as nesting"
        );
        let deep = "[".repeat(MAX_NESTING_DEPTH + 1);
        assert_eq!(
            parse_json(deep.as_bytes()).err().as_deref(),
            Some("invalid character '[' exceeded max depth")
        );
    }

    #[test]
    fn values_print_as_gos_percent_v() {
        assert_eq!(
            go_v(&json!({"b": [1, "x"], "a": null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(go_v(&json!(1.5)), "1.5");
        assert_eq!(go_v(&json!(1_000_000.0)), "1e+06");
        assert_eq!(go_v(&json!(0.00001)), "1e-05");
        assert_eq!(go_type(&json!([])), "[]interface {}");
    }

    #[test]
    fn unprocessable_has_kubes_generic_body() {
        let s = unprocessable("detail").status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["reason"], "Invalid");
        assert_eq!(s["message"], GENERIC_UNPROCESSABLE);
        assert_eq!(s["details"], json!({}));
    }
}
