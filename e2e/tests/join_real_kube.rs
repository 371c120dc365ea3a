//! `ubernetes join` against a real kube-apiserver member (v1.36, with
//! kube-controller-manager's token controller filling the token Secret),
//! from `../shared/kube/kube.sh`: the federation stores a kubeconfig with
//! the member's service-account JWT, that kubeconfig works against the real
//! member as `system:serviceaccount:federation-system:ubernetes-NAME`, the
//! Cluster becomes Ready, and the token dies with unjoin.
//!
//! Skipped, with a message saying why, when `shared/kube/kube.sh` is not
//! beside the checkout (or at `$UBERNETES_KUBE_SH`).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
use ubernetes_e2e::{Server, eventually, kubectl_bin, ubernetes_bin};

fn ubernetes_ok(args: &[&str]) -> Result<String> {
    let out = Command::new(ubernetes_bin())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .context("running ubernetes (cargo build -p ubernetes)")?;
    if !out.status.success() {
        bail!(
            "ubernetes {} failed:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn kubectl_with(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Result<Output> {
    Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env("KUBECACHEDIR", cache)
        .env_remove("KUBECONFIG")
        .output()
        .context("running kubectl (set $KUBECTL)")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn join_and_unjoin_a_real_kube_apiserver_member() -> Result<()> {
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-apiserver to join"
        );
        return Ok(());
    };
    let name = format!("tok{}", std::process::id());
    let kube = KubeCluster::up(&script, &name, true)?;
    let host = Server::start()?;
    let dir = tempfile::tempdir()?;
    let member_kc = kube.kubeconfig.to_string_lossy().into_owned();
    let host_kc = host.kubeconfig().to_string_lossy().into_owned();
    let out = ubernetes_ok(&[
        "join",
        "real",
        "--cluster-context",
        &name,
        "--kubeconfig",
        &member_kc,
        "--federation-kubeconfig",
        &host_kc,
    ])?;
    assert!(
        out.contains("created cluster real in the federation"),
        "{out}"
    );

    // The stored kubeconfig carries the real member's JWT and works there.
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_str(&host.kubectl_ok(&[
        "get",
        "secret",
        "real",
        "-n",
        "federation-system",
        "-o",
        "json",
    ])?)?;
    let stored = secret
        .data
        .and_then(|mut d| d.remove("kubeconfig"))
        .context("the Secret has a kubeconfig")?;
    let stored_path = dir.path().join("real-kubeconfig");
    std::fs::write(&stored_path, &stored.0)?;
    let cache = dir.path().join("cache");
    let out = kubectl_with(&stored_path, &cache, &["auth", "whoami"])?;
    assert!(
        text(&out).contains("system:serviceaccount:federation-system:ubernetes-real"),
        "{}",
        text(&out)
    );
    let out = kubectl_with(&stored_path, &cache, &["get", "namespaces"])?;
    assert!(
        out.status.success() && text(&out).contains("kube-system"),
        "{}",
        text(&out)
    );

    // The federation reaches the member with it: the Cluster is Ready.
    eventually(Duration::from_secs(60), || {
        let out = host.kubectl(&["get", "cluster", "real", "-o", "json"])?;
        let cluster: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let ready = cluster["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        Ok(ready.then_some(()))
    })
    .with_context(|| format!("cluster real never Ready; host log:\n{}", host.log_tail()))?;

    ubernetes_ok(&[
        "unjoin",
        "real",
        "--cluster-context",
        &name,
        "--kubeconfig",
        &member_kc,
        "--federation-kubeconfig",
        &host_kc,
    ])?;
    // Its binding goes first (403), then its account and token Secret: 401.
    eventually(Duration::from_secs(30), || {
        let out = kubectl_with(&stored_path, &cache, &["get", "namespaces"])?;
        let t = text(&out);
        Ok(
            (!out.status.success() && (t.contains("Unauthorized") || t.contains("logged in")))
                .then_some(()),
        )
    })?;
    Ok(())
}
