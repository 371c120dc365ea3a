//! `resource.k8s.io/v1`, Dynamic Resource Allocation's API, stored and
//! served as kube-apiserver 1.36 serves it: DeviceClasses, ResourceClaims
//! (with `status`), ResourceClaimTemplates and ResourceSlices, with kube's
//! defaults (`exactly.allocationMode: ExactCount`, `count: 1`), the main
//! validations of `pkg/apis/resource/validation` (required names and
//! classes, one of `exactly`/`firstAvailable`, one node selection of a
//! slice, immutable claim and template specs, immutable slice driver, node
//! and pool) and the ResourceSlice field selectors (`spec.nodeName`,
//! `spec.driver`).
//!
//! What is not here: there is no scheduler, so no claim is ever allocated
//! (`status.allocation` stays unset unless a client writes it), and no
//! ResourceClaim is created from a template for a Pod (kube's
//! resourceclaim controller). docs/api-compatibility.md says so.

use std::sync::Arc;

use k8s_openapi::api::resource::v1::{
    DeviceClass, DeviceRequest, ResourceClaim, ResourceClaimSpec, ResourceClaimTemplate,
    ResourceSlice,
};
use serde_json::Value;
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use super::names;
use super::validation::{immutable_str, invalid_shown, invalid_str};
use crate::printers;
use crate::strategy::Strategy;

/// The strategies of `resource.k8s.io/v1`, in discovery order.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<DeviceClass>::new(info::<DeviceClass>("deviceclass", &[], &[], &[]))
                .printer(printers::NAME_AGE)
                .federated()
                .generation()
                // Every resource.k8s.io storage sets ReturnDeletedObject.
                .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<ResourceClaim>::new(info::<ResourceClaim>(
                "resourceclaim",
                &[],
                &[],
                &["status"],
            ))
            .printer(printers::RESOURCE_CLAIM)
            .defaults(|c| default_claim_spec(c.spec.as_mut()))
            .on_create(empty_status)
            .validate(|c| validate_claim_spec("spec", c.spec.as_ref()))
            .validate_update(|new, old| {
                if new.spec != old.spec {
                    return vec![invalid_shown(
                        "spec",
                        "core.ResourceClaimSpec{...}",
                        "field is immutable",
                    )];
                }
                Vec::new()
            })
            .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<ResourceClaimTemplate>::new(info::<ResourceClaimTemplate>(
                "resourceclaimtemplate",
                &[],
                &[],
                &[],
            ))
            .printer(printers::NAME_AGE)
            .federated()
            .defaults(|t| {
                if let Some(spec) = t.spec.as_mut() {
                    spec.metadata.get_or_insert_with(Default::default);
                    default_claim_spec(spec.spec.as_mut());
                }
            })
            .validate(|t| {
                validate_claim_spec("spec.spec", t.spec.as_ref().and_then(|s| s.spec.as_ref()))
            })
            .validate_update(|new, old| {
                if new.spec != old.spec {
                    return vec![invalid_shown(
                        "spec",
                        "core.ResourceClaimTemplateSpec{...}",
                        "field is immutable",
                    )];
                }
                Vec::new()
            })
            .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<ResourceSlice>::new(info::<ResourceSlice>("resourceslice", &[], &[], &[]))
                .printer(printers::RESOURCE_SLICE)
                .generation()
                .fields(&["spec.nodeName", "spec.driver"])
                .validate(validate_slice)
                .validate_update(|new, old| {
                    let mut out = Vec::new();
                    if new.spec.driver != old.spec.driver {
                        out.push(immutable_str("spec.driver", &new.spec.driver));
                    }
                    if new.spec.node_name != old.spec.node_name {
                        out.push(immutable_str(
                            "spec.nodeName",
                            new.spec.node_name.as_deref().unwrap_or_default(),
                        ));
                    }
                    if new.spec.pool.name != old.spec.pool.name {
                        out.push(immutable_str("spec.pool.name", &new.spec.pool.name));
                    }
                    out
                })
                .returns_deleted_object(),
        ),
    ]
}

/// kube encodes a kind's non-pointer `status` struct even when empty, so a
/// new object of these kinds reads `status: {}` (the create path drops
/// whatever status the client sent first).
pub(crate) fn empty_status(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        m.entry("status")
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

/// kube's `SetDefaults_ExactDeviceRequest`: `allocationMode` defaults to
/// `ExactCount`, and `count` to 1 in that mode (also in `firstAvailable`
/// subrequests).
fn default_claim_spec(spec: Option<&mut ResourceClaimSpec>) {
    let Some(devices) = spec.and_then(|s| s.devices.as_mut()) else {
        return;
    };
    for r in devices.requests.iter_mut().flatten() {
        if let Some(e) = r.exactly.as_mut() {
            let mode = e.allocation_mode.get_or_insert_with(|| "ExactCount".into());
            if mode == "ExactCount" && e.count.is_none() {
                e.count = Some(1);
            }
        }
        for s in r.first_available.iter_mut().flatten() {
            let mode = s.allocation_mode.get_or_insert_with(|| "ExactCount".into());
            if mode == "ExactCount" && s.count.is_none() {
                s.count = Some(1);
            }
        }
    }
}

fn validate_claim_spec(path: &str, spec: Option<&ResourceClaimSpec>) -> Vec<Cause> {
    let mut out = Vec::new();
    let requests = spec
        .and_then(|s| s.devices.as_ref())
        .and_then(|d| d.requests.as_deref())
        .unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (i, r) in requests.iter().enumerate() {
        let at = format!("{path}.devices.requests[{i}]");
        validate_request(&at, r, &mut out);
        if !r.name.is_empty() && !seen.insert(r.name.as_str()) {
            out.push(field::duplicate(
                &format!("{at}.name"),
                &Value::String(r.name.clone()),
            ));
        }
    }
    out
}

fn validate_request(at: &str, r: &DeviceRequest, out: &mut Vec<Cause>) {
    if r.name.is_empty() {
        out.push(field::required(&format!("{at}.name"), ""));
    } else {
        for m in names::dns1123_label(&r.name) {
            out.push(invalid_str(&format!("{at}.name"), &r.name, &m));
        }
    }
    match (&r.exactly, &r.first_available) {
        (None, None) => out.push(field::required(
            at,
            "exactly one of `exactly` or `firstAvailable` is required",
        )),
        (Some(_), Some(_)) => out.push(invalid_shown(
            at,
            "{\"exactly\", \"firstAvailable\"}",
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )),
        (Some(e), None) => {
            if e.device_class_name.is_empty() {
                out.push(field::required(
                    &format!("{at}.exactly.deviceClassName"),
                    "",
                ));
            }
            if let Some(mode) = e.allocation_mode.as_deref()
                && mode != "ExactCount"
                && mode != "All"
            {
                out.push(field::not_supported(
                    &format!("{at}.exactly.allocationMode"),
                    &Value::String(mode.into()),
                    &["All", "ExactCount"],
                ));
            }
            if let Some(n) = e.count
                && n <= 0
            {
                out.push(field::invalid(
                    &format!("{at}.exactly.count"),
                    &n.into(),
                    "must be greater than zero",
                ));
            }
        }
        (None, Some(subs)) => {
            for (j, s) in subs.iter().enumerate() {
                if s.device_class_name.is_empty() {
                    out.push(field::required(
                        &format!("{at}.firstAvailable[{j}].deviceClassName"),
                        "",
                    ));
                }
            }
        }
    }
}

/// `ValidateResourceSlice`'s main rules: a driver (DNS subdomain), a pool
/// name, and exactly one of `nodeName`, `nodeSelector`, `allNodes`,
/// `perDeviceNodeSelection`.
fn validate_slice(s: &ResourceSlice) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &s.spec;
    if spec.driver.is_empty() {
        out.push(field::required("spec.driver", ""));
    } else {
        for m in names::dns1123_subdomain(&spec.driver) {
            out.push(invalid_str("spec.driver", &spec.driver, &m));
        }
    }
    if spec.pool.name.is_empty() {
        out.push(field::required("spec.pool.name", ""));
    }
    if spec.pool.resource_slice_count <= 0 {
        out.push(field::invalid(
            "spec.pool.resourceSliceCount",
            &spec.pool.resource_slice_count.into(),
            "must be greater than zero",
        ));
    }
    let set = [
        spec.node_name.as_deref().is_some_and(|n| !n.is_empty()),
        spec.node_selector.is_some(),
        spec.all_nodes == Some(true),
        spec.per_device_node_selection == Some(true),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if set == 0 {
        out.push(field::required(
            "spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ));
    } else if set > 1 {
        out.push(invalid_shown(
            "spec",
            "{\"nodeName\", \"nodeSelector\", \"allNodes\", \"perDeviceNodeSelection\"}",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
        ));
    }
    for (i, d) in spec.devices.iter().flatten().enumerate() {
        if d.name.is_empty() {
            out.push(field::required(&format!("spec.devices[{i}].name"), ""));
        }
    }
    out
}
