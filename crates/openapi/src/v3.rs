//! OpenAPI v3 documents as kube-apiserver serves them under `/openapi/v3`:
//! the root (`{"paths": {"apis/apps/v1": {"serverRelativeURL":
//! "/openapi/v3/apis/apps/v1?hash=<HASH>"}, …}}`) and one OpenAPI 3.0
//! document per path (`api`, `api/v1`, `apis`, `apis/<g>`, `apis/<g>/<v>`,
//! `version`) with the schemas reachable from its operations in
//! `components.schemas`.
//!
//! kubectl reads these for `explain` (it finds the kind by
//! `x-kubernetes-group-version-kind` on the operations and the schemas) and
//! to decide that the server validates fields (`fieldValidation` among the
//! PATCH operation's parameters, `QueryParamVerifierV3`). A `$ref` with
//! siblings is wrapped in `allOf`, as kube-openapi does for v3.
//!
//! All documents are generated together, cached, and regenerated when the
//! resources or the definitions change.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use ubernetes_apimachinery::resource::ResourceInfo;

use crate::definitions::{Snapshot, definitions, ref_target, schema_ref};
use crate::paths::{self, In, Operation, Param, PathItem};
use crate::served::{Served, fingerprint};

/// The Kubernetes version the documents claim.
pub const VERSION: &str = "v1.37.0";

const META_DEFINITIONS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
];

/// Every v3 document of one generation.
struct V3Set {
    key: u64,
    root: Arc<Served>,
    docs: BTreeMap<String, Arc<Served>>,
}

fn cached(resources: &[ResourceInfo]) -> Arc<V3Set> {
    static CACHE: Mutex<Option<Arc<V3Set>>> = Mutex::new(None);
    let snapshot = definitions().snapshot();
    let key = fingerprint(resources, snapshot.generation);
    let mut guard = CACHE.lock();
    if let Some(set) = guard.as_ref().filter(|s| s.key == key) {
        return set.clone();
    }
    let set = Arc::new(build(&snapshot, resources, key));
    *guard = Some(set.clone());
    set
}

/// The `/openapi/v3` root document.
pub fn v3_root(resources: &[ResourceInfo]) -> Value {
    cached(resources).root.to_value()
}

/// The `/openapi/v3` root, serialized (Content-Type `application/json`).
pub fn v3_root_bytes(resources: &[ResourceInfo]) -> Arc<Served> {
    cached(resources).root.clone()
}

/// The OpenAPI 3.0 document of one group version (`""`/`v1` for `/api/v1`);
/// `None` if no resource is served there.
pub fn v3_group_version(resources: &[ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let key = if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    };
    v3_document_bytes(resources, &key).map(|d| d.to_value())
}

/// The document served at `/openapi/v3/<path>` (`path` without the leading
/// slash, e.g. `apis/apps/v1`), serialized (Content-Type `application/json`).
pub fn v3_document_bytes(resources: &[ResourceInfo], path: &str) -> Option<Arc<Served>> {
    cached(resources).docs.get(path.trim_matches('/')).cloned()
}

fn build(snapshot: &Snapshot, resources: &[ResourceInfo], key: u64) -> V3Set {
    let mut docs = BTreeMap::new();
    let group_versions: BTreeSet<(String, String)> = resources
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect();
    let groups: BTreeSet<&str> = group_versions
        .iter()
        .map(|(g, _)| g.as_str())
        .filter(|g| !g.is_empty())
        .collect();

    for (group, version) in &group_versions {
        let mut items = paths::group_version_paths(snapshot, resources, group, version);
        items.insert(0, discovery_path(group, version));
        let name = if group.is_empty() {
            format!("api/{version}")
        } else {
            format!("apis/{group}/{version}")
        };
        docs.insert(
            name,
            Arc::new(Served::json(
                &document(snapshot, &items),
                "application/json",
            )),
        );
    }
    let simple: Vec<(String, PathItem)> = std::iter::once((
        "api".to_string(),
        simple_path(
            "/api/",
            "getCoreAPIVersions",
            "get available API versions",
            "core",
            "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        ),
    ))
    .chain(std::iter::once((
        "apis".to_string(),
        simple_path(
            "/apis/",
            "getAPIVersions",
            "get available API versions",
            "apis",
            "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
        ),
    )))
    .chain(groups.iter().map(|g| {
        let camel = camel_group(g);
        (
            format!("apis/{g}"),
            simple_path(
                &format!("/apis/{g}/"),
                &format!("get{camel}APIGroup"),
                "get information of a group",
                &lower_first(&camel),
                "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
            ),
        )
    }))
    .chain(std::iter::once((
        "version".to_string(),
        simple_path(
            "/version/",
            "getCodeVersion",
            "get the version information for this server",
            "version",
            "io.k8s.apimachinery.pkg.version.Info",
        ),
    )))
    .collect();
    for (name, item) in simple {
        docs.insert(
            name,
            Arc::new(Served::json(
                &document(snapshot, &[item]),
                "application/json",
            )),
        );
    }

    let mut root_paths = Map::new();
    for (name, doc) in &docs {
        root_paths.insert(
            name.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{name}?hash={}", doc.hash)}),
        );
    }
    let root = Served::json(&json!({"paths": root_paths}), "application/json");
    V3Set {
        key,
        root: Arc::new(root),
        docs,
    }
}

/// `GET /apis/<g>/<v>/`: the APIResourceList of the group version.
fn discovery_path(group: &str, version: &str) -> PathItem {
    let camel = camel_group(group);
    let tag = format!("{}_{version}", lower_first(&camel));
    simple_path(
        &format!("{}/", paths::gv_prefix(group, version)),
        &format!("get{camel}{}APIResources", upper_first(version)),
        "get available resources",
        &tag,
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    )
}

fn simple_path(path: &str, id: &str, description: &str, tag: &str, definition: &str) -> PathItem {
    PathItem {
        path: path.to_string(),
        params: Vec::new(),
        operations: vec![Operation {
            method: "get",
            operation_id: id.to_string(),
            description: description.to_string(),
            tag: tag.to_string(),
            action: "",
            gvk: crate::definitions::Gvk::new("", "", ""),
            params: Vec::new(),
            body: None,
            responses: vec![
                paths::Response {
                    code: 200,
                    description: "OK",
                    definition: Some(definition.to_string()),
                },
                paths::Response {
                    code: 401,
                    description: "Unauthorized",
                    definition: None,
                },
            ],
            produces: vec![
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ],
        }],
    }
}

fn camel_group(group: &str) -> String {
    if group.is_empty() {
        return "Core".to_string();
    }
    group
        .trim_end_matches(".k8s.io")
        .split(['.', '-'])
        .map(upper_first)
        .collect()
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_lowercase().chain(c).collect())
        .unwrap_or_default()
}

/// An OpenAPI 3.0 document for these paths.
fn document(snapshot: &Snapshot, items: &[PathItem]) -> Value {
    let mut roots: BTreeSet<String> = META_DEFINITIONS.iter().map(|s| s.to_string()).collect();
    let mut path_map = Map::new();
    for item in items {
        for op in &item.operations {
            if let Some(body) = &op.body {
                roots.insert(body.definition.clone());
            }
            for r in &op.responses {
                if let Some(d) = &r.definition {
                    roots.insert(d.clone());
                }
            }
        }
        path_map.insert(item.path.clone(), path_item(item));
    }
    let reachable = reachable(snapshot, roots);
    let mut schemas = Map::new();
    for name in reachable {
        if let Some(schema) = snapshot.get(&name) {
            schemas.insert(name, to_v3_schema(schema));
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION},
        "paths": path_map,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey"
                }
            }
        },
        "security": [{"BearerToken": []}]
    })
}

/// The definitions reachable from `roots` through `$ref`s.
pub(crate) fn reachable(snapshot: &Snapshot, roots: BTreeSet<String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = snapshot.get(&name) {
            collect_refs(schema, &mut todo);
        }
    }
    seen
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(t) = o.get("$ref").and_then(Value::as_str).and_then(ref_target) {
                out.push(t.to_string());
            }
            o.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// kube-openapi's v3 shape: a `$ref` with siblings becomes
/// `{"allOf": [{"$ref": …}], <siblings>}`.
pub fn to_v3_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(o) => {
            let mut out = Map::new();
            let wrap = o.contains_key("$ref") && o.len() > 1;
            for (k, v) in o {
                if k == "$ref" && wrap {
                    out.insert("allOf".into(), json!([{"$ref": v}]));
                } else if k == "properties" || k == "x-kubernetes-group-version-kind" {
                    // property names and GVK entries are not schemas
                    out.insert(
                        k.clone(),
                        match v {
                            Value::Object(props) if k == "properties" => Value::Object(
                                props
                                    .iter()
                                    .map(|(pk, pv)| (pk.clone(), to_v3_schema(pv)))
                                    .collect(),
                            ),
                            other => other.clone(),
                        },
                    );
                } else if matches!(k.as_str(), "enum" | "default" | "example" | "required") {
                    out.insert(k.clone(), v.clone());
                } else {
                    out.insert(k.clone(), to_v3_schema(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v3_schema).collect()),
        other => other.clone(),
    }
}

fn param(p: &Param) -> Value {
    let mut m = Map::new();
    if !p.description.is_empty() {
        m.insert("description".into(), json!(p.description));
    }
    m.insert(
        "in".into(),
        json!(match p.location {
            In::Path => "path",
            In::Query => "query",
        }),
    );
    m.insert("name".into(), json!(p.name));
    if p.required {
        m.insert("required".into(), json!(true));
    }
    m.insert(
        "schema".into(),
        json!({"type": p.ty.as_str(), "uniqueItems": true}),
    );
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
    m.insert("operationId".into(), json!(op.operation_id));
    if !op.params.is_empty() {
        m.insert(
            "parameters".into(),
            Value::Array(op.params.iter().map(param).collect()),
        );
    }
    if let Some(body) = &op.body {
        let content: Map<String, Value> = body
            .content_types
            .iter()
            .map(|ct| {
                (
                    ct.to_string(),
                    json!({"schema": {"$ref": schema_ref(&body.definition)}}),
                )
            })
            .collect();
        m.insert(
            "requestBody".into(),
            json!({"content": content, "required": true}),
        );
    }
    let mut responses = Map::new();
    for r in &op.responses {
        let mut resp = Map::new();
        if let Some(d) = &r.definition {
            let content: Map<String, Value> = op
                .produces
                .iter()
                .map(|ct| (ct.to_string(), json!({"schema": {"$ref": schema_ref(d)}})))
                .collect();
            resp.insert("content".into(), Value::Object(content));
        }
        resp.insert("description".into(), json!(r.description));
        responses.insert(r.code.to_string(), Value::Object(resp));
    }
    m.insert("responses".into(), Value::Object(responses));
    m.insert("tags".into(), json!([op.tag]));
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
    use crate::paths::tests::deployments;

    #[test]
    fn apps_v1_document_has_deployment_patch_with_field_validation() {
        let doc = v3_group_version(&[deployments()], "apps", "v1").expect("apps/v1");
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-action"], json!("patch"));
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "kind": "Deployment", "version": "v1"})
        );
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .expect("parameters")
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert!(names.contains(&"fieldValidation"), "{names:?}");
        assert!(names.contains(&"force"), "{names:?}");
        let content = patch["requestBody"]["content"]
            .as_object()
            .expect("content");
        for ct in paths::PATCH_CONTENT_TYPES {
            assert!(content.contains_key(*ct), "missing {ct}");
        }
    }

    #[test]
    fn apps_v1_schemas_include_the_reachable_closure_in_v3_shape() {
        let doc = v3_group_version(&[deployments()], "apps", "v1").expect("apps/v1");
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        for name in [
            "io.k8s.api.apps.v1.Deployment",
            "io.k8s.api.apps.v1.DeploymentList",
            "io.k8s.api.core.v1.PodSpec",
            "io.k8s.api.autoscaling.v1.Scale",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        ] {
            assert!(schemas.contains_key(name), "missing {name}");
        }
        assert!(!schemas.contains_key("io.k8s.api.rbac.v1.Role"));
        let spec = &schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"];
        assert_eq!(
            spec["allOf"],
            json!([{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}])
        );
        assert!(spec.get("$ref").is_none());
    }

    #[test]
    fn root_points_at_every_document_with_its_hash() {
        let root = v3_root(&[deployments()]);
        let url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .expect("url");
        let doc = v3_document_bytes(&[deployments()], "apis/apps/v1").expect("doc");
        assert_eq!(url, format!("/openapi/v3/apis/apps/v1?hash={}", doc.hash));
        for key in ["api", "apis", "apis/apps", "version"] {
            assert!(root["paths"].get(key).is_some(), "missing {key}");
            assert!(v3_document_bytes(&[deployments()], key).is_some());
        }
        assert!(v3_group_version(&[deployments()], "batch", "v1").is_none());
    }

    #[test]
    fn documents_are_cached_until_resources_change() {
        let a = v3_document_bytes(&[deployments()], "apis/apps/v1").expect("doc");
        let b = v3_document_bytes(&[deployments()], "apis/apps/v1").expect("doc");
        assert!(Arc::ptr_eq(&a, &b) || a == b);
        let mut changed = deployments();
        changed.verbs.retain(|v| v != "patch");
        let c = v3_document_bytes(&[changed], "apis/apps/v1").expect("doc");
        assert_ne!(a.hash, c.hash);
    }
}
