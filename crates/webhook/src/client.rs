//! Calling one webhook (`admissionregistration.k8s.io/v1`
//! `WebhookClientConfig`, also the CRD conversion webhook's): POST a JSON
//! document over HTTPS and read a JSON document back, within a timeout, as
//! kube-apiserver's `webhookutil.ClientManager` does.
//!
//! - `url`: called as given (`https` only), the server certificate checked
//!   against `caBundle` (or the system roots when it is empty) for the URL's
//!   host (a name or an IP address);
//! - `service`: kube dials the Service's cluster IP; a federation has no
//!   pods and no service proxy, so the Service is resolved through a
//!   [`ServiceResolver`] (the registry's: its `Endpoints`, or the
//!   `externalName` of an ExternalName Service) and the certificate is
//!   checked for `NAME.NAMESPACE.svc`, as kube checks it.
//!
//! The request URL carries `?timeout=Ns` (the time left, rounded up to a
//! second), as kube's REST client tells the webhook its deadline. Errors
//! read as Go's `url.Error` (`Post "https://…": context deadline
//! exceeded`, `… dial tcp 127.0.0.1:1: connect: connection refused`),
//! which kube puts in its `failed calling webhook` message.
//!
//! One connection per call (hyper's HTTP/1 client over tokio-rustls by
//! hand, rather than a pooling client: the TLS name must be the Service's
//! DNS name while the TCP connection goes to an endpoint's address, which a
//! pooling connector keyed by URL does not express).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;

/// `WebhookClientConfig.service`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceReference {
    pub namespace: String,
    pub name: String,
    /// URL path (`/` when absent).
    pub path: Option<String>,
    /// Defaults to 443.
    pub port: u16,
}

/// `WebhookClientConfig`: where to send, and which CA signs the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    pub url: Option<String>,
    pub service: Option<ServiceReference>,
    /// PEM certificates (decoded from the base64 of the JSON form).
    pub ca_bundle: Vec<u8>,
}

impl ClientConfig {
    /// From the JSON form (`caBundle` base64, `service.port` default 443).
    pub fn from_json(v: &Value) -> Result<Self, String> {
        use base64::Engine;
        let ca_bundle = match v.get("caBundle").and_then(Value::as_str) {
            Some(b) if !b.is_empty() => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("caBundle is not base64: {e}"))?,
            _ => Vec::new(),
        };
        let url = v
            .get("url")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .map(str::to_string);
        let service = match v.get("service").filter(|s| s.is_object()) {
            Some(s) => {
                let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let port = s.get("port").and_then(Value::as_u64).unwrap_or(443);
                Some(ServiceReference {
                    namespace: get("namespace"),
                    name: get("name"),
                    path: s
                        .get("path")
                        .and_then(Value::as_str)
                        .filter(|p| !p.is_empty())
                        .map(str::to_string),
                    port: u16::try_from(port).map_err(|_| format!("service port {port}"))?,
                })
            }
            None => None,
        };
        if url.is_none() && service.is_none() {
            return Err("exactly one of url or service is required".into());
        }
        Ok(Self {
            url,
            service,
            ca_bundle,
        })
    }
}

/// Where a Service's traffic goes (kube's `ServiceResolver`): the host and
/// port to dial for `namespace/name:port`. Errors read as kube's
/// (`service "x" not found`, `no endpoints available for service "x"`).
#[async_trait::async_trait]
pub trait ServiceResolver: Send + Sync {
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), String>;
}

/// A failed call: Go's `url.Error` (`Post "URL": reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    /// The URL as called (with `?timeout=`).
    pub url: String,
    pub reason: String,
    /// The deadline passed.
    pub timed_out: bool,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Post \"{}\": {}", self.url, self.reason)
    }
}

impl std::error::Error for CallError {}

/// kube's `?timeout=` value: the time left, rounded up to whole seconds.
fn timeout_param(timeout: Duration) -> String {
    let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    format!("{secs}s")
}

fn with_query(path: &str, timeout: Duration) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}timeout={}", timeout_param(timeout))
}

/// Where one call goes.
struct Target {
    /// The URL as shown in errors and sent (`https://host:port/path?timeout=…`).
    url: String,
    /// `Host` header.
    authority: String,
    path_and_query: String,
    /// The name the certificate must be valid for.
    server_name: String,
    /// Dial this, or resolve the Service first.
    dial: Dial,
}

enum Dial {
    Direct(String, u16),
    Service(ServiceReference),
}

fn target(cfg: &ClientConfig, timeout: Duration) -> Result<Target, String> {
    if let Some(url) = &cfg.url {
        let uri: http::Uri = url.parse().map_err(|e| format!("parse \"{url}\": {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!(
                "unsupported protocol scheme \"{}\"",
                uri.scheme_str().unwrap_or("")
            ));
        }
        let host = uri.host().unwrap_or("").to_string();
        let port = uri.port_u16().unwrap_or(443);
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let path_and_query = with_query(path, timeout);
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_default();
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        return Ok(Target {
            url: format!("https://{authority}{path_and_query}"),
            authority,
            path_and_query,
            server_name: bare.clone(),
            dial: Dial::Direct(bare, port),
        });
    }
    let Some(svc) = &cfg.service else {
        return Err("exactly one of url or service is required".into());
    };
    let host = format!("{}.{}.svc", svc.name, svc.namespace);
    let path = svc.path.as_deref().unwrap_or("/");
    let path_and_query = with_query(path, timeout);
    let authority = format!("{host}:{}", svc.port);
    Ok(Target {
        url: format!("https://{authority}{path_and_query}"),
        authority,
        path_and_query,
        server_name: host,
        dial: Dial::Service(svc.clone()),
    })
}

fn tls_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.is_empty() {
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
    } else {
        let mut reader = ca_bundle;
        for cert in rustls_pemfile::certs(&mut reader) {
            let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("caBundle: unable to load root certificates: {e}"))?;
        }
        if roots.is_empty() {
            return Err("caBundle: unable to load root certificates: no certificates".into());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Go's wording of a TLS failure.
fn tls_error(e: &std::io::Error, server_name: &str) -> String {
    let inner = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>())
        .cloned();
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
        | Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForNameContext { .. },
        )) => format!(
            "tls: failed to verify certificate: x509: certificate is not valid for {server_name}"
        ),
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Expired))
        | Some(rustls::Error::InvalidCertificate(rustls::CertificateError::ExpiredContext {
            ..
        })) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .into()
        }
        Some(other) => format!("tls: {other}"),
        None => format!("remote error: {e}"),
    }
}

fn dial_error(host: &str, port: u16, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {host}:{port}: connect: {why}")
}

/// POST `body` as JSON to the webhook and parse its JSON answer, all
/// within `timeout`. A non-2xx answer is an error (client-go's REST client
/// does not decode those into the result either).
pub async fn post_json(
    cfg: &ClientConfig,
    resolver: &dyn ServiceResolver,
    body: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let target = target(cfg, timeout).map_err(|reason| CallError {
        url: cfg.url.clone().unwrap_or_default(),
        reason,
        timed_out: false,
    })?;
    let url = target.url.clone();
    let fail = |reason: String| CallError {
        url: url.clone(),
        reason,
        timed_out: false,
    };
    let payload = serde_json::to_vec(body).map_err(|e| fail(e.to_string()))?;
    let call = async {
        let (host, port) = match &target.dial {
            Dial::Direct(h, p) => (h.clone(), *p),
            Dial::Service(s) => resolver.resolve(&s.namespace, &s.name, s.port).await?,
        };
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| dial_error(&host, port, &e))?;
        let server_name = ServerName::try_from(target.server_name.clone())
            .map_err(|e| format!("invalid server name {}: {e}", target.server_name))?;
        let connector = tokio_rustls::TlsConnector::from(Arc::new(tls_config(&cfg.ca_bundle)?));
        let tls = connector
            .connect(server_name, tcp)
            .await
            .map_err(|e| tls_error(&e, &target.server_name))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        let driver = tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "webhook connection ended");
            }
        });
        let req = http::Request::post(target.path_and_query.as_str())
            .header(http::header::HOST, target.authority.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, "ubernetes-apiserver")
            .body(Full::new(Bytes::from(payload)))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        driver.abort();
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes).trim().to_string();
            return Err(if text.is_empty() {
                format!(
                    "the server responded with the status code {} but did not return more information",
                    status.as_u16()
                )
            } else {
                format!(
                    "an error on the server ({text:?}) has prevented the request from succeeding"
                )
            });
        }
        serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| format!("invalid JSON in the webhook's answer: {e}"))
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(reason)) => Err(fail(reason)),
        Err(_) => Err(CallError {
            url: url.clone(),
            reason: "context deadline exceeded".into(),
            timed_out: true,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn client_config_from_json_defaults_the_service_port() {
        let c = ClientConfig::from_json(&json!({"service": {"namespace": "ns", "name": "w"}}))
            .expect("config");
        assert_eq!(c.service.as_ref().map(|s| s.port), Some(443));
        assert!(ClientConfig::from_json(&json!({})).is_err());
        assert!(ClientConfig::from_json(&json!({"url": "https://x", "caBundle": "%%"})).is_err());
    }

    #[test]
    fn urls_carry_kubes_timeout_parameter_and_tls_names() {
        let c = ClientConfig::from_json(&json!({"url": "https://127.0.0.1:8443/deny"}))
            .expect("config");
        let t = target(&c, Duration::from_millis(2500)).expect("target");
        assert_eq!(t.url, "https://127.0.0.1:8443/deny?timeout=3s");
        assert_eq!(t.server_name, "127.0.0.1");
        let c = ClientConfig::from_json(
            &json!({"service": {"namespace": "ns", "name": "w", "path": "/m", "port": 8443}}),
        )
        .expect("config");
        let t = target(&c, Duration::from_secs(10)).expect("target");
        assert_eq!(t.url, "https://w.ns.svc:8443/m?timeout=10s");
        assert_eq!(t.server_name, "w.ns.svc");
        let c = ClientConfig::from_json(&json!({"url": "http://127.0.0.1/x"})).expect("config");
        assert!(target(&c, Duration::from_secs(1)).is_err());
    }
}
