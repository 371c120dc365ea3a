//! Impersonation (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`):
//! the `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-<key>` headers make a request act as another user, if
//! the real user may `impersonate` each of them: `users`, `groups` and
//! `serviceaccounts` (core group), `uids` and `userextras/<key>`
//! (`authentication.k8s.io`).
//!
//! The HTTP layer calls [`impersonate`] after authentication and before
//! authorization; on success it replaces the request's user and removes the
//! headers ([`strip_impersonation_headers`]).

use std::collections::BTreeMap;

use http::HeaderMap;
use ubernetes_apimachinery::ApiError;

use crate::authorizer::{Authorizer, RbacSource};
use crate::forbidden::forbidden_error;
use crate::request_info::Attributes;
use crate::user::{
    ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, UserInfo, service_account_groups,
    service_account_username, split_service_account_username,
};

/// `Impersonate-User`.
pub const IMPERSONATE_USER_HEADER: &str = "impersonate-user";
/// `Impersonate-Uid`.
pub const IMPERSONATE_UID_HEADER: &str = "impersonate-uid";
/// `Impersonate-Group` (repeatable).
pub const IMPERSONATE_GROUP_HEADER: &str = "impersonate-group";
/// `Impersonate-Extra-<key>` (repeatable).
pub const IMPERSONATE_EXTRA_PREFIX: &str = "impersonate-extra-";
/// What the name of every impersonation header starts with.
const IMPERSONATE_HEADER_PREFIX: &str = "impersonate-";

const AUTHENTICATION_V1: &str = "authentication.k8s.io/v1";

/// One thing to impersonate (kube builds `v1.ObjectReference`s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImpersonationTarget {
    /// `User`, `ServiceAccount`, `Group`, `UserExtra` or `UID`.
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// `authentication.k8s.io/v1` for `UserExtra` and `UID`.
    pub api_version: &'static str,
    /// The extra key, for `UserExtra`.
    pub field_path: String,
}

impl ImpersonationTarget {
    fn new(kind: &'static str, name: &str) -> Self {
        Self {
            kind,
            namespace: String::new(),
            name: name.to_string(),
            api_version: "",
            field_path: String::new(),
        }
    }

    /// Go's `%v` of the ObjectReference (`{Kind Namespace Name UID APIVersion ResourceVersion FieldPath}`).
    fn go_value(&self) -> String {
        format!(
            "{{{} {} {} {} {} {} {}}}",
            self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path
        )
    }

    /// The `impersonate` request to authorize for this target.
    pub fn attributes(&self, requestor: &UserInfo) -> Attributes {
        let (group, resource, subresource) = match self.kind {
            "ServiceAccount" => ("", "serviceaccounts", ""),
            "User" => ("", "users", ""),
            "Group" => ("", "groups", ""),
            "UserExtra" => (
                "authentication.k8s.io",
                "userextras",
                self.field_path.as_str(),
            ),
            _ => ("authentication.k8s.io", "uids", ""),
        };
        // The version of the reference's apiVersion: none for core kinds.
        let api_version = self.api_version.rsplit_once('/').map_or("", |(_, v)| v);
        Attributes {
            user: requestor.clone(),
            verb: "impersonate".to_string(),
            namespace: self.namespace.clone(),
            api_group: group.to_string(),
            api_version: api_version.to_string(),
            resource: resource.to_string(),
            subresource: subresource.to_string(),
            name: self.name.clone(),
            path: String::new(),
            resource_request: true,
        }
    }
}

/// Why impersonation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImpersonationError {
    /// Groups, extras or a uid without a user: kube answers 500 with a
    /// plain-text body ([`ImpersonationError::plain_text_body`]).
    #[error("{0}")]
    BadHeaders(String),
    /// The requestor may not impersonate one of the targets (a 403 Status).
    #[error("{}", .0.message)]
    Forbidden(ApiError),
}

impl ImpersonationError {
    /// The body kube-apiserver writes for [`ImpersonationError::BadHeaders`]
    /// (`responsewriters.InternalError`, HTML-escaped, then a newline as
    /// `http.Error` adds): `Internal Server Error: "/api/v1/pods": requested [...] without impersonating a user`.
    pub fn plain_text_body(&self, request_uri: &str) -> String {
        let text = format!(
            "Internal Server Error: {}: {}",
            crate::rules::go_quote(request_uri),
            self
        );
        format!(
            "{}\n",
            text.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        )
    }

    /// As an [`ApiError`] (500 InternalError, or the 403), for callers that
    /// only speak Status.
    pub fn to_api_error(&self) -> ApiError {
        match self {
            ImpersonationError::BadHeaders(msg) => ApiError::internal(msg.clone()),
            ImpersonationError::Forbidden(err) => err.clone(),
        }
    }
}

fn header_values(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect()
}

/// `buildImpersonationRequests`: the targets the headers ask for, in kube's
/// order (user, groups, extras by key, uid).
pub fn impersonation_targets(
    headers: &HeaderMap,
) -> Result<Vec<ImpersonationTarget>, ImpersonationError> {
    let mut targets = Vec::new();
    let user = header_values(headers, IMPERSONATE_USER_HEADER)
        .into_iter()
        .next()
        .unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        match split_service_account_username(&user) {
            Some((namespace, name)) => {
                let mut t = ImpersonationTarget::new("ServiceAccount", name);
                t.namespace = namespace.to_string();
                targets.push(t);
            }
            None => targets.push(ImpersonationTarget::new("User", &user)),
        }
    }
    let groups = header_values(headers, IMPERSONATE_GROUP_HEADER);
    let has_groups = !groups.is_empty();
    for group in &groups {
        targets.push(ImpersonationTarget::new("Group", group));
    }
    let mut extras: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in headers.keys() {
        if let Some(key) = name.as_str().strip_prefix(IMPERSONATE_EXTRA_PREFIX) {
            let key = key.to_ascii_lowercase();
            let key = percent_encoding::percent_decode_str(&key)
                .decode_utf8()
                .map(|k| k.into_owned())
                .unwrap_or(key);
            extras.insert(key, header_values(headers, name.as_str()));
        }
    }
    let has_extra = !extras.is_empty();
    for (key, values) in extras {
        for value in values {
            let mut t = ImpersonationTarget::new("UserExtra", &value);
            t.api_version = AUTHENTICATION_V1;
            t.field_path = key.clone();
            targets.push(t);
        }
    }
    let uid = header_values(headers, IMPERSONATE_UID_HEADER)
        .into_iter()
        .next()
        .unwrap_or_default();
    let has_uid = !uid.is_empty();
    if has_uid {
        let mut t = ImpersonationTarget::new("UID", &uid);
        t.api_version = AUTHENTICATION_V1;
        targets.push(t);
    }
    if (has_groups || has_extra || has_uid) && !has_user {
        let list: Vec<String> = targets.iter().map(ImpersonationTarget::go_value).collect();
        return Err(ImpersonationError::BadHeaders(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        )));
    }
    Ok(targets)
}

/// Authorize the impersonation headers of a request by `requestor`:
/// `Ok(None)` when there are none, `Ok(Some(user))` with the user to act as,
/// or the error. Groups: those given (the authority when present), else a
/// service account's fixed pair; then `system:authenticated` is added for a
/// non-anonymous user unless `system:authenticated` or
/// `system:unauthenticated` is already there, and `system:unauthenticated`
/// for `system:anonymous`.
pub fn impersonate<S: RbacSource>(
    authz: &Authorizer<S>,
    requestor: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ImpersonationError> {
    // Almost no request impersonates: one look at the header names (every
    // impersonation header starts with `impersonate-`) instead of reading
    // each of them.
    if !headers
        .keys()
        .any(|name| name.as_str().starts_with(IMPERSONATE_HEADER_PREFIX))
    {
        return Ok(None);
    }
    let targets = impersonation_targets(headers)?;
    if targets.is_empty() {
        return Ok(None);
    }
    let groups_specified = headers.contains_key(IMPERSONATE_GROUP_HEADER);
    let mut user = UserInfo::default();
    for target in &targets {
        match target.kind {
            "ServiceAccount" => {
                user.name = service_account_username(&target.namespace, &target.name);
                if !groups_specified {
                    user.groups = service_account_groups(&target.namespace);
                }
            }
            "User" => user.name = target.name.clone(),
            "Group" => user.groups.push(target.name.clone()),
            "UserExtra" => user
                .extra
                .entry(target.field_path.clone())
                .or_default()
                .push(target.name.clone()),
            _ => user.uid = target.name.clone(),
        }
        let attrs = target.attributes(requestor);
        let decision = authz.authorize(&attrs);
        if !decision.is_allowed() {
            return Err(ImpersonationError::Forbidden(forbidden_error(
                &attrs,
                decision.reason(),
            )));
        }
    }
    if user.name != ANONYMOUS {
        if !user
            .groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
        {
            user.groups.push(ALL_AUTHENTICATED.to_string());
        }
    } else if !user.groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
        user.groups.push(ALL_UNAUTHENTICATED.to_string());
    }
    Ok(Some(user))
}

/// Remove every impersonation header (done once impersonation succeeded).
pub fn strip_impersonation_headers(headers: &mut HeaderMap) {
    let names: Vec<http::HeaderName> = headers
        .keys()
        .filter(|n| {
            let n = n.as_str();
            n == IMPERSONATE_USER_HEADER
                || n == IMPERSONATE_GROUP_HEADER
                || n == IMPERSONATE_UID_HEADER
                || n.starts_with(IMPERSONATE_EXTRA_PREFIX)
        })
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorizer::StaticRbac;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn authz() -> Authorizer<StaticRbac> {
        Authorizer::new(StaticRbac::bootstrap())
    }

    #[test]
    fn no_headers_means_no_impersonation() {
        let bob = UserInfo::new("bob", &["system:authenticated"]);
        assert_eq!(impersonate(&authz(), &bob, &HeaderMap::new()), Ok(None));
    }

    #[test]
    fn a_privileged_user_becomes_the_impersonated_one() {
        let admin = UserInfo::new("admin", &["system:masters"]);
        let h = headers(&[
            ("impersonate-user", "alice"),
            ("impersonate-group", "dev"),
            ("impersonate-group", "ops"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-extra-Foo%2Fbar", "x"),
            ("impersonate-uid", "1234"),
        ]);
        let user = impersonate(&authz(), &admin, &h)
            .ok()
            .flatten()
            .unwrap_or_default();
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "1234");
        assert_eq!(user.groups, vec!["dev", "ops", "system:authenticated"]);
        assert_eq!(user.extra.get("scopes"), Some(&vec!["view".to_string()]));
        assert_eq!(user.extra.get("foo/bar"), Some(&vec!["x".to_string()]));
    }

    #[test]
    fn a_service_account_gets_its_fixed_groups() {
        let admin = UserInfo::new("admin", &["system:masters"]);
        let h = headers(&[("impersonate-user", "system:serviceaccount:ns:robot")]);
        let user = impersonate(&authz(), &admin, &h)
            .ok()
            .flatten()
            .unwrap_or_default();
        assert_eq!(user.name, "system:serviceaccount:ns:robot");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn impersonating_anonymous_adds_unauthenticated() {
        let admin = UserInfo::new("admin", &["system:masters"]);
        let h = headers(&[("impersonate-user", "system:anonymous")]);
        let user = impersonate(&authz(), &admin, &h)
            .ok()
            .flatten()
            .unwrap_or_default();
        assert_eq!(user.groups, vec!["system:unauthenticated"]);
    }

    #[test]
    fn an_unprivileged_user_is_refused_as_kube_words_it() {
        let bob = UserInfo::new("bob", &["system:authenticated"]);
        let h = headers(&[("impersonate-user", "alice")]);
        let Err(ImpersonationError::Forbidden(err)) = impersonate(&authz(), &bob, &h) else {
            panic!("expected a 403");
        };
        assert_eq!(
            err.message,
            r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let h = headers(&[("impersonate-user", "system:serviceaccount:ns:robot")]);
        let Err(ImpersonationError::Forbidden(err)) = impersonate(&authz(), &bob, &h) else {
            panic!("expected a 403");
        };
        assert_eq!(
            err.message,
            r#"serviceaccounts "robot" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns""#
        );
    }

    #[test]
    fn groups_without_a_user_are_an_internal_error() {
        let bob = UserInfo::new("bob", &[]);
        let h = headers(&[("impersonate-group", "dev")]);
        let err = impersonate(&authz(), &bob, &h).err();
        assert_eq!(
            err.clone().map(|e| e.to_string()),
            Some("requested [{Group  dev    }] without impersonating a user".to_string())
        );
        assert_eq!(
            err.map(|e| e.plain_text_body("/api")),
            Some("Internal Server Error: \"/api\": requested [{Group  dev    }] without impersonating a user\n".to_string())
        );
    }

    #[test]
    fn stripping_removes_only_impersonation_headers() {
        let mut h = headers(&[
            ("impersonate-user", "a"),
            ("impersonate-extra-x", "y"),
            ("accept", "application/json"),
        ]);
        strip_impersonation_headers(&mut h);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("accept"));
    }
}
