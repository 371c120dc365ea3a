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
use k8s_openapi::api::storage::v1 as storage;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, Cause};

use super::builtin::{Builtin, info};
use super::names;
use super::validation::{immutable_str, invalid_str};
use crate::csr_signer::KUBE_APISERVER_CLIENT_SIGNER;
use crate::printers;
use crate::registry::Registry;
use crate::store::WriteOptions;
use crate::strategy::Strategy;

const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// [`default_webhook`] on a `MutatingWebhook` or `ValidatingWebhook` (two
/// types with the same fields).
macro_rules! webhook_defaults {
    ($h:expr) => {
        default_webhook(
            &mut $h.failure_policy,
            &mut $h.match_policy,
            &mut $h.namespace_selector,
            &mut $h.object_selector,
            &mut $h.timeout_seconds,
            $h.rules.iter_mut().flatten().map(|r| &mut r.scope),
            $h.client_config.service.as_mut().map(|s| &mut s.port),
        )
    };
}

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
            .printer(printers::MUTATING_ADMISSION_POLICY)
            .federated()
            .defaults(|p| {
                if let Some(spec) = p.spec.as_mut() {
                    default_to(&mut spec.failure_policy, "Fail");
                    if let Some(m) = spec.match_constraints.as_mut() {
                        default_match_resources(m);
                    }
                }
            })
            // kube has no default for it.
            .validate(|p| {
                let policy = p
                    .spec
                    .as_ref()
                    .and_then(|s| s.reinvocation_policy.as_deref());
                if policy.is_none_or(str::is_empty) {
                    return vec![field::required("spec.reinvocationPolicy", "")];
                }
                Vec::new()
            }),
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
            .printer(printers::ADMISSION_POLICY_BINDING)
            .federated(),
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
            .printer(printers::WEBHOOK_CONFIGURATION)
            // kube's strategy: generation 1 on create, bumped when the webhooks
            // change.
            .generation()
            .federated()
            .defaults(|w| {
                for h in w.webhooks.iter_mut().flatten() {
                    webhook_defaults!(h);
                    default_to(&mut h.reinvocation_policy, "Never");
                }
            })
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
            .printer(printers::VALIDATING_ADMISSION_POLICY)
            .federated()
            .generation()
            // Go's status is a struct: `{}` from create on.
            .on_create(|obj| obj["status"] = json!({}))
            .defaults(|p| {
                if let Some(spec) = p.spec.as_mut() {
                    default_to(&mut spec.failure_policy, "Fail");
                    if let Some(m) = spec.match_constraints.as_mut() {
                        default_match_resources(m);
                    }
                }
            }),
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
            .printer(printers::ADMISSION_POLICY_BINDING)
            // kube's strategy: generation 1 on create, bumped when the spec
            // changes.
            .generation()
            .federated()
            .validate(|b| {
                let spec = &b.spec;
                let mut out = Vec::new();
                if spec.policy_name.is_empty() {
                    out.push(field::required("spec.policyName", ""));
                }
                out.extend(validation_actions(&spec.validation_actions));
                out
            }),
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
            .printer(printers::WEBHOOK_CONFIGURATION)
            // kube's strategy: generation 1 on create, bumped when the webhooks
            // change.
            .generation()
            .federated()
            .defaults(|w| {
                for h in w.webhooks.iter_mut().flatten() {
                    webhook_defaults!(h);
                }
            })
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
            .printer(printers::CERTIFICATE_SIGNING_REQUEST)
            // kube's CSR field selector (the signer's controllers list by it).
            .fields(&["spec.signerName"])
            // Go's status is a struct: `{}` from create on.
            .on_create(|obj| obj["status"] = json!({}))
            .admission(|_| Ok(Arc::new(CsrRequestor)))
            .write_authority(crate::strategy::WriteAuthority::SignerPermission(
                &super::csr::SIGNER_CHECKS,
            ))
            .validate(super::csr::validate_create)
            .validate_update(super::csr::validate_update)
            .update_validation_only()
            .on_status_update(super::csr::prepare_status_update)
            .subresource_write(
                "approval",
                crate::strategy::SubresourceWrite::Merge(super::csr::approval_update),
            )
            // kube's CSR status strategy resets the spec, not the metadata.
            .status_writes_metadata(),
        ),
        // node.k8s.io/v1
        Arc::new(
            Builtin::<RuntimeClass>::new(info::<RuntimeClass>("runtimeclass", &[], &[], &[]))
                .printer(printers::RUNTIME_CLASS)
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
        super::priorityclass::strategy(),
        // storage.k8s.io/v1
        Arc::new(
            Builtin::<storage::CSIDriver>::new(info::<storage::CSIDriver>(
                "csidriver",
                &[],
                &[],
                &[],
            ))
            .printer(printers::CSI_DRIVER)
            // kube's SetDefaults_CSIDriver.
            .defaults(|d| {
                let spec = &mut d.spec;
                spec.attach_required.get_or_insert(true);
                spec.pod_info_on_mount.get_or_insert(false);
                spec.storage_capacity.get_or_insert(false);
                default_to(&mut spec.fs_group_policy, "ReadWriteOnceWithFSType");
                if spec
                    .volume_lifecycle_modes
                    .as_ref()
                    .is_none_or(Vec::is_empty)
                {
                    spec.volume_lifecycle_modes = Some(vec!["Persistent".into()]);
                }
                spec.requires_republish.get_or_insert(false);
                spec.se_linux_mount.get_or_insert(false);
            })
            // kube's csidriver storage: ReturnDeletedObject.
            .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<storage::CSINode>::new(info::<storage::CSINode>("csinode", &[], &[], &[]))
                .printer(printers::CSI_NODE)
                // Go's `TopologyKeys []string` has no omitempty: null when unset.
                .after_normalize(|obj| {
                    for d in obj
                        .pointer_mut("/spec/drivers")
                        .and_then(Value::as_array_mut)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(d) = d.as_object_mut() {
                            d.entry("topologyKeys").or_insert(Value::Null);
                        }
                    }
                })
                // kube's csinode storage: ReturnDeletedObject.
                .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<storage::CSIStorageCapacity>::new(info::<storage::CSIStorageCapacity>(
                "csistoragecapacity",
                &[],
                &[],
                &[],
            ))
            .printer(printers::DEFAULT)
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
            .printer(printers::STORAGE_CLASS)
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
            .printer(printers::VOLUME_ATTACHMENT)
            // Go's status is a struct and `attached` a plain bool: always
            // there, from create on (kube's PrepareForCreate resets it).
            .on_create(|obj| obj["status"] = json!({"attached": false}))
            .after_normalize(|obj| {
                if let Some(o) = obj.as_object_mut() {
                    let status = o.entry("status").or_insert_with(|| json!({}));
                    if let Some(st) = status.as_object_mut() {
                        st.entry("attached").or_insert(json!(false));
                    }
                }
            })
            // kube's volumeattachment storage: ReturnDeletedObject.
            .returns_deleted_object(),
        ),
        Arc::new(
            Builtin::<storage::VolumeAttributesClass>::new(info::<storage::VolumeAttributesClass>(
                "volumeattributesclass",
                &["vac"],
                &[],
                &[],
            ))
            .printer(printers::VOLUME_ATTRIBUTES_CLASS)
            .federated()
            .validate(|v| {
                if v.driver_name.is_empty() {
                    return vec![field::required("driverName", "")];
                }
                Vec::new()
            })
            // kube's volumeattributesclass storage: ReturnDeletedObject.
            .returns_deleted_object(),
        ),
    ]
}

fn default_to(field: &mut Option<String>, value: &str) {
    if field.is_none() {
        *field = Some(value.to_string());
    }
}

/// kube's `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook`
/// (`pkg/apis/admissionregistration/v1/defaults.go`): failurePolicy Fail,
/// matchPolicy Equivalent, empty (match-all) selectors, a 10 s timeout, rule
/// scope `*`, service port 443.
#[allow(clippy::too_many_arguments)]
fn default_webhook<'a>(
    failure_policy: &mut Option<String>,
    match_policy: &mut Option<String>,
    namespace_selector: &mut Option<LabelSelector>,
    object_selector: &mut Option<LabelSelector>,
    timeout_seconds: &mut Option<i32>,
    rule_scopes: impl Iterator<Item = &'a mut Option<String>>,
    service_port: Option<&mut Option<i32>>,
) {
    default_to(failure_policy, "Fail");
    default_to(match_policy, "Equivalent");
    namespace_selector.get_or_insert_with(LabelSelector::default);
    object_selector.get_or_insert_with(LabelSelector::default);
    timeout_seconds.get_or_insert(10);
    for scope in rule_scopes {
        default_to(scope, "*");
    }
    if let Some(port) = service_port {
        port.get_or_insert(443);
    }
}

/// kube's `SetDefaults_MatchResources` and `SetDefaults_Rule` of a policy's
/// `matchConstraints`.
fn default_match_resources(m: &mut admission::MatchResources) {
    default_to(&mut m.match_policy, "Equivalent");
    m.namespace_selector
        .get_or_insert_with(LabelSelector::default);
    m.object_selector.get_or_insert_with(LabelSelector::default);
    for rule in m
        .resource_rules
        .iter_mut()
        .flatten()
        .chain(m.exclude_resource_rules.iter_mut().flatten())
    {
        default_to(&mut rule.scope, "*");
    }
}

/// kube's `validateValidationActions` of a ValidatingAdmissionPolicyBinding.
fn validation_actions(actions: &[String]) -> Vec<Cause> {
    const SUPPORTED: [&str; 3] = ["Audit", "Deny", "Warn"];
    let path = "spec.validationActions";
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        if !SUPPORTED.contains(&action.as_str()) {
            out.push(field::not_supported(
                &format!("{path}[{i}]"),
                &json!(action),
                &SUPPORTED,
            ));
        }
        if seen.contains(&action.as_str()) {
            out.push(field::duplicate(&format!("{path}[{i}]"), &json!(action)));
        }
        seen.push(action);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        out.push(field::invalid(
            path,
            &json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(field::required(
            path,
            "at least one validation action is required",
        ));
    }
    out
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
        obj["status"] = json!({});
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
