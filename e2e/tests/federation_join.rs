//! `ubernetes join` and `unjoin` between two real servers: the member (our
//! binary with `--federation-controllers=false`, as any Kubernetes) gets a
//! service account; the federation gets the Secret with a kubeconfig of that
//! account's token (not the admin's certificate) and the Cluster; kubectl
//! with that kubeconfig works against the member; join again changes
//! nothing; unjoin (with `--remove-propagated`) removes the Cluster, the
//! Secret, the member's account and what was labelled as propagated.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ubernetes_e2e::{Server, eventually, kubectl_bin, ubernetes_bin};

fn ubernetes(args: &[&str]) -> Result<Output> {
    Command::new(ubernetes_bin())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .context("running ubernetes (cargo build -p ubernetes)")
}

fn ubernetes_ok(args: &[&str]) -> Result<String> {
    let out = ubernetes(args)?;
    if !out.status.success() {
        bail!(
            "ubernetes {} failed ({}):\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// kubectl with a kubeconfig's current context.
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

/// The member kubeconfig stored in the federation's Secret, if any.
fn stored_kubeconfig(host: &Server) -> Result<Option<String>> {
    let out = host.kubectl(&[
        "get",
        "secret",
        "m1",
        "-n",
        "federation-system",
        "-o",
        "json",
    ])?;
    if !out.status.success() {
        return Ok(None);
    }
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_slice(&out.stdout)?;
    let bytes = secret
        .data
        .and_then(|mut d| d.remove("kubeconfig"))
        .context("the Secret has a key kubeconfig")?;
    Ok(Some(String::from_utf8(bytes.0)?))
}

#[test]
fn join_stores_a_service_account_kubeconfig_and_a_cluster_and_unjoin_removes_them() -> Result<()> {
    let host = Server::start()?;
    let member = Server::start_with(&["--federation-controllers=false"])?;
    let dir = tempfile::tempdir()?;
    let member_kc = member.kubeconfig().to_string_lossy().into_owned();
    let host_kc = host.kubeconfig().to_string_lossy().into_owned();
    let join = [
        "join",
        "m1",
        "--cluster-context",
        "federation",
        "--kubeconfig",
        member_kc.as_str(),
        "--federation-kubeconfig",
        host_kc.as_str(),
    ];

    let out = ubernetes_ok(&join)?;
    for line in [
        "created service account federation-system/ubernetes-m1 in federation",
        "created cluster role binding ubernetes:federation-member:m1 in federation",
        "created secret federation-system/m1 in the federation",
        "created cluster m1 in the federation",
    ] {
        assert!(out.contains(line), "{line:?} missing from:\n{out}");
    }

    // The Cluster points at the member and names the Secret.
    let cluster: serde_json::Value =
        serde_json::from_str(&host.kubectl_ok(&["get", "cluster", "m1", "-o", "json"])?)?;
    assert_eq!(
        cluster["spec"]["serverAddressByClientCIDRs"],
        serde_json::json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": member.url()}])
    );
    assert_eq!(cluster["spec"]["secretRef"]["name"], "m1");

    // The Secret's kubeconfig is the account's token, not the admin's
    // certificate, and works against the member.
    let stored = stored_kubeconfig(&host)?.context("Secret federation-system/m1 exists")?;
    assert!(stored.contains("token:"), "{stored}");
    assert!(
        !stored.contains("client-certificate-data") && !stored.contains("client-key-data"),
        "{stored}"
    );
    let member_admin = std::fs::read_to_string(member.kubeconfig())?;
    assert!(member_admin.contains("client-certificate-data"));
    let stored_path = dir.path().join("m1-kubeconfig");
    std::fs::write(&stored_path, &stored)?;
    let cache = dir.path().join("cache");
    let out = kubectl_with(&stored_path, &cache, &["get", "namespaces"])?;
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("federation-system"), "{}", text(&out));
    let out = kubectl_with(&stored_path, &cache, &["auth", "whoami"])?;
    assert!(
        text(&out).contains("system:serviceaccount:federation-system:ubernetes-m1"),
        "{}",
        text(&out)
    );

    // Join again: nothing changes, the same credentials stay valid.
    let again = ubernetes_ok(&join)?;
    assert!(
        again.contains("unchanged service account federation-system/ubernetes-m1 in federation"),
        "{again}"
    );
    assert!(
        again.contains("unchanged cluster m1 in the federation"),
        "{again}"
    );
    assert_eq!(stored_kubeconfig(&host)?.as_deref(), Some(stored.as_str()));

    // Something the federation propagated, and something it did not.
    member.kubectl_ok(&["create", "configmap", "propagated", "-n", "default"])?;
    member.kubectl_ok(&[
        "label",
        "configmap",
        "propagated",
        "-n",
        "default",
        "federation.kubernetes.io/managed=true",
    ])?;
    member.kubectl_ok(&["create", "configmap", "local", "-n", "default"])?;

    let out = ubernetes_ok(&[
        "unjoin",
        "m1",
        "--remove-propagated",
        "--cluster-context",
        "federation",
        "--kubeconfig",
        member_kc.as_str(),
        "--federation-kubeconfig",
        host_kc.as_str(),
    ])?;
    assert!(
        out.contains("deleted cluster m1 in the federation"),
        "{out}"
    );
    assert!(
        out.contains("deleted service account federation-system/ubernetes-m1 in federation"),
        "{out}"
    );
    let gone = host.kubectl(&["get", "cluster", "m1"])?;
    assert!(
        !gone.status.success() && text(&gone).contains("NotFound"),
        "{}",
        text(&gone)
    );
    assert_eq!(stored_kubeconfig(&host)?, None);
    for args in [
        [
            "get",
            "serviceaccount",
            "ubernetes-m1",
            "-n",
            "federation-system",
        ],
        [
            "get",
            "clusterrolebinding",
            "ubernetes:federation-member:m1",
            "-n",
            "default",
        ],
        ["get", "configmap", "propagated", "-n", "default"],
    ] {
        let out = member.kubectl(&args)?;
        assert!(
            !out.status.success(),
            "{args:?} still there: {}",
            text(&out)
        );
    }
    member.kubectl_ok(&["get", "configmap", "local", "-n", "default"])?;
    // The account's credentials are dead.
    let refused = eventually(Duration::from_secs(10), || {
        let out = kubectl_with(&stored_path, &cache, &["get", "namespaces"])?;
        Ok((!out.status.success()).then(|| text(&out)))
    })?;
    assert!(
        refused.contains("Unauthorized") || refused.contains("logged in"),
        "{refused}"
    );
    Ok(())
}

#[test]
fn join_with_an_unknown_context_names_the_flag_to_fix() -> Result<()> {
    let host = Server::start()?;
    let host_kc = host.kubeconfig().to_string_lossy().into_owned();
    let out = ubernetes(&[
        "join",
        "m1",
        "--cluster-context",
        "nope",
        "--kubeconfig",
        host_kc.as_str(),
        "--federation-kubeconfig",
        host_kc.as_str(),
    ])?;
    assert!(!out.status.success());
    let err = text(&out);
    assert!(err.contains("context \"nope\" not found"), "{err}");
    assert!(err.contains("--cluster-context"), "{err}");
    Ok(())
}
