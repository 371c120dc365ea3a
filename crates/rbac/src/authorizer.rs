//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac/rbac.go` and the
//! rule resolver of `pkg/registry/rbac/validation/rule.go`), behind
//! kube-apiserver's authorizer chain: members of `system:masters` are allowed
//! outright (the privileged-group authorizer), then RBAC; RBAC never denies,
//! it allows or has no opinion, and no opinion means the request is refused.
//!
//! Roles and bindings come from an [`RbacSource`]: the server implements it
//! over its watch cache (or builds a [`StaticRbac`] snapshot); the authorizer
//! does no I/O of its own.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::request_info::Attributes;
use crate::rules::{go_quote, rule_allows};
use crate::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo, matches_service_account_username};

/// The RBAC group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Where the authorizer reads roles and bindings from.
pub trait RbacSource {
    /// The Roles of a namespace.
    fn roles(&self, namespace: &str) -> Vec<Role>;
    /// The RoleBindings of a namespace.
    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding>;
    /// Every ClusterRole (aggregated ones with their computed rules).
    fn cluster_roles(&self) -> Vec<ClusterRole>;
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding>;

    /// One Role; override when a lookup is cheaper than a list.
    fn role(&self, namespace: &str, name: &str) -> Option<Role> {
        self.roles(namespace)
            .into_iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
    }

    /// One ClusterRole; override when a lookup is cheaper than a list.
    fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        self.cluster_roles()
            .into_iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
    }

    /// Call `visit` with each ClusterRoleBinding until it returns false;
    /// override to lend them instead of copying them (the authorizer walks
    /// them on every request RBAC decides).
    fn visit_cluster_role_bindings(&self, visit: &mut dyn FnMut(&ClusterRoleBinding) -> bool) {
        for binding in self.cluster_role_bindings() {
            if !visit(&binding) {
                return;
            }
        }
    }

    /// Call `visit` with each RoleBinding of a namespace until it returns
    /// false; override to lend them instead of copying them.
    fn visit_role_bindings(&self, namespace: &str, visit: &mut dyn FnMut(&RoleBinding) -> bool) {
        for binding in self.role_bindings(namespace) {
            if !visit(&binding) {
                return;
            }
        }
    }

    /// The rules of one Role (`None`: no such Role); override to lend them.
    fn role_rules(&self, namespace: &str, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        self.role(namespace, name)
            .map(|r| Cow::Owned(r.rules.unwrap_or_default()))
    }

    /// The rules of one ClusterRole (`None`: no such ClusterRole); override
    /// to lend them.
    fn cluster_role_rules(&self, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        self.cluster_role(name)
            .map(|r| Cow::Owned(r.rules.unwrap_or_default()))
    }
}

impl<T: RbacSource + ?Sized> RbacSource for &T {
    fn roles(&self, namespace: &str) -> Vec<Role> {
        (**self).roles(namespace)
    }
    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding> {
        (**self).role_bindings(namespace)
    }
    fn cluster_roles(&self) -> Vec<ClusterRole> {
        (**self).cluster_roles()
    }
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding> {
        (**self).cluster_role_bindings()
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Role> {
        (**self).role(namespace, name)
    }
    fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        (**self).cluster_role(name)
    }
    fn visit_cluster_role_bindings(&self, visit: &mut dyn FnMut(&ClusterRoleBinding) -> bool) {
        (**self).visit_cluster_role_bindings(visit)
    }
    fn visit_role_bindings(&self, namespace: &str, visit: &mut dyn FnMut(&RoleBinding) -> bool) {
        (**self).visit_role_bindings(namespace, visit)
    }
    fn role_rules(&self, namespace: &str, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        (**self).role_rules(namespace, name)
    }
    fn cluster_role_rules(&self, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        (**self).cluster_role_rules(name)
    }
}

impl<T: RbacSource + ?Sized> RbacSource for Arc<T> {
    fn roles(&self, namespace: &str) -> Vec<Role> {
        (**self).roles(namespace)
    }
    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding> {
        (**self).role_bindings(namespace)
    }
    fn cluster_roles(&self) -> Vec<ClusterRole> {
        (**self).cluster_roles()
    }
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding> {
        (**self).cluster_role_bindings()
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Role> {
        (**self).role(namespace, name)
    }
    fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        (**self).cluster_role(name)
    }
    fn visit_cluster_role_bindings(&self, visit: &mut dyn FnMut(&ClusterRoleBinding) -> bool) {
        (**self).visit_cluster_role_bindings(visit)
    }
    fn visit_role_bindings(&self, namespace: &str, visit: &mut dyn FnMut(&RoleBinding) -> bool) {
        (**self).visit_role_bindings(namespace, visit)
    }
    fn role_rules(&self, namespace: &str, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        (**self).role_rules(namespace, name)
    }
    fn cluster_role_rules(&self, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        (**self).cluster_role_rules(name)
    }
}

/// An in-memory set of roles and bindings (a snapshot, or a test fixture).
#[derive(Clone, Debug, Default)]
pub struct StaticRbac {
    pub roles: Vec<Role>,
    pub role_bindings: Vec<RoleBinding>,
    pub cluster_roles: Vec<ClusterRole>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

impl StaticRbac {
    /// kube-apiserver's bootstrap policy, with aggregated roles filled in.
    pub fn bootstrap() -> Self {
        let mut cluster_roles = crate::bootstrap::bootstrap_cluster_roles();
        crate::aggregation::aggregate_cluster_roles(&mut cluster_roles);
        StaticRbac {
            roles: crate::bootstrap::bootstrap_roles(),
            role_bindings: crate::bootstrap::bootstrap_role_bindings(),
            cluster_roles,
            cluster_role_bindings: crate::bootstrap::bootstrap_cluster_role_bindings(),
        }
    }
}

fn in_namespace(meta_ns: &Option<String>, namespace: &str) -> bool {
    meta_ns.as_deref().unwrap_or("") == namespace
}

impl RbacSource for StaticRbac {
    fn roles(&self, namespace: &str) -> Vec<Role> {
        self.roles
            .iter()
            .filter(|r| in_namespace(&r.metadata.namespace, namespace))
            .cloned()
            .collect()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding> {
        self.role_bindings
            .iter()
            .filter(|r| in_namespace(&r.metadata.namespace, namespace))
            .cloned()
            .collect()
    }
    fn cluster_roles(&self) -> Vec<ClusterRole> {
        self.cluster_roles.clone()
    }
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding> {
        self.cluster_role_bindings.clone()
    }
    fn visit_cluster_role_bindings(&self, visit: &mut dyn FnMut(&ClusterRoleBinding) -> bool) {
        for binding in &self.cluster_role_bindings {
            if !visit(binding) {
                return;
            }
        }
    }
    fn visit_role_bindings(&self, namespace: &str, visit: &mut dyn FnMut(&RoleBinding) -> bool) {
        for binding in self
            .role_bindings
            .iter()
            .filter(|b| in_namespace(&b.metadata.namespace, namespace))
        {
            if !visit(binding) {
                return;
            }
        }
    }
    fn role_rules(&self, namespace: &str, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        self.roles
            .iter()
            .find(|r| {
                in_namespace(&r.metadata.namespace, namespace)
                    && r.metadata.name.as_deref() == Some(name)
            })
            .map(|r| Cow::Borrowed(r.rules.as_deref().unwrap_or(&[])))
    }
    fn cluster_role_rules(&self, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        self.cluster_roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .map(|r| Cow::Borrowed(r.rules.as_deref().unwrap_or(&[])))
    }
}

/// An authorizer's answer (`authorizer.Decision` with its reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, e.g. `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "view" to User "bob"`.
    Allow(String),
    /// Explicitly denied (RBAC never does this; kept for other modes).
    Deny(String),
    /// No rule allows it: the request is refused; the reason lists rule
    /// resolution errors (a binding to a missing role), else it is empty.
    NoOpinion(String),
}

impl Decision {
    /// Whether the request may go on.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason text (may be empty).
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        }
    }
}

/// `--authorization-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Privileged group, then RBAC (kube-apiserver with `--authorization-mode=RBAC`).
    #[default]
    Rbac,
    /// Everything is allowed (`AlwaysAllow`, for development).
    AlwaysAllow,
}

/// Which binding granted a rule (`clusterRoleBindingDescriber` /
/// `roleBindingDescriber`).
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSource {
    /// `ClusterRoleBinding` or `RoleBinding`.
    pub binding_kind: &'static str,
    pub binding_name: String,
    /// Empty for a ClusterRoleBinding.
    pub binding_namespace: String,
    pub role_ref: RoleRef,
    pub subject: Subject,
}

impl std::fmt::Display for RuleSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let binding = if self.binding_namespace.is_empty() {
            self.binding_name.clone()
        } else {
            format!("{}/{}", self.binding_name, self.binding_namespace)
        };
        write!(
            f,
            "{} {} of {} {} to {}",
            self.binding_kind,
            go_quote(&binding),
            self.role_ref.kind,
            go_quote(&self.role_ref.name),
            describe_subject(&self.subject, &self.binding_namespace)
        )
    }
}

fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    if s.kind == "ServiceAccount" {
        let ns = match s.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => binding_namespace,
        };
        format!("{} {}", s.kind, go_quote(&format!("{}/{}", s.name, ns)))
    } else {
        format!("{} {}", s.kind, go_quote(&s.name))
    }
}

/// `appliesToUser`: whether a binding subject names this user.
pub fn applies_to_user(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let ns = match subject.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => ns,
                _ => namespace,
            };
            !ns.is_empty() && matches_service_account_username(ns, &subject.name, &user.name)
        }
        _ => false,
    }
}

/// What [`Authorizer::visit_rules_for`] calls with each rule (and where it
/// came from) or each resolution error; returning false stops the visit.
pub type RuleVisitor<'a> =
    dyn FnMut(Option<&RuleSource>, Option<&PolicyRule>, Option<String>) -> bool + 'a;

/// RBAC authorization over an [`RbacSource`].
#[derive(Clone, Debug)]
pub struct Authorizer<S> {
    source: S,
    mode: Mode,
}

impl<S: RbacSource> Authorizer<S> {
    /// `--authorization-mode=RBAC`.
    pub fn new(source: S) -> Self {
        Self {
            source,
            mode: Mode::Rbac,
        }
    }

    /// An authorizer in the given mode.
    pub fn with_mode(source: S, mode: Mode) -> Self {
        Self { source, mode }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The roles and bindings.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Decide on a request, as kube-apiserver's authorizer chain does.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        match self.allows_outright(&attrs.user) {
            Some(decision) => decision,
            None => self.authorize_rbac(attrs),
        }
    }

    /// The decision of the authorizers before RBAC, which allow `user`
    /// whatever it asks (`AlwaysAllow`, the privileged group), or `None`
    /// when RBAC decides.
    pub fn allows_outright(&self, user: &UserInfo) -> Option<Decision> {
        (self.mode == Mode::AlwaysAllow || user.in_group(SYSTEM_PRIVILEGED_GROUP))
            .then(|| Decision::Allow(String::new()))
    }

    /// RBAC alone (`RBACAuthorizer.Authorize`), without the privileged group.
    pub fn authorize_rbac(&self, attrs: &Attributes) -> Decision {
        let mut errors = Vec::new();
        let mut reason = None;
        self.visit_rules_for(&attrs.user, &attrs.namespace, &mut |source, rule, err| {
            if let Some(rule) = rule
                && rule_allows(attrs, rule)
            {
                if let Some(source) = source {
                    reason = Some(format!("RBAC: allowed by {source}"));
                }
                return false;
            }
            if let Some(err) = err {
                errors.push(err);
            }
            true
        });
        if let Some(reason) = reason {
            return Decision::Allow(reason);
        }
        if errors.is_empty() {
            Decision::NoOpinion(String::new())
        } else {
            Decision::NoOpinion(format!("RBAC: {}", aggregate_errors(&errors)))
        }
    }

    /// Every rule that applies to `user` in `namespace` (cluster-wide rules
    /// when it is empty), and the rule resolution errors (`RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules_for(user, namespace, &mut |_, rule, err| {
            if let Some(rule) = rule {
                rules.push(rule.clone());
            }
            if let Some(err) = err {
                errors.push(err);
            }
            true
        });
        (rules, errors)
    }

    /// The rules of a role reference (`GetRoleReferenceRules`); the error is
    /// kube's NotFound message text for a missing role.
    pub fn role_reference_rules(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<Vec<PolicyRule>, RoleRefError> {
        self.role_reference_rules_lent(role_ref, binding_namespace)
            .map(Cow::into_owned)
    }

    /// [`Self::role_reference_rules`], lent by the source when it can.
    fn role_reference_rules_lent(
        &self,
        role_ref: &RoleRef,
        binding_namespace: &str,
    ) -> Result<Cow<'_, [PolicyRule]>, RoleRefError> {
        match role_ref.kind.as_str() {
            "Role" => self
                .source
                .role_rules(binding_namespace, &role_ref.name)
                .ok_or_else(|| RoleRefError::NotFound {
                    resource: "roles",
                    name: role_ref.name.clone(),
                }),
            "ClusterRole" => self
                .source
                .cluster_role_rules(&role_ref.name)
                .ok_or_else(|| RoleRefError::NotFound {
                    resource: "clusterroles",
                    name: role_ref.name.clone(),
                }),
            other => Err(RoleRefError::UnsupportedKind(other.to_string())),
        }
    }

    /// `VisitRulesFor`: cluster role bindings first, then the namespace's
    /// role bindings; the visitor returns false to stop. The bindings and
    /// the rules of their roles are lent by the source, not copied.
    pub fn visit_rules_for(&self, user: &UserInfo, namespace: &str, visitor: &mut RuleVisitor<'_>) {
        let mut go_on = true;
        self.source.visit_cluster_role_bindings(&mut |binding| {
            go_on = self.visit_binding(
                user,
                "ClusterRoleBinding",
                "",
                binding.metadata.name.as_deref(),
                &binding.role_ref,
                binding.subjects.as_deref(),
                visitor,
            );
            go_on
        });
        if !go_on || namespace.is_empty() {
            return;
        }
        self.source.visit_role_bindings(namespace, &mut |binding| {
            self.visit_binding(
                user,
                "RoleBinding",
                namespace,
                binding.metadata.name.as_deref(),
                &binding.role_ref,
                binding.subjects.as_deref(),
                visitor,
            )
        });
    }

    /// One binding of [`Self::visit_rules_for`] (`namespace` empty for a
    /// ClusterRoleBinding): its rules when a subject names `user`. Returns
    /// false when the visitor stopped.
    #[allow(clippy::too_many_arguments)] // the parts of either binding kind
    fn visit_binding(
        &self,
        user: &UserInfo,
        binding_kind: &'static str,
        namespace: &str,
        binding_name: Option<&str>,
        role_ref: &RoleRef,
        subjects: Option<&[Subject]>,
        visitor: &mut RuleVisitor<'_>,
    ) -> bool {
        let subjects = subjects.unwrap_or(&[]);
        let Some(subject) = subjects
            .iter()
            .find(|s| applies_to_user(user, s, namespace))
        else {
            return true;
        };
        let rules = match self.role_reference_rules_lent(role_ref, namespace) {
            Ok(rules) => rules,
            Err(err) => return visitor(None, None, Some(err.to_string())),
        };
        let source = RuleSource {
            binding_kind,
            binding_name: binding_name.unwrap_or_default().to_string(),
            binding_namespace: namespace.to_string(),
            role_ref: role_ref.clone(),
            subject: subject.clone(),
        };
        rules
            .iter()
            .all(|rule| visitor(Some(&source), Some(rule), None))
    }
}

/// Why a role reference has no rules.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoleRefError {
    /// `clusterrole.rbac.authorization.k8s.io "x" not found` (the lister's
    /// NotFound, singular as kube's listers word it).
    #[error("{} \"{name}\" not found", singular(resource))]
    NotFound {
        resource: &'static str,
        name: String,
    },
    /// `unsupported role reference kind: "X"`.
    #[error("unsupported role reference kind: \"{0}\"")]
    UnsupportedKind(String),
}

fn singular(resource: &str) -> String {
    format!("{}.{RBAC_GROUP}", resource.trim_end_matches('s'))
}

impl RoleRefError {
    /// The 404 the API gives for it (`clusterroles.rbac.authorization.k8s.io "x" not found`).
    pub fn to_api_error(&self) -> ubernetes_apimachinery::ApiError {
        match self {
            RoleRefError::NotFound { resource, name } => {
                ubernetes_apimachinery::ApiError::not_found(RBAC_GROUP, resource, name)
            }
            RoleRefError::UnsupportedKind(_) => {
                ubernetes_apimachinery::ApiError::internal(self.to_string())
            }
        }
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one error as is, several as `[a, b]`.
pub fn aggregate_errors(errors: &[String]) -> String {
    let mut seen: Vec<&String> = Vec::new();
    for e in errors {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen[0].clone()
    } else {
        format!(
            "[{}]",
            seen.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn subject(kind: &str, name: &str, ns: Option<&str>) -> Subject {
        Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: ns.map(String::from),
            api_group: None,
        }
    }

    fn fixture() -> StaticRbac {
        StaticRbac {
            roles: vec![Role {
                metadata: ObjectMeta {
                    name: Some("reader".into()),
                    namespace: Some("ns".into()),
                    ..ObjectMeta::default()
                },
                rules: Some(vec![rule(&["get"], &[""], &["configmaps"])]),
            }],
            role_bindings: vec![
                RoleBinding {
                    metadata: ObjectMeta {
                        name: Some("rb".into()),
                        namespace: Some("ns".into()),
                        ..ObjectMeta::default()
                    },
                    role_ref: RoleRef {
                        api_group: Some(RBAC_GROUP.into()),
                        kind: "Role".into(),
                        name: "reader".into(),
                    },
                    subjects: Some(vec![subject("ServiceAccount", "sa", None)]),
                },
                RoleBinding {
                    metadata: ObjectMeta {
                        name: Some("dangling".into()),
                        namespace: Some("ns".into()),
                        ..ObjectMeta::default()
                    },
                    role_ref: RoleRef {
                        api_group: Some(RBAC_GROUP.into()),
                        kind: "ClusterRole".into(),
                        name: "gone".into(),
                    },
                    subjects: Some(vec![subject("User", "carol", None)]),
                },
            ],
            ..StaticRbac::default()
        }
    }

    #[test]
    fn a_service_account_subject_defaults_to_the_binding_namespace() {
        let authz = Authorizer::new(fixture());
        let sa = UserInfo::new("system:serviceaccount:ns:sa", &[]);
        let d = authz.authorize(&Attributes::resource(
            &sa,
            "get",
            "",
            "configmaps",
            "ns",
            "x",
        ));
        assert_eq!(
            d,
            Decision::Allow(
                "RBAC: allowed by RoleBinding \"rb/ns\" of Role \"reader\" to ServiceAccount \"sa/ns\""
                    .into()
            )
        );
        let other = UserInfo::new("system:serviceaccount:other:sa", &[]);
        assert!(
            !authz
                .authorize(&Attributes::resource(
                    &other,
                    "get",
                    "",
                    "configmaps",
                    "ns",
                    "x"
                ))
                .is_allowed()
        );
    }

    #[test]
    fn a_binding_to_a_missing_role_is_reported_in_the_reason() {
        let authz = Authorizer::new(fixture());
        let carol = UserInfo::new("carol", &[]);
        let d = authz.authorize(&Attributes::resource(
            &carol,
            "get",
            "",
            "configmaps",
            "ns",
            "x",
        ));
        assert_eq!(
            d,
            Decision::NoOpinion(
                "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found".into()
            )
        );
    }

    #[test]
    fn system_masters_is_allowed_without_any_binding() {
        let authz = Authorizer::new(StaticRbac::default());
        let admin = UserInfo::new("admin", &["system:masters"]);
        assert!(
            authz
                .authorize(&Attributes::resource(&admin, "delete", "x", "y", "", "z"))
                .is_allowed()
        );
        assert!(
            !authz
                .authorize_rbac(&Attributes::resource(&admin, "delete", "x", "y", "", "z"))
                .is_allowed()
        );
    }

    #[test]
    fn always_allow_mode_allows_everyone() {
        let authz = Authorizer::with_mode(StaticRbac::default(), Mode::AlwaysAllow);
        let anon = UserInfo::new("system:anonymous", &["system:unauthenticated"]);
        assert!(
            authz
                .authorize(&Attributes::non_resource(&anon, "get", "/x"))
                .is_allowed()
        );
    }

    #[test]
    fn aggregate_errors_formats_like_go() {
        assert_eq!(aggregate_errors(&["a".into()]), "a");
        assert_eq!(aggregate_errors(&["a".into(), "b".into()]), "[a, b]");
    }
}
