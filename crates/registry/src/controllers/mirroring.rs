//! kube-controller-manager's **endpointslice-mirroring** controller
//! (`pkg/controller/endpointslicemirroring`) for one name, run by
//! [`super::endpoints::ServiceEndpointsController`]: a user's Endpoints
//! of a Service without a selector is mirrored into EndpointSlices
//! (`managed-by: endpointslicemirroring-controller.k8s.io`, the Endpoints'
//! labels and annotations, owned by the Endpoints), one per address type
//! and set of ports of its subsets, kept in step with it and removed when
//! it goes, when its Service goes or gains a selector, or when it is
//! labelled `endpointslice.kubernetes.io/skip-mirror: "true"` (as the
//! `kubernetes` Endpoints of the bootstrap is). Endpoints carrying a
//! leader-election record are not mirrored.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde_json::{Map, Value, json};
use ubernetes_apimachinery::ApiError;

use super::endpoints::{Key, TRIGGER_TIME_ANNOTATION, label, selector, store};
use super::endpointslice::{SliceMeta, Wanted, reconcile};
use super::standalone::owner_ref;
use crate::registry::Registry;

/// This controller's `endpointslice.kubernetes.io/managed-by` value.
pub const CONTROLLER_NAME: &str = "endpointslicemirroring-controller.k8s.io";
/// The label that keeps an Endpoints from being mirrored.
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether an Endpoints is mirrored (kube's `shouldMirror`).
pub fn should_mirror(endpoints: &Value) -> bool {
    label(endpoints, SKIP_MIRROR_LABEL) != Some("true")
        && endpoints
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LEADER_ANNOTATION))
            .is_none()
}

/// The mirroring controller's `syncEndpoints` for one name.
pub(crate) async fn sync(
    registry: &Registry,
    key: &Key,
    svc: Option<&Value>,
) -> Result<(), ApiError> {
    let (ns, name) = key;
    let endpoints = store(registry, "", "endpoints")?;
    let ep = match endpoints.get_value(Some(ns), name).await {
        Ok(e) => Some(e),
        Err(e) if e.code == 404 => None,
        Err(e) => return Err(e),
    };
    // kube: a Service that left the nil selector keeps nothing mirrored
    // either (`svc.Spec.Selector != nil`); an ExternalName Service without
    // a selector is mirrored as any other.
    let has_selector = svc.is_some_and(|s| {
        selector(s).is_some()
            || s.pointer("/spec/selector")
                .and_then(Value::as_object)
                .is_some_and(|m| !m.is_empty())
    });
    let mirror = match (&ep, svc) {
        (Some(ep), Some(_)) if !has_selector && should_mirror(ep) => Some(ep),
        _ => None,
    };
    let (meta, wanted) = match mirror {
        Some(ep) => {
            let mut annotations = ep
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            annotations.remove(LAST_APPLIED_ANNOTATION);
            annotations.remove(TRIGGER_TIME_ANNOTATION);
            let owner = owner_ref(ep, "v1", "Endpoints");
            let meta = SliceMeta::new(CONTROLLER_NAME, name, ep, annotations, owner);
            (meta, wanted_slices(ep))
        }
        None => (
            SliceMeta::new(CONTROLLER_NAME, name, &Value::Null, Map::new(), Value::Null),
            Vec::new(),
        ),
    };
    // Nothing wanted: every mirrored slice of the name goes.
    reconcile(registry, ns, name, &meta, &[], wanted).await
}

/// The slices an Endpoints' subsets call for: per address type and set of
/// ports, its ready and not-ready addresses (kube's `addressToEndpoint`).
fn wanted_slices(ep: &Value) -> Vec<Wanted> {
    // (ports, address type) → (ports, endpoints).
    type Group = (Vec<Value>, Vec<Value>);
    let mut by_key: BTreeMap<(String, &'static str), Group> = BTreeMap::new();
    for subset in ep
        .get("subsets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let ports: Vec<Value> = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                let mut port = json!({
                    "name": p.get("name").cloned().unwrap_or(json!("")),
                    "port": p.get("port").cloned().unwrap_or(Value::Null),
                    "protocol": p.get("protocol").cloned().unwrap_or(json!("TCP")),
                });
                if let Some(ap) = p.get("appProtocol") {
                    port["appProtocol"] = ap.clone();
                }
                port
            })
            .collect();
        let ports_key = Value::Array(ports.clone()).to_string();
        for (field, ready) in [("addresses", true), ("notReadyAddresses", false)] {
            for addr in subset
                .get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(ip) = addr.get("ip").and_then(Value::as_str) else {
                    continue;
                };
                let address_type = match ip.parse::<IpAddr>() {
                    Ok(IpAddr::V4(_)) => "IPv4",
                    Ok(IpAddr::V6(_)) => "IPv6",
                    // kube skips an address of no IP family.
                    Err(_) => continue,
                };
                let mut endpoint = json!({"addresses": [ip], "conditions": {"ready": ready}});
                for (from, to) in [
                    ("targetRef", "targetRef"),
                    ("nodeName", "nodeName"),
                    ("hostname", "hostname"),
                ] {
                    if let Some(v) = addr.get(from).filter(|v| !v.is_null() && *v != "") {
                        endpoint[to] = v.clone();
                    }
                }
                let entry = by_key
                    .entry((ports_key.clone(), address_type))
                    .or_insert_with(|| (ports.clone(), Vec::new()));
                if !entry.1.contains(&endpoint) {
                    entry.1.push(endpoint);
                }
            }
        }
    }
    by_key
        .into_iter()
        .map(|((_, address_type), (ports, endpoints))| Wanted {
            address_type,
            ports,
            endpoints,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_mirror_and_leader_election_endpoints_are_not_mirrored() {
        assert!(should_mirror(&json!({"metadata": {"name": "x"}})));
        assert!(!should_mirror(
            &json!({"metadata": {"labels": {SKIP_MIRROR_LABEL: "true"}}})
        ));
        assert!(!should_mirror(
            &json!({"metadata": {"annotations": {LEADER_ANNOTATION: "{}"}}})
        ));
    }

    #[test]
    fn subsets_become_slices_per_address_type_and_ports() {
        let ep = json!({"subsets": [
            {"addresses": [{"ip": "10.1.2.3"}, {"ip": "fd00::1"}],
             "notReadyAddresses": [{"ip": "10.1.2.4", "nodeName": "n"}],
             "ports": [{"port": 80}]},
            {"addresses": [{"ip": "not-an-ip"}], "ports": [{"port": 81}]},
        ]});
        let w = wanted_slices(&ep);
        assert_eq!(w.len(), 2);
        let v4 = w
            .iter()
            .find(|s| s.address_type == "IPv4")
            .unwrap_or_else(|| panic!("no IPv4 slice"));
        assert_eq!(
            v4.ports,
            vec![json!({"name": "", "port": 80, "protocol": "TCP"})]
        );
        assert_eq!(
            v4.endpoints,
            vec![
                json!({"addresses": ["10.1.2.3"], "conditions": {"ready": true}}),
                json!({"addresses": ["10.1.2.4"], "conditions": {"ready": false}, "nodeName": "n"}),
            ]
        );
        assert!(w.iter().any(|s| s.address_type == "IPv6"));
        assert!(wanted_slices(&json!({"subsets": []})).is_empty());
    }
}
