//! CertificateSigningRequest validation, as kube-apiserver's
//! `pkg/apis/certificates/validation` and its status strategy
//! (`pkg/registry/certificates/certificates/strategy.go`), with kube's
//! messages:
//! - `spec.request` must be a PEM `CERTIFICATE REQUEST` whose signature
//!   verifies; `spec.usages` must be given, known and not repeated;
//!   `spec.signerName` must be `<domain>/<path>` (never the legacy
//!   `kubernetes.io/legacy-unknown`); `spec.expirationSeconds` at least 600;
//! - `status.conditions`: a type and a status each, `True` only for
//!   `Approved`, `Denied` and `Failed`, not both `Approved` and `Denied`, no
//!   type twice; `status.certificate`: only parseable `CERTIFICATE` blocks;
//! - an update may not remove an `Approved`, `Denied` or `Failed` condition;
//!   a `status` write may not add, drop or change `Approved`/`Denied` (that
//!   is the `approval` subresource's) nor replace an issued certificate.
//!
//! As kube, an update tolerates what the stored object already breaks
//! (unknown or repeated usages, the legacy signer, odd conditions).

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest as Csr, CertificateSigningRequestCondition as Condition,
};
use serde_json::{Value, json};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::names;
use crate::strategy::{SignerChecks, SignerWrite};

/// kube's CertificateApproval and CertificateSigning admission: approving or
/// denying (the `approval` subresource) needs `approve` on the request's
/// signer, issuing a certificate (a `status` write that changes
/// `status.certificate`) needs `sign`.
pub static SIGNER_CHECKS: SignerChecks = SignerChecks {
    signer: "/spec/signerName",
    writes: &[
        SignerWrite {
            subresource: "approval",
            verb: "approve",
            when_changed: None,
        },
        SignerWrite {
            subresource: "status",
            verb: "sign",
            when_changed: Some("/status/certificate"),
        },
    ],
};

/// The signer of CSRs made through the old v1beta1 API; not allowed in v1.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// kube's `allValidUsages`, in the order `sets.List()` prints them.
const VALID_USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Condition types whose status may only be `True`.
const TRUE_ONLY: [&str; 3] = ["Approved", "Denied", "Failed"];

/// What an update tolerates because the stored object has it already
/// (kube's `certificateValidationOptions`).
#[derive(Default)]
struct Tolerate {
    legacy_signer: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    both_approved_and_denied: bool,
    arbitrary_certificate: bool,
}

fn usages(csr: &Csr) -> &[String] {
    csr.spec.usages.as_deref().unwrap_or(&[])
}

fn conditions(csr: &Csr) -> &[Condition] {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

fn certificate(csr: &Csr) -> &[u8] {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .map(|c| c.0.as_slice())
        .unwrap_or(&[])
}

fn has_duplicates<'a>(items: impl IntoIterator<Item = &'a str>) -> bool {
    let mut seen = std::collections::HashSet::new();
    items.into_iter().any(|i| !seen.insert(i))
}

impl Tolerate {
    fn of(new: &Csr, old: Option<&Csr>) -> Self {
        let Some(old) = old else {
            return Self::default();
        };
        let types = || conditions(old).iter().map(|c| c.type_.as_str());
        Self {
            legacy_signer: old.spec.signer_name == LEGACY_UNKNOWN_SIGNER,
            unknown_usages: usages(old)
                .iter()
                .any(|u| !VALID_USAGES.contains(&u.as_str())),
            duplicate_usages: has_duplicates(usages(old).iter().map(String::as_str)),
            duplicate_condition_types: has_duplicates(types()),
            empty_condition_type: types().any(str::is_empty),
            both_approved_and_denied: types().any(|t| t == "Approved")
                && types().any(|t| t == "Denied"),
            arbitrary_certificate: certificate(new) == certificate(old)
                || ubernetes_certs::check_certificate_chain(certificate(old)).is_err(),
        }
    }
}

/// How kube shows an invalid `spec.request`: its base64 text, `null`
/// when absent.
fn shown_bytes(b: &[u8]) -> String {
    use base64::Engine;
    if b.is_empty() {
        return "null".into();
    }
    format!(
        "\"{}\"",
        base64::engine::general_purpose::STANDARD.encode(b)
    )
}

/// A create (kube's `ValidateCertificateSigningRequestCreate`).
pub fn validate_create(csr: &Csr) -> Vec<Cause> {
    validate(csr, &Tolerate::default())
}

/// An update of any kind (kube's `validateCertificateSigningRequestUpdate`,
/// the rules common to the three update paths).
pub fn validate_update(new: &Csr, old: &Csr) -> Vec<Cause> {
    let mut out = validate(new, &Tolerate::of(new, Some(old)));
    for t in TRUE_ONLY {
        if count(new, t) < count(old, t) {
            out.push(field::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type \"{t}\""),
            ));
        }
    }
    out
}

fn count(csr: &Csr, type_: &str) -> usize {
    conditions(csr).iter().filter(|c| c.type_ == type_).count()
}

fn validate(csr: &Csr, tolerate: &Tolerate) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Err(e) = ubernetes_certs::check_certificate_request(&csr.spec.request.0) {
        out.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {}: {e}", shown_bytes(&csr.spec.request.0)),
            "spec.request",
        ));
    }
    let usages = usages(csr);
    if usages.is_empty() {
        out.push(field::required("spec.usages", ""));
    }
    if !tolerate.unknown_usages {
        for (i, u) in usages.iter().enumerate() {
            if !VALID_USAGES.contains(&u.as_str()) {
                out.push(field::not_supported(
                    &format!("spec.usages[{i}]"),
                    &json!(u),
                    &VALID_USAGES,
                ));
            }
        }
    }
    if !tolerate.duplicate_usages {
        let mut seen = std::collections::HashSet::new();
        for (i, u) in usages.iter().enumerate() {
            if !seen.insert(u) {
                out.push(field::duplicate(&format!("spec.usages[{i}]"), &json!(u)));
            }
        }
    }
    let signer = csr.spec.signer_name.as_str();
    if !tolerate.legacy_signer && signer == LEGACY_UNKNOWN_SIGNER {
        out.push(field::invalid(
            "spec.signerName",
            &json!(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        out.extend(signer_name("spec.signerName", signer));
    }
    if let Some(s) = csr.spec.expiration_seconds
        && s < 600
    {
        out.push(field::invalid(
            "spec.expirationSeconds",
            &json!(s),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    out.extend(validate_conditions(csr, tolerate));
    if !tolerate.arbitrary_certificate
        && let Err(e) = ubernetes_certs::check_certificate_chain(certificate(csr))
    {
        out.push(field::invalid(
            "status.certificate",
            &json!("<certificate data>"),
            &e,
        ));
    }
    out
}

fn validate_conditions(csr: &Csr, tolerate: &Tolerate) -> Vec<Cause> {
    let mut out = Vec::new();
    let (mut approved, mut denied) = (false, false);
    let mut seen = std::collections::HashSet::new();
    for (i, c) in conditions(csr).iter().enumerate() {
        let path = |f: &str| format!("status.conditions[{i}].{f}");
        let t = c.type_.as_str();
        if !tolerate.empty_condition_type && t.is_empty() {
            out.push(field::required(&path("type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&t) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if c.status.is_empty() {
            out.push(field::required(&path("status"), ""));
        } else if !allowed.contains(&c.status.as_str()) {
            out.push(field::not_supported(
                &path("status"),
                &json!(c.status),
                allowed,
            ));
        }
        if !tolerate.both_approved_and_denied {
            let clash = match t {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                out.push(field::invalid(
                    &path("type"),
                    &json!(t),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !tolerate.duplicate_condition_types && !seen.insert(t) {
            out.push(field::duplicate(&path("type"), &json!(t)));
        }
    }
    out
}

/// kube's `ValidateSignerName`: `<domain>/<path>`, the domain of DNS-1123
/// labels (at least two), the path of DNS-1123 subdomains.
fn signer_name(path: &str, signer: &str) -> Vec<Cause> {
    const SUBDOMAIN_MAX: usize = 253;
    const LABEL_MAX: usize = 63;
    if signer.is_empty() {
        return vec![field::required(path, "")];
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, rest] = segments[..] else {
        return vec![field::invalid(
            path,
            &json!(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut out = Vec::new();
    if domain.len() > SUBDOMAIN_MAX {
        out.push(field::too_long(path, SUBDOMAIN_MAX));
    }
    // kube reports only the first bad dot-separated label of a segment.
    let first_bad_label = |segment: &str, check: fn(&str) -> Vec<String>| -> Vec<Cause> {
        segment
            .split('.')
            .map(|l| (l, check(l)))
            .find(|(_, errs)| !errs.is_empty())
            .map(|(label, errs)| {
                errs.iter()
                    .map(|e| {
                        field::invalid(
                            path,
                            &json!(segment),
                            &format!("validating label \"{label}\": {e}"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    out.extend(first_bad_label(domain, names::dns1123_label));
    if !domain.contains('.') {
        out.push(field::invalid(
            path,
            &json!(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    out.extend(first_bad_label(rest, names::dns1123_subdomain));
    let max = SUBDOMAIN_MAX + (SUBDOMAIN_MAX + LABEL_MAX + 1) + 1;
    if signer.len() > max {
        out.push(field::too_long(path, max));
    }
    out
}

/// A `status` write (kube's `csrStatusStrategy`): the spec stays, the
/// `Approved` and `Denied` conditions are the stored ones (a write that
/// adds or drops one is refused), and an issued certificate stays.
pub fn prepare_status_update(new: &mut Value, old: &Value) -> Vec<Cause> {
    if let Some(spec) = old.get("spec") {
        new["spec"] = spec.clone();
    }
    let of_type = |obj: &Value, t: &str| -> Vec<Value> {
        obj.pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter(|c| c.get("type").and_then(Value::as_str) == Some(t))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for t in ["Approved", "Denied"] {
        let (kept, written) = (of_type(old, t), of_type(new, t));
        if written.len() > kept.len() {
            out.push(field::forbidden(
                "status.conditions",
                &format!("updates may not add a condition of type \"{t}\""),
            ));
        } else if written.len() == kept.len() && written != kept {
            // kube's preserveConditionInstances: the stored ones stay.
            let mut stored = kept.into_iter();
            if let Some(cs) = new
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            {
                for c in cs
                    .iter_mut()
                    .filter(|c| c.get("type").and_then(Value::as_str) == Some(t))
                {
                    if let Some(s) = stored.next() {
                        *c = s;
                    }
                }
            }
        }
    }
    let cert = |obj: &Value| {
        obj.pointer("/status/certificate")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (had, has) = (cert(old), cert(new));
    if !had.is_empty() && had != has {
        out.push(field::forbidden(
            "status.certificate",
            "updates may not modify existing certificate content",
        ));
    }
    out
}

/// The `approval` subresource's write (kube's `csrApprovalStrategy`): only
/// `status.conditions` change, new conditions get their timestamps; the
/// spec and the certificate stay, labels and annotations are the written
/// ones.
pub fn approval_update(current: &Value, written: &Value) -> Value {
    let mut merged = current.clone();
    if !merged.get("status").is_some_and(Value::is_object) {
        merged["status"] = json!({});
    }
    let mut conditions = written
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or(json!([]));
    for c in conditions.as_array_mut().into_iter().flatten() {
        for t in ["lastUpdateTime", "lastTransitionTime"] {
            if c.get(t).is_none_or(Value::is_null) {
                c[t] = json!(crate::store::now_rfc3339());
            }
        }
    }
    merged["status"]["conditions"] = conditions;
    crate::store::keep_written_labels_and_annotations(&mut merged, written);
    merged
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn an_approval_write_changes_only_conditions_and_metadata_labels() {
        let current = json!({"metadata": {"name": "c", "labels": {"a": "1"}},
            "spec": {"signerName": "example.com/s"}, "status": {"certificate": "Q0VSVA=="}});
        let written = json!({"metadata": {"name": "c", "labels": {"b": "2"}},
            "spec": {"signerName": "example.com/other"},
            "status": {"certificate": "", "conditions": [{"type": "Approved", "status": "True"}]}});
        let next = approval_update(&current, &written);
        assert_eq!(next["spec"], current["spec"]);
        assert_eq!(next["status"]["certificate"], "Q0VSVA==");
        assert_eq!(next["metadata"]["labels"], json!({"b": "2"}));
        let c = &next["status"]["conditions"][0];
        assert_eq!(c["type"], "Approved");
        assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());
    }

    #[test]
    fn signer_names_as_kube_validates_them() {
        assert!(signer_name("s", "example.com/signer").is_empty());
        assert!(signer_name("s", "kubernetes.io/kube-apiserver-client").is_empty());
        assert_eq!(
            messages(&signer_name("s", "nodomain")),
            [
                "s: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ]
        );
        assert_eq!(
            messages(&signer_name("s", "example/signer")),
            [
                "s: Invalid value: \"example\": should be a domain with at least two segments separated by dots"
            ]
        );
        let bad = messages(&signer_name("s", "Example.com/signer"));
        assert!(
            bad[0].starts_with("s: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label"),
            "{bad:?}"
        );
        assert_eq!(messages(&signer_name("s", "")), ["s: Required value"]);
    }

    #[test]
    fn status_writes_keep_the_approval_conditions_and_the_certificate() {
        let approved = json!({"type": "Approved", "status": "True", "reason": "ok"});
        let old = json!({"spec": {"signerName": "a.b/c"}, "status": {"conditions": [approved], "certificate": "Q0VSVA=="}});
        // Changing an Approved condition's reason: the stored one stays.
        let mut new = json!({"spec": {"signerName": "x.y/z"}, "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "changed"}], "certificate": "Q0VSVA=="}});
        assert!(prepare_status_update(&mut new, &old).is_empty());
        assert_eq!(new["status"]["conditions"][0], approved);
        assert_eq!(new["spec"], old["spec"]);
        // Adding Denied, replacing the certificate: refused.
        let mut new = json!({"status": {"conditions": [approved, {"type": "Denied", "status": "True"}], "certificate": "T1RIRVI="}});
        assert_eq!(
            messages(&prepare_status_update(&mut new, &old)),
            [
                "status.conditions: Forbidden: updates may not add a condition of type \"Denied\"",
                "status.certificate: Forbidden: updates may not modify existing certificate content"
            ]
        );
        // A first certificate and a Failed condition are a signer's to write.
        let old = json!({"status": {"conditions": [approved]}});
        let mut new = json!({"status": {"conditions": [approved, {"type": "Failed", "status": "True"}], "certificate": "Q0VSVA=="}});
        assert!(prepare_status_update(&mut new, &old).is_empty());
    }

    #[test]
    fn a_request_is_shown_as_its_base64() {
        assert_eq!(shown_bytes(b"hello"), "\"aGVsbG8=\"");
        assert_eq!(shown_bytes(b""), "null");
    }
}
