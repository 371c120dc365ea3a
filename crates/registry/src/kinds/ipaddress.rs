//! `networking.k8s.io/v1` IPAddresses and ServiceCIDRs (kube's
//! MultiCIDRServiceAllocator API, GA in 1.33), stored and served as
//! kube-apiserver 1.36 serves them: an IPAddress is named by a canonical IP
//! and references its parent (`services/default/kubernetes`), immutably; a
//! ServiceCIDR holds one or two CIDRs (one per IP family) and has `status`.
//! [`bootstrap_service_cidr`] creates the default ServiceCIDR `kubernetes`
//! from `--service-cluster-ip-range`, Ready, as kube-apiserver's
//! `start-kubernetes-service-cidr-controller` hook does.
//!
//! What is not here: ClusterIPs are still allocated from
//! `--service-cluster-ip-range` by `ipalloc` (with its own claims, not
//! IPAddress objects), and ServiceCIDRs a client adds do not widen it.

use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
use serde_json::{Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, Cause};

use super::builtin::{Builtin, info};
use super::names::{self, NameValidation};
use super::validation::{invalid_shown, invalid_str};
use crate::printers;
use crate::registry::Registry;
use crate::store::WriteOptions;
use crate::strategy::Strategy;

/// The name of the default ServiceCIDR.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";

/// IPAddress and ServiceCIDR.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<IPAddress>::new(info::<IPAddress>("ipaddress", &["ip"], &[], &[]))
                .printer(printers::IP_ADDRESS)
                // The name is an IP (IPv6 has colons): checked below instead.
                .names(NameValidation::PathSegment)
                .validate(validate_ip_address)
                .validate_update(|new, old| {
                    if new.spec.parent_ref != old.spec.parent_ref {
                        return vec![invalid_shown(
                            "spec.parentRef",
                            &format!("{:?}", new.spec.parent_ref),
                            "field is immutable",
                        )];
                    }
                    Vec::new()
                }),
        ),
        Arc::new(
            Builtin::<ServiceCIDR>::new(info::<ServiceCIDR>("servicecidr", &[], &[], &["status"]))
                .printer(printers::SERVICE_CIDR)
                // serviceCIDRStatusStrategy resets the spec only.
                .status_writes_metadata()
                .on_create(super::resource::empty_status)
                .validate(|s| {
                    validate_cidrs(
                        s.spec
                            .as_ref()
                            .and_then(|s| s.cidrs.as_deref())
                            .unwrap_or_default(),
                    )
                })
                .validate_update(|new, old| {
                    let cidrs = |s: &ServiceCIDR| {
                        s.spec
                            .as_ref()
                            .and_then(|s| s.cidrs.clone())
                            .unwrap_or_default()
                    };
                    let (n, o) = (cidrs(new), cidrs(old));
                    // kube allows one change: a single-stack CIDR gets its
                    // second IP family.
                    let upgrade = o.len() == 1 && n.len() == 2 && n[0] == o[0];
                    if n != o && !upgrade {
                        return vec![invalid_shown(
                            "spec.cidrs",
                            &go_strings(&n),
                            "field is immutable",
                        )];
                    }
                    Vec::new()
                }),
        ),
    ]
}

fn go_strings(v: &[String]) -> String {
    let items: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// `ValidateIPAddress`: the name is an IP in canonical form; the parent
/// reference names a resource and an object.
fn validate_ip_address(ip: &IPAddress) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = ip.metadata.name.as_deref().unwrap_or_default();
    if !name.is_empty() {
        match name.parse::<IpAddr>() {
            Err(_) => out.push(invalid_str(
                "metadata.name",
                name,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )),
            Ok(parsed) if parsed.to_string() != name => out.push(invalid_str(
                "metadata.name",
                name,
                &format!("must be in canonical form (\"{parsed}\")"),
            )),
            Ok(_) => {}
        }
    }
    let p = &ip.spec.parent_ref;
    if p.resource.is_empty() {
        out.push(field::required("spec.parentRef.resource", ""));
    }
    if p.name.is_empty() {
        out.push(field::required("spec.parentRef.name", ""));
    }
    if let Some(ns) = p.namespace.as_deref().filter(|n| !n.is_empty()) {
        for m in names::dns1123_label(ns) {
            out.push(invalid_str("spec.parentRef.namespace", ns, &m));
        }
    }
    out
}

/// `validateServiceCIDRSpec`: one or two valid CIDRs in canonical form, of
/// different IP families.
fn validate_cidrs(cidrs: &[String]) -> Vec<Cause> {
    let mut out = Vec::new();
    if cidrs.is_empty() {
        out.push(field::required("spec.cidrs", ""));
        return out;
    }
    if cidrs.len() > 2 {
        out.push(Cause::new(
            "FieldValueTooMany",
            format!("Too many: {}: must have at most 2 items", cidrs.len()),
            "spec.cidrs",
        ));
        return out;
    }
    let mut families = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        let path = format!("spec.cidrs[{i}]");
        match c.parse::<IpNet>() {
            Err(_) => out.push(invalid_str(
                &path,
                c,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )),
            Ok(net) if net.trunc().to_string() != *c => out.push(invalid_str(
                &path,
                c,
                &format!("must be in canonical form (\"{}\")", net.trunc()),
            )),
            Ok(net) => families.push(matches!(net, IpNet::V4(_))),
        }
    }
    if families.len() == 2 && families[0] == families[1] {
        out.push(invalid_shown(
            "spec.cidrs",
            &go_strings(cidrs),
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        ));
    }
    out
}

/// kube-apiserver's default ServiceCIDR controller at start: the
/// ServiceCIDR `kubernetes` holding `--service-cluster-ip-range`, with its
/// `Ready` condition. Idempotent; a replica that loses the create race
/// leaves the winner's object as it is.
pub async fn bootstrap_service_cidr(registry: &Registry, cidr: &str) -> Result<(), ApiError> {
    let Some(store) = registry.get("networking.k8s.io", "v1", "servicecidrs") else {
        return Ok(());
    };
    let obj = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
        "metadata": {"name": DEFAULT_SERVICE_CIDR},
        "spec": {"cidrs": [cidr]},
    });
    match store
        .create(None, None, obj, &WriteOptions::default())
        .await
    {
        Ok(_) | Err(ApiError { code: 409, .. }) => {}
        Err(e) => return Err(e),
    }
    let current = store.get_value(None, DEFAULT_SERVICE_CIDR).await?;
    let ready = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready"));
    if !ready {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let condition = json!({
            "type": "Ready", "status": "True", "reason": "",
            "message": "Kubernetes default Service CIDR is ready",
            "lastTransitionTime": now,
        });
        store
            .patch(
                None,
                DEFAULT_SERVICE_CIDR,
                Some("status"),
                &WriteOptions::default(),
                |cur| {
                    let mut next = cur.clone();
                    next["status"] = json!({"conditions": [condition.clone()]});
                    Ok(next)
                },
            )
            .await?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    fn cidrs(v: &[&str]) -> Vec<Cause> {
        validate_cidrs(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn service_cidrs_are_checked_as_kube_does() {
        assert!(cidrs(&["10.96.0.0/12"]).is_empty());
        assert!(cidrs(&["10.96.0.0/12", "fd00::/108"]).is_empty());
        assert_eq!(cidrs(&[]).len(), 1);
        assert_eq!(cidrs(&["10.96.0.1/12"]).len(), 1, "not canonical");
        assert_eq!(cidrs(&["nope"]).len(), 1);
        assert_eq!(
            cidrs(&["10.0.0.0/24", "10.1.0.0/24"]).len(),
            1,
            "same family"
        );
        assert_eq!(cidrs(&["10.0.0.0/24", "fd00::/64", "10.1.0.0/24"]).len(), 1);
    }

    #[test]
    fn ip_address_names_are_canonical_ips() {
        let ip = |name: &str| -> IPAddress {
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "a"}},
            }))
            .unwrap()
        };
        assert!(validate_ip_address(&ip("10.96.0.1")).is_empty());
        assert!(validate_ip_address(&ip("2001:db8::1")).is_empty());
        assert_eq!(validate_ip_address(&ip("2001:db8:0::1")).len(), 1);
        assert_eq!(validate_ip_address(&ip("not-an-ip")).len(), 1);
    }
}
