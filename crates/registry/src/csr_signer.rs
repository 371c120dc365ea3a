//! kube-controller-manager's CSR signing controller
//! (`pkg/controller/certificates/signer`) for the
//! `kubernetes.io/kube-apiserver-client` signer: a CertificateSigningRequest
//! of that signer that is approved (an `Approved` condition, no `Denied`),
//! not `Failed` and not yet issued is signed with the cluster signing CA
//! (this server's client CA unless `--cluster-signing-cert-file` says
//! otherwise), and the certificate is written to `status.certificate`. The
//! request must be valid for the signer (kube's `validAPIServerClientUsages`:
//! `client auth` required, only `digital signature` and `key encipherment`
//! besides); if not, the CSR gets a `Failed` condition with reason
//! `SignerValidationFailure`, as kube writes it. The certificate's subject
//! (CN = user, O = groups) is the request's. Its lifetime is
//! `--cluster-signing-duration`, or `spec.expirationSeconds` when shorter
//! (never under 10 minutes), backdated 5 minutes as kube's
//! `PermissiveSigningPolicy`. Runs on the leader only.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_storage::EventType;

use crate::controllers::{Queue, follow, spawn_until};
use crate::registry::Registry;
use crate::store::WriteOptions;

/// The signer this controller serves.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// kube's `Backdate`: certificates start 5 minutes in the past.
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// kube's `Short`: certificates shorter than this do not lose the backdate
/// from their end.
const SHORT: Duration = Duration::from_secs(8 * 3600);
/// kube's lower bound of a requested lifetime.
const MIN_DURATION: Duration = Duration::from_secs(10 * 60);
const FIELD_MANAGER: &str = "kube-controller-manager";

/// The signing CA and the longest lifetime it gives.
#[derive(Clone)]
pub struct SignerConfig {
    pub ca: ubernetes_certs::CertPair,
    /// `--cluster-signing-duration` (kube's default: one year).
    pub duration: Duration,
}

/// The running controller.
pub struct CsrSigner {
    registry: Arc<Registry>,
    config: SignerConfig,
    queue: Arc<Queue<String>>,
}

/// Whether kube's signer acts on this CSR now.
fn wants_signing(csr: &Value) -> bool {
    if csr.pointer("/spec/signerName").and_then(Value::as_str) != Some(KUBE_APISERVER_CLIENT_SIGNER)
    {
        return false;
    }
    if csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        return false;
    }
    let conditions = csr
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = |t: &str, true_only: bool| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(t)
                && (!true_only || c.get("status").and_then(Value::as_str) == Some("True"))
        })
    };
    // kube's IsCertificateRequestApproved and HasTrueCondition(Failed).
    has("Approved", false) && !has("Denied", false) && !has("Failed", true)
}

/// kube's `validAPIServerClientUsages`.
pub fn valid_api_server_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for u in usages {
        match u.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

/// kube's `signingDuration`: the requested lifetime within 10 minutes and
/// the configured maximum.
pub fn signing_duration(max: Duration, expiration_seconds: Option<i64>) -> Duration {
    match expiration_seconds {
        None => max,
        Some(s) => {
            Duration::from_secs(s.max(0).unsigned_abs()).clamp(MIN_DURATION, max.max(MIN_DURATION))
        }
    }
}

impl CsrSigner {
    /// Follow CertificateSigningRequests until `stop` (a leadership term);
    /// `None` when the registry does not serve them.
    pub fn start_until(
        registry: Arc<Registry>,
        config: SignerConfig,
        stop: CancellationToken,
    ) -> Option<Arc<Self>> {
        let csrs = registry.get("certificates.k8s.io", "v1", "certificatesigningrequests")?;
        let c = Arc::new(Self {
            registry,
            config,
            queue: Queue::new(),
        });
        let observer = c.clone();
        follow(stop.clone(), csrs, move |_, kind, obj| {
            if kind == EventType::Deleted || !wants_signing(&obj) {
                return;
            }
            if let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str) {
                observer.queue.add(name.to_string());
            }
        });
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let name = worker.queue.next().await;
                if let Err(e) = worker.sync(&name).await {
                    tracing::warn!(csr = %name, error = %e.message, "signing the certificate signing request failed; retrying in 10 s");
                    worker.queue.add_after(name, Duration::from_secs(10));
                }
            }
        });
        Some(c)
    }

    async fn sync(&self, name: &str) -> Result<(), ApiError> {
        let Some(csrs) =
            self.registry
                .get("certificates.k8s.io", "v1", "certificatesigningrequests")
        else {
            return Ok(());
        };
        let csr = match csrs.get_value(None, name).await {
            Ok(c) => c,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        if !wants_signing(&csr) {
            return Ok(());
        }
        let usages: Vec<String> = csr
            .pointer("/spec/usages")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|u| u.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let now = jiff::Timestamp::now();
        let now_str = crate::store::now_rfc3339();
        if let Err(msg) = valid_api_server_client_usages(&usages) {
            tracing::info!(csr = %name, reason = %msg, "certificate signing request refused by the kube-apiserver-client signer");
            let condition = json!({
                "type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                "message": msg, "lastUpdateTime": now_str, "lastTransitionTime": now_str,
            });
            csrs.patch(None, name, Some("status"), &opts, |cur| {
                let mut c = cur.clone();
                push_condition(&mut c, condition.clone());
                Ok(c)
            })
            .await?;
            return Ok(());
        }
        let request = csr
            .pointer("/spec/request")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "unable to parse csr {name:?}: spec.request is not a PEM block"
                ))
            })?;
        let ttl = signing_duration(
            self.config.duration,
            csr.pointer("/spec/expirationSeconds")
                .and_then(Value::as_i64),
        );
        let span =
            |d: Duration| jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::ZERO);
        let not_before = now - span(BACKDATE);
        let not_after = if ttl < SHORT {
            now + span(ttl)
        } else {
            now + span(ttl) - span(BACKDATE)
        };
        let pem = ubernetes_certs::sign_certificate_request(
            &self.config.ca,
            &request,
            &usages,
            not_before,
            not_after,
        )
        .map_err(|e| ApiError::bad_request(format!("unable to sign csr {name:?}: {e}")))?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(pem.as_bytes());
        csrs.patch(None, name, Some("status"), &opts, |cur| {
            let mut c = cur.clone();
            if !c.get("status").is_some_and(Value::is_object) {
                c["status"] = json!({});
            }
            c["status"]["certificate"] = json!(encoded);
            Ok(c)
        })
        .await?;
        tracing::info!(csr = %name, lifetime_s = ttl.as_secs(), "signed the certificate signing request (kubernetes.io/kube-apiserver-client)");
        Ok(())
    }
}

fn push_condition(csr: &mut Value, condition: Value) {
    if !csr.get("status").is_some_and(Value::is_object) {
        csr["status"] = json!({});
    }
    match csr["status"]
        .get_mut("conditions")
        .and_then(Value::as_array_mut)
    {
        Some(list) => list.push(condition),
        None => csr["status"]["conditions"] = json!([condition]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_approved_unissued_requests_of_this_signer_are_signed() {
        let base = json!({"spec": {"signerName": KUBE_APISERVER_CLIENT_SIGNER},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        assert!(wants_signing(&base));
        let mut other = base.clone();
        other["spec"]["signerName"] = json!("example.com/other");
        assert!(!wants_signing(&other));
        let mut denied = base.clone();
        denied["status"]["conditions"] =
            json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]);
        assert!(!wants_signing(&denied));
        let mut failed = base.clone();
        failed["status"]["conditions"] =
            json!([{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}]);
        assert!(!wants_signing(&failed));
        let mut issued = base.clone();
        issued["status"]["certificate"] = json!("LS0t");
        assert!(!wants_signing(&issued));
        assert!(!wants_signing(
            &json!({"spec": {"signerName": KUBE_APISERVER_CLIENT_SIGNER}})
        ));
    }

    #[test]
    fn usages_follow_kubes_client_signer_rules() {
        let u = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(valid_api_server_client_usages(&u(&["client auth"])).is_ok());
        assert!(
            valid_api_server_client_usages(&u(&[
                "digital signature",
                "key encipherment",
                "client auth"
            ]))
            .is_ok()
        );
        assert_eq!(
            valid_api_server_client_usages(&u(&["client auth", "server auth"])),
            Err("invalid usage for client certificate: server auth".into())
        );
        assert_eq!(
            valid_api_server_client_usages(&u(&["digital signature"])),
            Err("missing required usage for client certificate: client auth".into())
        );
    }

    #[test]
    fn requested_lifetimes_are_kept_within_ten_minutes_and_the_maximum() {
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(signing_duration(year, None), year);
        assert_eq!(
            signing_duration(year, Some(3600)),
            Duration::from_secs(3600)
        );
        assert_eq!(signing_duration(year, Some(60)), MIN_DURATION);
        assert_eq!(
            signing_duration(Duration::from_secs(7200), Some(86400)),
            Duration::from_secs(7200)
        );
    }
}
