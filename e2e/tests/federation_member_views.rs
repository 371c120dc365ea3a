//! Seeing into the members through the federation (SPEC §3.13, issue 25
//! items 1 and 2), real processes and the real kubectl:
//!
//! - `ubernetes kubeconfig --members` adds `federation@NAME` per joined
//!   cluster and `federation@all`; `kubectl --context federation@m1 get cm`
//!   shows m1's copies, `apply` and `delete` through it act in m1 only;
//! - upgrades pass through the cluster proxy both ways: against an echo
//!   member (a small HTTP server in this test that speaks WebSocket with
//!   kube's `v5.channel.k8s.io` and serves a slowly streamed log), frames
//!   written through `clusters/echo/proxy/.../exec` come back; the member
//!   saw the handshake headers unchanged and the caller impersonated; a
//!   `SPDY/3.1` upgrade's bytes come back too; the member's refusal (a
//!   400) arrives as it is; a caller without `clusters/proxy` gets 403 and
//!   the member sees nothing;
//!   the real `kubectl exec -i ... -- cat` through `federation@echo` gets
//!   its stdin back; `kubectl logs -f` arrives line by line, not at the end;
//! - with `../shared/kube`, a real kube-apiserver member answers
//!   `kubectl exec`, `attach` and `port-forward` with its own error (it has
//!   no kubelet), and that answer arrives unchanged through
//!   `federation@real`.

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use ubernetes_e2e::federation::Federation;

mod proxy_support;
use proxy_support::*;

// ------------------------------------------------------------------ tests

#[test]
fn member_contexts_and_upgrades_through_the_federation() -> Result<()> {
    let fed = Federation::start(2, &[])?;
    fed.join(0, "m1", &[])?;
    fed.join(1, "m2", &[])?;
    let echo = EchoMember::start()?;
    fed.create_secret("echo", &echo.kubeconfig())?;
    fed.create_cluster("echo", &echo.url(), "echo", &[])?;
    fed.wait_ready("m1")?;
    fed.wait_ready("m2")?;
    fed.wait_ready("echo")?;
    let host = &fed.host;
    let (m1, m2) = (fed.member(0)?, fed.member(1)?);
    let dir = tempfile::tempdir()?;
    let kc = member_kubeconfig(host, dir.path())?;

    // The contexts: one per member, and `all`, beside `federation`.
    let contexts = kubectl_ok(&kc, "federation", &["config", "get-contexts", "-o", "name"])?;
    let mut contexts: Vec<&str> = contexts.lines().collect();
    contexts.sort_unstable();
    assert_eq!(
        contexts,
        [
            "federation",
            "federation@all",
            "federation@echo",
            "federation@m1",
            "federation@m2"
        ]
    );
    let server = kubectl_ok(
        &kc,
        "federation@m1",
        &[
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ],
    )?;
    assert_eq!(
        server,
        format!("{}/apis/federation/v1beta1/clusters/m1/proxy", host.url())
    );

    // (a) A federated ConfigMap's copy in m1, seen through federation@m1.
    host.kubectl_ok(&["create", "namespace", "views"])?;
    host.kubectl_ok(&[
        "create",
        "configmap",
        "shared",
        "-n",
        "views",
        "--from-literal=k=v",
    ])?;
    let copy = ubernetes_e2e::eventually(Duration::from_secs(30), || {
        let out = kubectl(
            &kc,
            "federation@m1",
            &["get", "cm", "shared", "-n", "views", "-o", "json"],
        )?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    })
    .context("the federated ConfigMap's copy should show through federation@m1")?;
    let copy: Value = serde_json::from_str(&copy)?;
    let in_m1 = m1
        .kubectl_get(&["configmap", "shared", "-n", "views"])?
        .context("the copy in m1")?;
    assert_eq!(copy["metadata"]["uid"], in_m1["metadata"]["uid"]);
    assert_ne!(
        copy["metadata"]["uid"],
        host.kubectl_get(&["configmap", "shared", "-n", "views"])?
            .context("the federated ConfigMap")?["metadata"]["uid"]
    );
    // apply and delete through federation@m1 act in m1 only.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "only-m1", "namespace": "views"},
                    "data": {"a": "b"}});
    let applied = kubectl_stdin(
        &kc,
        "federation@m1",
        &["apply", "-f", "-"],
        cm.to_string().as_bytes(),
    )?;
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    assert_eq!(
        m1.kubectl_get(&["configmap", "only-m1", "-n", "views"])?
            .context("applied in m1")?["data"]["a"],
        "b"
    );
    assert!(
        m2.kubectl_get(&["configmap", "only-m1", "-n", "views"])?
            .is_none()
    );
    assert!(
        host.kubectl_get(&["configmap", "only-m1", "-n", "views"])?
            .is_none()
    );
    let in_m1 = names(&kubectl_ok(
        &kc,
        "federation@m1",
        &["get", "cm", "-n", "views", "-o", "json"],
    )?)?;
    assert!(
        in_m1.contains(&"shared".into()) && in_m1.contains(&"only-m1".into()),
        "{in_m1:?}"
    );
    let in_m2 = names(&kubectl_ok(
        &kc,
        "federation@m2",
        &["get", "cm", "-n", "views", "-o", "json"],
    )?)?;
    assert!(!in_m2.contains(&"only-m1".into()), "{in_m2:?}");
    kubectl_ok(
        &kc,
        "federation@m1",
        &["delete", "cm", "only-m1", "-n", "views"],
    )?;
    assert!(
        m1.kubectl_get(&["configmap", "only-m1", "-n", "views"])?
            .is_none()
    );

    // (b) The byte path both ways, through the proxy, to the echo member.
    let exec = "/apis/federation/v1beta1/clusters/echo/proxy/api/v1/namespaces/x/pods/p/exec\
                ?command=cat&stdin=true&stdout=true";
    websocket_exec_round_trip(host, &echo, exec)?;
    spdy_exec_round_trip(host, &echo, exec)?;
    member_refusal_arrives_unchanged(host, exec)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;

    // A caller without clusters/proxy: the federation's 403, no upgrade,
    // nothing reaches the member.
    let before = echo.execs.lock().map(|s| s.len()).unwrap_or(0);
    let as_bob = exec_request(exec, &[("Impersonate-User", "bob")])?;
    let (code, body) = rt.block_on(answer(host, as_bob))?;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"User \"bob\" cannot get resource \"clusters/proxy\""#),
        "{body}"
    );
    assert_eq!(echo.execs.lock().map(|s| s.len()).unwrap_or(0), before);

    // The real kubectl exec through federation@echo: stdin comes back.
    let out = kubectl_stdin(
        &kc,
        "federation@echo",
        &["exec", "-i", "p", "-n", "x", "--", "cat"],
        b"through the federation\n",
    )?;
    assert!(
        out.status.success(),
        "kubectl exec: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "through the federation\n"
    );

    // (d) kubectl logs -f streams: each line as the member sends it.
    let mut child = kubectl_cmd(&kc, "federation@echo", &["logs", "-f", "p", "-n", "x"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().context("kubectl stdout")?;
    let mut arrivals = Vec::new();
    for line in BufReader::new(stdout).lines() {
        arrivals.push((line?, Instant::now()));
    }
    let status = child.wait()?;
    assert!(status.success(), "kubectl logs -f failed");
    let lines: Vec<&str> = arrivals.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(lines, ["line 0", "line 1", "line 2"]);
    // The member takes 1.6 s between the first line and the last: buffered,
    // they would arrive together.
    let spread = arrivals[2].1 - arrivals[0].1;
    assert!(
        spread >= Duration::from_millis(1200),
        "the lines arrived within {spread:?}: the log was not streamed"
    );
    Ok(())
}

/// A real kube-apiserver member (`../shared/kube`): `kubectl exec`,
/// `attach` and `port-forward` through `federation@real` get kube's own
/// answer (no kubelet: the pod has no node), the same as straight at the
/// member. Skipped without kube.sh.
#[test]
fn a_real_members_upgrade_answers_arrive_unchanged() -> Result<()> {
    use ubernetes_e2e::real_kube::{KubeCluster, kube_sh};
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: shared/kube/kube.sh not found beside the checkout (nor $UBERNETES_KUBE_SH): \
             no real kube-apiserver to exec through"
        );
        return Ok(());
    };
    let name = format!("mv{}", std::process::id());
    let kube = KubeCluster::up(&script, &name, false)?;
    let fed = Federation::start(0, &[])?;
    let server = kube.server()?;
    fed.create_secret("real", &std::fs::read_to_string(&kube.kubeconfig)?)?;
    fed.create_cluster("real", &server, "real", &[])?;
    fed.wait_ready("real")?;
    let dir = tempfile::tempdir()?;
    let kc = member_kubeconfig(&fed.host, dir.path())?;
    real_upgrade_answers_arrive_unchanged(&kube, &kc, "federation@real", dir.path())?;
    Ok(())
}
