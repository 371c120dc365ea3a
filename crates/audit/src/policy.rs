//! The audit policy (`audit.k8s.io/v1` `Policy`, kube's
//! `k8s.io/apiserver/pkg/apis/audit/v1/types.go`), how it is read and
//! validated (`pkg/audit/policy/reader.go`,
//! `pkg/apis/audit/validation/validation.go`) and how a request's level is
//! chosen (`pkg/audit/policy/checker.go`): the first rule that matches
//! decides; no match is level `None`.
//!
//! Stricter than kube: unknown fields are refused (kube ignores them, so a
//! typo such as `userGroup:` would silently widen a rule), and only
//! `audit.k8s.io/v1` is read (kube removed v1alpha1/v1beta1 in 1.24).

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use ubernetes_rbac::request_info::Attributes;

/// How much of a request is recorded (`audit.Level`), in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Level {
    /// Nothing.
    None,
    /// Who, what, when, the answer's code: no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, the request body and the response body.
    RequestResponse,
}

impl Level {
    /// The level named `s` (case-sensitive, as kube).
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s {
            "None" => Level::None,
            "Metadata" => Level::Metadata,
            "Request" => Level::Request,
            "RequestResponse" => Level::RequestResponse,
            _ => return None,
        })
    }

    /// The name, as written in policies and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in a request's life an event is written (`audit.Stage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Stage {
    /// As soon as the request is received, before it is handled.
    RequestReceived,
    /// Once the response headers are sent (long-running requests only).
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// The stage named `s`.
    pub fn parse(s: &str) -> Option<Stage> {
        Some(match s {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "ResponseComplete" => Stage::ResponseComplete,
            "Panic" => Stage::Panic,
            _ => return None,
        })
    }

    /// The name, as written in policies and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

/// The file's shape (`v1.Policy`). Levels and stages are read as strings and
/// checked by [`Policy::validate`], so errors name the field as kube does.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    rules: Vec<RuleFile>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    level: String,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

/// Resources of one API group a rule applies to (`v1.GroupResources`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    /// The API group; empty is the core group.
    #[serde(default)]
    pub group: String,
    /// Resources (`pods`), subresources (`pods/log`), `*`, `*/scale`,
    /// `pods/*`; empty is every resource of the group.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Object names; empty is any name.
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule (`v1.PolicyRule`); an empty list matches anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRule {
    pub level: Level,
    pub users: Vec<String>,
    pub user_groups: Vec<String>,
    pub verbs: Vec<String>,
    pub resources: Vec<GroupResources>,
    pub namespaces: Vec<String>,
    pub non_resource_urls: Vec<String>,
    /// The rule's stages united with the policy's (as kube's `NewChecker`).
    pub omit_stages: BTreeSet<Stage>,
    /// The rule's own setting; `None` takes the policy's.
    pub omit_managed_fields: Option<bool>,
}

/// A validated policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<PolicyRule>,
    pub omit_stages: BTreeSet<Stage>,
    pub omit_managed_fields: bool,
}

/// What to record for one request (`audit.RequestAuditConfig` with its level).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestAuditConfig {
    pub level: Level,
    pub omit_stages: BTreeSet<Stage>,
    pub omit_managed_fields: bool,
}

/// Why a policy file was refused; the message names the file and the field.
#[derive(Debug, thiserror::Error)]
pub struct PolicyError {
    pub file: String,
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "audit policy file {}: {}", self.file, self.message)
    }
}

const VALID_LEVELS: &str = r#""Metadata", "None", "Request", "RequestResponse""#;
const VALID_STAGES: &str = r#""Panic", "RequestReceived", "ResponseComplete", "ResponseStarted""#;

impl Policy {
    /// Read and validate `--audit-policy-file` (YAML or JSON).
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
            file: file.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        Policy::from_str(&text).map_err(|message| PolicyError { file, message })
    }

    /// Parse and validate a policy document; the error is the message
    /// (field paths as kube's `field.ErrorList`).
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str) -> Result<Policy, String> {
        let raw: PolicyFile =
            serde_saphyr::from_str(text).map_err(|e| format!("failed decoding: {e}"))?;
        if raw.api_version != "audit.k8s.io/v1" || raw.kind != "Policy" {
            return Err(format!(
                "unknown group version field apiVersion={:?}, kind={:?} in policy (want apiVersion audit.k8s.io/v1, kind Policy)",
                raw.api_version, raw.kind
            ));
        }
        let mut errors = Vec::new();
        let omit_stages = stages(&raw.omit_stages, "omitStages", &mut errors);
        let mut rules = Vec::new();
        for (i, r) in raw.rules.iter().enumerate() {
            let p = format!("rules[{i}]");
            let level = match Level::parse(&r.level) {
                Some(l) => l,
                None if r.level.is_empty() => {
                    errors.push(format!("{p}.level: Required value"));
                    Level::None
                }
                None => {
                    errors.push(format!(
                        "{p}.level: Unsupported value: {:?}: supported values: {VALID_LEVELS}",
                        r.level
                    ));
                    Level::None
                }
            };
            for (j, url) in r.non_resource_urls.iter().enumerate() {
                if url == "*" {
                    continue;
                }
                if !url.starts_with('/') {
                    errors.push(format!(
                        "{p}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                    ));
                }
                if !url.is_empty() && url[..url.len() - 1].contains('*') {
                    errors.push(format!(
                        "{p}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
                    ));
                }
            }
            if !r.non_resource_urls.is_empty()
                && (!r.resources.is_empty() || !r.namespaces.is_empty())
            {
                errors.push(format!(
                    "{p}.nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                    r.non_resource_urls
                ));
            }
            for (j, gr) in r.resources.iter().enumerate() {
                if !gr.group.is_empty() && !is_dns_subdomain(&gr.group) {
                    errors.push(format!(
                        "{p}.resources[{j}].group: Invalid value: {:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                        gr.group
                    ));
                }
                if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                    errors.push(format!(
                        "{p}.resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                        gr.resource_names
                    ));
                }
            }
            let own = stages(&r.omit_stages, &format!("{p}.omitStages"), &mut errors);
            rules.push(PolicyRule {
                level,
                users: r.users.clone(),
                user_groups: r.user_groups.clone(),
                verbs: r.verbs.clone(),
                resources: r.resources.clone(),
                namespaces: r.namespaces.clone(),
                non_resource_urls: r.non_resource_urls.clone(),
                omit_stages: own.union(&omit_stages).copied().collect(),
                omit_managed_fields: r.omit_managed_fields,
            });
        }
        match errors.len() {
            0 => {}
            1 => return Err(errors.remove(0)),
            _ => return Err(format!("[{}]", errors.join(", "))),
        }
        if rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".to_string());
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields: raw.omit_managed_fields,
        })
    }

    /// The level and stages to record a request with
    /// (`policyChecker.EvaluatePolicyRule`): the first matching rule's, or
    /// `None` with the policy's stages.
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        for rule in &self.rules {
            if rule_matches(rule, attrs) {
                return RequestAuditConfig {
                    level: rule.level,
                    omit_stages: rule.omit_stages.clone(),
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.omit_managed_fields),
                };
            }
        }
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.omit_stages.clone(),
            omit_managed_fields: self.omit_managed_fields,
        }
    }
}

fn stages(names: &[String], path: &str, errors: &mut Vec<String>) -> BTreeSet<Stage> {
    let mut out = BTreeSet::new();
    for (i, s) in names.iter().enumerate() {
        match Stage::parse(s) {
            Some(stage) => {
                out.insert(stage);
            }
            None => errors.push(format!(
                "{path}[{i}]: Unsupported value: {s:?}: supported values: {VALID_STAGES}"
            )),
        }
    }
    out
}

/// `validation.IsDNS1123Subdomain`.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

/// `ruleMatches` of kube's checker.
fn rule_matches(r: &PolicyRule, attrs: &Attributes) -> bool {
    if !r.users.is_empty() && !has(&r.users, &attrs.user.name) {
        return false;
    }
    if !r.user_groups.is_empty() && !attrs.user.groups.iter().any(|g| has(&r.user_groups, g)) {
        return false;
    }
    if !r.verbs.is_empty() && !has(&r.verbs, &attrs.verb) {
        return false;
    }
    if !r.namespaces.is_empty() || !r.resources.is_empty() {
        return rule_matches_resource(r, attrs);
    }
    if !r.non_resource_urls.is_empty() {
        return !attrs.resource_request
            && r.non_resource_urls
                .iter()
                .any(|spec| path_matches(&attrs.path, spec));
    }
    true
}

/// `*`, an exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

fn rule_matches_resource(r: &PolicyRule, attrs: &Attributes) -> bool {
    if !attrs.resource_request {
        return false;
    }
    // Cluster-scoped resources have the empty namespace.
    if !r.namespaces.is_empty() && !has(&r.namespaces, &attrs.namespace) {
        return false;
    }
    if r.resources.is_empty() {
        return true;
    }
    let resource = attrs.resource.as_str();
    let subresource = attrs.subresource.as_str();
    let combined = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    r.resources
        .iter()
        .filter(|gr| gr.group == attrs.api_group)
        .any(|gr| {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, &attrs.name) {
                return false;
            }
            gr.resources.iter().any(|res| {
                res == &combined
                    || res == "*"
                    || (!subresource.is_empty() && res.strip_prefix("*/") == Some(subresource))
                    || res.strip_suffix("/*") == Some(resource)
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ubernetes_rbac::user::UserInfo;

    fn policy(rules: &str) -> Policy {
        Policy::from_str(&format!(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n{rules}"
        ))
        .expect("valid policy")
    }

    fn alice() -> UserInfo {
        UserInfo::new("alice", &["devs", "system:authenticated"])
    }

    fn res(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes::resource(&alice(), verb, group, resource, ns, name)
    }

    fn level(p: &Policy, a: &Attributes) -> Level {
        p.evaluate(a).level
    }

    #[test]
    fn no_rule_matching_is_level_none_and_the_first_match_wins() {
        let p = policy("- level: Metadata\n  verbs: [get]\n- level: RequestResponse\n");
        assert_eq!(
            level(&p, &res("get", "", "pods", "a", "x")),
            Level::Metadata
        );
        assert_eq!(
            level(&p, &res("list", "", "pods", "a", "")),
            Level::RequestResponse
        );
        let p = policy("- level: Metadata\n  verbs: [get]\n");
        assert_eq!(level(&p, &res("list", "", "pods", "a", "")), Level::None);
    }

    #[test]
    fn users_and_user_groups_match_the_name_and_any_group() {
        let p = policy(
            "- level: Request\n  users: [bob, alice]\n  userGroups: [nobody]\n- level: Metadata\n  userGroups: [devs]\n",
        );
        // users matched but userGroups did not: both must hold.
        assert_eq!(
            level(&p, &res("get", "", "pods", "a", "x")),
            Level::Metadata
        );
        let bob = UserInfo::new("bob", &["ops"]);
        let a = Attributes::resource(&bob, "get", "", "pods", "a", "x");
        assert_eq!(level(&p, &a), Level::None);
        let p = policy("- level: Request\n  users: [alice]\n");
        assert_eq!(level(&p, &res("get", "", "pods", "a", "x")), Level::Request);
        assert_eq!(level(&p, &a), Level::None);
    }

    #[test]
    fn verbs_match_kube_verbs() {
        let p = policy("- level: Request\n  verbs: [create, delete]\n");
        assert_eq!(
            level(&p, &res("create", "", "pods", "a", "")),
            Level::Request
        );
        assert_eq!(level(&p, &res("watch", "", "pods", "a", "")), Level::None);
    }

    #[test]
    fn namespaces_match_only_resource_requests_and_empty_is_cluster_scope() {
        let p = policy("- level: Request\n  namespaces: [team, \"\"]\n");
        assert_eq!(
            level(&p, &res("get", "", "pods", "team", "x")),
            Level::Request
        );
        assert_eq!(level(&p, &res("get", "", "nodes", "", "n")), Level::Request);
        assert_eq!(
            level(&p, &res("get", "", "pods", "other", "x")),
            Level::None
        );
        let health = Attributes::non_resource(&alice(), "get", "/healthz");
        assert_eq!(level(&p, &health), Level::None);
    }

    #[test]
    fn resources_match_group_resource_subresource_wildcards_and_names() {
        let p = policy(
            "- level: RequestResponse\n  resources:\n  - group: \"\"\n    resources: [\"pods/log\"]\n\
             - level: Request\n  resources:\n  - group: apps\n    resources: [\"*/scale\"]\n\
             - level: Metadata\n  resources:\n  - group: \"\"\n    resources: [\"configmaps\"]\n    resourceNames: [cfg]\n\
             - level: Request\n  resources:\n  - group: \"\"\n    resources: [\"services/*\"]\n\
             - level: Metadata\n  resources:\n  - group: batch\n",
        );
        assert_eq!(
            level(&p, &res("get", "", "pods/log", "a", "p")),
            Level::RequestResponse
        );
        // "pods/log" does not match the pod itself.
        assert_eq!(level(&p, &res("get", "", "pods", "a", "p")), Level::None);
        assert_eq!(
            level(&p, &res("update", "apps", "deployments/scale", "a", "d")),
            Level::Request
        );
        assert_eq!(
            level(&p, &res("update", "apps", "deployments", "a", "d")),
            Level::None
        );
        assert_eq!(
            level(&p, &res("get", "", "configmaps", "a", "cfg")),
            Level::Metadata
        );
        assert_eq!(
            level(&p, &res("get", "", "configmaps", "a", "other")),
            Level::None
        );
        // "services/*" matches the resource's subresources and the resource.
        assert_eq!(
            level(&p, &res("get", "", "services/status", "a", "s")),
            Level::Request
        );
        assert_eq!(
            level(&p, &res("get", "", "services", "a", "s")),
            Level::Request
        );
        // A group without resources: every resource of that group only.
        assert_eq!(
            level(&p, &res("list", "batch", "jobs", "a", "")),
            Level::Metadata
        );
        assert_eq!(level(&p, &res("list", "", "jobs", "a", "")), Level::None);
        let p =
            policy("- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [\"*\"]\n");
        assert_eq!(
            level(&p, &res("get", "", "secrets", "a", "s")),
            Level::Metadata
        );
        assert_eq!(
            level(&p, &res("get", "apps", "deployments", "a", "s")),
            Level::None
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star_and_never_resources() {
        let p = policy("- level: Metadata\n  nonResourceURLs: [\"/healthz*\", \"/version\"]\n");
        let get = |path: &str| Attributes::non_resource(&alice(), "get", path);
        assert_eq!(level(&p, &get("/healthz")), Level::Metadata);
        assert_eq!(level(&p, &get("/healthz/etcd")), Level::Metadata);
        assert_eq!(level(&p, &get("/version")), Level::Metadata);
        assert_eq!(level(&p, &get("/version/x")), Level::None);
        assert_eq!(level(&p, &get("/livez")), Level::None);
        let mut pods = res("get", "", "pods", "a", "");
        pods.path = "/healthz".into();
        assert_eq!(level(&p, &pods), Level::None);
        let p = policy("- level: Metadata\n  nonResourceURLs: [\"*\"]\n");
        assert_eq!(level(&p, &get("/anything")), Level::Metadata);
    }

    #[test]
    fn omit_stages_unite_policy_and_rule_and_managed_fields_inherit() {
        let p = Policy::from_str(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nomitManagedFields: true\n\
             rules:\n- level: Metadata\n  verbs: [get]\n  omitStages: [ResponseStarted]\n  omitManagedFields: false\n- level: Request\n  verbs: [list]\n",
        )
        .expect("valid");
        let get = p.evaluate(&res("get", "", "pods", "a", "x"));
        assert_eq!(
            get.omit_stages,
            BTreeSet::from([Stage::RequestReceived, Stage::ResponseStarted])
        );
        assert!(!get.omit_managed_fields);
        let list = p.evaluate(&res("list", "", "pods", "a", ""));
        assert_eq!(list.omit_stages, BTreeSet::from([Stage::RequestReceived]));
        assert!(list.omit_managed_fields);
        let none = p.evaluate(&res("watch", "", "pods", "a", ""));
        assert_eq!(none.level, Level::None);
        assert_eq!(none.omit_stages, BTreeSet::from([Stage::RequestReceived]));
    }

    #[test]
    fn bad_policies_are_refused_naming_the_field() {
        let err = |body: &str| {
            Policy::from_str(&format!(
                "apiVersion: audit.k8s.io/v1\nkind: Policy\n{body}"
            ))
            .expect_err("invalid")
        };
        assert_eq!(
            err("rules:\n- level: Loud\n"),
            r#"rules[0].level: Unsupported value: "Loud": supported values: "Metadata", "None", "Request", "RequestResponse""#
        );
        assert_eq!(
            err("rules:\n- verbs: [get]\n"),
            "rules[0].level: Required value"
        );
        assert!(
            err("rules:\n- level: None\n  nonResourceURLs: [healthz]\n")
                .starts_with("rules[0].nonResourceURLs[0]: Invalid value: \"healthz\": non-resource URL rules must begin with a '/'")
        );
        assert!(
            err("rules:\n- level: None\n  nonResourceURLs: [\"/a*b\"]\n")
                .contains("must be the final character")
        );
        assert!(
            err("rules:\n- level: None\n  nonResourceURLs: [\"/a\"]\n  namespaces: [x]\n")
                .contains("rules cannot apply to both regular resources and non-resource URLs")
        );
        assert!(
            err("rules:\n- level: None\n  resources:\n  - group: apps/v1\n")
                .starts_with("rules[0].resources[0].group: Invalid value: \"apps/v1\"")
        );
        assert!(
            err("rules:\n- level: None\n  resources:\n  - resourceNames: [x]\n")
                .contains("using resourceNames requires at least one resource")
        );
        assert!(
            err("omitStages: [Later]\nrules:\n- level: None\n")
                .starts_with("omitStages[0]: Unsupported value: \"Later\"")
        );
        assert_eq!(err("rules: []\n"), "loaded illegal policy with 0 rules");
        assert!(err("rules:\n- level: None\n  userGroup: [x]\n").contains("userGroup"));
        assert!(
            Policy::from_str(
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n"
            )
            .is_err_and(|e| e.contains("unknown group version"))
        );
        // Two errors are listed together.
        assert!(err("rules:\n- level: X\n- level: Y\n").starts_with("[rules[0].level"));
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("policy.yaml");
        std::fs::write(
            &path,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
        )
        .expect("write");
        let e = Policy::load(&path).expect_err("invalid").to_string();
        assert!(
            e.contains("policy.yaml") && e.contains("rules[0].level"),
            "{e}"
        );
        let e = Policy::load(&dir.path().join("missing.yaml"))
            .expect_err("missing")
            .to_string();
        assert!(
            e.contains("missing.yaml") && e.contains("cannot read"),
            "{e}"
        );
    }
}
