//! A fault-injecting TCP proxy in front of a member cluster's HTTPS port,
//! for the federation fault tests (SPEC §6: a member that is down, slow, or
//! answering 500s).
//!
//! The proxy listens on `127.0.0.1:0` and runs on its own thread with its
//! own tokio runtime, so the (synchronous) tests just hold a [`FaultProxy`]
//! and switch its [`Mode`] at run time; dropping it stops the thread.
//!
//! # Design
//! - [`Mode::Pass`] and [`Mode::Delay`] forward bytes at the TCP level: TLS
//!   passes through to the member, so the member's kubeconfig works
//!   unchanged (its CA verifies the member's serving certificate, which is
//!   valid for `127.0.0.1` whatever the port, and client-certificate
//!   authentication reaches the member). Only the Cluster's
//!   `serverAddress` points at the proxy. `Delay(d)` holds every chunk
//!   coming back from the member for `d` (a latency line: chunks keep their
//!   spacing, they are not delayed one after the other).
//! - [`Mode::Refuse`] accepts and resets every connection at once: a member
//!   that is down.
//! - [`Mode::Error500`] and [`Mode::Error500HealthOk`] terminate TLS in the
//!   proxy and answer every HTTP/1.1 request with `500` and a
//!   `metav1.Status` body (reason `InternalError`, as kube-apiserver's
//!   `errors.NewInternalError`). The certificate presented is the one given
//!   to [`FaultProxy::start`]: the tests give the member's own serving
//!   certificate and key ([`ServingCert::of_member`]), so the unchanged
//!   kubeconfig (CA verified) still trusts it, like a load balancer that
//!   terminates TLS with the member's certificate;
//!   [`ServingCert::self_signed`] makes an rcgen one for a kubeconfig with
//!   `insecure-skip-tls-verify`. Client certificates are not asked for, so
//!   nothing authenticates: every request fails anyway.
//!   `Error500HealthOk` answers `/readyz`, `/healthz` and `/livez` with
//!   `200 ok`, so the member stays Ready in the federation's eyes while
//!   every API call fails: the case that exercises retries and backoff.
//!
//! A mode switch closes every open connection (a restarted or failing
//! member drops them too); new connections get the new mode. The proxy
//! counts accepted connections and the 500 answers it gave, so a test can
//! tell a backoff from a hot loop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// What the proxy does with each new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward bytes both ways (TLS passes through).
    Pass,
    /// Forward, holding every chunk from the member for this long.
    Delay(Duration),
    /// Accept and reset at once: the member is down.
    Refuse,
    /// Terminate TLS and answer every request with a 500 Status.
    Error500,
    /// As [`Mode::Error500`], but `/readyz`, `/healthz`, `/livez` answer
    /// `200 ok`: a member that looks healthy while its API fails.
    Error500HealthOk,
}

/// A serving certificate and key, PEM, for the modes that terminate TLS.
#[derive(Clone)]
pub struct ServingCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for ServingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingCert")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"[elided]")
            .finish()
    }
}

impl ServingCert {
    /// The serving certificate and key of an `ubernetes serve` whose data
    /// dir is `data_dir` (`<data_dir>/pki/serving.{crt,key}`).
    pub fn from_data_dir(data_dir: &Path) -> Result<Self> {
        let pki = data_dir.join("pki");
        let read = |name: &str| {
            std::fs::read_to_string(pki.join(name))
                .with_context(|| format!("reading {}", pki.join(name).display()))
        };
        Ok(Self {
            cert_pem: read("serving.crt")?,
            key_pem: read("serving.key")?,
        })
    }

    /// The serving certificate of a running member.
    pub fn of_member(member: &crate::Server) -> Result<Self> {
        Self::from_data_dir(&member.data_dir())
    }

    /// A fresh self-signed certificate for `127.0.0.1` and `localhost`.
    pub fn self_signed() -> Result<Self> {
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .context("generating a self-signed certificate")?;
        Ok(Self {
            cert_pem: ck.cert.pem(),
            key_pem: ck.signing_key.serialize_pem(),
        })
    }

    fn server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let certs = rustls_pemfile::certs(&mut self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("parsing the certificate PEM")?;
        let key = rustls_pemfile::private_key(&mut self.key_pem.as_bytes())
            .context("parsing the key PEM")?
            .context("no private key in the key PEM")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS versions")?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .context("TLS certificate")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Counters of what the proxy saw.
#[derive(Debug, Default)]
struct Stats {
    connections: AtomicU64,
    errors_500: AtomicU64,
}

/// A running fault proxy; stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    stats: Arc<Stats>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("addr", &self.addr)
            .field("mode", &self.mode())
            .finish()
    }
}

impl FaultProxy {
    /// Start a proxy to `upstream` in [`Mode::Pass`]; `tls` is the
    /// certificate the 500 modes present.
    pub fn start(upstream: SocketAddr, tls: ServingCert) -> Result<Self> {
        let tls = tls.server_config()?;
        let std_listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding the proxy")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (mode, _) = watch::channel(Mode::Pass);
        let stats = Arc::new(Stats::default());
        let (shutdown, stop) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("the proxy's runtime")?;
        let ctx = Ctx {
            upstream,
            tls: tokio_rustls::TlsAcceptor::from(tls),
            stats: stats.clone(),
        };
        let modes = mode.clone();
        let thread = std::thread::Builder::new()
            .name(format!("fault-proxy-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(std_listener) {
                        Ok(listener) => accept_loop(listener, modes, ctx, stop).await,
                        Err(e) => eprintln!("fault proxy {addr}: {e}"),
                    }
                });
                runtime.shutdown_background();
            })
            .context("spawning the proxy thread")?;
        Ok(Self {
            addr,
            mode,
            stats,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// Start a proxy in front of a running member, presenting its own
    /// serving certificate in the 500 modes.
    pub fn for_member(member: &crate::Server) -> Result<Self> {
        let upstream = SocketAddr::from(([127, 0, 0, 1], member.port()));
        Self::start(upstream, ServingCert::of_member(member)?)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Switch the mode; every open connection is closed.
    pub fn set_mode(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.mode.borrow()
    }

    /// Connections accepted so far (in any mode).
    pub fn connections(&self) -> u64 {
        self.stats.connections.load(Ordering::Relaxed)
    }

    /// Requests answered with an injected 500 so far.
    pub fn errors_500(&self) -> u64 {
        self.stats.errors_500.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What every connection task needs.
#[derive(Clone)]
struct Ctx {
    upstream: SocketAddr,
    tls: tokio_rustls::TlsAcceptor,
    stats: Arc<Stats>,
}

async fn accept_loop(
    listener: TcpListener,
    modes: watch::Sender<Mode>,
    ctx: Ctx,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                ctx.stats.connections.fetch_add(1, Ordering::Relaxed);
                let mut changes = modes.subscribe();
                let mode = *changes.borrow_and_update();
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = handle(stream, mode, &ctx) => {}
                        // Any switch (or the proxy stopping) drops the connection.
                        _ = changes.changed() => {}
                    }
                });
            }
        }
    }
}

async fn handle(client: TcpStream, mode: Mode, ctx: &Ctx) {
    let _ = client.set_nodelay(true);
    let result = match mode {
        Mode::Pass => forward(client, ctx.upstream, None).await,
        Mode::Delay(d) => forward(client, ctx.upstream, Some(d)).await,
        Mode::Refuse => {
            // RST rather than FIN: as close to "connection refused" as an
            // accepted socket gets. (Deprecated because a non-zero linger
            // blocks on drop; a zero linger resets at once.)
            #[allow(deprecated)]
            let _ = client.set_linger(Some(Duration::ZERO));
            drop(client);
            Ok(())
        }
        Mode::Error500 => serve_500(client, ctx, false).await,
        Mode::Error500HealthOk => serve_500(client, ctx, true).await,
    };
    let _ = result;
}

/// Forward both ways; with a delay, chunks from the member are held.
async fn forward(
    mut client: TcpStream,
    upstream: SocketAddr,
    delay: Option<Duration>,
) -> Result<()> {
    let mut server = TcpStream::connect(upstream).await?;
    let _ = server.set_nodelay(true);
    let Some(delay) = delay else {
        tokio::io::copy_bidirectional(&mut client, &mut server).await?;
        return Ok(());
    };
    let (mut client_read, client_write) = client.into_split();
    let (server_read, mut server_write) = server.into_split();
    let up = async move {
        let r = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
        r.map(|_| ())
    };
    let (r1, r2) = tokio::join!(up, delayed_copy(server_read, client_write, delay));
    r1?;
    r2
}

/// Copy `from` to `to`, each chunk written `delay` after it was read.
async fn delayed_copy(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) -> Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let read = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = from.read(&mut buf).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            if tx
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .is_err()
            {
                return Ok(());
            }
        }
    };
    let write = async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            to.write_all(&chunk).await?;
        }
        to.shutdown().await
    };
    let (r1, r2) = tokio::join!(read, write);
    r1?;
    r2?;
    Ok(())
}

/// The body of every injected error: kube-apiserver's InternalError Status.
fn status_500_body() -> String {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "an error on the server (\"fault proxy: injected error\") has prevented the request from succeeding",
        "reason": "InternalError",
        "details": {"causes": [{"message": "fault proxy: injected error"}]},
        "code": 500
    })
    .to_string()
}

fn is_health_path(path: &str) -> bool {
    ["/readyz", "/healthz", "/livez"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")))
}

/// Terminate TLS and answer every request with a 500 (health with `ok`
/// when `health_ok`).
async fn serve_500(client: TcpStream, ctx: &Ctx, health_ok: bool) -> Result<()> {
    let tls = ctx.tls.accept(client).await?;
    let stats = ctx.stats.clone();
    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let stats = stats.clone();
        async move {
            let response = if health_ok && is_health_path(req.uri().path()) {
                hyper::Response::builder()
                    .status(200)
                    .header("content-type", "text/plain; charset=utf-8")
                    .body(Full::new(Bytes::from_static(b"ok")))
            } else {
                stats.errors_500.fetch_add(1, Ordering::Relaxed);
                hyper::Response::builder()
                    .status(500)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(status_500_body())))
            };
            Ok::<_, Infallible>(response.unwrap_or_default())
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tls), service)
        .await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    /// A plain TCP echo server on its own thread; returns its address.
    fn echo_server() -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                std::thread::spawn(move || {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn roundtrip(addr: SocketAddr, msg: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut s = std::net::TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(msg)?;
        let mut got = vec![0u8; msg.len()];
        s.read_exact(&mut got)?;
        Ok(got)
    }

    #[test]
    fn pass_forwards_bytes_both_ways() {
        let proxy = FaultProxy::start(echo_server(), ServingCert::self_signed().unwrap()).unwrap();
        assert_eq!(roundtrip(proxy.addr(), b"hello").unwrap(), b"hello");
        assert_eq!(proxy.connections(), 1);
    }

    #[test]
    fn delay_holds_the_answer_for_the_delay() {
        let proxy = FaultProxy::start(echo_server(), ServingCert::self_signed().unwrap()).unwrap();
        proxy.set_mode(Mode::Delay(Duration::from_millis(400)));
        let start = std::time::Instant::now();
        assert_eq!(roundtrip(proxy.addr(), b"slow").unwrap(), b"slow");
        assert!(
            start.elapsed() >= Duration::from_millis(400),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn refuse_closes_every_connection_without_an_answer() {
        let proxy = FaultProxy::start(echo_server(), ServingCert::self_signed().unwrap()).unwrap();
        proxy.set_mode(Mode::Refuse);
        assert!(roundtrip(proxy.addr(), b"anyone?").is_err());
    }

    #[test]
    fn a_mode_switch_closes_open_connections() {
        let proxy = FaultProxy::start(echo_server(), ServingCert::self_signed().unwrap()).unwrap();
        let mut s = std::net::TcpStream::connect(proxy.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        proxy.set_mode(Mode::Refuse);
        let mut rest = Vec::new();
        // EOF or reset, never a hang.
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty());
    }

    /// One HTTP/1.1 GET of `path` over TLS through `proxy` (trusting
    /// `cert`); the whole answer as text.
    async fn https_get(proxy: &FaultProxy, cert: &ServingCert, path: &str) -> String {
        let mut roots = rustls::RootCertStore::empty();
        for der in rustls_pemfile::certs(&mut cert.cert_pem.as_bytes()) {
            roots.add(der.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(proxy.addr()).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = connector.connect(name, tcp).await.unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tls.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn error500_terminates_tls_and_answers_every_request_with_an_internal_error() {
        let cert = ServingCert::self_signed().unwrap();
        let proxy = FaultProxy::start(echo_server(), cert.clone()).unwrap();
        proxy.set_mode(Mode::Error500);
        let answer = https_get(&proxy, &cert, "/readyz").await;
        assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
        let answer = https_get(&proxy, &cert, "/api/v1/namespaces").await;
        assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
        assert!(answer.contains(r#""reason":"InternalError""#), "{answer}");
        assert_eq!(proxy.errors_500(), 2);
    }

    #[tokio::test]
    async fn error500_health_ok_answers_health_checks_and_fails_the_api() {
        let cert = ServingCert::self_signed().unwrap();
        let proxy = FaultProxy::start(echo_server(), cert.clone()).unwrap();
        proxy.set_mode(Mode::Error500HealthOk);
        let answer = https_get(&proxy, &cert, "/readyz").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("ok"), "{answer}");
        let answer = https_get(&proxy, &cert, "/api/v1/configmaps").await;
        assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
        assert_eq!(proxy.errors_500(), 1);
    }

    #[test]
    fn health_paths_are_recognised_with_their_checks() {
        assert!(is_health_path("/readyz"));
        assert!(is_health_path("/healthz/ping"));
        assert!(!is_health_path("/readyzz"));
        assert!(!is_health_path("/api/v1/namespaces"));
    }

    #[test]
    fn the_injected_error_is_an_internal_error_status() {
        let v: serde_json::Value = serde_json::from_str(&status_500_body()).unwrap();
        assert_eq!(v["reason"], "InternalError");
        assert_eq!(v["code"], 500);
        assert_eq!(v["kind"], "Status");
    }
}
