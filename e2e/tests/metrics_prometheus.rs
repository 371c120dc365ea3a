//! `/metrics` end to end (issue 14, item 4): a real `ubernetes serve`
//! answers `/metrics` in the Prometheus text format to the admin and to a
//! token user in the group `system:monitoring` (RBAC, as kube-apiserver),
//! 401 without credentials and 403 to a user without the grant; the text
//! carries kube-apiserver's metric names, a request counter grows with the
//! requests made, and `promtool check metrics` finds nothing to say. Then a
//! real Prometheus (Debian's `prometheus`) scrapes it over HTTPS with the
//! monitoring user's bearer token, and its HTTP API shows the target up
//! and the series stored. A federation with one member joined shows the
//! federation's own per-cluster metrics.
//!
//! Without `promtool` or `prometheus` on the PATH those parts print
//! `SKIPPED: …` (scripts/test.sh installs Debian's `prometheus`).

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use ubernetes_e2e::federation::Federation;
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);
const MONITORING_TOKEN: &str = "prom-token";
const BOB_TOKEN: &str = "bob-token";

/// A server with bearer tokens for `prom` (group `system:monitoring`) and
/// `bob` (no grant).
struct Env {
    server: Server,
    dir: tempfile::TempDir,
}

fn start() -> Result<Env> {
    let dir = tempfile::Builder::new()
        .prefix("ubernetes-metrics-")
        .tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("{MONITORING_TOKEN},prom,3001,\"system:monitoring\"\n{BOB_TOKEN},bob,3002\n"),
    )?;
    let tokens = tokens.to_string_lossy().into_owned();
    let server = Server::start_with(&["--token-auth-file", &tokens])?;
    Ok(Env { server, dir })
}

/// `GET /metrics` over HTTPS (the server's CA), with `token` or none:
/// (status, content type, body).
async fn scrape(server: &Server, token: Option<&str>) -> Result<(u16, String, String)> {
    let ca = server.data_dir().join("pki").join("ca.crt");
    let user = match token {
        Some(t) => format!("{{token: {t}}}"),
        None => "{}".to_string(),
    };
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{}', certificate-authority: '{}'}}\nusers:\n- name: u\n  user: {user}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        server.url(),
        ca.display()
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = response.into_body().collect_bytes().await?;
    Ok((
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// The sum of the samples of `name` whose labels include every `labels`
/// pair (`key="value"`), or None when there is none.
fn sum_of(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (series_labels, value) = match rest.strip_prefix('{') {
            Some(r) => match r.split_once("} ") {
                Some((l, v)) => (l, v),
                None => continue,
            },
            None => match rest.strip_prefix(' ') {
                Some(v) => ("", v),
                None => continue,
            },
        };
        if labels
            .iter()
            .all(|want| series_labels.split(',').any(|l| l == *want))
            && let Ok(v) = value.trim().parse::<f64>()
        {
            *found.get_or_insert(0.0) += v;
        }
    }
    found
}

/// Whether `cmd` can be run (`--version` answers).
fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_are_served_to_monitoring_users_and_scraped_by_prometheus() -> Result<()> {
    let env = start()?;
    let server = &env.server;

    // Who may read it.
    let (status, _, body) = scrape(server, None).await?;
    ensure!(status == 401, "no credentials: {status} {body}");
    let (status, _, body) = scrape(server, Some(BOB_TOKEN)).await?;
    ensure!(status == 403, "bob: {status} {body}");
    let status_body: Value = serde_json::from_str(&body).context("a Status")?;
    ensure!(
        status_body["message"] == r#"forbidden: User "bob" cannot get path "/metrics""#,
        "{body}"
    );
    let (status, content_type, before) = scrape(server, Some(MONITORING_TOKEN)).await?;
    ensure!(status == 200, "system:monitoring: {status} {before}");
    ensure!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );

    // A counter grows with the requests made.
    let posts = [
        r#"verb="POST""#,
        r#"resource="configmaps""#,
        r#"code="201""#,
        r#"scope="resource""#,
        r#"component="apiserver""#,
    ];
    let posted_before = sum_of(&before, "apiserver_request_total", &posts).unwrap_or(0.0);
    server.kubectl_ok(&["create", "namespace", "metrics"])?;
    for i in 0..3 {
        server.kubectl_ok(&[
            "create",
            "configmap",
            &format!("c{i}"),
            "-n",
            "metrics",
            "--from-literal=k=v",
        ])?;
    }
    server.kubectl_ok(&["get", "configmaps", "-n", "metrics"])?;
    // As the admin (client certificate, group system:masters).
    let text = server.kubectl_ok(&["get", "--raw", "/metrics"])?;
    let posted = sum_of(&text, "apiserver_request_total", &posts).unwrap_or(0.0);
    ensure!(
        posted >= posted_before + 3.0,
        "POST configmaps {posted_before} → {posted}:\n{text}"
    );
    let lists = [
        r#"verb="LIST""#,
        r#"resource="configmaps""#,
        r#"scope="namespace""#,
        r#"version="v1""#,
        r#"group="""#,
    ];
    ensure!(
        sum_of(&text, "apiserver_request_total", &lists).is_some_and(|n| n >= 1.0),
        "no LIST of configmaps:\n{text}"
    );
    ensure!(
        sum_of(&text, "apiserver_request_duration_seconds_count", &lists).is_some_and(|n| n >= 1.0),
        "no LIST duration:\n{text}"
    );
    ensure!(
        text.contains(r#"apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1",le="0.005"}"#),
        "kube's first bucket missing:\n{text}"
    );
    ensure!(
        sum_of(
            &text,
            "apiserver_storage_objects",
            &[r#"resource="configmaps""#]
        )
        .is_some_and(|n| n >= 3.0),
        "storage objects:\n{text}"
    );
    ensure!(
        sum_of(
            &text,
            "apiserver_storage_objects",
            &[r#"resource="clusterroles.rbac.authorization.k8s.io""#]
        )
        .is_some_and(|n| n >= 1.0),
        "grouped resources are resource.group:\n{text}"
    );
    // The federation controllers' watches (in-process clients, through
    // the same filters) are open.
    ensure!(
        sum_of(
            &text,
            "apiserver_longrunning_requests",
            &[r#"verb="WATCH""#]
        )
        .is_some_and(|n| n >= 1.0),
        "no open watch:\n{text}"
    );
    for kind in ["readOnly", "mutating"] {
        let label = format!(r#"request_kind="{kind}""#);
        ensure!(
            sum_of(&text, "apiserver_current_inflight_requests", &[&label]).is_some(),
            "inflight {kind}:\n{text}"
        );
    }
    // The process collector (its CPU seconds are whole seconds, so may be 0).
    ensure!(
        sum_of(&text, "process_cpu_seconds_total", &[]).is_some(),
        "process_cpu_seconds_total:\n{text}"
    );
    ensure!(
        sum_of(&text, "process_resident_memory_bytes", &[]).is_some_and(|v| v > 0.0),
        "process_resident_memory_bytes:\n{text}"
    );
    ensure!(
        text.contains("# TYPE apiserver_request_duration_seconds histogram"),
        "{text}"
    );

    // promtool's linter is satisfied.
    if have("promtool") {
        let mut child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        child
            .stdin
            .take()
            .context("stdin")?
            .write_all(text.as_bytes())?;
        let out = child.wait_with_output()?;
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ensure!(
            out.status.success() && said.trim().is_empty(),
            "promtool check metrics: {}\n{said}",
            out.status
        );
    } else {
        println!("SKIPPED: promtool check metrics (promtool not installed)");
    }

    // A real Prometheus scrapes it.
    if !have("prometheus") {
        println!("SKIPPED: Prometheus scrape (prometheus not installed)");
        return Ok(());
    }
    let prometheus = Prometheus::start(env.dir.path(), server)?;
    let up = eventually(WAIT, || {
        let v = prometheus.query("up")?;
        Ok(series(&v)
            .into_iter()
            .find(|s| s["metric"]["job"] == "ubernetes" && s["value"][1] == "1"))
    })
    .with_context(|| prometheus.log_tail())?;
    ensure!(
        up["metric"]["instance"] == format!("127.0.0.1:{}", server.port()),
        "{up}"
    );
    let stored = eventually(WAIT, || {
        let v = prometheus.query("apiserver_request_total")?;
        Ok(series(&v).into_iter().find(|s| {
            s["metric"]["job"] == "ubernetes"
                && s["metric"]["verb"] == "POST"
                && s["metric"]["resource"] == "configmaps"
        }))
    })
    .with_context(|| prometheus.log_tail())?;
    let value: f64 = stored["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .context("a sample value")?;
    ensure!(value >= 3.0, "{stored}");
    Ok(())
}

fn series(v: &Value) -> Vec<Value> {
    v.pointer("/data/result")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A Prometheus process scraping the server every second, on a free
/// loopback port; killed (by its pid) when dropped.
struct Prometheus {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Prometheus {
    fn start(dir: &Path, server: &Server) -> Result<Self> {
        let token_file = dir.join("prom-token");
        std::fs::write(&token_file, MONITORING_TOKEN)?;
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n- job_name: ubernetes\n  scheme: https\n  metrics_path: /metrics\n  tls_config:\n    ca_file: {}\n  authorization:\n    type: Bearer\n    credentials_file: {}\n  static_configs:\n  - targets: ['127.0.0.1:{}']\n",
                server.data_dir().join("pki").join("ca.crt").display(),
                token_file.display(),
                server.port()
            ),
        )?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = format!("127.0.0.1:{port}");
        let log = dir.join("prometheus.log");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("prometheus-data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log)?))
            .spawn()
            .context("starting prometheus")?;
        let p = Self { child, addr, log };
        eventually(WAIT, || {
            Ok(p.get("/-/ready")
                .ok()
                .filter(|(status, _)| *status == 200)
                .map(|_| ()))
        })
        .with_context(|| format!("prometheus not ready:\n{}", p.log_tail()))?;
        Ok(p)
    }

    /// `GET path` on Prometheus' HTTP API: (status, body). HTTP/1.0 over a
    /// plain socket: the test needs nothing more than one request and the
    /// body until the server closes, so no HTTP client crate is pulled in.
    fn get(&self, path: &str) -> Result<(u16, String)> {
        let mut stream = TcpStream::connect(&self.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\n\r\n",
            self.addr
        )?;
        let mut raw = String::new();
        stream.read_to_string(&mut raw)?;
        let (head, body) = raw.split_once("\r\n\r\n").context("an HTTP answer")?;
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .context("a status line")?;
        Ok((status, body.to_string()))
    }

    /// An instant query (`query` must need no URL escaping).
    fn query(&self, query: &str) -> Result<Value> {
        let (status, body) = self.get(&format!("/api/v1/query?query={query}"))?;
        if status != 200 {
            bail!("query {query}: {status} {body}");
        }
        Ok(serde_json::from_str(&body)?)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_joined_member_has_the_federations_per_cluster_metrics() -> Result<()> {
    let fed = Federation::start(1, &[])?;
    fed.join(0, "east", &[])?;
    fed.wait_ready("east")?;
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
"#,
    )?;
    let member = fed.member(0)?;
    eventually(WAIT, || {
        Ok(member
            .kubectl_get(&["deployment", "web", "-n", "shop"])?
            .filter(|d| d["spec"]["replicas"] == 3))
    })?;
    let cluster = r#"cluster="east""#;
    let text = eventually(WAIT, || {
        let text = fed.host.kubectl_ok(&["get", "--raw", "/metrics"])?;
        let ok = sum_of(&text, "ubernetes_federation_cluster_ready", &[cluster]) == Some(1.0)
            && sum_of(
                &text,
                "ubernetes_federation_cluster_replicas_placed",
                &[cluster],
            ) == Some(3.0)
            && sum_of(
                &text,
                "ubernetes_federation_cluster_objects_in_sync",
                &[cluster],
            )
            .is_some_and(|n| n >= 2.0);
        Ok(ok.then_some(text))
    })
    .with_context(|| fed.host.log_tail())?;
    ensure!(
        text.contains(r#"ubernetes_federation_cluster_ready{cluster="east"} 1"#),
        "{text}"
    );
    ensure!(
        sum_of(
            &text,
            "ubernetes_federation_cluster_probe_duration_seconds_count",
            &[cluster]
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    ensure!(
        sum_of(
            &text,
            "ubernetes_federation_propagation_duration_seconds_count",
            &[cluster, r#"resource="deployments.apps""#]
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    ensure!(
        sum_of(
            &text,
            "ubernetes_federation_cluster_objects_placed",
            &[cluster]
        )
        .is_some_and(|n| n >= 2.0),
        "{text}"
    );

    // The member leaves: its series go.
    fed.host.kubectl_ok(&["delete", "cluster", "east"])?;
    eventually(WAIT, || {
        let text = fed.host.kubectl_ok(&["get", "--raw", "/metrics"])?;
        Ok(
            sum_of(&text, "ubernetes_federation_cluster_ready", &[cluster])
                .is_none()
                .then_some(()),
        )
    })?;
    Ok(())
}
