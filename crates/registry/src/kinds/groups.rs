//! The smaller built-in groups: `autoscaling/v2` and `v1`
//! horizontalpodautoscalers, `networking.k8s.io/v1` (ingresses,
//! ingressclasses, networkpolicies), `policy/v1` poddisruptionbudgets,
//! `rbac.authorization.k8s.io/v1`, `coordination.k8s.io/v1` leases,
//! `events.k8s.io/v1` events and `discovery.k8s.io/v1` endpointslices.

use std::sync::Arc;

use k8s_openapi::api::autoscaling::{v1 as hpav1, v2 as hpav2};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::{Ingress, IngressBackend, IngressClass, NetworkPolicy};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use super::names::{self, NameValidation};
use super::validation::{
    invalid_num, invalid_shown, invalid_str, non_negative, port_range, positive, validate_selector,
};
use crate::printers;
use crate::strategy::Strategy;
use crate::strategy::WriteAuthority;

/// The strategies of these groups (autoscaling v2 before v1: v2 is preferred).
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<hpav2::HorizontalPodAutoscaler>::new(info::<hpav2::HorizontalPodAutoscaler>(
                "horizontalpodautoscaler",
                &["hpa"],
                &["all"],
                &["status"],
            ))
            .printer(printers::HORIZONTAL_POD_AUTOSCALER)
            .federated()
            // autoscalerStatusStrategy resets the spec only.
            .status_writes_metadata()
            .defaults(default_hpa_v2)
            .validate(|h| {
                validate_hpa_common(
                    h.spec.min_replicas,
                    h.spec.max_replicas,
                    &h.spec.scale_target_ref.kind,
                    &h.spec.scale_target_ref.name,
                )
            }),
        ),
        Arc::new(
            Builtin::<hpav1::HorizontalPodAutoscaler>::new(info::<hpav1::HorizontalPodAutoscaler>(
                "horizontalpodautoscaler",
                &["hpa"],
                &["all"],
                &["status"],
            ))
            .printer(printers::HORIZONTAL_POD_AUTOSCALER)
            .stored_as::<hpav2::HorizontalPodAutoscaler>(
                || Arc::new(crate::conversion::hpa::V1),
                "/registry/autoscaling/horizontalpodautoscalers.v1/",
            )
            .status_writes_metadata()
            .defaults(|h| {
                h.spec.min_replicas.get_or_insert(1);
            })
            .validate(|h| {
                let mut out = validate_hpa_common(
                    h.spec.min_replicas,
                    h.spec.max_replicas,
                    &h.spec.scale_target_ref.kind,
                    &h.spec.scale_target_ref.name,
                );
                if let Some(t) = h.spec.target_cpu_utilization_percentage
                    && t < 1
                {
                    out.push(invalid_num(
                        "spec.targetCPUUtilizationPercentage",
                        t.into(),
                        "must be greater than 0",
                    ));
                }
                out
            }),
        ),
        Arc::new(
            Builtin::<IngressClass>::new(info::<IngressClass>("ingressclass", &[], &[], &[]))
                .printer(printers::INGRESS_CLASS)
                .federated()
                .generation()
                .defaults(|c| {
                    if let Some(p) = c.spec.as_mut().and_then(|s| s.parameters.as_mut()) {
                        p.scope.get_or_insert_with(|| "Cluster".into());
                    }
                })
                .validate(validate_ingress_class)
                .validate_update(|n, o| {
                    let (a, b) = (
                        n.spec.as_ref().and_then(|s| s.controller.clone()),
                        o.spec.as_ref().and_then(|s| s.controller.clone()),
                    );
                    if a != b {
                        vec![invalid_str(
                            "spec.controller",
                            a.as_deref().unwrap_or(""),
                            "field is immutable",
                        )]
                    } else {
                        vec![]
                    }
                }),
        ),
        Arc::new(
            Builtin::<Ingress>::new(info::<Ingress>("ingress", &["ing"], &[], &["status"]))
                .printer(printers::INGRESS)
                .federated()
                .generation()
                .validate(validate_ingress)
                // ingressStatusStrategy resets the spec only.
                .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<NetworkPolicy>::new(info::<NetworkPolicy>(
                "networkpolicy",
                &["netpol"],
                &[],
                &[],
            ))
            .printer(printers::NETWORK_POLICY)
            .federated()
            .generation()
            .defaults(default_network_policy)
            .validate(validate_network_policy),
        ),
        Arc::new(
            Builtin::<PodDisruptionBudget>::new(info::<PodDisruptionBudget>(
                "poddisruptionbudget",
                &["pdb"],
                &[],
                &["status"],
            ))
            .printer(printers::POD_DISRUPTION_BUDGET)
            .federated()
            .generation()
            .validate(validate_pdb)
            // podDisruptionBudgetStatusStrategy resets the spec only.
            .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<ClusterRoleBinding>::new(info::<ClusterRoleBinding>(
                "clusterrolebinding",
                &[],
                &[],
                &[],
            ))
            .printer(printers::CLUSTER_ROLE_BINDING)
            .federated()
            .write_authority(WriteAuthority::BindingEscalation)
            .names(NameValidation::PathSegment)
            .defaults(|b| default_binding(&mut b.role_ref, b.subjects.as_mut()))
            .validate(|b| validate_binding(&b.role_ref, b.subjects.as_deref(), false))
            .validate_update(|n, o| role_ref_immutable(&n.role_ref, &o.role_ref)),
        ),
        Arc::new(
            Builtin::<ClusterRole>::new(info::<ClusterRole>("clusterrole", &[], &[], &[]))
                .printer(printers::DEFAULT)
                .federated()
                .write_authority(WriteAuthority::RoleEscalation)
                .names(NameValidation::PathSegment)
                .validate(|r| {
                    if r.aggregation_rule.is_some() {
                        return vec![];
                    }
                    validate_rules(r.rules.as_deref(), false)
                }),
        ),
        Arc::new(
            Builtin::<RoleBinding>::new(info::<RoleBinding>("rolebinding", &[], &[], &[]))
                .printer(printers::ROLE_BINDING)
                .federated()
                .write_authority(WriteAuthority::BindingEscalation)
                .names(NameValidation::PathSegment)
                .defaults(|b| default_binding(&mut b.role_ref, b.subjects.as_mut()))
                .validate(|b| validate_binding(&b.role_ref, b.subjects.as_deref(), true))
                .validate_update(|n, o| role_ref_immutable(&n.role_ref, &o.role_ref)),
        ),
        Arc::new(
            Builtin::<Role>::new(info::<Role>("role", &[], &[], &[]))
                .printer(printers::DEFAULT)
                .federated()
                .write_authority(WriteAuthority::RoleEscalation)
                .names(NameValidation::PathSegment)
                .validate(|r| validate_rules(r.rules.as_deref(), true)),
        ),
        Arc::new(
            Builtin::<Lease>::new(info::<Lease>("lease", &[], &[], &[]))
                .printer(printers::LEASE)
                .validate(|l| {
                    let Some(s) = &l.spec else { return vec![] };
                    let mut out = positive(
                        "spec.leaseDurationSeconds",
                        s.lease_duration_seconds.map(i64::from),
                    );
                    out.extend(non_negative(
                        "spec.leaseTransitions",
                        s.lease_transitions.map(i64::from),
                    ));
                    out
                }),
        ),
        Arc::new(
            Builtin::<Event>::new(info::<Event>("event", &["ev"], &[], &[]))
                .printer(printers::EVENT)
                .stored_as::<k8s_openapi::api::core::v1::Event>(
                    || Arc::new(crate::conversion::events::EventsV1),
                    "/registry/events.k8s.io/events/",
                )
                .validate(validate_event_v1)
                .validate_update(validate_event_v1_update)
                .update_validation_only()
                .fields(&[
                    "regarding.kind",
                    "regarding.namespace",
                    "regarding.name",
                    "regarding.uid",
                    "regarding.apiVersion",
                    "regarding.resourceVersion",
                    "regarding.fieldPath",
                    "reason",
                    "reportingController",
                    "type",
                ]),
        ),
        Arc::new(
            Builtin::<EndpointSlice>::new(info::<EndpointSlice>("endpointslice", &[], &[], &[]))
                .printer(printers::ENDPOINT_SLICE)
                .generation()
                .defaults(|s| {
                    for p in s.ports.iter_mut().flatten() {
                        p.name.get_or_insert_with(String::new);
                        p.protocol.get_or_insert_with(|| "TCP".into());
                    }
                })
                .validate(validate_endpoint_slice)
                // Go encodes an endpoint's `conditions` struct (held by
                // value) as `{}`, and a port's defaulted `name` pointer as "".
                .after_normalize(|obj| {
                    for (list, field, zero) in [
                        ("endpoints", "conditions", json!({})),
                        ("ports", "name", json!("")),
                    ] {
                        for item in obj
                            .get_mut(list)
                            .and_then(serde_json::Value::as_array_mut)
                            .into_iter()
                            .flatten()
                            .filter_map(serde_json::Value::as_object_mut)
                        {
                            item.entry(field).or_insert_with(|| zero.clone());
                        }
                    }
                })
                // endpointSliceStrategy.PrepareForUpdate: a label change
                // bumps the generation too.
                .on_update(|new, old| super::apps::bump_generation_if_changed(new, old, "labels"))
                .validate_update(|n, o| {
                    if n.address_type != o.address_type {
                        vec![invalid_str(
                            "addressType",
                            &n.address_type,
                            "field is immutable",
                        )]
                    } else {
                        vec![]
                    }
                }),
        ),
    ]
}

// --------------------------------------------------------------- autoscaling

fn scaling_rules(
    rules: Option<hpav2::HPAScalingRules>,
    window: i32,
    policies: Vec<(&str, i32, i32)>,
) -> hpav2::HPAScalingRules {
    let mut r = rules.unwrap_or_default();
    r.stabilization_window_seconds.get_or_insert(window);
    r.select_policy.get_or_insert_with(|| "Max".into());
    if r.policies.is_none() {
        r.policies = Some(
            policies
                .into_iter()
                .map(|(t, v, p)| hpav2::HPAScalingPolicy {
                    type_: t.into(),
                    value: v,
                    period_seconds: p,
                })
                .collect(),
        );
    }
    r
}

fn default_hpa_v2(h: &mut hpav2::HorizontalPodAutoscaler) {
    let spec = &mut h.spec;
    spec.min_replicas.get_or_insert(1);
    if spec.metrics.as_ref().is_none_or(Vec::is_empty) {
        spec.metrics = Some(vec![hpav2::MetricSpec {
            type_: "Resource".into(),
            resource: Some(hpav2::ResourceMetricSource {
                name: "cpu".into(),
                target: hpav2::MetricTarget {
                    type_: "Utilization".into(),
                    average_utilization: Some(80),
                    ..Default::default()
                },
            }),
            ..Default::default()
        }]);
    }
    if let Some(b) = &mut spec.behavior {
        b.scale_up = Some(scaling_rules(
            b.scale_up.take(),
            0,
            vec![("Pods", 4, 15), ("Percent", 100, 15)],
        ));
        b.scale_down = Some(scaling_rules(
            b.scale_down.take(),
            300,
            vec![("Percent", 100, 15)],
        ));
    }
}

fn validate_hpa_common(min: Option<i32>, max: i32, kind: &str, name: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    if kind.is_empty() {
        out.push(field::required("spec.scaleTargetRef.kind", ""));
    } else {
        for m in names::path_segment_name(kind) {
            out.push(invalid_str("spec.scaleTargetRef.kind", kind, &m));
        }
    }
    if name.is_empty() {
        out.push(field::required("spec.scaleTargetRef.name", ""));
    } else {
        for m in names::path_segment_name(name) {
            out.push(invalid_str("spec.scaleTargetRef.name", name, &m));
        }
    }
    if let Some(min) = min
        && min < 0
    {
        out.push(invalid_num(
            "spec.minReplicas",
            min.into(),
            "must be greater than or equal to 0",
        ));
    }
    if max < 1 {
        out.push(invalid_num(
            "spec.maxReplicas",
            max.into(),
            "must be greater than 0",
        ));
    }
    if let Some(min) = min
        && max < min
    {
        out.push(invalid_num(
            "spec.maxReplicas",
            max.into(),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    out
}

// ---------------------------------------------------------------- networking

fn validate_backend(path: &str, b: &IngressBackend) -> Vec<Cause> {
    let mut out = Vec::new();
    match (&b.service, &b.resource) {
        (Some(_), Some(_)) => out.push(invalid_shown(
            path,
            "",
            "cannot set both resource and service backends",
        )),
        (None, None) => out.push(field::required(
            path,
            "one of `service` or `resource` must be specified",
        )),
        (Some(s), None) => {
            if s.name.is_empty() {
                out.push(field::required(&format!("{path}.service.name"), ""));
            } else {
                for m in names::dns1035_label(&s.name) {
                    out.push(invalid_str(&format!("{path}.service.name"), &s.name, &m));
                }
            }
            match &s.port {
                None => out.push(field::required(
                    &format!("{path}.service.port"),
                    "port name or number is required",
                )),
                Some(p) => match (&p.name, p.number) {
                    (Some(n), Some(_)) if !n.is_empty() => out.push(invalid_shown(
                        &format!("{path}.service.port"),
                        "",
                        "cannot set both port name & port number",
                    )),
                    (Some(n), _) if !n.is_empty() => {
                        for m in names::port_name(n) {
                            out.push(invalid_str(&format!("{path}.service.port.name"), n, &m));
                        }
                    }
                    (_, Some(num)) if num != 0 => {
                        out.extend(port_range(&format!("{path}.service.port.number"), num))
                    }
                    _ => out.push(field::required(
                        &format!("{path}.service.port"),
                        "port name or number is required",
                    )),
                },
            }
        }
        (None, Some(r)) => {
            if r.kind.is_empty() {
                out.push(field::required(&format!("{path}.resource.kind"), ""));
            }
            if r.name.is_empty() {
                out.push(field::required(&format!("{path}.resource.name"), ""));
            }
        }
    }
    out
}

fn validate_ingress(i: &Ingress) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = i.spec.clone().unwrap_or_default();
    let rules = spec.rules.clone().unwrap_or_default();
    if spec.default_backend.is_none() && rules.is_empty() {
        out.push(invalid_shown(
            "spec.rules",
            "[]networking.IngressRule(nil)",
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = &spec.default_backend {
        out.extend(validate_backend("spec.defaultBackend", b));
    }
    for (i, r) in rules.iter().enumerate() {
        let rp = format!("spec.rules[{i}]");
        if let Some(h) = r.host.as_deref().filter(|h| !h.is_empty()) {
            if h.parse::<std::net::IpAddr>().is_ok() {
                out.push(invalid_str(
                    &format!("{rp}.host"),
                    h,
                    "must be a DNS name, not an IP address",
                ));
            }
            let bare = h.strip_prefix("*.").unwrap_or(h);
            for m in names::dns1123_subdomain(bare) {
                out.push(invalid_str(&format!("{rp}.host"), h, &m));
            }
        }
        let Some(http) = &r.http else { continue };
        for (j, p) in http.paths.iter().enumerate() {
            let pp = format!("{rp}.http.paths[{j}]");
            match p.path_type.as_str() {
                "" => out.push(field::required(
                    &format!("{pp}.pathType"),
                    "pathType must be specified",
                )),
                "Exact" | "Prefix" => {
                    let path = p.path.as_deref().unwrap_or("");
                    if !path.starts_with('/') {
                        out.push(invalid_str(
                            &format!("{pp}.path"),
                            path,
                            "must be an absolute path",
                        ));
                    }
                }
                "ImplementationSpecific" => {
                    let path = p.path.as_deref().unwrap_or("");
                    if !path.is_empty() && !path.starts_with('/') {
                        out.push(invalid_str(
                            &format!("{pp}.path"),
                            path,
                            "must be an absolute path",
                        ));
                    }
                }
                other => out.push(field::not_supported(
                    &format!("{pp}.pathType"),
                    &json!(other),
                    &["Exact", "ImplementationSpecific", "Prefix"],
                )),
            }
            out.extend(validate_backend(&format!("{pp}.backend"), &p.backend));
        }
    }
    if let Some(c) = spec.ingress_class_name.as_deref() {
        for m in names::dns1123_subdomain(c) {
            out.push(invalid_str("spec.ingressClassName", c, &m));
        }
    }
    out
}

fn validate_ingress_class(c: &IngressClass) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = c.spec.clone().unwrap_or_default();
    match spec.controller.as_deref() {
        None | Some("") => out.push(field::required("spec.controller", "")),
        Some(ctl) => {
            if ctl.len() > 250 {
                out.push(field::too_long("spec.controller", 250));
            }
        }
    }
    if let Some(p) = &spec.parameters {
        if p.kind.is_empty() {
            out.push(field::required("spec.parameters.kind", ""));
        }
        if p.name.is_empty() {
            out.push(field::required("spec.parameters.name", ""));
        }
        match p.scope.as_deref() {
            Some("Namespace") if p.namespace.as_deref().unwrap_or("").is_empty() => {
                out.push(field::required(
                    "spec.parameters.namespace",
                    "`parameters.scope` is set to 'Namespace'",
                ));
            }
            Some("Cluster") if p.namespace.is_some() => {
                out.push(field::forbidden(
                    "spec.parameters.namespace",
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
            Some(other) => out.push(field::not_supported(
                "spec.parameters.scope",
                &json!(other),
                &["Cluster", "Namespace"],
            )),
            None => {}
        }
    }
    out
}

fn default_network_policy(n: &mut NetworkPolicy) {
    let spec = n.spec.get_or_insert_with(Default::default);
    for rule in spec.ingress.iter_mut().flatten() {
        for p in rule.ports.iter_mut().flatten() {
            p.protocol.get_or_insert_with(|| "TCP".into());
        }
    }
    for rule in spec.egress.iter_mut().flatten() {
        for p in rule.ports.iter_mut().flatten() {
            p.protocol.get_or_insert_with(|| "TCP".into());
        }
    }
    if spec.policy_types.as_ref().is_none_or(Vec::is_empty) {
        let mut types = vec!["Ingress".to_string()];
        if spec.egress.as_ref().is_some_and(|e| !e.is_empty()) {
            types.push("Egress".into());
        }
        spec.policy_types = Some(types);
    }
}

fn validate_network_policy(n: &NetworkPolicy) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = n.spec.clone().unwrap_or_default();
    if let Some(s) = &spec.pod_selector {
        out.extend(validate_selector("spec.podSelector", s));
    }
    let ports = |rules: Vec<(
        String,
        Vec<k8s_openapi::api::networking::v1::NetworkPolicyPort>,
    )>| {
        let mut out = Vec::new();
        for (path, ports) in rules {
            for (i, p) in ports.iter().enumerate() {
                let pp = format!("{path}.ports[{i}]");
                if let Some(proto) = p.protocol.as_deref()
                    && !["SCTP", "TCP", "UDP"].contains(&proto)
                {
                    out.push(field::not_supported(
                        &format!("{pp}.protocol"),
                        &json!(proto),
                        &["SCTP", "TCP", "UDP"],
                    ));
                }
                match &p.port {
                    Some(IntOrString::Int(n)) => out.extend(port_range(&format!("{pp}.port"), *n)),
                    Some(IntOrString::String(s)) => {
                        for m in names::port_name(s) {
                            out.push(invalid_str(&format!("{pp}.port"), s, &m));
                        }
                    }
                    None => {}
                }
            }
        }
        out
    };
    out.extend(ports(
        spec.ingress
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| {
                (
                    format!("spec.ingress[{i}]"),
                    r.ports.clone().unwrap_or_default(),
                )
            })
            .collect(),
    ));
    out.extend(ports(
        spec.egress
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, r)| {
                (
                    format!("spec.egress[{i}]"),
                    r.ports.clone().unwrap_or_default(),
                )
            })
            .collect(),
    ));
    for (i, t) in spec.policy_types.iter().flatten().enumerate() {
        if t != "Ingress" && t != "Egress" {
            out.push(field::not_supported(
                &format!("spec.policyTypes[{i}]"),
                &json!(t),
                &["Egress", "Ingress"],
            ));
        }
    }
    out
}

// -------------------------------------------------------------------- policy

fn validate_pdb(p: &PodDisruptionBudget) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = p.spec.clone().unwrap_or_default();
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        out.push(invalid_shown(
            "spec",
            "policy.PodDisruptionBudgetSpec{...}",
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (f, v) in [
        ("spec.minAvailable", &spec.min_available),
        ("spec.maxUnavailable", &spec.max_unavailable),
    ] {
        match v {
            Some(IntOrString::Int(n)) if *n < 0 => {
                out.push(invalid_num(f, (*n).into(), "must be greater than or equal to 0"))
            }
            Some(IntOrString::String(s)) => match s.strip_suffix('%').and_then(|x| x.parse::<i64>().ok()) {
                None => out.push(invalid_str(
                    f,
                    s,
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )),
                Some(n) if n > 100 => out.push(invalid_str(f, s, "must not be greater than 100%")),
                _ => {}
            },
            _ => {}
        }
    }
    if let Some(s) = &spec.selector {
        out.extend(validate_selector("spec.selector", s));
    }
    if let Some(policy) = spec.unhealthy_pod_eviction_policy.as_deref()
        && !["AlwaysAllow", "IfHealthyBudget"].contains(&policy)
    {
        out.push(field::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            &json!(policy),
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
    out
}

// ---------------------------------------------------------------------- rbac

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn default_binding(role_ref: &mut RoleRef, subjects: Option<&mut Vec<Subject>>) {
    if role_ref.api_group.as_deref().unwrap_or("").is_empty() {
        role_ref.api_group = Some(RBAC_GROUP.into());
    }
    for s in subjects.into_iter().flatten() {
        if s.api_group.is_none() {
            match s.kind.as_str() {
                "User" | "Group" => s.api_group = Some(RBAC_GROUP.into()),
                "ServiceAccount" => s.api_group = Some(String::new()),
                _ => {}
            }
        }
    }
}

fn validate_rules(rules: Option<&[PolicyRule]>, namespaced: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, r) in rules.into_iter().flatten().enumerate() {
        let p = format!("rules[{i}]");
        if r.verbs.is_empty() {
            out.push(field::required(
                &format!("{p}.verbs"),
                "verbs must contain at least one value",
            ));
        }
        let nonres = r.non_resource_urls.clone().unwrap_or_default();
        if !nonres.is_empty() {
            if namespaced {
                out.push(invalid_shown(
                    &format!("{p}.nonResourceURLs"),
                    &format!(
                        "[]string{{{}}}",
                        nonres
                            .iter()
                            .map(|s| format!("{s:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if r.api_groups.as_ref().is_some_and(|g| !g.is_empty())
                || r.resources.as_ref().is_some_and(|g| !g.is_empty())
                || r.resource_names.as_ref().is_some_and(|g| !g.is_empty())
            {
                out.push(invalid_shown(
                    &format!("{p}.nonResourceURLs"),
                    "",
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if r.api_groups.as_ref().is_none_or(Vec::is_empty) {
            out.push(field::required(
                &format!("{p}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if r.resources.as_ref().is_none_or(Vec::is_empty) {
            out.push(field::required(
                &format!("{p}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    out
}

fn validate_binding(
    role_ref: &RoleRef,
    subjects: Option<&[Subject]>,
    namespaced: bool,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let group = role_ref.api_group.as_deref().unwrap_or("");
    if group != RBAC_GROUP {
        out.push(field::not_supported(
            "roleRef.apiGroup",
            &json!(group),
            &[RBAC_GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&role_ref.kind.as_str()) {
        out.push(field::not_supported(
            "roleRef.kind",
            &json!(role_ref.kind),
            kinds,
        ));
    }
    if role_ref.name.is_empty() {
        out.push(field::required("roleRef.name", ""));
    } else {
        for m in names::path_segment_name(&role_ref.name) {
            out.push(invalid_str("roleRef.name", &role_ref.name, &m));
        }
    }
    for (i, s) in subjects.into_iter().flatten().enumerate() {
        let p = format!("subjects[{i}]");
        if s.name.is_empty() {
            out.push(field::required(&format!("{p}.name"), ""));
        }
        match s.kind.as_str() {
            "ServiceAccount" => {
                if !s.name.is_empty() {
                    for m in names::dns1123_subdomain(&s.name) {
                        out.push(invalid_str(&format!("{p}.name"), &s.name, &m));
                    }
                }
                if let Some(g) = s.api_group.as_deref().filter(|g| !g.is_empty()) {
                    out.push(field::not_supported(
                        &format!("{p}.apiGroup"),
                        &json!(g),
                        &[""],
                    ));
                }
                if !namespaced && s.namespace.as_deref().unwrap_or("").is_empty() {
                    out.push(field::required(&format!("{p}.namespace"), ""));
                }
            }
            "User" | "Group" => {
                let g = s.api_group.as_deref().unwrap_or("");
                if g != RBAC_GROUP {
                    out.push(field::not_supported(
                        &format!("{p}.apiGroup"),
                        &json!(g),
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => out.push(field::not_supported(
                &format!("{p}.kind"),
                &json!(other),
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    out
}

fn role_ref_immutable(new: &RoleRef, old: &RoleRef) -> Vec<Cause> {
    if new != old {
        vec![invalid_shown(
            "roleRef",
            &format!(
                "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                new.api_group.as_deref().unwrap_or(""),
                new.kind,
                new.name
            ),
            "cannot change roleRef",
        )]
    } else {
        vec![]
    }
}

// ---------------------------------------------------------- events.k8s.io/v1

fn validate_event_v1(e: &Event) -> Vec<Cause> {
    let mut out = Vec::new();
    if e.event_time.is_none() {
        out.push(field::required("eventTime", ""));
    }
    if e.reporting_controller.as_deref().unwrap_or("").is_empty() {
        out.push(field::required("reportingController", ""));
    }
    if e.reporting_instance.as_deref().unwrap_or("").is_empty() {
        out.push(field::required("reportingInstance", ""));
    }
    if e.action.as_deref().unwrap_or("").is_empty() {
        out.push(field::required("action", ""));
    }
    if e.reason.as_deref().unwrap_or("").is_empty() {
        out.push(field::required("reason", ""));
    }
    let t = e.type_.as_deref().unwrap_or("");
    if t != "Normal" && t != "Warning" {
        out.push(invalid_str("type", t, &format!("has invalid value: {t}")));
    }
    if let Some(n) = e.note.as_deref()
        && n.len() > 1024
    {
        out.push(field::too_long("note", 1024));
    }
    out
}

/// kube's `ValidateEventUpdate` for an events.k8s.io request: the new event
/// passes the legacy checks (an event with an `eventTime` names its
/// reporting controller, instance, action and reason), a changed series is
/// valid, and everything but the series and metadata is immutable. Paths are
/// kube's internal (core) names, as kube reports them.
fn validate_event_v1_update(new: &Event, old: &Event) -> Vec<Cause> {
    let mut out = Vec::new();
    if new.event_time.is_some() {
        let required = [
            ("reportingController", &new.reporting_controller),
            ("reportingInstance", &new.reporting_instance),
            ("action", &new.action),
            ("reason", &new.reason),
        ];
        for (path, v) in required {
            if v.as_deref().unwrap_or("").is_empty() {
                out.push(field::required(path, ""));
            }
        }
    }
    if new.series != old.series
        && let Some(s) = &new.series
        && s.count < 2
    {
        out.push(invalid_str("series.count", "", "should be at least 2"));
    }
    fn shown<T: serde::Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap_or_default()
    }
    let mut immutable = |path: &str, changed: bool, value: String| {
        if changed {
            out.push(invalid_shown(path, &value, "field is immutable"));
        }
    };
    immutable(
        "involvedObject",
        new.regarding != old.regarding,
        shown(&new.regarding),
    );
    immutable("message", new.note != old.note, shown(&new.note));
    immutable(
        "source",
        new.deprecated_source != old.deprecated_source,
        shown(&new.deprecated_source),
    );
    immutable(
        "firstTimestamp",
        new.deprecated_first_timestamp != old.deprecated_first_timestamp,
        shown(&new.deprecated_first_timestamp),
    );
    immutable(
        "lastTimestamp",
        new.deprecated_last_timestamp != old.deprecated_last_timestamp,
        shown(&new.deprecated_last_timestamp),
    );
    immutable(
        "count",
        new.deprecated_count != old.deprecated_count,
        shown(&new.deprecated_count.unwrap_or(0)),
    );
    immutable("reason", new.reason != old.reason, shown(&new.reason));
    immutable("type", new.type_ != old.type_, shown(&new.type_));
    immutable(
        "eventTime",
        new.event_time != old.event_time,
        shown(&new.event_time),
    );
    immutable("action", new.action != old.action, shown(&new.action));
    immutable("related", new.related != old.related, shown(&new.related));
    immutable(
        "reportingController",
        new.reporting_controller != old.reporting_controller,
        shown(&new.reporting_controller),
    );
    immutable(
        "reportingInstance",
        new.reporting_instance != old.reporting_instance,
        shown(&new.reporting_instance),
    );
    out
}

// ----------------------------------------------------------- endpointslices

fn validate_endpoint_slice(s: &EndpointSlice) -> Vec<Cause> {
    let mut out = Vec::new();
    const TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
    if s.address_type.is_empty() {
        out.push(field::required("addressType", ""));
    } else if !TYPES.contains(&s.address_type.as_str()) {
        out.push(field::not_supported(
            "addressType",
            &json!(s.address_type),
            TYPES,
        ));
    }
    for (i, ep) in s.endpoints.iter().flatten().enumerate() {
        let p = format!("endpoints[{i}].addresses");
        if ep.addresses.is_empty() {
            out.push(field::required(&p, "must contain at least 1 address"));
        }
        for (j, a) in ep.addresses.iter().enumerate() {
            let ok = match s.address_type.as_str() {
                "IPv4" => a.parse::<std::net::Ipv4Addr>().is_ok(),
                "IPv6" => a.parse::<std::net::Ipv6Addr>().is_ok(),
                _ => names::is_dns1123_subdomain(a),
            };
            if !ok {
                let detail = match s.address_type.as_str() {
                    "IPv4" => "must be a valid IPv4 address",
                    "IPv6" => "must be a valid IPv6 address",
                    _ => "must be a valid FQDN",
                };
                out.push(invalid_str(&format!("{p}[{j}]"), a, detail));
            }
        }
    }
    for (i, port) in s.ports.iter().flatten().enumerate() {
        if let Some(n) = port.port {
            out.extend(port_range(&format!("ports[{i}].port"), n));
        }
        if let Some(pr) = port.protocol.as_deref()
            && !["SCTP", "TCP", "UDP"].contains(&pr)
        {
            out.push(field::not_supported(
                &format!("ports[{i}].protocol"),
                &json!(pr),
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
    out
}
