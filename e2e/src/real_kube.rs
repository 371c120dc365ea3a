//! A real Kubernetes control plane as a member cluster, from
//! `../shared/kube/kube.sh` (upstream kube-apiserver and etcd; see its
//! README): [`kube_sh`] finds the script, [`KubeCluster::up`] starts a
//! cluster on loopback and takes it down on drop. Tests that need one skip,
//! saying why, when the script is absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// `shared/kube/kube.sh` in the checkout's parent directories, or
/// `$UBERNETES_KUBE_SH`.
pub fn kube_sh() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("UBERNETES_KUBE_SH") {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(1)
        .map(|d| d.join("shared/kube/kube.sh"))
        .find(|p| p.exists())
}

/// A real cluster from kube.sh, taken down on drop.
pub struct KubeCluster {
    script: PathBuf,
    /// The cluster's name, also its kubeconfig context.
    pub name: String,
    state: tempfile::TempDir,
    /// Its admin kubeconfig (`system:masters`).
    pub kubeconfig: PathBuf,
}

impl KubeCluster {
    /// `kube.sh up NAME [--kcm]`: etcd and kube-apiserver, with `kcm` the
    /// controller manager too.
    pub fn up(script: &Path, name: &str, kcm: bool) -> Result<Self> {
        let state = tempfile::Builder::new()
            .prefix("ubernetes-kube-")
            .tempdir()?;
        let mut cmd = Command::new(script);
        cmd.args(["up", name]);
        if kcm {
            cmd.arg("--kcm");
        }
        let out = cmd
            .env("KUBE_STATE", state.path())
            .output()
            .context("running kube.sh up")?;
        let cluster = Self {
            script: script.to_path_buf(),
            name: name.to_string(),
            kubeconfig: PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()),
            state,
        };
        if !out.status.success() {
            bail!(
                "kube.sh up {name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(cluster)
    }

    /// kubectl against this cluster (its kubeconfig and context, a
    /// discovery cache of its own).
    pub fn kubectl(&self, args: &[&str]) -> Result<Output> {
        Command::new(crate::kubectl_bin())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--context", &self.name])
            .args(args)
            .env("KUBECACHEDIR", self.state.path().join("kubectl-cache"))
            .env_remove("KUBECONFIG")
            .output()
            .context("running kubectl (set $KUBECTL)")
    }

    /// The cluster's API server URL (its kubeconfig's server).
    pub fn server(&self) -> Result<String> {
        let args = [
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ];
        Ok(crate::check(&args, self.kubectl(&args)?)?
            .trim()
            .to_string())
    }

    /// `kubectl get ARGS -o json` against this cluster; `None` when it
    /// fails (e.g. not found).
    pub fn get(&self, args: &[&str]) -> Result<Option<serde_json::Value>> {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl(&full)?;
        Ok(out
            .status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).ok())
            .flatten())
    }

    /// `ubernetes join NAME` of this cluster into the federation `host`
    /// (the Cluster is named `name`).
    pub fn join(&self, host: &crate::Server, name: &str) -> Result<()> {
        let out = Command::new(crate::ubernetes_bin())
            .args([
                "join",
                name,
                "--cluster-context",
                &self.name,
                "--kubeconfig",
            ])
            .arg(&self.kubeconfig)
            .arg("--federation-kubeconfig")
            .arg(host.kubeconfig())
            .env_remove("KUBECONFIG")
            .output()
            .context("running ubernetes join (cargo build -p ubernetes)")?;
        if !out.status.success() {
            bail!(
                "ubernetes join {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }

    /// A `kube::Client` with the cluster's admin credentials.
    pub async fn client(&self) -> Result<kube::Client> {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig)?;
        let config = kube::Config::from_custom_kubeconfig(
            kc,
            &kube::config::KubeConfigOptions {
                context: Some(self.name.clone()),
                ..Default::default()
            },
        )
        .await?;
        Ok(kube::Client::try_from(config)?)
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .args(["down", &self.name])
            .env("KUBE_STATE", self.state.path())
            .output();
    }
}
