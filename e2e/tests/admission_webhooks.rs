//! Admission webhooks end to end: a real HTTPS webhook server process
//! (e2e/webhook/admission_webhook.py, its certificate signed by a CA this
//! test generates) called by a real server through
//! `ValidatingWebhookConfiguration` and `MutatingWebhookConfiguration`
//! objects created with the real kubectl. Each scenario has its own
//! namespace, selected by the configuration's `namespaceSelector`:
//!
//! - a validating webhook denies a labelled ConfigMap with kube's message
//!   and code, and its warning reaches kubectl;
//! - a DELETE is sent with the stored object as `oldObject`, and the
//!   webhook's warning reaches kubectl;
//! - a mutating webhook's JSONPatch adds a label, seen on `get`, and the
//!   validating webhooks see the mutated object;
//! - `failurePolicy: Fail` on an unreachable webhook refuses with kube's
//!   `failed calling webhook` error, `Ignore` admits;
//! - `timeoutSeconds` on a webhook that sleeps: the request fails (Fail)
//!   or goes through (Ignore) after about the timeout, not the sleep;
//! - `namespaceSelector` and `objectSelector` exclude what they don't
//!   select (no call reaches the webhook);
//! - a webhook named by a Service resolves through the Service's Endpoints
//!   (a federation has no pods) and its certificate is checked for
//!   `NAME.NAMESPACE.svc`;
//! - the webhook's certificate is really checked: a `caBundle` of another
//!   CA, or a Service whose `NAME.NAMESPACE.svc` the certificate does not
//!   name, fails the call (Go's x509 wording);
//! - a dry run is refused by a webhook with side effects;
//! - `matchConditions` (CEL) skip the webhook when false, and an
//!   expression that fails refuses the request under `failurePolicy: Fail`;
//! - `reinvocationPolicy: IfNeeded` calls a mutating webhook again when a
//!   later one changed the object.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually};

/// The webhook server process; killed (by its PID) when dropped.
struct Webhook {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Webhook {
    fn start(dir: &Path, cert: &Path, key: &Path) -> Result<Self> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("webhook/admission_webhook.py");
        let log = dir.join("webhook-requests.jsonl");
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--cert")
            .arg(cert)
            .arg("--key")
            .arg(key)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting python3 e2e/webhook/admission_webhook.py")?;
        let mut line = String::new();
        let stdout = child.stdout.take().context("webhook stdout")?;
        BufReader::new(stdout).read_line(&mut line)?;
        let port = match line.trim().parse() {
            Ok(p) => p,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the webhook server did not print its port: {line:?}");
            }
        };
        Ok(Self { child, port, log })
    }

    /// The AdmissionReviews received so far.
    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The requests that named `name` in `namespace`.
    fn requests_for(&self, namespace: &str, name: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r["review"]["request"]["namespace"] == namespace
                    && r["review"]["request"]["name"] == name
            })
            .collect()
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CA and a serving certificate for 127.0.0.1 and the Service's name.
fn certificates(dir: &Path) -> Result<(String, PathBuf, PathBuf)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook test CA");
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let params = CertificateParams::new(vec![
        "127.0.0.1".to_string(),
        "webhook.wh-svc.svc".to_string(),
    ])?;
    let cert = params.signed_by(&key, &issuer)?;
    let cert_path = dir.join("webhook.crt");
    let key_path = dir.join("webhook.key");
    std::fs::write(&cert_path, cert.pem())?;
    std::fs::write(&key_path, key.serialize_pem())?;
    Ok((ca.pem(), cert_path, key_path))
}

/// The caBundle form of a PEM.
fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A namespace labelled `scenario=NAME`.
fn namespace(server: &Server, name: &str, scenario: Option<&str>) -> Result<()> {
    let labels = scenario
        .map(|s| format!("  labels: {{scenario: {s}}}\n"))
        .unwrap_or_default();
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n{labels}"),
    )?;
    Ok(())
}

/// One webhook configuration (`kind` Validating or Mutating) with one
/// webhook on ConfigMaps (or `resource`) in namespaces labelled
/// `scenario=SCENARIO`; `client` is the clientConfig's url/service lines.
#[allow(clippy::too_many_arguments)]
fn configuration(
    server: &Server,
    kind: &str,
    name: &str,
    scenario: &str,
    resource: &str,
    client: &str,
    ca: &str,
    extra: &str,
) -> Result<()> {
    let yaml = format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: {kind}WebhookConfiguration
metadata:
  name: {name}
webhooks:
- name: {name}
  clientConfig:
{client}
    caBundle: {ca}
  rules:
  - operations: ["CREATE", "UPDATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["{resource}"]
  namespaceSelector:
    matchLabels: {{scenario: {scenario}}}
  admissionReviewVersions: ["v1"]
{extra}"#,
        ca = b64(ca)
    );
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &yaml)?;
    Ok(())
}

fn configmap(ns: &str, name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{{labels}}}\ndata: {{k: v}}\n"
    )
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn webhooks_deny_mutate_time_out_and_fail_as_configured() -> Result<()> {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 is not installed (the webhook server is a Python script)");
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let (ca, cert, key) = certificates(tmp.path())?;
    let hook = Webhook::start(tmp.path(), &cert, &key)?;
    let url = |path: &str| format!("    url: https://127.0.0.1:{}{path}", hook.port);
    let server = Server::start()?;

    // --- A validating webhook denies, with kube's message and the
    // webhook's code; an allowed object carries the webhook's warning.
    namespace(&server, "wh-validate", Some("validate"))?;
    configuration(
        &server,
        "Validating",
        "deny.webhooks.test",
        "validate",
        "configmaps",
        &url("/validate"),
        &ca,
        "  sideEffects: None\n  failurePolicy: Fail\n",
    )?;
    let denied = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-validate", "bad", "deny: \"yes\""),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        denied.contains(
            "admission webhook \"deny.webhooks.test\" denied the request: the label deny=yes is not allowed here"
        ),
        "{denied}"
    );
    assert!(
        denied.contains("Error from server (Forbidden)"),
        "the webhook's 403 Forbidden: {denied}"
    );
    assert!(
        server
            .kubectl_get(&["cm", "bad", "-n", "wh-validate"])?
            .is_none()
    );
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        &configmap("wh-validate", "good", "deny: \"no\""),
    )?;
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("Warning: checked by the test webhook"),
        "the webhook's warning: {}",
        stderr_of(&out)
    );
    // The webhook got kube's AdmissionReview: operation, kind, resource,
    // the user kubectl authenticated as, dry run, options.
    let reqs = hook.requests_for("wh-validate", "good");
    let req = &reqs.first().context("the webhook saw `good`")?["review"];
    assert_eq!(req["apiVersion"], "admission.k8s.io/v1");
    let r = &req["request"];
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["kind"]["kind"], "ConfigMap");
    assert_eq!(r["resource"]["resource"], "configmaps");
    assert_eq!(r["object"]["data"]["k"], "v");
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert!(
        r["userInfo"]["username"]
            .as_str()
            .is_some_and(|u| !u.is_empty() && u != "system:apiserver"),
        "the request's user: {}",
        r["userInfo"]
    );
    // An update that adds the label is denied too (UPDATE is in the rules).
    let err = server.kubectl_err(&[
        "label",
        "cm",
        "good",
        "-n",
        "wh-validate",
        "deny=yes",
        "--overwrite",
    ])?;
    assert!(err.contains("denied the request"), "{err}");

    // DELETE reaches a webhook with the stored object as oldObject, and
    // its warning reaches kubectl.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &configmap("wh-validate", "doomed", "a: b"),
    )?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: deletes.webhooks.test
webhooks:
- name: deletes.webhooks.test
  clientConfig:
    url: https://127.0.0.1:{port}/validate
    caBundle: {ca}
  rules:
  - operations: ["DELETE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]
  namespaceSelector:
    matchLabels: {{scenario: validate}}
  sideEffects: None
  admissionReviewVersions: ["v1"]
"#,
            port = hook.port,
            ca = b64(&ca)
        ),
    )?;
    // Dry-run deletes until the configuration is seen.
    eventually(Duration::from_secs(10), || {
        let out = server.kubectl(&[
            "delete",
            "cm",
            "doomed",
            "-n",
            "wh-validate",
            "--dry-run=server",
        ])?;
        Ok(stderr_of(&out)
            .contains("Warning: checked by the test webhook")
            .then_some(()))
    })?;
    let out = server.kubectl(&["delete", "cm", "doomed", "-n", "wh-validate"])?;
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("Warning: checked by the test webhook"),
        "a DELETE's warning: {}",
        stderr_of(&out)
    );
    let deletes: Vec<Value> = hook
        .requests_for("wh-validate", "doomed")
        .into_iter()
        .filter(|r| r["review"]["request"]["operation"] == "DELETE")
        .collect();
    let last = &deletes.last().context("a DELETE review")?["review"]["request"];
    assert!(last["object"].is_null(), "{last}");
    assert_eq!(last["oldObject"]["metadata"]["name"], "doomed");
    assert_eq!(last["options"]["kind"], "DeleteOptions");

    // --- A mutating webhook adds a label; the validating webhooks then
    // see the mutated object.
    namespace(&server, "wh-mutate", Some("mutate"))?;
    configuration(
        &server,
        "Mutating",
        "label.webhooks.test",
        "mutate",
        "configmaps",
        &url("/mutate"),
        &ca,
        "  sideEffects: None\n",
    )?;
    configuration(
        &server,
        "Validating",
        "see-mutated.webhooks.test",
        "mutate",
        "configmaps",
        &url("/validate"),
        &ca,
        "  sideEffects: None\n",
    )?;
    let labels = eventually(Duration::from_secs(10), || {
        server.kubectl_stdin_ok(
            &["apply", "-f", "-"],
            &configmap("wh-mutate", "m1", "team: a"),
        )?;
        let got = server
            .kubectl_get(&["cm", "m1", "-n", "wh-mutate"])?
            .context("m1 exists")?;
        let labels = got["metadata"]["labels"].clone();
        if labels["mutated"] == "yes" {
            return Ok(Some(labels));
        }
        // Created before the configuration was seen: try again.
        server.kubectl_ok(&["delete", "cm", "m1", "-n", "wh-mutate"])?;
        Ok(None)
    })?;
    assert_eq!(labels["team"], "a");
    let seen_by_validating: Vec<Value> = hook
        .requests_for("wh-mutate", "m1")
        .into_iter()
        .filter(|r| {
            r["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/validate"))
        })
        .collect();
    assert!(
        seen_by_validating
            .iter()
            .any(|r| r["review"]["request"]["object"]["metadata"]["labels"]["mutated"] == "yes"),
        "the validating webhook sees the mutated object: {seen_by_validating:?}"
    );

    // --- failurePolicy Fail on an unreachable webhook refuses with kube's
    // error; Ignore admits.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    namespace(&server, "wh-fail", Some("fail"))?;
    let down = format!("    url: https://127.0.0.1:{closed}/down");
    configuration(
        &server,
        "Validating",
        "down.webhooks.test",
        "fail",
        "configmaps",
        &down,
        &ca,
        "  sideEffects: None\n  failurePolicy: Fail\n",
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out =
            server.kubectl_stdin(&["create", "-f", "-"], &configmap("wh-fail", "f1", "a: b"))?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    let want = format!(
        "Internal error occurred: failed calling webhook \"down.webhooks.test\": failed to call webhook: Post \"https://127.0.0.1:{closed}/down?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
    );
    assert!(err.contains(&want), "want {want}\ngot {err}");
    assert!(err.contains("Error from server (InternalError)"), "{err}");
    configuration(
        &server,
        "Validating",
        "down.webhooks.test",
        "fail",
        "configmaps",
        &down,
        &ca,
        "  sideEffects: None\n  failurePolicy: Ignore\n",
    )?;
    eventually(Duration::from_secs(10), || {
        let out =
            server.kubectl_stdin(&["create", "-f", "-"], &configmap("wh-fail", "f1", "a: b"))?;
        Ok(out.status.success().then_some(()))
    })?;

    // --- timeoutSeconds: a webhook that sleeps 6s with a 1s timeout fails
    // the request after about a second (Fail) or lets it through (Ignore).
    namespace(&server, "wh-slow", Some("slow"))?;
    configuration(
        &server,
        "Mutating",
        "slow.webhooks.test",
        "slow",
        "configmaps",
        &url("/slow/6"),
        &ca,
        "  sideEffects: None\n  failurePolicy: Fail\n  timeoutSeconds: 1\n",
    )?;
    let (err, took) = eventually(Duration::from_secs(20), || {
        let start = Instant::now();
        let out =
            server.kubectl_stdin(&["create", "-f", "-"], &configmap("wh-slow", "s1", "a: b"))?;
        if out.status.success() {
            server.kubectl_ok(&["delete", "cm", "s1", "-n", "wh-slow"])?;
            return Ok(None);
        }
        Ok(Some((stderr_of(&out), start.elapsed())))
    })?;
    let want = format!(
        "failed calling webhook \"slow.webhooks.test\": failed to call webhook: Post \"https://127.0.0.1:{}/slow/6?timeout=1s\": context deadline exceeded",
        hook.port
    );
    assert!(err.contains(&want), "want {want}\ngot {err}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "refused after the 1s timeout, not the 6s sleep: {took:?}"
    );
    configuration(
        &server,
        "Mutating",
        "slow.webhooks.test",
        "slow",
        "configmaps",
        &url("/slow/6"),
        &ca,
        "  sideEffects: None\n  failurePolicy: Ignore\n  timeoutSeconds: 1\n",
    )?;
    let took = eventually(Duration::from_secs(20), || {
        let start = Instant::now();
        let out =
            server.kubectl_stdin(&["create", "-f", "-"], &configmap("wh-slow", "s2", "a: b"))?;
        Ok(out.status.success().then(|| start.elapsed()))
    })?;
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "admitted after the 1s timeout, not the 6s sleep: {took:?}"
    );

    // --- objectSelector: only objects labelled check=me reach the webhook
    // (which rejects everything, without a code or reason).
    namespace(&server, "wh-select", Some("select"))?;
    configuration(
        &server,
        "Validating",
        "reject.webhooks.test",
        "select",
        "configmaps",
        &url("/reject-all"),
        &ca,
        "  sideEffects: None\n  objectSelector:\n    matchLabels: {check: me}\n",
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-select", "checked", "check: me"),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains(
            "admission webhook \"reject.webhooks.test\" denied the request: nothing passes"
        ),
        "{err}"
    );
    // No code, no reason: kubectl shows no reason, as with kube-apiserver.
    assert!(err.contains("Error from server: "), "{err}");
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &configmap("wh-select", "unchecked", "check: other"),
    )?;
    assert!(hook.requests_for("wh-select", "unchecked").is_empty());

    // --- namespaceSelector: a namespace without the label is not seen by
    // any of the webhooks above.
    namespace(&server, "wh-plain", None)?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &configmap("wh-plain", "free", "deny: \"yes\", check: me"),
    )?;
    assert!(hook.requests_for("wh-plain", "free").is_empty());

    // --- Dry run: a webhook with side effects refuses it (kube's 400).
    namespace(&server, "wh-dry", Some("dry"))?;
    configuration(
        &server,
        "Validating",
        "effects.webhooks.test",
        "dry",
        "configmaps",
        &url("/validate"),
        &ca,
        "  sideEffects: Some\n",
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "--dry-run=server", "-f", "-"],
            &configmap("wh-dry", "d1", "a: b"),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains("admission webhook \"effects.webhooks.test\" does not support dry run"),
        "{err}"
    );

    // --- A webhook named by a Service: resolved through its Endpoints,
    // the certificate checked for webhook.wh-svc.svc.
    namespace(&server, "wh-svc", Some("svc"))?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: webhook, namespace: wh-svc}}\nspec:\n  ports: [{{name: https, port: 443, targetPort: {port}}}]\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: webhook, namespace: wh-svc}}\nsubsets:\n- addresses: [{{ip: 127.0.0.1}}]\n  ports: [{{name: https, port: {port}}}]\n",
            port = hook.port
        ),
    )?;
    configuration(
        &server,
        "Validating",
        "svc.webhooks.test",
        "svc",
        "configmaps",
        "    service: {namespace: wh-svc, name: webhook, path: /validate}",
        &ca,
        "  sideEffects: None\n",
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-svc", "bad", "deny: \"yes\""),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains("admission webhook \"svc.webhooks.test\" denied the request: the label deny=yes is not allowed here"),
        "{err}\n{}",
        server.log_tail()
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &configmap("wh-svc", "fine", "a: b"))?;

    // --- TLS is verified: another CA's caBundle, and a Service name the
    // certificate does not carry, both fail the call (failurePolicy Fail).
    let other_ca = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?
        .cert
        .pem();
    namespace(&server, "wh-tls-ca", Some("tlsca"))?;
    configuration(
        &server,
        "Validating",
        "wrong-ca.webhooks.test",
        "tlsca",
        "configmaps",
        &url("/validate"),
        &other_ca,
        "  sideEffects: None\n",
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-tls-ca", "t1", "a: b"),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains("failed calling webhook \"wrong-ca.webhooks.test\"")
            && err.contains(
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            ),
        "{err}"
    );
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: other, namespace: wh-svc}}\nspec:\n  ports: [{{name: https, port: 443, targetPort: {port}}}]\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: other, namespace: wh-svc}}\nsubsets:\n- addresses: [{{ip: 127.0.0.1}}]\n  ports: [{{name: https, port: {port}}}]\n",
            port = hook.port
        ),
    )?;
    namespace(&server, "wh-tls-name", Some("tlsname"))?;
    configuration(
        &server,
        "Validating",
        "wrong-name.webhooks.test",
        "tlsname",
        "configmaps",
        "    service: {namespace: wh-svc, name: other, path: /validate}",
        &ca,
        "  sideEffects: None\n",
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-tls-name", "t2", "a: b"),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains("Post \"https://other.wh-svc.svc:443/validate?timeout=10s\"")
            && err.contains("x509: certificate is not valid for other.wh-svc.svc"),
        "{err}"
    );

    // --- matchConditions: CEL on object and request.
    namespace(&server, "wh-cel", Some("cel"))?;
    configuration(
        &server,
        "Validating",
        "cel.webhooks.test",
        "cel",
        "configmaps",
        &url("/reject-all"),
        &ca,
        r#"  sideEffects: None
  matchConditions:
  - {name: not-skipped, expression: "object.metadata.name != 'skip-me'"}
  - {name: creates, expression: "request.operation == 'CREATE'"}
"#,
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-cel", "caught", "a: b"),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains("\"cel.webhooks.test\" denied the request"),
        "{err}"
    );
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &configmap("wh-cel", "skip-me", "a: b"),
    )?;
    assert!(hook.requests_for("wh-cel", "skip-me").is_empty());
    namespace(&server, "wh-cel-error", Some("celerror"))?;
    configuration(
        &server,
        "Validating",
        "cel-error.webhooks.test",
        "celerror",
        "configmaps",
        &url("/validate"),
        &ca,
        r#"  sideEffects: None
  failurePolicy: Fail
  matchConditions:
  - {name: needs-owner, expression: "object.metadata.labels.owner == 'me'"}
"#,
    )?;
    let err = eventually(Duration::from_secs(10), || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &configmap("wh-cel-error", "no-owner", "a: b"),
        )?;
        Ok((!out.status.success()).then(|| stderr_of(&out)))
    })?;
    assert!(
        err.contains("Error from server (Forbidden)")
            && err.contains("matchCondition 'needs-owner'"),
        "{err}"
    );

    // --- reinvocationPolicy IfNeeded: `a-first` (IfNeeded) runs before
    // `b-second`, which changes the object: `a-first` runs again and sees
    // the second webhook's label.
    namespace(&server, "wh-reinvoke", Some("reinvoke"))?;
    configuration(
        &server,
        "Mutating",
        "a-first.webhooks.test",
        "reinvoke",
        "configmaps",
        &url("/mutate"),
        &ca,
        "  sideEffects: None
  reinvocationPolicy: IfNeeded
",
    )?;
    configuration(
        &server,
        "Mutating",
        "b-second.webhooks.test",
        "reinvoke",
        "configmaps",
        &url("/mutate-second"),
        &ca,
        "  sideEffects: None
",
    )?;
    let mut attempt = 0;
    let name = eventually(Duration::from_secs(10), || {
        attempt += 1;
        let name = format!("r{attempt}");
        let got = server.kubectl_stdin_ok(
            &["create", "-o", "json", "-f", "-"],
            &configmap("wh-reinvoke", &name, "a: b"),
        )?;
        let got: Value = serde_json::from_str(&got)?;
        let labels = &got["metadata"]["labels"];
        Ok((labels["mutated"] == "yes" && labels["second"] == "yes").then_some(name))
    })?;
    let first: Vec<Value> = hook
        .requests_for("wh-reinvoke", &name)
        .into_iter()
        .filter(|r| {
            r["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/mutate?"))
        })
        .collect();
    assert_eq!(first.len(), 2, "a-first is called twice: {first:?}");
    assert_eq!(
        first[1]["review"]["request"]["object"]["metadata"]["labels"]["second"], "yes",
        "the second call sees b-second's change"
    );
    Ok(())
}
