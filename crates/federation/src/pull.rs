//! Pull-mode members (SPEC §3.12, issue 24): the reverse tunnels their
//! agents open, and the member client that sends over them.
//!
//! A Cluster with `spec.syncMode: Pull` has no address and no Secret: its
//! agent (`ubernetes agent`, inside or beside the member) opens an HTTPS
//! connection to the federation, `POST /apis/federation/v1beta1/clusters/NAME/tunnel`
//! with `Upgrade: ubernetes-tunnel`, which the API server authorizes
//! (`create` on `clusters/tunnel`, resourceName NAME) and answers 101. Over
//! the upgraded stream the federation is the **HTTP/2 client** and the
//! agent the HTTP/2 server that sends each request on to its member API
//! with the member credentials only it holds. [`Tunnels::accept`] does the
//! handshake and registers the connection under the cluster's name (a new
//! tunnel replaces the old one; a closed one is forgotten).
//!
//! [`Tunnels::client`] is the member's `kube::Client` for every controller
//! and the cluster proxy: a [`TunnelService`] that looks the *current*
//! tunnel up on each request, so the client (and the member snapshot that
//! holds it) outlives a reconnect, and the informers' watches resume over
//! the new tunnel from their resourceVersions (an agent restart with
//! everything in sync makes no member write). With no tunnel a request
//! fails at once (`the agent of cluster "x" is not connected`), which the
//! health probe reports as an unreachable member. An HTTP/1.1 upgrade
//! request (the cluster proxy's exec, attach, port-forward) goes as an
//! HTTP/2 extended CONNECT (RFC 8441, [`UPGRADE_HEADER`]) and the agent's
//! `200` comes back as the member's `101`, upgradeable as from a push
//! member.
//!
//! The agent also renews the `coordination.k8s.io/v1` Lease NAME in
//! `federation-system` every [`LEASE_RENEW`]; [`lease_lapsed`] says when it
//! is older than [`LEASE_LAPSE`], which makes the Cluster unreachable even
//! while a dead connection lingers.
//!
//! The tunnel registry is process-wide ([`tunnels`]), as the metrics are:
//! the API server's tunnel endpoint fills it, the Cluster controller and
//! the member set of the same process read it. With several replicas the
//! agent keeps a tunnel to each one it is told of (`--federation-server`):
//! each replica uses its own (see `docs/federation.md`, "Pull mode").

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use parking_lot::RwLock;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

/// The `Upgrade` protocol of a tunnel request.
pub const TUNNEL_PROTOCOL: &str = "ubernetes-tunnel";
/// How often the agent renews its Lease.
pub const LEASE_RENEW: Duration = Duration::from_secs(10);
/// How old a Lease may get before its Cluster counts as unreachable (the
/// default of `--cluster-lease-duration`).
pub const LEASE_LAPSE: Duration = Duration::from_secs(40);
/// HTTP/2 keep-alive pings on a tunnel, both ends: a connection that stops
/// answering is closed after [`KEEPALIVE_TIMEOUT`].
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// See [`KEEPALIVE_INTERVAL`].
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One open tunnel.
struct Tunnel {
    serial: u64,
    send: SendRequest<kube::client::Body>,
}

/// The open tunnels of this process, by cluster name.
pub struct Tunnels {
    open: RwLock<BTreeMap<String, Tunnel>>,
    /// Bumped on every tunnel opened or closed (the Cluster controller
    /// probes again at once).
    changes: watch::Sender<(u64, String)>,
    serial: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Tunnels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tunnels")
            .field("open", &self.open.read().keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The process's tunnel registry.
pub fn tunnels() -> &'static Tunnels {
    static TUNNELS: OnceLock<Tunnels> = OnceLock::new();
    TUNNELS.get_or_init(|| Tunnels {
        open: RwLock::new(BTreeMap::new()),
        changes: watch::channel((0, String::new())).0,
        serial: std::sync::atomic::AtomicU64::new(0),
    })
}

impl Tunnels {
    /// Run the federation's side of a tunnel of cluster `name` over `io`
    /// (the upgraded connection): the HTTP/2 handshake, then the connection
    /// until it closes. Replaces the cluster's previous tunnel.
    pub async fn accept<T>(&self, name: String, io: T)
    where
        T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        let (send, connection) = match builder.handshake(TokioIo::new(io)).await {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(cluster = %name, error = %e, "tunnel handshake failed");
                return;
            }
        };
        let serial = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let replaced = self
            .open
            .write()
            .insert(name.clone(), Tunnel { serial, send })
            .is_some();
        tracing::info!(cluster = %name, serial, replaced, "agent tunnel open");
        self.changes.send_modify(|c| *c = (c.0 + 1, name.clone()));
        if let Err(e) = connection.await {
            tracing::info!(cluster = %name, serial, error = %e, "agent tunnel closed");
        } else {
            tracing::info!(cluster = %name, serial, "agent tunnel closed");
        }
        let mut open = self.open.write();
        if open.get(&name).is_some_and(|t| t.serial == serial) {
            open.remove(&name);
            drop(open);
            self.changes.send_modify(|c| *c = (c.0 + 1, name.clone()));
        }
    }

    /// Whether cluster `name`'s agent has a tunnel open to this process,
    /// and its serial (a new tunnel has a new one).
    pub fn current(&self, name: &str) -> Option<u64> {
        self.open.read().get(name).map(|t| t.serial)
    }

    /// The names of the clusters whose tunnel opened or closed, as they
    /// happen (the latest only, if the receiver lags).
    pub fn subscribe(&self) -> watch::Receiver<(u64, String)> {
        self.changes.subscribe()
    }

    /// The member client of pull cluster `name`: every request goes over
    /// its current tunnel. Call within a tokio runtime.
    pub fn client(&'static self, name: &str) -> kube::Client {
        kube::Client::new(
            TunnelService {
                tunnels: self,
                name: Arc::from(name),
            },
            "default",
        )
    }

    fn sender(&self, name: &str) -> Option<SendRequest<kube::client::Body>> {
        self.open.read().get(name).map(|t| t.send.clone())
    }
}

/// The `server` a pull member's snapshot shows (there is no address).
pub fn server_of(name: &str) -> String {
    format!("tunnel://{name}")
}

/// A tower service sending each request over a cluster's current tunnel.
#[derive(Clone)]
pub struct TunnelService {
    tunnels: &'static Tunnels,
    name: Arc<str>,
}

impl tower::Service<http::Request<kube::client::Body>> for TunnelService {
    type Response = http::Response<hyper::body::Incoming>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: http::Request<kube::client::Body>) -> Self::Future {
        let name = self.name.clone();
        let sender = self.tunnels.sender(&name);
        Box::pin(async move {
            let Some(mut send) = sender else {
                return Err(format!(
                    "the agent of cluster {name:?} is not connected (no tunnel open)"
                )
                .into());
            };
            // HTTP/2 needs a scheme and an authority; the agent reads the
            // path and query only.
            let path = request
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .to_string();
            *request.uri_mut() = format!("http://{name}.tunnel{path}").parse()?;
            *request.version_mut() = http::Version::HTTP_2;
            let upgrade = upgrade_protocol(request.headers());
            if let Some(protocol) = &upgrade {
                to_extended_connect(&mut request, protocol)?;
            }
            send.ready().await?;
            let response = send.send_request(request).await?;
            Ok(match upgrade {
                Some(_) => from_extended_connect(response),
                None => response,
            })
        })
    }
}

/// The request header that carries an upgrade's protocol over the tunnel
/// (`websocket`, `SPDY/3.1`: the `Upgrade` header HTTP/2 cannot carry), and
/// in the agent's `200` the protocol the member switched to.
pub const UPGRADE_HEADER: &str = "ubernetes-upgrade";
/// The request header that carries an upgrade's original method (`GET` for
/// WebSocket, `POST` for SPDY) while the tunnel's request is a `CONNECT`.
pub const UPGRADE_METHOD_HEADER: &str = "ubernetes-upgrade-method";

/// The protocol an HTTP/1.1 upgrade request asks for: `Upgrade: P` with
/// `Connection: upgrade`.
pub fn upgrade_protocol(headers: &http::HeaderMap) -> Option<http::HeaderValue> {
    let connection_upgrade = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    let protocol = headers.get(http::header::UPGRADE)?;
    (connection_upgrade && !protocol.is_empty()).then(|| protocol.clone())
}

/// Make an HTTP/1.1 upgrade request (the cluster proxy's exec, attach,
/// port-forward) an HTTP/2 extended CONNECT (RFC 8441) the agent's server
/// accepts: `:protocol` and [`UPGRADE_HEADER`] are the upgrade's protocol,
/// [`UPGRADE_METHOD_HEADER`] the original method; path, query and every
/// other header stay (`Connection` and `Upgrade` are HTTP/1.1's own).
fn to_extended_connect(
    request: &mut http::Request<kube::client::Body>,
    protocol: &http::HeaderValue,
) -> Result<(), BoxError> {
    let name = protocol
        .to_str()
        .map_err(|_| "the Upgrade header is not text")?
        .to_string();
    let method = http::HeaderValue::from_str(request.method().as_str())?;
    let headers = request.headers_mut();
    headers.remove(http::header::CONNECTION);
    headers.remove(http::header::UPGRADE);
    headers.insert(UPGRADE_HEADER, protocol.clone());
    headers.insert(UPGRADE_METHOD_HEADER, method);
    *request.method_mut() = http::Method::CONNECT;
    request
        .extensions_mut()
        .insert(hyper::ext::Protocol::from(name.as_str()));
    Ok(())
}

/// The agent's answer to an extended CONNECT as the member gave it: its
/// `200` (the member switched protocols; the member's 101 headers in it)
/// becomes that `101 Switching Protocols` again, with `Connection: Upgrade`
/// and the member's `Upgrade`, and keeps hyper's upgrade handle, so the
/// caller splices as with a push member. Any other answer is the member's
/// refusal, unchanged.
fn from_extended_connect(
    mut response: http::Response<hyper::body::Incoming>,
) -> http::Response<hyper::body::Incoming> {
    if response.status() != http::StatusCode::OK {
        return response;
    }
    let Some(protocol) = response.headers_mut().remove(UPGRADE_HEADER) else {
        return response;
    };
    *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    *response.version_mut() = http::Version::HTTP_11;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("Upgrade"),
    );
    headers.insert(http::header::UPGRADE, protocol);
    response
}

/// Whether a Lease last renewed at `renewed` (or never) counts as lapsed
/// at `now`, after `lapse`.
pub fn lease_lapsed(
    renewed: Option<jiff::Timestamp>,
    now: jiff::Timestamp,
    lapse: Duration,
) -> bool {
    renewed.is_none_or(|at| now.duration_since(at).as_secs_f64() > lapse.as_secs_f64())
}

/// Whether pull cluster `name`'s Lease in `federation-system` lapsed (read
/// through the federation client `fed`) for longer than `lapse`; a Lease
/// that cannot be read counts as lapsed only when it is missing.
pub async fn lease_of_cluster_lapsed(fed: &kube::Client, name: &str, lapse: Duration) -> bool {
    use k8s_openapi::api::coordination::v1::Lease;
    let api: kube::Api<Lease> =
        kube::Api::namespaced(fed.clone(), ubernetes_api::FEDERATION_NAMESPACE);
    match api.get_opt(name).await {
        Ok(lease) => {
            let renewed = lease
                .and_then(|l| l.spec)
                .and_then(|s| s.renew_time.or(s.acquire_time))
                .map(|t| t.0);
            lease_lapsed(renewed, jiff::Timestamp::now(), lapse)
        }
        Err(e) => {
            tracing::debug!(cluster = %name, error = %e, "cannot read the agent's Lease");
            false
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn a_lease_lapses_after_forty_seconds() {
        let now: jiff::Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let at = |s: &str| Some(s.parse().unwrap());
        assert!(lease_lapsed(None, now, LEASE_LAPSE));
        assert!(!lease_lapsed(at("2026-01-01T00:00:30Z"), now, LEASE_LAPSE));
        assert!(!lease_lapsed(at("2026-01-01T00:00:20Z"), now, LEASE_LAPSE));
        assert!(lease_lapsed(at("2026-01-01T00:00:19Z"), now, LEASE_LAPSE));
        assert!(lease_lapsed(
            at("2026-01-01T00:00:55Z"),
            now,
            Duration::from_secs(4)
        ));
    }

    /// A request goes over the tunnel to an HTTP/2 server on the other end
    /// (what the agent runs), streamed; with no tunnel it fails at once.
    #[tokio::test]
    async fn requests_go_over_the_current_tunnel() {
        let t = tunnels();
        let client = t.client("unit-a");
        let err = client
            .send(
                http::Request::get("/readyz")
                    .body(kube::client::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not connected"), "{err}");

        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(|r: http::Request<hyper::body::Incoming>| async move {
                    let body = format!(
                        "{} {}",
                        r.method(),
                        r.uri().path_and_query().map_or("", |p| p.as_str())
                    );
                    Ok::<_, std::convert::Infallible>(http::Response::new(
                        http_body_util::Full::new(bytes::Bytes::from(body)),
                    ))
                });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(theirs), service)
                .await;
        });
        tokio::spawn(t.accept("unit-a".to_string(), ours));
        for _ in 0..100 {
            if t.current("unit-a").is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(t.current("unit-a").is_some());
        let response = client
            .send(
                http::Request::get("/api/v1/namespaces?watch=1")
                    .body(kube::client::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let body = response.into_body().collect_bytes().await.unwrap();
        assert_eq!(&body[..], b"GET /api/v1/namespaces?watch=1");
    }

    /// An upgrade goes as an extended CONNECT (method, protocol, path and
    /// handshake headers carried), the agent's 200 comes back as the
    /// member's 101 and the stream carries bytes both ways; a refusal is
    /// passed unchanged.
    #[tokio::test]
    async fn upgrades_go_as_extended_connect() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let t = tunnels();
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                |mut r: http::Request<hyper::body::Incoming>| async move {
                    let h = |n: &str| {
                        r.headers()
                            .get(n)
                            .map_or(String::new(), |v| v.to_str().unwrap().to_string())
                    };
                    let protocol = r
                        .extensions()
                        .get::<hyper::ext::Protocol>()
                        .map(|p| p.as_str().to_string());
                    let seen = format!(
                        "{} {:?} {} {} {} {}",
                        r.method(),
                        protocol,
                        h(UPGRADE_METHOD_HEADER),
                        r.uri().path_and_query().unwrap(),
                        h("sec-websocket-key"),
                        h("impersonate-user"),
                    );
                    let mut response = http::Response::new(http_body_util::Full::new(
                        bytes::Bytes::from(seen.clone()),
                    ));
                    if h("sec-websocket-key") == "refuse" {
                        *response.status_mut() = http::StatusCode::BAD_REQUEST;
                        return Ok::<_, std::convert::Infallible>(response);
                    }
                    let upgrade = hyper::upgrade::on(&mut r);
                    tokio::spawn(async move {
                        let mut io = TokioIo::new(upgrade.await.unwrap());
                        let mut buf = [0u8; 5];
                        io.read_exact(&mut buf).await.unwrap();
                        io.write_all(seen.as_bytes()).await.unwrap();
                        io.write_all(&buf).await.unwrap();
                        io.shutdown().await.unwrap();
                    });
                    let mut ok = http::Response::new(http_body_util::Full::default());
                    ok.headers_mut()
                        .insert(UPGRADE_HEADER, http::HeaderValue::from_static("websocket"));
                    ok.headers_mut().insert(
                        "sec-websocket-accept",
                        http::HeaderValue::from_static("member's"),
                    );
                    Ok(ok)
                },
            );
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .enable_connect_protocol()
                .serve_connection(TokioIo::new(theirs), service)
                .await;
        });
        tokio::spawn(t.accept("unit-b".to_string(), ours));
        for _ in 0..100 {
            if t.current("unit-b").is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let client = t.client("unit-b");
        let exec = |key: &str| {
            http::Request::get("/api/v1/namespaces/x/pods/p/exec?command=cat")
                .header("connection", "Upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-key", key)
                .header("impersonate-user", "alice")
                .body(kube::client::Body::empty())
                .unwrap()
        };
        let mut response = client.send(exec("k")).await.unwrap();
        assert_eq!(response.status(), http::StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(response.headers()["upgrade"], "websocket");
        assert_eq!(response.headers()["connection"], "Upgrade");
        assert_eq!(response.headers()["sec-websocket-accept"], "member's");
        assert!(response.headers().get(UPGRADE_HEADER).is_none());
        let mut io = TokioIo::new(hyper::upgrade::on(&mut response).await.unwrap());
        io.write_all(b"hello").await.unwrap();
        let mut back = String::new();
        io.read_to_string(&mut back).await.unwrap();
        assert_eq!(
            back,
            "CONNECT Some(\"websocket\") GET /api/v1/namespaces/x/pods/p/exec?command=cat k alicehello"
        );

        let refused = client.send(exec("refuse")).await.unwrap();
        assert_eq!(refused.status(), http::StatusCode::BAD_REQUEST);
        let body = refused.into_body().collect_bytes().await.unwrap();
        assert!(String::from_utf8_lossy(&body).starts_with("CONNECT"));
    }
}
