//! # ubernetes-e2e
//!
//! The end-to-end harness: starts the real `ubernetes` binary as a child
//! process on an ephemeral loopback port with its own temporary data dir, and
//! drives it with the real kubectl 1.37 (from `$KUBECTL`, installed by
//! `scripts/test.sh`) and the real `kube` crate. Every process started here
//! is killed when its handle drops.
//!
//! The tests themselves live in `e2e/tests/`; [`federation`] starts a host
//! and member clusters and joins them; [`dig`] asks the embedded DNS server
//! with the real `dig`; [`webhook`] runs real HTTPS webhook
//! servers with a CA of the test's own.
#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub mod dig;
pub mod fault_proxy;
pub mod federation;
pub mod real_kube;
pub mod webhook;

/// Path of the `ubernetes` binary built next to this test executable
/// (`target/<profile>/ubernetes`); `scripts/test.sh` builds it first.
pub fn ubernetes_bin() -> PathBuf {
    if let Ok(p) = std::env::var("UBERNETES_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    // target/debug/deps/<test> → target/debug/ubernetes
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    dir.join("ubernetes")
}

/// The kubectl to test with: `$KUBECTL`, else `.tools/venv/bin/kubectl` of the repo.
pub fn kubectl_bin() -> PathBuf {
    if let Ok(p) = std::env::var("KUBECTL") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/venv/bin/kubectl")
}

/// A running `ubernetes serve`.
pub struct Server {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
    extra_args: Vec<String>,
    /// Member clusters joined to this server (see [`Server::start`]).
    members: Vec<Server>,
}

impl Server {
    /// Start a server on a fresh data dir. With `E2E_JOINED_MEMBERS=N` in
    /// the environment, N member servers are started and joined to it (and
    /// Ready) first, so any test runs against a federation with members
    /// joined (SPEC §3.8: a client must not be able to tell).
    pub fn start() -> Result<Self> {
        let mut s = Self::start_with(&[])?;
        let n: usize = std::env::var("E2E_JOINED_MEMBERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        for i in 0..n {
            let member = Self::start_with(&["--federation-controllers=false"])?;
            federation::join_member(&s, &member, &format!("member-{i}"))?;
            s.members.push(member);
        }
        for i in 0..n {
            federation::wait_member_ready(&s, &format!("member-{i}"))?;
        }
        Ok(s)
    }

    /// Start with extra `serve` flags.
    pub fn start_with(extra: &[&str]) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ubernetes-e2e-")
            .tempdir()?;
        let mut s = Self {
            child: None,
            dir,
            port: 0,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            members: Vec::new(),
        };
        s.spawn(0)?;
        Ok(s)
    }

    /// Start with extra `serve` flags and the PKI (CA, serving and admin
    /// certificates, service-account key, Secrets encryption key) of another
    /// server's data dir: how
    /// replicas of one federation share it (docs/operations.md, "HA
    /// topology": copy `DATA_DIR/pki` before a replica's first start).
    pub fn start_with_pki(extra: &[&str], pki_of: &Server) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ubernetes-e2e-")
            .tempdir()?;
        let from = pki_of.data_dir().join("pki");
        let to = dir.path().join("data").join("pki");
        std::fs::create_dir_all(&to)?;
        for entry in std::fs::read_dir(&from)? {
            let entry = entry?;
            std::fs::copy(entry.path(), to.join(entry.file_name()))
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
        let mut s = Self {
            child: None,
            dir,
            port: 0,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            members: Vec::new(),
        };
        s.spawn(0)?;
        Ok(s)
    }

    fn spawn(&mut self, port: u16) -> Result<()> {
        let bin = ubernetes_bin();
        if !bin.exists() {
            bail!(
                "{} not found: build it first (`cargo build -p ubernetes`, done by scripts/test.sh)",
                bin.display()
            );
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))?;
        let mut child = Command::new(&bin)
            .arg("serve")
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .arg("--secure-port")
            .arg(port.to_string())
            .arg("--bind-address")
            .arg("127.0.0.1")
            .args(&self.extra_args)
            .env(
                "RUST_LOG",
                std::env::var("E2E_SERVER_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("child stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if let Some(rest) = line.split("serving on https://").nth(1)
                    && let Some(port) = rest
                        .trim()
                        .trim_end_matches('/')
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse::<u16>().ok())
                {
                    let _ = tx.send(port);
                }
            }
        });
        self.child = Some(child);
        let port = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(p) => p,
            Err(_) => {
                self.kill9();
                bail!(
                    "server did not report its port in 60 s; log:\n{}",
                    self.log_tail()
                );
            }
        };
        self.port = port;
        self.wait_ready()?;
        Ok(())
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.kubectl(&["get", "--raw", "/readyz"])?;
            if out.status.success() {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bail!("server exited with {status}; log:\n{}", self.log_tail());
            }
            if Instant::now() > deadline {
                // Which check is failing: the verbose readyz names it.
                let verbose = self
                    .kubectl(&["get", "--raw", "/readyz?verbose"])
                    .map(|o| {
                        let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
                        text.push_str(&String::from_utf8_lossy(&o.stderr));
                        text.lines()
                            .filter(|l| !l.ends_with(" ok"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                bail!(
                    "server not ready in 60 s; failing readyz checks:\n{verbose}\nlog:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The process id of the running server (None once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The port it serves on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The server's data dir.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The admin kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir().join("kubeconfig")
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// A kubectl command against this server (context `federation`).
    pub fn kubectl_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_bin());
        cmd.arg("--kubeconfig")
            .arg(self.kubeconfig())
            .arg("--context=federation")
            .args(args)
            .env("KUBECACHEDIR", self.dir.path().join("kubecache"))
            .env_remove("KUBECONFIG");
        cmd
    }

    /// Run kubectl; any exit status.
    pub fn kubectl(&self, args: &[&str]) -> Result<Output> {
        self.kubectl_cmd(args)
            .output()
            .with_context(|| format!("running {} (set $KUBECTL)", kubectl_bin().display()))
    }

    /// Run kubectl with `stdin` as input; any exit status.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Result<Output> {
        let mut child = self
            .kubectl_cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        child
            .stdin
            .take()
            .context("stdin")?
            .write_all(stdin.as_bytes())?;
        Ok(child.wait_with_output()?)
    }

    /// Run kubectl, require success, return stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> Result<String> {
        let out = self.kubectl(args)?;
        check(args, out)
    }

    /// Run kubectl with stdin, require success, return stdout.
    pub fn kubectl_stdin_ok(&self, args: &[&str], stdin: &str) -> Result<String> {
        let out = self.kubectl_stdin(args, stdin)?;
        check(args, out)
    }

    /// `kubectl get ARGS -o json`, parsed; `None` when the object (or its
    /// kind) does not exist there.
    pub fn kubectl_get(&self, args: &[&str]) -> Result<Option<serde_json::Value>> {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl(&full)?;
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            return Ok(Some(
                serde_json::from_str(&text).with_context(|| format!("not JSON: {text}"))?,
            ));
        }
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("NotFound")
            || err.contains("not found")
            || err.contains("doesn't have a resource type")
        {
            return Ok(None);
        }
        bail!("kubectl {} failed: {err}", full.join(" "))
    }

    /// Run kubectl, require failure, return stderr.
    pub fn kubectl_err(&self, args: &[&str]) -> Result<String> {
        let out = self.kubectl(args)?;
        if out.status.success() {
            bail!(
                "kubectl {} succeeded but was expected to fail: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout)
            );
        }
        Ok(String::from_utf8_lossy(&out.stderr).into_owned())
    }

    /// A `kube::Client` with the admin credentials.
    pub async fn client(&self) -> Result<kube::Client> {
        let kc = kube::config::Kubeconfig::read_from(self.kubeconfig())?;
        let config = kube::Config::from_custom_kubeconfig(
            kc,
            &kube::config::KubeConfigOptions {
                context: Some("federation".into()),
                ..Default::default()
            },
        )
        .await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// Stop with SIGKILL (no shutdown work at all).
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stop gracefully (SIGTERM), waiting up to 20 s, then SIGKILL.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Restart on the same data dir and port.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        let port = self.port;
        self.spawn(port)
    }

    /// Restart on the same data dir and port with other extra `serve`
    /// flags (they stay for later restarts).
    pub fn restart_with(&mut self, extra: &[&str]) -> Result<()> {
        self.stop();
        self.extra_args = extra.iter().map(|s| s.to_string()).collect();
        let port = self.port;
        self.spawn(port)
    }

    /// Restart after a SIGKILL, on the same data dir and port.
    pub fn crash_and_restart(&mut self) -> Result<()> {
        self.kill9();
        let port = self.port;
        self.spawn(port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `out`'s stdout if kubectl (run with `args`) succeeded, else an error
/// with both its outputs.
pub fn check(args: &[&str], out: Output) -> Result<String> {
    if !out.status.success() {
        bail!(
            "kubectl {} failed ({}):\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Poll `f` until it returns `Ok(Some(v))`, up to `timeout`.
pub fn eventually<T>(timeout: Duration, mut f: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + timeout;
    let mut last_err = None;
    loop {
        match f() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_err = Some(e),
        }
        if Instant::now() > deadline {
            match last_err {
                Some(e) => return Err(e.context("condition not met in time")),
                None => bail!("condition not met within {timeout:?}"),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
