//! The service-account token issuer the state holds: [`load_issuer`].

use std::sync::Arc;

use anyhow::Context as _;
use ubernetes_registry::jwt::{JwtConfig, ServiceAccountJwt};

use crate::options::ServerOptions;

/// The service-account token issuer of `options`.
pub fn load_issuer(options: &ServerOptions) -> anyhow::Result<Arc<ServiceAccountJwt>> {
    let (signing_key_pem, signing_key_name) = match &options.service_account_signing_key_file {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| {
                format!(
                    "cannot read --service-account-signing-key-file {}",
                    path.display()
                )
            })?,
            format!("--service-account-signing-key-file {}", path.display()),
        ),
        None => {
            let dir = options.pki_dir();
            let (pem, outcome) =
                ubernetes_certs::ensure_service_account_key(&dir).with_context(|| {
                    format!(
                        "cannot prepare the service-account key in {}",
                        dir.display()
                    )
                })?;
            tracing::info!(dir = %dir.display(), ?outcome, "service-account signing key");
            (
                pem,
                dir.join(ubernetes_certs::SERVICE_ACCOUNT_KEY_FILE)
                    .display()
                    .to_string(),
            )
        }
    };
    let mut verification_keys = Vec::new();
    for path in &options.service_account_key_file {
        let pem = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read --service-account-key-file {}", path.display())
        })?;
        verification_keys.push((
            pem,
            format!("--service-account-key-file {}", path.display()),
        ));
    }
    let jwt = ServiceAccountJwt::new(JwtConfig {
        issuers: options.service_account_issuer.clone(),
        api_audiences: options.api_audiences.clone(),
        signing_key_pem,
        signing_key_name,
        verification_keys,
        max_expiration_seconds: i64::try_from(
            options.service_account_max_token_expiration.as_secs(),
        )
        .unwrap_or(i64::MAX),
    })
    .map_err(|e| anyhow::anyhow!("service-account keys: {e}"))?;
    tracing::info!(issuer = jwt.issuer(), algorithm = jwt.algorithm(), audiences = ?jwt.api_audiences(), "service-account tokens");
    Ok(jwt)
}
