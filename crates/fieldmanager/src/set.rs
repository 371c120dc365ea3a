//! [`FieldSet`]: a set of field paths (`fieldpath.Set`), stored as a tree,
//! with set algebra and the exact `FieldsV1` JSON form kube writes in
//! `metadata.managedFields[].fieldsV1`.
//!
//! A node of the tree is one [`PathElement`]; it is a *member* when the path
//! ending there is in the set (`"."` in `FieldsV1`, or an empty object for a
//! leaf), and it may have children whether or not it is a member. Set
//! operations are per path, as upstream's: the difference of `{a, a.b}` and
//! `{a}` is `{a.b}`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::path::{Path, PathElement};
use crate::schema::{Schema, Shape};

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    nodes: BTreeMap<PathElement, Node>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    member: bool,
    children: FieldSet,
}

impl Node {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }
}

/// A `fieldsV1` value that is not a valid field set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FieldsV1Error(pub String);

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Self {
        let mut set = Self::new();
        for p in paths {
            set.insert(p);
        }
        set
    }

    /// The fields `value` sets, per its schema (see [`crate::typed::to_field_set`]).
    pub fn from_value(value: &Value, schema: Schema<'_>) -> Self {
        crate::typed::to_field_set(value, schema)
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Add a path (the empty path is ignored: the root is never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut set = self;
        for pe in parents {
            set = &mut set.nodes.entry(pe.clone()).or_default().children;
        }
        set.nodes.entry(last.clone()).or_default().member = true;
    }

    /// Whether the set holds exactly this path.
    pub fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut set = self;
        for pe in parents {
            match set.nodes.get(pe) {
                Some(node) => set = &node.children,
                None => return false,
            }
        }
        set.nodes.get(last).is_some_and(|n| n.member)
    }

    /// Whether `pe` is a member at this level.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.nodes.get(pe).is_some_and(|n| n.member)
    }

    /// The paths under `pe`, relative to it (`fieldpath.Set.WithPrefix`).
    pub fn with_prefix(&self, pe: &PathElement) -> FieldSet {
        self.nodes
            .get(pe)
            .map(|n| n.children.clone())
            .unwrap_or_default()
    }

    /// Borrowing form of [`Self::with_prefix`].
    pub(crate) fn children(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.nodes.get(pe).map(|n| &n.children)
    }

    /// Every path in the set, in upstream's iteration order: at each level
    /// the members first (sorted), then the children's paths.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (pe, node) in &self.nodes {
            if node.member {
                let mut p = prefix.clone();
                p.push(pe.clone());
                out.push(p);
            }
        }
        for (pe, node) in &self.nodes {
            if !node.children.is_empty() {
                prefix.push(pe.clone());
                node.children.collect_paths(prefix, out);
                prefix.pop();
            }
        }
    }

    /// How many paths the set holds.
    pub fn len(&self) -> usize {
        self.nodes
            .values()
            .map(|n| usize::from(n.member) + n.children.len())
            .sum()
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        for (pe, node) in &other.nodes {
            let mine = out.nodes.entry(pe.clone()).or_default();
            mine.member |= node.member;
            mine.children = mine.children.union(&node.children);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, node) in &self.nodes {
            if let Some(theirs) = other.nodes.get(pe) {
                let n = Node {
                    member: node.member && theirs.member,
                    children: node.children.intersection(&theirs.children),
                };
                if !n.is_empty() {
                    out.nodes.insert(pe.clone(), n);
                }
            }
        }
        out
    }

    /// Paths in `self` but not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, node) in &self.nodes {
            let n = match other.nodes.get(pe) {
                Some(theirs) => Node {
                    member: node.member && !theirs.member,
                    children: node.children.difference(&theirs.children),
                },
                None => node.clone(),
            };
            if !n.is_empty() {
                out.nodes.insert(pe.clone(), n);
            }
        }
        out
    }

    /// Paths in `self` that are neither in `other` nor below a member of
    /// `other` (`fieldpath.Set.RecursiveDifference`).
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (pe, node) in &self.nodes {
            let n = match other.nodes.get(pe) {
                Some(theirs) if theirs.member => continue,
                Some(theirs) => Node {
                    member: node.member,
                    children: node.children.recursive_difference(&theirs.children),
                },
                None => node.clone(),
            };
            if !n.is_empty() {
                out.nodes.insert(pe.clone(), n);
            }
        }
        out
    }

    /// Mark `pe` a member at this level and return its children for descent.
    pub(crate) fn child_mut(&mut self, pe: &PathElement) -> &mut FieldSet {
        &mut self.nodes.entry(pe.clone()).or_default().children
    }

    /// Mark `pe` a member at this level.
    pub(crate) fn insert_member(&mut self, pe: &PathElement) {
        self.nodes.entry(pe.clone()).or_default().member = true;
    }

    /// Drop empty nodes left by [`Self::child_mut`].
    pub(crate) fn prune_empty(&mut self) {
        for node in self.nodes.values_mut() {
            node.children.prune_empty();
        }
        self.nodes.retain(|_, n| !n.is_empty());
    }

    /// This set plus, as members, every named (declared struct) field on
    /// the way to its paths (`fieldpath.Set.EnsureNamedFieldsAreMembers`),
    /// so that removing them removes whole fields.
    pub fn ensure_named_fields_are_members(&self, schema: Schema<'_>) -> FieldSet {
        let struct_like = matches!(schema.shape(), Shape::Struct { .. });
        let mut out = FieldSet::new();
        for (pe, node) in &self.nodes {
            let (child_schema, declared) = match pe {
                PathElement::Field(name) => {
                    schema.field(name).unwrap_or((Schema::unknown(), false))
                }
                _ => (schema.items(), false),
            };
            let member = node.member || (struct_like && declared && !node.children.is_empty());
            out.nodes.insert(
                pe.clone(),
                Node {
                    member,
                    children: node.children.ensure_named_fields_are_members(child_schema),
                },
            );
        }
        out
    }

    /// The `FieldsV1` JSON form, keys in upstream's order.
    pub fn to_fields_v1(&self) -> Value {
        let mut object = Map::new();
        for (pe, node) in &self.nodes {
            let mut inner = Map::new();
            if !node.children.is_empty() {
                if node.member {
                    inner.insert(".".into(), Value::Object(Map::new()));
                }
                if let Value::Object(children) = node.children.to_fields_v1() {
                    inner.extend(children);
                }
            }
            object.insert(pe.to_fields_key(), Value::Object(inner));
        }
        Value::Object(object)
    }

    /// Parse a `FieldsV1` value.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, FieldsV1Error> {
        let object = value
            .as_object()
            .ok_or_else(|| FieldsV1Error("expected a JSON object".into()))?;
        let mut set = FieldSet::new();
        for (key, inner) in object {
            if key == "." {
                continue;
            }
            let pe = PathElement::from_fields_key(key)
                .ok_or_else(|| FieldsV1Error(format!("invalid path element {key:?}")))?;
            let inner_object = inner
                .as_object()
                .ok_or_else(|| FieldsV1Error(format!("{key}: expected a JSON object")))?;
            let children = FieldSet::from_fields_v1(inner)?;
            let member = inner_object.contains_key(".") || children.is_empty();
            set.nodes.insert(pe, Node { member, children });
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::field(name)
    }

    fn set(v: Value) -> FieldSet {
        FieldSet::from_fields_v1(&v).expect("valid fieldsV1")
    }

    #[test]
    fn fields_v1_of_an_update_round_trips() {
        let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}"#;
        let value: Value = serde_json::from_str(text).expect("json");
        let s = FieldSet::from_fields_v1(&value).expect("set");
        assert_eq!(
            serde_json::to_string(&s.to_fields_v1()).expect("json"),
            text
        );
        assert!(s.has(&[f("metadata"), f("labels")]));
        assert!(s.has(&[f("metadata"), f("labels"), f("app")]));
        assert!(!s.has(&[f("metadata")]));
        assert!(!s.has(&[f("spec"), f("containers")]));
        assert_eq!(s.len(), 5);
    }

    #[test]
    fn fields_v1_is_written_in_path_element_order() {
        let mut s = FieldSet::new();
        s.insert(&[
            f("spec"),
            f("ports"),
            PathElement::key(vec![
                ("port".into(), json!(80)),
                ("protocol".into(), json!("TCP")),
            ]),
        ]);
        s.insert(&[
            f("metadata"),
            f("finalizers"),
            PathElement::Value(json!("b")),
        ]);
        s.insert(&[
            f("metadata"),
            f("finalizers"),
            PathElement::Value(json!("a")),
        ]);
        s.insert(&[f("data"), f("z")]);
        s.insert(&[f("data"), f("a")]);
        assert_eq!(
            serde_json::to_string(&s.to_fields_v1()).expect("json"),
            r#"{"f:data":{"f:a":{},"f:z":{}},"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{}}}}"#
        );
    }

    #[test]
    fn invalid_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }

    #[test]
    fn set_algebra_is_per_path() {
        let a = set(json!({"f:a": {".": {}, "f:b": {}}, "f:c": {}}));
        let b = set(json!({"f:a": {}, "f:d": {}}));
        assert_eq!(
            a.difference(&b),
            set(json!({"f:a": {"f:b": {}}, "f:c": {}}))
        );
        assert_eq!(a.intersection(&b), set(json!({"f:a": {}})));
        assert_eq!(
            a.union(&b),
            set(json!({"f:a": {".": {}, "f:b": {}}, "f:c": {}, "f:d": {}}))
        );
        assert_eq!(a.recursive_difference(&b), set(json!({"f:c": {}})));
        assert!(a.difference(&a).is_empty());
    }

    #[test]
    fn paths_iterate_members_before_children() {
        let s = set(json!({"f:a": {".": {}, "f:b": {}}, "f:c": {}}));
        let printed: Vec<String> = s
            .paths()
            .iter()
            .map(|p| crate::path::path_string(p))
            .collect();
        assert_eq!(printed, [".a", ".c", ".a.b"]);
    }
}
