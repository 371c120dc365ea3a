//! CertificateSigningRequests through the real kubectl 1.37: a CSR for the
//! `kubernetes.io/kube-apiserver-client` signer is approved with
//! `kubectl certificate approve`, the leader's signer issues it with the
//! server's client CA (lifetime from `spec.expirationSeconds`), and the
//! issued certificate authenticates to this server as the CSR's CN and O
//! (`kubectl auth whoami`). A request with a server usage fails as kube's
//! signer fails it; an unapproved one is not signed; a lifetime under 10
//! minutes is refused at create.

mod kubectl_support;

use std::process::Command;

use anyhow::{Context, Result, ensure};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;
use ubernetes_e2e::{Server, eventually, kubectl_bin};

use kubectl_support::{SETTLE, json};

/// A fresh key and its PKCS#10 request for `CN=cn, O=org`, both PEM.
fn key_and_request(cn: &str, org: &str) -> Result<(String, String)> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let csr = params.serialize_request(&key)?.pem()?;
    Ok((key.serialize_pem(), csr))
}

fn csr_manifest(name: &str, request_pem: &str, usages: &[&str], expiration: u32) -> String {
    let usages: Vec<String> = usages.iter().map(|u| format!("  - {u}")).collect();
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {}\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: {expiration}\n  usages:\n{}\n",
        B64.encode(request_pem),
        usages.join("\n")
    )
}

fn conditions(csr: &Value) -> Vec<(String, String)> {
    csr["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["type"].as_str().unwrap_or_default().to_string(),
                        c["reason"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `kubeconfig`'s `certificate-authority-data` value.
fn ca_data(kubeconfig: &str) -> Option<String> {
    kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
        .map(|v| v.trim().to_string())
}

#[test]
fn an_approved_client_csr_is_signed_by_the_server_ca_and_authenticates_as_its_cn() -> Result<()> {
    let server = Server::start()?;
    let (key_pem, request) = key_and_request("csr-alice", "csr-devs")?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &csr_manifest(
            "alice",
            &request,
            &["digital signature", "key encipherment", "client auth"],
            3600,
        ),
    )?;
    let (_, other) = key_and_request("csr-mallory", "csr-devs")?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &csr_manifest(
            "server-usage",
            &other,
            &["client auth", "server auth"],
            3600,
        ),
    )?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &csr_manifest("pending", &other, &["client auth"], 3600),
    )?;
    // kube's validation: at least 10 minutes.
    let err = server
        .kubectl_stdin(
            &["create", "-f", "-"],
            &csr_manifest("too-short", &other, &["client auth"], 300),
        )?
        .stderr;
    let err = String::from_utf8_lossy(&err);
    ensure!(
        err.contains("may not specify a duration less than 600 seconds (10 minutes)"),
        "{err}"
    );

    server.kubectl_ok(&["certificate", "approve", "alice", "server-usage"])?;

    let issued = eventually(SETTLE, || {
        let csr = json(&server, &["get", "csr", "alice"])?;
        Ok(csr["status"]["certificate"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_string))
    })?;
    let csr = json(&server, &["get", "csr", "alice"])?;
    assert_eq!(
        conditions(&csr),
        [("Approved".to_string(), "KubectlApprove".to_string())],
        "{csr}"
    );
    let cert_pem = String::from_utf8(B64.decode(&issued)?)?;
    let der = {
        let mut reader = cert_pem.as_bytes();
        rustls_pemfile::certs(&mut reader)
            .next()
            .context("a PEM certificate")??
    };
    let (_, cert) = x509_parser::parse_x509_certificate(&der)?;
    let lifetime = cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
    // expirationSeconds 3600, backdated 5 minutes (kube's PermissiveSigningPolicy).
    assert_eq!(lifetime, 3600 + 300, "validity {:?}", cert.validity());
    assert_eq!(
        cert.subject()
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok()),
        Some("csr-alice")
    );

    // The issued certificate (with the CSR's key) is a user of this server.
    let kubeconfig = std::fs::read_to_string(server.kubeconfig())?;
    let ca = ca_data(&kubeconfig).context("CA in the admin kubeconfig")?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("alice.kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: alice\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: alice\n  context:\n    cluster: c\n    user: alice\ncurrent-context: alice\n",
            server.url(),
            B64.encode(&cert_pem),
            B64.encode(&key_pem)
        ),
    )?;
    let out = Command::new(kubectl_bin())
        .arg("--kubeconfig")
        .arg(&path)
        .args(["auth", "whoami", "-o", "json"])
        .env("KUBECACHEDIR", dir.path().join("cache"))
        .env_remove("KUBECONFIG")
        .output()?;
    ensure!(
        out.status.success(),
        "kubectl auth whoami as alice failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review: Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(
        review["status"]["userInfo"]["username"], "csr-alice",
        "{review}"
    );
    let groups: Vec<&str> = review["status"]["userInfo"]["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        groups.contains(&"csr-devs") && groups.contains(&"system:authenticated"),
        "{review}"
    );

    // A server usage is not for this signer: Failed, as kube's signer says.
    let failed = eventually(SETTLE, || {
        let csr = json(&server, &["get", "csr", "server-usage"])?;
        Ok(csr["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Failed").cloned()))
    })?;
    assert_eq!(failed["reason"], "SignerValidationFailure");
    assert_eq!(
        failed["message"],
        "invalid usage for client certificate: server auth"
    );
    let csr = json(&server, &["get", "csr", "server-usage"])?;
    assert!(csr["status"].get("certificate").is_none(), "{csr}");

    // Never approved: never signed (the signer has handled alice meanwhile).
    let pending = json(&server, &["get", "csr", "pending"])?;
    assert!(pending["status"].get("certificate").is_none(), "{pending}");
    assert!(conditions(&pending).is_empty(), "{pending}");
    Ok(())
}

/// kube's CSR rules about who asks and who approves: the requestor recorded
/// is the caller whatever the body claims, a new request carries no status,
/// approving needs `approve` on the signer (`certificates.k8s.io/signers`,
/// by name or `<domain>/*`) besides the `approval` subresource, and no
/// request for the API server's client signer may ask for `system:masters`.
#[test]
fn the_requestor_is_the_caller_and_only_the_signers_approvers_approve() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: csr-requester\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests]\n  verbs: [create, get, list]\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests/approval]\n  verbs: [update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: csr-requester-bob\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: csr-requester\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: bob\n",
    )?;
    let (_, request) = key_and_request("bob", "devs")?;
    // The body claims another requestor and a pre-approval.
    let manifest = format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: bobs\nspec:\n  request: {}\n  signerName: example.com/team-signer\n  usages: [client auth]\n  username: mallory\n  groups: [system:masters]\nstatus:\n  conditions:\n  - type: Approved\n    status: \"True\"\n    reason: SelfApproved\n",
        B64.encode(&request)
    );
    server.kubectl_stdin_ok(&["--as", "bob", "create", "-f", "-"], &manifest)?;
    let csr = json(&server, &["get", "csr", "bobs"])?;
    assert_eq!(csr["spec"]["username"], "bob", "{csr}");
    let groups: Vec<&str> = csr["spec"]["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(groups, ["system:authenticated"], "{csr}");
    assert!(conditions(&csr).is_empty(), "{csr}");
    // kubectl get csr shows who asked.
    let listed = server.kubectl_ok(&["get", "csr", "bobs"])?;
    assert!(
        listed.contains("bob") && listed.contains("Pending"),
        "{listed}"
    );

    // The approval subresource alone is not enough.
    let out = server.kubectl(&["--as", "bob", "certificate", "approve", "bobs"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && err.contains(
                "certificatesigningrequests.certificates.k8s.io \"bobs\" is forbidden: \
                 user not permitted to approve requests with signerName \"example.com/team-signer\""
            ),
        "{err}"
    );
    assert!(conditions(&json(&server, &["get", "csr", "bobs"])?).is_empty());
    // `approve` on the signer's domain wildcard is.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: team-signer-approver\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  resourceNames: [\"example.com/*\"]\n  verbs: [approve]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: team-signer-approver-bob\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: team-signer-approver\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: bob\n",
    )?;
    eventually(SETTLE, || {
        let out = server.kubectl(&["--as", "bob", "certificate", "approve", "bobs"])?;
        Ok(out.status.success().then_some(()))
    })?;
    let csr = json(&server, &["get", "csr", "bobs"])?;
    assert_eq!(
        conditions(&csr),
        [("Approved".to_string(), "KubectlApprove".to_string())],
        "{csr}"
    );

    // CertificateSubjectRestriction, even for an administrator.
    let (_, masters) = key_and_request("root", "system:masters")?;
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        &csr_manifest("masters", &masters, &["client auth"], 3600),
    )?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && err.contains(
                "certificatesigningrequests.certificates.k8s.io \"masters\" is forbidden: use of \
                 kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
            ),
        "{err}"
    );
    Ok(())
}

/// kube's CSR validation, with kube-apiserver 1.36.2's messages (the same
/// requests against it): the request must be a signed PEM CERTIFICATE
/// REQUEST, usages known and not repeated, the signer `<domain>/<path>` and
/// not the legacy one; a `status` write cannot approve (that is the
/// `approval` subresource's).
#[test]
fn bad_requests_usages_and_signers_are_refused_and_status_writes_cannot_approve() -> Result<()> {
    let server = Server::start()?;
    let (_, request) = key_and_request("carol", "devs")?;
    let manifest = |name: &str, request: &[u8], signer: &str, usages: &str| {
        format!(
            "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {}\n  signerName: {signer}\n  usages: {usages}\n",
            B64.encode(request)
        )
    };
    let refused = |manifest: String, wants: &[&str]| -> Result<()> {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest)?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(!out.status.success(), "created: {manifest}");
        for want in wants {
            ensure!(err.contains(want), "wanted {want:?} in: {err}");
        }
        Ok(())
    };
    refused(
        manifest("junk", b"hello", "example.com/s", "[client auth]"),
        &[
            "The CertificateSigningRequest \"junk\" is invalid: spec.request: \
             Invalid value: \"aGVsbG8=\": PEM block type must be CERTIFICATE REQUEST",
        ],
    )?;
    refused(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: noreq\nspec:\n  signerName: example.com/s\n  usages: [client auth]\n".to_string(),
        &["\"noreq\" is invalid: spec.request: Invalid value: null: PEM block type must be CERTIFICATE REQUEST"],
    )?;
    // A request whose signature does not verify.
    let mut der = B64.decode(
        request
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<String>(),
    )?;
    if let Some(last) = der.last_mut() {
        *last ^= 0x55;
    }
    let forged = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        B64.encode(&der)
    );
    refused(
        manifest(
            "forged",
            forged.as_bytes(),
            "example.com/s",
            "[client auth]",
        ),
        &[
            "\"forged\" is invalid: spec.request: Invalid value: \"LS0t",
            "\": x509: ECDSA verification failure",
        ],
    )?;
    refused(
        manifest(
            "usages",
            request.as_bytes(),
            "example.com/s",
            "[client auth, client auth, flying]",
        ),
        &[
            "spec.usages[1]: Duplicate value: \"client auth\"",
            "spec.usages[2]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\", \"client auth\"",
        ],
    )?;
    refused(
        manifest("none", request.as_bytes(), "example.com/s", "[]"),
        &["spec.usages: Required value"],
    )?;
    refused(
        manifest(
            "legacy",
            request.as_bytes(),
            "kubernetes.io/legacy-unknown",
            "[client auth]",
        ),
        &[
            "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version",
        ],
    )?;
    refused(
        manifest("nodomain", request.as_bytes(), "nodomain", "[client auth]"),
        &[
            "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ],
    )?;

    // A status write may set a certificate, not approve.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &manifest(
            "carols",
            request.as_bytes(),
            "example.com/s",
            "[client auth]",
        ),
    )?;
    // A JSON patch of carols' status, refused with `want`.
    let status_patch_refused = |ops: &str, want: &str| -> Result<()> {
        let args = [
            "patch",
            "csr",
            "carols",
            "--subresource=status",
            "--type=json",
            "-p",
            ops,
        ];
        let out = server.kubectl(&args)?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(!out.status.success() && err.contains(want), "{err}");
        Ok(())
    };
    status_patch_refused(
        r#"[{"op":"add","path":"/status/conditions","value":[{"type":"Approved","status":"True","reason":"ViaStatus"}]}]"#,
        "The CertificateSigningRequest \"carols\" is invalid: status.conditions: \
         Forbidden: updates may not add a condition of type \"Approved\"",
    )?;
    assert!(conditions(&json(&server, &["get", "csr", "carols"])?).is_empty());
    // The approval subresource may, and then a status write cannot remove it.
    server.kubectl_ok(&["certificate", "approve", "carols"])?;
    status_patch_refused(
        r#"[{"op":"remove","path":"/status/conditions/0"}]"#,
        "updates may not remove a condition of type \"Approved\"",
    )?;
    // kube's field selector on the signer.
    let listed = server.kubectl_ok(&[
        "get",
        "csr",
        "--field-selector",
        "spec.signerName=example.com/s",
        "-o",
        "name",
    ])?;
    assert_eq!(
        listed.trim(),
        "certificatesigningrequest.certificates.k8s.io/carols"
    );
    // A status write may change the metadata (kube's status strategy resets
    // only the spec).
    server.kubectl_ok(&[
        "patch",
        "csr",
        "carols",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"metadata":{"annotations":{"patchedstatus":"true"}},"spec":{"signerName":"example.com/other"}}"#,
    ])?;
    let csr = json(&server, &["get", "csr", "carols"])?;
    assert_eq!(
        csr["metadata"]["annotations"]["patchedstatus"], "true",
        "{csr}"
    );
    assert_eq!(csr["spec"]["signerName"], "example.com/s", "{csr}");
    assert_eq!(
        conditions(&csr),
        [("Approved".to_string(), "KubectlApprove".to_string())]
    );
    Ok(())
}
