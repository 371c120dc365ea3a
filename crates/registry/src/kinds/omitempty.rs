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

/// Go's zero `time.Time` as `k8s-openapi` reads and writes it (see
/// [`SchemaTree::fill_zero_times`]).
pub const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// A Go struct in a walk: its resolved schema, the schema's properties and
/// the object's fields.
type Struct<'s, 'v> = (
    &'s Value,
    &'s Map<String, Value>,
    &'v mut Map<String, Value>,
);

/// A kind's schema: its root and the definitions it refers to.
pub struct SchemaTree {
    root: Value,
    defs: Map<String, Value>,
    /// Whether any object the schema describes has a required time field
    /// (worked out once): without one, [`SchemaTree::fill_zero_times`] has
    /// nothing to fill and does not walk the object (most kinds: only
    /// conditions and a few status types require a time).
    required_time: bool,
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
        let mut tree = Self {
            root,
            defs,
            required_time: true,
        };
        tree.required_time = tree.has_required_time(&tree.root, &mut Vec::new(), 0);
        tree
    }

    /// Whether `schema` (or any schema below it: properties, list items,
    /// map values, definitions it refers to) has a required `date-time`
    /// property. `seen`: definitions already walked (a definition is walked
    /// once, so recursive schemas end). Past 64 levels: `true` (walk).
    fn has_required_time(&self, schema: &Value, seen: &mut Vec<String>, depth: usize) -> bool {
        if depth > 64 {
            return true;
        }
        let mut s = schema;
        for _ in 0..16 {
            if let Some(r) = s.get("$ref").and_then(Value::as_str) {
                let name = r.rsplit('/').next().unwrap_or(r);
                if seen.iter().any(|n| n == name) {
                    return false;
                }
                seen.push(name.to_string());
                match self.defs.get(name) {
                    Some(next) => s = next,
                    None => return false,
                }
                continue;
            }
            match s.get("allOf").and_then(Value::as_array) {
                Some(all) if all.len() == 1 => s = &all[0],
                _ => break,
            }
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            let required = |k: &str| {
                s.get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(k)))
            };
            for (k, child) in props {
                let is_time = self.resolve(child).get("format") == Some(&Value::from("date-time"));
                if (is_time && required(k)) || self.has_required_time(child, seen, depth + 1) {
                    return true;
                }
            }
        }
        ["items", "additionalProperties"].iter().any(|key| {
            s.get(*key)
                .filter(|c| c.is_object())
                .is_some_and(|c| self.has_required_time(c, seen, depth + 1))
        })
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

    /// `v` as a Go struct: its resolved schema, the schema's properties and
    /// its fields. Anything else (a map, a list) is not a struct: `f` is
    /// called on each of its elements instead. `None` too past 64 levels.
    fn as_struct<'s, 'v>(
        &'s self,
        schema: &'s Value,
        v: &'v mut Value,
        depth: usize,
        f: impl FnMut(&Value, &mut Value),
    ) -> Option<Struct<'s, 'v>> {
        if depth > 64 {
            return None;
        }
        let schema = self.resolve(schema);
        match schema.get("properties").and_then(Value::as_object) {
            Some(props) if v.is_object() => v.as_object_mut().map(|map| (schema, props, map)),
            _ => {
                each_element(schema, v, f);
                None
            }
        }
    }

    fn walk(&self, schema: &Value, v: &mut Value, depth: usize) {
        let Some((schema, props, map)) =
            self.as_struct(schema, v, depth, |s, child| self.walk(s, child, depth + 1))
        else {
            return;
        };
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
    }

    /// Whether [`SchemaTree::fill_zero_times`] has anything to do for this
    /// kind (its schema has a required `date-time` field somewhere).
    pub fn fills_zero_times(&self) -> bool {
        self.required_time
    }

    /// Before the typed decode: a required `Time`/`MicroTime` field that is
    /// missing or null holds Go's zero time (`metav1.Condition`'s
    /// `lastTransitionTime` from a Go client that left it unset, which Go
    /// encodes as `null` in JSON and as an empty message in protobuf). kube
    /// decodes it as `time.Time{}`; `k8s-openapi`'s non-`Option` field needs
    /// a value, so [`GO_ZERO_TIME`] stands for it.
    pub fn fill_zero_times(&self, obj: &mut Value) {
        if self.required_time {
            self.zero_times(&self.root, obj, 0, true);
        }
    }

    /// After the typed encode: a time field holding [`GO_ZERO_TIME`] is
    /// `null`, as Go's `metav1.Time` marshals its zero value.
    pub fn null_zero_times(&self, obj: &mut Value) {
        // Only a value that holds the zero time anywhere has one to null: a
        // plain walk of the value is cheaper than the schema-driven one.
        if holds_zero_time(obj) {
            self.zero_times(&self.root, obj, 0, false);
        }
    }

    fn zero_times(&self, schema: &Value, v: &mut Value, depth: usize, fill: bool) {
        let Some((schema, props, map)) = self.as_struct(schema, v, depth, |s, child| {
            self.zero_times(s, child, depth + 1, fill);
        }) else {
            return;
        };
        let required = |k: &str| {
            schema
                .get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(k)))
        };
        for (k, child_schema) in props {
            let is_time =
                self.resolve(child_schema).get("format") == Some(&Value::from("date-time"));
            match map.get_mut(k) {
                Some(child) if is_time => {
                    if fill && child.is_null() && required(k) {
                        *child = Value::from(GO_ZERO_TIME);
                    } else if !fill && child.as_str() == Some(GO_ZERO_TIME) {
                        *child = Value::Null;
                    }
                }
                Some(child) => self.zero_times(child_schema, child, depth + 1, fill),
                None if fill && is_time && required(k) => {
                    map.insert(k.clone(), Value::from(GO_ZERO_TIME));
                }
                None => {}
            }
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

/// Whether [`GO_ZERO_TIME`] is a string anywhere in `v`.
fn holds_zero_time(v: &Value) -> bool {
    match v {
        Value::String(s) => s == GO_ZERO_TIME,
        Value::Array(items) => items.iter().any(holds_zero_time),
        Value::Object(map) => map.values().any(holds_zero_time),
        _ => false,
    }
}

/// Call `f` with each element of a map (a schema of `additionalProperties`
/// only) or a list, and the element's schema.
fn each_element(schema: &Value, v: &mut Value, mut f: impl FnMut(&Value, &mut Value)) {
    match v {
        Value::Object(map) => {
            if let Some(values) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                map.values_mut().for_each(|child| f(values, child));
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                items.iter_mut().for_each(|item| f(item_schema, item));
            }
        }
        _ => {}
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
    fn a_condition_without_its_required_time_decodes_and_encodes_null() {
        use k8s_openapi::api::core::v1::Service;
        let tree = SchemaTree::of::<Service>();
        let cond =
            json!({"type": "StatusUpdate", "status": "True", "reason": "E2E", "message": "m"});
        let mut svc = json!({"metadata": {"name": "s"}, "status": {"conditions": [cond,
            {"type": "B", "status": "True", "reason": "R", "message": "",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}]}});
        tree.fill_zero_times(&mut svc);
        let typed: Service = serde_json::from_value(svc).expect("decodes");
        let mut out = serde_json::to_value(&typed).expect("encodes");
        assert_eq!(
            out["status"]["conditions"][0]["lastTransitionTime"],
            GO_ZERO_TIME
        );
        tree.null_zero_times(&mut out);
        assert_eq!(
            out["status"]["conditions"][0]["lastTransitionTime"],
            Value::Null
        );
        assert_eq!(
            out["status"]["conditions"][1]["lastTransitionTime"],
            "2024-01-01T00:00:00Z"
        );
        // Optional times are not made up.
        let mut pod = json!({"metadata": {"name": "p"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        SchemaTree::of::<Pod>().fill_zero_times(&mut pod);
        assert!(
            pod["status"]["conditions"][0]
                .get("lastTransitionTime")
                .is_none()
        );
    }

    #[test]
    fn only_schemas_with_a_required_time_are_walked_to_fill_one() {
        use k8s_openapi::api::core::v1::{ConfigMap, Service};
        assert!(SchemaTree::of::<Service>().required_time, "its conditions");
        assert!(!SchemaTree::of::<ConfigMap>().required_time);
        let mut cm = json!({"metadata": {"name": "c"}, "data": {"a": GO_ZERO_TIME}});
        let before = cm.clone();
        SchemaTree::of::<ConfigMap>().fill_zero_times(&mut cm);
        assert_eq!(cm, before);
        // Nulling still finds a zero time in an optional time field.
        let mut cm = json!({"metadata": {"name": "c", "creationTimestamp": GO_ZERO_TIME}});
        SchemaTree::of::<ConfigMap>().null_zero_times(&mut cm);
        assert_eq!(cm["metadata"]["creationTimestamp"], Value::Null);
        assert!(holds_zero_time(&json!([{"a": [GO_ZERO_TIME]}])));
        assert!(!holds_zero_time(&json!({"a": "2024-01-01T00:00:00Z"})));
    }

    #[test]
    fn required_empty_strings_stay() {
        let tree = SchemaTree::of::<Pod>();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "", "image": "i"}]}});
        tree.omit_empty(&mut pod);
        assert_eq!(pod["spec"]["containers"][0]["name"], "");
    }
}
