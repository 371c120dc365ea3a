//! [`PatchMeta`] over the OpenAPI definitions: what strategic merge patch
//! needs to know per field (merge or replace a list, by which key, retain
//! keys), read from `x-kubernetes-patch-strategy` /
//! `x-kubernetes-patch-merge-key` the way kube-apiserver's
//! `PatchMetaFromOpenAPI` does: the extension sits on the property; the value
//! is described by the property's schema after following `$ref`s, a list by
//! its `items`; on a map node every key is a field described by its
//! `additionalProperties` (Go's `LookupPatchMetadataForStruct` on a map).

use std::sync::Arc;

use serde_json::Value;
use ubernetes_apimachinery::patch::{FieldPatchMeta, NoPatchMeta, PatchMeta};

use crate::definitions::{Snapshot, definitions};

/// The patch metadata of a definition (e.g. `io.k8s.api.apps.v1.Deployment`),
/// from the current definitions. An unknown definition knows nothing
/// ([`NoPatchMeta`]: every list atomic, every map merged).
pub fn patch_meta(definition: &str) -> Box<dyn PatchMeta> {
    let snapshot = definitions().snapshot();
    patch_meta_in(snapshot, definition)
}

/// [`patch_meta`] over a given snapshot.
pub fn patch_meta_in(snapshot: Arc<Snapshot>, definition: &str) -> Box<dyn PatchMeta> {
    match snapshot.get(definition).cloned() {
        Some(schema) => Box::new(SchemaPatchMeta { snapshot, schema }),
        None => Box::new(NoPatchMeta),
    }
}

/// A node of the schema tree: the schema describing one value.
struct SchemaPatchMeta {
    snapshot: Arc<Snapshot>,
    /// The schema of this value (may be a `$ref`).
    schema: Value,
}

impl SchemaPatchMeta {
    /// The node for a property's value: a list's `items` (SMP merges list
    /// elements one by one), anything else itself (an object's fields, or a
    /// map's keys, are looked up on it, as Go's `LookupPatchMetadataForStruct`
    /// does for both).
    fn value_schema(&self, property: &Value) -> Value {
        let resolved = self.snapshot.resolve(property);
        match resolved.get("items") {
            Some(items) => items.clone(),
            None => property.clone(),
        }
    }
}

impl PatchMeta for SchemaPatchMeta {
    fn field(&self, name: &str) -> Option<(FieldPatchMeta, Box<dyn PatchMeta>)> {
        let resolved = self.snapshot.resolve(&self.schema);
        let property = match resolved.get("properties").and_then(|p| p.get(name)) {
            Some(property) => property,
            None => {
                // A map: every key is described by `additionalProperties`.
                resolved
                    .get("additionalProperties")
                    .filter(|v| v.is_object())?
            }
        };
        let strategy = property
            .get("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .unwrap_or("");
        let meta = FieldPatchMeta {
            merge: strategy.split(',').any(|s| s == "merge"),
            retain_keys: strategy.split(',').any(|s| s == "retainKeys"),
            merge_key: property
                .get("x-kubernetes-patch-merge-key")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        let child = SchemaPatchMeta {
            snapshot: self.snapshot.clone(),
            schema: self.value_schema(property),
        };
        Some((meta, Box::new(child)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(meta: &dyn PatchMeta, fields: &[&str]) -> (FieldPatchMeta, Box<dyn PatchMeta>) {
        let (first, rest) = fields.split_first().expect("non-empty path");
        let (mut m, mut node) = meta.field(first).expect(first);
        for f in rest {
            let (mm, nn) = node.field(f).expect(f);
            m = mm;
            node = nn;
        }
        (m, node)
    }

    #[test]
    fn deployment_containers_merge_by_name() {
        let d = patch_meta("io.k8s.api.apps.v1.Deployment");
        let (m, _) = path(d.as_ref(), &["spec", "template", "spec", "containers"]);
        assert!(m.merge);
        assert_eq!(m.merge_key.as_deref(), Some("name"));
    }

    #[test]
    fn container_ports_merge_by_container_port() {
        let d = patch_meta("io.k8s.api.apps.v1.Deployment");
        let (m, _) = path(
            d.as_ref(),
            &["spec", "template", "spec", "containers", "ports"],
        );
        assert!(m.merge);
        assert_eq!(m.merge_key.as_deref(), Some("containerPort"));
    }

    #[test]
    fn finalizers_merge_as_a_primitive_set() {
        let d = patch_meta("io.k8s.api.apps.v1.Deployment");
        let (m, _) = path(d.as_ref(), &["metadata", "finalizers"]);
        assert!(m.merge);
        assert_eq!(m.merge_key, None);
    }

    #[test]
    fn match_labels_is_a_map_whose_keys_are_known() {
        let d = patch_meta("io.k8s.api.apps.v1.Deployment");
        let (m, labels) = path(d.as_ref(), &["spec", "selector", "matchLabels"]);
        assert!(!m.merge);
        // any key of a map is a field with default (replace) semantics
        let (k, _) = labels.field("app").expect("map value");
        assert_eq!(k, FieldPatchMeta::default());
    }

    #[test]
    fn volumes_merge_and_retain_keys() {
        let p = patch_meta("io.k8s.api.core.v1.Pod");
        let (m, _) = path(p.as_ref(), &["spec", "volumes"]);
        assert!(m.merge && m.retain_keys);
        assert_eq!(m.merge_key.as_deref(), Some("name"));
    }

    #[test]
    fn deployment_strategy_retains_keys_without_merging_lists() {
        let d = patch_meta("io.k8s.api.apps.v1.Deployment");
        let (m, _) = path(d.as_ref(), &["spec", "strategy"]);
        assert!(m.retain_keys);
        assert!(!m.merge);
    }

    #[test]
    fn tolerations_are_atomic() {
        let p = patch_meta("io.k8s.api.core.v1.Pod");
        let (m, _) = path(p.as_ref(), &["spec", "tolerations"]);
        assert_eq!(m, FieldPatchMeta::default());
    }

    #[test]
    fn unknown_fields_and_definitions_know_nothing() {
        let d = patch_meta("io.k8s.api.apps.v1.Deployment");
        assert!(d.field("nope").is_none());
        assert!(patch_meta("com.example.Nothing").field("spec").is_none());
    }
}
