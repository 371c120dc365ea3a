//! Member kubeconfigs, read by the federation itself (issue 28: the
//! federation must not be a confused deputy).
//!
//! A member's credentials are a kubeconfig in a Secret of
//! `federation-system`. Whoever may write Secrets there must not be able to
//! make the federation *host* do anything: kube's own loader
//! (`Config::from_custom_kubeconfig`) runs `exec` plugins and
//! `auth-provider`s, reads `tokenFile` and certificate/key *paths* and
//! connects through `proxy-url`, so it is never used on a stored kubeconfig.
//! [`parse`] reads the current context's cluster and user and accepts only
//! what `ubernetes join` (or a member's admin kubeconfig with embedded
//! certificates) writes:
//!
//! - cluster: `server` (`https://`, or `http://`), `certificate-authority-data`,
//!   `insecure-skip-tls-verify` (what `ubernetes join` writes for a member
//!   context without a CA; not together with a CA, as client-go refuses),
//!   `tls-server-name`, `disable-compression`, `extensions`;
//! - user: `token`, `client-certificate-data` with `client-key-data`,
//!   `extensions`.
//!
//! Anything else in that cluster or user is refused with a fixed message
//! naming the Secret, the entry, the field and the fix (`exec`,
//! `auth-provider`, `tokenFile`, `client-certificate`, `client-key`,
//! `certificate-authority`, `proxy-url`, `username`/`password`, `as`,
//! `as-uid`, `as-groups`, `as-user-extra`, unknown fields). Every message is
//! fixed text plus names from the kubeconfig: no parser or client error
//! text is ever passed on (it could echo the Secret's contents).
//!
//! [`MemberKubeconfig::check_server`] is issue 28's item 7: the address a
//! Cluster's `serverAddressByClientCIDRs` picks must be on the host of one
//! of the kubeconfig's servers (the port may differ: a member may be
//! reached through a proxy on its host), so that who may edit a Cluster
//! cannot send the member's token or client key to another host.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kube::config::{AuthInfo, Kubeconfig};
use serde_json::Value;

/// What "ubernetes join" writes, as the fix in every refusal.
const AS_JOIN_WRITES: &str = "as \"ubernetes join\" writes them";

/// Cluster fields accepted in the current context's cluster.
const CLUSTER_FIELDS: [&str; 6] = [
    "server",
    "certificate-authority-data",
    "insecure-skip-tls-verify",
    "tls-server-name",
    "disable-compression",
    "extensions",
];

/// User fields accepted in the current context's user.
const USER_FIELDS: [&str; 4] = [
    "token",
    "client-certificate-data",
    "client-key-data",
    "extensions",
];

/// A member kubeconfig that passed [`parse`]: only inline credentials.
#[derive(Clone)]
pub struct MemberKubeconfig {
    /// "Secret federation-system/NAME", for messages.
    what: String,
    /// The current context's server.
    server: http::Uri,
    /// Every parseable `server` of the kubeconfig's clusters (item 7).
    servers: Vec<http::Uri>,
    /// DER certificates of `certificate-authority-data`.
    root_cert: Option<Vec<Vec<u8>>>,
    insecure: bool,
    tls_server_name: Option<String>,
    disable_compression: bool,
    /// Only `token`, `client-certificate-data`, `client-key-data`.
    auth: AuthInfo,
}

impl std::fmt::Debug for MemberKubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        f.debug_struct("MemberKubeconfig")
            .field("what", &self.what)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Why a field is refused, and what to give instead.
fn refusal(field: &str) -> (&'static str, &'static str) {
    const INLINE_USER: &str =
        "give the credentials inline (token, or client-certificate-data and client-key-data)";
    match field {
        "exec" | "auth-provider" => ("which the federation does not run", INLINE_USER),
        "tokenFile" | "client-certificate" | "client-key" => (
            "a file path, which the federation does not read",
            INLINE_USER,
        ),
        "certificate-authority" => (
            "a file path, which the federation does not read",
            "give the CA inline (certificate-authority-data)",
        ),
        "username" | "password" => (
            "basic authentication, which the federation does not send",
            INLINE_USER,
        ),
        "as" | "as-uid" | "as-groups" | "as-user-extra" => (
            "impersonation, which the federation does not do with member credentials",
            INLINE_USER,
        ),
        "proxy-url" => (
            "which the federation does not use (it connects to the member's server directly)",
            "remove it",
        ),
        _ => ("which the federation does not use", "remove it"),
    }
}

/// The first field of `entry` (a cluster or user as JSON) not in `allowed`.
fn first_refused<'a>(entry: &'a Value, allowed: &[&str]) -> Option<&'a str> {
    entry.as_object().and_then(|fields| {
        fields
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| k.as_str())
            .find(|k| !allowed.contains(k))
    })
}

/// Base64 `data` (whitespace ignored), decoded; `None` if it is not.
fn base64_field(data: &str) -> Option<Vec<u8>> {
    let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(compact).ok()
}

/// The DER bodies of the `CERTIFICATE` blocks of PEM `text`.
fn pem_certificates(text: &str) -> Option<Vec<Vec<u8>>> {
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    let mut certs = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let body = &rest[start + BEGIN.len()..];
        let end = body.find(END)?;
        certs.push(base64_field(&body[..end])?);
        rest = &body[end + END.len()..];
    }
    (!certs.is_empty()).then_some(certs)
}

/// Whether base64 `data` decodes to PEM text.
fn is_pem(data: &str) -> bool {
    base64_field(data)
        .and_then(|b| String::from_utf8(b).ok())
        .is_some_and(|t| t.contains("-----BEGIN "))
}

/// A URL with a scheme of `http`/`https` and a host.
fn server_url(text: &str) -> Option<http::Uri> {
    let uri: http::Uri = text.trim().parse().ok()?;
    let scheme = uri.scheme_str()?;
    (matches!(scheme, "https" | "http") && uri.host().is_some_and(|h| !h.is_empty())).then_some(uri)
}

fn host(uri: &http::Uri) -> String {
    uri.host().unwrap_or_default().to_ascii_lowercase()
}

/// Read the kubeconfig `text` of `Secret federation-system/<secret>` and
/// check it holds only inline credentials (see the module documentation).
/// Errors are fixed messages for the Cluster's condition.
pub fn parse(text: &str, secret: &str) -> Result<MemberKubeconfig, String> {
    let what = format!("Secret {}/{secret}", crate::clusters::FEDERATION_NAMESPACE);
    let key = crate::clusters::KUBECONFIG_KEY;
    // The parser's error text is not passed on: it may quote the Secret.
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|_| {
        format!(
            "{what} key \"{key}\" is not a valid kubeconfig: give a kubeconfig (clusters, users, \
             contexts, current-context) {AS_JOIN_WRITES}"
        )
    })?;
    let Some(current) = kubeconfig
        .current_context
        .as_deref()
        .filter(|c| !c.is_empty())
    else {
        return Err(format!(
            "{what}: the kubeconfig has no current-context: set it to the context the federation uses"
        ));
    };
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == current)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| {
            format!(
                "{what}: the kubeconfig's current-context {current:?} is not among its contexts"
            )
        })?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            format!(
                "{what}: the kubeconfig's cluster {:?} (of context {current:?}) is not among its clusters",
                context.cluster
            )
        })?;
    let user_name = context.user.clone().unwrap_or_default();
    let user = if user_name.is_empty() {
        AuthInfo::default()
    } else {
        kubeconfig
            .auth_infos
            .iter()
            .find(|u| u.name == user_name)
            .and_then(|u| u.auth_info.clone())
            .ok_or_else(|| {
                format!(
                    "{what}: the kubeconfig's user {user_name:?} (of context {current:?}) is not among its users"
                )
            })?
    };

    // What is there, as kubeconfig field names.
    let unreadable =
        |_| format!("{what}: the kubeconfig cannot be read back: give it {AS_JOIN_WRITES}");
    let cluster_json = serde_json::to_value(cluster).map_err(unreadable)?;
    if let Some(field) = first_refused(&cluster_json, &CLUSTER_FIELDS) {
        let (why, fix) = refusal(field);
        return Err(format!(
            "{what}: kubeconfig cluster {:?} uses {field:?}, {why}; {fix}, {AS_JOIN_WRITES}",
            context.cluster
        ));
    }
    let user_json = serde_json::to_value(&user).map_err(unreadable)?;
    if let Some(field) = first_refused(&user_json, &USER_FIELDS) {
        let (why, fix) = refusal(field);
        return Err(format!(
            "{what}: kubeconfig user {user_name:?} uses {field:?}, {why}; {fix}, {AS_JOIN_WRITES}"
        ));
    }

    let server = cluster
        .server
        .as_deref()
        .and_then(server_url)
        .ok_or_else(|| {
            format!(
                "{what}: kubeconfig cluster {:?} has no server URL (https://HOST:PORT)",
                context.cluster
            )
        })?;
    let servers = kubeconfig
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref()?.server.as_deref())
        .filter_map(server_url)
        .collect();
    let root_cert = match cluster
        .certificate_authority_data
        .as_deref()
        .filter(|d| !d.trim().is_empty())
    {
        None => None,
        Some(data) => Some(
            base64_field(data)
                .and_then(|b| String::from_utf8(b).ok())
                .and_then(|pem| pem_certificates(&pem))
                .ok_or_else(|| {
                    format!(
                        "{what}: kubeconfig cluster {:?} has a certificate-authority-data that is not \
                         base64 of PEM certificates",
                        context.cluster
                    )
                })?,
        ),
    };
    let insecure = cluster.insecure_skip_tls_verify.unwrap_or(false);
    if insecure && root_cert.is_some() {
        return Err(format!(
            "{what}: kubeconfig cluster {:?} sets both certificate-authority-data and \
             insecure-skip-tls-verify: keep one",
            context.cluster
        ));
    }

    let text_field = |name: &str| {
        user_json
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .is_some()
    };
    let (has_token, has_cert, has_key) = (
        text_field("token"),
        text_field("client-certificate-data"),
        text_field("client-key-data"),
    );
    if has_cert != has_key {
        return Err(format!(
            "{what}: kubeconfig user {user_name:?} needs both client-certificate-data and \
             client-key-data, {AS_JOIN_WRITES}"
        ));
    }
    if has_cert
        && !(user.client_certificate_data.as_deref().is_some_and(is_pem)
            && user_json
                .get("client-key-data")
                .and_then(Value::as_str)
                .is_some_and(is_pem))
    {
        return Err(format!(
            "{what}: kubeconfig user {user_name:?} has a client-certificate-data or client-key-data \
             that is not base64 of PEM"
        ));
    }
    let auth = AuthInfo {
        token: if has_token { user.token.clone() } else { None },
        client_certificate_data: if has_cert {
            user.client_certificate_data.clone()
        } else {
            None
        },
        client_key_data: if has_cert {
            user.client_key_data.clone()
        } else {
            None
        },
        ..AuthInfo::default()
    };
    Ok(MemberKubeconfig {
        what,
        server,
        servers,
        root_cert,
        insecure,
        tls_server_name: cluster.tls_server_name.clone().filter(|s| !s.is_empty()),
        disable_compression: cluster.disable_compression.unwrap_or(false),
        auth,
    })
}

impl MemberKubeconfig {
    /// The current context's server URL.
    pub fn server(&self) -> &http::Uri {
        &self.server
    }

    /// Whether `address` (a Cluster's `serverAddressByClientCIDRs` pick)
    /// may receive these credentials: a URL on the host of one of the
    /// kubeconfig's servers, `https` unless the kubeconfig's own server is
    /// `http`. Errors are fixed messages for the Cluster's condition.
    pub fn check_server(&self, address: &str) -> Result<http::Uri, String> {
        let field = "spec.serverAddressByClientCIDRs";
        let uri = server_url(address).ok_or_else(|| {
            format!("the server address {address:?} ({field}) is not a URL (https://HOST:PORT)")
        })?;
        if uri.scheme_str() == Some("http") && self.server.scheme_str() != Some("http") {
            return Err(format!(
                "the server address {address:?} ({field}) is plain http while the kubeconfig in {} \
                 uses https: the federation does not send a member's credentials unencrypted",
                self.what
            ));
        }
        let wanted = host(&uri);
        if self.servers.iter().any(|s| host(s) == wanted) {
            return Ok(uri);
        }
        Err(format!(
            "the server address {address:?} ({field}) is not on the host of the kubeconfig's server \
             in {} ({:?}): the federation sends a member's credentials only to the host they are \
             for; use an address on that host, or list this server in the kubeconfig's clusters",
            self.what,
            host(&self.server)
        ))
    }

    /// A client configuration for `server` (already checked with
    /// [`Self::check_server`]; else the kubeconfig's own server), built from
    /// the accepted fields only.
    pub fn config(&self, server: Option<http::Uri>) -> kube::Config {
        let mut config = kube::Config::new(server.unwrap_or_else(|| self.server.clone()));
        config.root_cert = self.root_cert.clone();
        config.accept_invalid_certs = self.insecure;
        config.tls_server_name = self.tls_server_name.clone();
        config.disable_compression = self.disable_compression;
        config.auth_info = self.auth.clone();
        config
    }

    /// A client for `server` (see [`Self::config`]). The client library's
    /// error is logged, never returned: the message is fixed.
    pub fn client(&self, config: kube::Config) -> Result<kube::Client, String> {
        kube::Client::try_from(config).map_err(|err| {
            tracing::debug!(secret = %self.what, error = %err, "building a member client");
            format!(
                "{}: the kubeconfig's certificates or key cannot be loaded (certificate-authority-data, \
                 client-certificate-data, client-key-data): give them {AS_JOIN_WRITES}",
                self.what
            )
        })
    }
}

/// The HTTP/2 stream window of a member connection: a watch's events in
/// flight that the host has not read yet (1 MiB; hyper's default is 2).
const H2_STREAM_WINDOW: u32 = 1 << 20;
/// The HTTP/2 connection window of a member connection (hyper's default is
/// 5 MiB): what one member may have in flight unread over all its streams.
const H2_CONNECTION_WINDOW: u32 = 2 << 20;
/// How often an idle member connection is pinged, and how long a ping may
/// go unanswered before the connection is dropped (client-go's
/// `ReadIdleTimeout` and `PingTimeout`: 30 s and 15 s).
const H2_PING_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);
const H2_PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

impl MemberKubeconfig {
    /// A client for an `https` member whose every request (every get and
    /// apply in flight) is a stream of **one HTTP/2 connection**, as
    /// client-go talks to kube-apiserver: over HTTP/1.1 each request in
    /// flight holds a connection of its own (TLS state, read and write
    /// buffers, kept idle in the pool afterwards). The members' client for
    /// requests (`clusters::member_client`); the federated informer's
    /// watches stay on [`Self::client`]'s HTTP/1.1 connections. The TLS settings are kube's own
    /// ([`kube::client::ConfigExt::rustls_client_config`]: the CA of
    /// `certificate-authority-data` or none with `insecure-skip-tls-verify`,
    /// the client certificate and key) with `tls-server-name` as the
    /// verified name; the token goes in kube's auth layer, as
    /// [`Self::client`] does. ALPN offers `h2` and `http/1.1`:
    /// kube-apiserver and ubernetes take `h2`; a server (or a TLS-ending
    /// load balancer) that takes only `http/1.1` gets HTTP/1.1 connections,
    /// one per request in flight, as before. Connections racing at start
    /// (every kind's watch at once) end as one: hyper-util's pool keeps the
    /// first that agreed on `h2` and the others' requests use it. An `http`
    /// server gets [`Self::client`]. `connect_timeout` bounds the TCP
    /// connect and the TLS handshake; a dead HTTP/2 connection is found by
    /// pings instead of per-read or per-write timeouts (a connection carries
    /// many streams). The client library's error is logged, never returned.
    pub fn h2_client(&self, config: kube::Config) -> Result<kube::Client, String> {
        use kube::client::ConfigExt as _;
        if config.cluster_url.scheme_str() != Some("https") {
            return self.client(config);
        }
        let failed = |err: &dyn std::fmt::Display| {
            tracing::debug!(secret = %self.what, error = %err, "building a member client");
            format!(
                "{}: the kubeconfig's certificates or key cannot be loaded (certificate-authority-data, \
                 client-certificate-data, client-key-data): give them {AS_JOIN_WRITES}",
                self.what
            )
        };
        let mut tls = config.rustls_client_config().map_err(|e| failed(&e))?;
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let server_name = match &config.tls_server_name {
            Some(name) => Some(
                tokio_rustls::rustls::pki_types::ServerName::try_from(name.clone())
                    .map_err(|e| failed(&e))?,
            ),
            None => None,
        };
        let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(config.connect_timeout);
        let connector = H2Connector {
            http,
            tls: tokio_rustls::TlsConnector::from(std::sync::Arc::new(tls)),
            server_name,
            handshake_timeout: config.connect_timeout,
        };
        let hyper_client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .http2_initial_stream_window_size(H2_STREAM_WINDOW)
                .http2_initial_connection_window_size(H2_CONNECTION_WINDOW)
                .http2_keep_alive_interval(H2_PING_INTERVAL)
                .http2_keep_alive_timeout(H2_PING_TIMEOUT)
                .timer(hyper_util::rt::TokioTimer::new())
                .build::<_, kube::client::Body>(connector);
        let retry = config.default_retry.then(|| {
            tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry())
        });
        let service = tower::ServiceBuilder::new()
            .layer(config.base_uri_layer())
            .option_layer(retry)
            .option_layer(config.auth_layer().map_err(|e| failed(&e))?)
            .layer(config.extra_headers_layer().map_err(|e| failed(&e))?)
            .map_err(tower::BoxError::from)
            .service(hyper_client);
        Ok(kube::Client::new(service, config.default_namespace))
    }
}

/// A member connection: TCP, then TLS (ALPN `h2` or `http/1.1`).
#[derive(Clone)]
struct H2Connector {
    http: hyper_util::client::legacy::connect::HttpConnector,
    tls: tokio_rustls::TlsConnector,
    /// `tls-server-name`; else the URL's host.
    server_name: Option<tokio_rustls::rustls::pki_types::ServerName<'static>>,
    handshake_timeout: Option<std::time::Duration>,
}

/// A member connection (see [`H2Connector`]).
struct H2Stream(hyper_util::rt::TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>);

impl hyper_util::client::legacy::connect::Connection for H2Stream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        let connected = hyper_util::client::legacy::connect::Connected::new();
        if self.0.inner().get_ref().1.alpn_protocol() == Some(b"h2".as_slice()) {
            connected.negotiated_h2()
        } else {
            connected
        }
    }
}

impl hyper::rt::Read for H2Stream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for H2Stream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }
}

impl tower::Service<http::Uri> for H2Connector {
    type Response = H2Stream;
    type Error = tower::BoxError;
    type Future = futures::future::BoxFuture<'static, Result<H2Stream, tower::BoxError>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower::Service::<http::Uri>::poll_ready(&mut self.http, cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let mut http = self.http.clone();
        let tls = self.tls.clone();
        let name = self.server_name.clone().map_or_else(
            || {
                let host = uri.host().unwrap_or_default();
                // An IPv6 literal comes bracketed in a URL.
                let host = host.trim_start_matches('[').trim_end_matches(']');
                tokio_rustls::rustls::pki_types::ServerName::try_from(host.to_string())
            },
            Ok,
        );
        let handshake_timeout = self.handshake_timeout;
        Box::pin(async move {
            let name = name?;
            let tcp = http.call(uri).await?.into_inner();
            let handshake = tls.connect(name, tcp);
            let stream = match handshake_timeout {
                Some(t) => tokio::time::timeout(t, handshake)
                    .await
                    .map_err(|_| "the member's TLS handshake timed out")??,
                None => handshake.await?,
            };
            Ok(H2Stream(hyper_util::rt::TokioIo::new(stream)))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;

    /// A kubeconfig with `cluster` and `user` (YAML flow maps) in its
    /// current context, and a second cluster `other`.
    fn kubeconfig(cluster: &str, user: &str) -> String {
        format!(
            r#"
apiVersion: v1
kind: Config
clusters:
- name: m
  cluster: {cluster}
- name: other
  cluster: {{server: "https://10.9.9.9:6443"}}
users:
- name: u
  user: {user}
contexts:
- name: m
  context: {{cluster: m, user: u}}
current-context: m
"#
        )
    }

    const SERVER: &str = r#"server: "https://127.0.0.1:6443""#;

    fn b64(s: &str) -> String {
        STANDARD.encode(s)
    }

    fn cert_pem() -> String {
        // Any base64 body between the markers is a certificate to the parser.
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            b64("not really DER")
        )
    }

    fn err(cluster: &str, user: &str) -> String {
        parse(&kubeconfig(cluster, user), "east").expect_err("refused")
    }

    #[test]
    fn the_shapes_join_and_admin_kubeconfigs_have_are_accepted() {
        // `ubernetes join`: token and CA data, or token and insecure.
        let ca = b64(&cert_pem());
        let k = parse(
            &kubeconfig(
                &format!("{{{SERVER}, certificate-authority-data: {ca}}}"),
                "{token: abc}",
            ),
            "east",
        )
        .unwrap();
        assert_eq!(k.server().to_string(), "https://127.0.0.1:6443/");
        let config = k.config(None);
        assert_eq!(config.root_cert.as_ref().map(Vec::len), Some(1));
        assert!(!config.accept_invalid_certs);
        assert!(config.auth_info.token.is_some());
        assert!(config.auth_info.exec.is_none() && config.auth_info.token_file.is_none());
        let k = parse(
            &kubeconfig(
                &format!("{{{SERVER}, insecure-skip-tls-verify: true}}"),
                "{token: abc}",
            ),
            "east",
        )
        .unwrap();
        assert!(k.config(None).accept_invalid_certs);
        // A member's admin kubeconfig: client certificate and key data.
        let k = parse(
            &kubeconfig(
                &format!("{{{SERVER}, tls-server-name: member.local}}"),
                &format!(
                    "{{client-certificate-data: {}, client-key-data: {}}}",
                    b64(&cert_pem()),
                    b64("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
                ),
            ),
            "east",
        )
        .unwrap();
        let config = k.config(None);
        assert_eq!(config.tls_server_name.as_deref(), Some("member.local"));
        assert!(config.auth_info.client_certificate_data.is_some());
        assert!(config.auth_info.client_key_data.is_some());
        assert!(config.auth_info.token.is_none());
    }

    #[test]
    fn an_exec_plugin_is_refused_with_the_secret_the_user_and_the_fix() {
        let e = err(
            &format!("{{{SERVER}}}"),
            r#"{exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: ["-c", "touch /tmp/x; exit 1"]}}"#,
        );
        assert_eq!(
            e,
            "Secret federation-system/east: kubeconfig user \"u\" uses \"exec\", which the \
             federation does not run; give the credentials inline (token, or \
             client-certificate-data and client-key-data), as \"ubernetes join\" writes them"
        );
        assert!(!e.contains("touch"), "the command is not echoed: {e}");
    }

    #[test]
    fn every_user_field_beyond_inline_credentials_is_refused() {
        for (user, field, why) in [
            (
                "{auth-provider: {name: gcp, config: {cmd-path: /bin/sh}}}",
                "auth-provider",
                "does not run",
            ),
            ("{tokenFile: /etc/shadow}", "tokenFile", "file path"),
            (
                "{client-certificate: /data/pki/ca.crt, client-key: /data/pki/ca.key}",
                "client-certificate",
                "file path",
            ),
            ("{client-key: /data/pki/ca.key}", "client-key", "file path"),
            (
                "{token: t, password: b}",
                "password",
                "basic authentication",
            ),
            ("{username: a}", "username", "basic authentication"),
            ("{token: t, as: admin}", "as", "impersonation"),
            ("{token: t, as-uid: \"1\"}", "as-uid", "impersonation"),
            (
                "{token: t, as-groups: [system:masters]}",
                "as-groups",
                "impersonation",
            ),
            (
                "{token: t, as-user-extra: {a: [b]}}",
                "as-user-extra",
                "impersonation",
            ),
            ("{token: t, surprise: 1}", "surprise", "does not use"),
        ] {
            let e = err(&format!("{{{SERVER}}}"), user);
            assert!(
                e.starts_with("Secret federation-system/east: kubeconfig user \"u\" uses \""),
                "{e}"
            );
            assert!(e.contains(&format!("uses {field:?}")), "{field}: {e}");
            assert!(e.contains(why), "{field}: {e}");
            assert!(
                !e.contains("/etc/shadow") && !e.contains("/data/pki"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_ca_path_and_a_proxy_url_in_the_cluster_are_refused() {
        let e = err(
            &format!("{{{SERVER}, certificate-authority: /data/pki/ca.key}}"),
            "{token: t}",
        );
        assert!(
            e.starts_with(
                "Secret federation-system/east: kubeconfig cluster \"m\" uses \"certificate-authority\", \
                 a file path, which the federation does not read; give the CA inline"
            ),
            "{e}"
        );
        let e = err(
            &format!("{{{SERVER}, proxy-url: \"http://evil:3128\"}}"),
            "{token: t}",
        );
        assert!(e.contains("uses \"proxy-url\""), "{e}");
        assert!(!e.contains("evil"), "{e}");
    }

    #[test]
    fn malformed_kubeconfigs_get_fixed_messages_without_their_text() {
        let e = parse("{secret-token-AAAA: [", "east").err().unwrap();
        assert_eq!(
            e,
            "Secret federation-system/east key \"kubeconfig\" is not a valid kubeconfig: give a \
             kubeconfig (clusters, users, contexts, current-context) as \"ubernetes join\" writes them"
        );
        let no_current =
            kubeconfig(&format!("{{{SERVER}}}"), "{token: t}").replace("current-context: m", "");
        assert!(
            parse(&no_current, "east")
                .err()
                .unwrap()
                .contains("has no current-context")
        );
        let e = err("{server: \"not a url\"}", "{token: t}");
        assert!(e.contains("has no server URL"), "{e}");
        let e = err(
            &format!("{{{SERVER}, certificate-authority-data: \"@@@\"}}"),
            "{token: t}",
        );
        assert!(
            e.contains("certificate-authority-data that is not base64"),
            "{e}"
        );
        let e = err(
            &format!(
                "{{{SERVER}, insecure-skip-tls-verify: true, certificate-authority-data: {}}}",
                b64(&cert_pem())
            ),
            "{token: t}",
        );
        assert!(e.contains("keep one"), "{e}");
        let e = err(
            &format!("{{{SERVER}}}"),
            &format!("{{client-certificate-data: {}}}", b64(&cert_pem())),
        );
        assert!(e.contains("needs both"), "{e}");
        let e = err(
            &format!("{{{SERVER}}}"),
            "{client-certificate-data: bm9wZQ==, client-key-data: bm9wZQ==}",
        );
        assert!(e.contains("not base64 of PEM"), "{e}");
    }

    #[test]
    fn the_server_address_must_be_on_a_host_of_the_kubeconfig() {
        let k = parse(&kubeconfig(&format!("{{{SERVER}}}"), "{token: t}"), "east").unwrap();
        // Another port of the same host (a proxy in front of the member).
        assert_eq!(
            k.check_server("https://127.0.0.1:7000")
                .unwrap()
                .to_string(),
            "https://127.0.0.1:7000/"
        );
        // A host the kubeconfig lists in another cluster.
        assert!(k.check_server("https://10.9.9.9:443").is_ok());
        let e = k.check_server("https://127.0.0.2:6443").err().unwrap();
        assert_eq!(
            e,
            "the server address \"https://127.0.0.2:6443\" (spec.serverAddressByClientCIDRs) is \
             not on the host of the kubeconfig's server in Secret federation-system/east \
             (\"127.0.0.1\"): the federation sends a member's credentials only to the host they \
             are for; use an address on that host, or list this server in the kubeconfig's clusters"
        );
        let e = k.check_server("http://127.0.0.1:6443").err().unwrap();
        assert!(e.contains("plain http"), "{e}");
        let e = k.check_server("not a url").err().unwrap();
        assert_eq!(
            e,
            "the server address \"not a url\" (spec.serverAddressByClientCIDRs) is not a URL \
             (https://HOST:PORT)"
        );
    }

    /// A TLS server of the dev PKI `pki` (ALPN `alpn`: `h2` and `http/1.1`
    /// as kube-apiserver) that answers every request with its HTTP version;
    /// its URL and the number of connections that served a request.
    async fn version_server(
        pki: &ubernetes_certs::Pki,
        alpn: &[&[u8]],
    ) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio_rustls::rustls;
        let certs = rustls_pemfile::certs(&mut pki.serving.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls_pemfile::private_key(&mut pki.serving.key_pem.as_bytes())
            .unwrap()
            .unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let serving = Arc::new(AtomicUsize::new(0));
        let count = serving.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let count = count.clone();
                let served = Arc::new(std::sync::atomic::AtomicBool::new(false));
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req: http::Request<_>| {
                        if !served.swap(true, Ordering::SeqCst) {
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        let version = format!("{:?}", req.version());
                        async move { Ok::<_, std::convert::Infallible>(http::Response::new(version)) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
                });
            }
        });
        (url, serving)
    }

    /// `n` GETs at once through `client`: the HTTP versions they went by.
    async fn versions(client: &kube::Client, n: usize) -> Vec<String> {
        let requests = (0..n).map(|_| {
            let client = client.clone();
            async move {
                let request = http::Request::get("/version").body(Vec::new()).unwrap();
                client.request_text(request).await.unwrap()
            }
        });
        futures::future::join_all(requests).await
    }

    /// The client of a dev kubeconfig for `url` trusting `pki`'s CA.
    fn h2_client_for(url: &str, pki: &ubernetes_certs::Pki) -> kube::Client {
        let yaml = ubernetes_certs::kubeconfig_yaml(
            url,
            &pki.ca.cert_pem,
            &pki.admin.cert_pem,
            &pki.admin.key_pem,
            "m",
        );
        let k = parse(&yaml, "m").unwrap();
        k.h2_client(k.config(None)).unwrap()
    }

    #[tokio::test]
    async fn a_member_client_sends_every_request_over_one_http2_connection() {
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().unwrap();
        let pki = ubernetes_certs::ensure_dev_pki(dir.path(), &[]).unwrap();
        let (url, serving) = version_server(&pki, &[b"h2", b"http/1.1"]).await;
        let client = h2_client_for(&url, &pki);
        // Eight at once from a cold start (the watches of a joining member),
        // then eight more.
        assert_eq!(versions(&client, 8).await, vec!["HTTP/2.0"; 8]);
        assert_eq!(versions(&client, 8).await, vec!["HTTP/2.0"; 8]);
        assert_eq!(serving.load(Ordering::SeqCst), 1, "one connection for all");

        // A server that speaks only HTTP/1.1 (a TLS-ending load balancer)
        // still works, over HTTP/1.1.
        let (url1, _) = version_server(&pki, &[b"http/1.1"]).await;
        let client1 = h2_client_for(&url1, &pki);
        assert_eq!(versions(&client1, 2).await, vec!["HTTP/1.1"; 2]);

        // The CA of the kubeconfig is still checked: another PKI's CA fails.
        let other_dir = tempfile::tempdir().unwrap();
        let other = ubernetes_certs::ensure_dev_pki(other_dir.path(), &[]).unwrap();
        let client = h2_client_for(&url, &other);
        let request = http::Request::get("/version").body(Vec::new()).unwrap();
        assert!(client.request_text(request).await.is_err());
    }
}
