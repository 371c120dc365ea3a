//! The real kube-apiserver (from `../shared/kube`, see [`crate::etcd`]) on
//! an etcd the bench started, for `bench api --versus-kube`: the peer the
//! etcd engine is measured against, on the same etcd under another prefix.
//!
//! The flags are `kube.sh up`'s (read there), less the front-proxy ones
//! (nothing is aggregated here). The PKI is made by `ubernetes-certs`, the
//! same code that makes `ubernetes serve`'s: a CA, a serving certificate for
//! 127.0.0.1, an admin client certificate in `system:masters` (so both
//! servers are reached the same way: TLS with a client certificate), and
//! an ECDSA service-account key. The child is killed if the handle is
//! dropped; [`KubeApiserver::stop`] stops it by PID.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result};
use kube::Client;
use tokio::process::{Child, Command};

use crate::client;
use crate::procfs::Process;

/// How long kube-apiserver may take to be ready (it installs its
/// bootstrap objects and RBAC on a fresh etcd).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running kube-apiserver.
pub struct KubeApiserver {
    dir: tempfile::TempDir,
    child: Option<Child>,
    url: String,
    kubeconfig: PathBuf,
}

impl KubeApiserver {
    /// Start `bin` on `etcd_url` under `etcd_prefix` on a free port, and
    /// wait until `/readyz` is ok.
    pub async fn start(bin: &Path, etcd_url: &str, etcd_prefix: &str) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ubernetes-bench-kube-")
            .tempdir()
            .context("creating kube-apiserver's temporary dir")?;
        let pki = ubernetes_certs::ensure_dev_pki(&dir.path().join("pki"), &[])
            .context("making kube-apiserver's PKI")?;
        ubernetes_certs::ensure_service_account_key(&pki.dir)
            .context("making the service-account key")?;
        let sa_key = pki.dir.join(ubernetes_certs::SERVICE_ACCOUNT_KEY_FILE);
        let sa_pub = pki.dir.join(ubernetes_certs::SERVICE_ACCOUNT_PUB_FILE);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .context("finding a free port")?
            .local_addr()?
            .port();
        let url = format!("https://127.0.0.1:{port}");
        let kubeconfig = dir.path().join("kubeconfig");
        ubernetes_certs::write_kubeconfig(
            &kubeconfig,
            &url,
            &pki.ca.cert_pem,
            &pki.admin.cert_pem,
            &pki.admin.key_pem,
            "kube",
        )
        .context("writing kube-apiserver's kubeconfig")?;
        let log = std::fs::File::create(dir.path().join("apiserver.log"))
            .context("creating apiserver.log")?;
        let path = |p: PathBuf| p.display().to_string();
        let child = Command::new(bin)
            .arg("--bind-address=127.0.0.1")
            .arg("--advertise-address=127.0.0.1")
            .arg(format!("--secure-port={port}"))
            .arg(format!("--etcd-servers={etcd_url}"))
            .arg(format!("--etcd-prefix={etcd_prefix}"))
            .arg(format!("--tls-cert-file={}", path(pki.serving_cert_path())))
            .arg(format!(
                "--tls-private-key-file={}",
                path(pki.serving_key_path())
            ))
            .arg(format!("--client-ca-file={}", path(pki.ca_cert_path())))
            .arg("--authorization-mode=Node,RBAC")
            .arg("--service-cluster-ip-range=10.96.0.0/16")
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg(format!("--service-account-key-file={}", path(sa_pub)))
            .arg(format!(
                "--service-account-signing-key-file={}",
                path(sa_key)
            ))
            .arg("--allow-privileged=true")
            .arg("--endpoint-reconciler-type=none")
            .arg("--v=1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut s = Self {
            dir,
            child: Some(child),
            url,
            kubeconfig,
        };
        s.wait_ready().await?;
        Ok(s)
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let client = self.client().await?;
        let log = self.dir.path().join("apiserver.log");
        crate::server::wait_ready(
            &client,
            &mut self.child,
            "kube-apiserver",
            START_TIMEOUT,
            Duration::from_millis(200),
            || crate::server::tail_of(&log, 30),
        )
        .await
    }

    /// An admin client (`system:masters`).
    pub async fn client(&self) -> Result<Client> {
        client::from_kubeconfig(&self.kubeconfig, None).await
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The process, for CPU and memory readings.
    pub fn process(&self) -> Option<Process> {
        self.child.as_ref().and_then(Child::id).map(Process::new)
    }

    /// SIGTERM by PID, up to 20 s for a graceful exit, then SIGKILL.
    pub async fn stop(&mut self) {
        terminate(self.child.take(), Duration::from_secs(20)).await;
    }
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
