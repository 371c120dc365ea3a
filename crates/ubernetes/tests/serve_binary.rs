//! The binary as scripts use it: `ubernetes serve --secure-port 0 --data-dir
//! DIR` prints `ubernetes: serving on URL` and the kubectl hint on stdout,
//! writes DIR/kubeconfig, and exits 0 on SIGTERM after a graceful shutdown.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ubernetes")
}

#[test]
fn serve_help_lists_the_kube_apiserver_flags() {
    let out = Command::new(bin())
        .args(["serve", "--help"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--secure-port",
        "--bind-address",
        "--tls-cert-file",
        "--tls-private-key-file",
        "--client-ca-file",
        "--token-auth-file",
        "--authorization-mode",
        "--service-cluster-ip-range",
        "--tls-san",
        "--data-dir",
    ] {
        assert!(help.contains(flag), "{flag} missing:\n{help}");
    }
}

#[test]
fn an_unknown_flag_exits_non_zero_with_a_message() {
    let out = Command::new(bin())
        .args(["serve", "--no-such-flag"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[cfg(unix)]
#[test]
fn serve_prints_its_address_writes_the_kubeconfig_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut child = Command::new(bin())
        .args(["serve", "--secure-port", "0", "--data-dir"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();

    let mut url = None;
    let mut hint = None;
    while url.is_none() || hint.is_none() {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            panic!("the server exited before printing its address");
        };
        if let Some(u) = line.strip_prefix("ubernetes: serving on ") {
            url = Some(u.to_string());
        } else if line.contains("kubectl --kubeconfig") {
            hint = Some(line);
        }
    }
    let url = url.expect("url");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let port: u16 = url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    assert_ne!(port, 0);

    let data = std::fs::canonicalize(&data).expect("data dir exists");
    let kubeconfig = data.join("kubeconfig");
    assert!(kubeconfig.is_file());
    assert!(
        hint.as_deref().is_some_and(|h| h.contains(&format!(
            "kubectl --kubeconfig {} --context=federation get ns",
            kubeconfig.display()
        ))),
        "{hint:?}"
    );
    assert!(data.join("pki/ca.crt").is_file());

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let exit = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(exit) => exit.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("the server did not stop within 20s of SIGTERM");
        }
    };
    assert!(exit.success(), "exit status {exit:?}");
}

#[test]
fn kubeconfig_prints_the_path_the_server_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("kubeconfig"), "apiVersion: v1\n").expect("write");
    let out = Command::new(bin())
        .args(["kubeconfig", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    let expected = std::fs::canonicalize(dir.path().join("kubeconfig")).expect("abs");
    assert_eq!(printed.trim(), expected.display().to_string());

    let missing = tempfile::tempdir().expect("tempdir");
    let out = Command::new(bin())
        .args(["kubeconfig", "--data-dir"])
        .arg(missing.path())
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ubernetes serve --data-dir"));
}
