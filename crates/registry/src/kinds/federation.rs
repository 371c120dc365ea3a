//! `federation/v1beta1` clusters: discovery facts and validation of the
//! server addresses (CIDR and address) and the credentials Secret reference;
//! and propagation records (the federation's own bookkeeping per federated
//! object, written by the federation controllers; see `ubernetes-api`).

use std::sync::Arc;

use ubernetes_api::{Cluster, PropagationRecord};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use super::names;
use super::validation::invalid_str;
use crate::printers;
use crate::strategy::Strategy;

/// The `federation/v1beta1` strategies.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<Cluster>::new(info::<Cluster>(
                "cluster",
                &[],
                &[],
                // `proxy`: served by the API server's cluster proxy.
                &["status", "proxy"],
            ))
            .printer(printers::CLUSTER)
            .generation()
            .validate(validate_cluster),
        ),
        Arc::new(
            Builtin::<PropagationRecord>::new(info::<PropagationRecord>(
                "propagationrecord",
                &[],
                &[],
                &["status"],
            ))
            .printer(printers::PROPAGATION_RECORD)
            .without_protobuf()
            // The federation creates a record with its first state.
            .keep_status_on_create()
            .validate(validate_record),
        ),
    ]
}

fn validate_record(r: &PropagationRecord) -> Vec<Cause> {
    let o = &r.spec.resource;
    let mut out = Vec::new();
    for (path, v) in [
        ("spec.resource.apiVersion", &o.api_version),
        ("spec.resource.kind", &o.kind),
        ("spec.resource.resource", &o.resource),
        ("spec.resource.name", &o.name),
        ("spec.resource.uid", &o.uid),
    ] {
        if v.is_empty() {
            out.push(field::required(path, ""));
        }
    }
    out
}

/// Whether `s` is `ip/prefix` with a prefix that fits the address family.
pub fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    prefix.parse::<u8>().is_ok_and(|p| p <= max) && !prefix.starts_with('+')
}

fn validate_cluster(c: &Cluster) -> Vec<Cause> {
    let mut out = Vec::new();
    let addrs = &c.spec.server_address_by_client_cidrs;
    // `spec.syncMode` (issue 24): Push (the default) or Pull; a Pull
    // member is reached only through its agent's tunnel, so it needs no
    // address and must name no credentials.
    let pull = match c.spec.sync_mode.as_deref() {
        None | Some(ubernetes_api::SYNC_MODE_PUSH) => false,
        Some(ubernetes_api::SYNC_MODE_PULL) => true,
        Some(other) => {
            out.push(field::not_supported(
                "spec.syncMode",
                &serde_json::Value::String(other.to_string()),
                &[ubernetes_api::SYNC_MODE_PULL, ubernetes_api::SYNC_MODE_PUSH],
            ));
            false
        }
    };
    if pull && c.spec.secret_ref.is_some() {
        out.push(field::forbidden(
            "spec.secretRef",
            "must not be set when spec.syncMode is Pull: the federation reaches a pull member only through its agent",
        ));
    }
    if addrs.is_empty() && !pull {
        out.push(field::required("spec.serverAddressByClientCIDRs", ""));
    }
    for (i, a) in addrs.iter().enumerate() {
        let p = format!("spec.serverAddressByClientCIDRs[{i}]");
        if a.client_cidr.is_empty() {
            out.push(field::required(&format!("{p}.clientCIDR"), ""));
        } else if !is_cidr(&a.client_cidr) {
            out.push(invalid_str(
                &format!("{p}.clientCIDR"),
                &a.client_cidr,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            ));
        }
        if a.server_address.trim().is_empty() {
            out.push(field::required(&format!("{p}.serverAddress"), ""));
        }
    }
    if let Some(r) = &c.spec.secret_ref {
        if r.name.is_empty() {
            out.push(field::required("spec.secretRef.name", ""));
        } else {
            for m in names::dns1123_subdomain(&r.name) {
                out.push(invalid_str("spec.secretRef.name", &r.name, &m));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn cidrs_need_an_address_and_a_fitting_prefix() {
        assert!(is_cidr("0.0.0.0/0"));
        assert!(is_cidr("2001:db8::/64"));
        assert!(!is_cidr("10.0.0.0/33"));
        assert!(!is_cidr("10.0.0.0"));
        assert!(!is_cidr("example/8"));
    }
}
