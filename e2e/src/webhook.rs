//! Real HTTPS webhook servers for the tests: a CA and a serving certificate
//! generated per test ([`serving_certificates`]), and a webhook script from
//! `e2e/webhook/` run as a child process ([`WebhookProcess`]) that prints
//! its port and logs every review it receives, one JSON line each.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// A CA (its PEM, for a `caBundle`) and a certificate + key it signed for
/// `names` (IP addresses or DNS names), written under `dir`.
pub fn serving_certificates(dir: &Path, names: &[&str]) -> Result<(String, PathBuf, PathBuf)> {
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
    let params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    let cert = params.signed_by(&key, &issuer)?;
    let cert_path = dir.join("webhook.crt");
    let key_path = dir.join("webhook.key");
    std::fs::write(&cert_path, cert.pem())?;
    std::fs::write(&key_path, key.serialize_pem())?;
    Ok((ca.pem(), cert_path, key_path))
}

/// Whether `python3` runs (the webhook servers are Python scripts).
pub fn python3_available() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A webhook script (`e2e/webhook/NAME`) serving HTTPS on 127.0.0.1;
/// killed (by its PID) when dropped.
pub struct WebhookProcess {
    child: Child,
    pub port: u16,
    log: PathBuf,
}

impl WebhookProcess {
    /// Start `script` with `--cert`, `--key`, `--log DIR/<script>.jsonl`
    /// and `--port` (0: a free one), and read the port it bound.
    pub fn start(script: &str, dir: &Path, cert: &Path, key: &Path, port: u16) -> Result<Self> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("webhook")
            .join(script);
        let log = dir.join(format!("{script}.jsonl"));
        let mut child = Command::new("python3")
            .arg(&path)
            .arg("--cert")
            .arg(cert)
            .arg("--key")
            .arg(key)
            .arg("--log")
            .arg(&log)
            .arg("--port")
            .arg(port.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting python3 {}", path.display()))?;
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

    /// The reviews received so far: `{"path": …, "review": …}` each.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for WebhookProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
