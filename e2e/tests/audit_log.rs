//! The audit log as kube-apiserver's (`--audit-policy-file`,
//! `--audit-log-path`, rotation flags), driven by kubectl 1.37 against a real
//! `ubernetes serve`: events per policy rule (levels, stages, objectRef,
//! responseStatus, bodies exactly when the level says), Secrets never above
//! Metadata (their value appears nowhere in the log), authorization's
//! decision annotations, watches' ResponseStarted, the `Audit-Id` header
//! (and an incoming `Audit-ID` honoured), a malformed policy failing the
//! start, and size rotation with backups kept and gzipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually, kubectl_bin, ubernetes_bin};

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
# The federation controllers and health probes are noise.
- level: None
  users: ["system:ubernetes:federation-controller"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
# Asks for Secret bodies: the server must still stop at Metadata.
- level: Request
  resources:
  - group: ""
    resources: ["secrets"]
- level: RequestResponse
  namespaces: ["team"]
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
  omitStages: ["RequestReceived"]
"#;

const SECRET_VALUE: &str = "hunter2-super-secret-value";

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Every event in the log file (and its backups, oldest first).
fn events(log: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("not a JSON line: {l}")))
        .collect()
}

fn find(evs: &[Value], f: impl Fn(&Value) -> bool) -> Vec<&Value> {
    evs.iter().filter(|e| f(e)).collect()
}

fn is(e: &Value, verb: &str, resource: &str, ns: &str) -> bool {
    e["verb"] == verb && e["objectRef"]["resource"] == resource && e["objectRef"]["namespace"] == ns
}

/// The events of one request (same verb, resource, namespace and name; a
/// create's name is only known once the body is read, so the other stages
/// are found by the auditID), waiting for its ResponseComplete.
fn request_events(
    log: &Path,
    verb: &str,
    resource: &str,
    ns: &str,
    name: &str,
) -> Result<Vec<Value>> {
    eventually(Duration::from_secs(10), || {
        let evs = events(log)?;
        let Some(done) = evs.iter().find(|e| {
            is(e, verb, resource, ns)
                && e["stage"] == "ResponseComplete"
                && (name.is_empty() || e["objectRef"]["name"] == name)
        }) else {
            return Ok(None);
        };
        let id = done["auditID"].clone();
        Ok(Some(
            evs.iter().filter(|e| e["auditID"] == id).cloned().collect(),
        ))
    })
    .with_context(|| format!("no ResponseComplete event for {verb} {resource} {ns}/{name}"))
}

fn stages(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .map(|e| e["stage"].as_str().unwrap_or("").to_string())
        .collect()
}

fn complete(evs: &[Value]) -> Result<&Value> {
    evs.iter()
        .find(|e| e["stage"] == "ResponseComplete")
        .context("no ResponseComplete")
}

/// A kubeconfig with a context `bob` (a bearer-token user without roles).
fn bob_kubeconfig(server: &Server, dir: &Path) -> Result<PathBuf> {
    let kc = dir.join("bob-kubeconfig");
    std::fs::copy(server.kubeconfig(), &kc)?;
    for args in [
        vec!["config", "set-credentials", "bob", "--token=bob-token"],
        vec![
            "config",
            "set-context",
            "bob",
            "--cluster=federation",
            "--user=bob",
        ],
    ] {
        let out = Command::new(kubectl_bin())
            .arg("--kubeconfig")
            .arg(&kc)
            .args(&args)
            .output()?;
        if !out.status.success() {
            bail!("kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok(kc)
}

#[test]
fn audit_events_follow_the_policy_and_never_hold_a_secret() -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("ubernetes-audit-")
        .tempdir()?;
    let policy = dir.path().join("policy.yaml");
    write(&policy, POLICY)?;
    let tokens = dir.path().join("tokens.csv");
    write(&tokens, "bob-token,bob,1001\n")?;
    let log = dir.path().join("logs/audit.log");
    let server = Server::start_with(&[
        "--audit-policy-file",
        policy.to_str().context("path")?,
        "--audit-log-path",
        log.to_str().context("path")?,
        "--token-auth-file",
        tokens.to_str().context("path")?,
    ])?;

    server.kubectl_ok(&["create", "namespace", "team"])?;
    server.kubectl_ok(&["create", "namespace", "other"])?;

    // A ConfigMap in `team`: RequestResponse.
    server.kubectl_ok(&[
        "create",
        "configmap",
        "cm1",
        "-n",
        "team",
        "--from-literal=color=blue",
    ])?;
    let create = request_events(&log, "create", "configmaps", "team", "cm1")?;
    assert_eq!(stages(&create), ["RequestReceived", "ResponseComplete"]);
    let done = complete(&create)?;
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["user"]["username"], "ubernetes-admin");
    assert_eq!(done["sourceIPs"][0], "127.0.0.1");
    assert!(
        done["userAgent"]
            .as_str()
            .is_some_and(|a| a.starts_with("kubectl"))
    );
    assert_eq!(
        done["requestURI"]
            .as_str()
            .map(|u| u.starts_with("/api/v1/namespaces/team/configmaps")),
        Some(true)
    );
    assert_eq!(
        done["objectRef"]["name"], "cm1",
        "the name comes from the body"
    );
    assert_eq!(done["objectRef"]["apiVersion"], "v1");
    assert_eq!(done["responseStatus"]["code"], 201);
    assert_eq!(done["requestObject"]["data"]["color"], "blue");
    assert_eq!(done["responseObject"]["metadata"]["name"], "cm1");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(
        create[0].get("requestObject").is_none(),
        "no body before the handler ran"
    );
    assert_eq!(create[0]["auditID"], done["auditID"]);
    for ts in ["requestReceivedTimestamp", "stageTimestamp"] {
        let t = done[ts].as_str().context("timestamp")?;
        assert!(
            t.ends_with('Z') && t.len() == "2026-01-01T00:00:00.000000Z".len(),
            "{t}"
        );
    }

    server.kubectl_ok(&["get", "configmap", "cm1", "-n", "team", "-o", "json"])?;
    let get = request_events(&log, "get", "configmaps", "team", "cm1")?;
    let done = complete(&get)?;
    assert_eq!(done["level"], "RequestResponse");
    assert!(
        done.get("requestObject").is_none(),
        "a GET has no request body"
    );
    assert_eq!(done["responseObject"]["data"]["color"], "blue");
    assert_eq!(
        done["responseStatus"],
        serde_json::json!({"metadata": {}, "code": 200})
    );

    // A ConfigMap elsewhere: Metadata, and the rule omits RequestReceived.
    server.kubectl_ok(&[
        "create",
        "configmap",
        "cm2",
        "-n",
        "other",
        "--from-literal=color=red",
    ])?;
    let other = request_events(&log, "create", "configmaps", "other", "cm2")?;
    assert_eq!(stages(&other), ["ResponseComplete"]);
    let done = complete(&other)?;
    assert_eq!(done["level"], "Metadata");
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none());
    assert_eq!(done["responseStatus"]["code"], 201);
    server.kubectl_ok(&["delete", "configmap", "cm1", "-n", "team"])?;
    let delete = request_events(&log, "delete", "configmaps", "team", "cm1")?;
    assert_eq!(complete(&delete)?["responseStatus"]["code"], 200);

    // A Secret: the policy says Request, the server stops at Metadata.
    let literal = format!("--from-literal=password={SECRET_VALUE}");
    server.kubectl_ok(&["create", "secret", "generic", "s1", "-n", "team", &literal])?;
    server.kubectl_ok(&["get", "secret", "s1", "-n", "team", "-o", "json"])?;
    server.kubectl_ok(&["delete", "secret", "s1", "-n", "team"])?;
    for verb in ["create", "get", "delete"] {
        let evs = request_events(&log, verb, "secrets", "team", "s1")?;
        for e in &evs {
            assert_eq!(e["level"], "Metadata", "{verb}: {e}");
            assert!(
                e.get("requestObject").is_none() && e.get("responseObject").is_none(),
                "{e}"
            );
        }
        assert_eq!(
            stages(&evs),
            ["RequestReceived", "ResponseComplete"],
            "{verb}"
        );
    }

    // Forbidden: bob has no role.
    let bob = bob_kubeconfig(&server, dir.path())?;
    let out = Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(&bob)
        .args(["--context=bob", "get", "configmaps", "-n", "other"])
        .output()?;
    assert!(!out.status.success(), "bob must be refused");
    let forbidden = request_events(&log, "list", "configmaps", "other", "")?;
    let done = find(&forbidden, |e| {
        e["user"]["username"] == "bob" && e["stage"] == "ResponseComplete"
    });
    let done = done.first().context("bob's ResponseComplete")?;
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["responseStatus"]["code"], 403);
    assert_eq!(done["responseStatus"]["status"], "Failure");
    assert_eq!(done["responseStatus"]["reason"], "Forbidden");
    assert!(
        done["responseStatus"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(r#"User "bob" cannot list resource "configmaps""#))
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert!(
        done["annotations"]
            .get("authorization.k8s.io/reason")
            .is_some()
    );

    // A watch: ResponseStarted when the stream starts, ResponseComplete when
    // it ends (timeoutSeconds); no response body logged for a stream.
    server.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/team/configmaps?watch=true&timeoutSeconds=2",
    ])?;
    let watch = request_events(&log, "watch", "configmaps", "team", "")?;
    assert_eq!(
        stages(&watch),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert_eq!(watch[1]["responseStatus"]["code"], 200);
    assert!(watch.iter().all(|e| e.get("responseObject").is_none()));

    // Audit-Id on the response is an event's auditID; an incoming Audit-ID is kept.
    let pki = server.data_dir().join("pki");
    let curl = |extra: &[&str]| -> Result<String> {
        let out = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-D", "-"])
            .arg("--cacert")
            .arg(pki.join("ca.crt"))
            .arg("--cert")
            .arg(pki.join("admin.crt"))
            .arg("--key")
            .arg(pki.join("admin.key"))
            .args(extra)
            .arg(format!(
                "{}/api/v1/namespaces/team/configmaps",
                server.url()
            ))
            .output()?;
        if !out.status.success() {
            bail!("curl: {}", String::from_utf8_lossy(&out.stderr));
        }
        let headers = String::from_utf8_lossy(&out.stdout).into_owned();
        headers
            .lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(k, _)| k.eq_ignore_ascii_case("audit-id"))
                    .map(|(_, v)| v.trim().to_string())
            })
            .with_context(|| format!("no Audit-Id header in {headers}"))
    };
    let id = curl(&[])?;
    assert_eq!(id.len(), 36, "a UUID: {id}");
    eventually(Duration::from_secs(10), || {
        Ok(events(&log)?
            .iter()
            .any(|e| e["auditID"] == id.as_str() && e["stage"] == "ResponseComplete")
            .then_some(()))
    })?;
    let given = curl(&["-H", "Audit-ID: my-audit-id-1"])?;
    assert_eq!(given, "my-audit-id-1");
    eventually(Duration::from_secs(10), || {
        Ok(events(&log)?
            .iter()
            .any(|e| e["auditID"] == "my-audit-id-1")
            .then_some(()))
    })?;

    // Health probes and the federation controllers are level None.
    let evs = events(&log)?;
    assert!(
        find(&evs, |e| e["requestURI"]
            .as_str()
            .is_some_and(|u| u.starts_with("/readyz")))
        .is_empty()
    );
    assert!(
        find(&evs, |e| e["user"]["username"]
            == "system:ubernetes:federation-controller")
        .is_empty()
    );

    // The Secret's value appears nowhere, plain or base64.
    let raw = std::fs::read_to_string(&log)?;
    let b64 = base64_encode(SECRET_VALUE.as_bytes());
    assert!(
        !raw.contains(SECRET_VALUE) && !raw.contains(&b64),
        "a Secret's value reached the audit log"
    );
    Ok(())
}

/// Standard base64 (what kubectl sends in a Secret's `data`).
fn base64_encode(input: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(input)
}

#[test]
fn a_malformed_policy_fails_the_start_naming_the_file_and_field() -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("ubernetes-audit-bad-")
        .tempdir()?;
    let policy = dir.path().join("bad-policy.yaml");
    write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
    )?;
    let mut child = Command::new(ubernetes_bin())
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--secure-port", "0", "--bind-address", "127.0.0.1"])
        .arg("--audit-policy-file")
        .arg(&policy)
        .arg("--audit-log-path")
        .arg(dir.path().join("audit.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting ubernetes")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the server started with a malformed audit policy");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success());
    assert!(stderr.contains("bad-policy.yaml"), "{stderr}");
    assert!(
        stderr.contains(r#"rules[0].level: Unsupported value: "Loud""#),
        "{stderr}"
    );
    Ok(())
}

#[test]
fn a_small_maxsize_rotates_keeps_maxbackup_backups_and_gzips_them() -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("ubernetes-audit-rot-")
        .tempdir()?;
    let policy = dir.path().join("policy.yaml");
    write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [\"/readyz*\"]\n- level: RequestResponse\n  resources:\n  - group: \"\"\n    resources: [configmaps]\n",
    )?;
    let log = dir.path().join("audit.log");
    let server = Server::start_with(&[
        "--audit-policy-file",
        policy.to_str().context("path")?,
        "--audit-log-path",
        log.to_str().context("path")?,
        "--audit-log-maxsize=1",
        "--audit-log-maxbackup=2",
        "--audit-log-compress",
    ])?;
    // ~300 KB per ConfigMap: each create's ResponseComplete holds it twice
    // (request and response), ~600 KB, so a 1 MB file holds one such event.
    let data = dir.path().join("data.txt");
    write(&data, &"0123456789abcdef".repeat(300 * 1024 / 16))?;
    let from = format!("--from-file=blob={}", data.display());
    for i in 0..6 {
        server.kubectl_ok(&[
            "create",
            "configmap",
            &format!("big-{i}"),
            "-n",
            "default",
            &from,
        ])?;
    }
    let backups = eventually(Duration::from_secs(15), || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("audit-") && n.ends_with(".log.gz"))
            .collect();
        names.sort();
        Ok((names.len() == 2).then_some(names))
    })
    .context("expected exactly 2 gzipped backups (--audit-log-maxbackup=2)")?;
    // lumberjack's names: audit-2006-01-02T15-04-05.000.log.gz
    for name in &backups {
        let time = name
            .trim_start_matches("audit-")
            .trim_end_matches(".log.gz");
        assert_eq!(time.len(), "2006-01-02T15-04-05.000".len(), "{name}");
    }
    let size = std::fs::metadata(&log)?.len();
    assert!(
        size <= 1024 * 1024,
        "the live file stays under 1 MB: {size}"
    );
    // The live file holds whole JSON events.
    for e in events(&log)? {
        assert_eq!(e["kind"], "Event");
    }
    Ok(())
}
