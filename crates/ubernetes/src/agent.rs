//! `ubernetes agent` (SPEC §3.12): the member side of a pull-mode member.
//!
//! It opens every connection itself, so the member needs no inbound
//! reachability:
//! - **The tunnel**: `POST /apis/federation/v1beta1/clusters/NAME/tunnel`
//!   (`Connection: Upgrade`, `Upgrade: ubernetes-tunnel`) on the federation,
//!   with the agent's token (`--federation-kubeconfig`, written by `ubernetes
//!   join NAME --pull`). After the 101 the agent is an **HTTP/2 server** on
//!   that connection: each request the federation sends (its controllers'
//!   applies, watches, probes; the cluster proxy's requests with their
//!   `Impersonate-*` headers) is sent on to the member API with the
//!   member's credentials, and the answer is streamed back (a watch stays
//!   open). Upgrades (exec, attach, port-forward) arrive as HTTP/2
//!   extended CONNECT and are made as HTTP/1.1 upgrades to the member,
//!   then spliced ([`forward_upgrade`]). The member credentials never leave
//!   the agent. A closed tunnel is opened again with backoff (1 s doubling
//!   to 30 s). With `--federation-server` given several times (one per
//!   federation replica) the agent keeps one tunnel to each.
//! - **The Lease** `federation-system/NAME`, renewed every 10 s
//!   (`--lease-renew-interval`) through the first replica that answers; the federation counts the Cluster
//!   unreachable when it is 40 s old (its `--cluster-lease-duration`).
//!
//! Member credentials: `--kubeconfig`/`--context` when given, else the
//! in-cluster service account, else `$KUBECONFIG` (or `~/.kube/config`).
//! The member client has no read timeout (watches) and no retries (the
//! member's answers go back as they are).
//!
//! No cache, no controller: the federation decides everything (the same
//! code as for a push member); the agent only carries it.

use std::convert::Infallible;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use http::header::{self, HeaderMap, HeaderValue};
use http_body_util::BodyExt as _;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use ubernetes_federation::pull::{
    KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, LEASE_LAPSE, TUNNEL_PROTOCOL, UPGRADE_HEADER,
    UPGRADE_METHOD_HEADER,
};

/// `ubernetes agent`.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentArgs {
    /// The member's Cluster name in the federation (as given to `ubernetes
    /// join NAME --pull`).
    #[arg(long = "cluster", value_name = "NAME")]
    pub cluster: String,
    /// The agent's kubeconfig for the federation (what `join --pull
    /// --agent-kubeconfig-out` wrote): the federation's server, CA and the
    /// agent's token, which may open only this cluster's tunnel and renew
    /// only its Lease.
    #[arg(long = "federation-kubeconfig", value_name = "FILE")]
    pub federation_kubeconfig: PathBuf,
    /// Context of the federation in --federation-kubeconfig (default: its
    /// current context).
    #[arg(long = "federation-context", value_name = "CONTEXT")]
    pub federation_context: Option<String>,
    /// A federation API server replica to keep a tunnel to (repeatable;
    /// default: the server of --federation-kubeconfig). With several
    /// `ubernetes serve` replicas, name every one: each replica's cluster
    /// proxy and, on the leader, the federation controllers use the tunnel
    /// the agent keeps to that replica, so a leader change needs no
    /// reconnect. The CA and token of --federation-kubeconfig are used for
    /// each (the replicas share one PKI).
    #[arg(long = "federation-server", value_name = "URL")]
    pub federation_servers: Vec<String>,
    /// Kubeconfig with the member's credentials (default: the in-cluster
    /// service account when running in a pod, else $KUBECONFIG or
    /// ~/.kube/config). The account must be allowed what the federation
    /// does in the member (every verb on every resource, and to impersonate
    /// for the cluster proxy: deploy/agent.yaml binds cluster-admin).
    #[arg(long = "kubeconfig", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the member in that kubeconfig (default: its current context).
    #[arg(long = "context", value_name = "CONTEXT")]
    pub context: Option<String>,
    /// How often the agent renews its Lease (Go duration syntax). Keep it
    /// well under the federation's --cluster-lease-duration (40s), after
    /// which the cluster counts as unreachable.
    #[arg(
        long = "lease-renew-interval",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = ubernetes_apimachinery::duration::parse_duration
    )]
    pub lease_renew_interval: Duration,
}

/// The member client (see the module documentation).
async fn member_client(args: &AgentArgs) -> anyhow::Result<Client> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = match (&args.kubeconfig, &args.context) {
        (Some(path), _) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read --kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("cannot use --kubeconfig {}", path.display()))?
        }
        (None, Some(_)) => Config::from_kubeconfig(&options)
            .await
            .context("cannot use --context with $KUBECONFIG or ~/.kube/config")?,
        (None, None) => match Config::incluster() {
            Ok(config) => {
                tracing::info!("member credentials: the in-cluster service account");
                config
            }
            Err(_) => Config::from_kubeconfig(&options).await.context(
                "no member credentials: not in a pod, and $KUBECONFIG or ~/.kube/config is unusable (pass --kubeconfig)",
            )?,
        },
    };
    config.read_timeout = None;
    config.default_retry = false;
    nodelay_client(config).context("cannot build the member client")
}

/// A kube client for `config` whose TCP connections set `TCP_NODELAY`
/// (kube's own connector does not). The agent relays small HTTP/2 frames
/// (a response's HEADERS, then its DATA) and small requests: with Nagle's
/// algorithm on, a second small write waits for the peer's ACK, which a
/// delayed ACK holds up to 40 ms, so every relayed request paid ~40 ms
/// (issue 24's bench: single object p50 68 ms pull vs 21 ms push). The
/// same layers as kube's default stack (base URI, credentials, extra
/// headers), without its timeouts (both clients turn them off) and
/// retries (the member client turns them off; the federation client sends
/// only the tunnel upgrade). Through a configured proxy
/// (`proxy-url`) kube's stack is used as it is.
fn nodelay_client(config: Config) -> anyhow::Result<Client> {
    use kube::client::ConfigExt as _;
    if config.proxy_url.is_some() {
        tracing::info!(server = %config.cluster_url, "through the kubeconfig's proxy-url (kube's connector)");
        return Ok(Client::try_from(config)?);
    }
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let https = config.rustls_https_connector_with_connector(http)?;
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https);
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(hyper);
    Ok(Client::new(service, config.default_namespace))
}

/// The federation clients (the agent's own identity), one per replica:
/// `(server, client)`.
async fn federation_clients(args: &AgentArgs) -> anyhow::Result<Vec<(String, Client)>> {
    let path = &args.federation_kubeconfig;
    let kc = Kubeconfig::read_from(path)
        .with_context(|| format!("cannot read --federation-kubeconfig {}", path.display()))?;
    let mut config = Config::from_custom_kubeconfig(
        kc,
        &KubeConfigOptions {
            context: args.federation_context.clone(),
            ..KubeConfigOptions::default()
        },
    )
    .await
    .with_context(|| format!("cannot use --federation-kubeconfig {}", path.display()))?;
    // The tunnel is one long-lived connection: HTTP/2 pings keep it.
    config.read_timeout = None;
    config.write_timeout = None;
    if args.federation_servers.is_empty() {
        let server = config.cluster_url.to_string();
        let client = nodelay_client(config).context("cannot build the federation client")?;
        return Ok(vec![(server, client)]);
    }
    let mut clients = Vec::with_capacity(args.federation_servers.len());
    for server in &args.federation_servers {
        let mut config = config.clone();
        config.cluster_url = server
            .parse()
            .with_context(|| format!("--federation-server {server:?} is not a URL"))?;
        let client = nodelay_client(config)
            .with_context(|| format!("cannot build the federation client for {server}"))?;
        clients.push((server.clone(), client));
    }
    Ok(clients)
}

/// Run the agent until SIGTERM/SIGINT.
pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    let member = member_client(&args).await?;
    let feds = federation_clients(&args).await?;
    let name = args.cluster.clone();
    let servers: Vec<&str> = feds.iter().map(|(s, _)| s.as_str()).collect();
    tracing::info!(cluster = %name, ?servers, "agent starting");
    let lease = tokio::spawn(renew_lease(
        feds.iter().map(|(_, c)| c.clone()).collect(),
        name.clone(),
        args.lease_renew_interval,
    ));
    // One tunnel per replica, each kept open on its own.
    let mut tunnels = tokio::task::JoinSet::new();
    for (server, fed) in feds {
        tunnels.spawn(tunnel_loop(fed, member.clone(), name.clone(), server));
    }
    shutdown().await;
    tracing::info!(cluster = %name, "agent stopping");
    tunnels.abort_all();
    lease.abort();
    Ok(())
}

async fn shutdown() {
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// Renew the Lease every `every` through the first replica of `feds` that
/// answers, the last one that did first (they share one store); a failure
/// is logged and retried.
async fn renew_lease(feds: Vec<Client>, name: String, every: Duration) {
    let leases: Vec<Api<Lease>> = feds
        .into_iter()
        .map(|fed| Api::namespaced(fed, ubernetes_api::FEDERATION_NAMESPACE))
        .collect();
    let mut first = 0;
    let holder = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("agent-{name}"));
    let mut ticks = tokio::time::interval(every.max(Duration::from_millis(100)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(jiff::Timestamp::now());
        let patch = json!({"spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": LEASE_LAPSE.as_secs().max(every.as_secs() * 4),
            "renewTime": now,
        }});
        let mut renewed = false;
        for i in (0..leases.len()).map(|k| (first + k) % leases.len()) {
            match leases[i]
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    tracing::debug!(cluster = %name, "lease renewed");
                    first = i;
                    renewed = true;
                    break;
                }
                Err(e) => tracing::warn!(cluster = %name, error = %e, "cannot renew the lease"),
            }
        }
        if !renewed {
            tracing::warn!(cluster = %name, "no federation replica renewed the lease");
        }
    }
}

/// Open the tunnel to the replica `server`, serve it until it closes, open
/// it again with backoff.
async fn tunnel_loop(fed: Client, member: Client, name: String, server: String) {
    let mut backoff = Duration::from_secs(1);
    loop {
        let started = Instant::now();
        match serve_tunnel(&fed, &member, &name).await {
            Ok(()) => tracing::info!(cluster = %name, %server, "tunnel closed"),
            Err(e) => {
                tracing::warn!(cluster = %name, %server, error = %format!("{e:#}"), "tunnel failed");
            }
        }
        if started.elapsed() > Duration::from_secs(30) {
            backoff = Duration::from_secs(1);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

/// One tunnel: the upgrade, then the HTTP/2 server until the connection ends.
async fn serve_tunnel(fed: &Client, member: &Client, name: &str) -> anyhow::Result<()> {
    let request = http::Request::post(format!("/apis/federation/v1beta1/clusters/{name}/tunnel"))
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, TUNNEL_PROTOCOL)
        .body(kube::client::Body::empty())?;
    let mut response = fed
        .send(request)
        .await
        .context("cannot reach the federation")?;
    if response.status() != http::StatusCode::SWITCHING_PROTOCOLS {
        let status = response.status();
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        bail!(
            "the federation refused the tunnel: {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let upgraded = hyper::upgrade::on(&mut response)
        .await
        .map_err(|e| anyhow!("the tunnel did not start: {e}"))?;
    tracing::info!(cluster = %name, "tunnel open");
    let member = member.clone();
    let service = hyper::service::service_fn(move |request| forward(member.clone(), request));
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .max_concurrent_streams(10_000)
        .adaptive_window(true)
        // Upgrades (exec, attach, port-forward) come as extended CONNECT.
        .enable_connect_protocol();
    builder
        .serve_connection(upgraded, service)
        .await
        .map_err(|e| anyhow!("{e}"))
}

/// Headers never forwarded: hop-by-hop ones (the cluster proxy's list),
/// and the federation side's `Host` and `Authorization` (the member
/// client sets its own).
fn dropped(name: &http::HeaderName) -> bool {
    ubernetes_apiserver::proxy::HOP_BY_HOP.contains(&name.as_str())
        || name == header::HOST
        || name == header::AUTHORIZATION
        || name == header::CONTENT_LENGTH
}

fn without_hop_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if !dropped(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Send one request from the federation on to the member; an error is a
/// Kubernetes `Status` (502 when the member cannot be reached).
async fn forward(
    member: Client,
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<kube::client::Body>, Infallible> {
    if request.method() == http::Method::CONNECT && request.headers().contains_key(UPGRADE_HEADER) {
        return Ok(forward_upgrade(member, request).await);
    }
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(status(
                400,
                "BadRequest",
                &format!("reading the request: {e}"),
            ));
        }
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut out = http::Request::new(kube::client::Body::from(body.to_vec()));
    *out.method_mut() = parts.method;
    *out.headers_mut() = without_hop_headers(&parts.headers);
    match path.parse() {
        Ok(uri) => *out.uri_mut() = uri,
        Err(e) => {
            return Ok(status(
                400,
                "BadRequest",
                &format!("invalid path {path:?}: {e}"),
            ));
        }
    }
    tracing::debug!(method = %out.method(), %path, "forwarding to the member");
    match member.send(out).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            parts.headers = without_hop_headers(&parts.headers);
            Ok(http::Response::from_parts(parts, body))
        }
        Err(e) => Ok(status(
            502,
            "ServiceUnavailable",
            &format!("the agent cannot reach its member: {e}"),
        )),
    }
}

/// An upgrade the cluster proxy sends over the tunnel (exec, attach,
/// port-forward, cp) as an HTTP/2 extended CONNECT: the member gets the
/// HTTP/1.1 upgrade request it stands for (the original method from
/// [`UPGRADE_METHOD_HEADER`], `Connection: Upgrade` and `Upgrade:` from
/// [`UPGRADE_HEADER`], path, query and the other headers, the
/// `Impersonate-*` ones included) with the member credentials. Its `101`
/// becomes this stream's `200` with the member's handshake headers
/// (`Sec-WebSocket-Accept`, `Sec-WebSocket-Protocol`,
/// `X-Stream-Protocol-Version`, …) and [`UPGRADE_HEADER`] naming the
/// protocol it switched to; then the CONNECT stream and the member's
/// upgraded connection are spliced both ways until either side closes. Any
/// other answer of the member goes back unchanged.
async fn forward_upgrade(
    member: Client,
    mut request: http::Request<hyper::body::Incoming>,
) -> http::Response<kube::client::Body> {
    let tunnel_side = hyper::upgrade::on(&mut request);
    let (parts, _) = request.into_parts();
    let Some(protocol) = parts.headers.get(UPGRADE_HEADER).cloned() else {
        return status(400, "BadRequest", "an upgrade without its protocol");
    };
    let method = parts
        .headers
        .get(UPGRADE_METHOD_HEADER)
        .and_then(|m| http::Method::from_bytes(m.as_bytes()).ok())
        .unwrap_or(http::Method::GET);
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut out = http::Request::new(kube::client::Body::empty());
    *out.method_mut() = method;
    let mut headers = without_hop_headers(&parts.headers);
    headers.remove(UPGRADE_HEADER);
    headers.remove(UPGRADE_METHOD_HEADER);
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(header::UPGRADE, protocol.clone());
    *out.headers_mut() = headers;
    match path.parse() {
        Ok(uri) => *out.uri_mut() = uri,
        Err(e) => return status(400, "BadRequest", &format!("invalid path {path:?}: {e}")),
    }
    tracing::debug!(method = %out.method(), %path, ?protocol, "upgrade to the member");
    let mut response = match member.send(out).await {
        Ok(response) => response,
        Err(e) => {
            return status(
                502,
                "ServiceUnavailable",
                &format!("the agent cannot reach its member: {e}"),
            );
        }
    };
    if response.status() != http::StatusCode::SWITCHING_PROTOCOLS {
        let (mut parts, body) = response.into_parts();
        parts.headers = without_hop_headers(&parts.headers);
        return http::Response::from_parts(parts, body);
    }
    let member_side = hyper::upgrade::on(&mut response);
    let mut ok = http::Response::new(kube::client::Body::empty());
    *ok.headers_mut() = without_hop_headers(response.headers());
    let switched = response
        .headers()
        .get(header::UPGRADE)
        .cloned()
        .unwrap_or(protocol);
    ok.headers_mut().insert(UPGRADE_HEADER, switched);
    tokio::spawn(async move {
        let (tunnel, member) = match tokio::try_join!(tunnel_side, member_side) {
            Ok(both) => both,
            Err(e) => {
                tracing::debug!(%path, error = %e, "an upgraded connection did not start");
                return;
            }
        };
        let mut tunnel = hyper_util::rt::TokioIo::new(tunnel);
        let mut member = hyper_util::rt::TokioIo::new(member);
        match tokio::io::copy_bidirectional(&mut tunnel, &mut member).await {
            Ok((up, down)) => tracing::debug!(%path, up, down, "upgraded connection closed"),
            Err(e) => tracing::debug!(%path, error = %e, "upgraded connection ended"),
        }
    });
    ok
}

/// A Kubernetes `Status` answer.
fn status(code: u16, reason: &str, message: &str) -> http::Response<kube::client::Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code});
    let mut response = http::Response::new(kube::client::Body::from(body.to_string().into_bytes()));
    *response.status_mut() =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::BAD_GATEWAY);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_and_credentials_are_not_forwarded() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        h.insert(header::HOST, HeaderValue::from_static("edge.tunnel"));
        h.insert("impersonate-user", HeaderValue::from_static("bob"));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let out = without_hop_headers(&h);
        assert_eq!(out.len(), 2);
        assert_eq!(out["impersonate-user"], "bob");
        assert!(out.get(header::AUTHORIZATION).is_none());
    }

    /// The nodelay client keeps kube's layers: the server's base path and
    /// the kubeconfig's extra headers (impersonation) reach the server.
    #[tokio::test]
    async fn the_nodelay_client_keeps_kubes_layers() -> anyhow::Result<()> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/base", listener.local_addr()?);
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await?;
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
            }
            socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                .await?;
            anyhow::Ok(String::from_utf8_lossy(&seen).to_lowercase())
        });
        let mut config = Config::new(url.parse()?);
        config.auth_info.impersonate = Some("bob".to_string());
        let client = nodelay_client(config)?;
        let response = client
            .send(http::Request::get("/api/v1/x").body(kube::client::Body::empty())?)
            .await?;
        assert_eq!(response.status(), 200);
        let seen = server.await??;
        assert!(seen.starts_with("get /base/api/v1/x http/1.1"), "{seen}");
        assert!(seen.contains("impersonate-user: bob"), "{seen}");
        Ok(())
    }

    #[test]
    fn errors_are_kubernetes_statuses() {
        let r = status(502, "ServiceUnavailable", "down");
        assert_eq!(r.status(), 502);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}
