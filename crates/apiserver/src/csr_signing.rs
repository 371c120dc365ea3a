//! kube-controller-manager's CSR signing flags (`--cluster-signing-*`) and
//! the CA they name, for the leader's `kubernetes.io/kube-apiserver-client`
//! signer (`ubernetes_registry::csr_signer`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::options::{ServerOptions, parse_duration};

/// Signing of approved CertificateSigningRequests.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterSigningOptions {
    /// Filename containing a PEM-encoded X509 CA certificate used to issue
    /// cluster-scoped certificates: the kubernetes.io/kube-apiserver-client
    /// signer signs approved CertificateSigningRequests with it. Default:
    /// the dev CA (DATA_DIR/pki/ca.crt), which this server trusts for
    /// client certificates (another CA must also be in --client-ca-file for
    /// its certificates to authenticate).
    #[arg(
        long = "cluster-signing-cert-file",
        value_name = "FILE",
        requires = "cluster_signing_key_file"
    )]
    pub cluster_signing_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to
    /// sign cluster-scoped certificates (goes with
    /// --cluster-signing-cert-file; default: DATA_DIR/pki/ca.key).
    #[arg(
        long = "cluster-signing-key-file",
        value_name = "FILE",
        requires = "cluster_signing_cert_file"
    )]
    pub cluster_signing_key_file: Option<PathBuf>,

    /// The max length of duration signed certificates will be given.
    /// Individual CSRs may request shorter certs by setting
    /// spec.expirationSeconds.
    #[arg(
        long = "cluster-signing-duration",
        value_name = "DURATION",
        default_value = "8760h0m0s",
        value_parser = parse_duration
    )]
    pub cluster_signing_duration: Duration,
}

impl Default for ClusterSigningOptions {
    fn default() -> Self {
        Self {
            cluster_signing_cert_file: None,
            cluster_signing_key_file: None,
            cluster_signing_duration: Duration::from_secs(365 * 24 * 3600),
        }
    }
}

/// The signer's CA and settings: the `--cluster-signing-*` files, else the
/// dev CA of the data dir; `None` when neither exists (e.g. a server built
/// in-process without its PKI), and then no CSR is signed.
pub fn signer_config(
    options: &ServerOptions,
) -> anyhow::Result<Option<ubernetes_registry::csr_signer::SignerConfig>> {
    let o = &options.cluster_signing;
    let (cert, key) = match (&o.cluster_signing_cert_file, &o.cluster_signing_key_file) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        _ => {
            let dir = options.pki_dir();
            let (c, k) = (
                dir.join(ubernetes_certs::CA_CERT_FILE),
                dir.join(ubernetes_certs::CA_KEY_FILE),
            );
            if !c.is_file() || !k.is_file() {
                tracing::info!(
                    "no cluster signing CA (no dev PKI): certificate signing requests are not signed"
                );
                return Ok(None);
            }
            (c, k)
        }
    };
    let read = |p: &PathBuf, flag: &str| {
        std::fs::read_to_string(p).with_context(|| format!("cannot read {flag} {}", p.display()))
    };
    let ca = ubernetes_certs::CertPair {
        cert_pem: read(&cert, "--cluster-signing-cert-file")?,
        key_pem: read(&key, "--cluster-signing-key-file")?,
    };
    tracing::info!(ca = %cert.display(), duration = ?o.cluster_signing_duration, "kubernetes.io/kube-apiserver-client signer ready");
    Ok(Some(ubernetes_registry::csr_signer::SignerConfig {
        ca,
        duration: o.cluster_signing_duration,
    }))
}
