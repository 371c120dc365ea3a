//! Per-cluster overrides (SPEC §3.5, beyond Federation v1: what KubeFed and
//! Karmada offer): the annotation `federation.kubernetes.io/overrides` on a
//! federated object holds `{"<cluster>|*": [RFC 6902 ops]}`, applied to the
//! member copy sent to each cluster — first the `"*"` entry, then the entry
//! named after the cluster.
//!
//! The whole annotation is checked each time (so a mistake is reported for
//! every cluster, not only the one it names): it must be a JSON object of
//! JSON Patch arrays, and no mutating op may touch the object's identity
//! (`/apiVersion`, `/kind`, `/metadata/name`, `/metadata/namespace`, nor an
//! ancestor of them such as `/metadata` or the root). `test` ops may read
//! anything. Application is all-or-nothing.
//!
//! Pure functions, no I/O; patches are applied with the `json-patch` crate.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

/// The annotation holding the per-cluster overrides.
pub const OVERRIDES_ANNOTATION: &str = "federation.kubernetes.io/overrides";

/// The entry applied to every cluster (before the cluster's own).
pub const ALL_CLUSTERS: &str = "*";

/// Paths an override may not change: they make the member copy the same
/// object as the federated one.
const PROTECTED: [&[&str]; 4] = [
    &["apiVersion"],
    &["kind"],
    &["metadata", "name"],
    &["metadata", "namespace"],
];

/// Parse and check the annotation: every entry a JSON Patch that leaves the
/// object's identity alone. Returns the patches by entry name.
pub fn parse_overrides(annotation: &str) -> Result<Vec<(String, Patch)>, String> {
    let v: Value = serde_json::from_str(annotation)
        .map_err(|e| format!("invalid {OVERRIDES_ANNOTATION} annotation: invalid JSON: {e}"))?;
    let Value::Object(entries) = v else {
        return Err(format!(
            "invalid {OVERRIDES_ANNOTATION} annotation: must be a JSON object of cluster name (or \"*\") to a list of JSON Patch operations"
        ));
    };
    let mut out = Vec::with_capacity(entries.len());
    for (cluster, ops) in entries {
        let patch: Patch = serde_json::from_value(ops).map_err(|e| {
            format!("invalid {OVERRIDES_ANNOTATION} annotation: entry {cluster:?}: not a JSON Patch: {e}")
        })?;
        for (i, op) in patch.iter().enumerate() {
            if let Some(path) = refused_path(op) {
                return Err(format!(
                    "invalid {OVERRIDES_ANNOTATION} annotation: entry {cluster:?}: operation {i} ({}) may not change {path:?}: apiVersion, kind, metadata.name and metadata.namespace are not overridable",
                    op_name(op)
                ));
            }
        }
        out.push((cluster, patch));
    }
    Ok(out)
}

/// Apply the annotation's ops for `cluster` to `member` (the member copy):
/// first the `"*"` entry, then the entry named `cluster`. `annotation` is the
/// raw annotation value (None: nothing to do). On error `member` is left
/// unchanged.
pub fn apply_overrides(
    member: &mut Value,
    annotation: Option<&str>,
    cluster: &str,
) -> Result<(), String> {
    let Some(annotation) = annotation else {
        return Ok(());
    };
    let patches = parse_overrides(annotation)?;
    let pick = |name: &str| patches.iter().find(|(c, _)| c == name).map(|(_, p)| p);
    let order = [
        pick(ALL_CLUSTERS),
        pick(cluster).filter(|_| cluster != ALL_CLUSTERS),
    ];
    if order.iter().all(Option::is_none) {
        return Ok(());
    }
    let mut work = member.clone();
    for (name, patch) in [ALL_CLUSTERS, cluster].into_iter().zip(order) {
        let Some(patch) = patch else { continue };
        json_patch::patch(&mut work, patch).map_err(|e| {
            format!("{OVERRIDES_ANNOTATION} entry {name:?} does not apply to the member object of cluster {cluster:?}: {e}")
        })?;
    }
    *member = work;
    Ok(())
}

/// The op's name as written in the patch.
fn op_name(op: &PatchOperation) -> &'static str {
    match op {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    }
}

/// The first path of a mutating op that is, or is an ancestor of, a
/// protected path (a `move` also removes its `from`).
fn refused_path(op: &PatchOperation) -> Option<String> {
    let written = match op {
        PatchOperation::Test(_) => return None,
        PatchOperation::Move(m) => vec![m.path.as_ptr(), m.from.as_ptr()],
        _ => vec![op.path()],
    };
    written.into_iter().find_map(|p| {
        let tokens: Vec<String> = p.tokens().map(|t| t.decoded().into_owned()).collect();
        let hits = PROTECTED.iter().any(|prot| {
            tokens.len() <= prot.len() && tokens.iter().zip(prot.iter()).all(|(a, b)| a == b)
        });
        hits.then(|| p.as_str().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}
        })
    }

    fn apply(annotation: &str, cluster: &str) -> Result<Value, String> {
        let mut m = member();
        apply_overrides(&mut m, Some(annotation), cluster).map(|()| m)
    }

    fn refused(annotation: &str) -> String {
        let mut m = member();
        let before = m.clone();
        let e = match apply_overrides(&mut m, Some(annotation), "east") {
            Ok(()) => panic!("{annotation} should be refused"),
            Err(e) => e,
        };
        assert_eq!(m, before, "member must be unchanged on error");
        e
    }

    #[test]
    fn no_annotation_changes_nothing() {
        let mut m = member();
        assert_eq!(apply_overrides(&mut m, None, "east"), Ok(()));
        assert_eq!(m, member());
    }

    #[test]
    fn cluster_entry_applies_only_to_that_cluster() {
        let a = r#"{"east": [{"op": "replace", "path": "/spec/replicas", "value": 5}]}"#;
        assert_eq!(
            apply(a, "east").map(|m| m["spec"]["replicas"].clone()),
            Ok(json!(5))
        );
        assert_eq!(apply(a, "west"), Ok(member()));
    }

    #[test]
    fn star_applies_first_then_the_cluster_entry_wins() {
        let a = r#"{
            "east": [{"op": "replace", "path": "/spec/replicas", "value": 7}],
            "*": [{"op": "replace", "path": "/spec/replicas", "value": 1},
                  {"op": "add", "path": "/metadata/labels/tier", "value": "all"}]
        }"#;
        let east = apply(a, "east").unwrap_or_default();
        assert_eq!(east["spec"]["replicas"], json!(7));
        assert_eq!(east["metadata"]["labels"]["tier"], json!("all"));
        let west = apply(a, "west").unwrap_or_default();
        assert_eq!(west["spec"]["replicas"], json!(1));
        assert_eq!(west["metadata"]["labels"]["tier"], json!("all"));
    }

    #[test]
    fn cluster_entry_sees_the_result_of_the_star_entry() {
        let a = r#"{
            "*": [{"op": "add", "path": "/metadata/annotations", "value": {}}],
            "east": [{"op": "add", "path": "/metadata/annotations/x", "value": "y"}]
        }"#;
        let east = apply(a, "east").unwrap_or_default();
        assert_eq!(east["metadata"]["annotations"], json!({"x": "y"}));
    }

    #[test]
    fn list_elements_can_be_overridden() {
        let a = r#"{"east": [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"}]}"#;
        let east = apply(a, "east").unwrap_or_default();
        assert_eq!(
            east["spec"]["template"]["spec"]["containers"][0]["image"],
            json!("nginx:2")
        );
    }

    #[test]
    fn identity_paths_are_refused() {
        for path in [
            "/apiVersion",
            "/kind",
            "/metadata/name",
            "/metadata/namespace",
        ] {
            let a = json!({"east": [{"op": "replace", "path": path, "value": "x"}]}).to_string();
            let e = refused(&a);
            assert!(e.contains(path), "{e}");
            assert!(e.contains("not overridable"), "{e}");
        }
        // Removing works the same way.
        refused(r#"{"east": [{"op": "remove", "path": "/metadata/namespace"}]}"#);
    }

    #[test]
    fn ancestors_of_identity_paths_are_refused() {
        refused(r#"{"*": [{"op": "replace", "path": "/metadata", "value": {"name": "x"}}]}"#);
        refused(r#"{"*": [{"op": "replace", "path": "", "value": {}}]}"#);
    }

    #[test]
    fn moving_from_an_identity_path_is_refused() {
        refused(r#"{"*": [{"op": "move", "from": "/metadata/name", "path": "/spec/x"}]}"#);
        refused(r#"{"*": [{"op": "copy", "from": "/spec/replicas", "path": "/kind"}]}"#);
    }

    #[test]
    fn copying_from_or_testing_an_identity_path_is_allowed() {
        let a = r#"{"*": [
            {"op": "test", "path": "/metadata/name", "value": "web"},
            {"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/name"}
        ]}"#;
        let m = apply(a, "east").unwrap_or_default();
        assert_eq!(m["metadata"]["labels"]["name"], json!("web"));
        assert_eq!(m["metadata"]["name"], json!("web"));
    }

    #[test]
    fn sibling_paths_of_identity_fields_are_allowed() {
        let a = r#"{"*": [{"op": "add", "path": "/metadata/namespaced", "value": 1},
                          {"op": "add", "path": "/metadata/labels/name", "value": "n"}]}"#;
        assert!(apply(a, "east").is_ok());
    }

    #[test]
    fn a_refused_entry_for_another_cluster_is_still_an_error() {
        refused(r#"{"west": [{"op": "replace", "path": "/kind", "value": "Pod"}]}"#);
    }

    #[test]
    fn bad_json_is_refused() {
        assert!(refused("{").contains("invalid JSON"));
        assert!(refused("[]").contains("must be a JSON object"));
        assert!(refused(r#"{"east": {"op": "add"}}"#).contains("not a JSON Patch"));
        assert!(
            refused(r#"{"east": [{"op": "frobnicate", "path": "/x"}]}"#)
                .contains("not a JSON Patch")
        );
        assert!(
            refused(r#"{"east": [{"op": "add", "path": "no-slash", "value": 1}]}"#)
                .contains("not a JSON Patch")
        );
    }

    #[test]
    fn a_failing_op_leaves_the_member_unchanged() {
        // The first op applies, the second fails: all-or-nothing.
        let e = refused(
            r#"{"*": [{"op": "replace", "path": "/spec/replicas", "value": 9}],
                "east": [{"op": "remove", "path": "/spec/missing"}]}"#,
        );
        assert!(e.contains("\"east\""), "{e}");
        let e = refused(r#"{"*": [{"op": "test", "path": "/spec/replicas", "value": 4}]}"#);
        assert!(e.contains("does not apply"), "{e}");
    }
}
