//! What the HTTP layer runs for every request, in kube-apiserver's filter
//! order (`WithRequestInfo`, `WithImpersonation`, `WithAuthorization` in
//! `k8s.io/apiserver/pkg/endpoints/filters`): parse the request, switch to
//! the impersonated user if asked (and allowed), then authorize.

use http::HeaderMap;
use ubernetes_apimachinery::ApiError;

use crate::authorizer::{Authorizer, RbacSource};
use crate::forbidden::forbidden_error;
use crate::impersonation::{ImpersonationError, impersonate};
use crate::request_info::{Attributes, RequestInfo};
use crate::user::UserInfo;

/// A request that may go on: who it acts as and what it asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorized {
    /// The impersonated user, when headers asked for one (strip them
    /// then); `None`: the request acts as the authenticated user.
    pub impersonated: Option<UserInfo>,
    pub info: RequestInfo,
    /// The authorizer's reason for allowing it (for the audit log's
    /// `authorization.k8s.io/reason`).
    pub reason: String,
}

/// Why a request may not go on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestRefused {
    /// The path could not be parsed: kube answers 500 with a plain-text
    /// `Internal Server Error: "<uri>": failed to create RequestInfo: <msg>`.
    #[error("failed to create RequestInfo: {0}")]
    RequestInfo(String),
    /// Bad or unauthorized impersonation headers.
    #[error("{0}")]
    Impersonation(ImpersonationError),
    /// Authorization refused it: the 403 Status, and the authorizer's reason
    /// (for the audit log's `authorization.k8s.io/reason`).
    #[error("{}", .0.message)]
    Forbidden(ApiError, String),
}

impl RequestRefused {
    /// As an [`ApiError`] (500 for the plain-text cases).
    pub fn to_api_error(&self) -> ApiError {
        match self {
            RequestRefused::RequestInfo(_) => ApiError::internal(self.to_string()),
            RequestRefused::Impersonation(e) => e.to_api_error(),
            RequestRefused::Forbidden(e, _) => e.clone(),
        }
    }
}

/// Parse, impersonate, authorize. `path` is the raw URL path, `query` the
/// raw query string (no `?`).
// The refusal is built once per refused request and answered at once;
// boxing it would only add an allocation.
#[allow(clippy::result_large_err)]
pub fn authorize_request<S: RbacSource>(
    authz: &Authorizer<S>,
    user: &UserInfo,
    method: &str,
    path: &str,
    query: &str,
    headers: &HeaderMap,
) -> Result<Authorized, RequestRefused> {
    let info = RequestInfo::parse(method, path, query)
        .map_err(|e| RequestRefused::RequestInfo(e.to_string()))?;
    let impersonated = impersonate(authz, user, headers).map_err(RequestRefused::Impersonation)?;
    let acting = impersonated.as_ref().unwrap_or(user);
    // The privileged group and `AlwaysAllow` allow whatever the request
    // is, with an empty reason: no attributes to build for them (the
    // common case of an admin client).
    let reason = match authz.allows_outright(acting) {
        Some(decision) => decision.reason().to_string(),
        None => {
            let attrs = Attributes::from_request(acting, &info);
            let decision = authz.authorize(&attrs);
            if !decision.is_allowed() {
                return Err(RequestRefused::Forbidden(
                    forbidden_error(&attrs, decision.reason()),
                    decision.reason().to_string(),
                ));
            }
            decision.reason().to_string()
        }
    };
    Ok(Authorized {
        impersonated,
        info,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authorizer::StaticRbac;
    use http::HeaderValue;

    #[test]
    fn an_impersonated_request_is_authorized_as_the_impersonated_user() {
        let authz = Authorizer::new(StaticRbac::bootstrap());
        let admin = UserInfo::new("admin", &["system:masters"]);
        let mut h = HeaderMap::new();
        h.insert("impersonate-user", HeaderValue::from_static("bob"));
        let refused = authorize_request(
            &authz,
            &admin,
            "GET",
            "/api/v1/namespaces/default/pods",
            "",
            &h,
        );
        assert_eq!(
            refused.err().map(|e| e.to_string()),
            Some(r#"pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default""#.to_string())
        );
        let ok = authorize_request(
            &authz,
            &admin,
            "GET",
            "/api/v1/namespaces/default/pods",
            "",
            &HeaderMap::new(),
        );
        assert!(ok.is_ok_and(|a| a.impersonated.is_none() && a.info.verb == "list"));
        let whoami = authorize_request(
            &authz,
            &admin,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            "",
            &h,
        );
        assert!(whoami.is_ok_and(|a| a.impersonated.is_some_and(|u| u.name == "bob")));
    }

    #[test]
    fn an_unparseable_path_is_an_internal_error() {
        let authz = Authorizer::new(StaticRbac::bootstrap());
        let admin = UserInfo::new("admin", &["system:masters"]);
        let err = authorize_request(
            &authz,
            &admin,
            "GET",
            "/api/v1/watch",
            "",
            &HeaderMap::new(),
        )
        .err();
        assert_eq!(
            err.map(|e| e.to_api_error().message),
            Some("Internal error occurred: failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch".to_string())
        );
    }
}
