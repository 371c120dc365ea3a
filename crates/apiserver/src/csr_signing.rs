//! kube-controller-manager's CSR signing flags (`--cluster-signing-*`) and
//! the CA they name, for the leader's `kubernetes.io/kube-apiserver-client`
//! signer (`ubernetes_registry::csr_signer`).

use std::path::PathBuf;

use anyhow::Context;

use crate::options::ServerOptions;

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
