//! Pruning of unknown fields (kube's `apiserver/schema/pruning`): whatever
//! the structural schema does not specify is dropped, except under
//! `x-kubernetes-preserve-unknown-fields: true`, in `additionalProperties`
//! maps, and the `apiVersion`/`kind`/`metadata` of the resource root and of
//! embedded resources. The pruned paths are returned (`spec.foo`,
//! `spec.items[0].bar`) for `fieldValidation=Warn/Strict`
//! ([`unknown_field_messages`]). Unknown members of a root `metadata` are
//! dropped too, as kube's ObjectMeta coercion does.

use serde_json::Value;

use crate::schema::{
    EMBEDDED, PRESERVE, additional_allowed, additional_schema, child, flag, index, items,
    properties,
};

/// The `metav1.ObjectMeta` members kept in a root or embedded `metadata`.
const OBJECT_META_FIELDS: [&str; 16] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "clusterName",
];

/// Prune `obj` in place against schema `s`; `resource_root` when `obj` is a
/// whole custom resource. Returns the pruned paths, in document order.
pub fn prune(s: &Value, obj: &mut Value, resource_root: bool) -> Vec<String> {
    let mut out = Vec::new();
    prune_node(Some(s), obj, "", resource_root, &mut out);
    out
}

/// `unknown field "spec.foo"`, kube's warning / strict-error wording.
pub fn unknown_field_messages(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect()
}

fn prune_node(s: Option<&Value>, v: &mut Value, path: &str, resource: bool, out: &mut Vec<String>) {
    let Some(s) = s else {
        return;
    };
    match v {
        Value::Object(map) => {
            let preserve = flag(s, PRESERVE);
            let props = properties(s);
            let additional = additional_schema(s);
            let allow_any = preserve || additional_allowed(s) || additional.is_some();
            let resource = resource || flag(s, EMBEDDED);
            let mut removed = Vec::new();
            for (k, val) in map.iter_mut() {
                let here = child(path, k);
                if resource && (k == "apiVersion" || k == "kind") {
                    continue;
                }
                if resource && k == "metadata" {
                    if let Value::Object(meta) = val {
                        let unknown: Vec<String> = meta
                            .keys()
                            .filter(|m| !OBJECT_META_FIELDS.contains(&m.as_str()))
                            .cloned()
                            .collect();
                        for m in unknown {
                            meta.remove(&m);
                            out.push(child(&here, &m));
                        }
                    }
                    continue;
                }
                if let Some(p) = props.and_then(|p| p.get(k)) {
                    prune_node(Some(p), val, &here, false, out);
                } else if let Some(ap) = additional {
                    prune_node(Some(ap), val, &here, false, out);
                } else if !allow_any {
                    removed.push(k.clone());
                    out.push(here);
                }
            }
            for k in removed {
                map.remove(&k);
            }
        }
        Value::Array(list) => {
            let it = items(s);
            for (i, item) in list.iter_mut().enumerate() {
                prune_node(it, item, &index(path, i), false, out);
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
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "known": {"type": "string"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "tpl": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
            }}
        }})
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported() {
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "bogus": 1},
            "spec": {"known": "k", "foo": 1, "list": [{"a": "b", "c": 1}], "labels": {"x": "y"}},
            "top": true
        });
        let paths = prune(&schema(), &mut obj, true);
        assert_eq!(
            paths,
            vec!["metadata.bogus", "spec.foo", "spec.list[0].c", "top"]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                   "spec": {"known": "k", "list": [{"a": "b"}], "labels": {"x": "y"}}})
        );
        assert_eq!(
            unknown_field_messages(&paths[1..2]),
            vec!["unknown field \"spec.foo\""]
        );
    }

    #[test]
    fn preserve_unknown_fields_keeps_unknowns_but_prunes_known_subtrees() {
        let mut obj = json!({"spec": {"free": {"anything": [1], "inner": {"a": "x", "b": "y"}}}});
        let paths = prune(&schema(), &mut obj, true);
        assert_eq!(paths, vec!["spec.free.inner.b"]);
        assert_eq!(obj["spec"]["free"]["anything"], json!([1]));
    }

    #[test]
    fn embedded_resources_keep_their_type_and_metadata() {
        let mut obj = json!({"spec": {"tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "x": 1}}});
        let paths = prune(&schema(), &mut obj, true);
        assert_eq!(paths, vec!["spec.tpl.x"]);
        assert_eq!(obj["spec"]["tpl"]["kind"], "Pod");
        assert_eq!(obj["spec"]["tpl"]["metadata"]["name"], "p");
    }
}
