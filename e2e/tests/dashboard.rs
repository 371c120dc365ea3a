//! The dashboard (SPEC §3.15, issue 26) in a real headless Chromium, driven
//! over WebDriver (Debian's `chromium` and `chromedriver`, installed by
//! `scripts/test.sh`; SKIPPED when absent), against a real
//! `target/debug/ubernetes serve` with two members joined:
//!
//! - a wrong token gets a clear message; the admin signs in and sees both
//!   clusters Ready, grouped by region; a federated Deployment's replicas
//!   per cluster (scheduled by the federation, ready as the member's status
//!   says, live from the member through the proxy); a member killed turns
//!   not Ready on the page without a reload;
//! - a `view` user (bound cluster-wide) sees both Clusters and the
//!   Deployment's propagation record, but no Secret and no write button;
//!   a user without rights sees a message naming what they may not read;
//! - the assets need no credentials (and only they), `--ui=false` is 404.
//!
//! Screenshots go to `target/dashboard-screenshots/` (docs/dashboard/ has
//! copies).
//!
//! The WebDriver client is a few blocking HTTP calls to chromedriver on
//! loopback (std's TcpStream): no crate for it to compile.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use serde_json::{Value, json};
use ubernetes_e2e::federation::{Federation, propagation_state};
use ubernetes_e2e::{Server, eventually};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const WAIT: Duration = Duration::from_secs(20);
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn browser_missing() -> bool {
    let missing = [CHROMIUM, CHROMEDRIVER]
        .iter()
        .any(|p| !Path::new(p).exists());
    if missing {
        println!(
            "SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is absent (scripts/test.sh installs Debian's chromium and chromium-driver)"
        );
    }
    missing
}

fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("dashboard-screenshots");
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// One HTTP/1.1 request to chromedriver; the answer's `value`.
fn wd_http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).context("connecting to chromedriver")?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // chromedriver keeps the connection open despite `Connection: close`:
    // read the headers, then Content-Length bytes (or chunks to the last).
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    let (head, rest) = loop {
        let n = s.read(&mut buf)?;
        ensure!(n > 0, "chromedriver closed the connection early");
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..i]).into_owned();
            break (head, raw[i + 4..].to_vec());
        }
    };
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let mut body_bytes = rest;
    loop {
        let done = match length {
            Some(len) => body_bytes.len() >= len,
            None => body_bytes.ends_with(b"0\r\n\r\n"),
        };
        if done {
            break;
        }
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        body_bytes.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&body_bytes);
    let payload = if length.is_none() && lower.contains("transfer-encoding: chunked") {
        dechunk(&text)
    } else {
        text.into_owned()
    };
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("a WebDriver answer without a status")?;
    let v: Value = serde_json::from_str(&payload)
        .with_context(|| format!("WebDriver {method} {path}: not JSON: {payload}"))?;
    if status != 200 {
        bail!("WebDriver {method} {path}: {status}: {}", v["value"]);
    }
    Ok(v["value"].clone())
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// chromedriver and one headless Chromium session; both stopped on drop.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    fn start() -> Result<Self> {
        let port = ubernetes_e2e::dig::free_port()?;
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting chromedriver")?;
        let profile = tempfile::Builder::new()
            .prefix("dashboard-chromium-")
            .tempdir()?;
        let mut b = Self {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        eventually(Duration::from_secs(10), || {
            Ok(wd_http(port, "GET", "/status", None)
                .ok()
                .filter(|v| v["ready"] == true))
        })
        .context("chromedriver not ready")?;
        let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "acceptInsecureCerts": true,
        "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                     format!("--user-data-dir={}", b._profile.path().display()),
                     "--window-size=1280,800"],
        }}}});
        let v = wd_http(port, "POST", "/session", Some(&caps))?;
        b.session = v["sessionId"].as_str().context("no sessionId")?.to_string();
        Ok(b)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let path = format!("/session/{}{path}", self.session);
        wd_http(self.port, method, &path, body.as_ref())
    }

    fn goto(&self, url: &str) -> Result<()> {
        self.call("POST", "/url", Some(json!({"url": url})))
            .map(drop)
    }

    fn size(&self, width: u32, height: u32) -> Result<()> {
        self.call(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .map(drop)
    }

    fn exec(&self, script: &str) -> Result<Value> {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    fn find(&self, css: &str) -> Result<String> {
        let v = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        )?;
        Ok(v[ELEMENT]
            .as_str()
            .with_context(|| format!("no element {css}: {v}"))?
            .to_string())
    }

    /// Clicks `css`; again when a live redraw replaced it in between.
    fn click(&self, css: &str) -> Result<()> {
        let mut tries = 0;
        loop {
            let el = self.find(css)?;
            match self.call("POST", &format!("/element/{el}/click"), Some(json!({}))) {
                Err(e) if tries < 5 && e.to_string().contains("stale element") => tries += 1,
                other => return other.map(drop),
            }
        }
    }

    fn type_into(&self, css: &str, text: &str) -> Result<()> {
        let el = self.find(css)?;
        self.call("POST", &format!("/element/{el}/clear"), Some(json!({})))?;
        self.call(
            "POST",
            &format!("/element/{el}/value"),
            Some(json!({"text": text})),
        )
        .map(drop)
    }

    /// The text of the page's main area.
    fn text(&self) -> Result<String> {
        Ok(self
            .exec("return document.getElementById('main').innerText")?
            .as_str()
            .unwrap_or("")
            .to_string())
    }

    /// Waits until the main area's text satisfies `ok`; returns it.
    fn wait_text(&self, what: &str, ok: impl Fn(&str) -> bool) -> Result<String> {
        let deadline = Instant::now() + WAIT;
        let mut last = String::new();
        while Instant::now() < deadline {
            last = self.text()?;
            if ok(&last) {
                return Ok(last);
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        bail!("the page never showed {what}; it shows:\n{last}")
    }

    fn count(&self, css: &str) -> Result<u64> {
        let script = format!("return document.querySelectorAll({}).length", json!(css));
        Ok(self.exec(&script)?.as_u64().unwrap_or(0))
    }

    fn screenshot(&self, name: &str) -> Result<()> {
        let v = self.call("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().context("screenshot not a string")?)?;
        std::fs::write(screenshot_dir().join(name), png)?;
        Ok(())
    }

    fn sign_in(&self, url: &str, token: &str) -> Result<()> {
        self.goto(&format!("{url}/ui/"))?;
        self.exec("sessionStorage.clear(); location.hash = ''; return 1")?;
        self.goto(&format!("{url}/ui/#/clusters"))?;
        self.type_into("#token", token)?;
        self.click("#signin button[type=submit]")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = wd_http(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `curl -sk` status code of `url` (no credentials).
fn status_of(url: &str) -> Result<String> {
    let out = Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}", url])
        .output()
        .context("running curl")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

const DEPLOYMENT: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
 {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-password", "namespace": "shop"}, "stringData": {"password": "hunter2"}},
 {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop",
   "annotations": {"federation.kubernetes.io/drift-policy": "Report", "federation.kubernetes.io/overrides": "{\"east\": [{\"op\": \"add\", \"path\": \"/metadata/labels/tier\", \"value\": \"gold\"}]}"}},
  "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
   "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}},
 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
  "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 80}]}},
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "viewer-view"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]}
]}"#;

#[test]
fn dashboard_in_headless_chromium() -> Result<()> {
    if browser_missing() {
        return Ok(());
    }
    let dir = tempfile::Builder::new().prefix("dashboard-").tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "admin-token,alice,1,\"system:masters\"\nviewer-token,viewer,2\nnobody-token,nobody,3\n",
    )?;
    let tokens = tokens.to_string_lossy().into_owned();
    let dns_port = ubernetes_e2e::dig::free_port()?.to_string();
    let dns_bind = format!("127.0.0.1:{dns_port}");
    let mut fed = Federation::start(
        2,
        &[
            "--token-auth-file",
            &tokens,
            "--dns-bind",
            &dns_bind,
            "--dns-zone",
            "example.com",
        ],
    )?;
    fed.create_nodes(0, &[("east-1", "us-east-1a", "us-east")])?;
    fed.create_nodes(1, &[("west-1", "eu-west-1b", "eu-west")])?;
    fed.join(0, "east", &[])?;
    fed.join(1, "west", &[])?;
    fed.wait_ready("east")?;
    fed.wait_ready("west")?;
    let url = fed.host.url();

    // The assets need no credentials; the API still does.
    ensure!(
        status_of(&format!("{url}/ui/app.js"))? == "200",
        "asset without credentials"
    );
    ensure!(
        status_of(&format!("{url}/api/v1/namespaces"))? == "401",
        "API without credentials"
    );

    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], DEPLOYMENT)?;
    eventually(WAIT, || {
        let s = propagation_state(&fed.host, "deployments.apps", Some("shop"), "web")?;
        Ok((s["east"]["replicas"] == 2 && s["west"]["replicas"] == 2).then_some(()))
    })
    .context("web's replicas were not split 2 + 2")?;

    let browser = Browser::start()?;
    // A token the server refuses: a clear message, still on the form.
    browser.sign_in(&url, "not-a-token")?;
    browser.wait_text("the refused token's message", |t| {
        t.contains("did not accept this token (401")
    })?;

    browser.sign_in(&url, "admin-token")?;
    let text = browser.wait_text("both clusters Ready", |t| {
        t.contains("2 of 2 clusters Ready")
            && t.contains("Region us-east")
            && t.contains("Zone eu-west-1b")
    })?;
    ensure!(text.matches("✔ Ready").count() == 2, "{text}");
    ensure!(text.contains("push"), "{text}");
    browser.screenshot("clusters.png")?;

    // The workload: 2 scheduled per cluster; east's member says 2 ready.
    browser.goto(&format!("{url}/ui/#/workloads"))?;
    browser.wait_text("web with replicas per cluster", |t| {
        t.contains("Deployment shop/web")
            && t.contains("east (InSync)")
            && t.contains("west (InSync)")
            && t.contains("of 2 scheduled")
    })?;
    // As east's deployment controller would report it.
    let status = json!({"status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2}});
    fed.member(0)?.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ])?;
    browser.click("[data-workload='shop/web'] h2 a")?;
    let text = browser.wait_text("the object's clusters, live", |t| {
        t.contains("Propagation per cluster")
            && t.contains("2 ready of 2 scheduled")
            && t.contains("0 ready of 2 scheduled")
            && t.contains("Overrides per cluster")
    })?;
    ensure!(text.contains("\"gold\""), "the override is shown: {text}");
    browser.wait_text("the admin's write buttons", |t| t.contains("Pause rollout"))?;
    ensure!(
        browser.count("[data-write]")? >= 2,
        "admin has write buttons"
    );
    browser.screenshot("object.png")?;

    // A write button: pause the rollout; the page follows the change.
    browser.click("[data-write=pause]")?;
    browser.wait_text("the rollout paused", |t| t.contains("Resume rollout"))?;
    let paused = fed.host.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        "shop",
        "-o",
        "jsonpath={.spec.paused}",
    ])?;
    ensure!(paused == "true", "spec.paused is {paused:?}");

    // Drift kept (policy Report): the diff and the DriftDetected Event.
    fed.member(0)?.kubectl_ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        "shop",
        "--type=merge",
        "-p",
        r#"{"metadata": {"labels": {"tier": "silver"}}}"#,
    ])?;
    browser.wait_text("east's drift as a diff, and its Event", |t| {
        t.contains("- /metadata/labels/tier: \"gold\"  (federation)")
            && t.contains("+ /metadata/labels/tier: \"silver\"  (member)")
            && t.contains("DriftDetected")
    })?;
    browser.exec("document.querySelector('.diff').scrollIntoView(); return 1")?;
    browser.screenshot("object-drift.png")?;

    // The member view: east's objects through the cluster proxy, as alice.
    browser.goto(&format!("{url}/ui/#/clusters/east/shop"))?;
    let text = browser.wait_text("east's copy of web", |t| {
        t.contains("Deployments in east/shop") && t.contains("web\t2/2")
    })?;
    ensure!(text.contains("yes"), "the copy is the federation's: {text}");
    browser.screenshot("member.png")?;

    // DNS: east's load balancer answers for web once it has a ready endpoint.
    let east = fed.member(0)?;
    eventually(WAIT, || {
        Ok(east
            .kubectl(&[
                "patch",
                "service",
                "web",
                "-n",
                "shop",
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}"#,
            ])?
            .status
            .success()
            .then_some(()))
    })?;
    east.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "namespace": "shop",
                "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "", "port": 80, "protocol": "TCP"}]})
        .to_string(),
    )?;
    browser.goto(&format!("{url}/ui/#/dns"))?;
    browser.wait_text("web's names and east's address", |t| {
        t.contains("Service shop/web")
            && t.contains("web.shop.federation.svc.example.com\tA\t192.0.2.1")
            && t.contains("us-east-1a.us-east.example.com")
    })?;
    browser.screenshot("dns.png")?;

    // At a phone's width the workloads still read in one column.
    browser.goto(&format!("{url}/ui/#/workloads"))?;
    browser.size(390, 844)?;
    browser.wait_text("the workloads at phone width", |t| {
        t.contains("2 ready of 2 scheduled")
    })?;
    browser.screenshot("workloads-phone.png")?;
    browser.size(1280, 800)?;
    browser.screenshot("workloads.png")?;

    // A member stops: its cluster turns not Ready on the page, no reload.
    browser.goto(&format!("{url}/ui/#/clusters"))?;
    browser.wait_text("both Ready again", |t| t.contains("2 of 2 clusters Ready"))?;
    browser.exec("window.__noReload = 'still here'; return 1")?;
    fed.member_mut(1)?.kill9();
    let text = browser.wait_text("west not Ready", |t| {
        t.contains("1 of 2 clusters Ready") && t.contains("Not ready")
    })?;
    ensure!(text.contains("west"), "{text}");
    ensure!(
        browser.exec("return window.__noReload")? == "still here",
        "the page was reloaded"
    );
    browser.screenshot("cluster-down.png")?;

    // view, bound cluster-wide: the Clusters and the propagation records
    // (aggregated into `view` by ubernetes:aggregate-to-view), the workload,
    // no Secret, no write button; the ready counts need clusters/proxy,
    // which view does not give (the record's 2 scheduled, '?' ready).
    browser.click("#signout")?;
    browser.type_into("#token", "viewer-token")?;
    browser.click("#signin button[type=submit]")?;
    let text = browser.wait_text("view sees both clusters", |t| {
        t.contains("1 of 2 clusters Ready") && t.contains("Region us-east")
    })?;
    ensure!(!text.contains("You may not read"), "{text}");
    browser.goto(&format!("{url}/ui/#/workloads"))?;
    let text = browser.wait_text("view sees web and its record", |t| {
        t.contains("Deployment shop/web") && t.contains("? ready of 2 scheduled")
    })?;
    ensure!(!text.contains("db-password"), "{text}");
    browser.click("[data-workload='shop/web'] h2 a")?;
    let text = browser.wait_text("view's read-only note", |t| {
        t.contains("You may not change this object (read only).")
    })?;
    ensure!(
        !text.contains("db-password") && !text.contains("hunter2"),
        "{text}"
    );
    ensure!(
        browser.count("[data-write]")? == 0,
        "view has no write buttons"
    );
    browser.screenshot("viewer.png")?;

    // No rights at all: a message, not a blank page.
    browser.click("#signout")?;
    browser.type_into("#token", "nobody-token")?;
    browser.click("#signin button[type=submit]")?;
    browser.goto(&format!("{url}/ui/#/workloads"))?;
    let text = browser.wait_text("nobody's messages", |t| {
        t.contains("You may not read Deployments") && t.contains("User \"nobody\"")
    })?;
    ensure!(!text.contains("shop/web"), "{text}");
    browser.screenshot("no-rights.png")?;
    drop(browser);
    Ok(())
}

#[test]
fn ui_false_serves_no_dashboard() -> Result<()> {
    let server = Server::start_with(&["--ui=false"])?;
    let out = server.kubectl(&["get", "--raw", "/ui/"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success() && err.contains("NotFound"), "{err}");
    // Without credentials /ui/ is refused as any API path (no public route).
    ensure!(status_of(&format!("{}/ui/", server.url()))? == "401");
    Ok(())
}
