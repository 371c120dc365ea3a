//! What the revision controller writes for one workload, decided from the
//! workload and the revision objects it controls. Pure.
//!
//! The rules are kube's controllers':
//! - **Deployment** (`pkg/controller/deployment/sync.go`): the ReplicaSet
//!   whose template equals the Deployment's (the `pod-template-hash` label
//!   aside) is its current revision; none → a new ReplicaSet
//!   `<deployment>-<hash>` with revision max+1; an older one whose template
//!   comes back (an undo) gets revision max+1. The current ReplicaSet
//!   carries the Deployment's annotations (less those kube never copies)
//!   and its revision (the Deployment does not: the user's object is the
//!   user's, SPEC §3.8, and kubectl reads the ReplicaSets). Old ones
//!   beyond `spec.revisionHistoryLimit` (default 10) are deleted, oldest
//!   first.
//! - **StatefulSet / DaemonSet** (`pkg/controller/history`,
//!   `pkg/controller/daemon/update.go`): the ControllerRevision whose `data`
//!   equals the template's patch is current; none → a new one with
//!   revision max+1; an older equal one gets max+1; old ones beyond the
//!   limit are deleted.
//!
//! Names: a StatefulSet's ControllerRevision is named as kube names it
//! (FNV-32 of `data`, `SafeEncodeString`), byte for byte. A ReplicaSet's
//! and a DaemonSet's hash is kube's `ComputeHash` shape (FNV-32a, then the
//! collision count, `SafeEncodeString`) but over the template's JSON
//! (keys sorted), not over go-spew's dump of the Go struct, which Rust
//! cannot reproduce: same form, different value than a cluster would give
//! the same template. Nothing reads the value back but equality.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::hash::{fnv32, fnv32a, go_json, safe_encode};
use super::{
    CONTROLLER_REVISION_HASH_LABEL, DAEMON_SET_HASH_LABEL, Keeper, POD_TEMPLATE_HASH_LABEL,
    REVISION_ANNOTATION, Revision,
};

/// `revisionHistoryLimit` when the workload does not say (kube's default
/// for `apps/v1`).
pub const DEFAULT_HISTORY_LIMIT: usize = 10;

/// Annotations of a Deployment never copied to its ReplicaSets (kube's
/// `skipCopyAnnotation`), kept on the Deployment by `kubectl rollout undo`.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION_ANNOTATION,
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.deployment.rollback.to",
];

/// One write.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Create this revision object.
    Create(Value),
    /// Merge-patch the revision object `name` with `patch`.
    Patch {
        /// Its name.
        name: String,
        /// The JSON merge patch.
        patch: Value,
    },
    /// Delete the revision object `name` (pruned).
    Delete(String),
}

/// The revision the object `obj` of `keeper` records (`None`: not one).
pub fn revision_of(keeper: Keeper, obj: &Value) -> Option<Revision> {
    match keeper {
        Keeper::ReplicaSets => {
            let number = annotation(obj, REVISION_ANNOTATION)?.parse().ok()?;
            let template = without_hash_label(obj.pointer("/spec/template")?);
            let hash = label(obj, POD_TEMPLATE_HASH_LABEL).unwrap_or_default();
            Some(Revision {
                number,
                hash: hash.to_string(),
                template,
            })
        }
        Keeper::StatefulSet | Keeper::DaemonSet => {
            let number = obj.get("revision")?.as_i64()?;
            let mut template = obj.pointer("/data/spec/template")?.clone();
            if let Some(t) = template.as_object_mut() {
                t.shift_remove("$patch");
            }
            let hash = label(obj, hash_label(keeper))
                .or_else(|| name(obj).rsplit_once('-').map(|(_, h)| h))
                .unwrap_or_default();
            Some(Revision {
                number,
                hash: hash.to_string(),
                template,
            })
        }
    }
}

/// The writes that make `owned` (the revision objects `workload`
/// controls) kube's history of `workload`; `taken` holds every name of the
/// revision kind in the workload's namespace (a new name avoids them).
pub fn plan(
    keeper: Keeper,
    workload: &Value,
    owned: &[Value],
    taken: &BTreeSet<String>,
) -> Vec<Step> {
    let Some(template) = workload.pointer("/spec/template") else {
        return Vec::new();
    };
    let mut revs: Vec<(&Value, Revision)> = owned
        .iter()
        .filter_map(|o| Some((o, revision_of(keeper, o)?)))
        .collect();
    revs.sort_by_key(|(_, r)| r.number);
    let max = revs.last().map_or(0, |(_, r)| r.number);
    let data = patch_data(template);
    let current = revs
        .iter()
        .rev()
        .find(|(o, r)| match keeper {
            Keeper::ReplicaSets => same_template(&r.template, template),
            Keeper::StatefulSet | Keeper::DaemonSet => {
                o.get("data").is_some_and(|d| go_json(d) == go_json(&data))
            }
        })
        .map(|(o, r)| (name(o).to_string(), r.number));

    let mut steps = Vec::new();
    let current_name = match current {
        Some((n, number)) => {
            let number = if number < max { max + 1 } else { number };
            if let Some(patch) = refresh(keeper, workload, owned, &n, number) {
                steps.push(Step::Patch {
                    name: n.clone(),
                    patch,
                });
            }
            n
        }
        None => {
            let obj = new_revision(keeper, workload, template, &data, max + 1, taken);
            let n = name(&obj).to_string();
            steps.push(Step::Create(obj));
            n
        }
    };
    let limit = workload
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_HISTORY_LIMIT, |l| {
            usize::try_from(l).unwrap_or(usize::MAX)
        });
    let old: Vec<&str> = revs
        .iter()
        .map(|(o, _)| name(o))
        .filter(|n| *n != current_name)
        .collect();
    let excess = old.len().saturating_sub(limit);
    steps.extend(old[..excess].iter().map(|n| Step::Delete((*n).to_string())));
    steps
}

/// What must change on the current revision object `current_name`: its
/// number, and for a ReplicaSet the Deployment's annotations.
fn refresh(
    keeper: Keeper,
    workload: &Value,
    owned: &[Value],
    current_name: &str,
    number: i64,
) -> Option<Value> {
    let obj = owned.iter().find(|o| name(o) == current_name)?;
    match keeper {
        Keeper::ReplicaSets => {
            let want = replica_set_annotations(workload, number);
            let have = obj
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if want == have {
                return None;
            }
            let mut patch: Map<String, Value> = want.clone();
            for k in have.keys().filter(|k| !want.contains_key(*k)) {
                patch.insert(k.clone(), Value::Null);
            }
            Some(json!({"metadata": {"annotations": patch}}))
        }
        Keeper::StatefulSet | Keeper::DaemonSet => (obj.get("revision").and_then(Value::as_i64)
            != Some(number))
        .then(|| json!({ "revision": number })),
    }
}

/// A new revision object of `workload`, numbered `number`.
fn new_revision(
    keeper: Keeper,
    workload: &Value,
    template: &Value,
    data: &Value,
    number: i64,
    taken: &BTreeSet<String>,
) -> Value {
    let owner_name = name(workload);
    let kind = workload
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let owner = json!([{
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": owner_name,
        "uid": workload.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    let namespace = workload
        .pointer("/metadata/namespace")
        .cloned()
        .unwrap_or(Value::Null);
    let template_labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // kube bumps a collision count until the name is free (`taken` holds
    // only objects that are not this revision).
    let (obj_name, hash) = (0u32..)
        .map(|probe| {
            let hash = revision_hash(keeper, template, data, probe);
            (revision_name(owner_name, &hash), hash)
        })
        .find(|(n, _)| !taken.contains(n))
        .unwrap_or_default();
    let mut labels = template_labels;
    labels.insert(hash_label(keeper).into(), json!(hash));
    match keeper {
        Keeper::ReplicaSets => {
            let mut rs_template = template.clone();
            set_label(&mut rs_template, &hash);
            let mut selector = workload
                .pointer("/spec/selector")
                .cloned()
                .unwrap_or(json!({}));
            if let Some(s) = selector.as_object_mut() {
                let ml = s.entry("matchLabels").or_insert(json!({}));
                if let Some(ml) = ml.as_object_mut() {
                    ml.insert(POD_TEMPLATE_HASH_LABEL.into(), json!(hash));
                }
            }
            let mut spec = json!({"replicas": 0, "selector": selector, "template": rs_template});
            if let Some(m) = workload.pointer("/spec/minReadySeconds") {
                spec["minReadySeconds"] = m.clone();
            }
            json!({
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": obj_name,
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": replica_set_annotations(workload, number),
                    "ownerReferences": owner,
                },
                "spec": spec,
            })
        }
        Keeper::StatefulSet | Keeper::DaemonSet => {
            let mut metadata = json!({
                "name": obj_name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": owner,
            });
            // The DaemonSet controller copies the DaemonSet's annotations;
            // kube's history package (StatefulSets) copies none.
            if keeper == Keeper::DaemonSet
                && let Some(a) = workload
                    .pointer("/metadata/annotations")
                    .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
            {
                metadata["annotations"] = a.clone();
            }
            json!({
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": metadata,
                "data": data,
                "revision": number,
            })
        }
    }
}

/// A ControllerRevision's `data` for `template`: the strategic merge
/// patch that puts it back (kube's `getPatch` of both controllers).
pub fn patch_data(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(m) = t.as_object_mut() {
        m.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": t}})
}

/// The hash of a new revision, with collision count `probe`.
pub fn revision_hash(keeper: Keeper, template: &Value, data: &Value, probe: u32) -> String {
    match keeper {
        // `history.HashControllerRevision`: FNV-32 of the raw data, then
        // the probe in decimal.
        Keeper::StatefulSet => {
            let mut bytes = go_json(data).into_bytes();
            if probe > 0 {
                bytes.extend(probe.to_string().bytes());
            }
            safe_encode(fnv32(&bytes))
        }
        // `controller.ComputeHash`'s shape: FNV-32a, then the collision
        // count's four little-endian bytes.
        Keeper::ReplicaSets | Keeper::DaemonSet => {
            let mut bytes = go_json(template).into_bytes();
            if probe > 0 {
                bytes.extend(probe.to_le_bytes());
            }
            safe_encode(fnv32a(&bytes))
        }
    }
}

/// `<owner>-<hash>`, the owner's name cut to 223 characters as kube's
/// `ControllerRevisionName` cuts it.
pub fn revision_name(owner: &str, hash: &str) -> String {
    let prefix: String = owner.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// Whether two pod templates are the same, the `pod-template-hash` label
/// aside, and null or empty fields equal to missing ones (kube's
/// `EqualIgnoreHash` with `Semantic.DeepEqual`).
pub fn same_template(a: &Value, b: &Value) -> bool {
    normalized(&without_hash_label(a)) == normalized(&without_hash_label(b))
}

fn normalized(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Object(m) => {
            let m: Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), normalized(v)?)))
                .collect();
            (!m.is_empty()).then_some(Value::Object(m))
        }
        Value::Array(a) if a.is_empty() => None,
        Value::Array(a) => Some(Value::Array(
            a.iter()
                .map(|v| normalized(v).unwrap_or(Value::Null))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

fn without_hash_label(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut)
        && let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut)
    {
        labels.shift_remove(POD_TEMPLATE_HASH_LABEL);
        if labels.is_empty() {
            meta.shift_remove("labels");
        }
    }
    t
}

fn set_label(template: &mut Value, hash: &str) {
    if let Some(t) = template.as_object_mut() {
        let meta = t.entry("metadata").or_insert(json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let labels = meta.entry("labels").or_insert(json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert(POD_TEMPLATE_HASH_LABEL.into(), json!(hash));
            }
        }
    }
}

/// A Deployment's current ReplicaSet's annotations: the Deployment's,
/// less [`NOT_COPIED`], and the revision.
fn replica_set_annotations(workload: &Value, number: i64) -> Map<String, Value> {
    let mut out: Map<String, Value> = workload
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter(|(k, _)| !NOT_COPIED.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    out.insert(REVISION_ANNOTATION.into(), json!(number.to_string()));
    out
}

fn hash_label(keeper: Keeper) -> &'static str {
    match keeper {
        Keeper::ReplicaSets => POD_TEMPLATE_HASH_LABEL,
        Keeper::StatefulSet => CONTROLLER_REVISION_HASH_LABEL,
        Keeper::DaemonSet => DAEMON_SET_HASH_LABEL,
    }
}

fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")?.get(key)?.as_str()
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/labels")?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(image: &str, annotations: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u1", "annotations": annotations},
            "spec": {"replicas": 4, "revisionHistoryLimit": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": image}]}}}
        })
    }

    /// Apply `steps` to `owned` as the API server would.
    fn apply(owned: &mut Vec<Value>, steps: &[Step]) {
        for s in steps {
            match s {
                Step::Create(o) => owned.push(o.clone()),
                Step::Patch { name: n, patch } => {
                    if let Some(o) = owned.iter_mut().find(|o| name(o) == n) {
                        json_patch::merge(o, patch);
                    }
                }
                Step::Delete(n) => owned.retain(|o| name(o) != n),
            }
        }
    }

    fn names(owned: &[Value]) -> BTreeSet<String> {
        owned.iter().map(|o| name(o).to_string()).collect()
    }

    fn numbers(keeper: Keeper, owned: &[Value]) -> Vec<(i64, String)> {
        let mut v: Vec<(i64, String)> = owned
            .iter()
            .filter_map(|o| revision_of(keeper, o))
            .map(|r| {
                (
                    r.number,
                    r.template
                        .pointer("/spec/containers/0/image")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_deployment_gets_a_replica_set_per_template_and_undo_renumbers_the_old_one() {
        let mut owned = Vec::new();
        let d1 = deployment(
            "nginx:1",
            json!({"kubernetes.io/change-cause": "first", "federation.kubernetes.io/overrides": "{}"}),
        );
        let steps = plan(Keeper::ReplicaSets, &d1, &owned, &names(&owned));
        assert_eq!(steps.len(), 1, "{steps:?}");
        let Step::Create(rs) = &steps[0] else {
            panic!("{steps:?}")
        };
        let hash = rs
            .pointer("/metadata/labels/pod-template-hash")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        assert_eq!(name(rs), format!("web-{hash}"));
        assert_eq!(rs["spec"]["replicas"], 0);
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"],
            json!({"app": "web", "pod-template-hash": hash})
        );
        assert_eq!(
            rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
            json!(hash)
        );
        assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
            "1"
        );
        assert_eq!(
            rs["metadata"]["annotations"]["kubernetes.io/change-cause"],
            "first"
        );
        assert_eq!(
            rs["metadata"]["annotations"]["federation.kubernetes.io/overrides"],
            "{}"
        );
        apply(&mut owned, &steps);
        // In step: nothing to write.
        let mut d1_annotated = d1.clone();
        d1_annotated["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
        assert_eq!(
            plan(Keeper::ReplicaSets, &d1_annotated, &owned, &names(&owned)),
            vec![]
        );

        let d2 = deployment("nginx:2", json!({"kubernetes.io/change-cause": "second"}));
        let steps = plan(Keeper::ReplicaSets, &d2, &owned, &names(&owned));
        apply(&mut owned, &steps);
        assert_eq!(
            numbers(Keeper::ReplicaSets, &owned),
            [(1, "nginx:1".into()), (2, "nginx:2".into())]
        );

        // Undo: the first template comes back, its ReplicaSet becomes 3
        // and takes the Deployment's annotations.
        let undone = deployment("nginx:1", json!({"kubernetes.io/change-cause": "undo"}));
        let steps = plan(Keeper::ReplicaSets, &undone, &owned, &names(&owned));
        apply(&mut owned, &steps);
        assert_eq!(
            numbers(Keeper::ReplicaSets, &owned),
            [(2, "nginx:2".into()), (3, "nginx:1".into())]
        );
        let rs1 = owned
            .iter()
            .find(|o| {
                o.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                    == Some(&json!("3"))
            })
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            rs1["metadata"]["annotations"]["kubernetes.io/change-cause"],
            "undo"
        );
        assert!(
            rs1.pointer("/metadata/annotations/federation.kubernetes.io~1overrides")
                .is_none()
        );
    }

    #[test]
    fn old_revisions_beyond_the_limit_are_pruned_oldest_first() {
        let mut owned = Vec::new();
        for i in 1..=5 {
            let d = deployment(&format!("nginx:{i}"), json!({}));
            let steps = plan(Keeper::ReplicaSets, &d, &owned, &names(&owned));
            apply(&mut owned, &steps);
        }
        // Limit 2: the current one and two old ones.
        assert_eq!(
            numbers(Keeper::ReplicaSets, &owned),
            [
                (3, "nginx:3".into()),
                (4, "nginx:4".into()),
                (5, "nginx:5".into())
            ]
        );
    }

    #[test]
    fn a_taken_name_moves_the_new_revision_to_the_next_collision_count() {
        let d = deployment("nginx:1", json!({}));
        let steps = plan(Keeper::ReplicaSets, &d, &[], &BTreeSet::new());
        let Some(Step::Create(first)) = steps.first() else {
            panic!("{steps:?}")
        };
        let taken: BTreeSet<String> = [name(first).to_string()].into();
        let steps = plan(Keeper::ReplicaSets, &d, &[], &taken);
        let Some(Step::Create(second)) = steps.first() else {
            panic!("{steps:?}")
        };
        assert_ne!(name(first), name(second));
        assert!(name(second).starts_with("web-"));
    }

    #[test]
    fn templates_compare_like_kube_semantic_equality_ignoring_the_hash() {
        let a = json!({"metadata": {"labels": {"app": "w", "pod-template-hash": "x"}}, "spec": {"containers": [{"name": "c", "env": []}]}});
        let b = json!({"metadata": {"labels": {"app": "w"}, "annotations": null}, "spec": {"containers": [{"name": "c"}]}});
        assert!(same_template(&a, &b));
        let c =
            json!({"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{"name": "d"}]}});
        assert!(!same_template(&a, &c));
    }

    fn stateful_set(kind: &str, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "db", "namespace": "shop", "uid": "u2", "annotations": {"a": "b"}},
            "spec": {"selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "c", "image": image}]}}}
        })
    }

    #[test]
    fn a_stateful_set_gets_controller_revisions_named_as_kube_names_them() {
        let s = stateful_set("StatefulSet", "pg:1");
        let steps = plan(Keeper::StatefulSet, &s, &[], &BTreeSet::new());
        assert_eq!(steps.len(), 1, "no annotation on a StatefulSet: {steps:?}");
        let Step::Create(cr) = &steps[0] else {
            panic!("{steps:?}")
        };
        let raw = r#"{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"image":"pg:1","name":"c"}]}}}}"#;
        assert_eq!(go_json(&cr["data"]), raw);
        let hash = safe_encode(fnv32(raw.as_bytes()));
        assert_eq!(name(cr), format!("db-{hash}"));
        assert_eq!(
            cr["metadata"]["labels"],
            json!({"app": "db", "controller.kubernetes.io/hash": hash})
        );
        assert_eq!(cr["revision"], 1);
        assert!(cr["metadata"].get("annotations").is_none());
        assert_eq!(cr["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        let r = revision_of(Keeper::StatefulSet, cr);
        assert_eq!(
            r.map(|r| (r.number, r.template)),
            Some((1, s["spec"]["template"].clone()))
        );
    }

    #[test]
    fn a_daemon_set_template_that_comes_back_reuses_its_revision_with_a_new_number() {
        let mut owned = Vec::new();
        for image in ["fl:1", "fl:2", "fl:1"] {
            let ds = stateful_set("DaemonSet", image);
            let steps = plan(Keeper::DaemonSet, &ds, &owned, &names(&owned));
            apply(&mut owned, &steps);
        }
        assert_eq!(owned.len(), 2);
        assert_eq!(
            numbers(Keeper::DaemonSet, &owned),
            [(2, "fl:2".into()), (3, "fl:1".into())]
        );
        assert!(
            owned
                .iter()
                .all(|o| o["metadata"]["annotations"]["a"] == "b")
        );
        assert!(owned.iter().all(|o| {
            o.pointer("/metadata/labels/controller-revision-hash")
                .is_some()
        }));
    }
}
