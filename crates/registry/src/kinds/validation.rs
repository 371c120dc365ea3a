//! Validation shared by several kinds, with kube-apiserver's messages and
//! field paths (`pkg/apis/core/validation`, `apimachinery/.../validation`):
//! label selectors, pod templates and pod specs, containers, ports,
//! quantities, and Go's `%#v` rendering of values in `Invalid value:` causes.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde_json::{Value, json};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::names;

/// `Invalid value: <shown>: detail` where `shown` is already Go-formatted.
pub fn invalid_shown(path: &str, shown: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {shown}: {detail}"),
        path,
    )
}

/// `Invalid value: "s": detail`.
pub fn invalid_str(path: &str, s: &str, detail: &str) -> Cause {
    field::invalid(path, &json!(s), detail)
}

/// `Invalid value: n: detail`.
pub fn invalid_num(path: &str, n: i64, detail: &str) -> Cause {
    field::invalid(path, &json!(n), detail)
}

/// `field is immutable` on a string-rendered value.
pub fn immutable_str(path: &str, s: &str) -> Cause {
    invalid_str(path, s, "field is immutable")
}

/// Go's `%#v` of a `map[string]string`.
pub fn go_map(m: Option<&BTreeMap<String, String>>) -> String {
    match m {
        None => "map[string]string(nil)".into(),
        Some(m) => format!(
            "map[string]string{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{k:?}:{v:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Go's `%#v` of a `metav1.LabelSelector`.
pub fn go_selector(s: &LabelSelector) -> String {
    let exprs = match &s.match_expressions {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(e) => format!(
            "[]v1.LabelSelectorRequirement{{{}}}",
            e.iter()
                .map(|r| format!(
                    "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{}}}",
                    r.key,
                    r.operator,
                    match &r.values {
                        None => "[]string(nil)".to_string(),
                        Some(v) => format!(
                            "[]string{{{}}}",
                            v.iter()
                                .map(|x| format!("{x:?}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    }
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}",
        go_map(s.match_labels.as_ref())
    )
}

/// `ValidateNonnegativeField`.
pub fn non_negative(path: &str, v: Option<i64>) -> Vec<Cause> {
    match v {
        Some(n) if n < 0 => vec![invalid_num(path, n, "must be greater than or equal to 0")],
        _ => vec![],
    }
}

/// `ValidatePositiveField` style (`must be greater than 0`).
pub fn positive(path: &str, v: Option<i64>) -> Vec<Cause> {
    match v {
        Some(n) if n <= 0 => vec![invalid_num(path, n, "must be greater than 0")],
        _ => vec![],
    }
}

/// Labels: keys are qualified names, values label values.
pub fn validate_labels(path: &str, labels: Option<&BTreeMap<String, String>>) -> Vec<Cause> {
    let mut out = Vec::new();
    for (k, v) in labels.into_iter().flatten() {
        for m in names::qualified_name(k) {
            out.push(invalid_str(path, k, &m));
        }
        for m in names::label_value(v) {
            out.push(invalid_str(&format!("{path}[{k}]"), v, &m));
        }
    }
    out
}

/// Annotation keys are qualified names; the total size is at most 256 KiB.
pub fn validate_annotations(path: &str, ann: Option<&BTreeMap<String, String>>) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut total = 0usize;
    for (k, v) in ann.into_iter().flatten() {
        for m in names::qualified_name(&k.to_lowercase()) {
            out.push(invalid_str(path, k, &m));
        }
        total += k.len() + v.len();
    }
    if total > 256 * 1024 {
        out.push(field::too_long(path, 256 * 1024));
    }
    out
}

/// `ValidateLabelSelector`.
pub fn validate_selector(path: &str, s: &LabelSelector) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, r) in s.match_expressions.iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let nvals = r.values.as_ref().map_or(0, Vec::len);
        match r.operator.as_str() {
            "In" | "NotIn" => {
                if nvals == 0 {
                    out.push(field::required(
                        &format!("{p}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if nvals > 0 {
                    out.push(field::forbidden(
                        &format!("{p}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            op => out.push(invalid_str(
                &format!("{p}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        for m in names::qualified_name(&r.key) {
            out.push(invalid_str(&format!("{p}.key"), &r.key, &m));
        }
    }
    out.extend(validate_labels(
        &format!("{path}.matchLabels"),
        s.match_labels.as_ref(),
    ));
    out
}

/// Whether a label selector is empty (matches everything).
pub fn selector_is_empty(s: &LabelSelector) -> bool {
    s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Whether `labels` satisfy the selector.
pub fn selector_matches(s: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    for (k, v) in s.match_labels.iter().flatten() {
        if labels.get(k) != Some(v) {
            return false;
        }
    }
    for r in s.match_expressions.iter().flatten() {
        let vals = r.values.clone().unwrap_or_default();
        let got = labels.get(&r.key);
        let ok = match r.operator.as_str() {
            "In" => got.is_some_and(|g| vals.contains(g)),
            "NotIn" => got.is_none_or(|g| !vals.contains(g)),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// `ValidatePodTemplateSpecForReplicaSet` (deployments, replica sets,
/// stateful sets, daemon sets): the selector must match the template labels
/// and the restart policy must be `Always`. A missing selector (`None`)
/// matches nothing, as `LabelSelectorAsSelector(nil)` does.
pub fn validate_template_for_controller(
    path: &str,
    selector: Option<&LabelSelector>,
    template: &PodTemplateSpec,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    let matches = match selector {
        None => false,
        Some(s) => selector_is_empty(s) || selector_matches(s, labels),
    };
    if !matches {
        out.push(invalid_shown(
            &format!("{path}.metadata.labels"),
            &go_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
    out.extend(validate_pod_template(path, template));
    if let Some(spec) = &template.spec {
        let rp = spec.restart_policy.as_deref().unwrap_or("");
        if rp != "Always" {
            out.push(field::not_supported(
                &format!("{path}.spec.restartPolicy"),
                &json!(rp),
                &["Always"],
            ));
        }
        if spec.active_deadline_seconds.is_some() {
            out.push(field::forbidden(
                &format!("{path}.spec.activeDeadlineSeconds"),
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            ));
        }
    }
    out
}

/// The common part of a controller spec: selector required (`present` says
/// whether the JSON had one) and non-empty, valid, matching the template.
pub fn validate_controller_selector(
    spec_path: &str,
    kind_word: &str,
    present: bool,
    selector: &LabelSelector,
    template: &PodTemplateSpec,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = format!("{spec_path}.selector");
    if !present {
        out.push(field::required(&sp, ""));
    } else {
        out.extend(validate_selector(&sp, selector));
        if selector_is_empty(selector) {
            out.push(invalid_shown(
                &sp,
                &go_selector(selector),
                &format!("empty selector is invalid for {kind_word}"),
            ));
        }
    }
    out.extend(validate_template_for_controller(
        &format!("{spec_path}.template"),
        present.then_some(selector),
        template,
    ));
    out
}

/// `ValidatePodTemplateSpec`: template metadata labels/annotations and the pod spec.
pub fn validate_pod_template(path: &str, t: &PodTemplateSpec) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(m) = &t.metadata {
        out.extend(validate_template_meta(&format!("{path}.metadata"), m));
    }
    match &t.spec {
        Some(spec) => out.extend(validate_pod_spec(&format!("{path}.spec"), spec)),
        None => out.push(field::required(&format!("{path}.spec.containers"), "")),
    }
    out
}

fn validate_template_meta(path: &str, m: &ObjectMeta) -> Vec<Cause> {
    let mut out = validate_labels(&format!("{path}.labels"), m.labels.as_ref());
    out.extend(validate_annotations(
        &format!("{path}.annotations"),
        m.annotations.as_ref(),
    ));
    out
}

fn not_supported_opt(path: &str, v: Option<&str>, allowed: &[&str]) -> Vec<Cause> {
    match v {
        Some(v) if !allowed.contains(&v) => vec![field::not_supported(path, &json!(v), allowed)],
        _ => vec![],
    }
}

/// `ValidatePodSpec` at the level clients meet: containers (names, images,
/// ports, probes, mounts, env), volumes, restart and DNS policies.
pub fn validate_pod_spec(path: &str, spec: &PodSpec) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut volumes = HashSet::new();
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        let p = format!("{path}.volumes[{i}]");
        if v.name.is_empty() {
            out.push(field::required(&format!("{p}.name"), ""));
        } else {
            for m in names::dns1123_label(&v.name) {
                out.push(invalid_str(&format!("{p}.name"), &v.name, &m));
            }
            if !volumes.insert(v.name.clone()) {
                out.push(field::duplicate(&format!("{p}.name"), &json!(v.name)));
            }
        }
    }
    let mut container_names = HashSet::new();
    if spec.containers.is_empty() {
        out.push(field::required(&format!("{path}.containers"), ""));
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        out.extend(validate_container(
            &format!("{path}.initContainers[{i}]"),
            c,
            &volumes,
            &mut container_names,
        ));
    }
    for (i, c) in spec.containers.iter().enumerate() {
        out.extend(validate_container(
            &format!("{path}.containers[{i}]"),
            c,
            &volumes,
            &mut container_names,
        ));
    }
    out.extend(not_supported_opt(
        &format!("{path}.restartPolicy"),
        spec.restart_policy.as_deref(),
        &["Always", "OnFailure", "Never"],
    ));
    out.extend(not_supported_opt(
        &format!("{path}.dnsPolicy"),
        spec.dns_policy.as_deref(),
        &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"],
    ));
    if spec.dns_policy.as_deref() == Some("None")
        && spec
            .dns_config
            .as_ref()
            .is_none_or(|c| c.nameservers.as_ref().is_none_or(Vec::is_empty))
    {
        out.push(field::required(
            &format!("{path}.dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        ));
    }
    if let Some(sa) = spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        for m in names::dns1123_subdomain(sa) {
            out.push(invalid_str(&format!("{path}.serviceAccountName"), sa, &m));
        }
    }
    if let Some(n) = spec.node_name.as_deref().filter(|s| !s.is_empty()) {
        for m in names::dns1123_subdomain(n) {
            out.push(invalid_str(&format!("{path}.nodeName"), n, &m));
        }
    }
    out.extend(non_negative(
        &format!("{path}.terminationGracePeriodSeconds"),
        spec.termination_grace_period_seconds,
    ));
    out.extend(positive(
        &format!("{path}.activeDeadlineSeconds"),
        spec.active_deadline_seconds,
    ));
    out.extend(validate_labels(
        &format!("{path}.nodeSelector"),
        spec.node_selector.as_ref(),
    ));
    if let Some(h) = spec.hostname.as_deref().filter(|s| !s.is_empty()) {
        for m in names::dns1123_label(h) {
            out.push(invalid_str(&format!("{path}.hostname"), h, &m));
        }
    }
    if let Some(sysctls) = spec
        .security_context
        .as_ref()
        .and_then(|c| c.sysctls.as_ref())
    {
        out.extend(validate_sysctls(
            &format!("{path}.securityContext.sysctls"),
            sysctls,
        ));
    }
    out
}

/// kube's `SysctlContainSlashFmt`, as its message prints it.
const SYSCTL_REGEX: &str =
    r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

/// kube's `IsValidSysctlName`: at most 253 characters, segments of
/// `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` separated by `.` or `/`.
fn is_valid_sysctl_name(name: &str) -> bool {
    let segment = |s: &str| {
        let b = s.as_bytes();
        let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(end)
            && b.last().is_some_and(end)
            && b.iter().all(|c| end(c) || *c == b'-' || *c == b'_')
    };
    name.len() <= 253 && name.split(['.', '/']).all(segment)
}

/// kube's `validateSysctls` (`spec.securityContext.sysctls`): each name
/// required, well-formed and given once. The host-namespace checks are not
/// made (they need the pod's `hostNetwork`/`hostIPC` and a kubelet's list).
fn validate_sysctls(path: &str, sysctls: &[k8s_openapi::api::core::v1::Sysctl]) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, s) in sysctls.iter().enumerate() {
        let p = format!("{path}[{i}].name");
        if s.name.is_empty() {
            out.push(field::required(&p, ""));
        } else if !is_valid_sysctl_name(&s.name) {
            out.push(invalid_str(
                &p,
                &s.name,
                &format!("must have at most 253 characters and match regex {SYSCTL_REGEX}"),
            ));
        } else if !seen.insert(s.name.as_str()) {
            out.push(field::duplicate(&p, &json!(s.name)));
        }
    }
    out
}

fn validate_container(
    p: &str,
    c: &Container,
    volumes: &HashSet<String>,
    names_seen: &mut HashSet<String>,
) -> Vec<Cause> {
    let mut out = Vec::new();
    if c.name.is_empty() {
        out.push(field::required(&format!("{p}.name"), ""));
    } else {
        for m in names::dns1123_label(&c.name) {
            out.push(invalid_str(&format!("{p}.name"), &c.name, &m));
        }
        if !names_seen.insert(c.name.clone()) {
            out.push(field::duplicate(&format!("{p}.name"), &json!(c.name)));
        }
    }
    match c.image.as_deref() {
        None | Some("") => out.push(field::required(&format!("{p}.image"), "")),
        Some(img) if img.trim() != img => out.push(invalid_str(
            &format!("{p}.image"),
            img,
            "must not have leading or trailing whitespace",
        )),
        _ => {}
    }
    out.extend(not_supported_opt(
        &format!("{p}.imagePullPolicy"),
        c.image_pull_policy.as_deref(),
        &["Always", "IfNotPresent", "Never"],
    ));
    out.extend(not_supported_opt(
        &format!("{p}.terminationMessagePolicy"),
        c.termination_message_policy.as_deref(),
        &["FallbackToLogsOnError", "File"],
    ));
    out.extend(validate_container_ports(
        &format!("{p}.ports"),
        c.ports.as_deref(),
    ));
    for (which, probe) in [
        ("livenessProbe", &c.liveness_probe),
        ("readinessProbe", &c.readiness_probe),
        ("startupProbe", &c.startup_probe),
    ] {
        if let Some(probe) = probe {
            out.extend(validate_probe(&format!("{p}.{which}"), probe));
        }
    }
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let mp = format!("{p}.volumeMounts[{i}]");
        if m.name.is_empty() {
            out.push(field::required(&format!("{mp}.name"), ""));
        } else if !volumes.contains(&m.name) {
            out.push(Cause::new(
                "FieldValueNotFound",
                format!("Not found: {:?}", m.name),
                format!("{mp}.name"),
            ));
        }
        if m.mount_path.is_empty() {
            out.push(field::required(&format!("{mp}.mountPath"), ""));
        }
    }
    for (i, e) in c.env.iter().flatten().enumerate() {
        let ep = format!("{p}.env[{i}].name");
        if e.name.is_empty() {
            out.push(field::required(&ep, ""));
        } else if !e
            .name
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && b != b'=')
        {
            out.push(invalid_str(
                &ep,
                &e.name,
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
    }
    if let Some(r) = &c.resources {
        let rp = format!("{p}.resources");
        for (which, list) in [("limits", &r.limits), ("requests", &r.requests)] {
            for (k, q) in list.iter().flatten() {
                if super::quantity::parse(&q.0).is_none() {
                    out.push(invalid_str(
                        &format!("{rp}.{which}[{k}]"),
                        &q.0,
                        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    ));
                }
            }
        }
        for (k, req) in r.requests.iter().flatten() {
            let Some(lim) = r.limits.as_ref().and_then(|l| l.get(k)) else {
                continue;
            };
            if let (Some(rq), Some(lm)) = (
                super::quantity::parse(&req.0),
                super::quantity::parse(&lim.0),
            ) && rq > lm
            {
                out.push(invalid_str(
                    &format!("{rp}.requests"),
                    &req.0,
                    &format!("must be less than or equal to {k} limit of {}", lim.0),
                ));
            }
        }
    }
    out
}

/// Container ports: number range, protocol, unique names.
pub fn validate_container_ports(path: &str, ports: Option<&[ContainerPort]>) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, port) in ports.into_iter().flatten().enumerate() {
        let p = format!("{path}[{i}]");
        if let Some(n) = port.name.as_deref().filter(|n| !n.is_empty()) {
            for m in names::port_name(n) {
                out.push(invalid_str(&format!("{p}.name"), n, &m));
            }
            if !seen.insert(n.to_string()) {
                out.push(field::duplicate(&format!("{p}.name"), &json!(n)));
            }
        }
        if port.container_port == 0 {
            out.push(field::required(&format!("{p}.containerPort"), ""));
        } else {
            out.extend(port_range(
                &format!("{p}.containerPort"),
                port.container_port,
            ));
        }
        if let Some(h) = port.host_port.filter(|h| *h != 0) {
            out.extend(port_range(&format!("{p}.hostPort"), h));
        }
        match port.protocol.as_deref() {
            None | Some("") => out.push(field::required(&format!("{p}.protocol"), "")),
            Some(pr) => out.extend(not_supported_opt(
                &format!("{p}.protocol"),
                Some(pr),
                &["SCTP", "TCP", "UDP"],
            )),
        }
    }
    out
}

/// `must be between 1 and 65535, inclusive`.
pub fn port_range(path: &str, n: i32) -> Vec<Cause> {
    if (1..=65535).contains(&n) {
        vec![]
    } else {
        vec![invalid_num(
            path,
            n.into(),
            "must be between 1 and 65535, inclusive",
        )]
    }
}

fn validate_probe(p: &str, probe: &Probe) -> Vec<Cause> {
    let mut out = Vec::new();
    let handlers = [
        probe.exec.is_some(),
        probe.http_get.is_some(),
        probe.tcp_socket.is_some(),
        probe.grpc.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if handlers == 0 {
        out.push(field::required(p, "must specify a handler type"));
    } else if handlers > 1 {
        out.push(field::forbidden(
            p,
            "may not specify more than 1 handler type",
        ));
    }
    for (f, v) in [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ] {
        out.extend(non_negative(&format!("{p}.{f}"), v.map(i64::from)));
    }
    out
}

/// `ValidateObjectMeta`-style checks for an embedded object's metadata name
/// (e.g. a StatefulSet's volume claim templates).
pub fn validate_embedded_name(path: &str, name: Option<&str>) -> Vec<Cause> {
    match name {
        None | Some("") => vec![field::required(path, "name or generateName is required")],
        Some(n) => names::dns1123_subdomain(n)
            .into_iter()
            .map(|m| invalid_str(path, n, &m))
            .collect(),
    }
}

/// The JSON of a value, for a cause that shows it.
pub fn shown(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn go_map_renders_like_percent_sharp_v() {
        let m: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert_eq!(go_map(Some(&m)), "map[string]string{\"app\":\"web\"}");
        assert_eq!(go_map(None), "map[string]string(nil)");
    }

    #[test]
    fn selector_matching_supports_set_operators() {
        let s: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"a": "1"},
            "matchExpressions": [{"key": "b", "operator": "In", "values": ["x", "y"]},
                                 {"key": "c", "operator": "DoesNotExist"}]
        }))
        .unwrap_or_default();
        let ok: BTreeMap<String, String> = [("a", "1"), ("b", "y")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(selector_matches(&s, Some(&ok)));
        let mut bad = ok.clone();
        bad.insert("c".into(), "z".into());
        assert!(!selector_matches(&s, Some(&bad)));
    }

    #[test]
    fn sysctl_names_are_checked_as_kube_checks_them() {
        // The names of the conformance spec "should reject invalid sysctls".
        let sysctls: Vec<k8s_openapi::api::core::v1::Sysctl> = serde_json::from_value(json!([
            {"name": "foo-", "value": "bar"}, {"name": "kernel.shmmax", "value": "1"},
            {"name": "safe-and-unsafe", "value": "1"}, {"name": "bar..", "value": "42"},
            {"name": "net/ipv4/ip_forward", "value": "1"}, {"name": "kernel.shmmax", "value": "2"}
        ]))
        .unwrap();
        let c = validate_sysctls("spec.securityContext.sysctls", &sysctls);
        let fields: Vec<_> = c
            .iter()
            .map(|c| (c.field.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            fields,
            [
                ("spec.securityContext.sysctls[0].name", "FieldValueInvalid"),
                ("spec.securityContext.sysctls[3].name", "FieldValueInvalid"),
                (
                    "spec.securityContext.sysctls[5].name",
                    "FieldValueDuplicate"
                ),
            ]
        );
        assert!(
            c[0].message.contains(r#"Invalid value: "foo-""#),
            "{}",
            c[0].message
        );
    }

    #[test]
    fn in_operator_without_values_is_required() {
        let s: LabelSelector = serde_json::from_value(json!({
            "matchExpressions": [{"key": "b", "operator": "In"}]
        }))
        .unwrap_or_default();
        let c = validate_selector("spec.selector", &s);
        assert_eq!(c[0].field, "spec.selector.matchExpressions[0].values");
        assert_eq!(c[0].reason, "FieldValueRequired");
    }
}
