//! Every member copy a federated object can produce, and the never-propagated
//! rules checked on each (issue 28: the federation must not be a confused
//! deputy).
//!
//! Per-cluster overrides ([`crate::overrides`]) change the copy each member
//! gets after the checks on the federated object ran: a RoleBinding to
//! `view` whose override names `cluster-admin`, an Opaque Secret whose
//! override makes it a service-account token. So the API server checks, at
//! admission, **each copy** a cluster could get:
//!
//! - [`member_copies`]: one copy per cluster named in the overrides
//!   annotation, plus one for every other cluster (labelled [`ALL_CLUSTERS`],
//!   `"*"`: the `"*"` entry alone, or no override), built with
//!   [`member_object::member_copy_with`], the code the sync controller sends
//!   with (there is no second implementation of override application);
//! - [`check_copies`]: when the federated object is propagated, every copy
//!   must be too ([`member_object::is_propagated`]); the reverse direction
//!   needs no check, since an object that is not propagated sends no copy,
//!   whatever its overrides say. The rules are those of the object's own
//!   group and kind (its `apiVersion` and `kind`, [`policy::of_object`]),
//!   so a custom resource named like a built-in kind is not checked as one.
//!
//! Placement: the copies are what any selected cluster gets. Replica
//! scheduling also sets per-cluster fields ([`member_object::ClusterFields`]),
//! but only `/spec/replicas`, which neither the never-propagated rules nor
//! RBAC's escalation checks read, so they are left out here.
//!
//! Pure functions, no I/O.

use serde_json::Value;

use crate::member_object::{self, CONTROL_PLANE_ANNOTATION};
use crate::overrides::{ALL_CLUSTERS, OVERRIDES_ANNOTATION, parse_overrides};
use crate::policy::{self, KindPolicy};

/// What one cluster (or every cluster the annotation does not name) gets.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberCopy {
    /// A cluster named in the overrides annotation, or [`ALL_CLUSTERS`] for
    /// every other cluster.
    pub cluster: String,
    /// The copy, or why that cluster gets none (an entry that does not
    /// apply to the object: the sync controller reports it on the object).
    pub object: Result<Value, String>,
}

/// Every distinct member copy of the federated object `fed`, of the kind
/// whose rules are `policy`: the clusters the overrides annotation names,
/// in its order, then [`ALL_CLUSTERS`]. Err when the annotation is
/// malformed (then no cluster gets a copy at all).
pub fn member_copies(policy: &KindPolicy, fed: &Value) -> Result<Vec<MemberCopy>, String> {
    let mut clusters: Vec<String> = Vec::new();
    if let Some(raw) = overrides_annotation(fed) {
        clusters.extend(
            parse_overrides(raw)?
                .into_iter()
                .map(|(cluster, _)| cluster)
                .filter(|c| c != ALL_CLUSTERS),
        );
    }
    clusters.push(ALL_CLUSTERS.to_string());
    Ok(clusters
        .into_iter()
        .map(|cluster| MemberCopy {
            object: member_object::member_copy_with(policy, fed, &cluster, None),
            cluster,
        })
        .collect())
}

/// The copies of `fed` that members would get, each labelled with its
/// cluster (see [`member_copies`]), after checking that each is propagated
/// whenever `fed` is. Err: the refusal, naming the cluster, the override
/// entries and the rule. Nothing to check (Ok, empty) when `fed` itself is
/// not propagated or its annotation is malformed: no member gets a copy.
/// The rules are those of the group and kind `fed` says it is
/// ([`policy::of_object`]); the API server calls this at admission.
pub fn check_copies(fed: &Value) -> Result<Vec<(String, Value)>, String> {
    check_copies_of(policy::of_object(fed), fed)
}

/// [`check_copies`] under the rules of `policy`.
pub fn check_copies_of(policy: &KindPolicy, fed: &Value) -> Result<Vec<(String, Value)>, String> {
    if !member_object::is_propagated(policy, fed) {
        return Ok(Vec::new());
    }
    let Ok(copies) = member_copies(policy, fed) else {
        return Ok(Vec::new());
    };
    let named = |c: &str| overrides_annotation(fed).is_some_and(|raw| has_entry(raw, c));
    let mut out = Vec::with_capacity(copies.len());
    for copy in copies {
        let Ok(object) = copy.object else { continue };
        if !member_object::is_propagated(policy, &object) {
            let entries = match (named(ALL_CLUSTERS), copy.cluster.as_str()) {
                (_, ALL_CLUSTERS) => format!("entry {ALL_CLUSTERS:?}"),
                (true, c) => format!("entries {ALL_CLUSTERS:?} and {c:?}"),
                (false, c) => format!("entry {c:?}"),
            };
            return Err(format!(
                "the copy that {} would get through the {OVERRIDES_ANNOTATION} annotation ({entries}) is one the federation never propagates: {}; remove that override",
                cluster_phrase(&copy.cluster),
                never_propagated_rule(policy, &object)
            ));
        }
        out.push((copy.cluster, object));
    }
    Ok(out)
}

/// `member cluster "east"`, or for [`ALL_CLUSTERS`] every other one.
pub fn cluster_phrase(cluster: &str) -> String {
    if cluster == ALL_CLUSTERS {
        "every member cluster the annotation does not name".to_string()
    } else {
        format!("member cluster {cluster:?}")
    }
}

fn overrides_annotation(fed: &Value) -> Option<&str> {
    fed.pointer("/metadata/annotations")?
        .get(OVERRIDES_ANNOTATION)?
        .as_str()
}

fn has_entry(raw: &str, cluster: &str) -> bool {
    parse_overrides(raw).is_ok_and(|entries| entries.iter().any(|(c, _)| c == cluster))
}

/// The rule of [`member_object::is_propagated`] that an override can make a
/// copy break (the others read the name, namespace or kind, which
/// overrides may not change), in words for the refusal.
fn never_propagated_rule(policy: &KindPolicy, copy: &Value) -> String {
    let control_plane = copy
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CONTROL_PLANE_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true");
    if control_plane {
        return format!(
            "objects annotated {CONTROL_PLANE_ANNOTATION}=true belong to the federation's control plane and never leave it"
        );
    }
    policy
        .override_rule
        .unwrap_or("the federation never propagates such an object (SPEC §3.4)")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(overrides: Option<Value>) -> Value {
        let mut b = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "b", "namespace": "shop", "uid": "u1"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "eve", "apiGroup": "rbac.authorization.k8s.io"}]
        });
        if let Some(o) = overrides {
            b["metadata"]["annotations"] = json!({OVERRIDES_ANNOTATION: o.to_string()});
        }
        b
    }

    fn rbac() -> &'static KindPolicy {
        policy::of("rbac.authorization.k8s.io", "RoleBinding")
    }

    fn role_of(copy: &MemberCopy) -> Value {
        match &copy.object {
            Ok(o) => o["roleRef"]["name"].clone(),
            Err(e) => panic!("copy for {} failed: {e}", copy.cluster),
        }
    }

    fn copies(fed: &Value) -> Vec<MemberCopy> {
        match member_copies(rbac(), fed) {
            Ok(c) => c,
            Err(e) => panic!("member_copies failed: {e}"),
        }
    }

    fn to_admin(entry: &str) -> Value {
        json!({entry: [{"op": "replace", "path": "/roleRef/name", "value": "cluster-admin"}]})
    }

    #[test]
    fn without_overrides_there_is_one_copy_the_one_sync_sends() {
        let fed = binding(None);
        let c = copies(&fed);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].cluster, "*");
        assert_eq!(
            c[0].object,
            member_object::member_copy(rbac(), &fed, "anywhere")
        );
    }

    #[test]
    fn a_named_cluster_gets_its_own_copy_and_the_others_the_plain_one() {
        let c = copies(&binding(Some(to_admin("east"))));
        let got: Vec<(String, Value)> = c.iter().map(|c| (c.cluster.clone(), role_of(c))).collect();
        assert_eq!(
            got,
            vec![
                ("east".to_string(), json!("cluster-admin")),
                ("*".to_string(), json!("view"))
            ]
        );
    }

    #[test]
    fn the_star_entry_is_the_copy_of_every_other_cluster() {
        let c = copies(&binding(Some(to_admin("*"))));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].cluster, "*");
        assert_eq!(role_of(&c[0]), json!("cluster-admin"));
    }

    #[test]
    fn a_named_cluster_gets_the_star_entry_then_its_own() {
        let fed = binding(Some(json!({
            "*": [{"op": "replace", "path": "/roleRef/name", "value": "edit"},
                  {"op": "add", "path": "/metadata/labels", "value": {"tier": "all"}}],
            "west": [{"op": "replace", "path": "/roleRef/name", "value": "admin"}]
        })));
        let c = copies(&fed);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].cluster.as_str(), role_of(&c[0])),
            ("west", json!("admin"))
        );
        assert_eq!(
            (c[1].cluster.as_str(), role_of(&c[1])),
            ("*", json!("edit"))
        );
        for copy in &c {
            let o = copy.object.clone().unwrap_or_default();
            assert_eq!(
                o["metadata"]["labels"]["tier"],
                json!("all"),
                "{}",
                copy.cluster
            );
            // Each copy is exactly what the sync controller would send.
            assert_eq!(
                copy.object,
                member_object::member_copy_with(rbac(), &fed, &copy.cluster, None)
            );
        }
    }

    #[test]
    fn a_malformed_annotation_is_an_error_and_a_failing_entry_only_that_clusters() {
        let mut fed = binding(None);
        fed["metadata"]["annotations"] = json!({OVERRIDES_ANNOTATION: "{not json"});
        let e = member_copies(rbac(), &fed).err().unwrap_or_default();
        assert!(e.contains("invalid JSON"), "{e}");
        // Nothing is sent, so nothing to check at admission.
        assert_eq!(check_copies(&fed), Ok(Vec::new()));

        let fed = binding(Some(json!({"east": [{"op": "remove", "path": "/nope"}]})));
        let c = copies(&fed);
        assert_eq!(c.len(), 2);
        assert!(
            c[0].object.as_ref().is_err_and(|e| e.contains("\"east\"")),
            "{c:?}"
        );
        assert!(c[1].object.is_ok());
    }

    fn secret(ty: &str, overrides: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Secret", "type": ty,
            "metadata": {"name": "s", "namespace": "shop",
                "annotations": {OVERRIDES_ANNOTATION: overrides.to_string()}},
            "data": {"token": "eA=="}
        })
    }

    fn to_token(entry: &str) -> Value {
        json!({entry: [{"op": "replace", "path": "/type", "value": "kubernetes.io/service-account-token"}]})
    }

    #[test]
    fn an_override_may_not_make_a_copy_one_that_is_never_propagated() {
        let e = check_copies(&secret("Opaque", to_token("east")))
            .err()
            .unwrap_or_default();
        assert!(e.contains("member cluster \"east\""), "{e}");
        assert!(e.contains("(entry \"east\")"), "{e}");
        assert!(
            e.contains("kubernetes.io/service-account-token are never propagated"),
            "{e}"
        );
        let e = check_copies(&secret("Opaque", to_token("*")))
            .err()
            .unwrap_or_default();
        assert!(
            e.contains("every member cluster the annotation does not name"),
            "{e}"
        );

        // The control-plane annotation and the bootstrap label are rules
        // an override could break too.
        let cp = json!({"*": [{"op": "add", "path": "/metadata/annotations",
            "value": {CONTROL_PLANE_ANNOTATION: "true"}}]});
        let e = check_copies(&secret("Opaque", cp))
            .err()
            .unwrap_or_default();
        assert!(e.contains("federation's control plane"), "{e}");
        let boot = json!({"east": [{"op": "add", "path": "/metadata/labels",
            "value": {"kubernetes.io/bootstrapping": "rbac-defaults"}}]});
        let e = check_copies(&binding(Some(boot))).err().unwrap_or_default();
        assert!(e.contains("bootstrap RBAC"), "{e}");
    }

    #[test]
    fn harmless_overrides_pass_with_every_copy() {
        let label = json!({
            "*": [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
            "east": [{"op": "add", "path": "/data/x", "value": "eQ=="}]
        });
        let got = check_copies(&secret("Opaque", label)).unwrap_or_default();
        let clusters: Vec<&str> = got.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(clusters, ["east", "*"]);
        assert_eq!(got[0].1["data"]["x"], json!("eQ=="));
        assert_eq!(got[1].1["metadata"]["labels"]["a"], json!("b"));
    }

    #[test]
    fn a_never_propagated_object_sends_no_copy_whatever_its_overrides() {
        // A token Secret that an override would turn Opaque: the federated
        // object itself stays home, so there is nothing to check.
        let back = json!({"*": [{"op": "replace", "path": "/type", "value": "Opaque"}]});
        let fed = secret("kubernetes.io/service-account-token", back);
        assert!(!member_object::is_propagated(
            policy::of("", "Secret"),
            &fed
        ));
        assert_eq!(check_copies(&fed), Ok(Vec::new()));
    }

    #[test]
    fn the_rules_are_the_objects_own_kinds() {
        // A custom resource of kind Secret (CRD secrets.example.com): the
        // same override is harmless, its `type` means nothing.
        let mut fed = secret("Opaque", to_token("east"));
        fed["apiVersion"] = json!("example.com/v1");
        let got = check_copies(&fed).unwrap_or_default();
        assert_eq!(got.len(), 2, "{got:?}");
        // A CRD's rule has its own words.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "foos.example.com",
                "labels": {crate::member_object::FEDERATED_CRD_LABEL: "true"},
                "annotations": {OVERRIDES_ANNOTATION: json!({"east": [
                    {"op": "remove", "path": "/metadata/labels"}]}).to_string()}}});
        let e = check_copies(&crd).err().unwrap_or_default();
        assert!(
            e.contains(&format!(
                "labelled {}=true",
                crate::member_object::FEDERATED_CRD_LABEL
            )),
            "{e}"
        );
    }
}
