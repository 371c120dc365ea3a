//! Escalation prevention on writes of roles and bindings
//! (`pkg/registry/rbac/validation/rule.go` `ConfirmNoEscalation`, and the
//! policy-based storages of `pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}/policybased`): a user may only create or update a role
//! with rules they hold themselves, and only bind a role whose rules they
//! hold, unless they are in `system:masters`, or may `escalate` that
//! role (for roles) or `bind` it (for bindings).
//!
//! The registry calls [`check_role_write`] before storing a Role or
//! ClusterRole and [`check_binding_write`] before a RoleBinding or
//! ClusterRoleBinding, with the request's user and the object JSON.

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;
use ubernetes_apimachinery::ApiError;

use crate::authorizer::{Authorizer, RBAC_GROUP, RbacSource};
use crate::forbidden::new_forbidden;
use crate::request_info::Attributes;
use crate::rules::{
    compact_rules, compact_string, covers, go_quote, go_quote_list, rule, url_rule,
};
use crate::user::{SYSTEM_PRIVILEGED_GROUP, UserInfo};

/// The message when `owner_rules` do not cover `rules`, `None` when they do.
/// `resolution_errors` are the errors met resolving the owner's rules.
pub fn escalation_message(
    user: &UserInfo,
    owner_rules: &[PolicyRule],
    resolution_errors: &[String],
    rules: &[PolicyRule],
) -> Option<String> {
    let (ok, missing) = covers(owner_rules, rules);
    if ok {
        return None;
    }
    let descriptions: BTreeSet<String> =
        compact_rules(&missing).iter().map(compact_string).collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !resolution_errors.is_empty() {
        msg.push_str(&format!(
            "; resolution errors: [{}]",
            resolution_errors.join(" ")
        ));
    }
    Some(msg)
}

/// `ConfirmNoEscalation`: whether `user`'s rules in `namespace` (cluster-wide
/// when empty) cover `rules`; if not, the 403 on `resource`/`name`
/// (`clusterroles.rbac.authorization.k8s.io "x" is forbidden: user "bob"
/// (groups=[...]) is attempting to grant RBAC permissions not currently held:
/// ...`).
pub fn confirm_no_escalation<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    namespace: &str,
    resource: &str,
    name: &str,
    rules: &[PolicyRule],
) -> Result<(), ApiError> {
    let (owner, errors) = authz.rules_for(user, namespace);
    match escalation_message(user, &owner, &errors, rules) {
        None => Ok(()),
        Some(msg) => Err(new_forbidden(RBAC_GROUP, resource, name, &msg)),
    }
}

/// `EscalationAllowed`: members of `system:masters` may grant anything.
pub fn escalation_allowed(user: &UserInfo) -> bool {
    user.in_group(SYSTEM_PRIVILEGED_GROUP)
}

/// `RoleEscalationAuthorized`: whether `user` may `escalate` the role being
/// written (`request_name` is the name in the URL: empty on create).
pub fn role_escalation_authorized<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    request_name: &str,
) -> bool {
    if resource != "roles" && resource != "clusterroles" {
        return false;
    }
    let attrs = Attributes::resource(
        user,
        "escalate",
        RBAC_GROUP,
        resource,
        namespace,
        request_name,
    );
    authz.authorize(&attrs).is_allowed()
}

/// `BindingAuthorized`: whether `user` may `bind` the referenced role in the
/// binding's namespace (empty for a ClusterRoleBinding).
pub fn binding_authorized<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    role_ref: &RoleRef,
    binding_namespace: &str,
) -> bool {
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => return false,
    };
    let mut attrs = Attributes::resource(
        user,
        "bind",
        role_ref.api_group.as_deref().unwrap_or(""),
        resource,
        binding_namespace,
        &role_ref.name,
    );
    attrs.api_version = String::new();
    authz.authorize(&attrs).is_allowed()
}

/// `*` on everything: what an aggregation rule needs.
fn full_authority() -> Vec<PolicyRule> {
    vec![rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])]
}

/// `IsOnlyMutatingGCFields`: an update that changes only owner references
/// and finalizers (and bookkeeping the server sets) is not checked.
pub fn is_only_mutating_gc_fields(new: &Value, old: &Value) -> bool {
    fn strip(v: &Value) -> Value {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in [
                "ownerReferences",
                "finalizers",
                "selfLink",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                meta.remove(key);
            }
        }
        v
    }
    strip(new) == strip(old)
}

fn rules_of(obj: &Value) -> Result<Vec<PolicyRule>, ApiError> {
    match obj.get("rules") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| ApiError::bad_request(format!("invalid rules: {e}"))),
    }
}

fn has_aggregation_rule(obj: &Value) -> bool {
    obj.get("aggregationRule").is_some_and(|v| !v.is_null())
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The escalation check for creating (`old` = `None`) or updating a Role
/// (`resource` = `roles`, in `namespace`) or a ClusterRole (`clusterroles`,
/// empty namespace), as kube's policy-based role storages do it.
pub fn check_role_write<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let name = name_of(new);
    let request_name = if old.is_some() { name } else { "" };
    if escalation_allowed(user)
        || role_escalation_authorized(authz, user, resource, namespace, request_name)
    {
        return Ok(());
    }
    if let Some(old) = old
        && is_only_mutating_gc_fields(new, old)
    {
        return Ok(());
    }
    confirm_no_escalation(authz, user, namespace, resource, name, &rules_of(new)?)?;
    if resource == "clusterroles" {
        let aggregated = has_aggregation_rule(new) || old.is_some_and(has_aggregation_rule);
        if aggregated {
            let (owner, errors) = authz.rules_for(user, "");
            if escalation_message(user, &owner, &errors, &full_authority()).is_some() {
                let why = if old.is_some() {
                    "must have cluster-admin privileges to use an aggregationRule"
                } else {
                    "must have cluster-admin privileges to use the aggregationRule"
                };
                return Err(new_forbidden(RBAC_GROUP, resource, name, why));
            }
        }
    }
    Ok(())
}

/// The escalation check for creating (`old` = `None`) or updating a
/// RoleBinding (`resource` = `rolebindings`, in `namespace`) or a
/// ClusterRoleBinding (`clusterrolebindings`, empty namespace): allowed for
/// `system:masters`, for who may `bind` the role, and for who holds every
/// rule of the role; a missing role is a 404.
pub fn check_binding_write<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if escalation_allowed(user) {
        return Ok(());
    }
    if let Some(old) = old
        && is_only_mutating_gc_fields(new, old)
    {
        return Ok(());
    }
    let role_ref: RoleRef = match new.get("roleRef") {
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| ApiError::bad_request(format!("invalid roleRef: {e}")))?,
        None => RoleRef::default(),
    };
    if binding_authorized(authz, user, &role_ref, namespace) {
        return Ok(());
    }
    let rules = authz
        .role_reference_rules(&role_ref, namespace)
        .map_err(|e| e.to_api_error())?;
    confirm_no_escalation(authz, user, namespace, resource, name_of(new), &rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorizer::StaticRbac;
    use serde_json::json;

    fn bob_is_admin_in_ns() -> StaticRbac {
        let mut rbac = StaticRbac::bootstrap();
        rbac.role_bindings.push(
            serde_json::from_value(json!({
                "metadata": {"name": "bob-admin", "namespace": "ns"},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"kind": "User", "name": "bob", "apiGroup": RBAC_GROUP}]
            }))
            .unwrap_or_default(),
        );
        rbac
    }

    fn bob() -> UserInfo {
        UserInfo::new("bob", &["system:authenticated"])
    }

    #[test]
    fn a_role_within_the_users_rights_may_be_created() {
        let authz = Authorizer::new(bob_is_admin_in_ns());
        let role = json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]});
        assert_eq!(
            check_role_write(&authz, &bob(), "roles", "ns", &role, None),
            Ok(())
        );
    }

    #[test]
    fn a_role_beyond_the_users_rights_is_an_escalation() {
        let authz = Authorizer::new(bob_is_admin_in_ns());
        let role = json!({"metadata": {"name": "r"}, "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "delete"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
        ]});
        let err = check_role_write(&authz, &bob(), "roles", "other", &role, None)
            .err()
            .unwrap_or_else(|| ApiError::internal("expected an error"));
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\"]}\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"delete\"]}"
        );
    }

    #[test]
    fn escalate_permission_lifts_the_check() {
        let mut rbac = bob_is_admin_in_ns();
        rbac.cluster_roles.push(serde_json::from_value(json!({
            "metadata": {"name": "escalator"},
            "rules": [{"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["escalate"]}]
        })).unwrap_or_default());
        rbac.cluster_role_bindings.push(
            serde_json::from_value(json!({
                "metadata": {"name": "bob-escalator"},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "escalator"},
                "subjects": [{"kind": "User", "name": "bob"}]
            }))
            .unwrap_or_default(),
        );
        let authz = Authorizer::new(rbac);
        let role = json!({"metadata": {"name": "big"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]});
        assert_eq!(
            check_role_write(&authz, &bob(), "clusterroles", "", &role, None),
            Ok(())
        );
    }

    #[test]
    fn an_aggregation_rule_needs_cluster_admin() {
        let authz = Authorizer::new(bob_is_admin_in_ns());
        let role = json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        let err = check_role_write(&authz, &bob(), "clusterroles", "", &role, None).err();
        assert_eq!(
            err.map(|e| e.message),
            Some("clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule".to_string())
        );
        let admin = UserInfo::new("root", &["system:masters"]);
        assert_eq!(
            check_role_write(&authz, &admin, "clusterroles", "", &role, None),
            Ok(())
        );
    }

    #[test]
    fn binding_a_held_role_is_allowed_and_a_bigger_one_is_not() {
        let authz = Authorizer::new(bob_is_admin_in_ns());
        let bind_view = json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User", "name": "eve"}]});
        assert_eq!(
            check_binding_write(&authz, &bob(), "rolebindings", "ns", &bind_view, None),
            Ok(())
        );
        let bind_admin = json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "cluster-admin"}, "subjects": [{"kind": "User", "name": "eve"}]});
        let err =
            check_binding_write(&authz, &bob(), "rolebindings", "ns", &bind_admin, None).err();
        assert!(err.is_some_and(|e| e.code == 403
            && e.message.starts_with(
                "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"bob\""
            )));
        let bind_missing = json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "nope"}});
        let err =
            check_binding_write(&authz, &bob(), "rolebindings", "ns", &bind_missing, None).err();
        assert_eq!(
            err.map(|e| (e.code, e.message)),
            Some((
                404,
                "clusterroles.rbac.authorization.k8s.io \"nope\" not found".to_string()
            ))
        );
    }

    #[test]
    fn bind_permission_on_a_role_allows_binding_it_without_holding_it() {
        let mut rbac = bob_is_admin_in_ns();
        rbac.role_bindings.push(
            serde_json::from_value(json!({
                "metadata": {"name": "bob-binder", "namespace": "ns"},
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "binder"},
                "subjects": [{"kind": "User", "name": "bob"}]
            }))
            .unwrap_or_default(),
        );
        rbac.cluster_roles.push(
            serde_json::from_value(json!({
                "metadata": {"name": "binder"},
                "rules": [{"apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["cluster-admin"]}]
            }))
            .unwrap_or_default(),
        );
        let authz = Authorizer::new(rbac);
        let bind = |role: &str| json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}});
        assert_eq!(
            check_binding_write(
                &authz,
                &bob(),
                "rolebindings",
                "ns",
                &bind("cluster-admin"),
                None
            ),
            Ok(())
        );
        // Only in the namespace the bind permission is held in.
        assert!(
            check_binding_write(
                &authz,
                &bob(),
                "rolebindings",
                "other",
                &bind("cluster-admin"),
                None
            )
            .is_err()
        );
        assert!(
            check_binding_write(
                &authz,
                &bob(),
                "clusterrolebindings",
                "",
                &bind("cluster-admin"),
                None
            )
            .is_err()
        );
    }

    #[test]
    fn only_gc_field_changes_skip_the_check() {
        let old = json!({"metadata": {"name": "r", "resourceVersion": "1"}, "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]});
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["x"]);
        assert!(is_only_mutating_gc_fields(&new, &old));
        let authz = Authorizer::new(bob_is_admin_in_ns());
        assert_eq!(
            check_role_write(&authz, &bob(), "roles", "ns", &new, Some(&old)),
            Ok(())
        );
        new["metadata"]["labels"] = json!({"a": "b"});
        assert!(check_role_write(&authz, &bob(), "roles", "ns", &new, Some(&old)).is_err());
    }
}
