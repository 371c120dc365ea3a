//! A real etcd that the bench starts, SIGKILLs and restarts on the same
//! data dir and ports (the crash harness's etcd rounds), or keeps up for the
//! `bench api --versus-kube` comparison; and where the real Kubernetes
//! binaries come from (`../shared/kube/kube.sh`, see its README).
//!
//! Which etcd: `--etcd-bin`, else the etcd 3.5.30 that `kube.sh unpack`
//! puts in `~/.cache/ubernetes-kube/bin` (the etcd kube-apiserver 1.36 is
//! tested with), else `etcd` on `PATH` (Debian's `etcd-server`).
//!
//! The child is killed if the handle is dropped (`kill_on_drop`), so an
//! error anywhere still stops it; [`ManagedEtcd::stop`] stops it by PID.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// How long etcd may take to answer `/health` after a (re)start.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// `shared/kube/kube.sh`: `$UBERNETES_KUBE_SH`, else the first
/// `shared/kube/kube.sh` in the parent directories of the current
/// directory, of this executable, or of this crate's source (the checkout's
/// `../shared/kube`, as the e2e tests look for it).
pub fn find_kube_sh() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("UBERNETES_KUBE_SH").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.push(exe);
    }
    roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    roots.iter().find_map(|root| {
        root.ancestors()
            .map(|d| d.join("shared/kube/kube.sh"))
            .find(|p| p.is_file())
    })
}

/// `kube.sh unpack`: unpack (or check) the upstream binaries and return
/// the directory that holds them.
pub async fn unpack_kube_binaries(kube_sh: &Path) -> Result<PathBuf> {
    let out = Command::new("bash")
        .arg(kube_sh)
        .arg("unpack")
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {} unpack", kube_sh.display()))?;
    if !out.status.success() {
        bail!(
            "{} unpack failed: {}",
            kube_sh.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !dir.is_dir() {
        bail!(
            "{} unpack printed {:?}, not a directory",
            kube_sh.display(),
            dir
        );
    }
    Ok(dir)
}

/// The etcd binary to run (see the module docs); `None` when there is none.
pub async fn find_etcd(explicit: Option<&Path>) -> Result<Option<PathBuf>> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("--etcd-bin {}: no such file", p.display());
        }
        return Ok(Some(p.to_path_buf()));
    }
    if let Some(sh) = find_kube_sh() {
        let dir = unpack_kube_binaries(&sh).await?;
        let etcd = dir.join("etcd");
        if etcd.is_file() {
            return Ok(Some(etcd));
        }
    }
    Ok(std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("etcd"))
            .find(|p| p.is_file())
    }))
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")
        .context("finding a free port")?
        .local_addr()?
        .port())
}

/// A running (or killed) etcd on a temporary data dir.
pub struct ManagedEtcd {
    bin: PathBuf,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    /// How many times it was started.
    pub starts: usize,
}

impl ManagedEtcd {
    /// Start etcd on free loopback ports and a fresh data dir; wait until
    /// `/health` says so.
    pub async fn start(bin: PathBuf) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ubernetes-bench-etcd-")
            .tempdir()
            .context("creating etcd's temporary dir")?;
        let client_port = free_port()?;
        let mut peer_port = free_port()?;
        while peer_port == client_port {
            peer_port = free_port()?;
        }
        let mut etcd = Self {
            bin,
            dir,
            client_port,
            peer_port,
            child: None,
            starts: 0,
        };
        etcd.spawn().await?;
        Ok(etcd)
    }

    /// `http://127.0.0.1:PORT`, for `--etcd-servers`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The binary that runs.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// The last `n` lines of etcd's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    async fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening etcd.log")?;
        let url = self.url();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        // The flags of kube.sh's start_etcd: one member, loopback only.
        let child = Command::new(&self.bin)
            .arg("--name=bench")
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={url}"))
            .arg(format!("--advertise-client-urls={url}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=bench={peer}"))
            .arg("--initial-cluster-state=new")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        self.child = Some(child);
        self.starts += 1;
        self.wait_healthy().await
    }

    /// Poll `GET /health` until it reports `"health":"true"`.
    async fn wait_healthy(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if health(self.client_port).await {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                bail!("etcd exited with {status}; log:\n{}", self.log_tail(30));
            }
            if Instant::now() > deadline {
                bail!(
                    "etcd was not healthy in {START_TIMEOUT:?}; log:\n{}",
                    self.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL: no shutdown work at all. Waits until the process is gone.
    pub async fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// Start again on the same data dir and ports (after [`Self::kill9`]).
    pub async fn restart(&mut self) -> Result<()> {
        self.kill9().await;
        self.spawn().await
    }

    /// SIGTERM by PID, up to 10 s for a clean exit, then SIGKILL.
    pub async fn stop(&mut self) {
        crate::server::terminate(self.child.take(), Duration::from_secs(10)).await;
    }
}

/// Whether etcd on `port` answers `GET /health` with `"health":"true"`.
/// A raw HTTP/1.0 request: one line each way, not worth an HTTP client.
async fn health(port: u16) -> bool {
    let attempt = async {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .ok()?;
        let mut body = Vec::new();
        s.read_to_end(&mut body).await.ok()?;
        Some(is_healthy_reply(&String::from_utf8_lossy(&body)))
    };
    tokio::time::timeout(Duration::from_secs(2), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// Whether a `/health` reply (status line, headers and body) says healthy.
fn is_healthy_reply(reply: &str) -> bool {
    reply.starts_with("HTTP/1.") && reply.split_whitespace().nth(1) == Some("200") && {
        let compact: String = reply.chars().filter(|c| !c.is_whitespace()).collect();
        compact.contains(r#""health":"true""#)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_200_with_health_true_is_healthy() {
        assert!(is_healthy_reply(
            "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"health\":\"true\",\"reason\":\"\"}"
        ));
        assert!(!is_healthy_reply(
            "HTTP/1.0 503 Service Unavailable\r\n\r\n{\"health\":\"false\",\"reason\":\"RAFT NO LEADER\"}"
        ));
        assert!(!is_healthy_reply(
            "HTTP/1.0 200 OK\r\n\r\n{\"health\":\"false\"}"
        ));
        assert!(!is_healthy_reply(""));
    }

    #[tokio::test]
    async fn a_missing_etcd_bin_is_a_clear_error() {
        let err = find_etcd(Some(Path::new("/nonexistent/etcd")))
            .await
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("no such file")),
            "{err:?}"
        );
    }
}
