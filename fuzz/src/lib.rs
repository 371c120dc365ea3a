//! Helpers shared by the fuzz targets in `fuzz_targets/`: how one fuzz input
//! becomes a (document, patch) pair, the fixed strategic-merge-patch schema
//! the SMP target patches with, and the checks every target makes on what
//! the server would send back.
//!
//! Inputs stay human-readable so the seed corpus under `corpus/` is real
//! request bodies: a patch target's input is `<document JSON> NUL <patch>`
//! (a NUL byte cannot occur in valid JSON text), or just `<patch>`, applied
//! to [`BASE_DOC`].

#![forbid(unsafe_code)]

pub mod codec;

/// The apiserver's protobuf codec, compiled from the apiserver's own source
/// file (it needs only `ubernetes_apimachinery`, `serde_json` and `base64`),
/// so the decoder is fuzzed exactly without building the whole apiserver.
/// Not in this crate's unit-test build: the file's own tests (which need
/// `k8s-pb`) run in the apiserver crate.
#[cfg(not(test))]
#[allow(dead_code, clippy::all)]
#[path = "../../crates/apiserver/src/protobuf.rs"]
pub mod protobuf;

/// The registry's generated protobuf messages (one file per package), the
/// schema `protobuf` reads when built here (`cfg(fuzzing)`).
#[cfg(not(test))]
#[allow(dead_code, clippy::all)]
#[path = "../../crates/registry/src/kinds/protobuf/mod.rs"]
pub mod pb_generated;

use serde_json::Value;
use ubernetes_apimachinery::patch::{FieldPatchMeta, PatchMeta, parse_json};

/// The document a patch-only input is applied to: a small Pod with the
/// lists strategic merge patch treats specially.
pub const BASE_DOC: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","labels":{"app":"web","tier":"front"},"finalizers":["a/b"]},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80,"protocol":"TCP"}],"env":[{"name":"A","value":"1"}]}],"volumes":[{"name":"v","emptyDir":{}}],"tolerations":[{"key":"k","operator":"Exists"}]}}"#;

/// Split a patch target's input into the document (parsed as the server
/// parses stored objects, bounded depth) and the raw patch bytes. `None`
/// when the document part is not a JSON object: patches are only ever
/// applied to stored objects.
pub fn doc_and_patch(data: &[u8]) -> Option<(Value, &[u8])> {
    let (doc_bytes, patch) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (BASE_DOC.as_bytes(), data),
    };
    match parse_json(doc_bytes).ok()? {
        doc @ Value::Object(_) => Some((doc, patch)),
        _ => None,
    }
}

/// What the server does with a patch result: serialise it (for storage and
/// the response) and read it back. Panics (a fuzz finding) if the value does
/// not survive that.
pub fn assert_serialises(v: &Value) {
    let bytes = match serde_json::to_vec(v) {
        Ok(b) => b,
        Err(e) => panic!("result does not serialise: {e}"),
    };
    let back: Value = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => panic!("serialised result does not parse: {e}"),
    };
    assert!(
        same_json(&back, v),
        "result changed through a JSON round trip: {v} became {back}"
    );
}

/// Structural equality, with floats equal up to a relative 1e-12 (without
/// `serde_json`'s `float_roundtrip` feature a float may come back one unit in
/// the last place off; no Kubernetes field depends on that).
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| same_json(xv, yv)))
        }
        _ => a == b,
    }
}

/// A fixed SMP schema with every strategy, valid at any depth (each field's
/// value is described by this same schema), so fuzzed patches reach merge
/// keys, primitive-set merges and `retainKeys` wherever they nest:
///
/// | field | strategy |
/// | --- | --- |
/// | `containers`, `initContainers`, `env`, `volumes`, `volumeMounts` | merge by `name` |
/// | `ports` | merge by `containerPort` |
/// | `tolerations` | merge by `key` |
/// | `finalizers`, `args` | merge as a set of primitives |
/// | `strategy`, `volumeSource` | `retainKeys` |
/// | `volumes` | `retainKeys` too (items are retainKeys maps in kube) |
/// | anything else | unknown: atomic lists, merged maps |
#[derive(Debug, Clone, Copy, Default)]
pub struct FixedPatchMeta;

impl PatchMeta for FixedPatchMeta {
    fn field(&self, name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)> {
        let merge_by = |key: &str| FieldPatchMeta {
            merge: true,
            retain_keys: false,
            merge_key: Some(key.to_string()),
        };
        let meta = match name {
            "containers" | "initContainers" | "env" | "volumeMounts" => merge_by("name"),
            "volumes" => FieldPatchMeta {
                retain_keys: true,
                ..merge_by("name")
            },
            "ports" => merge_by("containerPort"),
            "tolerations" => merge_by("key"),
            "finalizers" | "args" => FieldPatchMeta {
                merge: true,
                ..FieldPatchMeta::default()
            },
            "strategy" | "volumeSource" => FieldPatchMeta {
                retain_keys: true,
                ..FieldPatchMeta::default()
            },
            _ => return None,
        };
        Some((meta, Box::new(FixedPatchMeta)))
    }
}

/// The input as text, as the server sees a query parameter (invalid UTF-8
/// replaced, as a lossy percent-decoding would).
pub fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_without_nul_is_a_patch_on_the_base_doc() {
        let (doc, patch) = doc_and_patch(br#"{"a":1}"#).expect("base doc parses");
        assert_eq!(doc["kind"], "Pod");
        assert_eq!(patch, br#"{"a":1}"#);
    }

    #[test]
    fn nul_separates_document_from_patch() {
        let (doc, patch) = doc_and_patch(b"{\"x\":[1]}\0[]").expect("doc parses");
        assert_eq!(doc, serde_json::json!({"x": [1]}));
        assert_eq!(patch, b"[]");
    }

    #[test]
    fn floats_one_ulp_apart_are_the_same_json() {
        let a = serde_json::json!({"x": [0.1_f64]});
        let b = serde_json::json!({"x": [0.1_f64 + f64::EPSILON / 8.0]});
        assert!(same_json(&a, &b));
        assert!(!same_json(&a, &serde_json::json!({"x": [0.2]})));
        assert!(!same_json(&a, &serde_json::json!({"x": ["0.1"]})));
    }

    #[test]
    fn non_object_documents_are_skipped() {
        assert!(doc_and_patch(b"[1]\0{}").is_none());
        assert!(doc_and_patch(b"{\0{}").is_none());
    }

    #[test]
    fn fixed_meta_merges_containers_by_name_at_any_depth() {
        let (meta, child) = FixedPatchMeta.field("containers").expect("known field");
        assert!(meta.merge);
        assert_eq!(meta.merge_key.as_deref(), Some("name"));
        assert!(child.field("ports").is_some());
        assert!(FixedPatchMeta.field("image").is_none());
    }
}
