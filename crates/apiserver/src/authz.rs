//! Authorization: may the authenticated user do what the request asks
//! (kube-apiserver's `WithImpersonation` and `WithAuthorization` filters)?
//!
//! [`authorize`] runs right after authentication: it converts the request's
//! [`authn::UserInfo`] into the rbac crate's user, calls
//! [`ubernetes_rbac::authorize_request`] (request info, impersonation,
//! decision) over the live RBAC snapshot
//! ([`ubernetes_registry::rbac_sync::RbacCache`]), and then either hands the
//! request on as the (possibly impersonated) user, without impersonation
//! headers, or answers as kube-apiserver does: a 403 Status, or a plain-text
//! 500 for an unparseable path or impersonation headers without a user.
//!
//! `--authorization-mode` ([`parse_modes`]): modes are tried in order and
//! RBAC never denies, so any list holding `AlwaysAllow` allows everything;
//! `RBAC` alone is the privileged group `system:masters`, then RBAC.

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::CONTENT_TYPE;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use ubernetes_rbac::filter::RequestRefused;
use ubernetes_rbac::impersonation::{ImpersonationError, strip_impersonation_headers};
use ubernetes_rbac::{Authorizer, Mode, RbacSource};
use ubernetes_registry::rbac_sync::{RbacCache, RbacSnapshot};

use crate::authn;

/// An [`RbacSource`] over one [`RbacSnapshot`] (lookups by name are map reads).
#[derive(Clone, Debug)]
pub struct SnapshotSource(pub Arc<RbacSnapshot>);

impl RbacSource for SnapshotSource {
    fn roles(&self, namespace: &str) -> Vec<Role> {
        self.0
            .roles
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding> {
        self.0
            .role_bindings
            .get(namespace)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
    fn cluster_roles(&self) -> Vec<ClusterRole> {
        self.0.cluster_roles.values().cloned().collect()
    }
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding> {
        self.0.cluster_role_bindings.values().cloned().collect()
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Role> {
        self.0.roles.get(namespace)?.get(name).cloned()
    }
    fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        self.0.cluster_roles.get(name).cloned()
    }
    fn visit_cluster_role_bindings(&self, visit: &mut dyn FnMut(&ClusterRoleBinding) -> bool) {
        for binding in self.0.cluster_role_bindings.values() {
            if !visit(binding) {
                return;
            }
        }
    }
    fn visit_role_bindings(&self, namespace: &str, visit: &mut dyn FnMut(&RoleBinding) -> bool) {
        for binding in self
            .0
            .role_bindings
            .get(namespace)
            .into_iter()
            .flat_map(|m| m.values())
        {
            if !visit(binding) {
                return;
            }
        }
    }
    fn role_rules(&self, namespace: &str, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        let role = self.0.roles.get(namespace)?.get(name)?;
        Some(Cow::Borrowed(role.rules.as_deref().unwrap_or(&[])))
    }
    fn cluster_role_rules(&self, name: &str) -> Option<Cow<'_, [PolicyRule]>> {
        let role = self.0.cluster_roles.get(name)?;
        Some(Cow::Borrowed(role.rules.as_deref().unwrap_or(&[])))
    }
}

/// The server's authorizer: a mode and the live roles and bindings.
#[derive(Debug)]
pub struct Authorization {
    mode: Mode,
    cache: Arc<RbacCache>,
}

impl Authorization {
    /// Decide with `mode` over the roles and bindings of `cache`.
    pub fn new(mode: Mode, cache: Arc<RbacCache>) -> Self {
        Self { mode, cache }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The live roles and bindings.
    pub fn cache(&self) -> &Arc<RbacCache> {
        &self.cache
    }

    /// An authorizer over the current snapshot (cheap; take one per request).
    pub fn authorizer(&self) -> Authorizer<SnapshotSource> {
        Authorizer::with_mode(SnapshotSource(self.cache.snapshot()), self.mode)
    }
}

/// `--authorization-mode`, split on commas, as one [`Mode`]: at least one
/// mode, each `RBAC` or `AlwaysAllow`, no repeats (kube-apiserver's checks).
pub fn parse_modes(modes: &[String]) -> Result<Mode, String> {
    if modes.is_empty() {
        return Err("at least one authorization-mode must be passed".to_string());
    }
    let mut seen: Vec<&str> = Vec::new();
    for m in modes {
        if !matches!(m.as_str(), "RBAC" | "AlwaysAllow") {
            return Err(format!(
                "authorization-mode {m:?} is not a valid mode (this server supports RBAC and AlwaysAllow)"
            ));
        }
        if seen.contains(&m.as_str()) {
            return Err(format!(
                "authorization-mode {m:?} has mode specified more than once"
            ));
        }
        seen.push(m);
    }
    Ok(if seen.contains(&"AlwaysAllow") {
        Mode::AlwaysAllow
    } else {
        Mode::Rbac
    })
}

pub use crate::authn::to_rbac_user;

/// Back to the HTTP layer's user (after impersonation).
pub fn from_rbac_user(user: ubernetes_rbac::UserInfo) -> authn::UserInfo {
    user
}

/// Go's `http.Error`: plain text, `nosniff`.
fn plain_500(body: String) -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [
            (CONTENT_TYPE, "text/plain; charset=utf-8"),
            (http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        Body::from(body),
    )
        .into_response()
}

/// The answer to a refused request, as kube-apiserver writes it.
pub fn refusal_response(refused: &RequestRefused, request_uri: &str) -> Response {
    match refused {
        RequestRefused::RequestInfo(_) => {
            // responsewriters.InternalError: HTML-escaped text plus newline.
            let text = format!(
                "Internal Server Error: {}: {}",
                ubernetes_rbac::rules::go_quote(request_uri),
                refused
            );
            plain_500(format!(
                "{}\n",
                text.replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
            ))
        }
        RequestRefused::Impersonation(e @ ImpersonationError::BadHeaders(_)) => {
            plain_500(e.plain_text_body(request_uri))
        }
        RequestRefused::Impersonation(ImpersonationError::Forbidden(e))
        | RequestRefused::Forbidden(e, _) => {
            // responsewriters.Forbidden sets nosniff on the Status it writes.
            let mut resp = crate::response::status_response(e);
            resp.headers_mut().insert(
                http::header::X_CONTENT_TYPE_OPTIONS,
                http::HeaderValue::from_static("nosniff"),
            );
            resp
        }
    }
}

/// The axum middleware; use with
/// `axum::middleware::from_fn_with_state(Arc<Authorization>, authorize)`
/// inside the authentication layer.
pub async fn authorize(
    State(authz): State<Arc<Authorization>>,
    request: Request,
    next: Next,
) -> Response {
    authorize_run(&authz, request, |request| next.run(request)).await
}

/// [`authorize`] with the rest of the chain given as `run`, for the
/// server's single filter ([`crate::serve::build_router`]).
pub(crate) async fn authorize_run<Fut: Future<Output = Response>>(
    authz: &Authorization,
    request: Request,
    run: impl FnOnce(Request) -> Fut,
) -> Response {
    let (mut parts, body) = request.into_parts();
    // Taken out (not copied) and put back for the handlers.
    let Some(user) = parts.extensions.remove::<authn::UserInfo>() else {
        // Authentication always sets a user; without one nothing is allowed.
        return crate::response::status_response(&ubernetes_apimachinery::ApiError::unauthorized());
    };
    // The audit filter's record of this request, if it is audited.
    let audit = parts
        .extensions
        .get::<crate::audit::AuditContext>()
        .cloned();
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");
    let result = ubernetes_rbac::authorize_request(
        &authz.authorizer(),
        &user,
        parts.method.as_str(),
        path,
        query,
        &parts.headers,
    );
    match result {
        Ok(ok) => {
            if let Some(audit) = &audit {
                audit.authorization(true, &ok.reason);
                if let Some(as_user) = &ok.impersonated {
                    audit.impersonated_user(as_user);
                }
            }
            // The parsed request, for the filters after this one (the
            // request metrics), as kube's `WithRequestInfo` context value.
            parts.extensions.insert(ok.info);
            if let Some(as_user) = ok.impersonated {
                strip_impersonation_headers(&mut parts.headers);
                parts.extensions.insert(from_rbac_user(as_user));
            } else {
                parts.extensions.insert(user);
            }
            run(Request::from_parts(parts, body)).await
        }
        Err(RequestRefused::Forbidden(e, _))
            if crate::cluster_proxy::defer_gate(path, &e, &mut parts.extensions) =>
        {
            // federation@all (`clusters/-/proxy`): the member view checks
            // `clusters/proxy` per member and answers this refusal when
            // the caller may read none. Impersonation was allowed (the
            // refusal came after it).
            let authorizer = authz.authorizer();
            if let Ok(Some(as_user)) =
                ubernetes_rbac::impersonation::impersonate(&authorizer, &user, &parts.headers)
            {
                strip_impersonation_headers(&mut parts.headers);
                parts.extensions.insert(from_rbac_user(as_user));
            } else {
                parts.extensions.insert(user);
            }
            if let Ok(info) = ubernetes_rbac::RequestInfo::parse(parts.method.as_str(), path, query)
            {
                parts.extensions.insert(info);
            }
            if let Some(audit) = &audit {
                audit.authorization(true, "federation@all: authorized per member cluster");
            }
            run(Request::from_parts(parts, body)).await
        }
        Err(refused) => {
            if let (Some(audit), RequestRefused::Forbidden(_, reason)) = (&audit, &refused) {
                audit.authorization(false, reason);
            }
            let uri = parts
                .uri
                .path_and_query()
                .map_or(path, |p| p.as_str())
                .to_string();
            tracing::debug!(user = %user.name, uri = %uri, why = %refused, "request refused by authorization");
            refusal_response(&refused, &uri)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt as _;
    use ubernetes_rbac::bootstrap::{
        bootstrap_cluster_role_bindings, bootstrap_cluster_roles, to_api_json,
    };
    use ubernetes_registry::rbac_sync::RbacKind;
    use ubernetes_storage::EventType;

    fn bootstrap_cache() -> Arc<RbacCache> {
        let cache = Arc::new(RbacCache::new());
        let mut roles = bootstrap_cluster_roles();
        ubernetes_rbac::aggregate_cluster_roles(&mut roles);
        for r in &roles {
            cache.apply(
                RbacKind::ClusterRole,
                EventType::Added,
                &to_api_json("ClusterRole", r),
            );
        }
        for b in bootstrap_cluster_role_bindings() {
            cache.apply(
                RbacKind::ClusterRoleBinding,
                EventType::Added,
                &to_api_json("ClusterRoleBinding", &b),
            );
        }
        cache
    }

    fn app(mode: Mode) -> (Router, Arc<RbacCache>) {
        let cache = bootstrap_cache();
        let authz = Arc::new(Authorization::new(mode, cache.clone()));
        let whoami = |axum::Extension(user): axum::Extension<authn::UserInfo>,
                      headers: http::HeaderMap| async move {
            format!(
                "{}|{}|{}",
                user.name,
                user.groups.join(","),
                headers.contains_key("impersonate-user")
            )
        };
        let router = Router::new()
            .route("/api/v1/namespaces/{ns}/configmaps", get(whoami))
            .route("/api/v1/watch", get(whoami))
            .route("/healthz", get(whoami))
            .layer(axum::middleware::from_fn_with_state(authz, authorize));
        (router, cache)
    }

    async fn call(
        router: &Router,
        user: authn::UserInfo,
        uri: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, String, String) {
        let mut req = http::Request::get(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut req = req.body(Body::empty()).expect("request");
        req.extensions_mut().insert(user);
        let resp = router.clone().oneshot(req).await.expect("infallible");
        let status = resp.status();
        let ct = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, ct, String::from_utf8_lossy(&bytes).into_owned())
    }

    fn bob() -> authn::UserInfo {
        authn::UserInfo::new("bob", &["system:authenticated"])
    }

    fn admin() -> authn::UserInfo {
        authn::UserInfo::new("admin", &["system:masters", "system:authenticated"])
    }

    #[tokio::test]
    async fn a_user_without_bindings_gets_kubes_403_status() {
        let (router, _) = app(Mode::Rbac);
        let (status, ct, body) =
            call(&router, bob(), "/api/v1/namespaces/team/configmaps", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(ct, "application/json");
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["reason"], "Forbidden");
        assert_eq!(
            v["message"],
            r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "team""#
        );
        assert_eq!(v["details"]["kind"], "configmaps");
    }

    #[tokio::test]
    async fn a_role_binding_applied_to_the_cache_lets_the_user_in() {
        let (router, cache) = app(Mode::Rbac);
        cache.apply(
            RbacKind::RoleBinding,
            EventType::Added,
            &serde_json::json!({"metadata": {"name": "b", "namespace": "team"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}),
        );
        let (status, _, body) =
            call(&router, bob(), "/api/v1/namespaces/team/configmaps", &[]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, _, _) = call(&router, bob(), "/api/v1/namespaces/other/configmaps", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn an_allowed_impersonation_hands_on_the_impersonated_user_without_the_headers() {
        let (router, _) = app(Mode::Rbac);
        let (status, _, body) = call(
            &router,
            admin(),
            "/healthz",
            &[("Impersonate-User", "carol"), ("Impersonate-Group", "devs")],
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, "carol|devs,system:authenticated|false");
        let (status, _, body) =
            call(&router, bob(), "/healthz", &[("Impersonate-User", "carol")]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(
            body.contains(r#"users \"carol\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"#),
            "{body}"
        );
    }

    #[tokio::test]
    async fn anonymous_may_read_health_but_nothing_else() {
        let (router, _) = app(Mode::Rbac);
        let (status, _, body) = call(&router, authn::UserInfo::anonymous(), "/healthz", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "system:anonymous|system:unauthenticated|false");
        let (status, _, _) = call(
            &router,
            authn::UserInfo::anonymous(),
            "/api/v1/namespaces/a/configmaps",
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn an_unparseable_path_and_groups_without_a_user_are_plain_text_500s() {
        let (router, _) = app(Mode::Rbac);
        let (status, ct, body) = call(&router, admin(), "/api/v1/watch", &[]).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(ct, "text/plain; charset=utf-8");
        assert_eq!(
            body,
            "Internal Server Error: \"/api/v1/watch\": failed to create RequestInfo: unable to determine kind and namespace from url, /api/v1/watch\n"
        );
        let (status, ct, body) = call(
            &router,
            admin(),
            "/api/v1/namespaces/a/configmaps?x=1",
            &[("Impersonate-Group", "devs")],
        )
        .await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(ct, "text/plain; charset=utf-8");
        assert!(
            body.starts_with("Internal Server Error: \"/api/v1/namespaces/a/configmaps?x=1\": "),
            "{body}"
        );
    }

    #[tokio::test]
    async fn always_allow_lets_everyone_in() {
        let (router, _) = app(Mode::AlwaysAllow);
        let (status, _, _) = call(&router, bob(), "/api/v1/namespaces/team/configmaps", &[]).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[test]
    fn modes_are_checked_and_always_allow_anywhere_in_the_list_allows_all() {
        let m = |s: &[&str]| parse_modes(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(m(&["RBAC"]), Ok(Mode::Rbac));
        assert_eq!(m(&["RBAC", "AlwaysAllow"]), Ok(Mode::AlwaysAllow));
        assert_eq!(m(&["AlwaysAllow"]), Ok(Mode::AlwaysAllow));
        assert!(m(&[]).is_err());
        assert!(m(&["Node", "RBAC"]).is_err_and(|e| e.contains("\"Node\"")));
        assert!(m(&["RBAC", "RBAC"]).is_err());
    }
}
