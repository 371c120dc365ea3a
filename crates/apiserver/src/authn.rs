//! Authentication: who is making a request (kube-apiserver's
//! `staging/src/k8s.io/apiserver/pkg/authentication`).
//!
//! Authenticators are tried in kube-apiserver's order and the first that
//! recognises the request wins (its union authenticator):
//! 1. a trusted in-process identity ([`InProcessIdentity`], a request
//!    extension only code in this process can set: a remote request cannot
//!    carry extensions);
//! 2. the TLS client certificate ([`ClientCertificate`], set by the listener
//!    after rustls verified the chain against the client CA): CN = user,
//!    every O = a group; a certificate with an empty CN is ignored;
//! 3. a bearer token from `--token-auth-file` (kube's CSV format);
//! 4. a service-account JWT of this server's issuers
//!    ([`ServiceAccountJwt::authenticate`]: signature, issuer, audiences
//!    (`--api-audiences`), expiry, and the account and bound Pod, Secret or
//!    Node still existing with the claimed uid; a token Secret's token only
//!    while that Secret holds it): user `system:serviceaccount:NS:NAME`
//!    (uid: the account's), groups `system:serviceaccounts` and
//!    `system:serviceaccounts:NS`, extra as kube's (pod, node, credential id).
//!
//! Authenticated users get the group `system:authenticated`. A request no
//! authenticator recognises gets 401 with a `metav1.Status` body, except on
//! the public paths (`/healthz`, `/livez`, `/readyz` and their sub-paths,
//! `/version`), where it goes on as `system:anonymous`. A bearer token that
//! is present but unknown is a 401 everywhere, as in kube-apiserver.
//! The handlers read the result as a [`UserInfo`] request extension.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use ubernetes_apimachinery::ApiError;
use ubernetes_registry::jwt::{ObjectLookup, ServiceAccountJwt};

/// The group every authenticated user is in.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user's name.
pub const ANONYMOUS: &str = "system:anonymous";

/// Who made a request (`user.Info`): the one type shared with authorization,
/// audit and admission.
pub use ubernetes_apimachinery::user::UserInfo;

/// A trusted identity for requests made from inside this process (the
/// embedded controllers' in-process client). Authentication believes it
/// whenever it is present, so only in-process code may insert it.
#[derive(Clone, Debug)]
pub struct InProcessIdentity(pub UserInfo);

/// The identity in the TLS client certificate of the connection, inserted
/// into every request of that connection by the listener after rustls has
/// verified the chain against the client CA.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The leaf's subject CommonName.
    pub common_name: String,
    /// The leaf's subject Organizations.
    pub organizations: Vec<String>,
}

/// Why a request was not authenticated (logged; the client sees only
/// `Unauthorized`, as from kube-apiserver).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    #[error("invalid bearer token")]
    InvalidBearerToken,
}

/// Loading `--token-auth-file` failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading token file '{path}': {source}")]
    Read {
        path: String,
        #[source]
        source: csv::Error,
    },
    #[error(
        "token file '{path}' must have at least 3 columns (token, user name, user uid), found {found}"
    )]
    TooFewColumns { path: String, found: usize },
}

/// Service-account JWT checking: the issuer's keys and claims, and where
/// the objects the claims name are looked up.
#[derive(Clone)]
struct ServiceAccountTokens {
    jwt: Arc<ServiceAccountJwt>,
    lookup: Arc<dyn ObjectLookup>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.jwt.fmt(f)
    }
}

/// The authenticators of this server.
#[derive(Debug, Default)]
pub struct Authenticator {
    tokens: HashMap<String, UserInfo>,
    /// Service-account tokens (none: not checked).
    service_accounts: Option<ServiceAccountTokens>,
}

impl Authenticator {
    /// An authenticator with the tokens of `token_file` (if any).
    pub fn new(token_file: Option<&Path>) -> Result<Self, TokenFileError> {
        let tokens = match token_file {
            Some(path) => load_token_file(path)?,
            None => HashMap::new(),
        };
        Ok(Self {
            tokens,
            service_accounts: None,
        })
    }

    /// An authenticator with the given static tokens.
    pub fn with_tokens(tokens: HashMap<String, UserInfo>) -> Self {
        Self {
            tokens,
            service_accounts: None,
        }
    }

    /// Also accept the service-account JWTs of `jwt`, checking the objects
    /// they name in `lookup`.
    pub fn with_service_account_tokens(
        mut self,
        jwt: Arc<ServiceAccountJwt>,
        lookup: Arc<dyn ObjectLookup>,
    ) -> Self {
        self.service_accounts = Some(ServiceAccountTokens { jwt, lookup });
        self
    }

    /// The audiences the server's own tokens must carry (`--api-audiences`);
    /// empty without service-account tokens.
    pub fn api_audiences(&self) -> Vec<String> {
        self.service_accounts
            .as_ref()
            .map(|s| s.jwt.api_audiences().to_vec())
            .unwrap_or_default()
    }

    /// Who a bearer token belongs to, and for which audiences (kube's token
    /// authenticators): the token file first (audience-agnostic: valid for
    /// the requested audiences that are the server's own), then
    /// service-account JWTs. `audiences`: those the caller wants (TokenReview's
    /// `spec.audiences`); none: the server's.
    pub fn authenticate_token(
        &self,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<(UserInfo, Vec<String>), AuthnError> {
        let own = self.api_audiences();
        if let Some(user) = self.tokens.get(token) {
            let auds = match audiences.filter(|a| !a.is_empty()) {
                Some(wanted) if !own.is_empty() => {
                    let both: Vec<String> =
                        wanted.iter().filter(|a| own.contains(a)).cloned().collect();
                    if both.is_empty() {
                        return Err(AuthnError::InvalidBearerToken);
                    }
                    both
                }
                Some(wanted) => wanted.to_vec(),
                None => own,
            };
            return Ok((with_authenticated_group(user.clone()), auds));
        }
        let Some(sa) = &self.service_accounts else {
            return Err(AuthnError::InvalidBearerToken);
        };
        let now = jiff::Timestamp::now().as_second();
        match sa
            .jwt
            .authenticate(token, audiences, sa.lookup.as_ref(), now)
        {
            Ok(Some(ok)) => Ok((
                with_authenticated_group(UserInfo {
                    name: ok.info.username(),
                    uid: ok.info.uid.clone(),
                    groups: ok.info.groups(),
                    extra: ok.info.extra(),
                }),
                ok.audiences,
            )),
            Ok(None) => Err(AuthnError::InvalidBearerToken),
            Err(e) => {
                tracing::debug!(error = %e, "service account token refused");
                Err(AuthnError::InvalidBearerToken)
            }
        }
    }

    /// How many bearer tokens are known.
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }

    /// Who made the request: `Ok(None)` when it carries no credentials this
    /// server recognises, `Err` when it carries a bad one.
    pub fn authenticate(
        &self,
        parts: &http::request::Parts,
    ) -> Result<Option<UserInfo>, AuthnError> {
        if let Some(InProcessIdentity(user)) = parts.extensions.get::<InProcessIdentity>() {
            return Ok(Some(with_authenticated_group(user.clone())));
        }
        if let Some(cert) = parts.extensions.get::<ClientCertificate>()
            && !cert.common_name.is_empty()
        {
            return Ok(Some(with_authenticated_group(UserInfo {
                name: cert.common_name.clone(),
                uid: String::new(),
                groups: cert.organizations.clone(),
                extra: BTreeMap::new(),
            })));
        }
        match bearer_token(&parts.headers) {
            Some(token) => self
                .authenticate_token(token, None)
                .map(|(user, _)| Some(user)),
            None => Ok(None),
        }
    }
}

/// Whether anonymous requests may reach `path` (kube-apiserver's
/// `system:public-info-viewer` paths that this server serves).
pub fn is_public_path(path: &str) -> bool {
    const PREFIXES: [&str; 3] = ["/healthz", "/livez", "/readyz"];
    if path == "/version" || path == "/version/" {
        return true;
    }
    PREFIXES.iter().any(|p| {
        path == *p
            || path
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The axum middleware: authenticate, insert [`UserInfo`], or answer 401.
///
/// Use with `axum::middleware::from_fn_with_state(Arc<Authenticator>, authenticate)`.
pub async fn authenticate(
    State(authenticator): State<Arc<Authenticator>>,
    request: Request,
    next: Next,
) -> Response {
    authenticate_run(&authenticator, request, |request| next.run(request)).await
}

/// [`authenticate`] with the rest of the chain given as `run`, for the
/// server's single filter ([`crate::serve::build_router`]).
pub(crate) async fn authenticate_run<Fut: Future<Output = Response>>(
    authenticator: &Authenticator,
    request: Request,
    run: impl FnOnce(Request) -> Fut,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let user = match authenticator.authenticate(&parts) {
        Ok(Some(user)) => {
            // kube-apiserver drops the credential once it has been used.
            parts.headers.remove(AUTHORIZATION);
            user
        }
        Ok(None) if is_public_path(parts.uri.path()) => UserInfo::anonymous(),
        Ok(None) => {
            tracing::debug!(path = %parts.uri.path(), "anonymous request rejected");
            return unauthorized();
        }
        Err(err) => {
            tracing::debug!(path = %parts.uri.path(), error = %err, "authentication failed");
            return unauthorized();
        }
    };
    parts.extensions.insert(user);
    run(Request::from_parts(parts, body)).await
}

/// 401 with kube-apiserver's Status body.
fn unauthorized() -> Response {
    let err = ApiError::unauthorized();
    let body = err.status().to_string();
    (
        err.status_code(),
        [(CONTENT_TYPE, "application/json")],
        Body::from(body),
    )
        .into_response()
}

/// kube's `AuthenticatedGroupAdder`: add `system:authenticated` unless the
/// user already is in it or in `system:unauthenticated`, or is anonymous.
fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if user.name == ANONYMOUS {
        return user;
    }
    if !user
        .groups
        .iter()
        .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
    {
        user.groups.push(ALL_AUTHENTICATED.to_string());
    }
    user
}

/// The token of `Authorization: Bearer <token>`, as kube's bearertoken
/// authenticator reads it (scheme case-insensitive, surrounding space trimmed).
fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token)
}

/// Parse kube-apiserver's token file: CSV rows `token,user,uid[,"g1,g2"]`;
/// rows with an empty token are skipped, a later duplicate wins.
pub fn load_token_file(path: &Path) -> Result<HashMap<String, UserInfo>, TokenFileError> {
    let shown = path.display().to_string();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(path)
        .map_err(|source| TokenFileError::Read {
            path: shown.clone(),
            source,
        })?;
    let mut tokens = HashMap::new();
    for (index, record) in reader.records().enumerate() {
        let record = record.map_err(|source| TokenFileError::Read {
            path: shown.clone(),
            source,
        })?;
        if record.len() < 3 {
            return Err(TokenFileError::TooFewColumns {
                path: shown,
                found: record.len(),
            });
        }
        let token = record.get(0).unwrap_or_default();
        if token.is_empty() {
            tracing::warn!(
                "empty token has been found in token file '{shown}', record number '{}'",
                index + 1
            );
            continue;
        }
        let user = UserInfo {
            name: record.get(1).unwrap_or_default().to_string(),
            uid: record.get(2).unwrap_or_default().to_string(),
            groups: record
                .get(3)
                .map(|g| g.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            extra: BTreeMap::new(),
        };
        if tokens.insert(token.to_string(), user).is_some() {
            tracing::warn!(
                "duplicate token has been found in token file '{shown}', record number '{}'",
                index + 1
            );
        }
    }
    Ok(tokens)
}

/// The authenticated user as the authorizer sees it.
pub fn to_rbac_user(user: &UserInfo) -> ubernetes_rbac::UserInfo {
    ubernetes_rbac::UserInfo {
        name: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use http::StatusCode;
    use tower::ServiceExt;

    fn parts(build: http::request::Builder) -> http::request::Parts {
        build.body(()).expect("request").into_parts().0
    }

    fn tokens() -> Authenticator {
        let mut map = HashMap::new();
        map.insert(
            "secret".to_string(),
            UserInfo {
                name: "alice".into(),
                uid: "1".into(),
                groups: vec!["dev".into()],
                extra: BTreeMap::new(),
            },
        );
        Authenticator::with_tokens(map)
    }

    fn app() -> Router {
        Router::new()
            .route(
                "/api",
                get(
                    |axum::Extension(user): axum::Extension<UserInfo>| async move {
                        format!("{}|{}", user.name, user.groups.join(","))
                    },
                ),
            )
            .route(
                "/healthz",
                get(|axum::Extension(user): axum::Extension<UserInfo>| async move { user.name }),
            )
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(tokens()),
                authenticate,
            ))
    }

    async fn call(req: http::Request<Body>) -> (StatusCode, String) {
        let resp = app().oneshot(req).await.expect("infallible");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[test]
    fn a_known_bearer_token_authenticates_its_user_with_the_authenticated_group() {
        let p = parts(http::Request::get("/api").header("Authorization", "Bearer secret"));
        let user = tokens().authenticate(&p).expect("ok").expect("user");
        assert_eq!(user.name, "alice");
        assert_eq!(user.uid, "1");
        assert_eq!(user.groups, vec!["dev", "system:authenticated"]);
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let p = parts(http::Request::get("/api").header("Authorization", "  bearer secret "));
        assert!(tokens().authenticate(&p).expect("ok").is_some());
    }

    #[test]
    fn an_unknown_bearer_token_is_an_error() {
        let p = parts(http::Request::get("/api").header("Authorization", "Bearer nope"));
        assert_eq!(
            tokens().authenticate(&p),
            Err(AuthnError::InvalidBearerToken)
        );
    }

    #[test]
    fn a_client_certificate_wins_over_a_bad_token_as_kube_tries_x509_first() {
        let mut p = parts(http::Request::get("/api").header("Authorization", "Bearer nope"));
        p.extensions.insert(ClientCertificate {
            common_name: "bob".into(),
            organizations: vec!["ops".into(), "qa".into()],
        });
        let user = tokens().authenticate(&p).expect("ok").expect("user");
        assert_eq!(user.name, "bob");
        assert_eq!(user.groups, vec!["ops", "qa", "system:authenticated"]);
    }

    #[test]
    fn a_client_certificate_without_common_name_falls_through_to_tokens() {
        let mut p = parts(http::Request::get("/api").header("Authorization", "Bearer secret"));
        p.extensions.insert(ClientCertificate::default());
        let user = tokens().authenticate(&p).expect("ok").expect("user");
        assert_eq!(user.name, "alice");
    }

    #[test]
    fn an_in_process_identity_is_trusted_first() {
        let mut p = parts(http::Request::get("/api").header("Authorization", "Bearer nope"));
        p.extensions.insert(InProcessIdentity(UserInfo::new(
            "system:ubernetes-controller",
            &[],
        )));
        let user = tokens().authenticate(&p).expect("ok").expect("user");
        assert_eq!(user.name, "system:ubernetes-controller");
        assert_eq!(user.groups, vec!["system:authenticated"]);
    }

    #[test]
    fn public_paths_are_health_checks_and_version() {
        for p in [
            "/healthz",
            "/healthz/ping",
            "/livez",
            "/readyz/shutdown",
            "/version",
        ] {
            assert!(is_public_path(p), "{p}");
        }
        for p in ["/api", "/healthzx", "/versions", "/apis/apps/v1", "/"] {
            assert!(!is_public_path(p), "{p}");
        }
    }

    #[tokio::test]
    async fn anonymous_requests_to_the_api_get_a_401_status() {
        let (status, body) =
            call(http::Request::get("/api").body(Body::empty()).expect("req")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["reason"], "Unauthorized");
        assert_eq!(v["message"], "Unauthorized");
        assert_eq!(v["code"], 401);
    }

    #[tokio::test]
    async fn anonymous_requests_to_health_go_through_as_system_anonymous() {
        let (status, body) = call(
            http::Request::get("/healthz")
                .body(Body::empty())
                .expect("req"),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "system:anonymous");
    }

    #[tokio::test]
    async fn a_bad_token_is_rejected_even_on_public_paths() {
        let req = http::Request::get("/healthz")
            .header("Authorization", "Bearer nope")
            .body(Body::empty())
            .expect("req");
        assert_eq!(call(req).await.0, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn handlers_see_the_authenticated_user() {
        let req = http::Request::get("/api")
            .header("Authorization", "Bearer secret")
            .body(Body::empty())
            .expect("req");
        assert_eq!(
            call(req).await,
            (StatusCode::OK, "alice|dev,system:authenticated".to_string())
        );
    }

    /// Objects by (resource, namespace, name), for the token checks.
    struct Objects(HashMap<(String, String, String), serde_json::Value>);

    impl ObjectLookup for Objects {
        fn object(
            &self,
            resource: &str,
            namespace: Option<&str>,
            name: &str,
        ) -> Option<serde_json::Value> {
            self.0
                .get(&(
                    resource.to_string(),
                    namespace.unwrap_or_default().to_string(),
                    name.to_string(),
                ))
                .cloned()
        }
    }

    fn jwt() -> Arc<ServiceAccountJwt> {
        // A test-only P-256 key (openssl genpkey).
        let pem = concat!(
            "-----BEGIN PRIVATE KEY-----\n",
            "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgfz+5JFASPUtwKthk\n",
            "dpvXpEZpQelNsNwtTnOviDrosZuhRANCAAStDrh2vlqTi78Pe59v92tn7ub/tIs6\n",
            "5l6uYObcohRSQqhupzHEHAWSTxe5XnYyiJnNcwGkC4mU3zgLxPr/18ef\n",
            "-----END PRIVATE KEY-----\n",
        );
        ServiceAccountJwt::new(ubernetes_registry::jwt::JwtConfig {
            signing_key_pem: pem.into(),
            signing_key_name: "test".into(),
            ..Default::default()
        })
        .expect("issuer")
    }

    /// The authenticator of [`tokens`] that also takes service-account
    /// tokens, and a bound token of `ns1/robot`.
    fn service_account_tokens() -> (Authenticator, String) {
        let jwt = jwt();
        let mut objects = HashMap::new();
        objects.insert(
            (
                "serviceaccounts".to_string(),
                "ns1".to_string(),
                "robot".to_string(),
            ),
            serde_json::json!({"metadata": {"namespace": "ns1", "name": "robot", "uid": "sa-uid"}}),
        );
        let account = ubernetes_registry::jwt::ObjectRef {
            name: "robot".into(),
            uid: "sa-uid".into(),
        };
        let (token, _) = jwt
            .bound_token(
                "ns1",
                &account,
                &Default::default(),
                jwt.api_audiences(),
                3600,
                jiff::Timestamp::now().as_second(),
            )
            .expect("token");
        (
            tokens().with_service_account_tokens(jwt, Arc::new(Objects(objects))),
            token,
        )
    }

    #[test]
    fn a_service_account_token_authenticates_as_its_service_account() {
        let (authn, token) = service_account_tokens();
        let p =
            parts(http::Request::get("/api").header("Authorization", format!("Bearer {token}")));
        let user = authn.authenticate(&p).expect("ok").expect("user");
        assert_eq!(user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(user.uid, "sa-uid");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn the_token_file_is_tried_before_service_account_tokens() {
        let p = parts(http::Request::get("/api").header("Authorization", "Bearer secret"));
        let user = service_account_tokens()
            .0
            .authenticate(&p)
            .expect("ok")
            .expect("user");
        assert_eq!(user.name, "alice");
    }

    #[test]
    fn a_token_neither_in_the_file_nor_a_service_account_token_is_an_error() {
        let p = parts(http::Request::get("/api").header("Authorization", "Bearer other"));
        assert_eq!(
            service_account_tokens().0.authenticate(&p),
            Err(AuthnError::InvalidBearerToken)
        );
    }

    #[test]
    fn the_token_file_is_kube_apiservers_csv() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens.csv");
        std::fs::write(
            &path,
            "t1,alice,u1,\"dev,ops\"\nt2,bob,u2\n\n,empty,u3\nt3,carol,u4,admins\n",
        )
        .expect("write");
        let tokens = load_token_file(&path).expect("loads");
        assert_eq!(tokens.len(), 3);
        assert_eq!(tokens["t1"].groups, vec!["dev", "ops"]);
        assert_eq!(tokens["t1"].uid, "u1");
        assert!(tokens["t2"].groups.is_empty());
        assert_eq!(tokens["t3"].groups, vec!["admins"]);
    }

    #[test]
    fn a_token_file_row_with_two_columns_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "t1,alice\n").expect("write");
        let err = load_token_file(&path).expect_err("too few");
        assert!(
            err.to_string().contains("must have at least 3 columns"),
            "{err}"
        );
    }
}
