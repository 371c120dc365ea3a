//! The OpenAPI schema kube publishes for a custom kind
//! (`controller/openapi/builder`): the version's structural schema with
//! `apiVersion`, `kind` and a `metadata` reference to `ObjectMeta` added at
//! the root, under the definition name [`crate::status::definition_name`].
//! [`publish`] / [`unpublish`] put it into (or take it out of) the
//! process-wide `ubernetes_openapi::definitions()`.

use serde_json::{Map, Value, json};
use ubernetes_openapi::Gvk;
use ubernetes_openapi::definitions::schema_ref;

use crate::status::{definition_name, resource_infos, served_names, version};

/// kube's description of a custom resource's `metadata` (what
/// `kubectl explain <crs>.metadata` shows first).
const METADATA_DESC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

const API_VERSION_DESC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The definition name, schema and group/version/kind of one CRD version.
pub fn openapi_schema(crd: &Value, version_name: &str) -> (String, Value, Gvk) {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = served_names(crd)
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut schema = version(crd, version_name)
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if let Some(root) = schema.as_object_mut() {
        root.entry("type").or_insert_with(|| json!("object"));
        let props = root
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = props.as_object_mut() {
            props.insert(
                "apiVersion".into(),
                json!({"description": API_VERSION_DESC, "type": "string"}),
            );
            props.insert(
                "kind".into(),
                json!({"description": KIND_DESC, "type": "string"}),
            );
            props.insert(
                "metadata".into(),
                json!({"description": METADATA_DESC,
                       "$ref": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")}),
            );
        }
    }
    (
        definition_name(group, version_name, kind),
        schema,
        Gvk::new(group, version_name, kind),
    )
}

/// Add every served version's schema to the process-wide definitions.
pub fn publish(crd: &Value) {
    for info in resource_infos(crd) {
        let (name, schema, gvk) = openapi_schema(crd, &info.version);
        ubernetes_openapi::definitions().insert_kind(&name, schema, gvk);
    }
}

/// Remove every served version's schema from the definitions.
pub fn unpublish(crd: &Value) {
    for info in resource_infos(crd) {
        ubernetes_openapi::definitions().remove_kind(&info.definition);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn the_schema_gains_type_meta_and_an_object_meta_reference() {
        let crd = json!({"spec": {"group": "stable.example.com", "names": {"kind": "CronTab", "plural": "crontabs"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}]}});
        let (name, schema, gvk) = openapi_schema(&crd, "v1");
        assert_eq!(name, "com.example.stable.v1.CronTab");
        assert_eq!(gvk, Gvk::new("stable.example.com", "v1", "CronTab"));
        assert_eq!(schema["properties"]["kind"]["type"], "string");
        assert_eq!(
            schema["properties"]["metadata"]["$ref"],
            schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
        assert_eq!(schema["properties"]["spec"]["type"], "object");
    }
}
