//! `apps/v1` kinds: deployments, replicasets, statefulsets, daemonsets,
//! controllerrevisions, with kube-apiserver's defaults
//! (`pkg/apis/apps/v1/defaults.go`) and validation
//! (`pkg/apis/apps/validation/validation.go`).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, RollingUpdateDeployment, StatefulSet,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use super::defaults;
use super::validation::{
    go_selector, invalid_num, invalid_shown, invalid_str, non_negative,
    validate_controller_selector, validate_embedded_name,
};
use crate::printers;
use crate::strategy::Strategy;

/// The `apps/v1` strategies.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<ControllerRevision>::new(info::<ControllerRevision>(
                "controllerrevision",
                &[],
                &[],
                &[],
            ))
            .printer(printers::CONTROLLER_REVISION)
            .validate(|r| non_negative("revision", r.revision))
            .validate_update(|n, o| {
                if n.data != o.data {
                    vec![field::forbidden("data", "field is immutable")]
                } else {
                    vec![]
                }
            }),
        ),
        Arc::new(
            Builtin::<DaemonSet>::new(info::<DaemonSet>(
                "daemonset",
                &["ds"],
                &["all"],
                &["status"],
            ))
            .printer(printers::DAEMON_SET)
            .federated()
            .generation()
            .defaults(default_daemonset)
            .validate_json(validate_daemonset)
            .after_normalize(drop_empty_selector)
            .validate_update(|n, o| selector_immutable(&n.spec.selector, &o.spec.selector))
            .on_create(|obj| set_template_generation(obj, None))
            .on_update(|new, old| set_template_generation(new, Some(old)))
            // daemonSetStatusStrategy resets the spec only.
            .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<Deployment>::new(info::<Deployment>(
                "deployment",
                &["deploy"],
                &["all"],
                &["status", "scale"],
            ))
            .printer(printers::DEPLOYMENT)
            .federated()
            .generation()
            .defaults(default_deployment)
            .validate_json(validate_deployment)
            .after_normalize(drop_empty_selector)
            .validate_update(|n, o| selector_immutable(&n.spec.selector, &o.spec.selector))
            .scale("/spec/replicas", "/status/replicas", Some("/spec/selector"))
            // deploymentStrategy.PrepareForUpdate: an annotation change bumps
            // the generation too (they are copied to the ReplicaSets).
            .on_update(|new, old| bump_generation_if_changed(new, old, "annotations"))
            // deploymentStatusStrategy resets the spec and the labels: a
            // status write may change the annotations.
            .status_writes_metadata()
            .on_status_update(keep_old_labels),
        ),
        Arc::new(
            Builtin::<ReplicaSet>::new(info::<ReplicaSet>(
                "replicaset",
                &["rs"],
                &["all"],
                &["status", "scale"],
            ))
            .printer(printers::REPLICA_SET)
            .federated()
            .generation()
            .defaults(|rs| {
                rs.spec.replicas.get_or_insert(1);
                if let Some(t) = &mut rs.spec.template {
                    defaults::pod_template(t);
                }
            })
            .validate_json(validate_replicaset)
            .after_normalize(drop_empty_selector)
            .validate_update(|n, o| selector_immutable(&n.spec.selector, &o.spec.selector))
            .fields(&["status.replicas"])
            .scale("/spec/replicas", "/status/replicas", Some("/spec/selector"))
            // replicaSetStatusStrategy resets the spec only.
            .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<StatefulSet>::new(info::<StatefulSet>(
                "statefulset",
                &["sts"],
                &["all"],
                &["status", "scale"],
            ))
            .printer(printers::STATEFUL_SET)
            .federated()
            .generation()
            .defaults(default_statefulset)
            .validate_json(validate_statefulset)
            .after_normalize(drop_empty_selector)
            .validate_update(validate_statefulset_update)
            .scale("/spec/replicas", "/status/replicas", Some("/spec/selector"))
            // statefulSetStatusStrategy resets the spec only.
            .status_writes_metadata(),
        ),
    ]
}

/// The annotation apps/v1 carries a DaemonSet's internal
/// `spec.templateGeneration` in.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// kube's daemonSetStrategy: the template generation is 1 on create (or what
/// the client set, if higher), and on update the stored one, plus one when
/// the pod template changed.
fn set_template_generation(obj: &mut Value, old: Option<&Value>) {
    let of = |v: &Value| {
        v.pointer("/metadata/annotations")
            .and_then(|a| a.get(TEMPLATE_GENERATION))
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0)
    };
    let generation = match old {
        None => of(obj).max(1),
        Some(old) if old.pointer("/spec/template") != obj.pointer("/spec/template") => of(old) + 1,
        Some(old) => of(old),
    };
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

/// Bump `metadata.generation` when the metadata `field` (labels,
/// annotations) changed, an absent map being equal to an empty one (kube's
/// `apiequality.Semantic.DeepEqual`). The generic rule bumps it when
/// anything but metadata and status changes; some kinds count a metadata
/// field too.
pub(super) fn bump_generation_if_changed(new: &mut Value, old: &Value, field: &str) {
    let map = |v: &Value| {
        v.get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
            .cloned()
    };
    if map(new) == map(old) {
        return;
    }
    let generation = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("generation".into(), json!(generation + 1));
    }
}

/// A Deployment's status write keeps the stored labels (kube's
/// `deploymentStatusStrategy.PrepareForUpdate`: `newDeployment.Labels =
/// oldDeployment.Labels`).
fn keep_old_labels(new: &mut Value, old: &Value) -> Vec<Cause> {
    let labels = old.pointer("/metadata/labels").cloned();
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        match labels {
            Some(l) => meta.insert("labels".into(), l),
            None => meta.remove("labels"),
        };
    }
    Vec::new()
}

/// `k8s-openapi` has no "unset" for a controller's selector: an absent one
/// encodes as `{}`. Drop it again so validation can say `Required value`, as
/// kube-apiserver does for a nil selector (an empty one is invalid anyway).
fn drop_empty_selector(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && spec
            .get("selector")
            .is_some_and(|s| s.as_object().is_some_and(|m| m.is_empty()))
    {
        spec.remove("selector");
    }
}

fn selector_present(raw: &Value) -> bool {
    raw.pointer("/spec/selector").is_some_and(|s| !s.is_null())
}

fn selector_immutable(new: &LabelSelector, old: &LabelSelector) -> Vec<Cause> {
    if new != old {
        vec![invalid_shown(
            "spec.selector",
            &go_selector(new),
            "field is immutable",
        )]
    } else {
        vec![]
    }
}

fn intstr_value(v: &IntOrString) -> String {
    match v {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// `ValidatePositiveIntOrPercent` + `IsNotMoreThan100Percent`.
fn int_or_percent(path: &str, v: Option<&IntOrString>) -> Vec<Cause> {
    match v {
        Some(IntOrString::Int(i)) if *i < 0 => {
            vec![invalid_num(
                path,
                (*i).into(),
                "must be greater than or equal to 0",
            )]
        }
        Some(IntOrString::String(s)) => match s
            .strip_suffix('%')
            .and_then(|n| n.parse::<i64>().ok())
        {
            None => vec![invalid_str(
                path,
                s,
                "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            )],
            Some(n) if n > 100 => vec![invalid_str(path, s, "must not be greater than 100%")],
            Some(n) if n < 0 => vec![invalid_str(path, s, "must be greater than or equal to 0")],
            _ => vec![],
        },
        _ => vec![],
    }
}

fn is_zero(v: Option<&IntOrString>) -> bool {
    match v {
        None => true,
        Some(IntOrString::Int(i)) => *i == 0,
        Some(IntOrString::String(s)) => s.trim_end_matches('%').parse::<i64>().ok() == Some(0),
    }
}

// --------------------------------------------------------------- deployments

fn default_deployment(d: &mut Deployment) {
    let spec = &mut d.spec;
    spec.replicas.get_or_insert(1);
    let strategy = spec.strategy.get_or_insert_with(Default::default);
    if strategy.type_.as_deref().unwrap_or("").is_empty() {
        strategy.type_ = Some("RollingUpdate".into());
    }
    if strategy.type_.as_deref() == Some("RollingUpdate") {
        let ru = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDeployment::default);
        ru.max_unavailable
            .get_or_insert_with(|| IntOrString::String("25%".into()));
        ru.max_surge
            .get_or_insert_with(|| IntOrString::String("25%".into()));
    }
    spec.revision_history_limit.get_or_insert(10);
    spec.progress_deadline_seconds.get_or_insert(600);
    defaults::pod_template(&mut spec.template);
}

fn validate_deployment(d: &Deployment, raw: &Value) -> Vec<Cause> {
    let spec = &d.spec;
    let mut out = Vec::new();
    out.extend(non_negative("spec.replicas", spec.replicas.map(i64::from)));
    out.extend(validate_controller_selector(
        "spec",
        "deployment",
        selector_present(raw),
        &spec.selector,
        &spec.template,
    ));
    if let Some(s) = &spec.strategy {
        match s.type_.as_deref().unwrap_or("") {
            "Recreate" => {
                if s.rolling_update.is_some() {
                    out.push(field::forbidden(
                        "spec.strategy.rollingUpdate",
                        "may not be specified when strategy `type` is 'Recreate'",
                    ));
                }
            }
            "RollingUpdate" => {
                if let Some(ru) = &s.rolling_update {
                    let p = "spec.strategy.rollingUpdate";
                    out.extend(int_or_percent(
                        &format!("{p}.maxUnavailable"),
                        ru.max_unavailable.as_ref(),
                    ));
                    out.extend(int_or_percent(
                        &format!("{p}.maxSurge"),
                        ru.max_surge.as_ref(),
                    ));
                    if is_zero(ru.max_unavailable.as_ref()) && is_zero(ru.max_surge.as_ref()) {
                        let shown = ru
                            .max_unavailable
                            .as_ref()
                            .map(intstr_value)
                            .unwrap_or_default();
                        out.push(invalid_shown(
                            &format!("{p}.maxUnavailable"),
                            &shown,
                            "may not be 0 when `maxSurge` is 0",
                        ));
                    }
                }
            }
            "" => out.push(field::required("spec.strategy.type", "")),
            other => out.push(field::not_supported(
                "spec.strategy.type",
                &json!(other),
                &["Recreate", "RollingUpdate"],
            )),
        }
    }
    out.extend(non_negative(
        "spec.revisionHistoryLimit",
        spec.revision_history_limit.map(i64::from),
    ));
    out.extend(non_negative(
        "spec.minReadySeconds",
        spec.min_ready_seconds.map(i64::from),
    ));
    if let Some(pds) = spec.progress_deadline_seconds {
        out.extend(non_negative(
            "spec.progressDeadlineSeconds",
            Some(pds.into()),
        ));
        if pds <= spec.min_ready_seconds.unwrap_or(0) {
            out.push(invalid_num(
                "spec.progressDeadlineSeconds",
                pds.into(),
                "must be greater than minReadySeconds",
            ));
        }
    }
    out
}

// --------------------------------------------------------------- replicasets

fn validate_replicaset(rs: &ReplicaSet, raw: &Value) -> Vec<Cause> {
    let mut out = non_negative("spec.replicas", rs.spec.replicas.map(i64::from));
    out.extend(non_negative(
        "spec.minReadySeconds",
        rs.spec.min_ready_seconds.map(i64::from),
    ));
    match &rs.spec.template {
        Some(t) => out.extend(validate_controller_selector(
            "spec",
            // kube-apiserver says "deployment" here too.
            "deployment",
            selector_present(raw),
            &rs.spec.selector,
            t,
        )),
        None => out.push(field::required("spec.template", "")),
    }
    out
}

// -------------------------------------------------------------- statefulsets

fn default_statefulset(s: &mut StatefulSet) {
    let spec = &mut s.spec;
    if spec
        .pod_management_policy
        .as_deref()
        .unwrap_or("")
        .is_empty()
    {
        spec.pod_management_policy = Some("OrderedReady".into());
    }
    let us = spec.update_strategy.get_or_insert_with(Default::default);
    if us.type_.as_deref().unwrap_or("").is_empty() {
        us.type_ = Some("RollingUpdate".into());
        us.rolling_update.get_or_insert_with(Default::default);
    }
    if us.type_.as_deref() == Some("RollingUpdate")
        && let Some(ru) = &mut us.rolling_update
    {
        ru.partition.get_or_insert(0);
    }
    let rp = spec
        .persistent_volume_claim_retention_policy
        .get_or_insert_with(Default::default);
    if rp.when_deleted.as_deref().unwrap_or("").is_empty() {
        rp.when_deleted = Some("Retain".into());
    }
    if rp.when_scaled.as_deref().unwrap_or("").is_empty() {
        rp.when_scaled = Some("Retain".into());
    }
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    defaults::pod_template(&mut spec.template);
    for pvc in spec.volume_claim_templates.iter_mut().flatten() {
        defaults::pvc(pvc);
    }
}

fn validate_statefulset(s: &StatefulSet, raw: &Value) -> Vec<Cause> {
    let spec = &s.spec;
    let mut out = Vec::new();
    match spec.pod_management_policy.as_deref().unwrap_or("") {
        "OrderedReady" | "Parallel" => {}
        "" => out.push(field::required("spec.podManagementPolicy", "")),
        other => out.push(invalid_str(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    if let Some(us) = &spec.update_strategy {
        match us.type_.as_deref().unwrap_or("") {
            "RollingUpdate" => {
                if let Some(p) = us.rolling_update.as_ref().and_then(|r| r.partition) {
                    out.extend(non_negative(
                        "spec.updateStrategy.rollingUpdate.partition",
                        Some(p.into()),
                    ));
                }
            }
            "OnDelete" => {
                if us.rolling_update.is_some() {
                    out.push(field::forbidden(
                        "spec.updateStrategy.rollingUpdate",
                        "only allowed for updateStrategy 'RollingUpdate'",
                    ));
                }
            }
            "" => out.push(field::required("spec.updateStrategy", "")),
            other => out.push(invalid_str(
                "spec.updateStrategy",
                other,
                "must be 'RollingUpdate' or 'OnDelete'",
            )),
        }
    }
    out.extend(non_negative("spec.replicas", spec.replicas.map(i64::from)));
    out.extend(non_negative(
        "spec.minReadySeconds",
        spec.min_ready_seconds.map(i64::from),
    ));
    out.extend(validate_controller_selector(
        "spec",
        "statefulset",
        selector_present(raw),
        &spec.selector,
        &spec.template,
    ));
    for (i, pvc) in spec.volume_claim_templates.iter().flatten().enumerate() {
        out.extend(validate_embedded_name(
            &format!("spec.volumeClaimTemplates[{i}].metadata.name"),
            pvc.metadata.name.as_deref(),
        ));
    }
    out
}

const STS_UPDATE_MSG: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

fn validate_statefulset_update(new: &StatefulSet, old: &StatefulSet) -> Vec<Cause> {
    let mask = |s: &StatefulSet| {
        let mut spec = s.spec.clone();
        spec.replicas = None;
        spec.ordinals = None;
        spec.template = PodTemplateSpec::default();
        spec.update_strategy = None;
        spec.revision_history_limit = None;
        spec.persistent_volume_claim_retention_policy = None;
        spec.min_ready_seconds = None;
        // Claim templates are compared without their (defaulted) status.
        for t in spec.volume_claim_templates.iter_mut().flatten() {
            t.status = None;
        }
        spec
    };
    if mask(new) != mask(old) {
        vec![field::forbidden("spec", STS_UPDATE_MSG)]
    } else {
        vec![]
    }
}

// ---------------------------------------------------------------- daemonsets

fn default_daemonset(d: &mut DaemonSet) {
    let spec = &mut d.spec;
    let us = spec.update_strategy.get_or_insert_with(Default::default);
    if us.type_.as_deref().unwrap_or("").is_empty() {
        us.type_ = Some("RollingUpdate".into());
    }
    if us.type_.as_deref() == Some("RollingUpdate") {
        let ru = us.rolling_update.get_or_insert_with(Default::default);
        ru.max_unavailable.get_or_insert(IntOrString::Int(1));
        ru.max_surge.get_or_insert(IntOrString::Int(0));
    }
    spec.revision_history_limit.get_or_insert(10);
    defaults::pod_template(&mut spec.template);
}

fn validate_daemonset(d: &DaemonSet, raw: &Value) -> Vec<Cause> {
    let spec = &d.spec;
    let mut out = validate_controller_selector(
        "spec",
        "daemonset",
        selector_present(raw),
        &spec.selector,
        &spec.template,
    );
    if let Some(us) = &spec.update_strategy {
        match us.type_.as_deref().unwrap_or("") {
            "OnDelete" => {}
            "RollingUpdate" => {
                if let Some(ru) = &us.rolling_update {
                    let p = "spec.updateStrategy.rollingUpdate";
                    out.extend(int_or_percent(
                        &format!("{p}.maxUnavailable"),
                        ru.max_unavailable.as_ref(),
                    ));
                    out.extend(int_or_percent(
                        &format!("{p}.maxSurge"),
                        ru.max_surge.as_ref(),
                    ));
                    if is_zero(ru.max_unavailable.as_ref()) && is_zero(ru.max_surge.as_ref()) {
                        out.push(invalid_shown(
                            &format!("{p}.maxUnavailable"),
                            &ru.max_unavailable
                                .as_ref()
                                .map(intstr_value)
                                .unwrap_or_default(),
                            "may not be 0 when `maxSurge` is 0",
                        ));
                    }
                }
            }
            "" => out.push(field::required("spec.updateStrategy.type", "")),
            other => out.push(field::not_supported(
                "spec.updateStrategy.type",
                &json!(other),
                &["OnDelete", "RollingUpdate"],
            )),
        }
    }
    out.extend(non_negative(
        "spec.minReadySeconds",
        spec.min_ready_seconds.map(i64::from),
    ));
    out.extend(non_negative(
        "spec.revisionHistoryLimit",
        spec.revision_history_limit.map(i64::from),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metadata_field_change_bumps_the_generation_once_and_empty_is_absent() {
        let old = json!({"metadata": {"generation": 3, "annotations": {"a": "1"}}});
        let mut same = json!({"metadata": {"generation": 3, "annotations": {"a": "1"}}});
        bump_generation_if_changed(&mut same, &old, "annotations");
        assert_eq!(same["metadata"]["generation"], 3);
        let mut changed = json!({"metadata": {"generation": 3, "annotations": {"a": "2"}}});
        bump_generation_if_changed(&mut changed, &old, "annotations");
        assert_eq!(changed["metadata"]["generation"], 4);
        let bare = json!({"metadata": {"generation": 1}});
        let mut empty = json!({"metadata": {"generation": 1, "labels": {}}});
        bump_generation_if_changed(&mut empty, &bare, "labels");
        assert_eq!(empty["metadata"]["generation"], 1);
    }

    #[test]
    fn a_daemonsets_template_generation_starts_at_1_and_follows_the_template() {
        let mut ds = json!({"metadata": {}, "spec": {"template": {"spec": {"a": 1}}}});
        set_template_generation(&mut ds, None);
        assert_eq!(ds["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        let mut relabeled = ds.clone();
        relabeled["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("9");
        set_template_generation(&mut relabeled, Some(&ds));
        assert_eq!(
            relabeled["metadata"]["annotations"][TEMPLATE_GENERATION],
            "1"
        );
        let mut changed = ds.clone();
        changed["spec"]["template"]["spec"]["a"] = json!(2);
        set_template_generation(&mut changed, Some(&ds));
        assert_eq!(changed["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
    }
}
