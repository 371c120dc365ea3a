//! Serving over a real socket: the server runs in-process on 127.0.0.1 with a
//! free port and a temp data dir; a rustls + hyper client talks to it the way
//! kubectl would (HTTP/1.1 or HTTP/2 via ALPN, client certificates, bearer
//! tokens), and kube-rs loads the kubeconfig the server wrote.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;
use ubernetes_apiserver::options::ServerOptions;
use ubernetes_apiserver::serve::{self, RunningServer};

/// A started server and the trigger that shuts it down.
struct TestServer {
    server: RunningServer,
    stop: oneshot::Sender<()>,
}

impl TestServer {
    async fn start(options: ServerOptions) -> Self {
        let (stop, stopped) = oneshot::channel::<()>();
        let server = serve::start(options, async {
            let _ = stopped.await;
        })
        .await
        .expect("server starts");
        Self { server, stop }
    }

    async fn start_in(dir: &Path) -> Self {
        Self::start(ServerOptions::for_test(dir)).await
    }

    fn addr(&self) -> SocketAddr {
        self.server.local_addr
    }

    fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.server.data_dir.join("pki/ca.crt")).expect("ca.crt")
    }

    fn admin(&self) -> (String, String) {
        let pki = self.server.data_dir.join("pki");
        (
            std::fs::read_to_string(pki.join("admin.crt")).expect("admin.crt"),
            std::fs::read_to_string(pki.join("admin.key")).expect("admin.key"),
        )
    }

    /// A client trusting the server's CA, with an optional client certificate.
    fn client(&self, identity: Option<(String, String)>, alpn: &[&[u8]]) -> Client {
        Client::new(self.addr(), &self.ca_pem(), identity, alpn)
    }

    async fn shutdown(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(20), self.server.wait())
            .await
            .expect("shutdown finishes in time")
            .expect("clean shutdown");
    }
}

struct Response {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Bytes,
    version: http::Version,
}

impl Response {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

struct Client {
    addr: SocketAddr,
    connector: TlsConnector,
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    let mut reader = pem.as_bytes();
    rustls_pemfile::certs(&mut reader)
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates")
}

fn key(pem: &str) -> PrivateKeyDer<'static> {
    let mut reader = pem.as_bytes();
    rustls_pemfile::private_key(&mut reader)
        .expect("PEM")
        .expect("a private key")
}

impl Client {
    fn new(
        addr: SocketAddr,
        ca_pem: &str,
        identity: Option<(String, String)>,
        alpn: &[&[u8]],
    ) -> Self {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(ca_pem) {
            roots.add(cert).expect("CA certificate");
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots);
        let mut config = match identity {
            Some((cert, k)) => builder
                .with_client_auth_cert(certs(&cert), key(&k))
                .expect("client certificate"),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Self {
            addr,
            connector: TlsConnector::from(Arc::new(config)),
        }
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> Response {
        self.try_send(request).await.expect("request succeeds")
    }

    async fn try_send(&self, mut request: Request<Full<Bytes>>) -> Result<Response, String> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
        let tls = self
            .connector
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
        let authority = format!("localhost:{}", self.addr.port());
        let response = if h2 {
            let uri = format!("https://{authority}{}", request.uri());
            *request.uri_mut() = uri.parse().map_err(|e| format!("uri: {e}"))?;
            let (mut sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                    .await
                    .map_err(|e| format!("h2 handshake: {e}"))?;
            tokio::spawn(conn);
            sender
                .send_request(request)
                .await
                .map_err(|e| format!("h2 request: {e}"))?
        } else {
            request.headers_mut().insert(
                http::header::HOST,
                authority.parse().map_err(|e| format!("host: {e}"))?,
            );
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|e| format!("h1 handshake: {e}"))?;
            tokio::spawn(conn);
            sender
                .send_request(request)
                .await
                .map_err(|e| format!("h1 request: {e}"))?
        };
        let status = response.status();
        let version = response.version();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok(Response {
            status,
            headers,
            body,
            version,
        })
    }

    async fn get(&self, path: &str) -> Response {
        self.send(get(path)).await
    }
}

fn get(path: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .body(Full::new(Bytes::new()))
        .expect("request")
}

fn assert_unauthorized(resp: &Response) {
    assert_eq!(resp.status, StatusCode::UNAUTHORIZED, "{}", resp.text());
    let status = resp.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "Unauthorized");
    assert_eq!(status["message"], "Unauthorized");
    assert_eq!(status["code"], 401);
}

/// The API answered past authentication: anything but 401, with a JSON body
/// (a Status at least: the router may still 404 paths it does not serve).
fn assert_authenticated(resp: &Response) {
    assert_ne!(resp.status, StatusCode::UNAUTHORIZED, "{}", resp.text());
    let _ = resp.json();
}

const HTTP1: &[&[u8]] = &[b"http/1.1"];
const H2_FIRST: &[&[u8]] = &[b"h2", b"http/1.1"];

#[tokio::test]
async fn version_and_health_answer_without_credentials() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let anon = server.client(None, HTTP1);

    let version = anon.get("/version").await;
    assert_eq!(version.status, StatusCode::OK);
    assert_eq!(version.json()["major"], "1");
    assert_eq!(version.json()["minor"], "37");

    for path in ["/healthz", "/livez", "/readyz"] {
        let resp = anon.get(path).await;
        assert_eq!(resp.status, StatusCode::OK, "{path}");
        assert_eq!(resp.text(), "ok", "{path}");
    }
    let verbose = anon.get("/readyz?verbose").await;
    assert!(
        verbose.text().ends_with("readyz check passed\n"),
        "{}",
        verbose.text()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn api_paths_without_credentials_get_a_401_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let anon = server.client(None, HTTP1);
    for path in ["/api", "/apis", "/api/v1/namespaces"] {
        let resp = anon.get(path).await;
        assert_unauthorized(&resp);
        assert_eq!(
            resp.headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn the_admin_client_certificate_is_authenticated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let admin = server.client(Some(server.admin()), HTTP1);
    assert_authenticated(&admin.get("/api").await);
    assert_authenticated(&admin.get("/api/v1/namespaces").await);
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_certificate_issued_for_another_user_is_authenticated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let pki_dir = server.server.data_dir.join("pki");
    let pki = ubernetes_certs::ensure_dev_pki(&pki_dir, &[]).expect("pki");
    let alice = pki
        .issue_client_cert("alice", &["dev".to_string(), "ops".to_string()])
        .expect("issue");
    let client = server.client(Some((alice.cert_pem, alice.key_pem)), HTTP1);
    assert_authenticated(&client.get("/api").await);
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_certificate_from_an_unknown_ca_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let other = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let foreign = ubernetes_certs::ensure_dev_pki(other.path(), &[]).expect("other pki");
    let client = server.client(Some((foreign.admin.cert_pem, foreign.admin.key_pem)), HTTP1);
    // The handshake completes (Go's RequestClientCert, as kube-apiserver)
    // and the certificate authenticates nobody: 401, as kube answers.
    assert_unauthorized(&client.get("/api").await);
    server.shutdown().await;
}

fn write_token_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("tokens.csv");
    std::fs::write(
        &path,
        "s3cr3t-token,carol,uid-carol,\"dev,system:masters\"\n",
    )
    .expect("write token file");
    path
}

fn bearer(path: &str, token: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Full::new(Bytes::new()))
        .expect("request")
}

#[tokio::test]
async fn a_bearer_token_from_the_token_file_is_authenticated_and_a_wrong_one_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = ServerOptions::for_test(dir.path().join("data"));
    options.token_auth_file = Some(write_token_file(dir.path()));
    let server = TestServer::start(options).await;
    let client = server.client(None, HTTP1);

    assert_authenticated(&client.send(bearer("/api", "s3cr3t-token")).await);
    assert_unauthorized(&client.send(bearer("/api", "wrong-token")).await);
    // kube-apiserver's union authenticator: a wrong token fails even on /healthz.
    assert_unauthorized(&client.send(bearer("/healthz", "wrong-token")).await);
    server.shutdown().await;
}

#[tokio::test]
async fn http2_is_negotiated_with_alpn_and_http1_still_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;

    let h2 = server.client(Some(server.admin()), H2_FIRST);
    let resp = h2.get("/version").await;
    assert_eq!(resp.version, http::Version::HTTP_2);
    assert_eq!(resp.status, StatusCode::OK);
    let resp = h2.get("/api").await;
    assert_eq!(resp.version, http::Version::HTTP_2);
    assert_authenticated(&resp);
    assert_unauthorized(&server.client(None, H2_FIRST).get("/api").await);

    let h1 = server.client(None, HTTP1).get("/healthz").await;
    assert_eq!(h1.version, http::Version::HTTP_11);
    assert_eq!(h1.status, StatusCode::OK);
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_over_3_mib_is_a_413_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let admin = server.client(Some(server.admin()), HTTP1);
    let body = Bytes::from(vec![b' '; 3 * 1024 * 1024 + 1]);
    let request = Request::post("/api/v1/namespaces/default/configmaps")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .expect("request");
    let resp = admin.send(request).await;
    assert_eq!(
        resp.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        resp.text()
    );
    let status = resp.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(
        status["message"],
        "Request entity too large: limit is 3145728"
    );
    assert_eq!(status["code"], 413);
    server.shutdown().await;
}

#[tokio::test]
async fn the_kubeconfig_has_a_federation_context_that_kube_rs_can_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let path = server.server.kubeconfig.clone();
    assert_eq!(path, server.server.data_dir.join("kubeconfig"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("kubeconfig parses");
    assert_eq!(kubeconfig.current_context.as_deref(), Some("federation"));
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions {
            context: Some("federation".to_string()),
            ..Default::default()
        },
    )
    .await
    .expect("kube-rs accepts the kubeconfig");
    assert_eq!(
        config.cluster_url.to_string(),
        format!("https://127.0.0.1:{}/", server.addr().port())
    );

    let client = kube::Client::try_from(config).expect("client");
    let version = client.apiserver_version().await.expect("/version over TLS");
    assert_eq!(version.major, "1");
    assert_eq!(version.minor, "37");
    // An authenticated path: the admin certificate from the kubeconfig is sent.
    let request = http::Request::get("/api")
        .body(Vec::new())
        .expect("request");
    match client.request_text(request).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) => assert_ne!(status.code, 401, "{status:?}"),
        Err(other) => panic!("unexpected error: {other}"),
    }
    server.shutdown().await;
}

/// Each start runs on its own runtime, as each would in its own process: the
/// store's background tasks end with the runtime and release the store.
fn on_fresh_runtime<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn a_second_start_reuses_the_pki_and_rewrites_the_kubeconfig() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, admin, first_port) = on_fresh_runtime(async {
        let first = TestServer::start_in(dir.path()).await;
        let seen = (first.ca_pem(), first.admin(), first.addr().port());
        first.shutdown().await;
        seen
    });

    on_fresh_runtime(async {
        let second = TestServer::start_in(dir.path()).await;
        assert_eq!(second.ca_pem(), ca, "the CA is reused");
        assert_eq!(second.admin(), admin, "the admin certificate is reused");
        let kubeconfig = std::fs::read_to_string(&second.server.kubeconfig).expect("kubeconfig");
        assert!(
            kubeconfig.contains(&format!("https://127.0.0.1:{}", second.addr().port())),
            "{kubeconfig}"
        );
        if second.addr().port() != first_port {
            assert!(!kubeconfig.contains(&format!("127.0.0.1:{first_port}\"")));
        }
        // The reused admin certificate still authenticates.
        let client = second.client(Some(admin), HTTP1);
        assert_authenticated(&client.get("/api").await);
        second.shutdown().await;
    });
}

#[tokio::test]
async fn graceful_shutdown_lets_an_open_connection_finish_then_stops_listening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = TestServer::start_in(dir.path()).await;
    let addr = server.addr();
    let health = server.server.health.clone();

    // An idle keep-alive HTTP/1.1 connection must not hold shutdown up.
    let client = server.client(None, HTTP1);
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let tls = client
        .connector
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .expect("tls");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .expect("handshake");
    let conn = tokio::spawn(conn);
    let mut request = get("/healthz");
    request
        .headers_mut()
        .insert(http::header::HOST, "localhost".parse().expect("host"));
    let resp = sender.send_request(request).await.expect("response");
    assert_eq!(resp.status(), StatusCode::OK);

    server.shutdown().await;
    assert!(health.is_shutting_down(), "/readyz reports shutdown");
    // The idle connection was closed by the server.
    tokio::time::timeout(Duration::from_secs(5), conn)
        .await
        .expect("connection closed by the server")
        .expect("join")
        .expect("clean close");
    // And nobody listens any more.
    assert!(TcpStream::connect(addr).await.is_err(), "listener closed");
}

#[tokio::test]
async fn a_port_in_use_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut options = ServerOptions::for_test(dir.path());
    options.secure_port = taken.local_addr().expect("addr").port();
    let (_stop, stopped) = oneshot::channel::<()>();
    let err = serve::start(options.clone(), async {
        let _ = stopped.await;
    })
    .await
    .expect_err("the port is taken");
    let message = format!("{err:#}");
    assert!(
        message.contains(&format!("port {} is already in use", options.secure_port)),
        "{message}"
    );
    assert!(message.contains("--secure-port"), "{message}");
}

#[tokio::test]
async fn given_serving_and_client_ca_files_are_used_instead_of_the_dev_pki() {
    let dir = tempfile::tempdir().expect("tempdir");
    // An "external" PKI: its serving cert (with its CA appended, as
    // --tls-cert-file allows) and its CA as --client-ca-file.
    let external =
        ubernetes_certs::ensure_dev_pki(&dir.path().join("external"), &[]).expect("external pki");
    let cert_file = dir.path().join("tls.crt");
    std::fs::write(
        &cert_file,
        format!("{}{}", external.serving.cert_pem, external.ca.cert_pem),
    )
    .expect("write cert");
    let mut options = ServerOptions::for_test(dir.path().join("data"));
    options.tls_cert_file = Some(cert_file);
    options.tls_private_key_file = Some(external.serving_key_path());
    options.client_ca_file = Some(external.ca_cert_path());
    let server = TestServer::start(options).await;

    // Clients trust the external CA, and the kubeconfig names it.
    let client = Client::new(
        server.addr(),
        &external.ca.cert_pem,
        Some((
            external.admin.cert_pem.clone(),
            external.admin.key_pem.clone(),
        )),
        HTTP1,
    );
    assert_authenticated(&client.get("/api").await);
    let kubeconfig = std::fs::read_to_string(&server.server.kubeconfig).expect("kubeconfig");
    let kc = kube::config::Kubeconfig::from_yaml(&kubeconfig).expect("parses");
    let ca_data = kc.clusters[0]
        .cluster
        .as_ref()
        .and_then(|c| c.certificate_authority_data.clone())
        .expect("CA data");
    use base64::Engine as _;
    let ca_pem = base64::engine::general_purpose::STANDARD
        .decode(ca_data)
        .expect("base64");
    assert_eq!(String::from_utf8_lossy(&ca_pem), external.ca.cert_pem);

    // The dev CA is no client CA any more (it is neither the serving CA nor
    // in --client-ca-file): its admin certificate is a 401, and the
    // kubeconfig carries no credentials that would not work.
    let dev_admin = Client::new(
        server.addr(),
        &external.ca.cert_pem,
        Some(server.admin()),
        HTTP1,
    );
    assert_unauthorized(&dev_admin.get("/api").await);
    assert!(kc.auth_infos[0].auth_info.as_ref().is_none_or(|user| {
        user.client_certificate_data.is_none() && user.client_key_data.is_none()
    }));
    server.shutdown().await;
}

/// A graceful shutdown stops the in-server controllers and releases the
/// store, so the same process can open the same data dir again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_releases_the_store_for_a_restart_in_the_same_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = TestServer::start_in(dir.path()).await;
    first.shutdown().await;
    // Background tasks let go of the store shortly after the drain.
    let mut second = None;
    for _ in 0..50 {
        let (stop, stopped) = oneshot::channel::<()>();
        match serve::start(ServerOptions::for_test(dir.path()), async {
            let _ = stopped.await;
        })
        .await
        {
            Ok(server) => {
                second = Some(TestServer { server, stop });
                break;
            }
            Err(e) => {
                assert!(
                    format!("{e:#}").contains("store"),
                    "unexpected error: {e:#}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    let second = second.expect("the store is released within 5 s of shutdown");
    let client = second.client(Some(second.admin()), HTTP1);
    assert_authenticated(&client.get("/api/v1/namespaces/default").await);
    second.shutdown().await;
}
