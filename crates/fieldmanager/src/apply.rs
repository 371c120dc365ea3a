//! The field manager: [`apply`] (server-side apply) and [`update`]
//! (ownership tracking for create, update and non-apply patches), as
//! kube-apiserver's default field manager stacks them
//! (`managedfields/internal`: last-applied updater → last-applied manager →
//! skip-non-applied → cap-managers → managed-fields updater → strip-meta →
//! structured merge, over `merge.Updater`).

use std::borrow::Cow;
use std::sync::LazyLock;

use http::StatusCode;
use serde_json::{Value, json};
use ubernetes_apimachinery::{ApiError, Cause};

use crate::last_applied::{
    KUBECTL_MANAGER, allowed_conflicts, build_last_applied, last_applied, set_last_applied,
};
use crate::managed::{Managed, ManagedEntry, ManagerId, Operation, strip_managed_fields};
use crate::path::{Path, PathElement, path_string};
use crate::schema::Schema;
use crate::set::FieldSet;
use crate::typed::{
    Comparison, compare, drop_removal_nulls, merge, remove_items, to_field_set, validated_field_set,
};

/// The manager kube records for what an object held before its first
/// server-side apply, when it was created without managed fields.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The manager older updaters are folded into past [`MAX_UPDATE_MANAGERS`].
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// How many `Update` entries an object keeps (`DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// Who writes, where and when.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The `fieldManager` of the request.
    pub manager: &'a str,
    /// The group/version of the resource as served, e.g. `apps/v1` or `v1`.
    pub api_version: &'a str,
    /// `""` for the main resource, else e.g. `status`.
    pub subresource: &'a str,
    /// The request time, RFC 3339 in UTC (`2024-05-01T10:00:00Z`).
    pub now: &'a str,
    /// The schema of the kind.
    pub schema: Schema<'a>,
    /// Fields this endpoint resets and no one may own through it (the
    /// strategy's reset fields, e.g. `status` on the main resource).
    pub ignored: Option<&'a FieldSet>,
}

/// One field applied with a value another manager owns differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub manager: ManagerId,
    pub path: Path,
}

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// 409 Conflict with `FieldManagerConflict` causes.
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// 400: the applied configuration is not acceptable.
    #[error("{0}")]
    BadRequest(String),
    /// 500 with no reason, as kube-apiserver answers errors that are not a
    /// `Status`: the applied configuration does not fit the schema, or the
    /// live object's managed fields cannot be read.
    #[error("{0}")]
    Internal(String),
}

/// Upstream's `getConflictMessage`.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.manager,
            path_string(&only.path)
        );
    }
    let mut lines = Vec::new();
    let mut current: Option<&ManagerId> = None;
    for c in conflicts {
        if current != Some(&c.manager) {
            lines.push(format!("conflicts with {}:", c.manager));
            current = Some(&c.manager);
        }
        lines.push(format!("- {}", path_string(&c.path)));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

impl From<ApplyError> for ApiError {
    fn from(e: ApplyError) -> Self {
        match e {
            ApplyError::Conflicts(ref conflicts) => {
                let causes = conflicts
                    .iter()
                    .map(|c| {
                        Cause::new(
                            "FieldManagerConflict",
                            format!("conflict with {}", c.manager),
                            path_string(&c.path),
                        )
                    })
                    .collect();
                ApiError::new(StatusCode::CONFLICT, "Conflict", e.to_string()).with_causes(causes)
            }
            ApplyError::BadRequest(m) => ApiError::bad_request(m),
            ApplyError::Internal(m) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "", m),
        }
    }
}

/// Server-side apply `applied` to `live` (`None`: the object does not exist
/// yet and is created by this apply). Returns the new object with its
/// `metadata.managedFields`; defaulting, validation and storage are the
/// caller's.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    force: bool,
    ctx: &Context<'_>,
) -> Result<Value, ApplyError> {
    let patch_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if patch_version != ctx.api_version {
        return Err(ApplyError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {patch_version}, expected: {}",
            ctx.api_version
        )));
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let mut managed = match live {
        Some(live) => Managed::from_object(live)
            .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?,
        None => Managed::default(),
    };
    let live_obj = match live {
        Some(live) => without_managed_fields(live),
        None => ctx.schema.zero_object(),
    };
    let applied_set = validated_field_set(applied, ctx.schema).map_err(|e| {
        ApplyError::Internal(format!(
            "failed to create typed patch object ({}): {e}",
            object_gvknn(applied)
        ))
    })?;

    if managed.is_empty() && live.is_some() {
        track_update(
            &ctx.schema.zero_object(),
            &live_obj,
            &mut managed,
            ctx,
            BEFORE_FIRST_APPLY,
        );
    }

    let id = ManagerId::apply(ctx.manager, ctx.subresource);
    // Only kubectl's apply may be retried (with the same managers), so only
    // it keeps a copy of them.
    let first = if ctx.manager == KUBECTL_MANAGER {
        managed.clone()
    } else {
        std::mem::take(&mut managed)
    };
    let (mut object, managed) =
        match apply_tracked(&live_obj, applied, &applied_set, first, &id, force, ctx) {
            Ok(done) => done,
            Err(conflicts) if ctx.manager == KUBECTL_MANAGER => {
                let Some(allowed) = allowed_conflicts(&live_obj, ctx.api_version, ctx.schema)
                else {
                    return Err(ApplyError::Conflicts(conflicts));
                };
                let remaining: Vec<Conflict> = conflicts
                    .into_iter()
                    .filter(|c| !allowed.has(&c.path))
                    .collect();
                if !remaining.is_empty() {
                    return Err(ApplyError::Conflicts(remaining));
                }
                apply_tracked(&live_obj, applied, &applied_set, managed, &id, true, ctx)
                    .map_err(ApplyError::Conflicts)?
            }
            Err(conflicts) => return Err(ApplyError::Conflicts(conflicts)),
        };

    if ctx.manager == KUBECTL_MANAGER && last_applied(&object).is_some() {
        set_last_applied(&mut object, build_last_applied(applied));
    }
    managed.write_to(&mut object);
    Ok(object)
}

/// Track the ownership change of a create, update or non-apply patch:
/// `new` with its `metadata.managedFields` recomputed. The fields that
/// changed from `old` (`None` on create) become `ctx.manager`'s (an `Update`
/// entry), and leave every other manager that owned them.
///
/// As kube: managed fields sent in `new` replace the live ones (an empty
/// list, or a list of one empty entry, resets them); a subresource write
/// always starts from the live ones; an existing object without managed
/// fields is not tracked.
pub fn update(old: Option<&Value>, new: &Value, ctx: &Context<'_>) -> Value {
    update_owned(old, new.clone(), ctx)
}

/// [`update()`] of an object the caller gives away (the registry's write
/// path): `new` is not copied.
pub fn update_owned(old: Option<&Value>, new: Value, ctx: &Context<'_>) -> Value {
    let live_managed = || {
        old.and_then(|o| Managed::from_object(o).ok())
            .unwrap_or_default()
    };
    let sent = new.pointer("/metadata/managedFields");
    let mut managed = if !ctx.subresource.is_empty() {
        live_managed()
    } else if sent.is_some_and(is_reset) {
        Managed::default()
    } else {
        match Managed::from_object(&new) {
            Ok(m) if !m.is_empty() => m,
            _ => live_managed(),
        }
    };
    let mut new_obj = new;
    strip_managed_fields(&mut new_obj);
    let is_create = old.is_none_or(|o| {
        o.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    });
    if managed.is_empty() && !is_create {
        return new_obj;
    }
    let old_obj = match old {
        Some(o) => without_managed_fields(o),
        None => ctx.schema.zero_object(),
    };
    track_update(&old_obj, &new_obj, &mut managed, ctx, ctx.manager);
    managed.write_to(&mut new_obj);
    new_obj
}

/// A copy of `object` without `metadata.managedFields` (which is not
/// copied only to be dropped).
fn without_managed_fields(object: &Value) -> Value {
    let Value::Object(map) = object else {
        return object.clone();
    };
    let mut out = serde_json::Map::with_capacity(map.len());
    for (key, value) in map {
        let copy = match value {
            Value::Object(meta) if key == "metadata" => Value::Object(
                meta.iter()
                    .filter(|(k, _)| *k != "managedFields")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            _ => value.clone(),
        };
        out.insert(key.clone(), copy);
    }
    Value::Object(out)
}

/// `managedFields: []` or `[{}]`.
fn is_reset(sent: &Value) -> bool {
    match sent.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([only]) => only.as_object().is_some_and(|o| o.is_empty()),
        _ => false,
    }
}

/// `namespace/name; group/version, Kind=kind` (upstream's `objectGVKNN`).
fn object_gvknn(object: &Value) -> String {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_version = text("/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!(
        "{}/{}; {group}/{version}, Kind={}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind")
    )
}

/// What the structured apply, meta stripping, timestamps and the manager cap
/// make of one apply: the new object (the live one if nothing changed) and
/// the new managers.
fn apply_tracked(
    live: &Value,
    applied: &Value,
    applied_set: &FieldSet,
    mut managed: Managed,
    id: &ManagerId,
    force: bool,
    ctx: &Context<'_>,
) -> Result<(Value, Managed), Vec<Conflict>> {
    let changed = structured_apply(live, applied, applied_set, &mut managed, id, force, ctx)?;
    strip_meta(&mut managed, id);
    let object = match changed {
        Some(object) => {
            if let Some(entry) = managed.entries.get_mut(id) {
                entry.time = Some(ctx.now.to_string());
            }
            object
        }
        None => live.clone(),
    };
    cap_update_managers(&mut managed);
    Ok((object, managed))
}

/// `merge.Updater.Apply`: merge, record the applied set, prune what the
/// applier dropped, take ownership (or fail on conflicts). `None` when the
/// object does not change.
fn structured_apply(
    live: &Value,
    applied: &Value,
    applied_set: &FieldSet,
    managed: &mut Managed,
    id: &ManagerId,
    force: bool,
    ctx: &Context<'_>,
) -> Result<Option<Value>, Vec<Conflict>> {
    let schema = ctx.schema;
    let merged = merge(live, applied, schema);
    let (last, time) = managed
        .entries
        .remove(id)
        .map(|p| (p.fields, p.time))
        .unwrap_or_default();
    let set = match ctx.ignored {
        Some(ignored) => applied_set.recursive_difference(ignored),
        None => applied_set.clone(),
    };
    // Applying the same fields as last time (new values, or none changed:
    // the common case of a controller re-applying its copy) prunes
    // nothing: every field the applier owned is still its own. The entry
    // was stored without the metadata nobody owns (`strip_meta`), so the
    // new set is compared in that form.
    let unchanged_set = !last.is_empty() && last == set.difference(strip_set());
    managed.entries.insert(
        id.clone(),
        ManagedEntry {
            fields: set,
            api_version: ctx.api_version.to_string(),
            time,
        },
    );
    let new = if unchanged_set {
        debug_assert_eq!(prune(merged.clone(), managed, &last, schema), merged);
        merged
    } else {
        prune(merged, managed, &last, schema)
    };
    take_ownership(live, &new, managed, Some(id), force, ctx)?;
    Ok((new != *live).then_some(new))
}

/// `merge.Updater.prune`: remove from `merged` the fields the applier owned
/// before (`last`) that no manager owns any more.
fn prune(merged: Value, managed: &Managed, last: &FieldSet, schema: Schema<'_>) -> Value {
    if last.is_empty() {
        return merged;
    }
    let merged = &merged;
    let ensure = |s: &FieldSet| s.ensure_named_fields_are_members(schema);
    let remove = |v: &Value, s: &FieldSet| remove_items(v, s, schema).unwrap_or_else(|| json!({}));
    let fields_of = |v: &Value| ensure(&to_field_set(v, schema));
    let last = ensure(last);
    let merged_set = fields_of(merged);

    // Remove all the applier owned, then add back what anyone owns.
    let pruned = remove(merged, &last);
    let owned = managed
        .entries
        .values()
        .fold(FieldSet::new(), |acc, e| acc.union(&e.fields));
    let keep = fields_of(&pruned).union(&ensure(&owned));
    let pruned = remove(merged, &merged_set.difference(&keep));

    // Only what the applier owned may go.
    let gone = merged_set.difference(&fields_of(&pruned));
    let mut out = remove(merged, &gone.intersection(&last));
    drop_removal_nulls(&mut out, merged, schema);
    out
}

/// `merge.Updater.update`: every manager but `workflow` loses the fields
/// that changed from `old` to `new`; without `force`, a changed field owned
/// by another manager is a conflict instead. The comparison is returned
/// (empty when `workflow` is the only manager: then nothing is compared).
fn take_ownership(
    old: &Value,
    new: &Value,
    managed: &mut Managed,
    workflow: Option<&ManagerId>,
    force: bool,
    ctx: &Context<'_>,
) -> Result<Comparison, Vec<Conflict>> {
    // Only other managers lose fields or conflict: when the applier is
    // the only one (a member copy applied by the federation alone), the
    // comparison decides nothing and is skipped.
    if workflow.is_some() && managed.entries.keys().all(|id| Some(id) == workflow) {
        managed.drop_empty();
        return Ok(Comparison::default());
    }
    // Compare as kube does, on objects decoded into Go structs: value-type
    // structs (`spec`, `status`, …) are always there, never "added".
    let zero = ctx.schema.zero_object();
    let mut cmp = compare(&fill_zero(old, &zero), &fill_zero(new, &zero), ctx.schema);
    if let Some(ignored) = ctx.ignored {
        cmp = cmp.filter(ignored);
    }
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = Vec::new();
    for (id, entry) in &managed.entries {
        if Some(id) == workflow {
            continue;
        }
        let owned = entry.fields.intersection(&changed);
        if !owned.is_empty() {
            conflicts.push((id.clone(), owned));
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(conflicts
            .into_iter()
            .flat_map(|(manager, set)| {
                set.paths().into_iter().map(move |path| Conflict {
                    manager: manager.clone(),
                    path,
                })
            })
            .collect());
    }
    for (id, owned) in conflicts {
        if let Some(entry) = managed.entries.get_mut(&id) {
            entry.fields = entry.fields.difference(&owned);
        }
    }
    if !cmp.removed.is_empty() {
        for (id, entry) in managed.entries.iter_mut() {
            if Some(id) != workflow {
                entry.fields = entry.fields.difference(&cmp.removed);
            }
        }
    }
    managed.drop_empty();
    Ok(cmp)
}

/// `object` with the fields of `zero` it lacks (borrowed when it lacks
/// none, as a stored object or one merged into a zero object does not).
fn fill_zero<'v>(object: &'v Value, zero: &Value) -> Cow<'v, Value> {
    if lacks_zero_fields(object, zero) {
        Cow::Owned(filled_with_zero(object, zero))
    } else {
        Cow::Borrowed(object)
    }
}

/// Whether [`filled_with_zero`] would add anything to `object`.
fn lacks_zero_fields(object: &Value, zero: &Value) -> bool {
    match (object, zero) {
        (Value::Object(o), Value::Object(z)) => z.iter().any(|(k, zv)| match o.get(k) {
            Some(v) => lacks_zero_fields(v, zv),
            None => true,
        }),
        _ => false,
    }
}

fn filled_with_zero(object: &Value, zero: &Value) -> Value {
    match (object, zero) {
        (Value::Object(o), Value::Object(z)) => {
            let mut out = o.clone();
            for (k, zv) in z {
                match out.get_mut(k) {
                    Some(v) => *v = filled_with_zero(v, zv),
                    None => {
                        out.insert(k.clone(), zv.clone());
                    }
                }
            }
            Value::Object(out)
        }
        _ => object.clone(),
    }
}

/// One non-apply write by `manager`, tracked as kube's managed-fields
/// updater does: the changed fields (less the metadata nobody owns) join
/// the manager's `Update` entry, stamped `now`.
fn track_update(old: &Value, new: &Value, managed: &mut Managed, ctx: &Context<'_>, manager: &str) {
    let cmp = take_ownership(old, new, managed, None, true, ctx).unwrap_or_default();
    let mut set = cmp.modified.union(&cmp.added);
    if let Some(ignored) = ctx.ignored {
        set = set.recursive_difference(ignored);
    }
    let set = set.difference(strip_set());
    if !set.is_empty() {
        let id = ManagerId::update(manager, ctx.api_version, ctx.subresource);
        let previous = managed
            .entries
            .get(&id)
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        managed.entries.insert(
            id,
            ManagedEntry {
                fields: set.union(&previous),
                api_version: ctx.api_version.to_string(),
                time: Some(ctx.now.to_string()),
            },
        );
    }
    cap_update_managers(managed);
}

/// The fields no manager owns (upstream's `stripMetaManager`), built once.
fn strip_set() -> &'static FieldSet {
    static STRIP: LazyLock<FieldSet> = LazyLock::new(|| {
        let mut set = FieldSet::new();
        for top in ["apiVersion", "kind", "metadata"] {
            set.insert(&[PathElement::field(top)]);
        }
        for meta in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            set.insert(&[PathElement::field("metadata"), PathElement::field(meta)]);
        }
        set
    });
    &STRIP
}

fn strip_meta(managed: &mut Managed, id: &ManagerId) {
    if let Some(entry) = managed.entries.get_mut(id) {
        entry.fields = entry.fields.difference(strip_set());
        if entry.fields.is_empty() {
            managed.entries.remove(id);
        }
    }
}

/// Upstream's `capManagersManager`: past [`MAX_UPDATE_MANAGERS`] `Update`
/// entries, the oldest are folded, per apiVersion, into an
/// [`ANCIENT_CHANGES`] entry.
fn cap_update_managers(managed: &mut Managed) {
    let mut updaters: Vec<ManagerId> = managed
        .entries
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let seconds = |id: &ManagerId, m: &Managed| {
        m.entries
            .get(id)
            .and_then(|e| e.time.clone())
            .map(|t| t.split('.').next().unwrap_or(&t).to_string())
            .unwrap_or_default()
    };
    updaters.sort_by(|a, b| {
        seconds(a, managed)
            .cmp(&seconds(b, managed))
            .then_with(|| a.cmp(b))
    });
    let mut first_by_version: std::collections::BTreeMap<String, ManagerId> = Default::default();
    let mut length = updaters.len();
    for id in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managed.entries.get(&id).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let bucket = ManagerId::update(ANCIENT_CHANGES, &version, "");
        match first_by_version.get(&version) {
            Some(first) => {
                if !managed.entries.contains_key(&bucket)
                    && let Some(moved) = managed.entries.remove(first)
                {
                    managed.entries.insert(bucket.clone(), moved);
                }
                if let Some(b) = managed.entries.get_mut(&bucket) {
                    b.fields = entry.fields.union(&b.fields);
                    b.time = entry.time.clone();
                }
                managed.entries.remove(&id);
                length -= 1;
            }
            None => {
                first_by_version.insert(version, id);
            }
        }
    }
}
