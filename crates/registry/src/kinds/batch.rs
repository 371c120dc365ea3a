//! `batch/v1` kinds: jobs and cronjobs, with kube-apiserver's defaults
//! (`pkg/apis/batch/v1/defaults.go`), the job strategy's generated selector
//! (`controller-uid` labels) and validation (`pkg/apis/batch/validation`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{CronJob, Job, JobSpec};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;

use super::builtin::{Builtin, info};
use super::defaults;
use super::validation::{
    go_map, invalid_shown, invalid_str, non_negative, positive, selector_matches,
    validate_pod_template, validate_selector,
};
use crate::printers;
use crate::strategy::Strategy;

/// The `batch/v1` strategies.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<CronJob>::new(info::<CronJob>("cronjob", &["cj"], &["all"], &["status"]))
                .printer(printers::CRON_JOB)
                .federated()
                .generation()
                .defaults(default_cronjob)
                .validate(validate_cronjob)
                // Go's JobTemplateSpec and PodTemplateSpec hold their
                // ObjectMeta by value: `metadata: {}` when unset.
                .after_normalize(|obj| {
                    for path in ["/spec/jobTemplate", "/spec/jobTemplate/spec/template"] {
                        if let Some(t) = obj.pointer_mut(path).and_then(Value::as_object_mut) {
                            t.entry("metadata").or_insert_with(|| json!({}));
                        }
                    }
                })
                // cronJobStatusStrategy resets the spec only.
                .status_writes_metadata(),
        ),
        Arc::new(
            Builtin::<Job>::new(info::<Job>("job", &[], &["all"], &["status"]))
                .printer(printers::JOB)
                .federated()
                .generation()
                .defaults(default_job)
                .validate(validate_job)
                .validate_update(validate_job_update)
                .fields(&["status.successful"])
                .on_create(prepare_job)
                // jobStatusStrategy resets the spec only.
                .status_writes_metadata()
                // batch/v1 orphans the pods by default (jobStrategy's
                // DefaultGarbageCollectionPolicy), and says so.
                .orphans_by_default()
                .admission(|_| Ok(Arc::new(JobDeleteWarning))),
        ),
    ]
}

/// kube's job storage `Delete`: a delete that names no propagation policy
/// (so orphans the pods) is answered with this warning.
const JOB_DELETE_WARNING: &str = "child pods are preserved by default when jobs are deleted; \
     set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to \
     suppress this warning";

struct JobDeleteWarning;

#[async_trait::async_trait]
impl crate::admission::Admission for JobDeleteWarning {
    async fn validate(
        &self,
        attrs: &crate::admission::Attributes<'_>,
        _obj: &Value,
    ) -> Result<Vec<String>, ubernetes_apimachinery::ApiError> {
        let unset = attrs
            .options
            .is_none_or(|o| o.get("propagationPolicy").is_none());
        Ok(
            if attrs.operation == crate::admission::Operation::Delete && unset {
                vec![JOB_DELETE_WARNING.to_string()]
            } else {
                Vec::new()
            },
        )
    }
}

fn default_job_spec(spec: &mut JobSpec) {
    if spec.completions.is_none() && spec.parallelism.is_none() {
        spec.completions = Some(1);
        spec.parallelism = Some(1);
    }
    spec.parallelism.get_or_insert(1);
    if spec.backoff_limit.is_none() {
        spec.backoff_limit = Some(if spec.backoff_limit_per_index.is_some() {
            i32::MAX
        } else {
            6
        });
    }
    spec.completion_mode
        .get_or_insert_with(|| "NonIndexed".into());
    spec.suspend.get_or_insert(false);
    if spec.pod_replacement_policy.is_none() {
        spec.pod_replacement_policy = Some(
            if spec.pod_failure_policy.is_some() {
                "Failed"
            } else {
                "TerminatingOrFailed"
            }
            .into(),
        );
    }
    if let Some(pfp) = &mut spec.pod_failure_policy {
        for rule in pfp.rules.iter_mut() {
            for c in rule.on_pod_conditions.iter_mut().flatten() {
                if c.status.as_deref().unwrap_or("").is_empty() {
                    c.status = Some("True".into());
                }
            }
        }
    }
    defaults::pod_template(&mut spec.template);
}

fn default_job(j: &mut Job) {
    let spec = j.spec.get_or_insert_with(Default::default);
    default_job_spec(spec);
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone());
    if let Some(l) = labels
        && j.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty)
    {
        j.metadata.labels = Some(l);
    }
}

const JOB_NAME: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
const CONTROLLER_UID: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The job strategy's `PrepareForCreate`: `manualSelector: false` unless
/// set, and without a manual selector, the generated `controller-uid`
/// selector and the `job-name` / `controller-uid` template labels.
fn prepare_job(obj: &mut Value) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    let manual = spec.get("manualSelector").and_then(Value::as_bool);
    if manual.is_none() {
        spec["manualSelector"] = json!(false);
    }
    if manual == Some(true) {
        return;
    }
    if !spec.get("template").is_some_and(Value::is_object) {
        spec["template"] = json!({});
    }
    if !spec["template"]
        .get("metadata")
        .is_some_and(Value::is_object)
    {
        spec["template"]["metadata"] = json!({});
    }
    let meta = &mut spec["template"]["metadata"];
    if !meta.get("labels").is_some_and(Value::is_object) {
        meta["labels"] = json!({});
    }
    if let Some(labels) = meta["labels"].as_object_mut() {
        for k in JOB_NAME {
            labels.entry(k).or_insert_with(|| json!(name));
        }
        for k in CONTROLLER_UID {
            labels.entry(k).or_insert_with(|| json!(uid));
        }
    }
    if !spec.get("selector").is_some_and(Value::is_object) {
        spec["selector"] = json!({});
    }
    if !spec["selector"]
        .get("matchLabels")
        .is_some_and(Value::is_object)
    {
        spec["selector"]["matchLabels"] = json!({});
    }
    if let Some(ml) = spec["selector"]["matchLabels"].as_object_mut() {
        ml.entry(CONTROLLER_UID[1]).or_insert_with(|| json!(uid));
    }
}

fn validate_job_template(path: &str, t: &PodTemplateSpec) -> Vec<Cause> {
    let mut out = validate_pod_template(path, t);
    let rp = t
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("");
    if rp != "OnFailure" && rp != "Never" {
        out.push(field::not_supported(
            &format!("{path}.spec.restartPolicy"),
            &json!(rp),
            &["OnFailure", "Never"],
        ));
    }
    out
}

fn validate_job_spec(path: &str, spec: &JobSpec, check_selector: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    out.extend(non_negative(
        &format!("{path}.parallelism"),
        spec.parallelism.map(i64::from),
    ));
    out.extend(non_negative(
        &format!("{path}.completions"),
        spec.completions.map(i64::from),
    ));
    out.extend(non_negative(
        &format!("{path}.backoffLimit"),
        spec.backoff_limit.map(i64::from),
    ));
    out.extend(positive(
        &format!("{path}.activeDeadlineSeconds"),
        spec.active_deadline_seconds,
    ));
    out.extend(non_negative(
        &format!("{path}.ttlSecondsAfterFinished"),
        spec.ttl_seconds_after_finished.map(i64::from),
    ));
    if let Some(m) = spec.completion_mode.as_deref() {
        if m != "NonIndexed" && m != "Indexed" {
            out.push(field::not_supported(
                &format!("{path}.completionMode"),
                &json!(m),
                &["NonIndexed", "Indexed"],
            ));
        }
        if m == "Indexed" && spec.completions.is_none() {
            out.push(field::required(
                &format!("{path}.completions"),
                "when completion mode is Indexed",
            ));
        }
    }
    if check_selector {
        match &spec.selector {
            None => out.push(field::required(&format!("{path}.selector"), "")),
            Some(sel) => {
                out.extend(validate_selector(&format!("{path}.selector"), sel));
                let labels = spec
                    .template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.as_ref());
                if !selector_matches(sel, labels) {
                    out.push(invalid_shown(
                        &format!("{path}.template.metadata.labels"),
                        &go_map(labels),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        }
    }
    out.extend(validate_job_template(
        &format!("{path}.template"),
        &spec.template,
    ));
    out
}

fn validate_job(j: &Job) -> Vec<Cause> {
    match &j.spec {
        Some(spec) => validate_job_spec("spec", spec, true),
        None => vec![field::required("spec.selector", "")],
    }
}

fn validate_job_update(new: &Job, old: &Job) -> Vec<Cause> {
    let mut out = Vec::new();
    let (n, o) = (
        new.spec.clone().unwrap_or_default(),
        old.spec.clone().unwrap_or_default(),
    );
    if n.selector != o.selector {
        out.push(invalid_shown(
            "spec.selector",
            &n.selector
                .as_ref()
                .map(super::validation::go_selector)
                .unwrap_or_else(|| "nil".into()),
            "field is immutable",
        ));
    }
    // The template may change only while the job is suspended (scheduling directives).
    if n.template != o.template && o.suspend != Some(true) {
        out.push(invalid_shown(
            "spec.template",
            "core.PodTemplateSpec{...}",
            "field is immutable",
        ));
    }
    if n.completion_mode != o.completion_mode {
        out.push(invalid_str(
            "spec.completionMode",
            n.completion_mode.as_deref().unwrap_or(""),
            "field is immutable",
        ));
    }
    if n.completions != o.completions && n.completion_mode.as_deref() != Some("Indexed") {
        out.push(Cause::new(
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: field is immutable",
                n.completions.map_or("null".to_string(), |c| c.to_string())
            ),
            "spec.completions",
        ));
    }
    out
}

// ------------------------------------------------------------------ cronjobs

fn default_cronjob(c: &mut CronJob) {
    let spec = &mut c.spec;
    if spec.concurrency_policy.as_deref().unwrap_or("").is_empty() {
        spec.concurrency_policy = Some("Allow".into());
    }
    spec.suspend.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(3);
    spec.failed_jobs_history_limit.get_or_insert(1);
    if let Some(js) = &mut spec.job_template.spec {
        defaults::pod_template(&mut js.template);
    }
}

/// A standard 5-field cron expression or an `@` descriptor.
fn cron_ok(s: &str) -> bool {
    let s = s.trim();
    let s = s
        .strip_prefix("TZ=")
        .or_else(|| s.strip_prefix("CRON_TZ="))
        .map_or(s, |rest| rest.split_once(' ').map_or("", |(_, r)| r.trim()));
    if let Some(d) = s.strip_prefix('@') {
        return matches!(
            d,
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly"
        ) || d.starts_with("every ");
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    fields.len() == 5
        && fields.iter().all(|f| {
            f.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | '/' | ',' | '-' | '?'))
        })
}

fn validate_cronjob(c: &CronJob) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(name) = c.metadata.name.as_deref()
        && name.len() > 52
    {
        out.push(invalid_str(
            "metadata.name",
            name,
            "must be no more than 52 characters",
        ));
    }
    let spec = &c.spec;
    if spec.schedule.is_empty() {
        out.push(field::required("spec.schedule", ""));
    } else if !cron_ok(&spec.schedule) {
        out.push(invalid_str(
            "spec.schedule",
            &spec.schedule,
            &format!(
                "expected exactly 5 fields, found {}: {}",
                spec.schedule.split_whitespace().count(),
                spec.schedule
            ),
        ));
    }
    if let Some(p) = spec.concurrency_policy.as_deref()
        && !["Allow", "Forbid", "Replace"].contains(&p)
    {
        out.push(field::not_supported(
            "spec.concurrencyPolicy",
            &json!(p),
            &["Allow", "Forbid", "Replace"],
        ));
    }
    out.extend(non_negative(
        "spec.startingDeadlineSeconds",
        spec.starting_deadline_seconds,
    ));
    out.extend(non_negative(
        "spec.successfulJobsHistoryLimit",
        spec.successful_jobs_history_limit.map(i64::from),
    ));
    out.extend(non_negative(
        "spec.failedJobsHistoryLimit",
        spec.failed_jobs_history_limit.map(i64::from),
    ));
    match &spec.job_template.spec {
        Some(js) => {
            // The selector is generated per job, so none is required here.
            out.extend(validate_job_spec("spec.jobTemplate.spec", js, false));
        }
        None => out.push(field::required(
            "spec.jobTemplate.spec.template.spec.containers",
            "",
        )),
    }
    out
}
