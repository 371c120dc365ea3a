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
use crate::csr_signer::KUBE_APISERVER_CLIENT_SIGNER;
use crate::printers::Printer;
use crate::registry::Registry;
use crate::store::WriteOptions;
use crate::strategy::Strategy;

const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// The strategies of these groups, in discovery order within each group.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        // admissionregistration.k8s.io/v1
        Arc::new(
            Builtin::<admission::MutatingAdmissionPolicy>::new(info::<
                admission::MutatingAdmissionPolicy,
            >(
                "mutatingadmissionpolicy",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .printer(Printer::MutatingAdmissionPolicy)
            .federated()
            .without_protobuf(),
        ),
        Arc::new(
            Builtin::<admission::MutatingAdmissionPolicyBinding>::new(info::<
                admission::MutatingAdmissionPolicyBinding,
            >(
                "mutatingadmissionpolicybinding",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .printer(Printer::AdmissionPolicyBinding)
            .federated()
            .without_protobuf(),
        ),
        Arc::new(
            Builtin::<admission::MutatingWebhookConfiguration>::new(info::<
                admission::MutatingWebhookConfiguration,
            >(
                "mutatingwebhookconfiguration",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .printer(Printer::WebhookConfiguration)
            .federated()
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
            .printer(Printer::ValidatingAdmissionPolicy)
            .federated()
            .generation(),
        ),
        Arc::new(
            Builtin::<admission::ValidatingAdmissionPolicyBinding>::new(info::<
                admission::ValidatingAdmissionPolicyBinding,
            >(
                "validatingadmissionpolicybinding",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .printer(Printer::AdmissionPolicyBinding)
            .federated(),
        ),
        Arc::new(
            Builtin::<admission::ValidatingWebhookConfiguration>::new(info::<
                admission::ValidatingWebhookConfiguration,
            >(
                "validatingwebhookconfiguration",
                &[],
                API_EXTENSIONS,
                &[],
            ))
            .printer(Printer::WebhookConfiguration)
            .federated()
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
            .printer(Printer::CertificateSigningRequest)
            .admission(|_| Ok(Arc::new(CsrRequestor)))
            .write_authority(crate::strategy::WriteAuthority::SignerPermission)
            .validate(|csr| {
                let mut out = Vec::new();
                if csr.spec.request.0.is_empty() {
                    out.push(field::required("spec.request", ""));
                }
                if csr.spec.signer_name.is_empty() {
                    out.push(field::required("spec.signerName", ""));
                }
                // kube's ValidateCertificateSigningRequest: at least 10 minutes.
                if let Some(s) = csr.spec.expiration_seconds
                    && s < 600
                {
                    out.push(field::invalid(
                        "spec.expirationSeconds",
                        &serde_json::json!(s),
                        "may not specify a duration less than 600 seconds (10 minutes)",
                    ));
                }
                out
            }),
        ),
        // node.k8s.io/v1
        Arc::new(
            Builtin::<RuntimeClass>::new(info::<RuntimeClass>("runtimeclass", &[], &[], &[]))
                .printer(Printer::RuntimeClass)
                .federated()
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
            .printer(Printer::PriorityClass)
            .federated()
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
        Arc::new(
            Builtin::<storage::CSIDriver>::new(info::<storage::CSIDriver>(
                "csidriver",
                &[],
                &[],
                &[],
            ))
            .printer(Printer::CSIDriver),
        ),
        Arc::new(
            Builtin::<storage::CSINode>::new(info::<storage::CSINode>("csinode", &[], &[], &[]))
                .printer(Printer::CSINode),
        ),
        Arc::new(
            Builtin::<storage::CSIStorageCapacity>::new(info::<storage::CSIStorageCapacity>(
                "csistoragecapacity",
                &[],
                &[],
                &[],
            ))
            .printer(Printer::Default)
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
            .printer(Printer::StorageClass)
            .federated()
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
        Arc::new(
            Builtin::<storage::VolumeAttachment>::new(info::<storage::VolumeAttachment>(
                "volumeattachment",
                &[],
                &[],
                &["status"],
            ))
            .printer(Printer::VolumeAttachment),
        ),
        Arc::new(
            Builtin::<storage::VolumeAttributesClass>::new(info::<storage::VolumeAttributesClass>(
                "volumeattributesclass",
                &["vac"],
                &[],
                &[],
            ))
            .printer(Printer::VolumeAttributesClass)
            .federated()
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

/// kube's CSR strategy `PrepareForCreate`: who asks is the request's user,
/// whatever the body says (`spec.username`, `uid`, `groups`, `extra`), and a
/// new request has no status (no pre-approved certificates). Declared as the
/// kind's own admission because the strategy does not see the user. Its
/// validating phase is kube's `CertificateSubjectRestriction` plugin: no
/// request for the API server's client signer may ask for the
/// `system:masters` group.
struct CsrRequestor;

#[async_trait::async_trait]
impl crate::admission::Admission for CsrRequestor {
    async fn mutate(
        &self,
        attrs: &crate::admission::Attributes<'_>,
        obj: &mut Value,
    ) -> Result<Vec<String>, ApiError> {
        if attrs.operation != crate::admission::Operation::Create || attrs.subresource.is_some() {
            return Ok(Vec::new());
        }
        if !obj["spec"].is_object() {
            obj["spec"] = json!({});
        }
        if let Some(spec) = obj["spec"].as_object_mut() {
            for field in ["username", "uid", "groups", "extra"] {
                spec.remove(field);
            }
            if let Some(user) = attrs.user {
                spec.insert("username".into(), json!(user.name));
                if !user.uid.is_empty() {
                    spec.insert("uid".into(), json!(user.uid));
                }
                if !user.groups.is_empty() {
                    spec.insert("groups".into(), json!(user.groups));
                }
                if !user.extra.is_empty() {
                    spec.insert("extra".into(), json!(user.extra));
                }
            }
        }
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
        Ok(Vec::new())
    }

    async fn validate(
        &self,
        attrs: &crate::admission::Attributes<'_>,
        obj: &Value,
    ) -> Result<Vec<String>, ApiError> {
        if attrs.operation != crate::admission::Operation::Create
            || attrs.subresource.is_some()
            || obj.pointer("/spec/signerName").and_then(Value::as_str)
                != Some(KUBE_APISERVER_CLIENT_SIGNER)
        {
            return Ok(Vec::new());
        }
        let forbidden = |why: String| {
            ApiError::forbidden(&attrs.info.group, &attrs.info.resource, attrs.name, &why)
        };
        // `spec.request` is base64 of the PEM (a `[]byte` in JSON).
        let pem = obj
            .pointer("/spec/request")
            .and_then(Value::as_str)
            .and_then(|b64| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b64).ok()
            })
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let groups = ubernetes_certs::certificate_request_organizations(&pem)
            .map_err(|e| forbidden(format!("failed to parse CSR: {e}")))?;
        if groups.iter().any(|g| g == "system:masters") {
            return Err(forbidden(format!(
                "use of {KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed"
            )));
        }
        Ok(Vec::new())
    }
}
