//! The swagger 2.0 document kube-apiserver serves at `/openapi/v2`: every
//! definition (refs as `#/definitions/<name>`, `$ref` siblings kept as
//! upstream has them) and every path of every served resource, as JSON and
//! as gnostic protobuf ([`crate::gnostic`]). kubectl asks for the protobuf
//! (`kubectl apply`/`edit` fall back to it for strategic-merge-patch metadata
//! when v3 is not usable, `kubectl` validation and older clients use it).
//!
//! Both encodings are cached together and regenerated when the resources or
//! the definitions change.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::resource::ResourceInfo;

use crate::definitions::{REF_PREFIX, Snapshot, definitions};
use crate::paths::{self, In, Operation, Param, PathItem};
use crate::served::{Served, fingerprint};
use crate::v3::VERSION;

/// The Content-Type of the protobuf encoding, as kube-openapi answers both
/// `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
/// (what kubectl sends) and `...spec.v2.v1.0+protobuf`: with a `.`, because
/// the `@` form is not a valid media type and client-go rejects it.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

struct V2Set {
    key: u64,
    json: Arc<Served>,
    protobuf: Arc<Served>,
}

fn cached(resources: &[ResourceInfo]) -> Arc<V2Set> {
    static CACHE: Mutex<Option<Arc<V2Set>>> = Mutex::new(None);
    let snapshot = definitions().snapshot();
    let key = fingerprint(resources, snapshot.generation);
    let mut guard = CACHE.lock();
    if let Some(set) = guard.as_ref().filter(|s| s.key == key) {
        return set.clone();
    }
    let doc = document(&snapshot, resources);
    let protobuf = Bytes::from(crate::gnostic::encode(&doc));
    let set = Arc::new(V2Set {
        key,
        json: Arc::new(Served::json(&doc, "application/json")),
        protobuf: Arc::new(Served::raw(protobuf, PROTOBUF_CONTENT_TYPE)),
    });
    *guard = Some(set.clone());
    set
}

/// The swagger 2.0 document.
pub fn v2_json(resources: &[ResourceInfo]) -> Value {
    cached(resources).json.to_value()
}

/// The swagger 2.0 document, serialized (Content-Type `application/json`).
pub fn v2_json_bytes(resources: &[ResourceInfo]) -> Arc<Served> {
    cached(resources).json.clone()
}

/// The swagger 2.0 document as gnostic `openapi.v2.Document` protobuf.
pub fn v2_protobuf(resources: &[ResourceInfo]) -> Vec<u8> {
    cached(resources).protobuf.bytes.to_vec()
}

/// [`v2_protobuf`], with its Content-Type
/// ([`PROTOBUF_CONTENT_TYPE`]) and hash.
pub fn v2_protobuf_bytes(resources: &[ResourceInfo]) -> Arc<Served> {
    cached(resources).protobuf.clone()
}

fn document(snapshot: &Snapshot, resources: &[ResourceInfo]) -> Value {
    let group_versions: BTreeSet<(String, String)> = resources
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect();
    let mut path_map = Map::new();
    for (group, version) in &group_versions {
        for item in paths::group_version_paths(snapshot, resources, group, version) {
            path_map.insert(item.path.clone(), path_item(&item));
        }
    }
    let definitions: Map<String, Value> = snapshot
        .iter()
        .map(|(name, schema)| (name.to_string(), to_v2_schema(schema)))
        .collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": VERSION},
        "paths": path_map,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey"
            }
        },
        "security": [{"BearerToken": []}]
    })
}

fn v2_ref(definition: &str) -> String {
    format!("#/definitions/{definition}")
}

/// Rewrite `$ref`s to `#/definitions/`. A schema that preserves unknown
/// fields (custom resources' `x-kubernetes-preserve-unknown-fields: true`)
/// loses its `properties`, `items` and that marker, as kube-apiserver's
/// `ToStructuralOpenAPIV2` drops them for swagger 2.0 (kubectl's v2 parser
/// would otherwise refuse unknown fields there).
pub fn to_v2_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(o)
            if o.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) =>
        {
            let mut kept = o.clone();
            for k in [
                "x-kubernetes-preserve-unknown-fields",
                "properties",
                "items",
            ] {
                kept.remove(k);
            }
            to_v2_schema(&Value::Object(kept))
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => Value::String(
                            r.strip_prefix(REF_PREFIX)
                                .map(v2_ref)
                                .unwrap_or_else(|| r.clone()),
                        ),
                        // property names are not schema keywords
                        ("properties", Value::Object(props)) => Value::Object(
                            props
                                .iter()
                                .map(|(name, sub)| (name.clone(), to_v2_schema(sub)))
                                .collect(),
                        ),
                        ("enum" | "default" | "example", _) => v.clone(),
                        _ => to_v2_schema(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(to_v2_schema).collect()),
        other => other.clone(),
    }
}

fn param(p: &Param) -> Value {
    let mut m = Map::new();
    m.insert("uniqueItems".into(), json!(true));
    m.insert("type".into(), json!(p.ty.as_str()));
    if !p.description.is_empty() {
        m.insert("description".into(), json!(p.description));
    }
    m.insert("name".into(), json!(p.name));
    m.insert(
        "in".into(),
        json!(match p.location {
            In::Path => "path",
            In::Query => "query",
        }),
    );
    if p.required {
        m.insert("required".into(), json!(true));
    }
    Value::Object(m)
}

fn path_item(item: &PathItem) -> Value {
    let mut m = Map::new();
    for op in &item.operations {
        m.insert(op.method.to_string(), operation(op));
    }
    if !item.params.is_empty() {
        m.insert(
            "parameters".into(),
            Value::Array(item.params.iter().map(param).collect()),
        );
    }
    Value::Object(m)
}

fn operation(op: &Operation) -> Value {
    let mut m = Map::new();
    m.insert("description".into(), json!(op.description));
    if let Some(body) = &op.body {
        m.insert("consumes".into(), json!(body.content_types));
    } else {
        m.insert("consumes".into(), json!(["*/*"]));
    }
    m.insert("produces".into(), json!(op.produces));
    m.insert("schemes".into(), json!(["https"]));
    m.insert("tags".into(), json!([op.tag]));
    m.insert("operationId".into(), json!(op.operation_id));
    let mut params: Vec<Value> = Vec::new();
    if let Some(body) = &op.body {
        params.push(json!({
            "name": "body",
            "in": "body",
            "required": true,
            "schema": {"$ref": v2_ref(&body.definition)}
        }));
    }
    params.extend(op.params.iter().map(param));
    if !params.is_empty() {
        m.insert("parameters".into(), Value::Array(params));
    }
    let mut responses = Map::new();
    for r in &op.responses {
        let mut resp = Map::new();
        resp.insert("description".into(), json!(r.description));
        if let Some(d) = &r.definition {
            resp.insert("schema".into(), json!({"$ref": v2_ref(d)}));
        }
        responses.insert(r.code.to_string(), Value::Object(resp));
    }
    m.insert("responses".into(), Value::Object(responses));
    if !op.action.is_empty() {
        m.insert("x-kubernetes-action".into(), json!(op.action));
        m.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": op.gvk.group, "kind": op.gvk.kind, "version": op.gvk.version}),
        );
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gnostic;
    use crate::paths::tests::deployments;
    use prost::Message;

    #[test]
    fn v2_has_definitions_with_v2_refs_and_the_patch_operation() {
        let doc = v2_json(&[deployments()]);
        assert_eq!(doc["swagger"], json!("2.0"));
        let d = &doc["definitions"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["properties"]["spec"]["$ref"],
            json!("#/definitions/io.k8s.api.apps.v1.DeploymentSpec")
        );
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["consumes"], json!(paths::PATCH_CONTENT_TYPES));
        assert_eq!(patch["parameters"][0]["in"], json!("body"));
        assert!(
            patch["parameters"]
                .as_array()
                .expect("params")
                .iter()
                .any(|p| p["name"] == json!("fieldValidation"))
        );
    }

    #[test]
    fn v2_protobuf_decodes_to_the_same_document() {
        let bytes = v2_protobuf(&[deployments()]);
        let decoded = gnostic::Document::decode(bytes.as_slice()).expect("decodes");
        assert_eq!(decoded, gnostic::document(&v2_json(&[deployments()])));
        let defs = decoded.definitions.expect("definitions");
        let deployment = defs
            .additional_properties
            .iter()
            .find(|d| d.name == "io.k8s.api.apps.v1.Deployment")
            .and_then(|d| d.value.as_ref())
            .expect("Deployment");
        let gvk = deployment
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .and_then(|e| e.value.as_ref())
            .expect("gvk extension");
        let parsed: Value = serde_json::from_str(&gvk.yaml).expect("yaml is json");
        assert_eq!(
            parsed,
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert_eq!(
            v2_protobuf_bytes(&[deployments()]).content_type,
            PROTOBUF_CONTENT_TYPE
        );
    }

    #[test]
    fn preserving_unknown_fields_drops_properties_in_v2_as_kube() {
        let v3 = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"kind": {"type": "string"}},
            "x-kubernetes-group-version-kind": [{"group": "g", "kind": "K", "version": "v1"}]});
        assert_eq!(
            to_v2_schema(&v3),
            json!({"type": "object",
                "x-kubernetes-group-version-kind": [{"group": "g", "kind": "K", "version": "v1"}]})
        );
    }

    #[test]
    fn no_v3_ref_is_left_in_v2_even_under_a_property_named_default() {
        let text = String::from_utf8(v2_json_bytes(&[deployments()]).bytes.to_vec()).expect("utf8");
        assert!(!text.contains("#/components/schemas/"));
        let doc = v2_json(&[deployments()]);
        assert_eq!(
            doc["definitions"]["io.k8s.api.core.v1.LimitRangeItem"]["properties"]["default"]["additionalProperties"]
                ["$ref"],
            json!("#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity")
        );
    }

    #[test]
    fn every_array_schema_has_items_for_kubectls_parser() {
        let doc = v2_json(&[deployments()]);
        fn walk(v: &Value, at: &str) {
            if let Value::Object(o) = v {
                if o.get("type") == Some(&json!("array")) {
                    assert!(o.contains_key("items"), "array without items at {at}");
                }
                for (k, x) in o {
                    walk(x, &format!("{at}/{k}"));
                }
            }
        }
        walk(&doc["definitions"], "");
    }
}
