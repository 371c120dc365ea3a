//! A `ubernetes serve` child process that the bench starts, kills and
//! restarts: on a temporary data dir, port 0 at first (the server prints
//! `ubernetes: serving on URL` and `ubernetes: kubeconfig PATH` on stdout,
//! see `crates/apiserver/src/serve.rs`), the same port and data dir on
//! every restart. Its log (stderr) goes to `server.log` in the temp dir.
//! The child is killed if the handle is dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::Client;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::client;
use crate::procfs::Process;

/// How long a start may take until the server says where it serves and is ready.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The default path of the server binary: `ubernetes` next to this executable.
pub fn default_bin() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("ubernetes")))
        .unwrap_or_else(|| PathBuf::from("ubernetes"))
}

/// How to start the server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The `ubernetes` binary.
    pub bin: PathBuf,
    /// Its `--log-level`.
    pub log_level: String,
    /// More `serve` flags (e.g. `--federation-controllers=false`).
    pub extra_args: Vec<String>,
}

/// A running (or killed) `ubernetes serve`.
pub struct ManagedServer {
    spec: ServerSpec,
    dir: tempfile::TempDir,
    child: Option<Child>,
    port: u16,
    url: String,
    kubeconfig: PathBuf,
}

impl ManagedServer {
    /// Start a server on a fresh temporary data dir and a free port, and
    /// wait until it is ready.
    pub async fn start(spec: ServerSpec) -> Result<Self> {
        let mut s = Self::start_unready(spec).await?;
        s.wait_ready().await?;
        Ok(s)
    }

    /// Start a server and return once it announced its URL, before it is
    /// ready (so several can start at once; see [`Self::wait_ready`]).
    pub async fn start_unready(spec: ServerSpec) -> Result<Self> {
        if !spec.bin.exists() {
            bail!(
                "{} not found: build it (`cargo build --release -p ubernetes`) or pass --ubernetes-bin",
                spec.bin.display()
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("ubernetes-bench-")
            .tempdir()
            .context("creating a temporary data dir")?;
        let mut s = Self {
            spec,
            dir,
            child: None,
            port: 0,
            url: String::new(),
            kubeconfig: PathBuf::new(),
        };
        s.spawn().await?;
        Ok(s)
    }

    /// Start the process on `self.port` (0 the first time) and wait until
    /// it announced its URL and kubeconfig.
    async fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening server.log")?;
        let mut child = Command::new(&self.spec.bin)
            .arg("serve")
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--secure-port")
            .arg(self.port.to_string())
            .arg("--bind-address")
            .arg("127.0.0.1")
            .arg("--log-level")
            .arg(&self.spec.log_level)
            .args(&self.spec.extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.spec.bin.display()))?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        self.child = Some(child);

        let mut lines = BufReader::new(stdout).lines();
        let mut url = None;
        let mut kubeconfig = None;
        let announced = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(u) = line.strip_prefix("ubernetes: serving on ") {
                    url = Some(u.trim().to_owned());
                } else if let Some(k) = line.strip_prefix("ubernetes: kubeconfig ") {
                    kubeconfig = Some(PathBuf::from(k.trim()));
                }
                if url.is_some() && kubeconfig.is_some() {
                    return Ok::<_, std::io::Error>(true);
                }
            }
            Ok(false)
        })
        .await;
        match announced {
            Ok(Ok(true)) => {}
            _ => {
                self.kill9().await;
                bail!(
                    "the server did not print its URL and kubeconfig; log:\n{}",
                    self.log_tail(40)
                );
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

        let url = url.unwrap_or_default();
        self.port = port_of(&url).with_context(|| format!("no port in {url:?}"))?;
        self.url = url;
        self.kubeconfig = kubeconfig.unwrap_or_default();
        Ok(())
    }

    /// Poll `/readyz` until it says `ok`.
    pub async fn wait_ready(&mut self) -> Result<()> {
        let client = self.client().await?;
        let log = self.log_path();
        wait_ready(
            &client,
            &mut self.child,
            "the server",
            START_TIMEOUT,
            Duration::from_millis(50),
            || tail_of(&log, 40),
        )
        .await
    }

    /// An admin client for it (a new connection pool).
    pub async fn client(&self) -> Result<Client> {
        client::from_kubeconfig(&self.kubeconfig, None).await
    }

    /// Its admin kubeconfig.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The process, for CPU and memory readings; `None` once stopped.
    pub fn process(&self) -> Option<Process> {
        self.child.as_ref().and_then(Child::id).map(Process::new)
    }

    /// The data dir (kept across restarts).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        tail_of(&self.log_path(), n)
    }

    /// SIGKILL: no shutdown work at all. Waits for the process to be gone.
    pub async fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// Start again on the same data dir and port, after [`Self::kill9`] or
    /// [`Self::stop`].
    pub async fn restart(&mut self) -> Result<()> {
        self.kill9().await;
        self.spawn().await?;
        self.wait_ready().await
    }

    /// Start again on the same data dir and port after [`Self::stop`],
    /// returning once it announced its URL (not yet ready).
    pub async fn relaunch(&mut self) -> Result<()> {
        self.kill9().await;
        self.spawn().await
    }

    /// SIGTERM, up to 20 s for a graceful exit, then SIGKILL.
    pub async fn stop(&mut self) {
        terminate(self.child.take(), Duration::from_secs(20)).await;
    }
}

/// The port of `https://HOST:PORT[/]`.
fn port_of(url: &str) -> Option<u16> {
    url.trim_end_matches('/').rsplit(':').next()?.parse().ok()
}

/// Stop a child process by PID: SIGTERM, up to `grace` for it to exit, then
/// SIGKILL (every process the bench starts is stopped this way).
pub async fn terminate(child: Option<Child>, grace: Duration) {
    let Some(mut child) = child else { return };
    if let Some(pid) = child.id() {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .await;
    }
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

/// The last `n` lines of a log file ("" when it cannot be read).
pub fn tail_of(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Poll `/readyz` through `client` until it says `ok`, every `every`;
/// fail with the log's tail when `child` exits or `timeout` passes. `what`
/// names the server in the error ("the server", "kube-apiserver").
pub async fn wait_ready(
    client: &Client,
    child: &mut Option<Child>,
    what: &str,
    timeout: Duration,
    every: Duration,
    log_tail: impl Fn() -> String,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if client::is_ready(client).await {
            return Ok(());
        }
        if let Some(child) = child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            bail!("{what} exited with {status}; log:\n{}", log_tail());
        }
        if Instant::now() > deadline {
            bail!("{what} was not ready in {timeout:?}; log:\n{}", log_tail());
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_the_announced_url() {
        assert_eq!(port_of("https://127.0.0.1:34567"), Some(34567));
        assert_eq!(port_of("https://[::1]:6443/"), Some(6443));
        assert_eq!(port_of("https://localhost"), None);
    }

    #[tokio::test]
    async fn a_missing_binary_is_a_clear_error() {
        let spec = ServerSpec {
            bin: PathBuf::from("/nonexistent/ubernetes"),
            log_level: "warn".into(),
            extra_args: Vec::new(),
        };
        let err = ManagedServer::start(spec)
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("not found")),
            "{err:?}"
        );
    }
}
