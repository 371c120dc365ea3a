//! # ubernetes-webhook
//!
//! Calling webhooks as kube-apiserver does: [`client`] POSTs a JSON
//! document to a `WebhookClientConfig` (a URL or a Service, with its
//! `caBundle`) over HTTPS within a timeout and reads JSON back (admission
//! webhooks and CRD conversion webhooks), [`admission`] is the admission
//! plugin of `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` on top of it, and [`conversion`] the
//! `ConversionReview` converter of CRDs with `conversion.strategy: Webhook`.
//!
//! A federation has no pods and no service proxy: a webhook named by a
//! Service is reached through that Service's `Endpoints` (which the user
//! creates, pointing at wherever the webhook runs), or the `externalName`
//! of an ExternalName Service ([`RegistryServiceResolver`]).
#![forbid(unsafe_code)]

pub mod admission;
pub mod client;
pub mod conversion;

use std::sync::{Arc, Weak};

use serde_json::Value;
use ubernetes_registry::Registry;

pub use admission::WebhookAdmission;

/// Resolves a Service through the registry, as kube's endpoint-routing
/// `ServiceResolver` (`ResolveEndpoint`): the Service's port named by the
/// webhook, then an address of its `Endpoints` with the matching port (by
/// the service port's name); an ExternalName Service is its external name.
pub struct RegistryServiceResolver {
    registry: Weak<Registry>,
}

impl RegistryServiceResolver {
    pub fn new(registry: &Arc<Registry>) -> Self {
        Self {
            registry: Arc::downgrade(registry),
        }
    }
}

#[async_trait::async_trait]
impl client::ServiceResolver for RegistryServiceResolver {
    async fn resolve(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), String> {
        let registry = self
            .registry
            .upgrade()
            .ok_or_else(|| "the server is shutting down".to_string())?;
        let services = registry
            .get("", "v1", "services")
            .ok_or_else(|| "services are not served".to_string())?;
        let svc = services
            .get_value(Some(namespace), name)
            .await
            .map_err(|e| {
                if e.code == 404 {
                    format!("service \"{name}\" not found")
                } else {
                    e.message
                }
            })?;
        if svc.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
            let host = svc
                .pointer("/spec/externalName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Ok((host.to_string(), port));
        }
        let svc_port = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .and_then(|ports| {
                ports
                    .iter()
                    .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
            })
            .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
        let port_name = svc_port.get("name").and_then(Value::as_str).unwrap_or("");
        let endpoints = registry
            .get("", "v1", "endpoints")
            .ok_or_else(|| "endpoints are not served".to_string())?;
        let eps = endpoints
            .get_value(Some(namespace), name)
            .await
            .map_err(|e| {
                if e.code == 404 {
                    format!("endpoints \"{name}\" not found")
                } else {
                    e.message
                }
            })?;
        for subset in eps
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(ep_port) = subset
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
                .and_then(|p| p.get("port").and_then(Value::as_u64))
                .and_then(|p| u16::try_from(p).ok())
            else {
                continue;
            };
            if let Some(ip) = subset
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(|a| a.get("ip"))
                .and_then(Value::as_str)
            {
                return Ok((ip.to_string(), ep_port));
            }
        }
        Err(format!("no endpoints available for service \"{name}\""))
    }
}
