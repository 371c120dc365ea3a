//! The 403 kube-apiserver answers when authorization refuses a request
//! (`responsewriters.Forbidden` and `forbiddenMessage` in
//! `k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`):
//! `configmaps is forbidden: User "bob" cannot list resource "configmaps" in
//! API group "" in the namespace "default"`, with `details` naming the
//! group, resource and object.

use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::error::Subject;

use crate::request_info::Attributes;
use crate::rules::go_quote;

/// `forbiddenMessage`: `User "bob" cannot <verb> resource "<res[/sub]>" in
/// API group "<g>" in the namespace "<ns>"` (or `at the cluster scope`), or
/// `User "bob" cannot <verb> path "/x"` for a non-resource request.
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = go_quote(&attrs.user.name);
    if !attrs.resource_request {
        return format!(
            "User {user} cannot {} path {}",
            attrs.verb,
            go_quote(&attrs.path)
        );
    }
    let resource = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    if attrs.namespace.is_empty() {
        format!(
            "User {user} cannot {} resource {} in API group {} at the cluster scope",
            attrs.verb,
            go_quote(&resource),
            go_quote(&attrs.api_group)
        )
    } else {
        format!(
            "User {user} cannot {} resource {} in API group {} in the namespace {}",
            attrs.verb,
            go_quote(&resource),
            go_quote(&attrs.api_group),
            go_quote(&attrs.namespace)
        )
    }
}

/// HTML-escape `&`, `<` and `>` as the responsewriters' sanitizer does.
fn sanitize(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The 403 for a refused request: `responsewriters.Forbidden` (message,
/// then `: <reason>` when the authorizer gave one) wrapped by
/// `errors.NewForbidden` on the request's group and resource.
pub fn forbidden_error(attrs: &Attributes, reason: &str) -> ApiError {
    let msg = sanitize(&forbidden_message(attrs));
    let why = if reason.is_empty() {
        msg
    } else {
        format!("{msg}: {reason}")
    };
    let (group, resource, name) = if attrs.resource_request {
        (
            attrs.api_group.as_str(),
            attrs.resource.as_str(),
            attrs.name.as_str(),
        )
    } else {
        ("", "", "")
    };
    new_forbidden(group, resource, name, &why)
}

/// `errors.NewForbidden(groupResource, name, err)`, including the
/// group-resource-less form (`forbidden: <why>`); `details` is always present.
pub fn new_forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    if group.is_empty() && resource.is_empty() {
        let mut err = ApiError::new(
            http::StatusCode::FORBIDDEN,
            "Forbidden",
            format!("forbidden: {why}"),
        );
        err.subject = Some(Box::new(Subject {
            group: String::new(),
            kind: String::new(),
            name: name.to_string(),
        }));
        return err;
    }
    ApiError::forbidden(group, resource, name, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    #[test]
    fn a_namespaced_list_is_refused_in_kube_words() {
        let bob = UserInfo::new("bob", &[]);
        let err = forbidden_error(
            &Attributes::resource(&bob, "list", "", "configmaps", "default", ""),
            "",
        );
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default""#
        );
        let status = err.status();
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["details"], serde_json::json!({"kind": "configmaps"}));
    }

    #[test]
    fn a_named_cluster_scoped_subresource_is_refused_with_its_name() {
        let bob = UserInfo::new("bob", &[]);
        let attrs = Attributes::resource(&bob, "update", "apps", "deployments/scale", "", "web");
        let err = forbidden_error(&attrs, "");
        assert_eq!(
            err.message,
            r#"deployments.apps "web" is forbidden: User "bob" cannot update resource "deployments/scale" in API group "apps" at the cluster scope"#
        );
        assert_eq!(
            err.status()["details"],
            serde_json::json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
    }

    #[test]
    fn a_non_resource_path_is_refused_with_the_bare_prefix_and_a_reason() {
        let anon = UserInfo::new("system:anonymous", &[]);
        let err = forbidden_error(
            &Attributes::non_resource(&anon, "get", "/metrics<x>"),
            "RBAC: oops",
        );
        assert_eq!(
            err.message,
            r#"forbidden: User "system:anonymous" cannot get path "/metrics&lt;x&gt;": RBAC: oops"#
        );
        assert_eq!(err.status()["details"], serde_json::json!({}));
    }
}
