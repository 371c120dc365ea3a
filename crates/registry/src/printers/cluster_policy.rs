//! Columns and cells of the cluster-policy kinds' Tables: admission
//! configurations and policies, CertificateSigningRequests, PriorityClasses,
//! RuntimeClasses and the `storage.k8s.io` kinds, as kube-apiserver 1.36's
//! `pkg/printers/internalversion/printers.go` prints them (column names,
//! types and descriptions copied from its Table responses, which
//! `e2e/tests/tables_vs_kube.rs` compares with these).

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::TablePrinter;
use super::format::human_duration;
use super::kinds::{AGE, Column, NAME, age, col, name, s};

const PARAM_KIND: Column = col(
    "ParamKind",
    "string",
    "ParamKind specifies the kind of resources used to parameterize this policy",
);
const POLICY_NAME: Column = col(
    "PolicyName",
    "string",
    "PolicyName indicates the policy definition which the policy binding binded to",
);
const PARAM_REF: Column = col(
    "ParamRef",
    "string",
    "ParamRef indicates the param resource which sets the configuration param",
);
const WEBHOOKS: Column = col(
    "Webhooks",
    "integer",
    "Webhooks indicates the number of webhooks registered in this configuration",
);

fn len(obj: &Value, ptr: &str) -> Value {
    json!(
        obj.pointer(ptr)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    )
}

fn flag(obj: &Value, ptr: &str, default: bool) -> Value {
    json!(obj.pointer(ptr).and_then(Value::as_bool).unwrap_or(default))
}

// ---- admissionregistration.k8s.io ------------------------------------------

/// kube's printer for WebhookConfiguration (columns and cells).
pub const WEBHOOK_CONFIGURATION: TablePrinter =
    TablePrinter::new(webhook_configuration_columns, webhook_configuration);

fn webhook_configuration_columns() -> Vec<Column> {
    vec![NAME, WEBHOOKS, AGE]
}

fn webhook_configuration(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), len(obj, "/webhooks"), age(obj, now)]
}

/// kube's printer for ValidatingAdmissionPolicy (columns and cells).
pub const VALIDATING_ADMISSION_POLICY: TablePrinter =
    TablePrinter::new(validating_policy_columns, |obj, now| {
        policy(obj, "validations", now)
    });

fn validating_policy_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        PARAM_KIND,
        AGE,
    ]
}

/// kube's printer for MutatingAdmissionPolicy (columns and cells).
pub const MUTATING_ADMISSION_POLICY: TablePrinter =
    TablePrinter::new(mutating_policy_columns, |obj, now| {
        policy(obj, "mutations", now)
    });

fn mutating_policy_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Mutations",
            "integer",
            "Mutation indicates the number of mutations rules defined in this configuration",
        ),
        PARAM_KIND,
        AGE,
    ]
}

/// A policy's rule count (`validations` or `mutations`) and `paramKind` as
/// `apiVersion/kind`, `<unset>` without one.
fn policy(obj: &Value, rules: &str, now: Timestamp) -> Vec<Value> {
    let param_kind = match obj.pointer("/spec/paramKind") {
        Some(pk) if pk.is_object() => {
            format!("{}/{}", s(pk, "/apiVersion"), s(pk, "/kind"))
        }
        _ => "<unset>".to_string(),
    };
    vec![
        name(obj),
        len(obj, &format!("/spec/{rules}")),
        json!(param_kind),
        age(obj, now),
    ]
}

/// kube's printer for AdmissionPolicyBinding (columns and cells).
pub const ADMISSION_POLICY_BINDING: TablePrinter =
    TablePrinter::new(policy_binding_columns, policy_binding);

fn policy_binding_columns() -> Vec<Column> {
    vec![NAME, POLICY_NAME, PARAM_REF, AGE]
}

/// `paramRef` as kube prints it: `namespace/name`, `*/name` without a
/// namespace (it cannot tell whether the param is cluster-scoped), the
/// selector in Go's `String()` form, or `<unset>`.
fn policy_binding(obj: &Value, now: Timestamp) -> Vec<Value> {
    let param = match obj.pointer("/spec/paramRef") {
        Some(pr) if pr.is_object() => {
            let (ns, n) = (s(pr, "/namespace"), s(pr, "/name"));
            if !n.is_empty() {
                if ns.is_empty() {
                    format!("*/{n}")
                } else {
                    format!("{ns}/{n}")
                }
            } else if let Some(sel) = pr.get("selector").filter(|v| v.is_object()) {
                go_label_selector(sel)
            } else {
                "<unset>".to_string()
            }
        }
        _ => "<unset>".to_string(),
    };
    vec![
        name(obj),
        json!(s(obj, "/spec/policyName")),
        json!(param),
        age(obj, now),
    ]
}

/// The gogo-protobuf `String()` of a `metav1.LabelSelector`, which kube's
/// binding printer shows for a selector `paramRef`:
/// `&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}`.
fn go_label_selector(sel: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(|es| {
            es.iter()
                .map(|e| {
                    let values: Vec<&str> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|vs| vs.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    format!(
                        "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                        s(e, "/key"),
                        s(e, "/operator"),
                        values.join(" ")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

// ---- certificates.k8s.io ---------------------------------------------------

/// kube's printer for CertificateSigningRequest (columns and cells).
pub const CERTIFICATE_SIGNING_REQUEST: TablePrinter = TablePrinter::new(csr_columns, csr);

fn csr_columns() -> Vec<Column> {
    vec![
        NAME,
        AGE,
        col(
            "SignerName",
            "string",
            "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.",
        ),
        col("Requestor", "string", "Base64-encoded PKCS#10 CSR data"),
        col(
            "RequestedDuration",
            "string",
            "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
        ),
        col(
            "Condition",
            "string",
            "Conditions applied to the request, such as approval or denial.",
        ),
    ]
}

/// `printCertificateSigningRequest`: the requested duration as
/// `duration.HumanDuration`, and `extractCSRStatus`: Denied over Approved
/// over Pending, then `,Failed` and `,Issued`.
fn csr(obj: &Value, now: Timestamp) -> Vec<Value> {
    let duration = obj
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .map_or_else(
            || "<none>".to_string(),
            |secs| human_duration(SignedDuration::from_secs(secs)),
        );
    let has = |kind: &str| {
        obj.pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == kind))
    };
    let mut condition = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        condition.push_str(",Failed");
    }
    if !s(obj, "/status/certificate").is_empty() {
        condition.push_str(",Issued");
    }
    vec![
        name(obj),
        age(obj, now),
        json!(s(obj, "/spec/signerName")),
        json!(s(obj, "/spec/username")),
        json!(duration),
        json!(condition),
    ]
}

// ---- node.k8s.io, scheduling.k8s.io ----------------------------------------

/// kube's printer for RuntimeClass (columns and cells).
pub const RUNTIME_CLASS: TablePrinter = TablePrinter::new(runtime_class_columns, runtime_class);

fn runtime_class_columns() -> Vec<Column> {
    // kube's Handler column has an empty description.
    vec![NAME, col("Handler", "string", ""), AGE]
}

fn runtime_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(s(obj, "/handler")), age(obj, now)]
}

// ---- storage.k8s.io --------------------------------------------------------

/// kube's printer for StorageClass (columns and cells).
pub const STORAGE_CLASS: TablePrinter = TablePrinter::new(storage_class_columns, storage_class);

fn storage_class_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Provisioner",
            "string",
            "provisioner indicates the type of the provisioner.",
        ),
        col(
            "ReclaimPolicy",
            "string",
            "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
        ),
        col(
            "VolumeBindingMode",
            "string",
            "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
        ),
        col(
            "AllowVolumeExpansion",
            "string",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
        ),
        AGE,
    ]
}

/// `printStorageClass`: ` (default)` after the name of the default class
/// (either is-default-class annotation), Delete and Immediate when unset.
fn storage_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|a| {
        obj.pointer("/metadata/annotations")
            .and_then(|m| m.get(*a))
            .and_then(Value::as_str)
            == Some("true")
    });
    let mut shown = s(obj, "/metadata/name").to_string();
    if is_default {
        shown.push_str(" (default)");
    }
    let or = |ptr: &str, default: &'static str| {
        let v = s(obj, ptr);
        json!(if v.is_empty() { default } else { v })
    };
    vec![
        json!(shown),
        json!(s(obj, "/provisioner")),
        or("/reclaimPolicy", "Delete"),
        or("/volumeBindingMode", "Immediate"),
        flag(obj, "/allowVolumeExpansion", false),
        age(obj, now),
    ]
}

/// kube's printer for CSIDriver (columns and cells).
pub const CSI_DRIVER: TablePrinter = TablePrinter::new(csi_driver_columns, csi_driver);

fn csi_driver_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "AttachRequired",
            "boolean",
            "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.",
        ),
        col(
            "PodInfoOnMount",
            "boolean",
            "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.",
        ),
        col(
            "StorageCapacity",
            "boolean",
            "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.",
        ),
        col(
            "TokenRequests",
            "string",
            "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.",
        ),
        col(
            "RequiresRepublish",
            "boolean",
            "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.",
        ),
        col(
            "Modes",
            "string",
            "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.",
        ),
        AGE,
    ]
}

fn csi_driver(obj: &Value, now: Timestamp) -> Vec<Value> {
    let audiences: Vec<&str> = obj
        .pointer("/spec/tokenRequests")
        .and_then(Value::as_array)
        .map(|ts| ts.iter().map(|t| s(t, "/audience")).collect())
        .unwrap_or_default();
    let modes: Vec<&str> = obj
        .pointer("/spec/volumeLifecycleModes")
        .and_then(Value::as_array)
        .map(|ms| ms.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let or_mark = |list: Vec<&str>, mark: &str| {
        if list.is_empty() {
            json!(mark)
        } else {
            json!(list.join(","))
        }
    };
    vec![
        name(obj),
        flag(obj, "/spec/attachRequired", true),
        flag(obj, "/spec/podInfoOnMount", false),
        flag(obj, "/spec/storageCapacity", false),
        or_mark(audiences, "<unset>"),
        flag(obj, "/spec/requiresRepublish", false),
        or_mark(modes, "<none>"),
        age(obj, now),
    ]
}

/// kube's printer for CSINode (columns and cells).
pub const CSI_NODE: TablePrinter = TablePrinter::new(csi_node_columns, csi_node);

fn csi_node_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "Drivers",
            "integer",
            "Drivers indicates the number of CSI drivers registered on the node",
        ),
        AGE,
    ]
}

fn csi_node(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), len(obj, "/spec/drivers"), age(obj, now)]
}

/// kube's printer for VolumeAttachment (columns and cells).
pub const VOLUME_ATTACHMENT: TablePrinter =
    TablePrinter::new(volume_attachment_columns, volume_attachment);

fn volume_attachment_columns() -> Vec<Column> {
    vec![
        NAME,
        Column {
            name: "Attacher",
            kind: "string",
            format: "name",
            description: "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
            priority: 0,
        },
        col(
            "PV",
            "string",
            "persistentVolumeName represents the name of the persistent volume to attach.",
        ),
        col(
            "Node",
            "string",
            "nodeName represents the node that the volume should be attached to.",
        ),
        col(
            "Attached",
            "boolean",
            "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
        ),
        AGE,
    ]
}

fn volume_attachment(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(obj),
        json!(s(obj, "/spec/attacher")),
        json!(s(obj, "/spec/source/persistentVolumeName")),
        json!(s(obj, "/spec/nodeName")),
        flag(obj, "/status/attached", false),
        age(obj, now),
    ]
}

/// kube's printer for VolumeAttributesClass (columns and cells).
pub const VOLUME_ATTRIBUTES_CLASS: TablePrinter =
    TablePrinter::new(volume_attributes_class_columns, volume_attributes_class);

fn volume_attributes_class_columns() -> Vec<Column> {
    vec![
        NAME,
        col(
            "DriverName",
            "string",
            "Name of the CSI driver This field is immutable.",
        ),
        AGE,
    ]
}

fn volume_attributes_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(obj), json!(s(obj, "/driverName")), age(obj, now)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_param_ref_prints_as_gos_string() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]});
        assert_eq!(
            go_label_selector(&sel),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
        );
        assert_eq!(
            go_label_selector(&json!({})),
            "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
    }

    #[test]
    fn a_csr_condition_puts_denied_over_approved_and_adds_failed_and_issued() {
        let now: Timestamp = "2025-01-10T12:00:00Z".parse().unwrap_or_default();
        let csr = |conditions: Value, cert: &str| {
            json!({"metadata": {"name": "c"}, "spec": {"expirationSeconds": 3600},
                "status": {"conditions": conditions, "certificate": cert}})
        };
        let cell = |v: Value| super::csr(&v, now)[5].clone();
        assert_eq!(cell(csr(json!([]), "")), "Pending");
        assert_eq!(
            cell(csr(json!([{"type": "Approved"}, {"type": "Denied"}]), "")),
            "Denied"
        );
        assert_eq!(
            cell(csr(json!([{"type": "Approved"}, {"type": "Failed"}]), "")),
            "Approved,Failed"
        );
        assert_eq!(
            cell(csr(json!([{"type": "Approved"}]), "PEM")),
            "Approved,Issued"
        );
        assert_eq!(super::csr(&csr(json!([]), ""), now)[4], "60m");
    }
}
