//! Service-account token Secrets with kubectl 1.37: a Secret of type
//! `kubernetes.io/service-account-token` is filled in by the server (a JWT,
//! the server's CA, namespace); kubectl with that token is
//! `system:serviceaccount:NS:NAME`, refused by RBAC until bound and allowed as
//! bound; deleting the account deletes its token Secret and the token stops
//! working (401); a token Secret for a missing account is deleted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ubernetes_e2e::{Server, eventually, kubectl_bin};

const TOKEN_SECRET: &str = r#"apiVersion: v1
kind: Secret
metadata:
  name: robot-token
  namespace: team
  annotations:
    kubernetes.io/service-account.name: robot
type: kubernetes.io/service-account-token
"#;

/// Base64 decoding, as k8s-openapi decodes a Secret's `data`.
fn b64decode(text: &str) -> Result<Vec<u8>> {
    Ok(serde_json::from_value::<k8s_openapi::ByteString>(serde_json::json!(text.trim()))?.0)
}

/// A `data` key of a Secret, decoded: `None` when the Secret does not
/// exist, empty when the key is missing.
fn secret_key(server: &Server, ns: &str, name: &str, key: &str) -> Result<Option<Vec<u8>>> {
    let out = server.kubectl(&["get", "secret", name, "-n", ns, "-o", "json"])?;
    if !out.status.success() {
        return Ok(None);
    }
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_slice(&out.stdout)?;
    Ok(Some(
        secret
            .data
            .and_then(|mut d| d.remove(key))
            .map(|b| b.0)
            .unwrap_or_default(),
    ))
}

/// A copy of the admin kubeconfig with a context `robot` using `token`.
fn token_kubeconfig(server: &Server, dir: &Path, token: &str) -> Result<PathBuf> {
    let path = dir.join("robot-kubeconfig");
    std::fs::copy(server.kubeconfig(), &path)?;
    for args in [
        vec![
            "set-credentials".to_string(),
            "robot".into(),
            format!("--token={token}"),
        ],
        vec![
            "set-context".into(),
            "robot".into(),
            "--cluster=federation".into(),
            "--user=robot".into(),
        ],
    ] {
        let out = Command::new(kubectl_bin())
            .arg("--kubeconfig")
            .arg(&path)
            .arg("config")
            .args(&args)
            .env_remove("KUBECONFIG")
            .output()?;
        if !out.status.success() {
            bail!(
                "kubectl config {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    Ok(path)
}

fn as_robot(kubeconfig: &Path, dir: &Path, args: &[&str]) -> Result<Output> {
    Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--context=robot")
        .args(args)
        .env("KUBECACHEDIR", dir.join("cache-robot"))
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
fn a_service_account_token_secret_is_filled_and_authenticates_as_its_account_under_rbac()
-> Result<()> {
    let server = Server::start()?;
    let dir = tempfile::tempdir()?;
    server.kubectl_ok(&["create", "namespace", "team"])?;
    server.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "team"])?;
    server.kubectl_ok(&[
        "create",
        "configmap",
        "c1",
        "-n",
        "team",
        "--from-literal=k=v",
    ])?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], TOKEN_SECRET)?;

    let token = eventually(Duration::from_secs(20), || {
        Ok(secret_key(&server, "team", "robot-token", "token")?.filter(|t| !t.is_empty()))
    })?;
    let token = String::from_utf8(token)?;
    // A JWT with kube's legacy claims (issuer kubernetes/serviceaccount).
    let payload = token.split('.').nth(1).unwrap_or_default();
    let claims: serde_json::Value = serde_json::from_slice(&base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        payload,
    )?)?;
    assert_eq!(claims["iss"], "kubernetes/serviceaccount", "{claims}");
    assert_eq!(claims["sub"], "system:serviceaccount:team:robot");
    assert_eq!(
        claims["kubernetes.io/serviceaccount/secret.name"],
        "robot-token"
    );
    assert_eq!(
        secret_key(&server, "team", "robot-token", "namespace")?,
        Some(b"team".to_vec())
    );
    // ca.crt is the CA of the admin kubeconfig: the server's own.
    let ca = secret_key(&server, "team", "robot-token", "ca.crt")?.unwrap_or_default();
    let admin_ca = server.kubectl_ok(&[
        "config",
        "view",
        "--raw",
        "-o",
        "jsonpath={.clusters[0].cluster.certificate-authority-data}",
    ])?;
    assert!(String::from_utf8_lossy(&ca).contains("BEGIN CERTIFICATE"));
    assert_eq!(ca, b64decode(&admin_ca)?, "ca.crt is the server's CA");
    let annotations = server.kubectl_ok(&[
        "get",
        "secret",
        "robot-token",
        "-n",
        "team",
        "-o",
        "jsonpath={.metadata.annotations.kubernetes\\.io/service-account\\.uid}",
    ])?;
    let sa_uid = server.kubectl_ok(&[
        "get",
        "sa",
        "robot",
        "-n",
        "team",
        "-o",
        "jsonpath={.metadata.uid}",
    ])?;
    assert_eq!(annotations, sa_uid, "the account's uid is recorded");

    let kubeconfig = token_kubeconfig(&server, dir.path(), &token)?;
    // Who am I: the account, in the service-account groups.
    let whoami = eventually(Duration::from_secs(10), || {
        let out = as_robot(&kubeconfig, dir.path(), &["auth", "whoami"])?;
        Ok(out.status.success().then(|| text(&out)))
    })?;
    assert!(
        whoami.contains("system:serviceaccount:team:robot"),
        "{whoami}"
    );
    assert!(
        whoami.contains("system:serviceaccounts:team") && whoami.contains("system:authenticated"),
        "{whoami}"
    );

    // Not bound yet: kube's 403 wording.
    let out = as_robot(
        &kubeconfig,
        dir.path(),
        &["get", "configmaps", "-n", "team"],
    )?;
    assert!(!out.status.success());
    assert!(
        text(&out).contains(
            "User \"system:serviceaccount:team:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team\""
        ),
        "{}",
        text(&out)
    );

    // Bound to view in team: reads there, still refused elsewhere and on writes.
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=team:robot",
        "-n",
        "team",
    ])?;
    let listed = eventually(Duration::from_secs(10), || {
        let out = as_robot(
            &kubeconfig,
            dir.path(),
            &["get", "configmaps", "-n", "team"],
        )?;
        Ok(out.status.success().then(|| text(&out)))
    })?;
    assert!(listed.contains("c1"), "{listed}");
    let out = as_robot(
        &kubeconfig,
        dir.path(),
        &["get", "configmaps", "-n", "default"],
    )?;
    assert!(
        !out.status.success() && text(&out).contains("Forbidden"),
        "{}",
        text(&out)
    );
    let out = as_robot(
        &kubeconfig,
        dir.path(),
        &["create", "configmap", "c2", "-n", "team"],
    )?;
    assert!(
        !out.status.success() && text(&out).contains("cannot create"),
        "{}",
        text(&out)
    );

    // The account goes: its token Secret goes, and the token is refused.
    server.kubectl_ok(&["delete", "serviceaccount", "robot", "-n", "team"])?;
    eventually(Duration::from_secs(10), || {
        Ok(secret_key(&server, "team", "robot-token", "token")?
            .is_none()
            .then_some(()))
    })?;
    let refused = eventually(Duration::from_secs(10), || {
        let out = as_robot(
            &kubeconfig,
            dir.path(),
            &["get", "configmaps", "-n", "team"],
        )?;
        Ok((!out.status.success() && text(&out).contains("Unauthorized")).then(|| text(&out)))
    })?;
    assert!(refused.contains("must be logged in"), "{refused}");
    Ok(())
}

#[test]
fn a_token_secret_for_a_missing_service_account_is_deleted() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "team"])?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], TOKEN_SECRET)?;
    eventually(Duration::from_secs(10), || {
        let out = server.kubectl(&["get", "secret", "robot-token", "-n", "team"])?;
        Ok((!out.status.success()).then_some(()))
    })?;
    Ok(())
}
