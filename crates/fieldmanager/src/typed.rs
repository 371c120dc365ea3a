//! Walks over a JSON value guided by its [`Schema`] (structured-merge-diff's
//! `typed` package): the [`FieldSet`] a value sets ([`to_field_set`],
//! [`validate`]), the merge of an applied configuration into a live object
//! ([`merge`]), the fields that differ between two values ([`compare`]) and
//! the removal of a set of fields from a value ([`remove_items`]).
//!
//! The value decides what the schema cannot: a schema node of unknown shape
//! holding an object is a granular map, holding a list an atomic list; a
//! value that does not fit its schema (a string where a struct is expected)
//! is a leaf. Validation errors are only raised by [`validate`], for the
//! applied configuration; live objects are walked leniently.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::path::{Path, PathElement, path_string};
use crate::schema::{ListType, Schema, Shape};
use crate::set::FieldSet;

/// How a node is walked once schema and value are taken together.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// An object whose keys are walked one by one (granular struct or map).
    Fields,
    /// A list whose items are identified by key or value.
    Associative(ListType),
    /// Compared and replaced as a whole.
    Leaf,
}

fn kind(schema: Schema<'_>, value: &Value) -> Kind {
    match (schema.shape(), value) {
        (
            Shape::Struct { atomic: false } | Shape::Map { atomic: false } | Shape::Untyped,
            Value::Object(_),
        ) => Kind::Fields,
        (Shape::List(ListType::Atomic), _) => Kind::Leaf,
        (Shape::List(ListType::Map(keys)), Value::Array(_)) if keys.is_empty() => {
            Kind::Associative(ListType::Set)
        }
        (Shape::List(t), Value::Array(_)) => Kind::Associative(t),
        _ => Kind::Leaf,
    }
}

/// One problem with an applied configuration, at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub path: String,
    pub message: String,
}

/// Every problem found, printed as upstream's `ValidationErrors`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = |e: &ValidationError| {
            if e.path.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.path, e.message)
            }
        };
        match self.0.as_slice() {
            [only] => write!(f, "{}", one(only)),
            all => {
                let mut lines = vec!["errors:".to_string()];
                lines.extend(all.iter().map(|e| format!("  {}", one(e))));
                write!(f, "{}", lines.join("\n"))
            }
        }
    }
}

/// The path element identifying `item` in a list of `list_type`.
fn item_element(
    schema: Schema<'_>,
    list_type: &ListType,
    item: &Value,
) -> Result<PathElement, String> {
    match list_type {
        ListType::Map(keys) if !keys.is_empty() => {
            let object = match item {
                Value::Null => {
                    return Err("associative list with keys may not have a null element".into());
                }
                Value::Object(o) => o,
                _ => {
                    return Err("associative list with keys may not have non-map elements".into());
                }
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                let value = match object.get(key) {
                    Some(v) => v.clone(),
                    None => schema.key_default(key).ok_or_else(|| {
                        format!(
                            "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                        )
                    })?,
                };
                fields.push((key.clone(), value));
            }
            Ok(PathElement::key(fields))
        }
        _ => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            v => Ok(PathElement::Value(v.clone())),
        },
    }
}

/// The items of an associative list with their path elements; items whose
/// element cannot be built are identified by position, later duplicates are
/// skipped (live objects are read leniently, as kube's `AllowDuplicates`).
fn index_items<'v>(
    schema: Schema<'_>,
    list_type: &ListType,
    items: &'v [Value],
) -> Vec<(PathElement, &'v Value)> {
    let mut seen = BTreeMap::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let pe = item_element(schema, list_type, item)
            .unwrap_or_else(|_| PathElement::Index(i64::try_from(i).unwrap_or(i64::MAX)));
        if seen.insert(pe.clone(), ()).is_none() {
            out.push((pe, item));
        }
    }
    out
}

fn field_schema<'a>(schema: Schema<'a>, name: &str) -> (Schema<'a>, bool) {
    schema.field(name).unwrap_or((Schema::unknown(), false))
}

/// The fields `value` sets (`TypedValue.ToFieldSet`): leaves, map keys,
/// list items and explicitly empty or null fields are members.
pub fn to_field_set(value: &Value, schema: Schema<'_>) -> FieldSet {
    let mut set = FieldSet::new();
    walk_set(value, schema, &mut set);
    set.prune_empty();
    set
}

/// Fill `set` (this node's children) and say whether the node itself is a
/// member (a leaf).
fn walk_set(value: &Value, schema: Schema<'_>, set: &mut FieldSet) -> bool {
    match kind(schema, value) {
        Kind::Leaf => true,
        Kind::Fields => {
            if let Value::Object(map) = value {
                for (k, v) in map {
                    let (child, declared) = field_schema(schema, k);
                    let pe = PathElement::Field(k.clone());
                    let leaf = walk_set(v, child, set.child_mut(&pe));
                    let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                    if leaf || empty || !declared {
                        set.insert_member(&pe);
                    }
                }
            }
            false
        }
        Kind::Associative(list_type) => {
            if let Value::Array(items) = value {
                let item_schema = schema.items();
                for (pe, item) in index_items(schema, &list_type, items) {
                    walk_set(item, item_schema, set.child_mut(&pe));
                    set.insert_member(&pe);
                }
            }
            false
        }
    }
}

/// Check an applied configuration as upstream's `ObjectToTyped` does without
/// `AllowDuplicates`: undeclared fields of structs, map-list items without
/// their keys, set items that are not scalars, duplicate items.
pub fn validate(value: &Value, schema: Schema<'_>) -> Result<(), ValidationErrors> {
    let mut errors = Vec::new();
    validate_at(value, schema, &mut Vec::new(), &mut errors, None);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(errors))
    }
}

/// [`validate`] and [`to_field_set`] in one walk (one schema lookup per
/// node instead of two): the fields a valid applied configuration sets.
/// A valid value has no item without its key and no duplicate, so the set
/// is the one [`to_field_set`] builds.
pub fn validated_field_set(
    value: &Value,
    schema: Schema<'_>,
) -> Result<FieldSet, ValidationErrors> {
    let mut errors = Vec::new();
    let mut set = FieldSet::new();
    validate_at(value, schema, &mut Vec::new(), &mut errors, Some(&mut set));
    if errors.is_empty() {
        set.prune_empty();
        Ok(set)
    } else {
        Err(ValidationErrors(errors))
    }
}

/// Validate one node; with `set`, also fill it (this node's children) as
/// [`walk_set`] does, and say whether the node itself is a member.
fn validate_at(
    value: &Value,
    schema: Schema<'_>,
    path: &mut Path,
    errors: &mut Vec<ValidationError>,
    mut set: Option<&mut FieldSet>,
) -> bool {
    match kind(schema, value) {
        Kind::Leaf => true,
        Kind::Fields => {
            if let Value::Object(map) = value {
                for (k, v) in map {
                    let pe = PathElement::Field(k.clone());
                    match schema.field(k) {
                        Some((child, declared)) => {
                            let below = set.as_deref_mut().map(|s| s.child_mut(&pe));
                            path.push(pe);
                            let leaf = validate_at(v, child, path, errors, below);
                            let Some(pe) = path.pop() else { continue };
                            let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                            if let Some(s) = set.as_deref_mut()
                                && (leaf || empty || !declared)
                            {
                                s.insert_member(&pe);
                            }
                        }
                        None => {
                            path.push(pe);
                            errors.push(ValidationError {
                                path: path_string(path),
                                message: "field not declared in schema".into(),
                            });
                            path.pop();
                        }
                    }
                }
            }
            false
        }
        Kind::Associative(list_type) => {
            if let Value::Array(items) = value {
                let item_schema = schema.items();
                let mut seen = BTreeMap::new();
                for (i, item) in items.iter().enumerate() {
                    match item_element(schema, &list_type, item) {
                        Err(e) => errors.push(ValidationError {
                            path: path_string(path),
                            message: format!("element {i}: {e}"),
                        }),
                        Ok(pe) => {
                            if seen.insert(pe.clone(), ()).is_some() {
                                errors.push(ValidationError {
                                    path: path_string(path),
                                    message: format!("duplicate entries for key {pe}"),
                                });
                                continue;
                            }
                            let below = set.as_deref_mut().map(|s| s.child_mut(&pe));
                            path.push(pe);
                            validate_at(item, item_schema, path, errors, below);
                            let Some(pe) = path.pop() else { continue };
                            if let Some(s) = set.as_deref_mut() {
                                s.insert_member(&pe);
                            }
                        }
                    }
                }
            }
            false
        }
    }
}

/// Merge `rhs` (an applied configuration) into `lhs` (the live object):
/// granular objects key by key, associative lists item by item (upstream's
/// order: the live order, with the applied items' relative order where both
/// have them), everything else replaced by `rhs`.
pub fn merge(lhs: &Value, rhs: &Value, schema: Schema<'_>) -> Value {
    // An applied `null` over a granular object or list keeps its items.
    if rhs.is_null()
        && !is_empty_container(Some(lhs))
        && matches!(kind(schema, lhs), Kind::Fields | Kind::Associative(_))
    {
        return lhs.clone();
    }
    match (kind(schema, rhs), lhs, rhs) {
        (Kind::Fields, Value::Object(l), Value::Object(r)) if kind(schema, lhs) == Kind::Fields => {
            let mut out = l.clone();
            for (k, rv) in r {
                let merged = match l.get(k) {
                    Some(lv) => merge(lv, rv, field_schema(schema, k).0),
                    None => rv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Kind::Associative(t), Value::Array(l), Value::Array(r)) => {
            Value::Array(merge_lists(schema, &t, l, r))
        }
        _ => rhs.clone(),
    }
}

/// Upstream's `mergingWalker.visitListItems`.
fn merge_lists(schema: Schema<'_>, t: &ListType, lhs: &[Value], rhs: &[Value]) -> Vec<Value> {
    let item_schema = schema.items();
    let l = index_items(schema, t, lhs);
    let r = index_items(schema, t, rhs);
    let observed_l: BTreeMap<&PathElement, &Value> = l.iter().map(|(p, v)| (p, *v)).collect();
    let observed_r: BTreeMap<&PathElement, &Value> = r.iter().map(|(p, v)| (p, *v)).collect();
    let mut shared = r
        .iter()
        .map(|(p, _)| p)
        .filter(|p| observed_l.contains_key(p))
        .peekable();
    let mut next_shared = shared.next();
    let mut merged_r = BTreeMap::new();
    let item = |pe: &PathElement| -> Value {
        match (observed_l.get(pe), observed_r.get(pe)) {
            (Some(lv), Some(rv)) => merge(lv, rv, item_schema),
            (Some(v), None) | (None, Some(v)) => (*v).clone(),
            (None, None) => Value::Null,
        }
    };
    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let (mut li, mut ri) = (0, 0);
    while li < l.len() || ri < r.len() {
        if li < l.len() && ri < r.len() {
            let pe = &l[li].0;
            if pe == &r[ri].0 {
                merged_r.insert(pe, ());
                out.push(item(pe));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_r.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < l.len() {
            let pe = &l[li].0;
            if !observed_r.contains_key(pe) {
                out.push(l[li].1.clone());
                li += 1;
                continue;
            } else if merged_r.contains_key(pe) {
                li += 1;
                continue;
            }
        }
        if ri < r.len() {
            let pe = &r[ri].0;
            merged_r.insert(pe, ());
            out.push(item(pe));
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    out
}

/// The paths that differ between two values (`typed.Comparison`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// In the new value only.
    pub added: FieldSet,
    /// In both, with a different value.
    pub modified: FieldSet,
    /// In the old value only.
    pub removed: FieldSet,
}

impl Comparison {
    /// Whether the two values were the same.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// This comparison without the given fields or anything below them
    /// (`Comparison.FilterFields`).
    pub fn filter(&self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compare `old` with `new` (`TypedValue.Compare`).
pub fn compare(old: &Value, new: &Value, schema: Schema<'_>) -> Comparison {
    let mut c = Comparison::default();
    compare_at(Some(old), Some(new), schema, &mut Vec::new(), &mut c);
    c
}

fn as_items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn compare_at(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    schema: Schema<'_>,
    path: &mut Path,
    c: &mut Comparison,
) {
    // `null` is an empty map or list to whatever the other side is.
    let Some(reference) = [rhs, lhs]
        .into_iter()
        .flatten()
        .find(|v| !v.is_null())
        .or(rhs.or(lhs))
    else {
        return;
    };
    let k = kind(schema, reference);
    let fits = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || kind(schema, v) == k);
    let leaf = k == Kind::Leaf
        || !fits(lhs)
        || !fits(rhs)
        || (is_empty_container(lhs) && is_empty_container(rhs));
    if leaf {
        match (lhs, rhs) {
            (None, Some(_)) => c.added.insert(path),
            (Some(_), None) => c.removed.insert(path),
            (Some(l), Some(r)) if l != r => c.modified.insert(path),
            _ => {}
        }
        return;
    }
    match k {
        Kind::Fields => {
            let empty = Map::new();
            let l = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let r = rhs.and_then(Value::as_object).unwrap_or(&empty);
            for (key, lv) in l {
                path.push(PathElement::Field(key.clone()));
                compare_at(Some(lv), r.get(key), field_schema(schema, key).0, path, c);
                path.pop();
            }
            for (key, rv) in r.iter().filter(|(key, _)| !l.contains_key(*key)) {
                path.push(PathElement::Field(key.clone()));
                compare_at(None, Some(rv), field_schema(schema, key).0, path, c);
                path.pop();
            }
        }
        Kind::Associative(t) => {
            let item_schema = schema.items();
            let l = index_items(schema, &t, as_items(lhs));
            let r = index_items(schema, &t, as_items(rhs));
            let rmap: BTreeMap<&PathElement, &Value> = r.iter().map(|(p, v)| (p, *v)).collect();
            let lmap: BTreeMap<&PathElement, &Value> = l.iter().map(|(p, v)| (p, *v)).collect();
            for (pe, lv) in &l {
                path.push(pe.clone());
                compare_at(Some(lv), rmap.get(pe).copied(), item_schema, path, c);
                path.pop();
            }
            for (pe, rv) in r.iter().filter(|(pe, _)| !lmap.contains_key(pe)) {
                path.push(pe.clone());
                compare_at(None, Some(rv), item_schema, path, c);
                path.pop();
            }
        }
        Kind::Leaf => {}
    }
    match (lhs, rhs) {
        (None, Some(_)) => c.added.insert(path),
        (Some(_), None) => c.removed.insert(path),
        _ => {}
    }
}

/// `value` without the fields of `to_remove` (`TypedValue.RemoveItems`):
/// a member goes with everything below it. As upstream, a field whose
/// object or list the removal empties stays as `null` (which keeps it, for
/// the field-set arithmetic of pruning, apart from a removed field), and a
/// value emptied as a whole is `None`. [`drop_removal_nulls`] tidies a final
/// result.
pub fn remove_items(value: &Value, to_remove: &FieldSet, schema: Schema<'_>) -> Option<Value> {
    if to_remove.is_empty() {
        return Some(value.clone());
    }
    match (kind(schema, value), value) {
        (Kind::Fields, Value::Object(map)) => {
            let mut out = Map::new();
            for (k, v) in map {
                let pe = PathElement::Field(k.clone());
                if to_remove.has_member(&pe) {
                    continue;
                }
                let kept = match to_remove.children(&pe) {
                    Some(sub) if !sub.is_empty() => {
                        remove_items(v, sub, field_schema(schema, k).0).unwrap_or(Value::Null)
                    }
                    _ => v.clone(),
                };
                out.insert(k.clone(), kept);
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Kind::Associative(t), Value::Array(items)) => {
            let item_schema = schema.items();
            let mut out = Vec::new();
            for item in items {
                let Ok(pe) = item_element(schema, &t, item) else {
                    out.push(item.clone());
                    continue;
                };
                if to_remove.has_member(&pe) {
                    continue;
                }
                let kept = match to_remove.children(&pe) {
                    Some(sub) if !sub.is_empty() => remove_items(item, sub, item_schema),
                    _ => Some(item.clone()),
                };
                out.extend(kept);
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(value.clone()),
    }
}

/// Drop from `out` the `null`s [`remove_items`] left where `original` had a
/// value: once kube encodes the object they are absent fields.
pub fn drop_removal_nulls(out: &mut Value, original: &Value, schema: Schema<'_>) {
    match (out, original) {
        (Value::Object(o), Value::Object(m)) => {
            o.retain(|k, v| !(v.is_null() && m.get(k).is_some_and(|mv| !mv.is_null())));
            for (k, v) in o.iter_mut() {
                if let Some(mv) = m.get(k) {
                    drop_removal_nulls(v, mv, field_schema(schema, k).0);
                }
            }
        }
        (Value::Array(items), Value::Array(m)) => {
            if let Kind::Associative(t) = kind(schema, original) {
                let index: BTreeMap<PathElement, &Value> =
                    index_items(schema, &t, m).into_iter().collect();
                for item in items.iter_mut() {
                    if let Ok(pe) = item_element(schema, &t, item)
                        && let Some(mv) = index.get(&pe)
                    {
                        drop_removal_nulls(item, mv, schema.items());
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ubernetes_openapi::definitions;

    fn fields(v: Value) -> FieldSet {
        FieldSet::from_fields_v1(&v).expect("fieldsV1")
    }

    #[test]
    fn applied_deployment_owns_leaves_items_and_map_keys() {
        let defs = definitions().snapshot();
        let s = Schema::definition(&defs, "io.k8s.api.apps.v1.Deployment");
        let obj = json!({
            "metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}
            }
        });
        let set = to_field_set(&obj, s);
        assert_eq!(
            set,
            fields(json!({
                "f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}},
                "f:spec": {
                    "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
                            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}
                        }}
                    }}}
                }
            }))
        );
    }

    #[test]
    fn validated_field_set_is_to_field_set_of_a_valid_value() {
        let defs = definitions().snapshot();
        let s = Schema::definition(&defs, "io.k8s.api.apps.v1.Deployment");
        let obj = json!({
            "metadata": {"name": "d", "labels": {"app": "x"}, "annotations": {}, "finalizers": ["a", "b"]},
            "spec": {
                "replicas": null,
                "selector": {"matchLabels": {"app": "x"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}
            }
        });
        let set = validated_field_set(&obj, s).expect("valid");
        assert!(!set.is_empty());
        assert_eq!(set, to_field_set(&obj, s));
        let bad = json!({"spec": {"nodeAffinity": {}}});
        assert_eq!(
            validated_field_set(&bad, s).expect_err("invalid"),
            validate(&bad, s).expect_err("invalid")
        );
    }

    #[test]
    fn validation_reports_what_upstream_reports() {
        let defs = definitions().snapshot();
        let s = Schema::definition(&defs, "io.k8s.api.core.v1.Pod");
        let bad = json!({"spec": {"containers": [{"image": "i"}], "nodeAffinity": {}}});
        let err = validate(&bad, s).expect_err("invalid");
        assert_eq!(
            err.to_string(),
            "errors:\n  .spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)\n  .spec.nodeAffinity: field not declared in schema"
        );
        let dup = json!({"metadata": {"finalizers": ["a", "a"]}});
        assert_eq!(
            validate(&dup, s).expect_err("dup").to_string(),
            ".metadata.finalizers: duplicate entries for key [=\"a\"]"
        );
    }

    #[test]
    fn merging_map_lists_keeps_live_items_and_order() {
        let defs = definitions().snapshot();
        let s = Schema::definition(&defs, "io.k8s.api.core.v1.PodSpec");
        let live =
            json!({"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]});
        let applied =
            json!({"containers": [{"name": "c", "image": "3"}, {"name": "a", "image": "4"}]});
        assert_eq!(
            merge(&live, &applied, s),
            json!({"containers": [{"name": "c", "image": "3"}, {"name": "a", "image": "4"}, {"name": "b", "image": "2"}]})
        );
    }

    #[test]
    fn compare_finds_added_modified_and_removed_paths() {
        let s = Schema::unknown();
        let c = compare(
            &json!({"data": {"a": "1", "b": "2"}}),
            &json!({"data": {"a": "9", "c": "3"}, "x": {"y": 1}}),
            s,
        );
        assert_eq!(c.modified, fields(json!({"f:data": {"f:a": {}}})));
        assert_eq!(c.removed, fields(json!({"f:data": {"f:b": {}}})));
        assert_eq!(
            c.added,
            fields(json!({"f:data": {"f:c": {}}, "f:x": {".": {}, "f:y": {}}}))
        );
    }

    #[test]
    fn removing_items_drops_members_with_their_subtrees() {
        let defs = definitions().snapshot();
        let s = Schema::definition(&defs, "io.k8s.api.core.v1.Pod");
        let pod = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1"}},
                         "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}});
        let out = remove_items(
            &pod,
            &fields(
                json!({"f:metadata": {"f:finalizers": {"v:\"a\"": {}}, "f:labels": {"f:x": {}}},
                           "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {}}}}),
            ),
            s,
        );
        let tidy =
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "b"}]}});
        let mut with_null = tidy.clone();
        with_null["metadata"]["labels"] = Value::Null;
        assert_eq!(out.as_ref(), Some(&with_null));
        drop_removal_nulls(&mut with_null, &pod, s);
        assert_eq!(with_null, tidy);
    }
}
