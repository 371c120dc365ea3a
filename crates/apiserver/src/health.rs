//! `/version`, `/healthz`, `/livez`, `/readyz`: what kube-apiserver serves
//! there (`staging/src/k8s.io/apiserver/pkg/server/healthz`), in the same
//! text format: `ok`, or with `?verbose` one `[+]name ok` line per check and
//! `<endpoint> check passed`; a failed check answers 500 with
//! `[-]name failed: reason withheld` and `<endpoint> check failed`.
//! `?exclude=name` skips a check. Every check is also served alone at
//! `/<endpoint>/<name>`.
//!
//! Checks: `ping` and `log` everywhere; `/readyz` also has `shutdown`, which
//! fails once graceful shutdown has begun, so load balancers stop sending
//! new requests. More checks can be added with [`Health::add_check`].

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::StatusCode;
use http::header::{CONTENT_TYPE, HeaderValue};
use parking_lot::RwLock;
use serde_json::json;
use ubernetes_apimachinery::ApiError;

/// The Kubernetes minor version this server emulates.
pub const KUBE_MAJOR: &str = "1";
/// The Kubernetes minor version this server emulates.
pub const KUBE_MINOR: &str = "37";

/// Which endpoints a check belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }
}

type CheckFn = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

struct Check {
    name: String,
    endpoints: Vec<Endpoint>,
    run: CheckFn,
}

/// The server's health: its checks and whether it is shutting down.
pub struct Health {
    shutting_down: AtomicBool,
    checks: RwLock<Vec<Check>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("shutting_down", &self.is_shutting_down())
            .field(
                "checks",
                &self
                    .checks
                    .read()
                    .iter()
                    .map(|c| c.name.clone())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Health {
    /// The default checks: `ping`, `log` (all endpoints), `shutdown` (readyz).
    pub fn new() -> Arc<Self> {
        let health = Arc::new(Self {
            shutting_down: AtomicBool::new(false),
            checks: RwLock::new(Vec::new()),
        });
        let all = [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz];
        health.add_check("ping", &all, || Ok(()));
        health.add_check("log", &all, || Ok(()));
        let weak = Arc::downgrade(&health);
        health.add_check("shutdown", &[Endpoint::Readyz], move || {
            match weak.upgrade() {
                Some(h) if h.is_shutting_down() => Err("process is shutting down".to_string()),
                _ => Ok(()),
            }
        });
        health
    }

    /// Add a named check to some endpoints (e.g. `etcd` for the store).
    pub fn add_check(
        &self,
        name: &str,
        endpoints: &[Endpoint],
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) {
        let mut checks = self.checks.write();
        // `shutdown` stays last, as in kube-apiserver.
        let at = checks
            .iter()
            .position(|c| c.name == "shutdown")
            .unwrap_or(checks.len());
        checks.insert(
            at,
            Check {
                name: name.to_string(),
                endpoints: endpoints.to_vec(),
                run: Arc::new(check),
            },
        );
    }

    /// Mark the server as shutting down: `/readyz` fails from now on.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Whether graceful shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    fn checks_for(&self, endpoint: Endpoint) -> Vec<(String, CheckFn)> {
        self.checks
            .read()
            .iter()
            .filter(|c| c.endpoints.contains(&endpoint))
            .map(|c| (c.name.clone(), c.run.clone()))
            .collect()
    }

    /// The response of `/<endpoint>` for a raw query string.
    pub fn report(&self, endpoint: Endpoint, query: Option<&str>) -> (StatusCode, String) {
        let params = query_params(query.unwrap_or_default());
        let mut excluded: Vec<String> = params
            .iter()
            .filter(|(k, _)| k == "exclude")
            .map(|(_, v)| v.clone())
            .collect();
        let verbose = params.iter().any(|(k, _)| k == "verbose");
        let mut out = String::new();
        let mut failed = Vec::new();
        for (name, run) in self.checks_for(endpoint) {
            if excluded.contains(&name) {
                excluded.retain(|e| *e != name);
                let _ = writeln!(out, "[+]{name} excluded: ok");
                continue;
            }
            match run() {
                Ok(()) => {
                    let _ = writeln!(out, "[+]{name} ok");
                }
                Err(reason) => {
                    tracing::debug!(check = %name, %reason, "{} check failed", endpoint.name());
                    let _ = writeln!(out, "[-]{name} failed: reason withheld");
                    failed.push(name);
                }
            }
        }
        let unmatched: Vec<String> = {
            let mut seen = HashSet::new();
            let mut list: Vec<String> = excluded
                .into_iter()
                .filter(|e| seen.insert(e.clone()))
                .collect();
            list.sort();
            list
        };
        if !unmatched.is_empty() {
            let quoted = unmatched
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(",");
            let _ = writeln!(
                out,
                "warn: some health checks cannot be excluded: no matches for {quoted}"
            );
        }
        if !failed.is_empty() {
            // Go's http.Error appends a newline.
            let _ = writeln!(out, "{} check failed", endpoint.name());
            return (StatusCode::INTERNAL_SERVER_ERROR, out);
        }
        if !verbose {
            return (StatusCode::OK, "ok".to_string());
        }
        let _ = writeln!(out, "{} check passed", endpoint.name());
        (StatusCode::OK, out)
    }

    /// The response of `/<endpoint>/<name>`, or `None` if there is no such check.
    pub fn report_one(&self, endpoint: Endpoint, name: &str) -> Option<(StatusCode, String)> {
        let (_, run) = self
            .checks_for(endpoint)
            .into_iter()
            .find(|(n, _)| n == name)?;
        Some(match run() {
            Ok(()) => (StatusCode::OK, "ok".to_string()),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {e}\n"),
            ),
        })
    }
}

/// `name=value` pairs of a query string (names without `=` have an empty
/// value), percent-decoded.
fn query_params(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn text(status: StatusCode, body: String) -> Response {
    let mut resp = (status, Body::from(body)).into_response();
    let headers = resp.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

fn not_found() -> Response {
    let err = ApiError::no_route();
    (
        err.status_code(),
        [(CONTENT_TYPE, "application/json")],
        err.status().to_string(),
    )
        .into_response()
}

/// The `/version` document, with kube-apiserver's field set
/// (`k8s.io/apimachinery/pkg/version.Info`).
pub fn version_info() -> serde_json::Value {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": "36",
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0-ubernetes.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": option_env!("UBERNETES_GIT_COMMIT").unwrap_or(""),
        "gitTreeState": option_env!("UBERNETES_GIT_TREE_STATE").unwrap_or(""),
        "buildDate": option_env!("UBERNETES_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    })
}

async fn version() -> Response {
    let body = serde_json::to_string_pretty(&version_info()).unwrap_or_default();
    ([(CONTENT_TYPE, "application/json")], body).into_response()
}

fn endpoint_routes(router: Router<Arc<Health>>, endpoint: Endpoint) -> Router<Arc<Health>> {
    let root = format!("/{}", endpoint.name());
    let one = format!("/{}/{{check}}", endpoint.name());
    router
        .route(
            &root,
            get(
                move |State(h): State<Arc<Health>>, RawQuery(q): RawQuery| async move {
                    let (status, body) = h.report(endpoint, q.as_deref());
                    text(status, body)
                },
            ),
        )
        .route(
            &one,
            get(
                move |State(h): State<Arc<Health>>, Path(check): Path<String>| async move {
                    match h.report_one(endpoint, &check) {
                        Some((status, body)) => text(status, body),
                        None => not_found(),
                    }
                },
            ),
        )
}

/// The routes `/version` (also `/version/`, which clients such as the
/// Python client call), `/healthz[/<check>]`, `/livez[/<check>]`,
/// `/readyz[/<check>]`.
pub fn router(health: Arc<Health>) -> Router {
    let mut r = Router::new()
        .route("/version", get(version))
        .route("/version/", get(version));
    for endpoint in [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz] {
        r = endpoint_routes(r, endpoint);
    }
    r.with_state(health)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    async fn get_text(router: Router, uri: &str) -> (StatusCode, String) {
        let resp = router
            .oneshot(http::Request::get(uri).body(Body::empty()).expect("req"))
            .await
            .expect("infallible");
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn healthz_says_ok() {
        let r = router(Health::new());
        assert_eq!(get_text(r, "/healthz").await, (StatusCode::OK, "ok".into()));
    }

    #[tokio::test]
    async fn verbose_readyz_lists_every_check_like_kube_apiserver() {
        let r = router(Health::new());
        let (status, body) = get_text(r, "/readyz?verbose").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[+]shutdown ok\nreadyz check passed\n"
        );
    }

    #[tokio::test]
    async fn livez_has_no_shutdown_check() {
        let r = router(Health::new());
        let (_, body) = get_text(r, "/livez?verbose=true").await;
        assert_eq!(body, "[+]ping ok\n[+]log ok\nlivez check passed\n");
    }

    #[tokio::test]
    async fn readyz_fails_once_shutdown_begins_but_livez_does_not() {
        let health = Health::new();
        health.begin_shutdown();
        let (status, body) = get_text(router(health.clone()), "/readyz").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"
        );
        assert_eq!(get_text(router(health), "/livez").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn excluded_checks_are_reported_and_unknown_exclusions_warned() {
        let health = Health::new();
        health.begin_shutdown();
        let (status, body) = get_text(
            router(health),
            "/readyz?verbose&exclude=shutdown&exclude=nope",
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[+]shutdown excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n"
        );
    }

    #[tokio::test]
    async fn a_single_check_is_served_at_its_sub_path() {
        let health = Health::new();
        assert_eq!(
            get_text(router(health.clone()), "/healthz/ping").await,
            (StatusCode::OK, "ok".into())
        );
        health.begin_shutdown();
        assert_eq!(
            get_text(router(health.clone()), "/readyz/shutdown").await,
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error: process is shutting down\n".into()
            )
        );
        assert_eq!(
            get_text(router(health), "/healthz/nope").await.0,
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn added_checks_run_before_shutdown() {
        let health = Health::new();
        health.add_check("etcd", &[Endpoint::Readyz], || Err("down".into()));
        let (status, body) = get_text(router(health), "/readyz?verbose").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n"
        );
    }

    #[tokio::test]
    async fn version_has_kube_apiservers_fields() {
        let (status, body) = get_text(router(Health::new()), "/version").await;
        assert_eq!(status, StatusCode::OK);
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "37");
        assert!(
            v["gitVersion"]
                .as_str()
                .expect("string")
                .starts_with("v1.37.0-ubernetes.")
        );
        for field in [
            "emulationMajor",
            "emulationMinor",
            "minCompatibilityMajor",
            "minCompatibilityMinor",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ] {
            assert!(v[field].is_string(), "{field}");
        }
    }
}
