//! Policy-rule evaluation: whether a rule allows a request
//! (`pkg/apis/rbac/v1/evaluation_helpers.go`, `RuleAllows`), whether one set
//! of rules covers another (`component-helpers/auth/rbac/validation`
//! `Covers`, used against escalation), compaction of uncovered rules and
//! their one-line description (`CompactRules`, `CompactString`).

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::request_info::Attributes;

/// `*` in verbs.
pub const VERB_ALL: &str = "*";
/// `*` in apiGroups.
pub const API_GROUP_ALL: &str = "*";
/// `*` in resources.
pub const RESOURCE_ALL: &str = "*";
/// `*` in nonResourceURLs.
pub const NON_RESOURCE_ALL: &str = "*";

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or(&[])
}

/// A rule from its parts (empty slices become `None`, as the API omits them).
pub fn rule(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        api_groups: Some(api_groups.iter().map(|s| s.to_string()).collect()),
        resources: opt(resources),
        ..PolicyRule::default()
    }
}

/// A non-resource rule (`verbs` on `urls`).
pub fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        non_resource_urls: opt(urls),
        ..PolicyRule::default()
    }
}

fn opt(v: &[&str]) -> Option<Vec<String>> {
    if v.is_empty() {
        None
    } else {
        Some(v.iter().map(|s| s.to_string()).collect())
    }
}

/// `VerbMatches`.
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == VERB_ALL || v == verb)
}

/// `APIGroupMatches`.
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    list(&rule.api_groups)
        .iter()
        .any(|g| g == API_GROUP_ALL || g == group)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/sub`.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    list(&rule.resources).iter().any(|r| {
        r == RESOURCE_ALL
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// `ResourceNameMatches`: no names means any name.
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || names.iter().any(|n| n == name)
}

/// `NonResourceURLMatches`: `*`, exact, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, url: &str) -> bool {
    list(&rule.non_resource_urls).iter().any(|u| {
        u == NON_RESOURCE_ALL
            || u == url
            || (u.ends_with('*') && url.starts_with(u.trim_end_matches('*')))
    })
}

/// `RuleAllows`: whether one rule allows the request.
pub fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        verb_matches(rule, &attrs.verb)
            && api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name)
    } else {
        verb_matches(rule, &attrs.verb) && non_resource_url_matches(rule, &attrs.path)
    }
}

/// `RulesAllow`: whether any of the rules allows the request.
pub fn rules_allow(attrs: &Attributes, rules: &[PolicyRule]) -> bool {
    rules.iter().any(|r| rule_allows(attrs, r))
}

/// `BreakdownRule`: one rule per group × resource × verb (× name), and per
/// non-resource URL × verb.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let one = |s: &String| Some(vec![s.clone()]);
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        ..PolicyRule::default()
                    });
                } else {
                    for name in names {
                        out.push(PolicyRule {
                            api_groups: one(group),
                            resources: one(resource),
                            verbs: vec![verb.clone()],
                            resource_names: one(name),
                            ..PolicyRule::default()
                        });
                    }
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], e: &str) -> bool {
    set.iter().any(|s| s == e)
}

fn has_all(set: &[String], contains: &[String]) -> bool {
    contains.iter().all(|c| has(set, c))
}

fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, RESOURCE_ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        if has(set, path) {
            return true;
        }
        match path.split_once('/') {
            Some((_, sub)) => has(set, &format!("*/{sub}")),
            None => false,
        }
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

fn non_resource_urls_cover_all(set: &[String], covers: &[String]) -> bool {
    covers
        .iter()
        .all(|path| set.iter().any(|owner| non_resource_url_covers(owner, path)))
}

/// `ruleCovers`: whether `owner` grants everything `sub` (a broken-down rule) does.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, VERB_ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), API_GROUP_ALL)
        || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resource_covers_all(list(&owner.resources), list(&sub.resources));
    let urls =
        non_resource_urls_cover_all(list(&owner.non_resource_urls), list(&sub.non_resource_urls));
    let owner_names = list(&owner.resource_names);
    let sub_names = list(&sub.resource_names);
    let names = if sub_names.is_empty() {
        owner_names.is_empty()
    } else {
        owner_names.is_empty() || has_all(owner_names, sub_names)
    };
    verbs && groups && resources && names && urls
}

/// `Covers`: whether `owner` rules grant every permission of `servant`
/// rules; if not, the broken-down rules that are not covered.
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// `CompactRules`: merge the verbs of simple rules (one group, one resource,
/// at most one name, no URLs) on the same group/resource/name.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut compacted = Vec::new();
    let mut simple: BTreeMap<(String, String, Option<String>), PolicyRule> = BTreeMap::new();
    for r in rules {
        let groups = list(&r.api_groups);
        let resources = list(&r.resources);
        let names = list(&r.resource_names);
        let is_simple = names.len() <= 1
            && list(&r.non_resource_urls).is_empty()
            && r.non_resource_urls.is_none()
            && groups.len() == 1
            && resources.len() == 1;
        if is_simple {
            let key = (
                groups[0].clone(),
                resources[0].clone(),
                names.first().cloned(),
            );
            match simple.get_mut(&key) {
                Some(existing) => existing.verbs.extend(r.verbs.iter().cloned()),
                None => {
                    simple.insert(key, r.clone());
                }
            }
        } else {
            compacted.push(r.clone());
        }
    }
    compacted.extend(simple.into_values());
    compacted
}

pub use ubernetes_apimachinery::quote::{go_quote, go_quote_list};

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
pub fn compact_string(r: &PolicyRule) -> String {
    let mut parts = Vec::new();
    let groups = list(&r.api_groups);
    if !groups.is_empty() {
        parts.push(format!("APIGroups:{}", go_quote_list(groups)));
    }
    let resources = list(&r.resources);
    if !resources.is_empty() {
        parts.push(format!("Resources:{}", go_quote_list(resources)));
    }
    let urls = list(&r.non_resource_urls);
    if !urls.is_empty() {
        parts.push(format!("NonResourceURLs:{}", go_quote_list(urls)));
    }
    let names = list(&r.resource_names);
    if !names.is_empty() {
        parts.push(format!("ResourceNames:{}", go_quote_list(names)));
    }
    if !r.verbs.is_empty() {
        parts.push(format!("Verbs:{}", go_quote_list(&r.verbs)));
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    fn attrs(verb: &str, group: &str, resource: &str, name: &str) -> Attributes {
        Attributes::resource(&UserInfo::new("u", &[]), verb, group, resource, "ns", name)
    }

    #[test]
    fn stars_match_any_verb_group_and_resource() {
        let r = rule(&["*"], &["*"], &["*"]);
        assert!(rule_allows(
            &attrs("escalate", "rbac.authorization.k8s.io", "roles", "x"),
            &r
        ));
        assert!(rule_allows(&attrs("get", "", "pods/log", ""), &r));
    }

    #[test]
    fn a_resource_does_not_match_its_subresources() {
        let r = rule(&["get"], &[""], &["pods"]);
        assert!(rule_allows(&attrs("get", "", "pods", "p"), &r));
        assert!(!rule_allows(&attrs("get", "", "pods/log", "p"), &r));
        assert!(!rule_allows(&attrs("get", "apps", "pods", "p"), &r));
        assert!(!rule_allows(&attrs("list", "", "pods", ""), &r));
    }

    #[test]
    fn star_slash_subresource_matches_that_subresource_of_anything() {
        let r = rule(&["update"], &["*"], &["*/scale"]);
        assert!(rule_allows(
            &attrs("update", "apps", "deployments/scale", "d"),
            &r
        ));
        assert!(!rule_allows(
            &attrs("update", "apps", "deployments/status", "d"),
            &r
        ));
        assert!(!rule_allows(
            &attrs("update", "apps", "deployments", "d"),
            &r
        ));
    }

    #[test]
    fn resource_names_restrict_to_those_names() {
        let mut r = rule(&["get"], &[""], &["configmaps"]);
        r.resource_names = Some(vec!["a".into()]);
        assert!(rule_allows(&attrs("get", "", "configmaps", "a"), &r));
        assert!(!rule_allows(&attrs("get", "", "configmaps", "b"), &r));
        assert!(!rule_allows(&attrs("list", "", "configmaps", ""), &r));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_star_prefix() {
        let r = url_rule(&["get"], &["/healthz", "/apis/*"]);
        let u = UserInfo::new("u", &[]);
        assert!(rule_allows(
            &Attributes::non_resource(&u, "get", "/healthz"),
            &r
        ));
        assert!(!rule_allows(
            &Attributes::non_resource(&u, "get", "/healthz/etcd"),
            &r
        ));
        assert!(rule_allows(
            &Attributes::non_resource(&u, "get", "/apis/apps/v1"),
            &r
        ));
        assert!(!rule_allows(
            &Attributes::non_resource(&u, "post", "/apis/apps"),
            &r
        ));
        assert!(!rule_allows(&attrs("get", "", "healthz", ""), &r));
    }

    #[test]
    fn covers_reports_what_is_missing() {
        let owner = vec![rule(&["get", "list"], &[""], &["pods", "*/status"])];
        let (ok, _) = covers(
            &owner,
            &[rule(&["get"], &[""], &["pods", "deployments/status"])],
        );
        assert!(ok);
        let (ok, missing) = covers(&owner, &[rule(&["get", "delete"], &[""], &["pods"])]);
        assert!(!ok);
        assert_eq!(missing, vec![rule(&["delete"], &[""], &["pods"])]);
        let mut named = rule(&["get"], &[""], &["pods"]);
        named.resource_names = Some(vec!["a".into()]);
        assert!(!covers(&[named.clone()], &[rule(&["get"], &[""], &["pods"])]).0);
        assert!(covers(&owner, &[named]).0);
    }

    #[test]
    fn compact_string_prints_like_go() {
        let mut r = rule(&["get", "list"], &[""], &["pods"]);
        r.resource_names = Some(vec!["a".into()]);
        assert_eq!(
            compact_string(&r),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}"#
        );
        assert_eq!(
            compact_string(&url_rule(&["get"], &["/x"])),
            r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#
        );
    }

    #[test]
    fn compact_rules_merges_verbs_of_simple_rules() {
        let rules = breakdown_rule(&rule(&["get", "list"], &[""], &["pods", "secrets"]));
        let compacted = compact_rules(&rules);
        assert_eq!(compacted.len(), 2);
        assert_eq!(compacted[0].verbs, vec!["get", "list"]);
    }
}
