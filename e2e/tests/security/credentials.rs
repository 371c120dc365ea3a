//! Member credentials (issue 28, items 1 and 7), on a running federation:
//!
//! - a Secret whose kubeconfig user has an `exec` plugin (`sh -c "touch
//!   MARKER; echo …; exit 1"`) and a Cluster naming it: nothing runs (the
//!   marker never appears, over several monitor periods), the Cluster's
//!   `Ready` condition says why in the fixed message, and neither it nor
//!   the Events on the Cluster carry the command or its output;
//! - a Cluster whose `serverAddressByClientCIDRs` points to another host
//!   (`127.0.0.2`) than its kubeconfig's server (`127.0.0.1`): refused with
//!   the fixed message, and the listener on `127.0.0.2` gets no connection
//!   (the member's token never leaves for it);
//! - `ubernetes unjoin` with only the stored credentials refuses the exec
//!   kubeconfig the same way, and runs nothing either.
//!
//! The third part of this concern, the cluster proxy acting as the caller
//! in the member (item 3), is checked in `e2e/tests/federation_proxy.rs`,
//! which already runs the members it needs (ours and, with
//! `../shared/kube`, a real kube-apiserver).

use std::io::ErrorKind;
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::Value;
use ubernetes_e2e::federation::{Federation, condition};

const WAIT: Duration = Duration::from_secs(30);

/// A kubeconfig for `server` whose user is `user` (a YAML block, indented
/// four spaces).
fn kubeconfig(server: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: m\n  cluster:\n    server: \"{server}\"\n    \
         insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n{user}\ncontexts:\n- name: m\n  \
         context: {{cluster: m, user: u}}\ncurrent-context: m\n"
    )
}

/// The `Ready` condition's message of Cluster `name`, once it is
/// `False`/`ClusterCredentialsInvalid`.
fn refused(fed: &Federation, name: &str) -> Result<String> {
    let cluster = fed.wait_condition(
        name,
        "Ready",
        "False",
        Some("ClusterCredentialsInvalid"),
        WAIT,
    )?;
    Ok(condition(&cluster, "Ready")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string())
}

/// The messages of the Events on Cluster `name`, once there is one.
fn cluster_events(fed: &Federation, name: &str) -> Result<Vec<String>> {
    ubernetes_e2e::eventually(WAIT, || {
        let list: Value = serde_json::from_str(
            &fed.host
                .kubectl_ok(&["get", "events", "-A", "-o", "json"])?,
        )?;
        let messages: Vec<String> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| {
                e["involvedObject"]["kind"] == "Cluster" && e["involvedObject"]["name"] == name
            })
            .filter_map(|e| e["message"].as_str().map(str::to_string))
            .collect();
        Ok((!messages.is_empty()).then_some(messages))
    })
    .with_context(|| format!("no Event on Cluster {name}"))
}

#[test]
fn a_member_kubeconfig_runs_nothing_and_its_credentials_stay_on_its_host() -> Result<()> {
    let fed = Federation::start(0, &[])?;
    let dir = tempfile::tempdir()?;
    let marker = dir.path().join("MARKER");

    // Item 1: an exec plugin in the member kubeconfig.
    let exec_user = format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh\n      \
         args: [\"-c\", \"touch {}; echo LEAKED-STDOUT; echo LEAKED-STDERR >&2; exit 1\"]",
        marker.display()
    );
    fed.create_secret("exec", &kubeconfig("https://127.0.0.1:1", &exec_user))?;
    fed.create_cluster("exec", "https://127.0.0.1:1", "exec", &[])?;

    // Item 7: a server address on another host than the kubeconfig's. The
    // listener on 127.0.0.2 stands for that other host.
    let elsewhere = std::net::TcpListener::bind("127.0.0.2:0")
        .context("binding 127.0.0.2 (the loopback network)")?;
    elsewhere.set_nonblocking(true)?;
    let port = elsewhere.local_addr()?.port();
    fed.create_secret(
        "elsewhere",
        &kubeconfig(
            &format!("https://127.0.0.1:{port}"),
            "    token: member-token-never-sent",
        ),
    )?;
    fed.create_cluster(
        "elsewhere",
        &format!("https://127.0.0.2:{port}"),
        "elsewhere",
        &[],
    )?;

    let exec_message = refused(&fed, "exec")?;
    assert_eq!(
        exec_message,
        "Secret federation-system/exec: kubeconfig user \"u\" uses \"exec\", which the \
         federation does not run; give the credentials inline (token, or \
         client-certificate-data and client-key-data), as \"ubernetes join\" writes them"
    );
    let address_message = refused(&fed, "elsewhere")?;
    assert_eq!(
        address_message,
        format!(
            "the server address \"https://127.0.0.2:{port}\" (spec.serverAddressByClientCIDRs) \
             is not on the host of the kubeconfig's server in Secret federation-system/elsewhere \
             (\"127.0.0.1\"): the federation sends a member's credentials only to the host they \
             are for; use an address on that host, or list this server in the kubeconfig's \
             clusters"
        )
    );

    // Several monitor periods (1 s) later: still nothing ran, nothing
    // connected to the other host.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !marker.exists(),
        "the exec plugin of the member kubeconfig ran on the federation host"
    );
    match elsewhere.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Ok((_, from)) => panic!("the federation connected to the other host (from {from})"),
        Err(e) => return Err(e).context("accept on 127.0.0.2"),
    }
    assert_eq!(
        refused(&fed, "exec")?,
        exec_message,
        "the message stays fixed"
    );

    // The Events say the same, and carry no command nor its output.
    for (name, message) in [("exec", &exec_message), ("elsewhere", &address_message)] {
        let events = cluster_events(&fed, name)?;
        assert!(events.contains(message), "Cluster {name}: {events:?}");
        for e in &events {
            assert!(
                !e.contains("LEAKED") && !e.contains("touch") && !e.contains("member-token"),
                "Cluster {name}: an Event echoes the kubeconfig: {e}"
            );
        }
    }

    // `ubernetes unjoin` without a member context reads the stored
    // kubeconfig as the federation does: refused, nothing run.
    let out = std::process::Command::new(ubernetes_e2e::ubernetes_bin())
        .args(["unjoin", "exec", "--federation-kubeconfig"])
        .arg(fed.host.kubeconfig())
        .env_remove("KUBECONFIG")
        .output()
        .context("running ubernetes unjoin")?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "unjoin went on: {err}");
    assert!(
        err.contains("kubeconfig user \"u\" uses \"exec\", which the federation does not run"),
        "{err}"
    );
    assert!(!marker.exists(), "unjoin ran the stored exec plugin");
    Ok(())
}
