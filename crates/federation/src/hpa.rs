//! Federated HorizontalPodAutoscalers (SPEC §3.6): an HPA in the federation
//! that targets a federated workload is split over the clusters — its
//! `minReplicas` and `maxReplicas` each distributed by the same planner as
//! the workload's replicas (with the workload's preferences), so 2..10 over
//! two clusters becomes 1..5 in each — and the workload's `spec.replicas`
//! in those clusters is left to the member's autoscaler: the federation
//! never fights it (the most reported fight of Karmada users,
//! karmada-io/karmada#386).
//!
//! Federation v1 had its own HPA algorithm (`federatedtypes/hpa.go`,
//! redistributing min/max one replica at a time from clusters that did not
//! need them) and marked the workload with an annotation listing the
//! clusters; here the split is the planner's, and the mark stays in the
//! scheduling controller's memory (the user's object is never written).
//! As in v1, a cluster that gets any maximum gets a minimum of at least 1
//! (kube requires `minReplicas ≥ 1`), so the members' minimums can add up
//! to more than the federated one; likewise every cluster the HPA is placed
//! in gets a maximum of at least 1.
//!
//! Pure functions, no I/O.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::planner::{ReplicaAllocationPreferences, plan};

/// kube's default `minReplicas` when an HPA does not set it.
pub const DEFAULT_MIN_REPLICAS: i64 = 1;

/// The workload an HPA scales: `(group, kind, name)` from
/// `spec.scaleTargetRef` (`apiVersion` may be absent: any group matches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleTarget {
    /// API group of `scaleTargetRef.apiVersion` (`None`: not given).
    pub group: Option<String>,
    /// `scaleTargetRef.kind`.
    pub kind: String,
    /// `scaleTargetRef.name`.
    pub name: String,
}

impl ScaleTarget {
    /// Whether this target is the workload `group`/`kind` named `name`.
    pub fn is(&self, group: &str, kind: &str, name: &str) -> bool {
        self.kind == kind && self.name == name && self.group.as_deref().is_none_or(|g| g == group)
    }
}

/// The scale target of an HPA object (`None` when it names none).
pub fn scale_target(hpa: &Value) -> Option<ScaleTarget> {
    let r = hpa.pointer("/spec/scaleTargetRef")?;
    let kind = r.get("kind")?.as_str()?.to_string();
    let name = r.get("name")?.as_str()?.to_string();
    let group = r
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(|v| match v.split_once('/') {
            Some((g, _)) => g.to_string(),
            None => String::new(),
        });
    Some(ScaleTarget { group, kind, name })
}

/// `(minReplicas, maxReplicas)` of an HPA object.
pub fn min_max(hpa: &Value) -> (i64, i64) {
    let min = hpa
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_MIN_REPLICAS);
    let max = hpa
        .pointer("/spec/maxReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(min);
    (min, max)
}

/// One cluster's part of a federated HPA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpaShare {
    /// The member HPA's `minReplicas`.
    pub min: i64,
    /// The member HPA's `maxReplicas`.
    pub max: i64,
}

/// Split `min..max` over `clusters` (the Ready clusters the HPA is placed
/// in) with the given preferences. Every cluster gets at least `1..1`: an
/// HPA cannot have `maxReplicas: 0`, and the HPA is there because its
/// placement put it there (place it elsewhere to keep a cluster out).
pub fn split(
    prefs: &ReplicaAllocationPreferences,
    min: i64,
    max: i64,
    clusters: &[String],
    key: &str,
) -> BTreeMap<String, HpaShare> {
    let none = BTreeMap::new();
    // The plan alone, no current placement or capacity: an HPA's bounds
    // are not running replicas, and rebalancing them costs nothing.
    let prefs = ReplicaAllocationPreferences {
        rebalance: true,
        clusters: prefs.clusters.clone(),
    };
    let maxes = plan(&prefs, max.max(0), clusters, &none, &none, key).plan;
    let mins = plan(&prefs, min.max(0), clusters, &none, &none, key).plan;
    maxes
        .into_iter()
        .map(|(c, m)| {
            let m = m.max(1);
            let lo = mins.get(&c).copied().unwrap_or(0).clamp(1, m);
            (c, HpaShare { min: lo, max: m })
        })
        .collect()
}

/// The HPA among `hpas` (same namespace as the workload) that scales the
/// workload `group`/`kind`/`name`, if any. Several: the first by name, as
/// kube's own HPA controller would also fight over it.
pub fn controlling_hpa<'a>(
    hpas: impl IntoIterator<Item = &'a Value>,
    group: &str,
    kind: &str,
    name: &str,
) -> Option<&'a Value> {
    let mut found: Vec<&Value> = hpas
        .into_iter()
        .filter(|h| scale_target(h).is_some_and(|t| t.is(group, kind, name)))
        .collect();
    found.sort_by_key(|h| {
        h.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    });
    found.into_iter().next()
}

/// The member HPA copy for one cluster: the federated HPA with its share.
pub fn member_hpa(fed_hpa: &Value, share: HpaShare) -> Value {
    let mut copy = fed_hpa.clone();
    if let Some(spec) = copy.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("minReplicas".into(), share.min.into());
        spec.insert("maxReplicas".into(), share.max.into());
    }
    copy
}

/// Whether the federation still owns `spec.replicas` of a member workload
/// copy (per its `managedFields`): while it does, sync sends the member's
/// own current value (so an omitted field is not reset to its default);
/// once the member's autoscaler has taken the field over, sync omits it.
pub fn federation_owns_replicas(member: &Value, field_manager: &str) -> bool {
    member
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(|entries| {
            entries.iter().any(|e| {
                e.get("manager").and_then(Value::as_str) == Some(field_manager)
                    && e.pointer("/fieldsV1/f:spec/f:replicas").is_some()
            })
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;
    use crate::planner::parse_preferences;
    use serde_json::json;

    fn names(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    fn share(min: i64, max: i64) -> HpaShare {
        HpaShare { min, max }
    }

    #[test]
    fn two_to_ten_over_two_clusters_is_one_to_five_each() {
        let s = split(
            &ReplicaAllocationPreferences::even(),
            2,
            10,
            &names(&["a", "b"]),
            "default/web",
        );
        assert_eq!(
            s,
            BTreeMap::from([("a".into(), share(1, 5)), ("b".into(), share(1, 5))])
        );
    }

    #[test]
    fn every_cluster_with_a_max_gets_a_min_of_at_least_one() {
        let s = split(
            &ReplicaAllocationPreferences::even(),
            1,
            9,
            &names(&["a", "b", "c"]),
            "k",
        );
        assert_eq!(s.values().map(|h| h.max).sum::<i64>(), 9);
        assert!(s.values().all(|h| h.min == 1 && h.max == 3));
    }

    #[test]
    fn weights_and_max_follow_the_workload_preferences() {
        let p = parse_preferences(r#"{"clusters": {"a": {"weight": 20}, "b": {"weight": 0}}}"#)
            .unwrap();
        let s = split(&p, 2, 10, &names(&["a", "b"]), "k");
        assert_eq!(
            s,
            BTreeMap::from([("a".into(), share(2, 10)), ("b".into(), share(1, 1))]),
            "an HPA cannot have maxReplicas 0"
        );
        let p =
            parse_preferences(r#"{"clusters": {"*": {"weight": 1, "maxReplicas": 3}}}"#).unwrap();
        let s = split(&p, 4, 10, &names(&["a", "b"]), "k");
        assert_eq!(
            s,
            BTreeMap::from([("a".into(), share(2, 3)), ("b".into(), share(2, 3))])
        );
    }

    #[test]
    fn min_never_exceeds_max() {
        let s = split(
            &ReplicaAllocationPreferences::even(),
            10,
            2,
            &names(&["a", "b"]),
            "k",
        );
        assert!(s.values().all(|h| h.min <= h.max && h.min >= 1));
        assert!(split(&ReplicaAllocationPreferences::even(), 1, 5, &[], "k").is_empty());
        let s = split(
            &ReplicaAllocationPreferences::even(),
            1,
            1,
            &names(&["a", "b"]),
            "k",
        );
        assert!(s.values().all(|h| *h == share(1, 1)));
    }

    #[test]
    fn scale_targets_match_kind_name_and_group() {
        let hpa = |name: &str, api: Option<&str>, kind: &str, target: &str| {
            let mut r = json!({"kind": kind, "name": target});
            if let Some(a) = api {
                r["apiVersion"] = json!(a);
            }
            json!({"metadata": {"name": name}, "spec": {"scaleTargetRef": r, "maxReplicas": 10}})
        };
        let hpas = [
            hpa("z", Some("apps/v1"), "Deployment", "web"),
            hpa("x", Some("apps/v1"), "ReplicaSet", "web"),
            hpa("y", None, "Deployment", "web"),
            hpa("w", Some("example.com/v1"), "Deployment", "web"),
        ];
        let found = controlling_hpa(&hpas, "apps", "Deployment", "web").unwrap();
        assert_eq!(found["metadata"]["name"], "y");
        assert!(controlling_hpa(&hpas, "apps", "Deployment", "api").is_none());
        assert_eq!(
            controlling_hpa(&hpas, "apps", "ReplicaSet", "web").unwrap()["metadata"]["name"],
            "x"
        );
        assert_eq!(min_max(&hpas[0]), (1, 10));
        assert!(scale_target(&json!({"spec": {}})).is_none());
    }

    #[test]
    fn member_copy_carries_the_share() {
        let fed = json!({"spec": {"minReplicas": 2, "maxReplicas": 10, "scaleTargetRef": {"kind": "Deployment", "name": "web"}}});
        let m = member_hpa(&fed, share(1, 5));
        assert_eq!(m["spec"]["minReplicas"], 1);
        assert_eq!(m["spec"]["maxReplicas"], 5);
        assert_eq!(m["spec"]["scaleTargetRef"]["name"], "web");
    }

    #[test]
    fn replicas_ownership_is_read_from_managed_fields() {
        let owned = json!({"metadata": {"managedFields": [
            {"manager": "ubernetes", "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}}]}});
        let taken = json!({"metadata": {"managedFields": [
            {"manager": "ubernetes", "operation": "Apply", "fieldsV1": {"f:spec": {"f:template": {}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale",
             "fieldsV1": {"f:spec": {"f:replicas": {}}}}]}});
        assert!(federation_owns_replicas(&owned, "ubernetes"));
        assert!(!federation_owns_replicas(&taken, "ubernetes"));
        assert!(!federation_owns_replicas(&json!({}), "ubernetes"));
    }
}
