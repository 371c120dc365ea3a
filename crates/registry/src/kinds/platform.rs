//! The other GA groups kube-apiserver 1.36 serves, stored and served as
//! kube-apiserver serves them (discovery facts, scope, status and approval
//! subresources, decoding through the `k8s-openapi` type, the required
//! fields kube validates), whose behaviour lives in components this server
//! does not run: `admissionregistration.k8s.io` (webhooks are called by the
//! `ubernetes-webhook` admission plugin, not here), `certificates.k8s.io` (no signer or
//! approver), `node.k8s.io`, `scheduling.k8s.io` (the two system
//! PriorityClasses are created at start, as kube-apiserver's post-start hook
//! does), `storage.k8s.io` (no volume controllers).
//! docs/api-compatibility.md says what each group does and does not do here.

use std::sync::Arc;

use k8s_openapi::api::admissionregistration::v1 as admission;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1 as storage;
use serde_json::{Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, Cause};

use super::builtin::{Builtin, info};
use super::names;
use super::validation::{immutable_str, invalid_num, invalid_str};
use crate::registry::Registry;
use crate::store::WriteOptions;
use crate::strategy::Strategy;

const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// The strategies of these groups, in discovery order within each group.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        // admissionregistration.k8s.io/v1
        Arc::new(Builtin::<admission::MutatingAdmissionPolicy>::new(info::<
            admission::MutatingAdmissionPolicy,
        >(
            "mutatingadmissionpolicy",
            &[],
            API_EXTENSIONS,
            &[],
        ))),
        Arc::new(Builtin::<admission::MutatingAdmissionPolicyBinding>::new(
            info::<admission::MutatingAdmissionPolicyBinding>(
                "mutatingadmissionpolicybinding",
                &[],
                API_EXTENSIONS,
                &[],
            ),
        )),
        Arc::new(
            Builtin::<admission::MutatingWebhookConfiguration>::new(info::<
                admission::MutatingWebhookConfiguration,
            >(
                "mutatingwebhookconfiguration",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .validate(|w| webhook_names(w.webhooks.iter().flatten().map(|h| h.name.as_str()))),
        ),
        Arc::new(
            Builtin::<admission::ValidatingAdmissionPolicy>::new(info::<
                admission::ValidatingAdmissionPolicy,
            >(
                "validatingadmissionpolicy",
                &[],
                API_EXTENSIONS,
                &["status"],
            ))
            .generation(),
        ),
        Arc::new(Builtin::<admission::ValidatingAdmissionPolicyBinding>::new(
            info::<admission::ValidatingAdmissionPolicyBinding>(
                "validatingadmissionpolicybinding",
                &[],
                API_EXTENSIONS,
                &[],
            ),
        )),
        Arc::new(
            Builtin::<admission::ValidatingWebhookConfiguration>::new(info::<
                admission::ValidatingWebhookConfiguration,
            >(
                "validatingwebhookconfiguration",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .validate(|w| webhook_names(w.webhooks.iter().flatten().map(|h| h.name.as_str()))),
        ),
        // certificates.k8s.io/v1
        Arc::new(
            Builtin::<CertificateSigningRequest>::new(info::<CertificateSigningRequest>(
                "certificatesigningrequest",
                &["csr"],
                &[],
                &["approval", "status"],
            ))
            .validate(|csr| {
                let mut out = Vec::new();
                if csr.spec.request.0.is_empty() {
                    out.push(field::required("spec.request", ""));
                }
                if csr.spec.signer_name.is_empty() {
                    out.push(field::required("spec.signerName", ""));
                }
                out
            }),
        ),
        // node.k8s.io/v1
        Arc::new(
            Builtin::<RuntimeClass>::new(info::<RuntimeClass>("runtimeclass", &[], &[], &[]))
                .validate(|rc| {
                    if rc.handler.is_empty() {
                        return vec![field::required("handler", "")];
                    }
                    names::dns1123_label(&rc.handler)
                        .into_iter()
                        .map(|m| invalid_str("handler", &rc.handler, &m))
                        .collect()
                })
                .validate_update(|new, old| {
                    if new.handler != old.handler {
                        return vec![immutable_str("handler", &new.handler)];
                    }
                    Vec::new()
                }),
        ),
        // scheduling.k8s.io/v1
        Arc::new(
            Builtin::<PriorityClass>::new(info::<PriorityClass>(
                "priorityclass",
                &["pc"],
                &[],
                &[],
            ))
            .defaults(|pc| {
                if pc.preemption_policy.is_none() {
                    pc.preemption_policy = Some("PreemptLowerPriority".into());
                }
            })
            .validate_update(|new, old| {
                if new.value != old.value {
                    return vec![invalid_num(
                        "value",
                        new.value.unwrap_or_default().into(),
                        "field is immutable",
                    )];
                }
                Vec::new()
            }),
        ),
        // storage.k8s.io/v1
        Arc::new(Builtin::<storage::CSIDriver>::new(
            info::<storage::CSIDriver>("csidriver", &[], &[], &[]),
        )),
        Arc::new(Builtin::<storage::CSINode>::new(info::<storage::CSINode>(
            "csinode",
            &[],
            &[],
            &[],
        ))),
        Arc::new(
            Builtin::<storage::CSIStorageCapacity>::new(info::<storage::CSIStorageCapacity>(
                "csistoragecapacity",
                &[],
                &[],
                &[],
            ))
            .validate(|c| {
                if c.storage_class_name.is_empty() {
                    return vec![field::required("storageClassName", "")];
                }
                Vec::new()
            }),
        ),
        Arc::new(
            Builtin::<storage::StorageClass>::new(info::<storage::StorageClass>(
                "storageclass",
                &["sc"],
                &[],
                &[],
            ))
            .defaults(|sc| {
                if sc.reclaim_policy.is_none() {
                    sc.reclaim_policy = Some("Delete".into());
                }
                if sc.volume_binding_mode.is_none() {
                    sc.volume_binding_mode = Some("Immediate".into());
                }
            })
            .validate(|sc| {
                if sc.provisioner.is_empty() {
                    return vec![field::required("provisioner", "")];
                }
                Vec::new()
            })
            .validate_update(|new, old| {
                if new.provisioner != old.provisioner {
                    return vec![immutable_str("provisioner", &new.provisioner)];
                }
                Vec::new()
            })
            .returns_deleted_object(),
        ),
        Arc::new(Builtin::<storage::VolumeAttachment>::new(info::<
            storage::VolumeAttachment,
        >(
            "volumeattachment",
            &[],
            &[],
            &["status"],
        ))),
        Arc::new(
            Builtin::<storage::VolumeAttributesClass>::new(info::<storage::VolumeAttributesClass>(
                "volumeattributesclass",
                &["vac"],
                &[],
                &[],
            ))
            .validate(|v| {
                if v.driver_name.is_empty() {
                    return vec![field::required("driverName", "")];
                }
                Vec::new()
            }),
        ),
    ]
}

/// Webhook names: required, a DNS-1123 subdomain with at least three
/// segments (`ValidateWebhook`'s fully qualified name).
fn webhook_names<'a>(hooks: impl Iterator<Item = &'a str>) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, name) in hooks.enumerate() {
        let path = format!("webhooks[{i}].name");
        if name.is_empty() {
            out.push(field::required(&path, ""));
            continue;
        }
        for m in names::dns1123_subdomain(name) {
            out.push(invalid_str(&path, name, &m));
        }
        if name.split('.').count() < 3 {
            out.push(invalid_str(
                &path,
                name,
                "should be a domain with at least three segments separated by dots",
            ));
        }
    }
    out
}

/// kube-apiserver's `scheduling/bootstrap-system-priority-classes` hook: the
/// two system PriorityClasses, created when missing. Idempotent.
pub async fn bootstrap_priority_classes(registry: &Registry) -> Result<(), ApiError> {
    let Some(store) = registry.get("scheduling.k8s.io", "v1", "priorityclasses") else {
        return Ok(());
    };
    for (name, value, description) in SYSTEM_PRIORITY_CLASSES {
        let obj: Value = json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "description": description,
        });
        match store
            .create(None, None, obj, &WriteOptions::default())
            .await
        {
            Ok(_) | Err(ApiError { code: 409, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `system-node-critical` and `system-cluster-critical`, as kube creates them.
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i32, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];
