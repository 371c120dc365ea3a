//! `x-kubernetes-validations`: CEL validation rules on a CRD's schema, as
//! kube's `apiextensions-apiserver/pkg/apiserver/schema/cel` evaluates them
//! ([`Validator`]) and as `apis/apiextensions/validation` checks them when
//! a CRD is written ([`check_schema_rules`]), on [`ubernetes_cel`].
//!
//! Evaluation: every rule of every schema node whose value is present (and
//! not null) runs with `self` bound to that value; a rule that references
//! `oldSelf` (a transition rule) runs only on update and only where an old
//! value correlates (same property, same map key, same `map`-list key),
//! unless `optionalOldSelf: true`, where it always runs with `oldSelf` an
//! optional. A failing rule gives kube's cause: `message`, or the
//! evaluated `messageExpression`, or `failed rule: <rule>`, with `reason`
//! (`FieldValueInvalid` by default) at the node's path plus `fieldPath`.
//! All rules of one object share kube's runtime budget
//! ([`ubernetes_cel::RUNTIME_COST_BUDGET`]); one evaluation may cost at
//! most [`ubernetes_cel::PER_CALL_LIMIT`].
//!
//! Approximations: costs are estimates of cel-go's (see
//! [`ubernetes_cel`]): the runtime cost of an evaluation is computed from
//! the sizes of the values before it runs, an upper bound of what cel-go
//! counts; `x-kubernetes-list-type: set/map` lists compare as plain lists;
//! rules under `allOf`/`anyOf` are not evaluated.

use std::collections::BTreeMap;

use serde_json::Value;
use ubernetes_apimachinery::Cause;
use ubernetes_apimachinery::error::field;
use ubernetes_cel::{
    Binding, EvalError, PER_CALL_LIMIT, Program, RUNTIME_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT,
    STATIC_ESTIMATED_CRD_COST_LIMIT, Type, types::MAX_REQUEST_SIZE_BYTES,
};

use crate::schema::{EMBEDDED, LIST_MAP_KEYS, LIST_TYPE, child, flag, index, type_of};

const REASONS: [&str; 4] = [
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
    "FieldValueInvalid",
];

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
struct Rule {
    rule: String,
    message: String,
    reason: String,
    field_path: String,
    optional_old_self: bool,
    program: Result<Program, String>,
    message_expression: Option<Program>,
    message_expression_source: String,
}

impl Rule {
    fn uses_old_self(&self) -> bool {
        self.program.as_ref().is_ok_and(|p| p.references("oldSelf"))
    }

    /// kube's `ruleErrorString`: the message, else the rule.
    fn error_string(&self) -> &str {
        if self.message.trim().is_empty() {
            self.rule.trim()
        } else {
            self.message.trim()
        }
    }
}

fn get_str<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Compiles the rules of one schema node whose values have type `ty`.
fn compile_rules(schema: &Value, ty: &Type) -> Vec<(Value, Rule)> {
    let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    rules
        .iter()
        .map(|r| (r.clone(), compile_rule(r, ty)))
        .collect()
}

fn compile_rule(r: &Value, ty: &Type) -> Rule {
    let optional_old_self = flag(r, "optionalOldSelf");
    let old = if optional_old_self {
        Type::Optional(Box::new(ty.clone()))
    } else {
        ty.clone()
    };
    let decls = [("self", ty.clone()), ("oldSelf", old)];
    let source = get_str(r, "rule");
    let program = ubernetes_cel::compile(source, &decls)
        .map_err(|e| format!("compilation failed: {e}"))
        .and_then(|p| match p.result_type() {
            Type::Bool | Type::Dyn => Ok(p),
            _ => Err("cel expression must evaluate to a bool".to_string()),
        });
    let message_expression = Some(get_str(r, "messageExpression"))
        .filter(|m| !m.trim().is_empty())
        .and_then(|m| ubernetes_cel::compile(m, &decls).ok());
    Rule {
        rule: source.to_string(),
        message: get_str(r, "message").to_string(),
        reason: get_str(r, "reason").to_string(),
        field_path: get_str(r, "fieldPath").to_string(),
        optional_old_self,
        program,
        message_expression,
        message_expression_source: get_str(r, "messageExpression").to_string(),
    }
}

/// The compiled rules of a schema, in the schema's shape (only the
/// branches that hold rules).
#[derive(Debug)]
pub struct Validator {
    schema_type: String,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Validator>,
    items: Option<Box<Validator>>,
    additional: Option<Box<Validator>>,
    /// `x-kubernetes-list-map-keys` of a `map` list: how old items correlate.
    map_keys: Option<Vec<String>>,
}

fn has_rules(s: &Value) -> bool {
    s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
        || s.get("items").is_some_and(has_rules)
        || s.get("additionalProperties").is_some_and(has_rules)
        || s.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.values().any(has_rules))
}

impl Validator {
    /// The validator of a CRD version's `openAPIV3Schema`; `None` when it
    /// has no rules.
    pub fn new(schema: &Value) -> Option<Validator> {
        if !has_rules(schema) {
            return None;
        }
        Self::node(schema, true)
    }

    fn node(s: &Value, resource_root: bool) -> Option<Validator> {
        if !has_rules(s) {
            return None;
        }
        let ty = Type::from_schema(s, resource_root)?;
        let rules = compile_rules(s, &ty).into_iter().map(|(_, r)| r).collect();
        let properties = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter_map(|(k, p)| Some((k.clone(), Self::node(p, flag(p, EMBEDDED))?)))
                    .collect()
            })
            .unwrap_or_default();
        let items = s
            .get("items")
            .and_then(|i| Self::node(i, flag(i, EMBEDDED)))
            .map(Box::new);
        let additional = s
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .and_then(|a| Self::node(a, flag(a, EMBEDDED)))
            .map(Box::new);
        let map_keys = (get_str(s, LIST_TYPE) == "map").then(|| {
            s.get(LIST_MAP_KEYS)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        });
        Some(Validator {
            schema_type: type_of(s).to_string(),
            rules,
            properties,
            items,
            additional,
            map_keys,
        })
    }

    /// Evaluates every rule against a custom resource `obj` (and, on
    /// update, its old version). Each cause comes with whether it is from a
    /// transition rule (those are never ratcheted).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<(Cause, bool)> {
        let mut out = Vec::new();
        let mut budget = RUNTIME_COST_BUDGET;
        self.walk("", obj, old, &mut budget, &mut out);
        out
    }

    fn walk(
        &self,
        path: &str,
        v: &Value,
        old: Option<&Value>,
        budget: &mut i64,
        out: &mut Vec<(Cause, bool)>,
    ) {
        if v.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.run_rules(path, v, old, budget, out);
        if *budget < 0 {
            return;
        }
        match v {
            Value::Object(map) => {
                for (k, child_v) in map {
                    let old_child = old.and_then(|o| o.get(k));
                    if let Some(p) = self.properties.get(k) {
                        p.walk(&child(path, k), child_v, old_child, budget, out);
                    } else if let Some(a) = &self.additional {
                        a.walk(&format!("{path}[{k}]"), child_v, old_child, budget, out);
                    }
                    if *budget < 0 {
                        return;
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_v) = &self.items else { return };
                for (i, item) in items.iter().enumerate() {
                    let old_item = self.map_keys.as_ref().and_then(|keys| {
                        old?.as_array()?
                            .iter()
                            .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
                    });
                    item_v.walk(&index(path, i), item, old_item, budget, out);
                    if *budget < 0 {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn run_rules(
        &self,
        path: &str,
        v: &Value,
        old: Option<&Value>,
        budget: &mut i64,
        out: &mut Vec<(Cause, bool)>,
    ) {
        if self.rules.is_empty() {
            return;
        }
        let here = shown(path);
        let kind = Value::String(self.schema_type.clone());
        if *budget <= 0 {
            out.push((budget_exhausted(&here, &kind), false));
            *budget = -1;
            return;
        }
        for rule in &self.rules {
            let program = match &rule.program {
                Ok(p) => p,
                Err(e) => {
                    out.push((
                        field::invalid(&here, &kind, &format!("rule compile error: {e}")),
                        false,
                    ));
                    continue;
                }
            };
            let transition = program.references("oldSelf");
            if transition && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let old_binding = if rule.optional_old_self {
                Binding::Optional(old)
            } else {
                Binding::Json(old)
            };
            let vars = [("self", Binding::Json(Some(v))), ("oldSelf", old_binding)];
            let limit = PER_CALL_LIMIT;
            let result = program.eval(&vars, limit);
            let cost = match &result {
                Ok((_, c)) => *c,
                Err(EvalError::CostLimit { cost }) => *cost,
                Err(EvalError::Runtime { cost, .. }) => *cost,
            };
            if !matches!(result, Err(EvalError::CostLimit { .. })) {
                if cost as i64 > *budget {
                    out.push((budget_exhausted(&here, &kind), transition));
                    *budget = -1;
                    return;
                }
                *budget -= cost as i64;
            }
            let passed = match result {
                Ok((ubernetes_cel::cel::Value::Bool(b), _)) => b,
                Ok(_) => {
                    out.push((
                        field::invalid(
                            &here,
                            &kind,
                            &format!("no such overload evaluating rule: {}", rule.error_string()),
                        ),
                        transition,
                    ));
                    continue;
                }
                Err(e @ EvalError::CostLimit { .. }) => {
                    out.push((
                        field::invalid(
                            &here,
                            &kind,
                            &format!(
                                "'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                                rule.error_string()
                            ),
                        ),
                        transition,
                    ));
                    *budget = -1;
                    return;
                }
                Err(e) => {
                    let msg = e.to_string();
                    let detail = if msg.starts_with("no such overload") {
                        format!(
                            "'{msg}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        )
                    } else {
                        format!("{msg} evaluating rule: {}", rule.error_string())
                    };
                    out.push((field::invalid(&here, &kind, &detail), transition));
                    continue;
                }
            };
            if passed {
                continue;
            }
            let at = if rule.field_path.is_empty() {
                here.clone()
            } else {
                let rel = rule.field_path.trim_start_matches('.');
                if path.is_empty() {
                    rel.to_string()
                } else if rel.starts_with('[') {
                    format!("{path}{rel}")
                } else {
                    format!("{path}.{rel}")
                }
            };
            let mut detail = None;
            if let Some(me) = &rule.message_expression {
                match me.eval(&vars, limit) {
                    Ok((ubernetes_cel::cel::Value::String(s), c)) => {
                        *budget -= c as i64;
                        let s = s.trim();
                        if !s.is_empty() && !s.contains('\n') {
                            detail = Some(s.to_string());
                        }
                    }
                    Ok((_, c)) | Err(EvalError::Runtime { cost: c, .. }) => *budget -= c as i64,
                    Err(EvalError::CostLimit { .. }) => {
                        out.push((
                            field::invalid(
                                &at,
                                &kind,
                                &format!(
                                    "no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}",
                                    rule.message_expression_source
                                ),
                            ),
                            transition,
                        ));
                        *budget = -1;
                        return;
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| {
                if rule.message.trim().is_empty() {
                    format!("failed rule: {}", rule.rule.trim())
                } else {
                    rule.message.trim().to_string()
                }
            });
            out.push((
                failure(&at, &self.schema_type, v, &detail, &rule.reason),
                transition,
            ));
        }
    }
}

/// kube prints the root's path as `<nil>`.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".into()
    } else {
        path.to_string()
    }
}

fn budget_exhausted(path: &str, kind: &Value) -> Cause {
    field::invalid(
        path,
        kind,
        "validation failed due to running out of cost budget, no further validation rules will be run",
    )
}

/// The cause of a failed rule (kube's `fieldErrorForReason`): scalar
/// values are shown, objects and arrays are not.
fn failure(path: &str, schema_type: &str, v: &Value, detail: &str, reason: &str) -> Cause {
    let scalar =
        !(schema_type == "object" || schema_type == "array" || v.is_object() || v.is_array());
    match reason {
        "FieldValueForbidden" => field::forbidden(path, detail),
        "FieldValueRequired" => field::required(path, detail),
        "FieldValueDuplicate" => {
            if scalar {
                field::duplicate(path, v)
            } else {
                Cause::new("FieldValueDuplicate", "Duplicate value", path)
            }
        }
        _ => {
            if scalar {
                field::invalid(path, v, detail)
            } else {
                Cause::new(
                    "FieldValueInvalid",
                    format!("Invalid value: {detail}"),
                    path,
                )
            }
        }
    }
}

// ------------------------------------------------------------ CRD checks

/// Go's `%#v` of an internal `apiextensions.ValidationRule`, the value
/// kube shows for a rule that does not compile.
fn go_rule(r: &Value) -> String {
    let q = |k: &str| format!("{:?}", get_str(r, k));
    let reason = match r.get("reason").and_then(Value::as_str) {
        Some(_) => "(*apiextensions.FieldValueErrorReason)(0xc000000000)".to_string(),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".to_string(),
    };
    let optional = match r.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(_) => "(*bool)(0xc000000000)".to_string(),
        None => "(*bool)(nil)".to_string(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        q("rule"),
        q("message"),
        q("messageExpression"),
        q("fieldPath")
    )
}

fn invalid_rule(path: &str, r: &Value, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {}: {detail}", go_rule(r)),
        path,
    )
}

/// kube's `getCostErrorMessage`.
fn cost_error(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

struct CrdCheck {
    out: Vec<Cause>,
    total: u64,
}

/// kube's checks of the `x-kubernetes-validations` of a CRD version's
/// schema at `path` (`spec.versions[0].schema.openAPIV3Schema`): every
/// rule compiles to a bool, `messageExpression`s compile to strings,
/// `reason`s and `fieldPath`s are valid, transition rules sit where old
/// values correlate, and estimated costs (times how often a rule may run)
/// stay within kube's limits.
pub fn check_schema_rules(schema: &Value, path: &str) -> Vec<Cause> {
    if !has_rules(schema) {
        return Vec::new();
    }
    let mut c = CrdCheck {
        out: Vec::new(),
        total: 0,
    };
    check_node(schema, path, true, Some(1), None, &mut c);
    if c.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        c.out.push(field::forbidden(
            path,
            &cost_error(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                c.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    c.out
}

fn check_node(
    s: &Value,
    path: &str,
    resource_root: bool,
    cardinality: Option<u64>,
    uncorrelatable: Option<&str>,
    c: &mut CrdCheck,
) {
    let Some(ty) = Type::from_schema(s, resource_root) else {
        return;
    };
    let rules_path = child(path, "x-kubernetes-validations");
    for (i, (raw, rule)) in compile_rules(s, &ty).into_iter().enumerate() {
        let rp = index(&rules_path, i);
        let rule_path = child(&rp, "rule");
        if rule.rule.trim().is_empty() {
            c.out.push(field::required(&rule_path, ""));
            continue;
        }
        match &rule.program {
            Err(e) => c.out.push(invalid_rule(&rule_path, &raw, e)),
            Ok(p) => {
                let per_run = p.estimated_cost();
                let times = cardinality
                    .unwrap_or_else(|| MAX_REQUEST_SIZE_BYTES / (ty.min_serialized_size() + 1));
                let cost = per_run.saturating_mul(times);
                if cost > STATIC_ESTIMATED_COST_LIMIT {
                    c.out.push(field::forbidden(
                        &rule_path,
                        &cost_error("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
                    ));
                }
                c.total = c.total.saturating_add(cost);
                if rule.uses_old_self()
                    && let Some(u) = uncorrelatable
                {
                    c.out.push(field::invalid(
                        &rule_path,
                        &Value::String(rule.rule.clone()),
                        &format!(
                            "oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"
                        ),
                    ));
                }
            }
        }
        let me = get_str(&raw, "messageExpression");
        if raw.get("messageExpression").is_some() && me.trim().is_empty() {
            c.out.push(field::required(
                &child(&rp, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        } else if !me.is_empty() {
            let opt = if rule.optional_old_self {
                Type::Optional(Box::new(ty.clone()))
            } else {
                ty.clone()
            };
            match ubernetes_cel::compile(me, &[("self", ty.clone()), ("oldSelf", opt)]) {
                Err(e) => c.out.push(invalid_rule(
                    &child(&rp, "messageExpression"),
                    &raw,
                    &format!("messageExpression compilation failed: {e}"),
                )),
                Ok(p) if !matches!(p.result_type(), Type::String(_) | Type::Dyn) => {
                    c.out.push(invalid_rule(
                        &child(&rp, "messageExpression"),
                        &raw,
                        "messageExpression must evaluate to a string",
                    ))
                }
                Ok(_) => {}
            }
        }
        let msg = get_str(&raw, "message");
        if raw.get("message").is_some() && msg.trim().is_empty() {
            c.out.push(field::required(
                &child(&rp, "message"),
                "message must be non-empty if specified",
            ));
        } else if msg.contains(['\n', '\r']) {
            c.out.push(field::invalid(
                &child(&rp, "message"),
                &Value::String(msg.to_string()),
                "message must not contain line breaks",
            ));
        }
        if let Some(reason) = raw.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            c.out.push(field::not_supported(
                &child(&rp, "reason"),
                &Value::String(reason.to_string()),
                &REASONS,
            ));
        }
        if !rule.field_path.is_empty()
            && let Err(e) = valid_field_path(&rule.field_path, s)
        {
            c.out.push(field::invalid(
                &child(&rp, "fieldPath"),
                &Value::String(rule.field_path.clone()),
                &format!("fieldPath must be a valid path: {e}"),
            ));
        }
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            check_node(
                p,
                &format!("{path}.properties[{k}]"),
                flag(p, EMBEDDED),
                cardinality,
                uncorrelatable,
                c,
            );
        }
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        let n = cardinality.and_then(|c| {
            s.get("maxItems")
                .and_then(Value::as_u64)
                .map(|m| c.saturating_mul(m))
        });
        let is_map = get_str(s, LIST_TYPE) == "map";
        let items_path = child(path, "items");
        let unc = if is_map || uncorrelatable.is_some() {
            uncorrelatable.map(str::to_string)
        } else {
            Some(path.to_string())
        };
        check_node(
            items,
            &items_path,
            flag(items, EMBEDDED),
            n,
            unc.as_deref(),
            c,
        );
    }
    if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
        let n = cardinality.and_then(|c| {
            s.get("maxProperties")
                .and_then(Value::as_u64)
                .map(|m| c.saturating_mul(m))
        });
        check_node(
            ap,
            &child(path, "additionalProperties"),
            flag(ap, EMBEDDED),
            n,
            uncorrelatable,
            c,
        );
    }
}

/// kube's `ValidFieldPath`: `.a.b`, `['a.b']`, map keys under
/// `additionalProperties`.
fn valid_field_path(p: &str, schema: &Value) -> Result<(), String> {
    let mut s = schema;
    let mut rest = p;
    while !rest.is_empty() {
        let name: String;
        if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").ok_or("unexpected end of JSON path")?;
            name = r[..end].to_string();
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return Err("unexpected end of JSON path".into());
            }
            name = r[..end].to_string();
            rest = &r[end..];
        } else {
            return Err(format!(
                "expected [ or . but got: {}",
                rest.split(['.', '[']).next().unwrap_or(rest)
            ));
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            s = props.get(&name).ok_or("does not refer to a valid field")?;
        } else if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
            s = ap;
        } else {
            return Err("does not refer to a valid field".into());
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

    fn schema(spec_rules: Value, spec_props: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": spec_rules, "properties": spec_props}}})
    }

    fn messages(v: &Validator, obj: Value, old: Option<Value>) -> Vec<String> {
        v.validate(&obj, old.as_ref())
            .into_iter()
            .map(|(c, _)| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn rules_accept_and_reject_with_kubes_messages() {
        let s = schema(
            json!([{"rule": "self.x + self.y > 0"},
                   {"rule": "self.x < 100", "message": "x must be small", "reason": "FieldValueForbidden"},
                   {"rule": "self.y >= 0", "messageExpression": "'y is ' + string(self.y)", "fieldPath": ".y"}]),
            json!({"x": {"type": "integer"}, "y": {"type": "integer"},
                   "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}}),
        );
        let v = Validator::new(&s).unwrap();
        assert!(messages(&v, json!({"spec": {"x": 1, "y": 0, "name": "abc"}}), None).is_empty());
        assert_eq!(
            messages(
                &v,
                json!({"spec": {"x": 100, "y": -200, "name": "bcd"}}),
                None
            ),
            vec![
                "spec: Invalid value: failed rule: self.x + self.y > 0",
                "spec: Forbidden: x must be small",
                "spec.y: Invalid value: y is -200",
                "spec.name: Invalid value: \"bcd\": failed rule: self.startsWith('a')",
            ]
        );
        assert_eq!(
            messages(&v, json!({"spec": {"y": 1}}), None),
            vec![
                "spec: Invalid value: \"object\": no such key: x evaluating rule: self.x + self.y > 0",
                "spec: Invalid value: \"object\": no such key: x evaluating rule: x must be small"
            ]
        );
    }

    #[test]
    fn transition_rules_run_on_update_only() {
        let s = schema(
            json!([]),
            json!({"num": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf"}]},
                   "opt": {"type": "string", "x-kubernetes-validations": [
                       {"rule": "!oldSelf.hasValue() || oldSelf.value() == self", "optionalOldSelf": true,
                        "message": "opt is immutable once set"},
                       {"rule": "oldSelf.hasValue() || self != 'bad'", "optionalOldSelf": true}]}}),
        );
        let v = Validator::new(&s).unwrap();
        assert!(messages(&v, json!({"spec": {"num": 10, "opt": "a"}}), None).is_empty());
        assert_eq!(
            messages(
                &v,
                json!({"spec": {"num": 9, "opt": "b"}}),
                Some(json!({"spec": {"num": 10, "opt": "a"}}))
            ),
            vec![
                "spec.num: Invalid value: 9: failed rule: self > oldSelf",
                "spec.opt: Invalid value: \"b\": opt is immutable once set"
            ]
        );
        assert_eq!(
            messages(&v, json!({"spec": {"opt": "bad"}}), None),
            vec![
                "spec.opt: Invalid value: \"bad\": failed rule: oldSelf.hasValue() || self != 'bad'"
            ]
        );
    }

    #[test]
    fn the_runtime_cost_limit_stops_validation() {
        let s = schema(
            json!([{"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"}]),
            json!({"largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}}),
        );
        assert!(check_schema_rules(&s, ROOT).is_empty());
        let v = Validator::new(&s).unwrap();
        assert!(messages(&v, json!({"spec": {"largeArray": [2, 2]}}), None).is_empty());
        assert_eq!(
            messages(&v, json!({"spec": {"largeArray": vec![20; 725]}}), None),
            vec![
                "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.largeArray.all(x, self.largeArray.all(y, y == x))"
            ]
        );
    }

    #[test]
    fn crd_checks_refuse_bad_rules() {
        let s = schema(
            json!([{"rule": "self.z == 100"}]),
            json!({"x": {"type": "integer"}}),
        );
        let c = check_schema_rules(&s, ROOT);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].field,
            format!("{ROOT}.properties[spec].x-kubernetes-validations[0].rule")
        );
        assert_eq!(
            c[0].message,
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.z == 100\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: undefined field 'z'\n | self.z == 100\n | ....^"
        );
        let s = schema(json!([{"rule": "self = 42"}]), json!({}));
        assert!(
            check_schema_rules(&s, ROOT)[0]
                .message
                .contains("compilation failed: ERROR: <input>:1:6: Syntax error")
        );
        let s = schema(
            json!([{"rule": "self.x"}]),
            json!({"x": {"type": "integer"}}),
        );
        assert!(
            check_schema_rules(&s, ROOT)[0]
                .message
                .ends_with(": cel expression must evaluate to a bool")
        );
        let s = schema(
            json!([{"rule": "true", "reason": "Nope", "messageExpression": "1", "fieldPath": ".q"}]),
            json!({"x": {"type": "integer"}}),
        );
        let m: Vec<String> = check_schema_rules(&s, ROOT)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let p = format!("{ROOT}.properties[spec].x-kubernetes-validations[0]");
        assert!(
            m.iter().any(
                |x| x.starts_with(&format!("{p}.messageExpression: Invalid value"))
                    && x.ends_with("messageExpression must evaluate to a string")
            ),
            "{m:?}"
        );
        assert!(m.contains(&format!("{p}.reason: Unsupported value: \"Nope\": supported values: \"FieldValueForbidden\", \"FieldValueRequired\", \"FieldValueDuplicate\", \"FieldValueInvalid\"")), "{m:?}");
        assert!(m.contains(&format!("{p}.fieldPath: Invalid value: \".q\": fieldPath must be a valid path: does not refer to a valid field")), "{m:?}");
    }

    /// The conformance spec's expensive rule: unbounded lists of unbounded
    /// strings inside an unbounded list.
    #[test]
    fn estimated_costs_over_the_limit_are_forbidden() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "x": {"type": "array", "items": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]}}}}}});
        let c = check_schema_rules(&s, ROOT);
        assert_eq!(
            c[0].message,
            "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert_eq!(
            c[0].field,
            format!("{ROOT}.properties[spec].properties[x].items.x-kubernetes-validations[0].rule")
        );
        assert!(
            c.last()
                .unwrap()
                .message
                .contains("estimated rule cost total for entire OpenAPIv3 schema exceeds budget")
        );
    }

    #[test]
    fn transition_rules_under_plain_lists_are_refused() {
        let s = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "object",
            "properties": {"a": {"type": "string", "maxLength": 10}}, "x-kubernetes-validations": [{"rule": "self.a == oldSelf.a"}]}}}});
        let c = check_schema_rules(&s, ROOT);
        assert_eq!(
            c.iter().map(|c| c.message.as_str()).collect::<Vec<_>>(),
            vec![format!(
                "Invalid value: \"self.a == oldSelf.a\": oldSelf cannot be used on the uncorrelatable portion of the schema within {ROOT}.properties[l]"
            )]
        );
    }
}
