//! ClusterRole aggregation (kube-controller-manager's
//! `clusterrole-aggregation` controller): a ClusterRole with an
//! `aggregationRule` gets, as its rules, the rules of every other ClusterRole
//! whose labels match one of its `clusterRoleSelectors`, in selector order,
//! matching roles sorted by name, without duplicates.
//!
//! The server runs [`aggregate_cluster_roles`] over all ClusterRoles whenever
//! one changes and writes back the roles whose rules changed
//! ([`aggregated_rules`] computes one role's rules).

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use ubernetes_apimachinery::labels::Selector;

/// The computed rules of `role` against `all` ClusterRoles; `None` if
/// `role` has no aggregation rule. A selector that does not parse selects
/// nothing (the controller logs it and skips it).
pub fn aggregated_rules(role: &ClusterRole, all: &[ClusterRole]) -> Option<Vec<PolicyRule>> {
    let aggregation = role.aggregation_rule.as_ref()?;
    let own_name = role.metadata.name.as_deref().unwrap_or("");
    let mut sorted: Vec<&ClusterRole> = all.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in aggregation.cluster_role_selectors.as_deref().unwrap_or(&[]) {
        let Ok(value) = serde_json::to_value(selector) else {
            continue;
        };
        let Ok(selector) = Selector::from_label_selector(&value) else {
            continue;
        };
        for candidate in &sorted {
            if candidate.metadata.name.as_deref().unwrap_or("") == own_name {
                continue;
            }
            let labels: BTreeMap<String, String> =
                candidate.metadata.labels.clone().unwrap_or_default();
            if !selector.matches(&labels) {
                continue;
            }
            for rule in candidate.rules.as_deref().unwrap_or(&[]) {
                if !rules.iter().any(|r| rules_equal(r, rule)) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

/// Semantic equality as `equality.Semantic.DeepEqual` sees it: a missing
/// list equals an empty one.
fn rules_equal(a: &PolicyRule, b: &PolicyRule) -> bool {
    fn l(v: &Option<Vec<String>>) -> &[String] {
        v.as_deref().unwrap_or(&[])
    }
    a.verbs == b.verbs
        && l(&a.api_groups) == l(&b.api_groups)
        && l(&a.resources) == l(&b.resources)
        && l(&a.resource_names) == l(&b.resource_names)
        && l(&a.non_resource_urls) == l(&b.non_resource_urls)
}

/// Fill in the rules of every aggregated ClusterRole in `roles`, repeating
/// until nothing changes so that chains (admin ← edit ← view) settle, as the
/// controller's requeues do. Returns the names of the roles whose rules
/// changed (the ones the server must write back).
pub fn aggregate_cluster_roles(roles: &mut [ClusterRole]) -> Vec<String> {
    let mut changed: Vec<String> = Vec::new();
    // Each pass settles at least one more level of a chain; a cycle cannot
    // grow past the finite set of rules, so roles.len() + 1 passes suffice.
    for _ in 0..=roles.len() {
        let mut any = false;
        for i in 0..roles.len() {
            let Some(rules) = aggregated_rules(&roles[i], roles) else {
                continue;
            };
            let current = roles[i].rules.as_deref().unwrap_or(&[]);
            let same = current.len() == rules.len()
                && current.iter().zip(&rules).all(|(a, b)| rules_equal(a, b));
            if !same {
                roles[i].rules = Some(rules);
                any = true;
                let name = roles[i].metadata.name.clone().unwrap_or_default();
                if !changed.contains(&name) {
                    changed.push(name);
                }
            }
        }
        if !any {
            break;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    fn role(
        name: &str,
        labels: &[(&str, &str)],
        rules: Vec<PolicyRule>,
        selects: Option<&str>,
    ) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            rules: Some(rules),
            aggregation_rule: selects.map(|label| AggregationRule {
                cluster_role_selectors: Some(vec![LabelSelector {
                    match_labels: Some([(label.to_string(), "true".to_string())].into()),
                    ..LabelSelector::default()
                }]),
            }),
        }
    }

    #[test]
    fn chains_settle_and_duplicates_are_dropped() {
        let get = rule(&["get"], &[""], &["pods"]);
        let list = rule(&["list"], &[""], &["pods"]);
        let mut roles = vec![
            role("top", &[], vec![], Some("to-top")),
            role("mid", &[("to-top", "true")], vec![], Some("to-mid")),
            role(
                "b",
                &[("to-mid", "true")],
                vec![get.clone(), list.clone()],
                None,
            ),
            role("a", &[("to-mid", "true")], vec![get.clone()], None),
            role("other", &[], vec![rule(&["*"], &["*"], &["*"])], None),
        ];
        let changed = aggregate_cluster_roles(&mut roles);
        assert_eq!(roles[1].rules, Some(vec![get.clone(), list.clone()]));
        assert_eq!(roles[0].rules, Some(vec![get, list]));
        assert_eq!(changed, vec!["mid".to_string(), "top".to_string()]);
        assert!(aggregate_cluster_roles(&mut roles).is_empty());
    }

    #[test]
    fn a_role_without_aggregation_keeps_its_rules() {
        let r = role("x", &[], vec![rule(&["get"], &[""], &["pods"])], None);
        assert_eq!(aggregated_rules(&r, std::slice::from_ref(&r)), None);
    }
}
