//! Strategic merge patch, the apply half of
//! `k8s.io/apimachinery/pkg/util/strategicpatch` (`StrategicMergeMapPatch`
//! with `MergeParallelList` and `IgnoreUnmatchedNulls`, as kube-apiserver
//! calls it), over `serde_json` maps.
//!
//! - maps merge recursively; `null` deletes a key;
//! - lists whose field has the `merge` strategy merge: lists of objects by
//!   their merge key (matching elements merge recursively, new ones are
//!   appended), lists of primitives as sets; other lists are replaced;
//! - `$patch: replace|delete` on a map, `$patch: delete|replace` on a list
//!   element (`merge` is refused there, as in kube), `$retainKeys`,
//!   `$setElementOrder/<field>`, `$deleteFromPrimitiveList/<field>`;
//! - the order of merged lists follows kube's rules (`$setElementOrder`,
//!   then patch order, then the live order).
//!
//! Sorting and matching use hashed merge-key values, so large lists stay
//! linear-ish where kube's code is quadratic; results are the same.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{
    FieldPatchMeta, NoPatchMeta, PatchMeta, go_type, go_v, internal_unknown, unprocessable,
};
use crate::error::ApiError;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

const ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST: &str =
    "invalid patch format of setElementOrder list";
const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";
const MAP_TYPE: &str = "map[string]interface {}";
const SLICE_TYPE: &str = "[]interface {}";

/// Recursion bound (patch bodies are already limited to
/// [`super::MAX_NESTING_DEPTH`], this guards documents built elsewhere).
const MAX_DEPTH: usize = 512;

/// A failure, classified as kube-apiserver's `interpretStrategicMergePatchError`.
#[derive(Debug)]
enum SmpError {
    /// 400 BadRequest with this message.
    BadRequest(String),
    /// 422 with kube's generic message (lists of lists).
    Unprocessable(&'static str),
    /// Anything else: 500 without reason, this message.
    Other(String),
}

impl SmpError {
    fn into_api(self) -> ApiError {
        match self {
            SmpError::BadRequest(m) => ApiError::bad_request(m),
            SmpError::Unprocessable(m) => unprocessable(m),
            SmpError::Other(m) => internal_unknown(m),
        }
    }
}

type R<T> = Result<T, SmpError>;

fn bad_request(m: &str) -> SmpError {
    SmpError::BadRequest(m.to_string())
}

fn err_no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::Other(format!(
        "map: {} does not contain declared merge key: {key}",
        go_v(&Value::Object(m.clone()))
    ))
}

fn err_bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::Other(format!(
        "expected a {expected}, but received a {}",
        go_type(actual)
    ))
}

fn err_bad_patch_type(t: &Value, m: &Map<String, Value>) -> SmpError {
    SmpError::Other(format!(
        "unknown patch type: {} in map: {}",
        go_v(t),
        go_v(&Value::Object(m.clone()))
    ))
}

/// The Go type of a decoded JSON value, as `reflect.TypeOf` distinguishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    Slice,
    Map,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.is_i64() || n.is_u64() => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Slice,
        Value::Object(_) => Kind::Map,
    }
}

/// A hashable identity for Go's `==` on decoded scalars.
fn ident(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The value an element is ordered/matched by: its merge-key value for
/// maps (Go's nil when absent), itself otherwise.
fn order_ident(v: &Value, merge_key: &str, kind: Kind) -> String {
    if kind == Kind::Map {
        match v.as_object().and_then(|m| m.get(merge_key)) {
            Some(x) => ident(x),
            None => "\u{0}<nil>".to_string(),
        }
    } else {
        ident(v)
    }
}

/// First position of each identity in `list`.
fn positions(list: &[Value], merge_key: &str, kind: Kind) -> HashMap<String, usize> {
    let mut m = HashMap::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        m.entry(order_ident(v, merge_key, kind)).or_insert(i);
    }
    m
}

fn lookup(schema: &dyn PatchMeta, key: &str) -> (FieldPatchMeta, Box<dyn PatchMeta>) {
    schema
        .field(key)
        .unwrap_or_else(|| (FieldPatchMeta::default(), Box::new(NoPatchMeta)))
}

/// Apply a decoded strategic merge patch to `doc` (a copy is patched).
/// Directive keys left in values taken verbatim are removed from the result,
/// as kube's typed decode of the patched map drops them.
pub fn strategic_merge_value(
    doc: &Value,
    patch: Map<String, Value>,
    meta: &dyn PatchMeta,
) -> Result<Value, ApiError> {
    let original = doc.as_object().cloned().unwrap_or_default();
    let merged = merge_map(original, patch, meta, 0).map_err(SmpError::into_api)?;
    let mut out = Value::Object(merged);
    strip_directives(&mut out, 0);
    Ok(out)
}

/// `mergeMap`.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: &dyn PatchMeta,
    depth: usize,
) -> R<Map<String, Value>> {
    if depth > MAX_DEPTH {
        return Err(bad_request("exceeded max depth"));
    }
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.remove(DIRECTIVE_MARKER);
                Ok(patch)
            }
            Some(DELETE_DIRECTIVE) => Ok(Map::new()),
            _ => Err(err_bad_patch_type(directive, &patch)),
        };
    }
    apply_retain_keys_directive(&mut original, &mut patch)?;
    merge_patch_into_original(&mut original, &mut patch, schema, depth)?;

    for (k, patch_v) in patch {
        let (k, is_delete_list) = if k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
            (extract_key(&k, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
        } else {
            (k, false)
        };
        if patch_v.is_null() {
            original.remove(&k);
            continue;
        }
        let same_kind = original.get(&k).map(|o| kind_of(o) == kind_of(&patch_v));
        if same_kind != Some(true) {
            // Not in the original (or of another type): take the patch value.
            if !is_delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v, 0);
                match remove_directives(v, 0) {
                    Some(v) => {
                        original.insert(k, v);
                    }
                    None => {
                        original.remove(&k);
                    }
                }
            }
            continue;
        }
        let Some(slot) = original.get_mut(&k) else {
            continue;
        };
        let orig = std::mem::take(slot);
        let merged = match (orig, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let (_, sub) = lookup(schema, &k);
                Some(Value::Object(merge_map(o, p, sub.as_ref(), depth + 1)?))
            }
            (Value::Array(o), Value::Array(p)) => {
                let (fm, sub) = lookup(schema, &k);
                Some(Value::Array(merge_slice_handler(
                    o,
                    p,
                    sub.as_ref(),
                    &fm,
                    is_delete_list,
                    depth + 1,
                )?))
            }
            (_, p) => remove_directives(p, 0),
        };
        match merged {
            Some(v) => {
                if let Some(slot) = original.get_mut(&k) {
                    *slot = v;
                }
            }
            None => {
                original.remove(&k);
            }
        }
    }
    Ok(original)
}

/// `extractKey`: the field a `$deleteFromPrimitiveList/…` or
/// `$setElementOrder/…` key is about.
fn extract_key(s: &str, prefix: &str) -> R<String> {
    match s.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest.to_string()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX => {
            Err(bad_request(ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST))
        }
        _ if prefix == SET_ELEMENT_ORDER_PREFIX => {
            Err(bad_request(ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST))
        }
        _ => Err(SmpError::Other(format!(
            "fail to find unknown prefix {prefix:?} in {s}\n"
        ))),
    }
}

/// `applyRetainKeysDirective`: keep only the listed keys of `original`;
/// every non-null key of the patch must be listed.
fn apply_retain_keys_directive(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> R<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(list) = retain else {
        return Err(bad_request(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS));
    };
    let keep: HashSet<&str> = list.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !keep.contains(k.as_str()) {
            return Err(bad_request(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS));
        }
    }
    original.retain(|k, _| keep.contains(k.as_str()));
    Ok(())
}

fn as_list(v: Option<&Value>) -> R<Option<&Vec<Value>>> {
    match v {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(other) => Err(err_bad_arg_type(SLICE_TYPE, other)),
    }
}

/// `mergePatchIntoOriginal`: process each `$setElementOrder/<field>` with
/// its field's patch list, and order the merged list.
fn merge_patch_into_original(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: &dyn PatchMeta,
    depth: usize,
) -> R<()> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
        .cloned()
        .collect();
    for key in keys {
        let Some(order_v) = patch.remove(&key) else {
            continue;
        };
        let set_order = match order_v {
            Value::Array(a) => a,
            other => return Err(err_bad_arg_type(SLICE_TYPE, &other)),
        };
        let original_key = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;
        let original_list = as_list(original.get(&original_key))?.cloned();
        let patch_list = as_list(patch.get(&original_key))?.cloned();
        let (fm, sub) = lookup(schema, &original_key);
        let merge_key = fm.merge_key.clone().unwrap_or_default();
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or(&[]),
            &set_order,
            &merge_key,
        )?;

        let merged = match (&original_list, &patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => match remove_directives(Value::Array(p.clone()), 0) {
                Some(Value::Array(a)) => a,
                _ => continue,
            },
            (Some(o), Some(p)) => {
                merge_slice_handler(o.clone(), p.clone(), sub.as_ref(), &fm, false, depth + 1)?
            }
            (None, None) => continue,
        };
        let (patch_items, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &set_order)
        } else {
            partition_maps(merged, &set_order, &merge_key)?
        };
        let orig = original_list.unwrap_or_default();
        let kind = slice_element_type(&[&orig, patch_list.as_deref().unwrap_or(&[])])?;
        let both = normalize_element_order(
            patch_items,
            server_only,
            &set_order,
            &orig,
            &merge_key,
            kind,
        )?;
        original.insert(original_key.clone(), Value::Array(both));
        patch.remove(&original_key);
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`: the patch list's elements must appear
/// in `$setElementOrder` in the same relative order.
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    set_order: &[Value],
    merge_key: &str,
) -> R<()> {
    if set_order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete = if merge_key.is_empty() {
        patch_list.to_vec()
    } else {
        extract_to_delete_items(patch_list.to_vec())?.0
    };
    let (mut p, mut s) = (0, 0);
    while p < non_delete.len() && s < set_order.len() {
        if contains_directive_marker(&non_delete[p]) {
            p += 1;
            continue;
        }
        if merge_key_value_equal(&non_delete[p], &set_order[s], merge_key)? {
            p += 1;
        }
        s += 1;
    }
    if p < non_delete.len() && s >= set_order.len() {
        return Err(SmpError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            go_v(&Value::Array(patch_list.to_vec())),
            go_v(&Value::Array(set_order.to_vec()))
        )));
    }
    Ok(())
}

fn contains_directive_marker(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

/// `mergeKeyValueEqual`.
fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> R<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let l = left
        .as_object()
        .ok_or_else(|| err_bad_arg_type(MAP_TYPE, left))?;
    let r = right
        .as_object()
        .ok_or_else(|| err_bad_arg_type(MAP_TYPE, right))?;
    let lv = l
        .get(merge_key)
        .ok_or_else(|| err_no_merge_key(l, merge_key))?;
    let rv = r
        .get(merge_key)
        .ok_or_else(|| err_no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}

/// `mergeSliceHandler`: merge when the field's strategy says so (or for a
/// deletion list), else the patch list replaces the original.
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &dyn PatchMeta,
    fm: &FieldPatchMeta,
    is_delete_list: bool,
    depth: usize,
) -> R<Vec<Value>> {
    if fm.merge || is_delete_list {
        let merge_key = fm.merge_key.as_deref().unwrap_or_default();
        merge_slice(original, patch, schema, merge_key, is_delete_list, depth)
    } else {
        Ok(patch)
    }
}

/// `sliceElementType`: the one Go type of all elements (lists of lists refused).
fn slice_element_type(lists: &[&[Value]]) -> R<Kind> {
    let mut prev: Option<Kind> = None;
    for list in lists {
        for v in list.iter() {
            let k = kind_of(v);
            match prev {
                None => {
                    if k == Kind::Slice {
                        return Err(SmpError::Unprocessable(ERR_NO_LIST_OF_LISTS));
                    }
                    prev = Some(k);
                }
                Some(p) if p != k => {
                    let shown: Vec<String> = lists
                        .iter()
                        .map(|l| go_v(&Value::Array(l.to_vec())))
                        .collect();
                    return Err(SmpError::Other(format!(
                        "list element types are not identical: [{}]",
                        shown.join(" ")
                    )));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or_else(|| SmpError::Other("no elements in any of the given slices".to_string()))
}

/// `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: &dyn PatchMeta,
    merge_key: &str,
    is_delete_list: bool,
    depth: usize,
) -> R<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = slice_element_type(&[&original, &patch])?;
    let (original, patch, merged) = if kind != Kind::Map {
        if is_delete_list {
            return Ok(delete_from_slice(original, &patch));
        }
        let mut seen = HashSet::new();
        let merged: Vec<Value> = original
            .iter()
            .chain(patch.iter())
            .filter(|v| seen.insert(ident(v)))
            .cloned()
            .collect();
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(SmpError::Other(
                "cannot merge lists without merge key for type map".to_string(),
            ));
        }
        let (original, patch) = merge_slice_with_special_elements(original, patch, merge_key)?;
        let merged = merge_slice_without_special_elements(
            original.clone(),
            &patch,
            merge_key,
            schema,
            depth,
        )?;
        (original, patch, merged)
    };
    let (patch_items, server_only) = if merge_key.is_empty() {
        partition_primitives(merged, &patch)
    } else {
        partition_maps(merged, &patch, merge_key)?
    };
    normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)
}

/// `mergeSliceWithSpecialElements`: apply `$patch: delete|replace` elements.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> R<(Vec<Value>, Vec<Value>)> {
    let mut without = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        let directive = v
            .as_object()
            .and_then(|m| m.get(DIRECTIVE_MARKER).map(|d| (m, d)));
        match directive {
            None => without.push(v),
            Some((m, d)) => match d.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let target = m
                        .get(merge_key)
                        .ok_or_else(|| err_no_merge_key(m, merge_key))?;
                    let target = ident(target);
                    original.retain(|e| {
                        e.as_object()
                            .and_then(|em| em.get(merge_key))
                            .is_none_or(|x| ident(x) != target)
                    });
                }
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => {
                    return Err(SmpError::Other(
                        "merging lists cannot yet be specified in the patch".to_string(),
                    ));
                }
                _ => return Err(err_bad_patch_type(d, m)),
            },
        }
    }
    if replace {
        Ok((without, Vec::new()))
    } else {
        Ok((original, without))
    }
}

/// `mergeSliceWithoutSpecialElements`: merge elements with the same merge
/// key, append the others.
fn merge_slice_without_special_elements(
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    schema: &dyn PatchMeta,
    depth: usize,
) -> R<Vec<Value>> {
    let mut index: HashMap<String, usize> = HashMap::with_capacity(original.len() + patch.len());
    for (i, e) in original.iter().enumerate() {
        if let Some(x) = e.as_object().and_then(|m| m.get(merge_key)) {
            index.entry(ident(x)).or_insert(i);
        }
    }
    for v in patch {
        let Some(pm) = v.as_object() else {
            return Err(err_bad_arg_type(MAP_TYPE, v));
        };
        let mv = pm
            .get(merge_key)
            .ok_or_else(|| err_no_merge_key(pm, merge_key))?;
        let id = ident(mv);
        match index.get(&id).copied() {
            Some(i) => {
                let Some(slot) = original.get_mut(i) else {
                    continue;
                };
                let om = match std::mem::take(slot) {
                    Value::Object(om) => om,
                    other => return Err(err_bad_arg_type(MAP_TYPE, &other)),
                };
                let merged = merge_map(om, pm.clone(), schema, depth + 1)?;
                if let Some(slot) = original.get_mut(i) {
                    *slot = Value::Object(merged);
                }
            }
            None => {
                index.insert(id, original.len());
                original.push(v.clone());
            }
        }
    }
    Ok(original)
}

/// `deleteFromSlice`: drop the listed primitives.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    let del: HashSet<String> = to_delete.iter().map(ident).collect();
    current
        .into_iter()
        .filter(|v| !del.contains(&ident(v)))
        .collect()
}

/// `partitionPrimitivesByPresentInList`: (present in `by`, not present).
fn partition_primitives(list: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let set: HashSet<String> = by.iter().map(ident).collect();
    list.into_iter().partition(|v| set.contains(&ident(v)))
}

/// `partitionMapsByPresentInList`, by merge-key value.
fn partition_maps(list: Vec<Value>, by: &[Value], merge_key: &str) -> R<(Vec<Value>, Vec<Value>)> {
    if !list.is_empty()
        && let Some(i) = by.iter().position(|v| !v.is_object())
    {
        return Err(SmpError::Other(format!("value for key {i} is not a map.")));
    }
    let set: HashSet<String> = by
        .iter()
        .filter_map(|v| v.as_object()?.get(merge_key).map(ident))
        .collect();
    let mut present = Vec::new();
    let mut server_only = Vec::new();
    for v in list {
        let m = v
            .as_object()
            .ok_or_else(|| err_bad_arg_type(MAP_TYPE, &v))?;
        let mv = m
            .get(merge_key)
            .ok_or_else(|| err_no_merge_key(m, merge_key))?;
        if set.contains(&ident(mv)) {
            present.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((present, server_only))
}

/// `extractToDeleteItems`: (elements kept, elements marked `$patch: delete`).
fn extract_to_delete_items(list: Vec<Value>) -> R<(Vec<Value>, Vec<Value>)> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for v in list {
        let m = v
            .as_object()
            .ok_or_else(|| err_bad_arg_type(MAP_TYPE, &v))?;
        if m.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, delete))
}

/// `validateMergeKeyInLists`.
fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> R<()> {
    for list in lists {
        for v in list.iter() {
            let m = v.as_object().ok_or_else(|| err_bad_arg_type(MAP_TYPE, v))?;
            if !m.contains_key(merge_key) {
                return Err(err_no_merge_key(m, merge_key));
            }
        }
    }
    Ok(())
}

/// `normalizeElementOrder`: sort the patch items by `patch_order`, the
/// server-only items by `server_order`, then interleave them.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> R<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    Ok(merge_sorted_slice(
        server_only,
        patch,
        server_order,
        merge_key,
        kind,
    ))
}

/// `normalizeSliceOrder`: stable sort by position in `order` (with Go's
/// comparator, which calls an element missing from `order` "less"),
/// `$patch: delete` elements last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> R<Vec<Value>> {
    let (to_sort, to_delete) = if kind == Kind::Map {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    let pos = positions(order, merge_key, kind);
    let mut keyed: Vec<(Option<usize>, Value)> = to_sort
        .into_iter()
        .map(|v| (pos.get(&order_ident(&v, merge_key, kind)).copied(), v))
        .collect();
    go_stable_sort(&mut keyed);
    let mut out: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    out.extend(to_delete);
    Ok(out)
}

/// Go's `sort.SliceStable` with `less(i, j) = pos(i) < pos(j)` when both are
/// known and `true` otherwise. With every position known that is a plain
/// stable sort; otherwise Go's insertion sort is replayed for short lists
/// (exactly what Go does up to 20 elements) and approximated for long ones.
fn go_stable_sort(items: &mut Vec<(Option<usize>, Value)>) {
    if items.iter().all(|(p, _)| p.is_some()) {
        items.sort_by_key(|(p, _)| *p);
        return;
    }
    let less = |a: Option<usize>, b: Option<usize>| match (a, b) {
        (Some(x), Some(y)) => x < y,
        _ => true,
    };
    if items.len() <= 20 {
        for i in 1..items.len() {
            let mut j = i;
            while j > 0 && less(items[j].0, items[j - 1].0) {
                items.swap(j, j - 1);
                j -= 1;
            }
        }
        return;
    }
    let (mut missing, mut found): (Vec<_>, Vec<_>) = std::mem::take(items)
        .into_iter()
        .partition(|(p, _)| p.is_none());
    missing.reverse();
    found.sort_by_key(|(p, _)| *p);
    missing.extend(found);
    *items = missing;
}

/// `mergeSortedSlice`: insert the server-only items (`left`) among the
/// patch items (`right`), keeping both relative orders, by live order.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Vec<Value> {
    let pos = positions(server_order, merge_key, kind);
    let p = |v: &Value| pos.get(&order_ident(v, merge_key, kind)).copied();
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!((p(l), p(r)), (Some(a), Some(b)) if a < b),
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some(v) = next {
            out.push(v);
        }
    }
    out
}

/// `removeDirectives`: drop maps carrying `$patch` (returns `None` for such
/// a map itself), recursively.
fn remove_directives(v: Value, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return Some(v);
    }
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            let mut out = Map::with_capacity(m.len());
            for (k, x) in m {
                if let Some(x) = remove_directives(x, depth + 1) {
                    out.insert(k, x);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter()
                .filter_map(|x| remove_directives(x, depth + 1))
                .collect(),
        )),
        other => Some(other),
    }
}

/// `discardNullValuesFromPatch`.
fn discard_nulls(v: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(|x| discard_nulls(x, depth + 1));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| discard_nulls(x, depth + 1)),
        _ => {}
    }
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE_MARKER
        || k == RETAIN_KEYS_DIRECTIVE
        || k.starts_with("$setElementOrder/")
        || k.starts_with("$deleteFromPrimitiveList/")
}

/// Remove directive keys that SMP leaves in values it takes verbatim.
fn strip_directives(v: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !is_directive_key(k));
            m.values_mut().for_each(|x| strip_directives(x, depth + 1));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip_directives(x, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::strategic_merge_patch;
    use serde_json::json;

    /// A Deployment-shaped schema, for tests.
    #[derive(Clone, Copy)]
    enum Node {
        Root,
        Meta,
        Spec,
        Template,
        PodSpec,
        Container,
        Leaf,
    }

    fn merge_by(key: Option<&str>) -> FieldPatchMeta {
        FieldPatchMeta {
            merge: true,
            retain_keys: false,
            merge_key: key.map(str::to_string),
        }
    }

    impl PatchMeta for Node {
        fn field(&self, name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)> {
            let plain = FieldPatchMeta::default();
            let retain = FieldPatchMeta {
                retain_keys: true,
                ..FieldPatchMeta::default()
            };
            let (m, n) = match (self, name) {
                (Node::Root, "metadata") | (Node::Template, "metadata") => (plain, Node::Meta),
                (Node::Root, "spec") => (plain, Node::Spec),
                (Node::Meta, "finalizers") => (merge_by(None), Node::Leaf),
                (Node::Meta, "ownerReferences") => (merge_by(Some("uid")), Node::Leaf),
                (Node::Spec, "template") => (plain, Node::Template),
                (Node::Spec, "strategy") => (retain, Node::Leaf),
                (Node::Template, "spec") => (plain, Node::PodSpec),
                (Node::PodSpec, "containers") => (merge_by(Some("name")), Node::Container),
                (Node::Container, "ports") => (merge_by(Some("containerPort")), Node::Leaf),
                (Node::Container, "env") => (merge_by(Some("name")), Node::Leaf),
                _ => return None,
            };
            Some((m, Box::new(n)))
        }
    }

    fn smp(doc: Value, patch: Value) -> Result<Value, ApiError> {
        strategic_merge_patch(&doc, patch.to_string().as_bytes(), &Node::Root)
    }

    fn ok(doc: Value, patch: Value) -> Value {
        smp(doc, patch).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn pod(containers: Value) -> Value {
        json!({"spec": {"template": {"spec": {"containers": containers}}}})
    }

    #[test]
    fn one_container_changed_by_name_leaves_the_other_untouched() {
        let doc = pod(json!([
            {"name": "a", "image": "a:1", "args": ["x"]},
            {"name": "b", "image": "b:1"}
        ]));
        let out = ok(doc, pod(json!([{"name": "b", "image": "b:2"}])));
        assert_eq!(
            out,
            pod(json!([
                {"name": "a", "image": "a:1", "args": ["x"]},
                {"name": "b", "image": "b:2"}
            ]))
        );
    }

    #[test]
    fn ports_merge_by_container_port() {
        let doc = pod(
            json!([{"name": "a", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]),
        );
        let out = ok(
            doc,
            pod(
                json!([{"name": "a", "ports": [{"containerPort": 443, "name": "https"}, {"containerPort": 8080}]}]),
            ),
        );
        assert_eq!(
            out,
            pod(json!([{"name": "a", "ports": [
                {"containerPort": 80, "name": "http"},
                {"containerPort": 443, "name": "https"},
                {"containerPort": 8080}
            ]}]))
        );
    }

    #[test]
    fn env_entry_is_deleted_with_patch_delete() {
        let doc = pod(
            json!([{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]),
        );
        let out = ok(
            doc,
            pod(json!([{"name": "a", "env": [{"name": "X", "$patch": "delete"}]}])),
        );
        assert_eq!(
            out,
            pod(json!([{"name": "a", "env": [{"name": "Y", "value": "2"}]}]))
        );
    }

    #[test]
    fn set_element_order_orders_the_merged_list() {
        let doc = pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "x"}]
        }}}});
        assert_eq!(
            ok(doc, patch),
            pod(json!([{"name": "c"}, {"name": "a", "image": "x"}, {"name": "b"}]))
        );
    }

    #[test]
    fn set_element_order_that_contradicts_the_patch_list_is_an_error() {
        let doc = pod(json!([{"name": "a"}, {"name": "b"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "b"}]
        }}}});
        let e = smp(doc, patch).err().map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((500, "The order in patch list:\n[map[name:b]]\n doesn't match $setElementOrder list:\n[map[name:a]]\n".to_string()))
        );
    }

    #[test]
    fn without_set_element_order_new_items_go_before_live_ones_as_in_kube() {
        // mergeSortedSlice places a patch item the live list does not know first.
        let doc = pod(json!([{"name": "a"}]));
        assert_eq!(
            ok(doc, pod(json!([{"name": "z"}]))),
            pod(json!([{"name": "z"}, {"name": "a"}]))
        );
    }

    #[test]
    fn finalizers_merge_as_a_set_and_delete_from_primitive_list_removes() {
        let doc = json!({"metadata": {"finalizers": ["a/x", "b/y"]}});
        let out = ok(
            doc.clone(),
            json!({"metadata": {"finalizers": ["c/z", "a/x"]}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["c/z", "a/x", "b/y"]}})
        );
        let out = ok(
            doc,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}}),
        );
        assert_eq!(out, json!({"metadata": {"finalizers": ["b/y"]}}));
    }

    #[test]
    fn owner_references_merge_by_uid() {
        let doc = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}});
        let out = ok(
            doc,
            json!({"metadata": {"ownerReferences": [{"uid": "2", "controller": true}]}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b", "controller": true}]}})
        );
    }

    #[test]
    fn lists_without_merge_strategy_are_replaced() {
        let doc = pod(json!([{"name": "a", "args": ["1", "2"]}]));
        let out = ok(doc, pod(json!([{"name": "a", "args": ["3"]}])));
        assert_eq!(out, pod(json!([{"name": "a", "args": ["3"]}])));
        let out = strategic_merge_patch(&json!({"l": [1, 2]}), br#"{"l": [3]}"#, &NoPatchMeta).ok();
        assert_eq!(out, Some(json!({"l": [3]})));
    }

    #[test]
    fn null_deletes_and_new_values_lose_nulls_and_directives() {
        let doc = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let out = ok(
            doc,
            json!({"metadata": {"labels": {"a": null}, "annotations": {"x": null, "y": "1"}}, "spec": {"n": {"$patch": "delete"}, "m": {"k": 1}}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"b": "2"}, "annotations": {"y": "1"}}, "spec": {"m": {"k": 1}}})
        );
    }

    #[test]
    fn patch_replace_and_delete_directives_on_maps_and_lists() {
        let doc = json!({"spec": {"template": {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        let out = ok(
            doc,
            json!({"spec": {"template": {
                "metadata": {"labels": {"$patch": "replace", "z": "9"}},
                "spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}
            }}}),
        );
        assert_eq!(
            out,
            json!({"spec": {"template": {"metadata": {"labels": {"z": "9"}}, "spec": {"containers": [{"name": "c"}]}}}})
        );
        let out = ok(
            json!({"spec": {"template": {"x": 1}, "y": 2}}),
            json!({"spec": {"template": {"$patch": "delete"}}}),
        );
        assert_eq!(out, json!({"spec": {"template": {}, "y": 2}}));
    }

    #[test]
    fn retain_keys_drops_keys_not_listed() {
        let doc = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let out = ok(
            doc.clone(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
        let e = smp(
            doc.clone(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
        );
        assert_eq!(
            e.err().map(|e| (e.code, e.message)),
            Some((400, "invalid patch format of retainKeys".into()))
        );
        let e = smp(doc, json!({"spec": {"strategy": {"$retainKeys": "type"}}}));
        assert_eq!(e.err().map(|e| e.code), Some(400));
    }

    #[test]
    fn unknown_patch_directive_is_kubes_500() {
        let e = smp(
            json!({"spec": {"a": {}}}),
            json!({"spec": {"a": {"$patch": "foo"}}}),
        );
        assert_eq!(
            e.err().map(|e| (e.code, e.reason, e.message)),
            Some((
                500,
                String::new(),
                "unknown patch type: foo in map: map[$patch:foo]".into()
            ))
        );
        let e = smp(
            pod(json!([{"name": "a"}])),
            pod(json!([{"name": "a", "$patch": "merge"}])),
        );
        assert_eq!(
            e.err().map(|e| e.message),
            Some("merging lists cannot yet be specified in the patch".into())
        );
    }

    #[test]
    fn malformed_directive_keys_are_400() {
        let e = smp(json!({}), json!({"$setElementOrderfoo": []}));
        assert_eq!(
            e.err().map(|e| (e.code, e.message)),
            Some((400, "invalid patch format of setElementOrder list".into()))
        );
        let e = smp(json!({}), json!({"$deleteFromPrimitiveListfoo": []}));
        assert_eq!(
            e.err().map(|e| (e.code, e.message)),
            Some((400, "invalid patch format of primitive list".into()))
        );
    }

    #[test]
    fn missing_merge_key_is_reported_with_the_element() {
        let e = smp(pod(json!([{"name": "a"}])), pod(json!([{"image": "x"}])));
        assert_eq!(
            e.err().map(|e| (e.code, e.message)),
            Some((
                500,
                "map: map[image:x] does not contain declared merge key: name".into()
            ))
        );
    }

    #[test]
    fn lists_of_lists_are_422() {
        let doc = json!({"metadata": {"finalizers": [["a"]]}});
        let e = smp(doc, json!({"metadata": {"finalizers": [["b"]]}}));
        assert_eq!(e.err().map(|e| e.code), Some(422));
    }

    #[test]
    fn patch_bodies_that_are_not_objects_are_400_and_null_is_a_no_op() {
        let e = strategic_merge_patch(&json!({}), b"[1]", &NoPatchMeta)
            .err()
            .map(|e| (e.code, e.message));
        assert_eq!(
            e,
            Some((
                400,
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            ))
        );
        let out = strategic_merge_patch(&json!({"a": 1}), b"null", &NoPatchMeta).ok();
        assert_eq!(out, Some(json!({"a": 1})));
    }
}
