//! How a request arrives: the HTTPS listener and the filter chain in front of
//! the API (kube-apiserver's `pkg/server` secure serving and
//! `DefaultBuildHandlerChain`).
//!
//! [`start`] makes or loads the TLS material (the dev PKI under
//! `DATA_DIR/pki/`, or `--tls-cert-file`/`--tls-private-key-file`), builds the
//! state ([`crate::state::build_state`]), binds `--bind-address:--secure-port`,
//! writes `DATA_DIR/kubeconfig` and serves rustls (TLS 1.2/1.3, ALPN `h2` and
//! `http/1.1`) with hyper-util's auto builder (HTTP/1.1 and HTTP/2). Client
//! certificates are optional at the TLS level (Go's `RequestClientCert`, as
//! kube-apiserver); one that a client CA signed is handed to authentication
//! as a [`ClientCertificate`] request extension, any other is ignored (the
//! request is then anonymous: 401 on the API). The client CAs are
//! `--client-ca-file` plus the dev CA while it is the serving CA (no
//! `--tls-cert-file`). The data dir is made 0700 (tightened with a warning
//! when it was looser), and a warning names the store when Secrets are
//! written to it unencrypted (`--encrypt-secrets-by-default=false`, or a
//! configuration with identity first for them).
//!
//! The filter chain ([`build_router`]), outermost first: request tracing →
//! `Audit-Id` header ([`crate::audit::audit_id`]) → panic catcher (500
//! Status; a panic never kills the server) → request deadline and watch
//! closer (504 Status past the deadline; ends watch streams on shutdown) →
//! authentication (401 Status) → audit log ([`crate::audit::audit`], when
//! configured) → authorization and impersonation ([`crate::authz`]: 403
//! Status) → request metrics ([`crate::metrics::instrument`]), body-size
//! limit (413 Status) and empty 404/405 answers turned into Status bodies
//! → routes (health, `/metrics` + [`crate::state::api_router`]). The
//! filters are one async function in front of the routes, not router
//! layers: each layer boxed a copy of the rest of the chain and its future
//! per request.
//!
//! Graceful shutdown when the `shutdown` future completes: `/readyz` starts
//! failing, requests are still served for `--shutdown-delay-duration`, then
//! the listener closes, watches end, in-flight requests get
//! `--shutdown-grace-period` to finish, and the rest are dropped.
//! [`run`] is what the binary calls; it also prints how to use the server.

use std::any::Any;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Request};
use axum::response::{IntoResponse, Response};
use futures::{FutureExt as _, StreamExt as _};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Body as _;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, RootCertStore};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;
use tracing::Instrument as _;
use ubernetes_apimachinery::ApiError;

use crate::authn::{self, Authenticator, ClientCertificate};
use crate::authz::{self, Authorization};
use crate::health::{self, Health};
use crate::options::ServerOptions;
use crate::routes::api_router;
use crate::state::build_state;

/// The name of the kubeconfig context, cluster and user written on start.
pub const CONTEXT_NAME: &str = "federation";

/// kube-apiserver's `--http2-max-streams-per-connection` default.
const HTTP2_MAX_STREAMS_PER_CONNECTION: u32 = 1000;

/// How long a TLS handshake may take before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A server that is running (see [`start`]).
#[derive(Debug)]
pub struct RunningServer {
    /// The address the listener is bound to (the real port when
    /// `--secure-port 0`).
    pub local_addr: SocketAddr,
    /// The URL clients use (`https://127.0.0.1:PORT` when bound to 0.0.0.0).
    pub url: String,
    /// The absolute data dir.
    pub data_dir: PathBuf,
    /// `DATA_DIR/kubeconfig`, written on this start.
    pub kubeconfig: PathBuf,
    /// The health checks (e.g. to watch `/readyz` turn during shutdown).
    pub health: Arc<Health>,
    /// The cluster proxy, to hand it the member clients.
    pub cluster_proxy: Arc<crate::proxy::ClusterProxy>,
    /// Whether this replica leads: the federation controllers run per term.
    pub leadership: ubernetes_registry::leader_election::Leadership,
    /// The app with its full filter chain ([`build_router`]), for
    /// in-process clients.
    app: Router,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// An in-process `kube::Client` acting as `user`, over the full filter
    /// chain (authentication trusts the identity; RBAC applies). See
    /// [`crate::in_process`].
    pub fn client(&self, user: authn::UserInfo) -> kube::Client {
        crate::in_process::in_process_client(self.app.clone(), user)
    }

    /// Print where the server listens and how to use it: on stdout the
    /// lines scripts read (`ubernetes: serving on URL`), and a log line.
    pub fn announce(&self) {
        let kubeconfig = self.kubeconfig.display().to_string();
        tracing::info!(
            "use it with: kubectl --kubeconfig {kubeconfig} --context={CONTEXT_NAME} get ns"
        );
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ubernetes: serving on {}", self.url);
        let _ = writeln!(out, "ubernetes: kubeconfig {kubeconfig}");
        let _ = writeln!(
            out,
            "ubernetes: use it with: kubectl --kubeconfig {kubeconfig} --context={CONTEXT_NAME} get ns"
        );
        let _ = out.flush();
    }

    /// Wait until the server has shut down (after the `shutdown` future
    /// given to [`start`] completed and connections drained).
    pub async fn wait(self) -> anyhow::Result<()> {
        self.task.await.context("server task failed")?
    }
}

/// Start the server and return once it listens; it serves until `shutdown`
/// completes. See the module documentation for what happens on the way.
pub async fn start(
    options: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<RunningServer> {
    let mut options = options;
    // The data dir holds the store (every Secret, the members' kubeconfigs
    // among them), the PKI's private keys and the admin kubeconfig: only
    // the server's user may enter it (docs/security.md).
    let loosened = ubernetes_certs::ensure_private_dir(&options.data_dir).with_context(|| {
        format!(
            "cannot create the data dir {} with mode 0700 (set another with --data-dir)",
            options.data_dir.display()
        )
    })?;
    options.data_dir = std::fs::canonicalize(&options.data_dir)
        .with_context(|| format!("cannot resolve --data-dir {}", options.data_dir.display()))?;
    let data_dir = options.data_dir.clone();
    if let Some(mode) = loosened {
        tracing::warn!(
            data_dir = %data_dir.display(),
            "the data dir had mode {mode:o}, which lets other users read the store and keys; set it to 0700"
        );
    }
    tracing::info!(data_dir = %data_dir.display(), "using data dir");

    let tls = load_tls(&options)?;
    // A bad audit policy fails the start before anything is served.
    let auditor = crate::audit::Auditor::from_options(&options.audit, secret_bodies())?;

    let bind = SocketAddr::new(options.bind_address, options.secure_port);
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|e| bind_error(bind, e))?;
    let local_addr = listener.local_addr().context("reading the bound address")?;

    // The state sees the real port (e.g. for the `default/kubernetes`
    // Endpoints) when `--secure-port 0` picked one.
    options.secure_port = local_addr.port();
    let state = build_state(&options, Some(tls.kubeconfig_ca_pem.clone())).await?;
    warn_if_secrets_are_stored_unencrypted(&options);
    let authenticator = state.authenticator.clone();
    if options.token_auth_file.is_some() {
        tracing::info!(
            tokens = authenticator.token_count(),
            "loaded bearer tokens from --token-auth-file"
        );
    }
    let authorization = state.authz.clone();
    let health = Health::new();
    crate::hooks::add_checks(&health, &state);
    let watch_shutdown = CancellationToken::new();
    // When the listener closes, the in-server controllers stop too, so the
    // store is released once the last request is done with it.
    {
        let closing = watch_shutdown.clone();
        let registry = state.registry.clone();
        tokio::spawn(async move {
            closing.cancelled().await;
            registry.shutdown();
        });
    }
    let cluster_proxy = state.cluster_proxy.clone();
    let leadership = state.leadership.clone();
    crate::metrics::watch_storage(&state.registry);
    tokio::spawn(crate::metrics::publish_inflight_every_second(
        watch_shutdown.clone(),
    ));
    let app = build_router(
        api_router(state),
        health.clone(),
        authenticator,
        authorization,
        options.max_request_body_bytes,
        watch_shutdown.clone(),
        auditor,
    );
    // The dashboard's static assets, outside the filter chain: the only
    // paths served without credentials (its API calls carry the user's).
    let app = if options.ui {
        app.merge(ubernetes_ui::router())
    } else {
        app
    };

    let url = client_url(local_addr);
    let kubeconfig = options.kubeconfig_path();
    if tls.dev_ca_trusted {
        ubernetes_certs::write_kubeconfig(
            &kubeconfig,
            &url,
            &tls.kubeconfig_ca_pem,
            &tls.admin.cert_pem,
            &tls.admin.key_pem,
            CONTEXT_NAME,
        )
        .with_context(|| format!("cannot write {}", kubeconfig.display()))?;
        tracing::info!(kubeconfig = %kubeconfig.display(), "wrote admin kubeconfig (context {CONTEXT_NAME})");
    } else {
        // The dev admin certificate would not authenticate: write the
        // cluster and its CA only, never credentials that do not work.
        ubernetes_certs::write_kubeconfig_without_user(
            &kubeconfig,
            &url,
            &tls.kubeconfig_ca_pem,
            CONTEXT_NAME,
        )
        .with_context(|| format!("cannot write {}", kubeconfig.display()))?;
        tracing::warn!(
            kubeconfig = %kubeconfig.display(),
            "wrote a kubeconfig without user credentials: the dev CA {} is not trusted for client certificates (--tls-cert-file is given and --client-ca-file does not contain it); add your own credentials, or pass --client-ca-file {} to use the dev admin certificate",
            tls.dev_ca_path.display(),
            tls.dev_ca_path.display()
        );
    }
    tracing::info!(address = %local_addr, url = %url, "serving HTTPS (HTTP/1.1 and HTTP/2)");

    let acceptor = TlsAcceptor::from(tls.server_config);
    let task = tokio::spawn(accept_loop(
        listener,
        acceptor,
        tls.client_ca,
        app.clone(),
        health.clone(),
        watch_shutdown,
        shutdown,
        options.shutdown_delay_duration,
        options.shutdown_grace,
    ));
    Ok(RunningServer {
        local_addr,
        url,
        data_dir,
        kubeconfig,
        health,
        cluster_proxy,
        leadership,
        app,
        task,
    })
}

/// Start the server, print where it listens and how to use it on stdout,
/// and serve until `shutdown` completes and connections have drained.
pub async fn run(
    options: ServerOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let server = start(options, shutdown).await?;
    server.announce();
    server.wait().await
}

/// The filter chain around the API routes (see the module documentation).
/// The same chain serves the in-process client: requests carrying an
/// [`authn::InProcessIdentity`] extension are authenticated by it.
///
/// The filters are one service ([`filter_chain`]) in front of the routes,
/// not a stack of router layers: each `Router::layer` boxes a clone of the
/// rest of the chain and its future per request, and each `from_fn` layer
/// one more; nine of them were a fifth of a get's server CPU.
pub fn build_router(
    api: Router,
    health: Arc<Health>,
    authenticator: Arc<Authenticator>,
    authorization: Arc<Authorization>,
    max_request_body_bytes: u64,
    watch_shutdown: CancellationToken,
    auditor: Option<Arc<crate::audit::Auditor>>,
) -> Router {
    let limit = usize::try_from(max_request_body_bytes).unwrap_or(usize::MAX);
    let routes = api
        .merge(health::router(health))
        .merge(crate::metrics::router());
    let filters = Arc::new(Filters {
        routes: tower::Layer::layer(&DefaultBodyLimit::max(limit), routes),
        authenticator,
        authorization,
        auditor,
        limit,
        watch_shutdown,
    });
    Router::new().fallback_service(tower::service_fn(move |request: Request| {
        filter_chain(filters.clone(), request).map(Ok::<_, Infallible>)
    }))
}

/// The routes behind the filters, marked with the body limit
/// (`DefaultBodyLimit` only marks the request for axum's extractors).
type Routes = <DefaultBodyLimit as tower::Layer<Router>>::Service;

/// What the filters of [`filter_chain`] need.
struct Filters {
    routes: Routes,
    authenticator: Arc<Authenticator>,
    authorization: Arc<Authorization>,
    auditor: Option<Arc<crate::audit::Auditor>>,
    limit: usize,
    watch_shutdown: CancellationToken,
}

/// Every filter in front of the routes, outermost first: request tracing
/// (tower-http's `TraceLayer` events: DEBUG on request and response, ERROR
/// on a 5xx), the `Audit-Id`, the panic catcher, the deadline and watch
/// closer, authentication, the audit log (when configured: its state is
/// boxed, so audit off costs nothing), authorization, the request metrics,
/// the body limit and the Status for axum's empty errors. One future per
/// request for all of them.
async fn filter_chain(filters: Arc<Filters>, request: Request) -> Response {
    let span = tracing::debug_span!(
        "request",
        method = %request.method(),
        uri = %request.uri(),
        version = ?request.version(),
    );
    let f = &*filters;
    async move {
        tracing::debug!("started processing request");
        let start = std::time::Instant::now();
        let response = crate::audit::audit_id_run(request, |request| async move {
            match AssertUnwindSafe(guarded(f, request)).catch_unwind().await {
                Ok(response) => response,
                Err(panic) => panic_response(panic),
            }
        })
        .await;
        let latency = start.elapsed();
        let status = response.status();
        if status.is_server_error() {
            tracing::error!(status = status.as_u16(), ?latency, "response failed");
        } else {
            tracing::debug!(
                status = status.as_u16(),
                ?latency,
                "finished processing request"
            );
        }
        response
    }
    .instrument(span)
    .await
}

/// The filters inside the panic catcher: the request deadline
/// ([`request_deadline`]) and, for a watch, its end on shutdown
/// ([`close_on_shutdown`]), then authentication, the audit log and what
/// follows.
async fn guarded(f: &Filters, request: Request) -> Response {
    let watch = is_watch(&request);
    let response = request_deadline(request, |request| {
        authn::authenticate_run(&f.authenticator, request, move |request| async move {
            match &f.auditor {
                Some(auditor) => {
                    Box::pin(crate::audit::audit_run(auditor, request, |request| {
                        authorized(f, request)
                    }))
                    .await
                }
                None => authorized(f, request).await,
            }
        })
    })
    .await;
    if watch {
        close_on_shutdown(response, f.watch_shutdown.clone())
    } else {
        response
    }
}

/// Authorization, then the request metrics
/// ([`crate::metrics::instrument_run`]), the body limit ([`limit_body`])
/// and the Status for axum's empty 404/405 ([`status_for_empty_errors`]),
/// then the routes.
async fn authorized(f: &Filters, request: Request) -> Response {
    authz::authorize_run(&f.authorization, request, |request| {
        crate::metrics::instrument_run(request, move |request| {
            limit_body(f.limit, request, move |request| async move {
                let response = match f.routes.clone().oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                status_for_empty_errors(response)
            })
        })
    })
    .await
}

// ---------------------------------------------------------------------------
// filters

/// kube-apiserver's `--request-timeout` default: the longest a request that
/// is not long-running may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// kube's `WithRequestDeadline` and `WithTimeoutForNonLongRunningRequests`:
/// a request that is not long-running (watches are) gets the `timeout` of
/// its URL, or 60 s when that is absent, zero, negative or longer; a
/// `timeout` Go's `time.ParseDuration` refuses is 400
/// (`invalid timeout specified in the request URL - …`). A request past its
/// deadline is answered 504 Timeout, as kube's timeout filter does.
async fn request_deadline<F, Fut>(request: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let query = crate::handlers::negotiate::Query::parse(request.uri().query());
    let path = request.uri().path();
    // kube's long-running requests: watches and the proxy subresource.
    let long_running = query.flag("watch")
        || crate::proxy::is_proxy_path(path)
        || crate::tunnel::is_tunnel_path(path)
        || path.starts_with("/api/v1/watch/")
        || (path.starts_with("/apis/") && path.split('/').nth(4) == Some("watch"));
    if long_running {
        return run(request).await;
    }
    let timeout = match query.get("timeout").filter(|t| !t.is_empty()) {
        None => REQUEST_TIMEOUT,
        Some(t) => match ubernetes_apimachinery::duration::parse_go_duration(t) {
            Err(e) => {
                return status_response(&ApiError::bad_request(format!(
                    "invalid timeout specified in the request URL - {e}"
                )));
            }
            Ok(n) => u64::try_from(n)
                .ok()
                .map(Duration::from_nanos)
                .filter(|d| !d.is_zero() && *d <= REQUEST_TIMEOUT)
                .unwrap_or(REQUEST_TIMEOUT),
        },
    };
    match tokio::time::timeout(timeout, run(request)).await {
        Ok(response) => response,
        Err(_) => status_response(&ApiError::timeout(
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        )),
    }
}

fn status_response(err: &ApiError) -> Response {
    (
        err.status_code(),
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        err.status().to_string(),
    )
        .into_response()
}

fn too_large(limit: usize) -> Response {
    let err = if limit as u64 == crate::options::DEFAULT_MAX_REQUEST_BODY_BYTES {
        ApiError::too_large()
    } else {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    };
    status_response(&err)
}

/// 413 with a Status body for a body over the limit: at once from
/// `Content-Length`, or while reading a body of unknown length (which is then
/// handed on buffered).
/// Oversized bodies up to this many times the limit are read and dropped
/// before the 413 is sent, so the client receives it.
const DRAIN_FACTOR: u64 = 4;

async fn limit_body<F, Fut>(limit: usize, request: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    // A request without a body (a get, a list, a delete without options):
    // nothing to limit or to buffer.
    if request.body().is_end_stream() {
        return run(request).await;
    }
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(len) if len > limit as u64 => {
            // Read (and drop) the body before answering, as Go's server
            // effectively does for kube-apiserver: a client still sending
            // when the connection closes sees a reset instead of the 413.
            // Bodies far beyond the limit are not worth reading.
            if len <= (limit as u64).saturating_mul(DRAIN_FACTOR) {
                let mut data = request.into_body().into_data_stream();
                while let Some(chunk) = data.next().await {
                    if chunk.is_err() {
                        break;
                    }
                }
            }
            return too_large(limit);
        }
        Some(_) => return run(request).await,
        None => {}
    }
    let (parts, body) = request.into_parts();
    let bytes = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => return too_large(limit),
        Err(err) => {
            return status_response(&ApiError::bad_request(format!(
                "error reading the request body: {err}"
            )));
        }
    };
    run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Whether a request is a watch (`?watch=true` or a `/watch/` path).
fn is_watch(request: &Request) -> bool {
    let uri = request.uri();
    if uri.path().split('/').any(|seg| seg == "watch") {
        return true;
    }
    uri.query().is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes()).any(|(k, v)| {
            k == "watch" && matches!(v.as_ref(), "1" | "t" | "T" | "true" | "TRUE" | "True")
        })
    })
}

/// End a watch's response stream cleanly once shutdown begins, so that
/// graceful shutdown does not wait for it (clients re-list and re-watch
/// elsewhere).
fn close_on_shutdown(response: Response, token: CancellationToken) -> Response {
    let (parts, body) = response.into_parts();
    let stream = body.into_data_stream().take_until(token.cancelled_owned());
    Response::from_parts(parts, Body::from_stream(stream))
}

/// A 404/405 without a body (axum's own answers) becomes a Status, since
/// every client expects one.
fn status_for_empty_errors(response: Response) -> Response {
    let status = response.status();
    if response.headers().contains_key(CONTENT_TYPE) {
        return response;
    }
    match status {
        StatusCode::NOT_FOUND => {
            let mut response = status_response(&ApiError::no_route());
            response.extensions_mut().insert(crate::metrics::NoRoute);
            response
        }
        StatusCode::METHOD_NOT_ALLOWED => status_response(&ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )),
        _ => response,
    }
}

/// The 500 Status for a handler that panicked.
fn panic_response(err: Box<dyn Any + Send + 'static>) -> http::Response<Body> {
    let detail = if let Some(s) = err.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = err.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "unknown panic".to_string()
    };
    tracing::error!(panic = %detail, "handler panicked");
    status_response(&ApiError::internal("the server hit an unexpected error"))
}

// ---------------------------------------------------------------------------
// TLS

struct TlsMaterial {
    server_config: Arc<rustls::ServerConfig>,
    /// The CA a client should trust for the serving certificate.
    kubeconfig_ca_pem: String,
    admin: ubernetes_certs::CertPair,
    /// Whether the dev CA signs client certificates this server accepts
    /// (see [`load_tls`]); the admin kubeconfig carries the dev admin
    /// certificate only then.
    dev_ca_trusted: bool,
    dev_ca_path: PathBuf,
    /// What a presented client certificate is verified against after the
    /// handshake (`None`: no client CA, certificates are not asked for).
    client_ca: ClientCa,
}

/// The client-certificate verifier of the listener, if any.
type ClientCa = Option<Arc<dyn ClientCertVerifier>>;

/// Go's `tls.RequestClientCert`, which kube-apiserver serves with: a
/// client certificate is asked for (hinting the client CAs) and the
/// handshake proves the client holds its key, but the chain is not judged
/// there. The listener verifies it against the client CAs after the
/// handshake ([`verified_identity`]): a certificate no client CA signed
/// authenticates nobody, so the request is answered 401 (as kube's x509
/// authenticator does) instead of the connection failing.
#[derive(Debug)]
struct RequestClientCert {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Judged after the handshake by `verified_identity`.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The identity of a client certificate chain that one of the client CAs
/// signed; `None` (no identity: the request is anonymous) otherwise.
fn verified_identity(
    client_ca: &ClientCa,
    chain: &[CertificateDer<'static>],
    peer: SocketAddr,
) -> Option<ClientCertificate> {
    let verifier = client_ca.as_ref()?;
    let (leaf, intermediates) = chain.split_first()?;
    if let Err(err) = verifier.verify_client_cert(leaf, intermediates, UnixTime::now()) {
        tracing::debug!(%peer, error = %err, "client certificate not signed by a client CA: ignored");
        return None;
    }
    match ubernetes_certs::certificate_identity(leaf.as_ref()) {
        Ok((common_name, organizations)) => Some(ClientCertificate {
            common_name,
            organizations,
        }),
        Err(err) => {
            tracing::debug!(%peer, error = %err, "unreadable client certificate");
            None
        }
    }
}

/// The startup warning for Secrets (the member clusters' kubeconfigs in
/// `federation-system` among them) written to the store as they are:
/// `--encrypt-secrets-by-default=false` without
/// `--encryption-provider-config`, or a configuration (given or the
/// generated one) whose first provider for `secrets` is `identity` or that
/// has no rule for them.
fn warn_if_secrets_are_stored_unencrypted(options: &ServerOptions) {
    let config = options.secrets_encryption_config();
    let encrypted = config.as_ref().is_some_and(|path| {
        ubernetes_storage::encryption::EncryptionConfig::load(path)
            .ok()
            .and_then(|config| {
                config
                    .transformer_for("", "secrets")
                    .map(|t| t.encrypts_writes())
            })
            .unwrap_or(false)
    });
    if encrypted {
        return;
    }
    let store = if options.etcd_servers.is_empty() {
        options.data_dir.join("store").display().to_string()
    } else {
        format!("etcd {}", options.etcd_servers.join(","))
    };
    let why = match config {
        Some(path) => format!(
            "{} does not encrypt secrets (identity first, or no rule for them)",
            path.display()
        ),
        None => "--encrypt-secrets-by-default=false and no --encryption-provider-config".into(),
    };
    tracing::warn!(
        store = %store,
        "Secrets, the member clusters' credentials among them, are stored unencrypted in {store}: {why}; put an aescbc, aesgcm or secretbox provider first for secrets in --encryption-provider-config, or drop --encrypt-secrets-by-default=false (docs/operations.md)"
    );
}

fn read_pem(path: &Path, flag: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {flag} {}", path.display()))
}

fn parse_certs(pem: &str, path: &Path, flag: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let mut reader = pem.as_bytes();
    let certs = rustls_pemfile::certs(&mut reader)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("cannot parse {flag} {}", path.display()))?;
    anyhow::ensure!(
        !certs.is_empty(),
        "{flag} {} holds no PEM certificate",
        path.display()
    );
    Ok(certs)
}

fn parse_key(pem: &str, path: &Path, flag: &str) -> anyhow::Result<PrivateKeyDer<'static>> {
    let mut reader = pem.as_bytes();
    rustls_pemfile::private_key(&mut reader)
        .with_context(|| format!("cannot parse {flag} {}", path.display()))?
        .with_context(|| format!("{flag} {} holds no PEM private key", path.display()))
}

/// Extra SANs for the dev serving certificate: `--tls-san` plus a specific
/// bind address.
fn serving_sans(options: &ServerOptions) -> Vec<String> {
    let mut sans = options.tls_san.clone();
    let ip = options.bind_address;
    if !ip.is_unspecified() && !ip.is_loopback() {
        sans.push(ip.to_string());
    }
    sans
}

fn load_tls(options: &ServerOptions) -> anyhow::Result<TlsMaterial> {
    let pki_dir = options.pki_dir();
    let pki = ubernetes_certs::ensure_dev_pki(&pki_dir, &serving_sans(options))
        .with_context(|| format!("cannot prepare the dev PKI in {}", pki_dir.display()))?;
    tracing::info!(
        dir = %pki_dir.display(),
        ca = ?pki.ca_outcome,
        serving = ?pki.serving_outcome,
        admin = ?pki.admin_outcome,
        "dev PKI ready"
    );
    let dev_ca_path = pki.ca_cert_path();

    let (chain, key, kubeconfig_ca_pem) =
        match (&options.tls_cert_file, &options.tls_private_key_file) {
            (Some(cert_path), Some(key_path)) => {
                let cert_pem = read_pem(cert_path, "--tls-cert-file")?;
                let chain = parse_certs(&cert_pem, cert_path, "--tls-cert-file")?;
                let key_pem = read_pem(key_path, "--tls-private-key-file")?;
                let key = parse_key(&key_pem, key_path, "--tls-private-key-file")?;
                // Clients must trust the issuer of the given certificate: the
                // last certificate of the file (its CA when a chain is given).
                let ca_pem = pem_of_last_cert(&cert_pem).unwrap_or(cert_pem);
                tracing::info!(cert = %cert_path.display(), "serving with --tls-cert-file");
                (chain, key, ca_pem)
            }
            (None, None) => {
                let chain = parse_certs(
                    &pki.serving.cert_pem,
                    &pki.serving_cert_path(),
                    "dev serving certificate",
                )?;
                let key = parse_key(
                    &pki.serving.key_pem,
                    &pki.serving_key_path(),
                    "dev serving key",
                )?;
                (chain, key, pki.ca.cert_pem.clone())
            }
            _ => anyhow::bail!("--tls-cert-file and --tls-private-key-file must be given together"),
        };

    // The client CAs. The dev CA signs client certificates that hold
    // (system:masters among them): it is one only while it is also the
    // serving CA (no --tls-cert-file) or when --client-ca-file contains it.
    // Otherwise whoever can read DATA_DIR/pki/ca.key (or an old admin.crt)
    // would stay cluster-admin of a server configured with other CAs.
    let dev_ca = parse_certs(&pki.ca.cert_pem, &dev_ca_path, "dev CA")?;
    let mut roots = RootCertStore::empty();
    let mut dev_ca_trusted = options.tls_cert_file.is_none();
    if dev_ca_trusted {
        for cert in dev_ca.iter().cloned() {
            roots
                .add(cert)
                .with_context(|| format!("cannot use the dev CA {}", dev_ca_path.display()))?;
        }
    }
    if let Some(path) = &options.client_ca_file {
        let pem = read_pem(path, "--client-ca-file")?;
        for cert in parse_certs(&pem, path, "--client-ca-file")? {
            dev_ca_trusted |= dev_ca.contains(&cert);
            roots
                .add(cert)
                .with_context(|| format!("cannot use --client-ca-file {}", path.display()))?;
        }
    }

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (verifier, client_ca): (Arc<dyn ClientCertVerifier>, ClientCa) = if roots.is_empty() {
        // No client CA (kube-apiserver without --client-ca-file): client
        // certificates are not asked for.
        (WebPkiClientVerifier::no_client_auth(), None)
    } else {
        let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated()
            .build()
            .context("cannot build the client certificate verifier")?;
        (
            Arc::new(RequestClientCert {
                inner: inner.clone(),
            }),
            Some(inner),
        )
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .context("cannot configure TLS versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .context("the serving certificate and key do not match or are unusable")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];

    Ok(TlsMaterial {
        server_config: Arc::new(config),
        kubeconfig_ca_pem,
        admin: pki.admin,
        dev_ca_trusted,
        dev_ca_path,
        client_ca,
    })
}

fn pem_of_last_cert(pem: &str) -> Option<String> {
    let start = pem.rfind("-----BEGIN CERTIFICATE-----")?;
    let end_marker = "-----END CERTIFICATE-----";
    let end = pem[start..].find(end_marker)? + start + end_marker.len();
    Some(format!("{}\n", &pem[start..end]))
}

// ---------------------------------------------------------------------------
// listener

/// A clear message for a failed bind, naming the port and the fix.
fn bind_error(addr: SocketAddr, err: std::io::Error) -> anyhow::Error {
    match err.kind() {
        std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "cannot listen on {addr}: port {} is already in use; stop the process using it or choose another port with --secure-port (0 picks a free one)",
            addr.port()
        ),
        std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
            "cannot listen on {addr}: permission denied; ports below 1024 need privileges, choose another with --secure-port"
        ),
        std::io::ErrorKind::AddrNotAvailable => anyhow::anyhow!(
            "cannot listen on {addr}: {} is not an address of this machine; fix --bind-address",
            addr.ip()
        ),
        _ => anyhow::Error::new(err).context(format!("cannot listen on {addr}")),
    }
}

/// The URL clients use: the bound address, with a loopback address in place
/// of an unspecified one.
fn client_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("https://{}", SocketAddr::new(ip, addr.port()))
}

#[allow(clippy::too_many_arguments)] // one call site; the arguments are the server's parts
async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    client_ca: ClientCa,
    app: Router,
    health: Arc<Health>,
    watch_shutdown: CancellationToken,
    shutdown: impl Future<Output = ()> + Send + 'static,
    delay: Duration,
    grace: Duration,
) -> anyhow::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let stop = {
        let health = health.clone();
        async move {
            shutdown.await;
            tracing::info!("shutdown requested: /readyz now fails");
            health.begin_shutdown();
            if !delay.is_zero() {
                tracing::info!(?delay, "serving on during --shutdown-delay-duration");
                tokio::time::sleep(delay).await;
            }
        }
    };
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(serve_connection(
                        stream,
                        peer,
                        acceptor.clone(),
                        client_ca.clone(),
                        app.clone(),
                        graceful.watcher(),
                    ));
                }
                Err(err) => {
                    // e.g. EMFILE: back off instead of spinning.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }

    drop(listener);
    tracing::info!("listener closed; closing watches and draining in-flight requests");
    watch_shutdown.cancel();
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            ?grace,
            "in-flight requests did not finish within the grace period; dropping them"
        );
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    tracing::info!("server stopped");
    Ok(())
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    client_ca: ClientCa,
    app: Router,
    watcher: Watcher,
) {
    let _ = stream.set_nodelay(true);
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%peer, error = %err, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    // The handshake proved the client holds the certificate's key; the
    // chain is judged here against the client CAs.
    let client_cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| verified_identity(&client_ca, chain, peer));
    let service =
        hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let extensions = request.extensions_mut();
            extensions.insert(ConnectInfo(peer));
            if let Some(cert) = &client_cert {
                extensions.insert(cert.clone());
            }
            app.clone().oneshot(request.map(Body::new))
        });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // client-go multiplexes every watch of a client over one HTTP/2
    // connection: allow as many streams as kube-apiserver does.
    // Header lists up to 1 MiB, as Go's net/http (kube-apiserver) accepts:
    // long label selectors travel in the URL.
    builder
        .http2()
        .max_concurrent_streams(HTTP2_MAX_STREAMS_PER_CONNECTION)
        .max_header_list_size(1 << 20);
    builder.http1().max_buf_size(1 << 20);
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
    if let Err(err) = watcher.watch(connection.into_owned()).await {
        tracing::debug!(%peer, error = %err, "connection ended with an error");
    }
}

/// The bodies an audit log records at `Metadata` at most, whatever its
/// policy: what the built-in kinds ([`ubernetes_registry::Strategy::secret_bodies`])
/// and the review APIs ([`crate::reviews::SECRET_BODIES`]) declare.
pub fn secret_bodies() -> crate::audit::SecretBodies {
    let mut secret = crate::audit::SecretBodies::default();
    for kind in ubernetes_registry::kinds::builtin() {
        let info = kind.info();
        for sub in kind.secret_bodies() {
            secret.insert(&info.group, &info.resource, sub);
        }
    }
    for (group, resource) in crate::reviews::SECRET_BODIES {
        secret.insert(group, resource, "");
    }
    secret
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use futures::stream;

    fn admin() -> authn::InProcessIdentity {
        authn::InProcessIdentity(authn::UserInfo::new("admin", &["system:masters"]))
    }

    fn app_with(api: Router, token: CancellationToken) -> Router {
        build_router(
            api,
            Health::new(),
            Arc::new(Authenticator::default()),
            Arc::new(Authorization::new(
                ubernetes_rbac::Mode::Rbac,
                Arc::new(ubernetes_registry::rbac_sync::RbacCache::new()),
            )),
            16,
            token,
            None,
        )
    }

    async fn body_text(resp: Response) -> String {
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body");
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn echo_api() -> Router {
        Router::new()
            .route("/echo", post(|body: axum::body::Bytes| async move { body }))
            .route(
                "/panic",
                get(|| async {
                    if true {
                        panic!("boom");
                    }
                    "unreachable"
                }),
            )
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_a_500_status() {
        let app = app_with(echo_api(), CancellationToken::new());
        let mut req = http::Request::get("/panic")
            .body(Body::empty())
            .expect("req");
        req.extensions_mut().insert(admin());
        let resp = app.oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let v: serde_json::Value = serde_json::from_str(&body_text(resp).await).expect("json");
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["reason"], "InternalError");
        assert_eq!(v["code"], 500);
    }

    #[tokio::test]
    async fn a_declared_body_over_the_limit_is_a_413_status() {
        let app = app_with(echo_api(), CancellationToken::new());
        let mut req = http::Request::post("/echo")
            .header(CONTENT_LENGTH, "17")
            .body(Body::from(vec![b'x'; 17]))
            .expect("req");
        req.extensions_mut().insert(admin());
        let resp = app.oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let v: serde_json::Value = serde_json::from_str(&body_text(resp).await).expect("json");
        assert_eq!(v["reason"], "RequestEntityTooLarge");
        assert_eq!(v["message"], "Request entity too large: limit is 16");
    }

    #[tokio::test]
    async fn a_streamed_body_over_the_limit_is_a_413_status_and_one_under_it_passes() {
        let chunks = || {
            Body::from_stream(stream::iter(vec![
                Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"0123456789")),
                Ok(axum::body::Bytes::from_static(b"0123456789")),
            ]))
        };
        let app = app_with(echo_api(), CancellationToken::new());
        let mut req = http::Request::post("/echo").body(chunks()).expect("req");
        req.extensions_mut().insert(admin());
        let resp = app.clone().oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);

        let mut req = http::Request::post("/echo")
            .body(Body::from_stream(stream::iter(vec![
                Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"small")),
            ])))
            .expect("req");
        req.extensions_mut().insert(admin());
        let resp = app.oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(body_text(resp).await, "small");
    }

    #[tokio::test]
    async fn an_unknown_path_is_a_404_status() {
        let app = app_with(echo_api(), CancellationToken::new());
        let mut req = http::Request::get("/nope")
            .body(Body::empty())
            .expect("req");
        req.extensions_mut().insert(admin());
        let resp = app.oneshot(req).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        let v: serde_json::Value = serde_json::from_str(&body_text(resp).await).expect("json");
        assert_eq!(v["reason"], "NotFound");
        assert_eq!(
            v["message"],
            "the server could not find the requested resource"
        );
    }

    #[tokio::test]
    async fn watch_streams_end_when_shutdown_begins() {
        let api = Router::new().route(
            "/api/v1/configmaps",
            get(|| async {
                let events = stream::once(async {
                    Ok::<_, std::io::Error>(axum::body::Bytes::from_static(
                        b"{\"type\":\"ADDED\"}\n",
                    ))
                })
                .chain(stream::pending());
                Body::from_stream(events)
            }),
        );
        let token = CancellationToken::new();
        let app = app_with(api, token.clone());
        let mut req = http::Request::get("/api/v1/configmaps?watch=true")
            .body(Body::empty())
            .expect("req");
        req.extensions_mut().insert(admin());
        let resp = app.oneshot(req).await.expect("infallible");
        let mut body = resp.into_body().into_data_stream();
        let first = body.next().await.expect("an event").expect("data");
        assert_eq!(&first[..], b"{\"type\":\"ADDED\"}\n");
        token.cancel();
        assert!(
            body.next().await.is_none(),
            "the stream ends after shutdown"
        );
    }

    #[test]
    fn watch_requests_are_recognised_by_query_or_path() {
        let req = |uri: &str| http::Request::get(uri).body(Body::empty()).expect("req");
        assert!(is_watch(&req("/api/v1/pods?watch=true")));
        assert!(is_watch(&req("/api/v1/pods?watch=1&labelSelector=a")));
        assert!(is_watch(&req("/api/v1/watch/namespaces/x/pods")));
        assert!(!is_watch(&req("/api/v1/pods?watch=false")));
        assert!(!is_watch(&req("/api/v1/pods")));
    }

    #[test]
    fn the_client_url_replaces_unspecified_addresses_with_loopback() {
        assert_eq!(
            client_url("0.0.0.0:6443".parse().expect("addr")),
            "https://127.0.0.1:6443"
        );
        assert_eq!(
            client_url("[::]:1".parse().expect("addr")),
            "https://[::1]:1"
        );
        assert_eq!(
            client_url("10.0.0.5:7".parse().expect("addr")),
            "https://10.0.0.5:7"
        );
    }

    #[test]
    fn a_port_in_use_error_names_the_port_and_the_flag() {
        let err = bind_error(
            "127.0.0.1:6443".parse().expect("addr"),
            std::io::Error::from(std::io::ErrorKind::AddrInUse),
        );
        let msg = err.to_string();
        assert!(msg.contains("port 6443 is already in use"), "{msg}");
        assert!(msg.contains("--secure-port"), "{msg}");
    }

    #[test]
    fn the_last_certificate_of_a_chain_is_found() {
        let pem = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";
        assert_eq!(
            pem_of_last_cert(pem).as_deref(),
            Some("-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n")
        );
    }
}
