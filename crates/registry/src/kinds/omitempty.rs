//! Go's `omitempty`, applied to a kind's JSON after the typed round trip.
//!
//! `k8s-openapi` keeps `Some("")`, `Some({})` and `Some([])` as written,
//! where kube-apiserver's Go types (almost all optional fields are
//! `omitempty`) drop empty strings, maps and slices on encoding. Without
//! this, `metadata.annotations: {}` sent by `kubectl diff` survives and the
//! live object differs from kube-apiserver's, and RBAC subjects keep
//! `apiGroup: ""`.
//!
//! Which fields are optional comes from the kind's schema: a property not in
//! its object's `required` list. Objects with declared `properties` are Go
//! structs and are kept even when empty (pointer structs such as
//! `emptyDir: {}` are meaningful; non-pointer structs are always encoded);
//! objects with only `additionalProperties` are maps and are dropped when
//! empty.

use serde_json::{Map, Value};

/// A kind's schema: its root and the definitions it refers to.
pub struct SchemaTree {
    root: Value,
    defs: Map<String, Value>,
}

impl SchemaTree {
    /// The schema of `T` (generated once, when the kind is registered).
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let mut generator = schemars::SchemaGenerator::default();
        let root = generator.subschema_for::<T>().to_value();
        let defs = generator
            .definitions()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Self { root, defs }
    }

    fn resolve<'a>(&'a self, mut s: &'a Value) -> &'a Value {
        for _ in 0..16 {
            let Some(r) = s.get("$ref").and_then(Value::as_str) else {
                // schemars may wrap a $ref in allOf to attach a description.
                match s.get("allOf").and_then(Value::as_array) {
                    Some(all) if all.len() == 1 => {
                        s = &all[0];
                        continue;
                    }
                    _ => return s,
                }
            };
            let name = r.rsplit('/').next().unwrap_or(r);
            match self.defs.get(name) {
                Some(next) => s = next,
                None => return s,
            }
        }
        s
    }

    /// Drop empty optional strings, maps and lists from `obj`, recursively.
    pub fn omit_empty(&self, obj: &mut Value) {
        self.walk(&self.root, obj, 0);
    }

    fn walk(&self, schema: &Value, v: &mut Value, depth: usize) {
        if depth > 64 {
            return;
        }
        let schema = self.resolve(schema);
        match v {
            Value::Object(map) => {
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    let required: Vec<&str> = schema
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let mut drop = Vec::new();
                    for (k, child) in map.iter_mut() {
                        let Some(child_schema) = props.get(k) else {
                            continue;
                        };
                        self.walk(child_schema, child, depth + 1);
                        if !required.contains(&k.as_str()) && self.is_empty(child_schema, child) {
                            drop.push(k.clone());
                        }
                    }
                    for k in drop {
                        map.remove(&k);
                    }
                } else if let Some(values) = schema.get("additionalProperties")
                    && values.is_object()
                {
                    for child in map.values_mut() {
                        self.walk(values, child, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for item in items {
                        self.walk(item_schema, item, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    fn is_empty(&self, schema: &Value, v: &Value) -> bool {
        match v {
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty() && self.resolve(schema).get("properties").is_none(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::rbac::v1::RoleBinding;
    use serde_json::json;

    #[test]
    fn empty_optional_maps_and_strings_go_but_structs_stay() {
        let tree = SchemaTree::of::<Pod>();
        let mut pod = json!({
            "metadata": {"name": "p", "annotations": {}, "labels": {"a": "b"}, "generateName": ""},
            "spec": {"containers": [{"name": "c", "image": "i", "env": [], "resources": {}}],
                     "volumes": [{"name": "v", "emptyDir": {}}]}
        });
        tree.omit_empty(&mut pod);
        assert!(pod["metadata"].get("annotations").is_none());
        assert!(pod["metadata"].get("generateName").is_none());
        assert_eq!(pod["metadata"]["labels"], json!({"a": "b"}));
        assert!(pod["spec"]["containers"][0].get("env").is_none());
        assert_eq!(pod["spec"]["containers"][0]["resources"], json!({}));
        assert_eq!(pod["spec"]["volumes"][0]["emptyDir"], json!({}));
    }

    #[test]
    fn rbac_subjects_lose_an_empty_api_group() {
        let tree = SchemaTree::of::<RoleBinding>();
        let mut rb = json!({
            "metadata": {"name": "rb"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "ns", "apiGroup": ""}]
        });
        tree.omit_empty(&mut rb);
        assert!(rb["subjects"][0].get("apiGroup").is_none());
        assert_eq!(rb["roleRef"]["kind"], "Role");
    }

    #[test]
    fn required_empty_strings_stay() {
        let tree = SchemaTree::of::<Pod>();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "", "image": "i"}]}});
        tree.omit_empty(&mut pod);
        assert_eq!(pod["spec"]["containers"][0]["name"], "");
    }
}
