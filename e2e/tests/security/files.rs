//! Files and client CAs (issue 28, item 6), on real `ubernetes serve`
//! processes:
//!
//! - on a fresh data dir the data dir, the store and the PKI directories are
//!   0700, sled's files, the private keys and the kubeconfig 0600, and the
//!   audit log (in a directory the server makes) 0600 in a 0700 directory;
//! - the startup warning about Secrets stored unencrypted is logged with
//!   `--encrypt-secrets-by-default=false` and no `--encryption-provider-config`,
//!   and not with one covering secrets (which also replaces the generated
//!   default: no key is made in the PKI directory);
//! - a data dir left readable by others is tightened, with a warning;
//! - with `--tls-cert-file` and no `--client-ca-file`, the dev CA is no
//!   client CA: its admin certificate (`system:masters`) is a 401 and the
//!   written kubeconfig has no credentials; with `--client-ca-file` naming
//!   the dev CA, the dev admin certificate authenticates as
//!   `ubernetes-admin`.
//!
//! The servers are started here rather than with `ubernetes_e2e::Server`,
//! whose readiness check uses the written kubeconfig: the first one's has
//! no user on purpose. YAML alias bombs (item 8) are checked in
//! `crates/apiserver/src/handlers/negotiate.rs` and `e2e/tests/bad_input.rs`.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};

/// The warning of a server whose Secrets are written as they are.
const PLAINTEXT_WARNING: &str = "are stored unencrypted in";
/// A 32-byte AES key, base64 (as in e2e/tests/encryption_at_rest.rs).
const AES_KEY: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
const WAIT: Duration = Duration::from_secs(60);

/// An `ubernetes serve` on `data`, its log in `log`; killed on drop.
struct Serve {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Serve {
    fn start(data: &Path, log: &Path, args: &[&str]) -> Result<Self> {
        let mut child = Command::new(ubernetes_e2e::ubernetes_bin())
            .arg("serve")
            .arg("--data-dir")
            .arg(data)
            .args(["--secure-port", "0", "--bind-address", "127.0.0.1"])
            .arg("--federation-controllers=false")
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(log)?))
            .spawn()
            .context("starting ubernetes serve")?;
        let stdout = child.stdout.take().context("stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if let Some(url) = line.strip_prefix("ubernetes: serving on ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let mut serve = Self {
            child,
            url: String::new(),
            log: log.to_path_buf(),
        };
        match rx.recv_timeout(WAIT) {
            Ok(url) => serve.url = url,
            Err(_) => bail!("the server did not start:\n{}", serve.log()?),
        }
        Ok(serve)
    }

    fn log(&self) -> Result<String> {
        std::fs::read_to_string(&self.log)
            .with_context(|| format!("reading {}", self.log.display()))
    }

    /// kubectl with a kubeconfig for this server: `ca` checks the serving
    /// certificate, the user presents `cert`/`key`.
    fn kubectl(
        &self,
        dir: &Path,
        ca: &Path,
        cert: &Path,
        key: &Path,
        args: &[&str],
    ) -> Result<Output> {
        let kubeconfig = dir.join("client.kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster:\n    server: {}\n    \
                 certificate-authority: {}\nusers:\n- name: u\n  user:\n    client-certificate: {}\n    \
                 client-key: {}\ncontexts:\n- name: f\n  context: {{cluster: f, user: u}}\ncurrent-context: f\n",
                self.url,
                ca.display(),
                cert.display(),
                key.display(),
            ),
        )?;
        Ok(Command::new(ubernetes_e2e::kubectl_bin())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .stdin(Stdio::null())
            .output()?)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mode(path: &Path) -> Result<u32> {
    Ok(std::fs::metadata(path)
        .with_context(|| format!("stat {}", path.display()))?
        .permissions()
        .mode()
        & 0o777)
}

fn assert_mode(path: &Path, want: u32) -> Result<()> {
    let got = mode(path)?;
    assert_eq!(
        got,
        want,
        "{} has mode {got:o}, want {want:o}",
        path.display()
    );
    Ok(())
}

/// Every directory under `dir` (and itself) is 0700.
fn assert_private_dirs(dir: &Path) -> Result<()> {
    assert_mode(dir, 0o700)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            assert_private_dirs(&path)?;
        }
    }
    Ok(())
}

#[test]
fn serve_keeps_its_files_private_and_trusts_the_dev_ca_only_while_it_should() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let d = dir.path();
    let (ca_pem, cert, key) = ubernetes_e2e::webhook::serving_certificates(d, &["127.0.0.1"])?;
    let serving_ca = d.join("serving-ca.crt");
    std::fs::write(&serving_ca, &ca_pem)?;
    let policy = d.join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )?;
    let audit_log = d.join("audit").join("audit.log");
    let encryption = d.join("encryption.yaml");
    std::fs::write(
        &encryption,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n\
             - resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: key1\n        \
             secret: {AES_KEY}\n  - identity: {{}}\n"
        ),
    )?;
    let arg = |p: &Path| p.display().to_string();
    let (cert, key) = (arg(&cert), arg(&key));

    // (1) --tls-cert-file without --client-ca-file, Secrets encrypted, an
    // audit log: a fresh data dir.
    let data = d.join("own-tls");
    let own_tls = Serve::start(
        &data,
        &d.join("own-tls.log"),
        &[
            "--tls-cert-file",
            &cert,
            "--tls-private-key-file",
            &key,
            "--encryption-provider-config",
            &arg(&encryption),
            "--audit-policy-file",
            &arg(&policy),
            "--audit-log-path",
            &arg(&audit_log),
        ],
    )?;
    let pki = data.join("pki");
    // kubectl presenting the dev admin certificate (system:masters).
    let dev_admin = |serve: &Serve, args: &[&str]| {
        serve.kubectl(
            d,
            &serving_ca,
            &pki.join("admin.crt"),
            &pki.join("admin.key"),
            args,
        )
    };
    // It authenticates nobody: 401 (the server asks for no client
    // certificate at all).
    let out = ubernetes_e2e::eventually(WAIT, || {
        let out = dev_admin(&own_tls, &["get", "--raw", "/api/v1/namespaces"])?;
        Ok((!out.status.success()).then_some(out))
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Unauthorized"),
        "the dev admin certificate must not authenticate: {stderr}"
    );
    assert_mode(&data, 0o700)?;
    // sled's files as the open left them; files it makes later (blobs,
    // snapshots) get the umask's mode inside these 0700 directories.
    assert_private_dirs(&data.join("store"))?;
    for file in ["db", "conf"] {
        assert_mode(&data.join("store").join(file), 0o600)?;
    }
    assert_mode(&pki, 0o700)?;
    for key in ["ca.key", "serving.key", "admin.key"] {
        assert_mode(&pki.join(key), 0o600)?;
    }
    assert_mode(&data.join("kubeconfig"), 0o600)?;
    assert_mode(audit_log.parent().context("audit dir")?, 0o700)?;
    assert_mode(&audit_log, 0o600)?;
    // The written kubeconfig has the cluster and no credentials.
    let kubeconfig = std::fs::read_to_string(data.join("kubeconfig"))?;
    assert!(
        kubeconfig.contains("user: {}") && !kubeconfig.contains("client-key-data"),
        "{kubeconfig}"
    );
    let log = own_tls.log()?;
    assert!(
        log.contains("wrote a kubeconfig without user credentials"),
        "{log}"
    );
    assert!(
        !log.contains(PLAINTEXT_WARNING),
        "no plaintext warning when secrets are encrypted:\n{log}"
    );
    assert!(
        !pki.join("encryption-config.yaml").exists(),
        "an explicit --encryption-provider-config replaces the default key"
    );
    drop(own_tls);

    // (2) The same PKI copied in (its directories made with the umask's
    // mode, as `cp` would) and --client-ca-file naming the dev CA, no
    // encryption (the default turned off): the dev admin authenticates, the
    // loose data dir is tightened, and the plaintext warning names the store.
    let named_data = d.join("named");
    std::fs::create_dir_all(named_data.join("pki"))?;
    for entry in std::fs::read_dir(&pki)? {
        let entry = entry?;
        std::fs::copy(entry.path(), named_data.join("pki").join(entry.file_name()))?;
    }
    let named = Serve::start(
        &named_data,
        &d.join("named.log"),
        &[
            "--tls-cert-file",
            &cert,
            "--tls-private-key-file",
            &key,
            "--client-ca-file",
            &arg(&pki.join("ca.crt")),
            "--encrypt-secrets-by-default=false",
        ],
    )?;
    let whoami = ubernetes_e2e::eventually(WAIT, || {
        let out = dev_admin(
            &named,
            &[
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}",
            ],
        )?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
    })?;
    assert_eq!(whoami.trim(), "ubernetes-admin");
    assert_mode(&named_data, 0o700)?;
    assert_mode(&named_data.join("pki"), 0o700)?;
    // This kubeconfig carries the dev admin certificate: it works.
    let kubeconfig = std::fs::read_to_string(named_data.join("kubeconfig"))?;
    assert!(kubeconfig.contains("client-key-data"), "{kubeconfig}");
    let log = named.log()?;
    let umask = std::fs::read_to_string("/proc/self/status")?
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|m| u32::from_str_radix(m.trim(), 8).ok())
        .unwrap_or(0o022);
    if umask & 0o077 != 0o077 {
        assert!(
            log.contains("the data dir had mode ") && log.contains("set it to 0700"),
            "the loose data dir is reported:\n{log}"
        );
    }
    let warning = log
        .lines()
        .find(|l| l.contains(PLAINTEXT_WARNING))
        .with_context(|| format!("no plaintext warning:\n{log}"))?;
    let store = std::fs::canonicalize(&named_data)?.join("store");
    assert!(
        warning.contains("WARN")
            && warning.contains(&arg(&store))
            && warning.contains("--encryption-provider-config"),
        "{warning}"
    );
    Ok(())
}
