//! The patch engines: RFC 6902 JSON patch, RFC 7386 JSON merge patch, and
//! Kubernetes strategic merge patch (SMP) with its directives (`$patch`,
//! `$setElementOrder`, `$retainKeys`, `$deleteFromPrimitiveList`).
//!
//! SMP needs to know, per field, whether a list merges (and by which key) or
//! is replaced: that comes in through [`PatchMeta`], implemented over the
//! OpenAPI schemas by the openapi crate. [`NoPatchMeta`] treats every list as
//! atomic (what SMP does for fields it knows nothing of).
//!
//! TO BE IMPLEMENTED (apimachinery helper): `json_patch`, `merge_patch`,
//! `strategic_merge_patch`, each `fn(&Value, &Value|&[u8]) -> Result<Value, PatchError>`.

/// How a field takes part in a strategic merge patch (Go struct tags
/// `patchStrategy` / `patchMergeKey`, OpenAPI `x-kubernetes-patch-strategy` /
/// `x-kubernetes-patch-merge-key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPatchMeta {
    /// `merge` on a list: merge elements (by `merge_key` for lists of objects,
    /// as a set for lists of primitives). Absent: lists are replaced whole.
    pub merge: bool,
    /// `retainKeys` strategy present (maps: drop keys not in the patch's `$retainKeys`).
    pub retain_keys: bool,
    /// The merge key for lists of objects, e.g. `name`, `containerPort`.
    pub merge_key: Option<String>,
}

/// Schema knowledge for SMP: a node of the schema tree.
pub trait PatchMeta: Send + Sync {
    /// The patch meta of field `name` of the object this node describes, and
    /// the node describing its value (for a list: its items; for a map: its
    /// values). `None` if the field is unknown (treated as atomic lists,
    /// merged maps).
    fn field(&self, name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)>;
}

/// Knows nothing: every list is atomic, every map merges.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPatchMeta;

impl PatchMeta for NoPatchMeta {
    fn field(&self, _name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)> {
        None
    }
}
