//! Helpers shared by the kubectl 1.37 end-to-end suites (`tests/kubectl_*.rs`):
//! table-header extraction, JSON output, kubectl with extra environment
//! (e.g. `KUBE_EDITOR`), and a running `kubectl get -w` whose output lines can
//! be awaited. Each suite includes this module with `mod kubectl_support;`, and
//! not every suite uses every helper.
#![allow(dead_code)] // included by several test crates, each using a subset

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use ubernetes_e2e::Server;

/// How long a test waits for the server to converge (controllers, watches).
pub const SETTLE: Duration = Duration::from_secs(20);

/// The header line of a kubectl table, with its column separators collapsed
/// to single spaces (`"NAME   DATA   AGE"` → `"NAME DATA AGE"`).
pub fn header(table: &str) -> String {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The data rows of a kubectl table (every line after the header), each with
/// its columns collapsed to single spaces.
pub fn rows(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The non-empty trimmed lines of an output (e.g. `-o name`), sorted.
pub fn lines(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Run kubectl with `-o json` appended and parse its output.
pub fn json(server: &Server, args: &[&str]) -> Result<Value> {
    let mut full = args.to_vec();
    full.extend(["-o", "json"]);
    let out = server.kubectl_ok(&full)?;
    serde_json::from_str(&out)
        .with_context(|| format!("kubectl {} printed no JSON: {out}", full.join(" ")))
}

/// Run kubectl with extra environment variables, require success, return
/// stdout and stderr.
pub fn kubectl_env_ok(
    server: &Server,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<(String, String)> {
    let mut cmd = server.kubectl_cmd(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output()?;
    if !out.status.success() {
        bail!(
            "kubectl {} failed ({}):\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Run kubectl and return its exit code, stdout and stderr (any status).
pub fn kubectl_status(server: &Server, args: &[&str]) -> Result<(i32, String, String)> {
    let out = server.kubectl(args)?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A long-running kubectl (e.g. `get -w`) whose stdout lines arrive on a
/// channel; the process is killed when this drops.
pub struct Streaming {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Streaming {
    /// Start `kubectl <args>` with stdout captured line by line.
    pub fn start(server: &Server, args: &[&str]) -> Result<Self> {
        let mut child = server
            .kubectl_cmd(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().context("child stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            lines: rx,
            seen: Vec::new(),
        })
    }

    /// Wait for a line satisfying `pred` (blocking on the output, no polling)
    /// and return it; fails after `timeout` or when kubectl exits.
    pub fn wait_for(&mut self, timeout: Duration, pred: impl Fn(&str) -> bool) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return Ok(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    bail!("no matching line within {timeout:?}; saw: {:?}", self.seen)
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let mut err = String::new();
                    if let Some(mut e) = self.child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    bail!(
                        "kubectl exited before a matching line; saw: {:?}; stderr: {err}",
                        self.seen
                    )
                }
            }
        }
    }

    /// Every line read so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Wait until `kubectl get <args>` fails with NotFound.
pub fn wait_gone(server: &Server, args: &[&str]) -> Result<()> {
    ubernetes_e2e::eventually(SETTLE, || {
        let out = server.kubectl(args)?;
        if out.status.success() {
            return Ok(None);
        }
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("NotFound") || err.contains("not found") {
            Ok(Some(()))
        } else {
            bail!("kubectl {} failed unexpectedly: {err}", args.join(" "))
        }
    })
}

/// Whether kube-controller-manager's workload controllers (replicaset,
/// deployment, cronjob...) act on the server's own objects, as with
/// kube-apiserver + kcm: a federation with no Cluster joined runs them
/// itself (standalone mode), so a Deployment gets its ReplicaSet, Pods
/// and status. With members joined (`E2E_JOINED_MEMBERS`) the members would
/// do that work, and the test's members are plain API servers
/// (`--federation-controllers=false`, no kcm): nothing fills in workload
/// status, as on kube-apiserver without kcm.
pub fn workload_controllers_run() -> bool {
    std::env::var("E2E_JOINED_MEMBERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0)
        == 0
}

/// With [`workload_controllers_run`], wait until the Deployment
/// `namespace/name` is settled as kcm leaves it: its status observed its
/// generation, its revision annotation written and its new ReplicaSet at
/// `spec.replicas` (`updatedReplicas`), so the controller writes nothing
/// more until the Deployment changes. Returns the Deployment. Without the
/// controllers, returns it as it is.
pub fn settled_deployment(server: &Server, namespace: &str, name: &str) -> Result<Value> {
    let get = || json(server, &["get", "deployment", name, "-n", namespace]);
    if !workload_controllers_run() {
        return get();
    }
    ubernetes_e2e::eventually(SETTLE, || {
        let d = get()?;
        let settled = d["status"]["observedGeneration"] == d["metadata"]["generation"]
            && d["metadata"]["annotations"]["deployment.kubernetes.io/revision"].is_string()
            && d["status"]["updatedReplicas"] == d["spec"]["replicas"];
        Ok(settled.then_some(d))
    })
}
