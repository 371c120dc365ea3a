//! [`Schema`]: what server-side apply needs to know about one node of an
//! object's schema: is it a struct (named properties), a map
//! (`additionalProperties`, `x-kubernetes-map-type: atomic|granular`), a list
//! (`x-kubernetes-list-type: atomic|set|map` with
//! `x-kubernetes-list-map-keys`) or a scalar.
//!
//! One borrowed view serves both sources: the built-in definitions of
//! [`ubernetes_openapi::definitions()`] (`$ref`s resolved through a
//! [`Snapshot`]) and a CRD's raw `openAPIV3Schema`. As kube does for
//! built-in types, a list with `x-kubernetes-patch-merge-key` and no list
//! type is a map-list keyed by the merge key. Where nothing is known (no
//! schema, `x-kubernetes-preserve-unknown-fields`) the shape is deduced from
//! the value: objects are granular maps, lists atomic.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use serde_json::Value;
use ubernetes_openapi::Snapshot;

static NULL: Value = Value::Null;

static STRING: LazyLock<Value> = LazyLock::new(|| serde_json::json!({"type": "string"}));

/// Struct fields that built-in kinds hold by value (not by pointer) along
/// the chains from the root that matter for a create.
const VALUE_STRUCT_FIELDS: &[&str] = &[
    "metadata",
    "spec",
    "status",
    "template",
    "jobTemplate",
    "strategy",
    "updateStrategy",
    "loadBalancer",
];

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// How the items of a list are identified and merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole.
    Atomic,
    /// Scalars identified by value.
    Set,
    /// Objects identified by these key fields.
    Map(Vec<String>),
}

/// The shape of a schema node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// An object with named properties; `atomic` when
    /// `x-kubernetes-map-type: atomic` (`+structType=atomic`).
    Struct { atomic: bool },
    /// An object whose keys are data (`additionalProperties`).
    Map { atomic: bool },
    /// A list.
    List(ListType),
    /// A string, number, boolean or int-or-string.
    Scalar,
    /// Nothing is known: deduce from the value.
    Untyped,
}

/// A node of a schema tree (cheap to copy: it borrows).
#[derive(Debug, Clone, Copy)]
pub struct Schema<'a> {
    defs: Option<&'a Snapshot>,
    node: &'a Value,
    /// The root of a CRD schema, whose `metadata` is `ObjectMeta`.
    crd_root: bool,
    /// `node` lives in `defs` (or is static), so its shape may be
    /// remembered by address for the snapshot's generation ([`SHAPES`]).
    memo: bool,
}

/// A hasher for addresses: one multiply (the key is a pointer and a
/// generation, no attacker chooses it).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Shapes already worked out, per thread, by schema node address, for one
/// definitions generation at a time. A node's shape takes several map
/// lookups (`$ref`, `type`, `items`, `properties`, extensions) and every
/// walk asks for it at every node of every object, several walks per
/// apply. The snapshot is immutable, so a node at an address of one
/// generation keeps its shape while the generation is current; a new
/// generation starts afresh.
type ShapeMemo = (
    u64,
    HashMap<usize, Shape, BuildHasherDefault<AddressHasher>>,
);

thread_local! {
    static SHAPES: RefCell<ShapeMemo> = RefCell::new((0, HashMap::default()));
}

/// More nodes than every definition has together: past it the memo starts
/// again (a guard, not a limit reached in practice).
const SHAPES_MAX: usize = 200_000;

impl<'a> Schema<'a> {
    /// A node about which nothing is known.
    pub fn unknown() -> Schema<'static> {
        Schema {
            defs: None,
            node: &NULL,
            crd_root: false,
            memo: false,
        }
    }

    /// The schema of a built-in (or registered) definition, e.g.
    /// `io.k8s.api.apps.v1.Deployment`; unknown if it is not defined.
    pub fn definition(defs: &'a Snapshot, name: &str) -> Schema<'a> {
        Schema {
            defs: Some(defs),
            node: defs.get(name).unwrap_or(&NULL),
            crd_root: false,
            memo: true,
        }
    }

    /// A raw JSON schema (a CRD version's `openAPIV3Schema`). With `defs`,
    /// its `metadata` is described by `ObjectMeta`, as kube does for custom
    /// resources; `$ref`s, if any, resolve through `defs`.
    pub fn json(node: &'a Value, defs: Option<&'a Snapshot>) -> Schema<'a> {
        Schema {
            defs,
            node,
            crd_root: true,
            memo: false,
        }
    }

    /// The node with `$ref`s (and one-element `allOf`) followed.
    fn resolved(&self) -> &'a Value {
        match self.defs {
            Some(defs) => defs.resolve(self.node),
            None => self.node,
        }
    }

    fn child(&self, node: &'a Value) -> Schema<'a> {
        Schema {
            defs: self.defs,
            node,
            crd_root: false,
            memo: self.memo,
        }
    }

    /// An extension read from the node itself, else from what it resolves to.
    fn extension(&self, name: &str) -> Option<&'a Value> {
        self.node.get(name).or_else(|| self.resolved().get(name))
    }

    /// The shape of this node.
    pub fn shape(&self) -> Shape {
        let Some(defs) = self.defs.filter(|_| self.memo) else {
            return self.compute_shape();
        };
        let address = std::ptr::from_ref(self.node) as usize;
        let known = SHAPES.with(|memo| {
            let memo = memo.borrow();
            (memo.0 == defs.generation)
                .then(|| memo.1.get(&address).cloned())
                .flatten()
        });
        if let Some(shape) = known {
            return shape;
        }
        let shape = self.compute_shape();
        SHAPES.with(|memo| {
            let mut memo = memo.borrow_mut();
            if memo.0 != defs.generation || memo.1.len() >= SHAPES_MAX {
                memo.0 = defs.generation;
                memo.1.clear();
            }
            memo.1.insert(address, shape.clone());
        });
        shape
    }

    fn compute_shape(&self) -> Shape {
        let s = self.resolved();
        if !s.is_object() {
            return Shape::Untyped;
        }
        if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
            return Shape::Scalar;
        }
        let atomic_map = self
            .extension("x-kubernetes-map-type")
            .and_then(Value::as_str)
            == Some("atomic");
        let ty = s.get("type").and_then(Value::as_str);
        if ty == Some("array") || s.get("items").is_some() {
            return Shape::List(self.list_type());
        }
        if s.get("properties").is_some_and(Value::is_object) {
            return Shape::Struct { atomic: atomic_map };
        }
        if s.get("additionalProperties")
            .is_some_and(|a| a.is_object() || a == &Value::Bool(true))
            || ty == Some("object")
        {
            return Shape::Map { atomic: atomic_map };
        }
        match ty {
            Some("string" | "integer" | "number" | "boolean") => Shape::Scalar,
            _ => Shape::Untyped,
        }
    }

    fn list_type(&self) -> ListType {
        match self
            .extension("x-kubernetes-list-type")
            .and_then(Value::as_str)
        {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys = self
                    .extension("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| {
                        k.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                ListType::Map(keys)
            }
            Some(_) => ListType::Atomic,
            None => match self
                .extension("x-kubernetes-patch-merge-key")
                .and_then(Value::as_str)
            {
                Some(key) => ListType::Map(vec![key.to_string()]),
                None => ListType::Atomic,
            },
        }
    }

    /// The schema of field `name` of a struct or map: `(schema, declared)`,
    /// where `declared` says it is a named property (not a map key).
    /// `None` for a struct that does not declare it and takes no other keys.
    pub fn field(&self, name: &str) -> Option<(Schema<'a>, bool)> {
        if self.crd_root
            && name == "metadata"
            && let Some(defs) = self.defs
            && let Some(meta) = defs.get(OBJECT_META)
        {
            return Some((self.child(meta), true));
        }
        let s = self.resolved();
        if let Some(property) = s.get("properties").and_then(|p| p.get(name)) {
            return Some((self.child(property), true));
        }
        if self.crd_root && (name == "apiVersion" || name == "kind") {
            // kube adds the type meta to every CRD schema.
            return Some((self.child(&STRING), true));
        }
        match s.get("additionalProperties") {
            Some(a) if a.is_object() => Some((self.child(a), false)),
            Some(Value::Bool(false)) => None,
            Some(_) => Some((Schema::unknown_with(self.defs), false)),
            None if s.get("properties").is_some_and(Value::is_object)
                && s.get("x-kubernetes-preserve-unknown-fields")
                    .and_then(Value::as_bool)
                    != Some(true) =>
            {
                None
            }
            None => Some((Schema::unknown_with(self.defs), false)),
        }
    }

    fn unknown_with(defs: Option<&'a Snapshot>) -> Schema<'a> {
        Schema {
            defs,
            node: &NULL,
            crd_root: false,
            memo: false,
        }
    }

    /// The schema of a list's items.
    pub fn items(&self) -> Schema<'a> {
        match self.resolved().get("items") {
            Some(items) => self.child(items),
            None => Schema::unknown_with(self.defs),
        }
    }

    /// The object kube compares a create against: the Go zero value of a
    /// built-in kind, whose value-type struct fields (`metadata`, `spec`,
    /// `status`, a `template` and its `metadata`/`spec`, a few strategies)
    /// are present as empty objects, so that creating an object does not
    /// own `spec` itself. A custom resource's zero value is `{}`.
    pub fn zero_object(&self) -> Value {
        if self.crd_root || self.defs.is_none() {
            return Value::Object(serde_json::Map::new());
        }
        self.zero_struct(0)
    }

    /// The Go zero value of a struct: value-type struct fields recursively,
    /// required (non-`omitempty`) fields as `null` or their scalar zero.
    fn zero_struct(&self, depth: usize) -> Value {
        let mut out = serde_json::Map::new();
        let resolved = self.resolved();
        let Some(properties) = resolved.get("properties").and_then(Value::as_object) else {
            return Value::Object(out);
        };
        let required: Vec<&str> = resolved
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in properties {
            let child = self.child(property);
            let value_type = VALUE_STRUCT_FIELDS.contains(&name.as_str())
                && property.get("$ref").is_some()
                && matches!(child.shape(), Shape::Struct { atomic: false });
            if value_type && name == "metadata" {
                out.insert(name.clone(), serde_json::json!({"creationTimestamp": null}));
            } else if value_type && depth < 8 {
                out.insert(name.clone(), child.zero_struct(depth + 1));
            } else if required.contains(&name.as_str()) {
                let zero = match child.resolved().get("type").and_then(Value::as_str) {
                    Some("string") if child.shape() == Shape::Scalar => {
                        Value::String(String::new())
                    }
                    Some("integer" | "number") => Value::from(0),
                    Some("boolean") => Value::Bool(false),
                    _ => Value::Null,
                };
                out.insert(name.clone(), zero);
            }
        }
        Value::Object(out)
    }

    /// The default of a map-list key field missing from an item: the
    /// schema's `default`, else, for built-in kinds (items behind a `$ref`),
    /// `TCP` for `protocol`, the one defaulted key upstream's schemas carry
    /// (container, service and endpoint ports).
    pub fn key_default(&self, key: &str) -> Option<Value> {
        let items = self.items();
        let (field, _) = items.field(key)?;
        if let Some(d) = field.resolved().get("default") {
            return Some(d.clone());
        }
        let built_in = items.node.get("$ref").is_some();
        (built_in && key == "protocol").then(|| Value::String("TCP".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ubernetes_openapi::definitions;

    fn at<'a>(mut s: Schema<'a>, path: &[&str]) -> Schema<'a> {
        for p in path {
            s = if *p == "[]" {
                s.items()
            } else {
                s.field(p).expect(p).0
            };
        }
        s
    }

    #[test]
    fn built_in_containers_are_a_map_list_keyed_by_name() {
        let defs = definitions().snapshot();
        let d = Schema::definition(&defs, "io.k8s.api.apps.v1.Deployment");
        let c = at(d, &["spec", "template", "spec", "containers"]);
        assert_eq!(c.shape(), Shape::List(ListType::Map(vec!["name".into()])));
        assert_eq!(at(c, &["[]"]).shape(), Shape::Struct { atomic: false });
        assert_eq!(at(c, &["[]", "image"]).shape(), Shape::Scalar);
        let ports = at(c, &["[]", "ports"]);
        assert_eq!(
            ports.shape(),
            Shape::List(ListType::Map(vec![
                "containerPort".into(),
                "protocol".into()
            ]))
        );
        assert_eq!(ports.key_default("protocol"), Some(json!("TCP")));
    }

    #[test]
    fn built_in_maps_sets_and_atomics_are_recognised() {
        let defs = definitions().snapshot();
        let d = Schema::definition(&defs, "io.k8s.api.apps.v1.Deployment");
        assert_eq!(
            at(d, &["metadata", "labels"]).shape(),
            Shape::Map { atomic: false }
        );
        let (_, declared) = at(d, &["metadata", "labels"]).field("app").expect("key");
        assert!(!declared);
        assert_eq!(
            at(d, &["metadata", "finalizers"]).shape(),
            Shape::List(ListType::Set)
        );
        assert_eq!(
            at(d, &["spec", "selector"]).shape(),
            Shape::Struct { atomic: true }
        );
        assert_eq!(
            at(d, &["spec", "template", "spec", "tolerations"]).shape(),
            Shape::List(ListType::Atomic)
        );
        assert!(d.field("nope").is_none());
    }

    #[test]
    fn crd_schemas_get_object_meta_and_their_own_extensions() {
        let defs = definitions().snapshot();
        let raw = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["id"],
                            "items": {"type": "object", "properties": {"id": {"type": "string"}}}
                        },
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }
            }
        });
        let s = Schema::json(&raw, Some(&defs));
        assert_eq!(
            at(s, &["metadata", "finalizers"]).shape(),
            Shape::List(ListType::Set)
        );
        assert_eq!(
            at(s, &["spec", "items"]).shape(),
            Shape::List(ListType::Map(vec!["id".into()]))
        );
        assert_eq!(
            at(s, &["spec", "free"]).shape(),
            Shape::Map { atomic: false }
        );
        assert_eq!(at(s, &["spec", "free", "x"]).shape(), Shape::Untyped);
    }

    #[test]
    fn zero_deployment_holds_its_value_type_structs() {
        let defs = definitions().snapshot();
        let d = Schema::definition(&defs, "io.k8s.api.apps.v1.Deployment");
        assert_eq!(
            d.zero_object(),
            json!({
                "metadata": {"creationTimestamp": null},
                "spec": {
                    "selector": null,
                    "strategy": {},
                    "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}
                },
                "status": {}
            })
        );
        let raw = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        assert_eq!(Schema::json(&raw, Some(&defs)).zero_object(), json!({}));
    }

    #[test]
    fn unknown_schemas_know_nothing() {
        let u = Schema::unknown();
        assert_eq!(u.shape(), Shape::Untyped);
        assert_eq!(u.items().shape(), Shape::Untyped);
        assert!(u.field("x").is_some());
    }
}
