//! `flowcontrol.apiserver.k8s.io/v1`, API Priority and Fairness' objects:
//! FlowSchemas and PriorityLevelConfigurations (both with `status`), with
//! kube's defaults (`matchingPrecedence: 1000`; `nominalConcurrencyShares:
//! 30`, `lendablePercent: 0`, queuing `64/8/50`), the main validations of
//! `pkg/apis/flowcontrol/validation`, and kube-apiserver's bootstrap
//! configuration: [`bootstrap_apf_configuration`] creates the mandatory and
//! suggested objects as its `priority-and-fairness-config-producer` hook
//! does, and sets each bootstrap FlowSchema's `Dangling` condition as its
//! config controller does.
//!
//! What is not here: requests are not classified nor throttled by these
//! objects (this server has no APF filter), and the `Dangling` condition of
//! a FlowSchema a client creates is not maintained.

use std::sync::Arc;

use k8s_openapi::api::flowcontrol::v1::{
    FlowSchema, PriorityLevelConfiguration, PriorityLevelConfigurationSpec,
};
use serde_json::{Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, Cause};

use super::builtin::{Builtin, info};
use super::validation::invalid_num;
use crate::printers;
use crate::registry::Registry;
use crate::store::WriteOptions;
use crate::strategy::Strategy;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// The strategies of `flowcontrol.apiserver.k8s.io/v1`, in discovery order.
pub fn strategies() -> Vec<Arc<dyn Strategy>> {
    vec![
        Arc::new(
            Builtin::<FlowSchema>::new(info::<FlowSchema>("flowschema", &[], &[], &["status"]))
                .printer(printers::FLOW_SCHEMA)
                .federated()
                .generation()
                .defaults(|fs| {
                    fs.spec.matching_precedence.get_or_insert(1000);
                })
                .validate(validate_flow_schema)
                .on_create(super::resource::empty_status),
        ),
        Arc::new(
            Builtin::<PriorityLevelConfiguration>::new(info::<PriorityLevelConfiguration>(
                "prioritylevelconfiguration",
                &[],
                &[],
                &["status"],
            ))
            .printer(printers::PRIORITY_LEVEL_CONFIGURATION)
            .federated()
            .generation()
            .defaults(|pl| default_priority_level(&mut pl.spec))
            .validate(|pl| validate_priority_level(&pl.spec))
            .on_create(super::resource::empty_status),
        ),
    ]
}

fn validate_flow_schema(fs: &FlowSchema) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = &fs.spec;
    if let Some(p) = spec.matching_precedence
        && !(1..=10000).contains(&p)
    {
        out.push(invalid_num(
            "spec.matchingPrecedence",
            p.into(),
            "must be between 1 and 10000, inclusive",
        ));
    }
    if spec.priority_level_configuration.name.is_empty() {
        out.push(field::required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        ));
    }
    if let Some(dm) = &spec.distinguisher_method
        && dm.type_ != "ByUser"
        && dm.type_ != "ByNamespace"
    {
        out.push(field::not_supported(
            "spec.distinguisherMethod.type",
            &Value::String(dm.type_.clone()),
            &["ByNamespace", "ByUser"],
        ));
    }
    for (i, rule) in spec.rules.iter().flatten().enumerate() {
        let at = format!("spec.rules[{i}]");
        if rule.subjects.is_empty() {
            out.push(field::required(
                &format!("{at}.subjects"),
                "subjects must contain at least one value",
            ));
        }
        let no_rules = rule.resource_rules.as_ref().is_none_or(Vec::is_empty)
            && rule.non_resource_rules.as_ref().is_none_or(Vec::is_empty);
        if no_rules {
            out.push(field::required(
                &at,
                "at least one of resourceRules and nonResourceRules has to be non-empty",
            ));
        }
        for (j, s) in rule.subjects.iter().enumerate() {
            let kinds = ["Group", "ServiceAccount", "User"];
            if !kinds.contains(&s.kind.as_str()) {
                out.push(field::not_supported(
                    &format!("{at}.subjects[{j}].kind"),
                    &Value::String(s.kind.clone()),
                    &kinds,
                ));
            }
        }
    }
    out
}

/// kube's `SetDefaults_PriorityLevelConfiguration` and friends.
fn default_priority_level(spec: &mut PriorityLevelConfigurationSpec) {
    if let Some(l) = spec.limited.as_mut() {
        l.nominal_concurrency_shares.get_or_insert(30);
        l.lendable_percent.get_or_insert(0);
        if l.limit_response.type_ == "Queue"
            && let Some(q) = l.limit_response.queuing.as_mut()
        {
            q.queues.get_or_insert(64);
            q.hand_size.get_or_insert(8);
            q.queue_length_limit.get_or_insert(50);
        }
    }
    if let Some(e) = spec.exempt.as_mut() {
        e.nominal_concurrency_shares.get_or_insert(0);
        e.lendable_percent.get_or_insert(0);
    }
}

fn validate_priority_level(spec: &PriorityLevelConfigurationSpec) -> Vec<Cause> {
    let mut out = Vec::new();
    match spec.type_.as_str() {
        "Limited" => match &spec.limited {
            None => out.push(field::required(
                "spec.limited",
                "must not be empty when type is Limited",
            )),
            Some(l) => {
                if let Some(n) = l.nominal_concurrency_shares
                    && n < 0
                {
                    out.push(invalid_num(
                        "spec.limited.nominalConcurrencyShares",
                        n.into(),
                        "must be a non-negative integer",
                    ));
                }
                if let Some(p) = l.lendable_percent
                    && !(0..=100).contains(&p)
                {
                    out.push(invalid_num(
                        "spec.limited.lendablePercent",
                        p.into(),
                        "must be between 0 and 100, inclusive",
                    ));
                }
                let r = &l.limit_response;
                match r.type_.as_str() {
                    "Queue" => match &r.queuing {
                        None => out.push(field::required(
                            "spec.limited.limitResponse.queuing",
                            "must not be empty if limited.limitResponse.type is Limited",
                        )),
                        Some(q) => {
                            let queues = q.queues.unwrap_or(64);
                            let hand = q.hand_size.unwrap_or(8);
                            if queues <= 0 {
                                out.push(invalid_num(
                                    "spec.limited.limitResponse.queuing.queues",
                                    queues.into(),
                                    "must be positive",
                                ));
                            }
                            if hand <= 0 {
                                out.push(invalid_num(
                                    "spec.limited.limitResponse.queuing.handSize",
                                    hand.into(),
                                    "must be positive",
                                ));
                            } else if queues > 0 && hand > queues {
                                out.push(invalid_num(
                                    "spec.limited.limitResponse.queuing.handSize",
                                    hand.into(),
                                    &format!("should not be greater than queues ({queues})"),
                                ));
                            }
                            if let Some(n) = q.queue_length_limit
                                && n <= 0
                            {
                                out.push(invalid_num(
                                    "spec.limited.limitResponse.queuing.queueLengthLimit",
                                    n.into(),
                                    "must be positive",
                                ));
                            }
                        }
                    },
                    "Reject" => {
                        if r.queuing.is_some() {
                            out.push(field::forbidden(
                                "spec.limited.limitResponse.queuing",
                                "must be nil if limited.limitResponse.type is not Limited",
                            ));
                        }
                    }
                    other => out.push(field::not_supported(
                        "spec.limited.limitResponse.type",
                        &Value::String(other.into()),
                        &["Queue", "Reject"],
                    )),
                }
                if spec.exempt.is_some() {
                    out.push(field::forbidden(
                        "spec.exempt",
                        "must be nil if the type is Limited",
                    ));
                }
            }
        },
        "Exempt" => {
            if spec.limited.is_some() {
                out.push(field::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
        }
        other => out.push(field::not_supported(
            "spec.type",
            &Value::String(other.into()),
            &["Exempt", "Limited"],
        )),
    }
    out
}

/// kube-apiserver 1.36.2's mandatory and suggested FlowSchemas and
/// PriorityLevelConfigurations (`k8s.io/apiserver/pkg/apis/flowcontrol/
/// bootstrap/default.go`), as it stores them: dumped from a real
/// kube-apiserver 1.36.2 with `kubectl get flowschemas,
/// prioritylevelconfigurations -o json`, keeping name, the
/// `apf.kubernetes.io/autoupdate-spec` annotation and spec.
const BOOTSTRAP: &str = include_str!("flowcontrol_bootstrap.json");

/// The bootstrap objects: (PriorityLevelConfigurations, FlowSchemas).
pub fn bootstrap_objects() -> (Vec<Value>, Vec<Value>) {
    let all: Value = serde_json::from_str(BOOTSTRAP).unwrap_or_default();
    let list = |k: &str| all[k].as_array().cloned().unwrap_or_default();
    (list("priorityLevelConfigurations"), list("flowSchemas"))
}

/// The bootstrap object names: (PriorityLevelConfigurations, FlowSchemas).
pub fn bootstrap_names() -> (Vec<String>, Vec<String>) {
    let (pls, fss) = bootstrap_objects();
    let names = |v: Vec<Value>| {
        v.iter()
            .filter_map(|o| o.pointer("/metadata/name")?.as_str().map(String::from))
            .collect()
    };
    (names(pls), names(fss))
}

/// kube-apiserver's `priority-and-fairness-config-producer` hook: the
/// bootstrap PriorityLevelConfigurations, then the FlowSchemas, created
/// when missing (an existing object is left as it is, also when a user
/// changed it), then each bootstrap FlowSchema's `Dangling` condition
/// (`False`, reason `Found`, when its priority level exists). Idempotent,
/// and safe when several replicas run it: a create that loses is a 409.
pub async fn bootstrap_apf_configuration(registry: &Registry) -> Result<(), ApiError> {
    let (Some(pls), Some(fss)) = (
        registry.get(GROUP, "v1", "prioritylevelconfigurations"),
        registry.get(GROUP, "v1", "flowschemas"),
    ) else {
        return Ok(());
    };
    let (pl_objs, fs_objs) = bootstrap_objects();
    let mut created = 0;
    for (store, objs) in [(&pls, pl_objs), (&fss, fs_objs)] {
        for obj in objs {
            match store
                .create(None, None, obj, &WriteOptions::default())
                .await
            {
                Ok(_) => created += 1,
                Err(ApiError { code: 409, .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
    let (_, fs_names) = bootstrap_names();
    for name in &fs_names {
        let fs = match fss.get_value(None, name).await {
            Ok(v) => v,
            Err(ApiError { code: 404, .. }) => continue,
            Err(e) => return Err(e),
        };
        let already = fs
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Dangling"));
        if already {
            continue;
        }
        let pl = fs
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let exists = pls.get_value(None, &pl).await.is_ok();
        let condition = dangling_condition(&pl, exists);
        fss.patch(
            None,
            name,
            Some("status"),
            &WriteOptions::default(),
            |cur| {
                let mut next = cur.clone();
                next["status"] = json!({"conditions": [condition.clone()]});
                Ok(next)
            },
        )
        .await?;
    }
    tracing::info!(
        created,
        "API Priority and Fairness bootstrap configuration in place"
    );
    Ok(())
}

/// The `Dangling` condition kube's APF config controller writes.
fn dangling_condition(pl: &str, exists: bool) -> Value {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    if exists {
        json!({
            "type": "Dangling", "status": "False", "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named \"{pl}\" and it exists"),
            "lastTransitionTime": now,
        })
    } else {
        json!({
            "type": "Dangling", "status": "True", "reason": "NotFound",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named \"{pl}\" but there is no such object"),
            "lastTransitionTime": now,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;

    #[test]
    fn bootstrap_has_kube_mandatory_and_suggested_objects() {
        let (pls, fss) = bootstrap_names();
        for pl in [
            "exempt",
            "catch-all",
            "system",
            "node-high",
            "leader-election",
            "workload-high",
            "workload-low",
            "global-default",
        ] {
            assert!(
                pls.iter().any(|n| n == pl),
                "missing PriorityLevelConfiguration {pl}"
            );
        }
        assert_eq!(pls.len(), 8);
        for fs in [
            "exempt",
            "catch-all",
            "probes",
            "system-nodes",
            "system-node-high",
            "system-leader-election",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
        ] {
            assert!(fss.iter().any(|n| n == fs), "missing FlowSchema {fs}");
        }
        assert_eq!(fss.len(), 11);
    }

    #[test]
    fn bootstrap_objects_decode_and_validate_as_kube_stored_them() {
        let (pls, fss) = bootstrap_objects();
        for pl in pls {
            let typed: PriorityLevelConfiguration = serde_json::from_value(pl).unwrap();
            let mut spec = typed.spec.clone();
            default_priority_level(&mut spec);
            assert_eq!(spec, typed.spec, "kube stores bootstrap objects defaulted");
            assert!(validate_priority_level(&typed.spec).is_empty());
        }
        for fs in fss {
            let typed: FlowSchema = serde_json::from_value(fs).unwrap();
            assert!(validate_flow_schema(&typed).is_empty(), "{typed:?}");
        }
    }

    #[test]
    fn priority_level_defaults_and_queuing_requirement() {
        let mut spec: PriorityLevelConfigurationSpec = serde_json::from_value(json!({
            "type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}
        }))
        .unwrap();
        default_priority_level(&mut spec);
        let l = spec.limited.as_ref().unwrap();
        assert_eq!(l.nominal_concurrency_shares, Some(30));
        assert_eq!(l.lendable_percent, Some(0));
        let q = l.limit_response.queuing.as_ref().unwrap();
        assert_eq!(
            (q.queues, q.hand_size, q.queue_length_limit),
            (Some(64), Some(8), Some(50))
        );
        let bad: PriorityLevelConfigurationSpec = serde_json::from_value(json!({
            "type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}
        }))
        .unwrap();
        let errs = validate_priority_level(&bad);
        assert_eq!(errs.len(), 1);
        assert!(format!("{errs:?}").contains("spec.limited.limitResponse.queuing"));
    }
}
