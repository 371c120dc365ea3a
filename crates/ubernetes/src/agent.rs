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
//!   open). The member credentials never leave the agent. A closed tunnel
//!   is opened again with backoff (1 s doubling to 30 s).
//! - **The Lease** `federation-system/NAME`, renewed every 10 s
//!   (`--lease-renew-interval`); the federation counts the Cluster
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
    KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT, LEASE_LAPSE, TUNNEL_PROTOCOL,
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
    Client::try_from(config).context("cannot build the member client")
}

/// The federation client (the agent's own identity).
async fn federation_client(args: &AgentArgs) -> anyhow::Result<Client> {
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
    Client::try_from(config).context("cannot build the federation client")
}

/// Run the agent until SIGTERM/SIGINT.
pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    let member = member_client(&args).await?;
    let fed = federation_client(&args).await?;
    let name = args.cluster.clone();
    tracing::info!(cluster = %name, "agent starting");
    let lease = tokio::spawn(renew_lease(
        fed.clone(),
        name.clone(),
        args.lease_renew_interval,
    ));
    let tunnel = tunnel_loop(fed, member, name.clone());
    tokio::select! {
        () = tunnel => {}
        () = shutdown() => tracing::info!(cluster = %name, "agent stopping"),
    }
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

/// Renew the Lease every `every` (a failure is logged and retried).
async fn renew_lease(fed: Client, name: String, every: Duration) {
    let leases: Api<Lease> = Api::namespaced(fed, ubernetes_api::FEDERATION_NAMESPACE);
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
        match leases
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::debug!(cluster = %name, "lease renewed"),
            Err(e) => tracing::warn!(cluster = %name, error = %e, "cannot renew the lease"),
        }
    }
}

/// Open the tunnel, serve it until it closes, open it again with backoff.
async fn tunnel_loop(fed: Client, member: Client, name: String) {
    let mut backoff = Duration::from_secs(1);
    loop {
        let started = Instant::now();
        match serve_tunnel(&fed, &member, &name).await {
            Ok(()) => tracing::info!(cluster = %name, "tunnel closed"),
            Err(e) => tracing::warn!(cluster = %name, error = %format!("{e:#}"), "tunnel failed"),
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
        .adaptive_window(true);
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

    #[test]
    fn errors_are_kubernetes_statuses() {
        let r = status(502, "ServiceUnavailable", "down");
        assert_eq!(r.status(), 502);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}
