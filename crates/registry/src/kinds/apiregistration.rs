//! `apiregistration.k8s.io/v1` APIService, as kube-apiserver's aggregator
//! serves it (`k8s.io/kube-aggregator/pkg/registry/apiservice` and
//! `pkg/apis/apiregistration/validation`): cluster-scoped, a `status`
//! subresource, names that are path segments equal to `version.group`,
//! `spec.service.port` defaulted to 443, and the aggregator's validation
//! messages. Also the group/version priorities kube-apiserver registers its
//! own APIServices with ([`priority`]), which discovery orders groups by.
//! The controller keeping one APIService per served group/version and their
//! `Available` condition is [`crate::apiservices`].

use std::sync::Arc;

use ubernetes_api::apiregistration::APIService;
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use super::names::{self, NameValidation};
use super::validation::{invalid_num, invalid_shown, invalid_str};
use crate::printers;
use crate::strategy::Strategy;

/// The group of APIServices.
pub const GROUP: &str = ubernetes_api::apiregistration::GROUP;

/// The `apiregistration.k8s.io/v1` strategies.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![Arc::new(
        Builtin::<APIService>::new(info::<APIService>(
            "apiservice",
            &[],
            &["api-extensions"],
            &["status"],
        ))
        .printer(printers::API_SERVICE)
        .names(NameValidation::PathSegment)
        .defaults(default_api_service)
        .validate(validate_api_service),
    )]
}

/// `SetDefaults_ServiceReference`: port 443.
fn default_api_service(a: &mut APIService) {
    if let Some(svc) = &mut a.spec.service
        && svc.port.is_none()
    {
        svc.port = Some(443);
    }
}

/// `ValidateAPIService` (the name's path-segment check is the store's).
fn validate_api_service(a: &APIService) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &a.spec;
    let required = format!("{}.{}", spec.version, spec.group);
    if let Some(name) = a.metadata.name.as_deref()
        && names::path_segment_name(name).is_empty()
        && name != required
    {
        out.push(invalid_str(
            "metadata.name",
            name,
            &format!(
                "must be `spec.version+\".\"+spec.group`: {}",
                serde_json::Value::String(required)
            ),
        ));
    }
    if spec.group.is_empty() && spec.version != "v1" {
        out.push(field::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !spec.group.is_empty() {
        for m in names::dns1123_subdomain(&spec.group) {
            out.push(invalid_str("spec.group", &spec.group, &m));
        }
    }
    for m in names::dns1035_label(&spec.version) {
        out.push(invalid_str("spec.version", &spec.version, &m));
    }
    if spec.group_priority_minimum <= 0 || spec.group_priority_minimum > 20000 {
        out.push(invalid_num(
            "spec.groupPriorityMinimum",
            spec.group_priority_minimum.into(),
            "must be positive and less than 20000",
        ));
    }
    if spec.version_priority <= 0 || spec.version_priority > 1000 {
        out.push(invalid_num(
            "spec.versionPriority",
            spec.version_priority.into(),
            "must be positive and less than 1000",
        ));
    }
    let ca_len = spec.ca_bundle.as_ref().map_or(0, |b| b.0.len());
    let Some(svc) = &spec.service else {
        if ca_len != 0 {
            out.push(invalid_str(
                "spec.caBundle",
                &format!("{ca_len} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if spec.insecure_skip_tls_verify {
            out.push(invalid_shown(
                "spec.insecureSkipTLSVerify",
                "true",
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return out;
    };
    if svc.namespace.is_empty() {
        out.push(field::required("spec.service.namespace", ""));
    }
    if svc.name.is_empty() {
        out.push(field::required("spec.service.name", ""));
    }
    if spec.insecure_skip_tls_verify && ca_len > 0 {
        out.push(invalid_shown(
            "spec.insecureSkipTLSVerify",
            "true",
            "may not be true if caBundle is present",
        ));
    }
    out
}

/// The `groupPriorityMinimum` / `versionPriority` kube-apiserver 1.36
/// registers the APIService of a built-in group/version with
/// (`DefaultGenericAPIServicePriorities` merged with kube-apiserver's own
/// list, as `kubectl get apiservices` shows them), or `None` for a
/// group/version kube has no entry for.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i32, i32)> {
    let gp = match group {
        "" => 18000,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "apiextensions.k8s.io" | "admissionregistration.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" | "resource.k8s.io" => 16200,
        "flowcontrol.apiserver.k8s.io" => 16100,
        "internal.apiserver.k8s.io" => 16000,
        "storagemigration.k8s.io" => 15800,
        _ => return None,
    };
    let vp = match (group, version) {
        ("", "v1") => 1,
        ("autoscaling", "v2") => 30,
        ("flowcontrol.apiserver.k8s.io", "v1") | ("resource.k8s.io", "v1") => 21,
        (_, "v1") => 15,
        (_, v) if v.contains("beta") => 9,
        _ => 1,
    };
    Some((gp, vp))
}

/// The priorities of a group/version's APIService: kube's for built-in
/// groups, else what kube's CRD registration controller gives a custom
/// resource's group/version (1000 / 100); this server's own `federation`
/// group is registered like a custom one.
pub fn priority(group: &str, version: &str) -> (i32, i32) {
    builtin_priority(group, version).unwrap_or(CRD_PRIORITY)
}

/// `groupPriorityMinimum` / `versionPriority` of a CRD's APIService.
pub const CRD_PRIORITY: (i32, i32) = (1000, 100);

/// The APIService name of a group/version: `v1.apps`, `v1.` for core.
pub fn api_service_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(v: serde_json::Value) -> Vec<String> {
        let a: APIService = serde_json::from_value(v).unwrap();
        validate_api_service(&a)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn names_must_be_version_dot_group_with_kube_messages() {
        assert_eq!(
            messages(json!({"metadata": {"name": "v1.bad"},
                            "spec": {"group": "other", "version": "v2"}})),
            vec![
                "metadata.name: Invalid value: \"v1.bad\": must be `spec.version+\".\"+spec.group`: \"v2.other\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 0: must be positive and less than 1000",
            ]
        );
    }

    #[test]
    fn a_service_backed_one_may_not_combine_ca_bundle_and_skip_verify() {
        assert_eq!(
            messages(json!({"metadata": {"name": "v1.x.io"},
                "spec": {"group": "x.io", "version": "v1", "groupPriorityMinimum": 100,
                         "versionPriority": 100, "caBundle": "Zm9v",
                         "insecureSkipTLSVerify": true,
                         "service": {"name": "m", "namespace": "default"}}})),
            vec![
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"
            ]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "v1.x.io"},
                "spec": {"group": "x.io", "version": "v1", "groupPriorityMinimum": 100,
                         "versionPriority": 100, "caBundle": "Zm9v"}})),
            vec![
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle"
            ]
        );
    }

    #[test]
    fn core_and_builtin_priorities_are_kubes() {
        assert_eq!(priority("", "v1"), (18000, 1));
        assert_eq!(priority("apps", "v1"), (17800, 15));
        assert_eq!(priority("autoscaling", "v2"), (17500, 30));
        assert_eq!(priority("example.com", "v1"), (1000, 100));
        assert_eq!(api_service_name("", "v1"), "v1.");
    }
}
