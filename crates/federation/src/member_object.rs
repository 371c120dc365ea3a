//! What is sent to a member cluster, and what is never propagated
//! (SPEC §3.4).
//!
//! - [`is_propagated`]: the objects the federation keeps to itself (the
//!   namespaces of the member namespace denylist and what lives in them,
//!   per-cluster defaults such as the `default` service account or
//!   `kube-root-ca.crt`, service-account tokens, bootstrap RBAC, CRDs not
//!   labelled federated, objects marked as the federation control plane's
//!   own). The denylist ([`NamespaceDenylist`], `--member-namespace-denylist`,
//!   default [`DEFAULT_NAMESPACE_DENYLIST`]) is process-wide: `serve` installs
//!   the configured one with [`set_namespace_denylist`], so every caller of
//!   [`is_propagated`] (sync, admission, the namespace-first write) applies
//!   the same rules.
//! - [`member_copy`]: the object server-side-applied to a member: the
//!   user's intent only — never a field the federation's own server
//!   assigned (uid, resourceVersion, a Service's clusterIP and node ports, a
//!   Job's generated selector …) nor our control annotations — marked with
//!   [`MANAGED_LABEL`] and [`ORIGIN_UID_ANNOTATION`], per-cluster overrides
//!   applied.
//! - [`content_hash`]: a stable hash of a member copy, for the record of
//!   what was last applied ([`crate::version`]).
//! - [`is_subset`]: whether a member's object still carries everything that
//!   was applied (drift detection that tolerates member defaults and other
//!   field managers).
//!
//! Pure functions over `serde_json::Value`, no I/O.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::overrides::{OVERRIDES_ANNOTATION, apply_overrides};
use crate::policy::{Candidate, KindPolicy};

/// Label on every member object the federation manages (value `"true"`).
pub const MANAGED_LABEL: &str = "federation.kubernetes.io/managed";
/// Annotation on every member object: the uid of its federated object.
pub const ORIGIN_UID_ANNOTATION: &str = "federation.kubernetes.io/origin-uid";
/// Annotation (value `"true"`) on objects that belong to the federation's
/// own control plane: never propagated.
pub const CONTROL_PLANE_ANNOTATION: &str = "federation.kubernetes.io/federation-control-plane";
/// Label on what the federation's standalone controllers made while it
/// had no member (`ubernetes_registry::controllers::standalone::LABEL`,
/// the same string): never propagated.
pub const STANDALONE_CONTROLLER_LABEL: &str = "federation.kubernetes.io/standalone-controller";
/// Label (value `"true"`) on a CRD whose custom resources are federated.
pub const FEDERATED_CRD_LABEL: &str = "federation.kubernetes.io/federated";
/// Annotation on a federated object: what to do with a pre-existing member
/// object of the same name that the federation does not manage: `abort`
/// (leave it, report the conflict) or `adopt` (apply over it and manage
/// it). Wins over `--conflict-resolution` (default `abort`).
pub const CONFLICT_RESOLUTION_ANNOTATION: &str = "federation.kubernetes.io/conflict-resolution";

/// Namespaces whose content is never propagated (each member has its own),
/// whatever the denylist says.
pub const SYSTEM_NAMESPACES: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "federation-system",
];

/// The default `--member-namespace-denylist`: namespaces the federation
/// never writes into in a member (each cluster's own system namespaces:
/// Kubernetes', every add-on's `*-system`, OpenShift's, the federation's).
pub const DEFAULT_NAMESPACE_DENYLIST: [&str; 4] =
    ["kube-*", "*-system", "openshift-*", "federation-system"];

/// Namespaces the federation never writes into in a member cluster, as glob
/// patterns (`*` matches any run of characters, everything else itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceDenylist {
    patterns: Vec<String>,
}

impl Default for NamespaceDenylist {
    fn default() -> Self {
        Self::new(DEFAULT_NAMESPACE_DENYLIST)
    }
}

impl NamespaceDenylist {
    /// The denylist of `patterns` (empty ones are left out).
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Self {
        Self {
            patterns: patterns
                .into_iter()
                .map(|p| p.as_ref().trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
        }
    }

    /// The first pattern `namespace` matches, if any. The system
    /// namespaces ([`SYSTEM_NAMESPACES`]) are always denied.
    pub fn denies(&self, namespace: &str) -> Option<&str> {
        if namespace.is_empty() {
            return None;
        }
        self.patterns
            .iter()
            .find(|p| glob_match(p, namespace))
            .map(String::as_str)
            .or_else(|| SYSTEM_NAMESPACES.iter().find(|s| **s == namespace).copied())
    }

    /// The patterns, as configured.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of
/// characters (also none) and every other character itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut tail) = text.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = rest.split('*').collect();
    let last = parts.pop().unwrap_or_default();
    for part in parts {
        match tail.find(part) {
            Some(i) => tail = &tail[i + part.len()..],
            None => return false,
        }
    }
    tail.len() >= last.len() && tail.ends_with(last)
}

static DENYLIST: std::sync::RwLock<Option<NamespaceDenylist>> = std::sync::RwLock::new(None);

/// Install the process-wide member namespace denylist (`serve` calls this
/// with `--member-namespace-denylist` before anything is propagated or
/// admitted). Until then, [`DEFAULT_NAMESPACE_DENYLIST`] applies.
pub fn set_namespace_denylist(denylist: NamespaceDenylist) {
    match DENYLIST.write() {
        Ok(mut d) => *d = Some(denylist),
        Err(poisoned) => *poisoned.into_inner() = Some(denylist),
    }
}

/// The process-wide member namespace denylist.
pub fn namespace_denylist() -> NamespaceDenylist {
    let d = match DENYLIST.read() {
        Ok(d) => d.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    d.unwrap_or_default()
}

/// Why the federated object `obj` (of the kind of `policy`) is kept out of
/// members by the namespace denylist: `(namespace, pattern)` when it is a
/// Namespace the denylist names or lives in one; `None` otherwise.
pub fn denied_namespace(
    policy: &KindPolicy,
    obj: &Value,
    denylist: &NamespaceDenylist,
) -> Option<(String, String)> {
    let ns = if policy.is_namespace {
        meta_str(obj, "name")
    } else {
        meta_str(obj, "namespace")
    }
    .unwrap_or_default();
    denylist.denies(ns).map(|p| (ns.to_string(), p.to_string()))
}

/// Annotations of the federated object that are never sent to members: our
/// control annotations, and kubectl's record of the federation-side apply.
pub const STRIPPED_ANNOTATIONS: [&str; 15] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    crate::revisions::REVISION_ANNOTATION,
    crate::sync::drift::DRIFT_POLICY_ANNOTATION,
    crate::rollout::ROLLOUT_STRATEGY_ANNOTATION,
    "federation.kubernetes.io/propagation",
    OVERRIDES_ANNOTATION,
    CONFLICT_RESOLUTION_ANNOTATION,
    crate::placement::CLUSTER_SELECTOR_ANNOTATION,
    "federation.kubernetes.io/replica-set-preferences",
    "federation.kubernetes.io/deployment-preferences",
    "federation.alpha.kubernetes.io/replica-set-preferences",
    "federation.alpha.kubernetes.io/deployment-preferences",
    "federation.kubernetes.io/service-ingresses",
    CONTROL_PLANE_ANNOTATION,
    ORIGIN_UID_ANNOTATION,
];

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Whether `obj`'s controller (ownerReference with `controller: true`) is
/// a `batch` CronJob.
fn controlled_by_cron_job(obj: &Value) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("controller").and_then(Value::as_bool) == Some(true)
                    && r.get("kind").and_then(Value::as_str) == Some("CronJob")
                    && r.get("apiVersion")
                        .and_then(Value::as_str)
                        .is_some_and(|v| v.starts_with("batch/"))
            })
        })
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// Whether the federated object `obj`, of the kind whose rules are
/// `policy` ([`crate::policy::of`]), is propagated at all, under the
/// process-wide namespace denylist ([`set_namespace_denylist`]). Also what
/// a member copy must pass (an override must not turn a copy into
/// something never propagated).
pub fn is_propagated(policy: &KindPolicy, obj: &Value) -> bool {
    is_propagated_with(policy, obj, &namespace_denylist())
}

/// [`is_propagated`] under `denylist`.
pub fn is_propagated_with(policy: &KindPolicy, obj: &Value, denylist: &NamespaceDenylist) -> bool {
    not_propagated_because(policy, obj, denylist).is_none()
}

/// Why the object `obj` (of the kind of `policy`) is never propagated
/// under `denylist` (a sentence naming the rule), or `None` when it is:
/// the generic rules (a name, not the control plane's own, not in a denied
/// namespace), then the kind's own ([`KindPolicy::keep_home`]).
pub fn not_propagated_because(
    policy: &KindPolicy,
    obj: &Value,
    denylist: &NamespaceDenylist,
) -> Option<String> {
    let Some(name) = meta_str(obj, "name").filter(|n| !n.is_empty()) else {
        return Some("it has no name".into());
    };
    let namespace = meta_str(obj, "namespace").unwrap_or_default();
    if annotation(obj, CONTROL_PLANE_ANNOTATION) == Some("true") {
        return Some(format!(
            "it is the federation control plane's own ({CONTROL_PLANE_ANNOTATION}: \"true\")"
        ));
    }
    if let Some(controller) = obj
        .pointer("/metadata/labels")
        .and_then(|l| l.get(STANDALONE_CONTROLLER_LABEL))
        .and_then(Value::as_str)
    {
        return Some(format!(
            "the federation's standalone {controller} controller made it while the federation had no member"
        ));
    }
    if controlled_by_cron_job(obj) {
        return Some(
            "a Job controlled by a CronJob is made by each member's cronjob controller".into(),
        );
    }
    if let Some((ns, pattern)) = denied_namespace(policy, obj, denylist) {
        return Some(format!(
            "namespace {ns} matches {pattern:?} of the member namespace denylist \
             (--member-namespace-denylist): the federation never writes into it in a member cluster"
        ));
    }
    (policy.keep_home)(&Candidate {
        name,
        namespace,
        object: obj,
    })
}

/// The object to server-side-apply to `cluster`: built from the federated
/// object, overrides applied. Err only from the overrides annotation.
///
/// Kept: apiVersion, kind, metadata.{name, namespace, labels, annotations}
/// and every other top-level field but `status`; then the control
/// annotations are removed ([`STRIPPED_ANNOTATIONS`]), the fields the
/// federation's server assigned are removed ([`KindPolicy::strip`]), [`MANAGED_LABEL`] and
/// [`ORIGIN_UID_ANNOTATION`] are set, the overrides applied, and the label
/// and annotation set again (an override cannot detach the member object
/// from its federated object).
pub fn member_copy(policy: &KindPolicy, fed: &Value, cluster: &str) -> Result<Value, String> {
    member_copy_with(policy, fed, cluster, None)
}

/// Per-cluster fields of a member copy, decided by the federation (the
/// scheduling controller, see [`crate::sync::ReplicaScheduler`]) rather
/// than written in the federated object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterFields {
    /// JSON pointer → value set in this cluster's copy (e.g.
    /// `/spec/replicas` → its share).
    pub set: std::collections::BTreeMap<String, Value>,
    /// JSON pointers of fields never sent to this cluster (the member owns
    /// them, e.g. `/spec/replicas` of a workload its HPA scales).
    pub omit: std::collections::BTreeSet<String>,
}

impl ClusterFields {
    /// `spec.replicas` = `n` in this cluster.
    pub fn replicas(n: i64) -> Self {
        let mut f = Self::default();
        f.set.insert("/spec/replicas".into(), Value::from(n));
        f
    }

    /// `spec.replicas` left to the member (not sent).
    pub fn without_replicas() -> Self {
        let mut f = Self::default();
        f.omit.insert("/spec/replicas".into());
        f
    }

    /// The field at `pointer` = `n` in this cluster (a kind's replicas,
    /// [`crate::policy::Replicas::Workload`]).
    pub fn set_at(pointer: &str, n: i64) -> Self {
        let mut f = Self::default();
        f.set.insert(pointer.into(), Value::from(n));
        f
    }

    /// The field at `pointer` left to the member (not sent).
    pub fn omit_at(pointer: &str) -> Self {
        let mut f = Self::default();
        f.omit.insert(pointer.into());
        f
    }

    /// Nothing set, nothing omitted.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.omit.is_empty()
    }

    /// Set and omit in `copy`: a set creates missing objects on the way;
    /// an omit removes the field if present.
    pub fn apply_to(&self, copy: &mut Value) {
        self.apply_sets(copy);
        self.apply_omits(copy);
    }

    fn apply_sets(&self, copy: &mut Value) {
        for (pointer, v) in &self.set {
            set_pointer(copy, pointer, v.clone());
        }
    }

    fn apply_omits(&self, copy: &mut Value) {
        for pointer in &self.omit {
            if let Some((parent, last)) = pointer.rsplit_once('/')
                && let Some(obj) = copy.pointer_mut(parent).and_then(Value::as_object_mut)
            {
                obj.shift_remove(&unescape(last));
            }
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn set_pointer(root: &mut Value, pointer: &str, v: Value) {
    let mut cur = root;
    let tokens: Vec<String> = pointer.split('/').skip(1).map(unescape).collect();
    let Some((last, path)) = tokens.split_last() else {
        return;
    };
    for t in path {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Some(obj) = cur.as_object_mut() else {
            return;
        };
        cur = obj
            .entry(t.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    if let Some(obj) = cur.as_object_mut() {
        obj.insert(last.clone(), v);
    }
}

/// [`member_copy`] with the federation's per-cluster `fields`: set before
/// the user's overrides (an explicit override wins), omitted after them (a
/// field the member owns is never sent).
pub fn member_copy_with(
    policy: &KindPolicy,
    fed: &Value,
    cluster: &str,
    fields: Option<&ClusterFields>,
) -> Result<Value, String> {
    let mut out = Map::new();
    if let Some(fields) = fed.as_object() {
        for (k, v) in fields {
            match k.as_str() {
                "status" => {}
                "metadata" => {
                    out.insert(k.clone(), Value::Object(copy_metadata(v)));
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    if !out.contains_key("metadata") {
        out.insert("metadata".into(), Value::Object(Map::new()));
    }
    let mut copy = Value::Object(out);
    (policy.strip)(&mut copy);
    let uid = meta_str(fed, "uid").unwrap_or_default();
    mark(&mut copy, uid);
    if let Some(f) = fields {
        f.apply_sets(&mut copy);
    }
    apply_overrides(&mut copy, annotation(fed, OVERRIDES_ANNOTATION), cluster)?;
    if let Some(f) = fields {
        f.apply_omits(&mut copy);
    }
    mark(&mut copy, uid);
    Ok(copy)
}

/// name, namespace, labels and annotations (minus ours) of the federated
/// object's metadata.
fn copy_metadata(meta: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for key in ["name", "namespace", "labels", "annotations"] {
        if let Some(v) = meta.get(key).filter(|v| !v.is_null()) {
            m.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Object(ann)) = m.get_mut("annotations") {
        for a in STRIPPED_ANNOTATIONS {
            ann.shift_remove(a);
        }
    }
    m
}

/// Set [`MANAGED_LABEL`] and [`ORIGIN_UID_ANNOTATION`] (when the federated
/// object has a uid).
fn mark(copy: &mut Value, uid: &str) {
    let Some(meta) = copy.get_mut("metadata") else {
        return;
    };
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    set_in(meta, "labels", MANAGED_LABEL, "true");
    if !uid.is_empty() {
        set_in(meta, "annotations", ORIGIN_UID_ANNOTATION, uid);
    }
}

/// `meta[map][key] = value`, creating the map if missing or not a map.
fn set_in(meta: &mut Value, map: &str, key: &str, value: &str) {
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let entry = meta.entry(map).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Some(m) = entry.as_object_mut() {
        m.insert(key.into(), Value::String(value.into()));
    }
}

/// A stable content hash of a member copy: hex of the first 16 bytes of the
/// sha256 of its compact JSON with object keys sorted (so key order does
/// not matter).
pub fn content_hash(v: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(v, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// `v` as compact JSON with object keys sorted (what [`content_hash`]
/// hashes).
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

/// Compact JSON with object keys sorted.
fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(child) = m.get(k) {
                    write_canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(e, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Whether every field of `desired` is present with the same value in
/// `actual` (the member's object): objects: each key of desired recursively
/// a subset; arrays: same length and element-wise subset; scalars: equal
/// (numbers by value, so `1` and `1.0` are equal). At the top level, only
/// metadata's labels, annotations, name and namespace are compared.
///
/// A desired field whose value is empty (`null`, `""`, `0`, `false`, `{}`,
/// `[]`) is also satisfied by its absence, since the member's server drops
/// such values from `omitempty` fields.
pub fn is_subset(desired: &Value, actual: &Value) -> bool {
    let (Value::Object(d), Value::Object(a)) = (desired, actual) else {
        return subset(desired, actual);
    };
    d.iter().all(|(k, dv)| {
        if k == "metadata" {
            let Some(dm) = dv.as_object() else {
                return true;
            };
            let am = a.get("metadata").unwrap_or(&Value::Null);
            ["name", "namespace", "labels", "annotations"]
                .iter()
                .all(|f| field_subset(dm.get(*f), am.get(*f)))
        } else {
            field_subset(Some(dv), a.get(k))
        }
    })
}

/// An object field: absent in desired, or empty and absent in actual, or a
/// subset.
fn field_subset(desired: Option<&Value>, actual: Option<&Value>) -> bool {
    match (desired, actual) {
        (None, _) => true,
        (Some(d), None) => is_empty_value(d),
        (Some(d), Some(a)) => subset(d, a),
    }
}

fn subset(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(d), Value::Object(a)) => {
            d.iter().all(|(k, dv)| field_subset(Some(dv), a.get(k)))
        }
        (Value::Array(d), Value::Array(a)) => {
            d.len() == a.len() && d.iter().zip(a).all(|(dv, av)| subset(dv, av))
        }
        (Value::Number(d), Value::Number(a)) => {
            d == a || matches!((d.as_f64(), a.as_f64()), (Some(x), Some(y)) if x == y)
        }
        (Value::Null, Value::Null) => true,
        // Empty desired collections match their null/absent rendering.
        (d, Value::Null) => is_empty_value(d),
        (d, a) => d == a,
    }
}

/// `null`, `""`, `0`, `false`, `{}`, `[]`, or an object of only such values.
pub fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_empty_value),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn standalone_made_objects_and_cron_jobs_jobs_stay_home() {
        use super::*;
        use serde_json::json;
        let deny = NamespaceDenylist::new(Vec::<String>::new());
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "c-1", "namespace": "app", "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "CronJob", "name": "c", "uid": "u", "controller": true}]}});
        let policy = crate::policy::of_object(&job);
        assert!(not_propagated_because(policy, &job, &deny).is_some_and(|r| r.contains("CronJob")));
        let own = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "app"}});
        assert!(not_propagated_because(policy, &own, &deny).is_none());
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
            "name": "web", "namespace": "app", "labels": {STANDALONE_CONTROLLER_LABEL: "replicaset"}}});
        let policy = crate::policy::of_object(&rs);
        assert!(
            not_propagated_because(policy, &rs, &deny).is_some_and(|r| r.contains("standalone"))
        );
    }

    #[test]
    fn scheduled_fields_are_set_before_overrides_and_omitted_after() {
        let fed = serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "app", "uid": "u1",
                "annotations": {OVERRIDES_ANNOTATION: r#"{"m2": [{"op": "replace", "path": "/spec/replicas", "value": 7}]}"#}},
            "spec": {"replicas": 10, "paused": false}
        });
        let five = ClusterFields::replicas(5);
        let m1 =
            member_copy_with(k("apps", "Deployment"), &fed, "m1", Some(&five)).unwrap_or_default();
        assert_eq!(m1["spec"]["replicas"], 5);
        let m2 =
            member_copy_with(k("apps", "Deployment"), &fed, "m2", Some(&five)).unwrap_or_default();
        assert_eq!(m2["spec"]["replicas"], 7, "the user's override wins");
        let hpa = ClusterFields::without_replicas();
        let m3 =
            member_copy_with(k("apps", "Deployment"), &fed, "m2", Some(&hpa)).unwrap_or_default();
        assert!(m3["spec"].get("replicas").is_none(), "{m3}");
        assert_eq!(m3["spec"]["paused"], false);
        let mut deep = ClusterFields::default();
        deep.set
            .insert("/spec/template/x~1y".into(), serde_json::json!(1));
        let d =
            member_copy_with(k("apps", "Deployment"), &fed, "m1", Some(&deep)).unwrap_or_default();
        assert_eq!(d["spec"]["template"]["x/y"], 1);
    }

    use super::*;
    use serde_json::json;

    /// The policy of `group`/`kind`.
    fn k(group: &str, kind: &str) -> &'static KindPolicy {
        crate::policy::of(group, kind)
    }

    fn obj(resource_meta: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "X", "metadata": resource_meta})
    }

    fn copy(policy: &KindPolicy, fed: &Value) -> Value {
        match member_copy(policy, fed, "east") {
            Ok(v) => v,
            Err(e) => panic!("member_copy failed: {e}"),
        }
    }

    // --- is_propagated ---------------------------------------------------

    #[test]
    fn ordinary_objects_are_propagated() {
        let cm = obj(json!({"name": "app", "namespace": "shop"}));
        assert!(is_propagated(k("", "ConfigMap"), &cm));
        assert!(is_propagated(k("apps", "Deployment"), &cm));
        assert!(is_propagated(
            k("", "Namespace"),
            &obj(json!({"name": "shop"}))
        ));
    }

    #[test]
    fn objects_without_a_name_are_not_propagated() {
        assert!(!is_propagated(
            k("", "ConfigMap"),
            &obj(json!({"namespace": "shop"}))
        ));
        assert!(!is_propagated(
            k("", "ConfigMap"),
            &obj(json!({"name": "", "namespace": "shop"}))
        ));
        assert!(!is_propagated(k("", "ConfigMap"), &json!({})));
    }

    #[test]
    fn control_plane_objects_are_not_propagated() {
        let o = obj(json!({"name": "a", "namespace": "shop",
            "annotations": {CONTROL_PLANE_ANNOTATION: "true"}}));
        assert!(!is_propagated(k("", "ConfigMap"), &o));
        let o = obj(json!({"name": "a", "namespace": "shop",
            "annotations": {CONTROL_PLANE_ANNOTATION: "false"}}));
        assert!(is_propagated(k("", "ConfigMap"), &o));
    }

    #[test]
    fn objects_in_system_namespaces_are_not_propagated() {
        for ns in [
            "kube-system",
            "kube-public",
            "kube-node-lease",
            "federation-system",
        ] {
            let o = obj(json!({"name": "a", "namespace": ns}));
            assert!(!is_propagated(k("", "ConfigMap"), &o), "{ns}");
        }
        assert!(is_propagated(
            k("", "ConfigMap"),
            &obj(json!({"name": "a", "namespace": "default"}))
        ));
    }

    #[test]
    fn default_and_system_namespaces_themselves_are_not_propagated() {
        for ns in [
            "default",
            "kube-system",
            "kube-public",
            "kube-node-lease",
            "federation-system",
            // The default denylist: every add-on's and OpenShift's too.
            "istio-system",
            "kube-flannel",
            "openshift-config",
        ] {
            assert!(
                !is_propagated(k("", "Namespace"), &obj(json!({"name": ns}))),
                "{ns}"
            );
        }
    }

    #[test]
    fn the_default_denylist_keeps_every_system_namespace_home() {
        for ns in ["istio-system", "kube-flannel", "openshift-config"] {
            let o = obj(json!({"name": "a", "namespace": ns}));
            assert!(!is_propagated(k("", "ConfigMap"), &o), "{ns}");
        }
        for ns in ["systems", "my-kube", "tenant-x", "system"] {
            assert!(
                is_propagated(k("", "Namespace"), &obj(json!({"name": ns}))),
                "{ns}"
            );
        }
        let d = NamespaceDenylist::default();
        assert_eq!(d.denies("istio-system"), Some("*-system"));
        assert_eq!(d.denies("kube-public"), Some("kube-*"));
        assert_eq!(
            denied_namespace(
                k("", "Namespace"),
                &obj(json!({"name": "istio-system"})),
                &d
            ),
            Some(("istio-system".into(), "*-system".into()))
        );
        assert_eq!(
            denied_namespace(
                k("", "ConfigMap"),
                &obj(json!({"name": "x", "namespace": "shop"})),
                &d
            ),
            None
        );
    }

    #[test]
    fn a_configured_denylist_replaces_the_default_but_not_the_system_namespaces() {
        let d = NamespaceDenylist::new(["team-*", "legacy", ""]);
        assert_eq!(d.patterns(), ["team-*", "legacy"]);
        let ns = |n: &str| obj(json!({"name": n}));
        assert!(!is_propagated_with(k("", "Namespace"), &ns("team-a"), &d));
        assert!(!is_propagated_with(k("", "Namespace"), &ns("legacy"), &d));
        assert!(is_propagated_with(k("", "Namespace"), &ns("legacy-2"), &d));
        assert!(is_propagated_with(
            k("", "Namespace"),
            &ns("istio-system"),
            &d
        ));
        let why = not_propagated_because(
            k("", "ConfigMap"),
            &obj(json!({"name": "c", "namespace": "team-b"})),
            &d,
        );
        assert_eq!(
            why.as_deref(),
            Some(
                "namespace team-b matches \"team-*\" of the member namespace denylist \
                 (--member-namespace-denylist): the federation never writes into it in a member cluster"
            )
        );
        let none = NamespaceDenylist::new(Vec::<String>::new());
        for sys in SYSTEM_NAMESPACES {
            assert!(
                !is_propagated_with(k("", "Namespace"), &ns(sys), &none),
                "{sys}"
            );
            assert_eq!(none.denies(sys), Some(sys));
        }
    }

    #[test]
    fn glob_patterns_match_runs_of_characters() {
        assert!(glob_match("*-system", "istio-system"));
        assert!(glob_match("*-system", "-system"));
        assert!(!glob_match("*-system", "istio-systems"));
        assert!(glob_match("kube-*", "kube-"));
        assert!(!glob_match("kube-*", "kubex"));
        assert!(glob_match("a*b*c", "aXbYbc"));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(!glob_match("ab*ba", "aba"), "the ends must not overlap");
    }

    #[test]
    fn per_cluster_defaults_are_not_propagated() {
        let root_ca = obj(json!({"name": "kube-root-ca.crt", "namespace": "shop"}));
        assert!(!is_propagated(k("", "ConfigMap"), &root_ca));
        let sa = obj(json!({"name": "default", "namespace": "shop"}));
        assert!(!is_propagated(k("", "ServiceAccount"), &sa));
        assert!(is_propagated(
            k("", "ServiceAccount"),
            &obj(json!({"name": "builder", "namespace": "shop"}))
        ));
        let kubernetes = obj(json!({"name": "kubernetes", "namespace": "default"}));
        assert!(!is_propagated(k("", "Service"), &kubernetes));
        assert!(is_propagated(
            k("", "Service"),
            &obj(json!({"name": "kubernetes", "namespace": "shop"}))
        ));
    }

    #[test]
    fn service_account_token_secrets_are_not_propagated() {
        let mut s = obj(json!({"name": "tok", "namespace": "shop"}));
        s["type"] = json!("kubernetes.io/service-account-token");
        assert!(!is_propagated(k("", "Secret"), &s));
        let why = not_propagated_because(k("", "Secret"), &s, &NamespaceDenylist::default());
        assert!(
            why.is_some_and(|w| w.contains("kubernetes.io/service-account-token")),
            "the reason names the rule"
        );
        s["type"] = json!("Opaque");
        assert!(is_propagated(k("", "Secret"), &s));
    }

    #[test]
    fn bootstrap_rbac_is_not_propagated() {
        for kind in ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"] {
            let r = k("rbac.authorization.k8s.io", kind);
            assert!(
                !is_propagated(r, &obj(json!({"name": "system:controller:x"}))),
                "{kind}"
            );
            let labelled = obj(
                json!({"name": "admin", "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}),
            );
            assert!(!is_propagated(r, &labelled), "{kind}");
            assert!(is_propagated(r, &obj(json!({"name": "reader"}))), "{kind}");
        }
    }

    #[test]
    fn each_clusters_own_priority_classes_and_apf_bootstrap_are_not_propagated() {
        assert!(!is_propagated(
            k("scheduling.k8s.io", "PriorityClass"),
            &obj(json!({"name": "system-node-critical"}))
        ));
        assert!(is_propagated(
            k("scheduling.k8s.io", "PriorityClass"),
            &obj(json!({"name": "batch-low"}))
        ));
        for kind in ["FlowSchema", "PriorityLevelConfiguration"] {
            let r = k("flowcontrol.apiserver.k8s.io", kind);
            let bootstrap = obj(json!({"name": "exempt",
                "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}}));
            assert!(!is_propagated(r, &bootstrap), "{kind}");
            assert!(
                is_propagated(r, &obj(json!({"name": "tenant-a"}))),
                "{kind}"
            );
        }
    }

    #[test]
    fn crds_are_propagated_only_when_labelled_federated() {
        let plain = obj(json!({"name": "widgets.example.com"}));
        assert!(!is_propagated(
            k("apiextensions.k8s.io", "CustomResourceDefinition"),
            &plain
        ));
        let fed =
            obj(json!({"name": "widgets.example.com", "labels": {FEDERATED_CRD_LABEL: "true"}}));
        assert!(is_propagated(
            k("apiextensions.k8s.io", "CustomResourceDefinition"),
            &fed
        ));
        assert!(is_propagated(
            k("apiextensions.k8s.io", "CustomResourceDefinition"),
            &fed
        ));
        let no =
            obj(json!({"name": "widgets.example.com", "labels": {FEDERATED_CRD_LABEL: "false"}}));
        assert!(!is_propagated(
            k("apiextensions.k8s.io", "CustomResourceDefinition"),
            &no
        ));
    }

    #[test]
    fn events_leases_and_clusters_are_not_propagated() {
        let o = obj(json!({"name": "a", "namespace": "shop"}));
        for (group, kind) in [
            ("", "Event"),
            ("events.k8s.io", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("federation", "Cluster"),
        ] {
            assert!(!is_propagated(k(group, kind), &o), "{kind}");
        }
    }

    #[test]
    fn a_custom_resource_named_like_a_core_kind_is_not_that_kind() {
        // CRD services.example.com, kind Service: not core's Service.
        let svc = json!({"apiVersion": "example.com/v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default", "uid": "u"},
            "spec": {"clusterIP": "10.0.0.7", "ports": [{"port": 80, "nodePort": 30080}]}});
        let policy = crate::policy::of_object(&svc);
        assert!(policy.is_default());
        assert!(
            is_propagated(policy, &svc),
            "core's default/kubernetes rule"
        );
        let c = copy(policy, &svc);
        assert_eq!(
            c["spec"], svc["spec"],
            "nothing of core Service's is stripped"
        );
        assert!(
            !is_propagated(k("", "Service"), &svc),
            "the core kind's rule"
        );
        // CRD secrets.example.com, kind Secret: its `type` means nothing.
        let secret = json!({"apiVersion": "example.com/v1", "kind": "Secret",
            "metadata": {"name": "tok", "namespace": "shop"},
            "type": "kubernetes.io/service-account-token"});
        let policy = crate::policy::of_object(&secret);
        assert!(policy.is_default());
        assert!(is_propagated(policy, &secret));
        assert!(!is_propagated(k("", "Secret"), &secret));
        // The same for a kind built from its CRD.
        let kind =
            crate::kinds::FederatedKind::new("example.com", "v1", "Service", "services", true)
                .custom();
        assert!(kind.policy().is_default());
    }

    // --- member_copy -----------------------------------------------------

    fn fed_configmap() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "app", "namespace": "shop", "uid": "u-1", "resourceVersion": "12",
                "generation": 3, "creationTimestamp": "2024-01-01T00:00:00Z",
                "deletionTimestamp": "2024-01-02T00:00:00Z", "deletionGracePeriodSeconds": 0,
                "managedFields": [{"manager": "kubectl"}], "selfLink": "/x",
                "finalizers": ["federation.kubernetes.io/delete-from-underlying-clusters"],
                "ownerReferences": [{"uid": "o"}], "generateName": "app-",
                "labels": {"app": "web"},
                "annotations": {
                    "keep": "me",
                    "kubectl.kubernetes.io/last-applied-configuration": "{}",
                    "federation.kubernetes.io/propagation": "{}",
                    "federation.kubernetes.io/overrides": "{}",
                    "federation.kubernetes.io/conflict-resolution": "abort",
                    "federation.alpha.kubernetes.io/cluster-selector": "[]",
                    "federation.kubernetes.io/replica-set-preferences": "{}",
                    "federation.kubernetes.io/deployment-preferences": "{}"
                }
            },
            "data": {"k": "v"},
            "status": {"whatever": true}
        })
    }

    #[test]
    fn member_copy_keeps_identity_user_fields_labels_and_annotations() {
        let c = copy(k("", "ConfigMap"), &fed_configmap());
        assert_eq!(c["apiVersion"], json!("v1"));
        assert_eq!(c["kind"], json!("ConfigMap"));
        assert_eq!(c["data"], json!({"k": "v"}));
        assert_eq!(c["metadata"]["name"], json!("app"));
        assert_eq!(c["metadata"]["namespace"], json!("shop"));
        assert_eq!(c["metadata"]["labels"]["app"], json!("web"));
        assert_eq!(c["metadata"]["annotations"]["keep"], json!("me"));
    }

    #[test]
    fn member_copy_drops_status_and_server_set_metadata() {
        let c = copy(k("", "ConfigMap"), &fed_configmap());
        assert!(c.get("status").is_none());
        let meta = c["metadata"].as_object().cloned().unwrap_or_default();
        let keys: Vec<&str> = meta.keys().map(String::as_str).collect();
        assert_eq!(keys, vec!["name", "namespace", "labels", "annotations"]);
    }

    #[test]
    fn member_copy_strips_control_annotations() {
        let c = copy(k("", "ConfigMap"), &fed_configmap());
        let ann = c["metadata"]["annotations"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut keys: Vec<&str> = ann.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, vec![ORIGIN_UID_ANNOTATION, "keep"]);
    }

    #[test]
    fn member_copy_marks_managed_and_origin_uid() {
        let c = copy(k("", "ConfigMap"), &fed_configmap());
        assert_eq!(c["metadata"]["labels"][MANAGED_LABEL], json!("true"));
        assert_eq!(
            c["metadata"]["annotations"][ORIGIN_UID_ANNOTATION],
            json!("u-1")
        );
        // Without labels or annotations at all, they are created.
        let bare = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "shop", "uid": "u-2"}});
        let c = copy(k("", "ConfigMap"), &bare);
        assert_eq!(c["metadata"]["labels"], json!({MANAGED_LABEL: "true"}));
        assert_eq!(
            c["metadata"]["annotations"],
            json!({ORIGIN_UID_ANNOTATION: "u-2"})
        );
    }

    #[test]
    fn member_copy_applies_overrides_for_the_cluster() {
        let mut fed = fed_configmap();
        fed["metadata"]["annotations"][OVERRIDES_ANNOTATION] = json!(
            r#"{"*": [{"op": "replace", "path": "/data/k", "value": "all"}],
                "east": [{"op": "add", "path": "/data/e", "value": "1"}]}"#
        );
        let east = copy(k("", "ConfigMap"), &fed);
        assert_eq!(east["data"], json!({"k": "all", "e": "1"}));
        let west = match member_copy(k("", "ConfigMap"), &fed, "west") {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(west["data"], json!({"k": "all"}));
        assert!(
            west["metadata"]["annotations"]
                .get(OVERRIDES_ANNOTATION)
                .is_none()
        );
    }

    #[test]
    fn overrides_cannot_remove_the_managed_marks() {
        let mut fed = fed_configmap();
        fed["metadata"]["annotations"][OVERRIDES_ANNOTATION] =
            json!(r#"{"*": [{"op": "remove", "path": "/metadata/labels"}]}"#);
        let c = copy(k("", "ConfigMap"), &fed);
        assert_eq!(c["metadata"]["labels"], json!({MANAGED_LABEL: "true"}));
        assert_eq!(
            c["metadata"]["annotations"][ORIGIN_UID_ANNOTATION],
            json!("u-1")
        );
    }

    #[test]
    fn member_copy_fails_only_on_bad_overrides() {
        let mut fed = fed_configmap();
        fed["metadata"]["annotations"][OVERRIDES_ANNOTATION] = json!("{not json");
        let e = member_copy(k("", "ConfigMap"), &fed, "east");
        assert!(e.is_err_and(|e| e.contains("invalid JSON")));
        fed["metadata"]["annotations"][OVERRIDES_ANNOTATION] =
            json!(r#"{"east": [{"op": "replace", "path": "/metadata/name", "value": "x"}]}"#);
        assert!(member_copy(k("", "ConfigMap"), &fed, "east").is_err());
    }

    #[test]
    fn services_drop_allocated_ips_and_ports() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u"},
            "spec": {
                "type": "LoadBalancer",
                "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"],
                "healthCheckNodePort": 31000, "externalTrafficPolicy": "Local",
                "ports": [{"port": 80, "nodePort": 30080}, {"port": 443, "nodePort": 30443}],
                "selector": {"app": "web"}
            }
        });
        let c = copy(k("", "Service"), &svc);
        assert_eq!(
            c["spec"],
            json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                   "ports": [{"port": 80}, {"port": 443}], "selector": {"app": "web"}})
        );
    }

    #[test]
    fn headless_services_keep_cluster_ip_none() {
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "db", "namespace": "shop"},
            "spec": {"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 5432}]}
        });
        let c = copy(k("", "Service"), &svc);
        assert_eq!(c["spec"]["clusterIP"], json!("None"));
        assert_eq!(c["spec"]["clusterIPs"], json!(["None"]));
    }

    fn fed_job(manual: bool) -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "shop", "uid": "u-j"},
            "spec": {
                "manualSelector": manual,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-j"}},
                "template": {
                    "metadata": {"labels": {
                        "controller-uid": "u-j", "batch.kubernetes.io/controller-uid": "u-j",
                        "job-name": "pi", "batch.kubernetes.io/job-name": "pi", "app": "pi"
                    }},
                    "spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}
                }
            }
        })
    }

    #[test]
    fn jobs_drop_the_generated_selector_and_labels() {
        let c = copy(k("batch", "Job"), &fed_job(false));
        assert!(c["spec"].get("selector").is_none());
        assert_eq!(
            c["spec"]["template"]["metadata"]["labels"],
            json!({"app": "pi"})
        );
        assert_eq!(
            c["spec"]["template"]["spec"]["restartPolicy"],
            json!("Never")
        );
    }

    #[test]
    fn jobs_drop_an_emptied_template_label_map() {
        let mut job = fed_job(false);
        if let Some(l) = job
            .pointer_mut("/spec/template/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            l.shift_remove("app");
        }
        let c = copy(k("batch", "Job"), &job);
        assert!(c["spec"]["template"]["metadata"].get("labels").is_none());
    }

    #[test]
    fn jobs_with_a_manual_selector_keep_it() {
        let job = fed_job(true);
        let c = copy(k("batch", "Job"), &job);
        assert_eq!(c["spec"]["selector"], job["spec"]["selector"]);
        assert_eq!(c["spec"]["template"], job["spec"]["template"]);
    }

    #[test]
    fn namespaces_drop_spec_finalizers() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "shop", "uid": "u"},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let c = copy(k("", "Namespace"), &ns);
        assert!(c.get("spec").is_none());
        assert!(c.get("status").is_none());
        assert_eq!(c["metadata"]["name"], json!("shop"));
    }

    #[test]
    fn service_accounts_drop_secrets() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "shop"},
            "secrets": [{"name": "builder-token-abc"}],
            "imagePullSecrets": [{"name": "registry"}]});
        let c = copy(k("", "ServiceAccount"), &sa);
        assert!(c.get("secrets").is_none());
        assert_eq!(c["imagePullSecrets"], json!([{"name": "registry"}]));
    }

    #[test]
    fn other_kinds_keep_fields_named_like_stripped_ones() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "shop"},
            "secrets": "kept", "spec": {"clusterIP": "1.2.3.4", "finalizers": ["x"]}});
        let c = copy(k("", "ConfigMap"), &cm);
        assert_eq!(c["secrets"], json!("kept"));
        assert_eq!(
            c["spec"],
            json!({"clusterIP": "1.2.3.4", "finalizers": ["x"]})
        );
    }

    // --- content_hash ----------------------------------------------------

    #[test]
    fn hash_is_stable_for_the_same_input() {
        let c = copy(k("", "ConfigMap"), &fed_configmap());
        let h = content_hash(&c);
        assert_eq!(h, content_hash(&copy(k("", "ConfigMap"), &fed_configmap())));
        assert_eq!(h.len(), 32);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn hash_ignores_key_order_but_not_values() {
        let a = json!({"a": 1, "b": {"x": [1, 2], "y": "s"}});
        let b = json!({"b": {"y": "s", "x": [1, 2]}, "a": 1});
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_ne!(
            content_hash(&a),
            content_hash(&json!({"a": 1, "b": {"x": [2, 1], "y": "s"}}))
        );
        assert_ne!(
            content_hash(&a),
            content_hash(&json!({"a": 2, "b": {"x": [1, 2], "y": "s"}}))
        );
        // Keys that would collide if concatenated naively do not.
        assert_ne!(
            content_hash(&json!({"ab": "c"})),
            content_hash(&json!({"a": "bc"}))
        );
    }

    #[test]
    fn hash_of_a_known_value_does_not_change_between_releases() {
        // sha256("{\"a\":1}") starts with 015abd7f5cc57a2dd94b7590f04ad808.
        assert_eq!(
            content_hash(&json!({"a": 1})),
            "015abd7f5cc57a2dd94b7590f04ad808"
        );
    }

    // --- is_subset -------------------------------------------------------

    fn desired() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop",
                "labels": {"app": "web", MANAGED_LABEL: "true"},
                "annotations": {ORIGIN_UID_ANNOTATION: "u"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}]}
            ]}}}
        })
    }

    #[test]
    fn object_with_member_defaults_added_is_a_superset() {
        let mut actual = desired();
        actual["metadata"]["uid"] = json!("member-uid");
        actual["metadata"]["resourceVersion"] = json!("99");
        actual["metadata"]["labels"]["extra"] = json!("by-someone-else");
        actual["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        actual["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] =
            json!("IfNotPresent");
        actual["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");
        actual["status"] = json!({"replicas": 2});
        assert!(is_subset(&desired(), &actual));
        assert!(is_subset(&desired(), &desired()));
    }

    #[test]
    fn changed_list_element_is_not_a_subset() {
        let mut actual = desired();
        actual["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(!is_subset(&desired(), &actual));
    }

    #[test]
    fn longer_or_shorter_list_is_not_a_subset() {
        let mut actual = desired();
        if let Some(cs) = actual
            .pointer_mut("/spec/template/spec/containers")
            .and_then(Value::as_array_mut)
        {
            cs.push(json!({"name": "sidecar", "image": "envoy"}));
        }
        assert!(!is_subset(&desired(), &actual));
        let mut actual = desired();
        actual["spec"]["template"]["spec"]["containers"] = json!([]);
        assert!(!is_subset(&desired(), &actual));
    }

    #[test]
    fn changed_or_missing_scalar_is_not_a_subset() {
        let mut actual = desired();
        actual["spec"]["replicas"] = json!(3);
        assert!(!is_subset(&desired(), &actual));
        if let Some(spec) = actual["spec"].as_object_mut() {
            spec.shift_remove("replicas");
        }
        assert!(!is_subset(&desired(), &actual));
    }

    #[test]
    fn removed_label_or_annotation_is_not_a_subset() {
        let mut actual = desired();
        if let Some(l) = actual
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            l.shift_remove(MANAGED_LABEL);
        }
        assert!(!is_subset(&desired(), &actual));
        let mut actual = desired();
        actual["metadata"]["annotations"][ORIGIN_UID_ANNOTATION] = json!("other");
        assert!(!is_subset(&desired(), &actual));
    }

    #[test]
    fn only_identity_labels_and_annotations_of_metadata_are_compared() {
        let mut d = desired();
        d["metadata"]["uid"] = json!("federation-uid");
        d["metadata"]["resourceVersion"] = json!("1");
        let mut actual = desired();
        actual["metadata"]["uid"] = json!("member-uid");
        assert!(is_subset(&d, &actual));
        actual["metadata"]["name"] = json!("other");
        assert!(!is_subset(&d, &actual));
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(is_subset(&json!({"a": 1}), &json!({"a": 1.0})));
        assert!(!is_subset(&json!({"a": 1}), &json!({"a": "1"})));
    }

    #[test]
    fn empty_desired_values_match_their_absence() {
        let d = json!({"spec": {"securityContext": {}, "args": [], "hostNetwork": false,
            "x": null, "nested": {"empty": ""}}});
        assert!(is_subset(&d, &json!({"spec": {}})));
        assert!(is_subset(&d, &json!({"spec": {"securityContext": null}})));
        // A non-empty desired value is still required.
        assert!(!is_subset(
            &json!({"spec": {"hostNetwork": true}}),
            &json!({"spec": {}})
        ));
    }
}
