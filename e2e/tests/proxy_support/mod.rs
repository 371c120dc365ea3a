//! Helpers shared by the cluster-proxy suites (`federation_member_views.rs`,
//! `federation_pull_upgrades.rs`): `ubernetes kubeconfig --members` and
//! kubectl with a context, WebSocket frames, and the echo member (a small
//! HTTP server speaking kube's `v5.channel.k8s.io` exec, SPDY echo and a
//! slowly streamed log). Not every suite uses every helper.
#![allow(dead_code)] // included by several test crates, each using a subset

use std::convert::Infallible;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use ubernetes_e2e::Server;

// ------------------------------------------------------------- kubeconfig

/// Copy `host`'s admin kubeconfig into `dir` and run `ubernetes kubeconfig
/// --members --kubeconfig` on the copy; its path.
pub fn member_kubeconfig(host: &Server, dir: &Path) -> Result<PathBuf> {
    let path = dir.join("kubeconfig");
    std::fs::copy(host.kubeconfig(), &path)?;
    let out = Command::new(ubernetes_e2e::ubernetes_bin())
        .args(["kubeconfig", "--members", "--kubeconfig"])
        .arg(&path)
        .env_remove("KUBECONFIG")
        .output()
        .context("running ubernetes kubeconfig (cargo build -p ubernetes)")?;
    if !out.status.success() {
        bail!(
            "ubernetes kubeconfig --members: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(path)
}

/// kubectl with `kubeconfig` and `context`.
pub fn kubectl_cmd(kubeconfig: &Path, context: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(ubernetes_e2e::kubectl_bin());
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--context", context])
        .args(args)
        .env(
            "KUBECACHEDIR",
            kubeconfig.with_file_name(format!("cache-{context}")),
        )
        .env_remove("KUBECONFIG");
    cmd
}

pub fn kubectl(kubeconfig: &Path, context: &str, args: &[&str]) -> Result<Output> {
    kubectl_cmd(kubeconfig, context, args)
        .output()
        .context("running kubectl (set $KUBECTL)")
}

/// kubectl with `stdin` as its input.
pub fn kubectl_stdin(
    kubeconfig: &Path,
    context: &str,
    args: &[&str],
    stdin: &[u8],
) -> Result<Output> {
    let mut child = kubectl_cmd(kubeconfig, context, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running kubectl (set $KUBECTL)")?;
    child.stdin.take().context("stdin")?.write_all(stdin)?;
    Ok(child.wait_with_output()?)
}

pub fn kubectl_ok(kubeconfig: &Path, context: &str, args: &[&str]) -> Result<String> {
    ubernetes_e2e::check(args, kubectl(kubeconfig, context, args)?)
}

pub fn names(list: &str) -> Result<Vec<String>> {
    let list: Value = serde_json::from_str(list).with_context(|| format!("not JSON: {list}"))?;
    Ok(list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

// ------------------------------------------------------------- websocket

/// A WebSocket frame (RFC 6455 §5.2): FIN set, `opcode`, masked with `mask`
/// (a client's) or not (a server's).
pub fn encode_frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    let bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n @ 0..=125 => out.push(bit | n as u8),
        n @ 126..=0xffff => {
            out.push(bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(m) => {
            out.extend_from_slice(&m);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ m[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

/// The next frame `(opcode, payload)`, unmasked; `None` at end of stream.
pub async fn read_frame(
    r: &mut (impl AsyncRead + Unpin),
) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 2];
    match r.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let opcode = head[0] & 0x0f;
    let masked = head[1] & 0x80 != 0;
    let len = match head[1] & 0x7f {
        126 => u64::from(r.read_u16().await?),
        127 => r.read_u64().await?,
        n => u64::from(n),
    };
    let mut mask = [0u8; 4];
    if masked {
        r.read_exact(&mut mask).await?;
    }
    let mut payload = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    r.read_exact(&mut payload).await?;
    if masked {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= mask[i % 4];
        }
    }
    Ok(Some((opcode, payload)))
}

/// `Sec-WebSocket-Accept` for `key` (RFC 6455 §4.2.2).
pub fn websocket_accept(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

// ------------------------------------------------------------ echo member

/// A member that is a small HTTP server: healthy, a Pod `x/p`, kube's
/// WebSocket exec (`v5.channel.k8s.io`) that echoes stdin on stdout, and a
/// log that streams three lines 800 ms apart.
pub struct EchoMember {
    pub port: u16,
    /// The headers of every exec request it received.
    pub execs: Arc<Mutex<Vec<http::HeaderMap>>>,
    _runtime: tokio::runtime::Runtime,
}

pub type EchoBody = BoxBody<Bytes, Infallible>;

/// The bearer token the federation's kubeconfig for the echo member holds.
pub const ECHO_TOKEN: &str = "echo-member-token";

impl EchoMember {
    pub fn start() -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
        let port = listener.local_addr()?.port();
        let execs = Arc::new(Mutex::new(Vec::new()));
        let seen = execs.clone();
        runtime.spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let seen = seen.clone();
                        async move { Ok::<_, Infallible>(Self::handle(req, &seen)) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Ok(Self {
            port,
            execs,
            _runtime: runtime,
        })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: echo\n  cluster: {{server: \"{}\"}}\n\
             users:\n- name: echo\n  user: {{token: {ECHO_TOKEN}}}\ncontexts:\n- name: echo\n  \
             context: {{cluster: echo, user: echo}}\ncurrent-context: echo\n",
            self.url()
        )
    }

    fn handle(
        mut req: http::Request<hyper::body::Incoming>,
        execs: &Mutex<Vec<http::HeaderMap>>,
    ) -> http::Response<EchoBody> {
        let json_response = |status: u16, body: Value| {
            http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())).boxed())
                .unwrap_or_default()
        };
        match req.uri().path() {
            "/readyz" | "/healthz" | "/livez" => {
                http::Response::new(Full::new(Bytes::from_static(b"ok")).boxed())
            }
            "/version" => json_response(
                200,
                json!({"major": "1", "minor": "36", "gitVersion": "v1.36.0-echo",
                       "platform": "linux/amd64"}),
            ),
            "/api" => json_response(
                200,
                json!({"kind": "APIVersions", "versions": ["v1"],
                       "serverAddressByClientCIDRs": [
                           {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
            ),
            "/apis" => json_response(
                200,
                json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": []}),
            ),
            "/api/v1" => json_response(
                200,
                json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                    {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
                     "verbs": ["get", "list"], "shortNames": ["po"]},
                    {"name": "pods/exec", "singularName": "", "namespaced": true,
                     "kind": "PodExecOptions", "verbs": ["create", "get"]},
                    {"name": "pods/log", "singularName": "", "namespaced": true,
                     "kind": "Pod", "verbs": ["get"]}]}),
            ),
            "/api/v1/namespaces/x/pods/p" => json_response(
                200,
                json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "p", "namespace": "x", "uid": "echo-pod"},
                       "spec": {"containers": [{"name": "c", "image": "echo"}]},
                       "status": {"phase": "Running"}}),
            ),
            "/api/v1/namespaces/x/pods/p/log" => {
                let lines = futures::stream::unfold(0u32, |i| async move {
                    if i == 3 {
                        return None;
                    }
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(800)).await;
                    }
                    let line = Frame::data(Bytes::from(format!("line {i}\n")));
                    Some((Ok::<_, Infallible>(line), i + 1))
                });
                http::Response::builder()
                    .header("content-type", "text/plain")
                    .body(StreamBody::new(lines).boxed())
                    .unwrap_or_default()
            }
            "/api/v1/namespaces/x/pods/p/exec" => {
                if let Ok(mut seen) = execs.lock() {
                    seen.push(req.headers().clone());
                }
                let header = |n: &str| {
                    req.headers()
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string()
                };
                if header("upgrade").eq_ignore_ascii_case("SPDY/3.1") {
                    // SPDY: the proxy reads none of it, so raw bytes echoed.
                    let upgrade = hyper::upgrade::on(&mut req);
                    tokio::spawn(async move {
                        if let Ok(io) = upgrade.await {
                            let (mut r, mut w) = tokio::io::split(TokioIo::new(io));
                            let _ = tokio::io::copy(&mut r, &mut w).await;
                            let _ = w.shutdown().await;
                        }
                    });
                    return http::Response::builder()
                        .status(101)
                        .header("connection", "Upgrade")
                        .header("upgrade", "SPDY/3.1")
                        .header("x-stream-protocol-version", "v4.channel.k8s.io")
                        .body(Full::new(Bytes::new()).boxed())
                        .unwrap_or_default();
                }
                let offered = header("sec-websocket-protocol");
                if !header("upgrade").eq_ignore_ascii_case("websocket")
                    || !offered.split(',').any(|p| p.trim() == "v5.channel.k8s.io")
                {
                    return json_response(
                        400,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": "echo: only WebSocket v5.channel.k8s.io", "code": 400}),
                    );
                }
                let accept = websocket_accept(&header("sec-websocket-key"));
                let upgrade = hyper::upgrade::on(&mut req);
                tokio::spawn(async move {
                    if let Ok(io) = upgrade.await {
                        let _ = echo_exec(TokioIo::new(io)).await;
                    }
                });
                http::Response::builder()
                    .status(101)
                    .header("connection", "Upgrade")
                    .header("upgrade", "websocket")
                    .header("sec-websocket-accept", accept)
                    .header("sec-websocket-protocol", "v5.channel.k8s.io")
                    .body(Full::new(Bytes::new()).boxed())
                    .unwrap_or_default()
            }
            _ => json_response(
                404,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": "the server could not find the requested resource",
                       "reason": "NotFound", "code": 404}),
            ),
        }
    }
}

/// kube's remote command over WebSocket, v5: stdin (channel 0) comes back
/// on stdout (1); stdin's close (255, [0]) ends it with a Success status on
/// the error channel (3) and a close frame.
pub async fn echo_exec(mut io: impl AsyncRead + AsyncWrite + Unpin) -> std::io::Result<()> {
    while let Some((opcode, payload)) = read_frame(&mut io).await? {
        match opcode {
            0x8 => {
                io.write_all(&encode_frame(0x8, &payload, None)).await?;
                break;
            }
            0x9 => io.write_all(&encode_frame(0xA, &payload, None)).await?,
            0x1 | 0x2 => match payload.split_first() {
                Some((0, data)) => {
                    let mut out = vec![1];
                    out.extend_from_slice(data);
                    io.write_all(&encode_frame(0x2, &out, None)).await?;
                }
                Some((255, [0])) => {
                    let mut status = vec![3];
                    status.extend_from_slice(br#"{"metadata":{},"status":"Success"}"#);
                    io.write_all(&encode_frame(0x2, &status, None)).await?;
                    io.write_all(&encode_frame(0x8, &1000u16.to_be_bytes(), None))
                        .await?;
                }
                _ => {}
            },
            _ => {}
        }
        io.flush().await?;
    }
    Ok(())
}

/// A kube client with `server`'s admin credentials, without retries.
pub async fn admin_client(server: &Server) -> Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig())?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// The handshake of kubectl's exec over WebSocket, for `path`.
pub fn exec_request(
    path: &str,
    extra: &[(&str, &str)],
) -> Result<http::Request<kube::client::Body>> {
    let mut req = http::Request::get(path)
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header(
            "sec-websocket-protocol",
            "v5.channel.k8s.io, v4.channel.k8s.io",
        );
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    Ok(req.body(kube::client::Body::empty())?)
}

/// `(status, body)` of `req` sent with `host`'s admin credentials.
pub async fn answer(
    host: &Server,
    req: http::Request<kube::client::Body>,
) -> Result<(u16, String)> {
    let response = admin_client(host).await?.send(req).await?;
    let code = response.status().as_u16();
    let body = response.into_body().collect_bytes().await?;
    Ok((code, String::from_utf8_lossy(&body).into_owned()))
}

// ------------------------------------------------------- upgrade checks

/// A WebSocket exec through `host`'s proxy path `exec` to the echo member
/// (as the admin): 101 with the member's handshake answer, a small frame
/// and a 200 kB one with every byte value come back, then the status on
/// channel 3 and the member's close; the member saw the handshake
/// unchanged, the caller impersonated and its own token as credentials.
pub fn websocket_exec_round_trip(host: &Server, echo: &EchoMember, exec: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = admin_client(host).await?;
        let mut response = client.send(exec_request(exec, &[])?).await?;
        assert_eq!(response.status(), 101);
        let header = |n: &str| {
            response
                .headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        assert_eq!(header("sec-websocket-protocol"), "v5.channel.k8s.io");
        assert_eq!(
            header("sec-websocket-accept"),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert!(header("upgrade").eq_ignore_ascii_case("websocket"));
        let mut io = TokioIo::new(hyper::upgrade::on(&mut response).await?);
        let mask = Some([1, 2, 3, 4]);
        io.write_all(&encode_frame(0x2, b"\0hello", mask)).await?;
        let (op, payload) = read_frame(&mut io).await?.context("no echo")?;
        assert_eq!((op, payload.as_slice()), (0x2, &b"\x01hello"[..]));
        // A frame larger than any one read, with every byte value.
        let mut big = vec![0u8];
        big.extend((0..200_000u32).map(|i| (i % 251) as u8));
        io.write_all(&encode_frame(0x2, &big, mask)).await?;
        let (_, payload) = read_frame(&mut io).await?.context("no big echo")?;
        assert_eq!(payload.len(), big.len());
        assert_eq!(payload[0], 1);
        assert!(payload[1..] == big[1..], "the big frame came back changed");
        // Stdin closed: the status on channel 3, then the member's close.
        io.write_all(&encode_frame(0x2, &[255, 0], mask)).await?;
        let (_, status) = read_frame(&mut io).await?.context("no status")?;
        assert_eq!(status[0], 3);
        assert!(
            String::from_utf8_lossy(&status).contains("Success"),
            "{status:?}"
        );
        let (op, _) = read_frame(&mut io).await?.context("no close")?;
        assert_eq!(op, 0x8);
        anyhow::Ok(())
    })?;
    let seen = echo.execs.lock().map(|s| s.clone()).unwrap_or_default();
    let first = seen.last().context("the echo member saw no exec")?;
    let all = |n: &str| -> Vec<String> {
        first
            .get_all(n)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    // The handshake passed unchanged; the caller is impersonated with the
    // federation's credentials for the member.
    assert_eq!(
        all("sec-websocket-protocol"),
        ["v5.channel.k8s.io, v4.channel.k8s.io"]
    );
    assert_eq!(all("sec-websocket-key"), ["dGhlIHNhbXBsZSBub25jZQ=="]);
    assert_eq!(all("sec-websocket-version"), ["13"]);
    assert_eq!(all("impersonate-user"), ["ubernetes-admin"]);
    assert!(
        all("impersonate-group").contains(&"system:masters".to_string()),
        "{first:?}"
    );
    assert_eq!(all("authorization"), [format!("Bearer {ECHO_TOKEN}")]);
    Ok(())
}

/// SPDY/3.1 (kubectl's fallback) through `exec`: the member's 101 and its
/// `X-Stream-Protocol-Version`, raw bytes both ways, the caller
/// impersonated.
pub fn spdy_exec_round_trip(host: &Server, echo: &EchoMember, exec: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // SPDY/3.1 (kubectl's fallback) passes too, bytes both ways.
    let echoed = rt.block_on(async {
        let client = admin_client(host).await?;
        let req = http::Request::post(exec)
            .header("connection", "Upgrade")
            .header("upgrade", "SPDY/3.1")
            .header("x-stream-protocol-version", "v4.channel.k8s.io")
            .header("x-stream-protocol-version", "v3.channel.k8s.io")
            .body(kube::client::Body::empty())?;
        let mut response = client.send(req).await?;
        assert_eq!(response.status(), 101);
        assert_eq!(
            response.headers().get("x-stream-protocol-version"),
            Some(&http::HeaderValue::from_static("v4.channel.k8s.io"))
        );
        let mut io = TokioIo::new(hyper::upgrade::on(&mut response).await?);
        io.write_all(b"\x80\x03\x00\x01 spdy frames, unread by the proxy")
            .await?;
        io.shutdown().await?;
        let mut back = Vec::new();
        io.read_to_end(&mut back).await?;
        anyhow::Ok(back)
    })?;
    assert_eq!(echoed, b"\x80\x03\x00\x01 spdy frames, unread by the proxy");
    let spdy = echo.execs.lock().map(|s| s.clone()).unwrap_or_default();
    let spdy = spdy.last().context("the echo member saw no SPDY exec")?;
    assert_eq!(spdy.get_all("x-stream-protocol-version").iter().count(), 2);
    assert_eq!(spdy["impersonate-user"], "ubernetes-admin");
    Ok(())
}

/// The echo member refuses an exec without `v5.channel.k8s.io`: its 400
/// arrives through `exec` unchanged.
pub fn member_refusal_arrives_unchanged(host: &Server, exec: &str) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // A member refusing the upgrade: its answer, unchanged.
    let mut v4_only = exec_request(exec, &[])?;
    v4_only.headers_mut().insert(
        "sec-websocket-protocol",
        http::HeaderValue::from_static("v4.channel.k8s.io"),
    );
    let (code, body) = rt.block_on(answer(host, v4_only))?;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body)?["message"],
        "echo: only WebSocket v5.channel.k8s.io"
    );
    Ok(())
}

/// A pod `default/p` in the real kube-apiserver `kube` (Running, but no
/// kubelet: kube.sh has none), then `kubectl exec`, `attach` and
/// `port-forward` on it through `context` of `kc` (`federation@NAME`) get
/// kube-apiserver's own answer, the same words as straight at the member.
pub fn real_upgrade_answers_arrive_unchanged(
    kube: &ubernetes_e2e::real_kube::KubeCluster,
    kc: &Path,
    context: &str,
    dir: &Path,
) -> Result<()> {
    let real_ok = |args: &[&str]| ubernetes_e2e::check(args, kube.kubectl(args)?);
    // kube.sh's member gets a default ServiceAccount only from the
    // controller manager (`--kcm`); with it, the create may find it made.
    let _ = kube.kubectl(&["create", "serviceaccount", "default", "-n", "default"])?;
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"automountServiceAccountToken": false,
                 "containers": [{"name": "c", "image": "busybox"}]}});
    let pod_file = dir.join("pod.json");
    std::fs::write(&pod_file, pod.to_string())?;
    real_ok(&["create", "-f", &pod_file.to_string_lossy()])?;
    // Through the federation the pod is the member's.
    let uid = [
        "get",
        "pod",
        "p",
        "-n",
        "default",
        "-o",
        "jsonpath={.metadata.uid}",
    ];
    let through = kubectl_ok(kc, context, &uid)?;
    let direct = real_ok(&uid)?;
    assert_eq!(through, direct);

    // port-forward and attach ask kubectl for a running pod first: the
    // member says so (no kubelet will).
    real_ok(&[
        "patch",
        "pod",
        "p",
        "-n",
        "default",
        "--subresource=status",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ])?;
    for command in [
        &["exec", "p", "-n", "default", "--", "true"][..],
        &["attach", "p", "-n", "default"],
        &["port-forward", "pod/p", "-n", "default", "0:80"],
    ] {
        let direct = kube.kubectl(command)?;
        let through = kubectl(kc, context, command)?;
        let (direct_err, through_err) = (
            String::from_utf8_lossy(&direct.stderr).into_owned(),
            String::from_utf8_lossy(&through.stderr).into_owned(),
        );
        let what = command.join(" ");
        assert!(
            !direct.status.success() && !through.status.success(),
            "{what}"
        );
        // kube's own words: the upgrade reached the member, which has no
        // node to send it to (the federation's old 400 would differ).
        assert!(
            direct_err.contains("pod p does not have a host assigned"),
            "{what}: {direct_err}"
        );
        eprintln!("kube-apiserver answers {what} with: {direct_err}");
        assert_eq!(
            through_err, direct_err,
            "{what}: the member's answer changed on the way through the federation"
        );
    }
    Ok(())
}
