//! ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`), as
//! kube-apiserver's `ValidatingAdmissionPolicy` admission plugin
//! (`k8s.io/apiserver/pkg/admission/plugin/policy/validating`): every
//! write is matched against each policy's `matchConstraints` and each of
//! its bindings' `matchResources`; for every matching binding (and every
//! param object its `paramRef` selects) the policy's `matchConditions`,
//! `variables`, `validations` and `auditAnnotations` are evaluated with
//! CEL ([`ubernetes_cel`]) over `object`, `oldObject`, `request`,
//! `params`, `namespaceObject` and `variables`. A failed validation acts
//! as the binding's `validationActions` say:
//!
//! - `Deny`: the request fails with kube's Status (`<resource> "<name>" is
//!   forbidden: ValidatingAdmissionPolicy '<policy>' with binding
//!   '<binding>' denied request: <message>`, reason from the validation,
//!   `Invalid`/422 by default);
//! - `Warn`: a `Warning` header (`Validation failed for
//!   ValidatingAdmissionPolicy '<policy>' with binding '<binding>':
//!   <message>`);
//! - `Audit`: the `validation.policy.admission.k8s.io/validation_failure`
//!   audit annotation (logged: admission has no way to the audit event yet).
//!
//! Differences from kube: expressions are type-checked with every variable
//! dynamic (kube types `object` from the resource's OpenAPI schema, so some
//! errors it reports at policy creation surface here at evaluation), the
//! `authorizer` variable is not declared, and `variables` are evaluated
//! eagerly in order rather than lazily.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use serde_json::{Value, json};
use ubernetes_apimachinery::labels::Selector;
use ubernetes_apimachinery::{ApiError, Cause};
use ubernetes_cel::{Binding, Program, Type};

use crate::admission::{Admission, Attributes, Operation};
use crate::registry::Registry;
use crate::store::ReadAt;

/// The API group of the admission policy kinds.
const GROUP: &str = "admissionregistration.k8s.io";

/// The audit annotation a failed validation with the `Audit` action sets.
pub const VALIDATION_FAILURE_ANNOTATION: &str =
    "validation.policy.admission.k8s.io/validation_failure";

/// The variables every policy expression may use.
const VARIABLES: [&str; 6] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

fn compile(expr: &str) -> Result<Program, String> {
    let decls: Vec<(&str, Type)> = VARIABLES.iter().map(|v| (*v, Type::Dyn)).collect();
    ubernetes_cel::compile(expr, &decls).map_err(|e| e.0)
}

/// [`compile`] for a MutatingAdmissionPolicy mutation: struct literals
/// (`Object{...}`, `JSONPatch{...}`) construct the JSON they stand for.
fn compile_mutating(expr: &str) -> Result<Program, String> {
    let decls: Vec<(&str, Type)> = VARIABLES.iter().map(|v| (*v, Type::Dyn)).collect();
    ubernetes_cel::compile_mutating(expr, &decls).map_err(|e| e.0)
}

/// One compiled expression (kube keeps the compile error and reports it
/// when the expression is evaluated).
pub(crate) struct Expr {
    pub(crate) source: String,
    program: Result<Program, String>,
}

impl Expr {
    pub(crate) fn new(source: &str) -> Self {
        Self {
            source: source.to_string(),
            program: compile(source),
        }
    }

    /// A mutation's expression (struct literals allowed).
    pub(crate) fn mutation(source: &str) -> Self {
        Self {
            source: source.to_string(),
            program: compile_mutating(source),
        }
    }

    /// Evaluates with `vars`, charging `budget`; the error is worded as
    /// kube's CEL filter words it.
    pub(crate) fn eval(
        &self,
        vars: &[(&str, Binding<'_>)],
        budget: &mut i64,
    ) -> Result<Value, String> {
        let program = self
            .program
            .as_ref()
            .map_err(|e| format!("compilation error: {e}"))?;
        if *budget <= 0 {
            return Err(OUT_OF_BUDGET.into());
        }
        let limit = ubernetes_cel::PER_CALL_LIMIT.min(*budget as u64);
        match program.eval(vars, limit) {
            Ok((v, cost)) => {
                *budget -= cost as i64;
                ubernetes_cel::to_json(&v).ok_or_else(|| {
                    format!(
                        "expression '{}' resulted in error: value cannot be represented as JSON",
                        self.source
                    )
                })
            }
            Err(ubernetes_cel::EvalError::CostLimit { .. })
                if limit < ubernetes_cel::PER_CALL_LIMIT =>
            {
                Err(OUT_OF_BUDGET.into())
            }
            Err(e) => Err(format!(
                "expression '{}' resulted in error: {e}",
                self.source
            )),
        }
    }
}

pub(crate) const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// What both kinds of admission policy declare around their validations
/// or mutations, compiled: the name, `failurePolicy`, `matchConstraints`,
/// `paramKind`, `matchConditions` and `variables`.
pub(crate) struct PolicyHeader {
    pub(crate) name: String,
    pub(crate) fail_open: bool,
    pub(crate) match_constraints: Option<Value>,
    pub(crate) param_kind: Option<(String, String)>,
    pub(crate) match_conditions: Vec<(String, Expr)>,
    pub(crate) variables: Vec<(String, Expr)>,
}

impl PolicyHeader {
    pub(crate) fn new(policy: &Value) -> Self {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        let named = |field: &str| {
            spec_list(spec, field)
                .iter()
                .map(|c| {
                    (
                        text(c, "name").unwrap_or_default(),
                        Expr::new(&text(c, "expression").unwrap_or_default()),
                    )
                })
                .collect()
        };
        Self {
            name: meta(policy, "name"),
            fail_open: spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
            match_constraints: spec.get("matchConstraints").cloned(),
            param_kind: spec
                .get("paramKind")
                .and_then(|p| Some((text(p, "apiVersion")?, text(p, "kind")?))),
            match_conditions: named("matchConditions"),
            variables: named("variables"),
        }
    }
}

/// `spec.<field>` of a policy as a list (empty when absent).
pub(crate) fn spec_list<'a>(spec: &'a Value, field: &str) -> &'a [Value] {
    spec.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The string field `f` of `v`, if set.
pub(crate) fn text(v: &Value, f: &str) -> Option<String> {
    v.get(f).and_then(Value::as_str).map(str::to_string)
}

/// `metadata.<field>` of an object ("" when absent).
pub(crate) fn meta(v: &Value, field: &str) -> String {
    v.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

struct Validation {
    expr: Expr,
    message: Option<String>,
    message_expr: Option<Expr>,
    reason: Option<String>,
}

/// A ValidatingAdmissionPolicy with its expressions compiled.
struct Compiled {
    head: PolicyHeader,
    validations: Vec<Validation>,
    audit_annotations: Vec<(String, Expr)>,
}

impl Compiled {
    fn new(policy: &Value) -> Self {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        Self {
            head: PolicyHeader::new(policy),
            validations: spec_list(spec, "validations")
                .iter()
                .map(|v| Validation {
                    expr: Expr::new(&text(v, "expression").unwrap_or_default()),
                    message: text(v, "message"),
                    message_expr: text(v, "messageExpression").map(|m| Expr::new(&m)),
                    reason: text(v, "reason"),
                })
                .collect(),
            audit_annotations: spec_list(spec, "auditAnnotations")
                .iter()
                .map(|a| {
                    (
                        text(a, "key").unwrap_or_default(),
                        Expr::new(&text(a, "valueExpression").unwrap_or_default()),
                    )
                })
                .collect(),
        }
    }
}

/// What one validation decided (`PolicyDecision`).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub deny: bool,
    pub message: String,
    /// `Invalid` unless the validation names another reason.
    pub reason: String,
    /// Index of the validation (for the audit annotation).
    pub index: usize,
}

/// The result of evaluating one policy for one binding and param.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Evaluation {
    pub decisions: Vec<Decision>,
    /// Published audit annotations (key, value).
    pub annotations: Vec<(String, String)>,
}

/// The values the expressions see.
pub struct Inputs<'a> {
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    pub request: &'a Value,
    pub params: Option<&'a Value>,
    pub namespace_object: Option<&'a Value>,
}

/// Evaluates a compiled policy (kube's `validator.Validate`).
fn evaluate(p: &Compiled, inputs: &Inputs<'_>) -> Evaluation {
    let error_decision = |message: String| Evaluation {
        decisions: vec![Decision {
            deny: !p.head.fail_open,
            message,
            reason: "Invalid".into(),
            index: 0,
        }],
        annotations: Vec::new(),
    };
    let mut budget = ubernetes_cel::RUNTIME_COST_BUDGET;
    let mut variables = serde_json::Map::new();
    // matchConditions: any false → not applicable; errors (with no false)
    // → the failure policy.
    {
        let vars_json = Value::Object(variables.clone());
        let vars = bindings(inputs, &vars_json);
        let mut errors = Vec::new();
        for (_, cond) in &p.head.match_conditions {
            match cond.eval(&vars, &mut budget) {
                Ok(Value::Bool(false)) => return Evaluation::default(),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return error_decision(aggregate(&errors));
        }
    }
    for (name, expr) in &p.head.variables {
        let vars_json = Value::Object(variables.clone());
        let vars = bindings(inputs, &vars_json);
        match expr.eval(&vars, &mut budget) {
            Ok(v) => {
                variables.insert(name.clone(), v);
            }
            Err(e) => {
                tracing::debug!(policy = %p.head.name, variable = %name, error = %e, "composited variable failed to evaluate");
            }
        }
    }
    let vars_json = Value::Object(variables);
    let vars = bindings(inputs, &vars_json);
    let mut out = Evaluation::default();
    for (i, v) in p.validations.iter().enumerate() {
        match v.expr.eval(&vars, &mut budget) {
            Ok(Value::Bool(true)) => {}
            Ok(_) => {
                let mut message = v
                    .message_expr
                    .as_ref()
                    .and_then(|m| m.eval(&vars, &mut budget).ok())
                    .and_then(|m| m.as_str().map(|s| s.trim().to_string()))
                    .filter(|m| m.len() <= 5 * 1024 && !m.contains('\n'))
                    .unwrap_or_default();
                if message.is_empty()
                    && let Some(m) = v
                        .message
                        .as_deref()
                        .map(str::trim)
                        .filter(|m| !m.is_empty())
                {
                    message = m.to_string();
                }
                if message.is_empty() {
                    message = format!("failed expression: {}", v.expr.source.trim());
                }
                out.decisions.push(Decision {
                    deny: true,
                    message,
                    reason: v.reason.clone().unwrap_or_else(|| "Invalid".into()),
                    index: i,
                });
            }
            Err(e) if e == OUT_OF_BUDGET => return error_decision(e),
            Err(e) => out.decisions.push(Decision {
                deny: !p.head.fail_open,
                message: e,
                reason: "Invalid".into(),
                index: i,
            }),
        }
    }
    for (key, expr) in &p.audit_annotations {
        match expr.eval(&vars, &mut budget) {
            Ok(Value::String(s)) if !s.trim().is_empty() => {
                out.annotations.push((key.clone(), s.trim().to_string()));
            }
            Ok(Value::String(_)) | Ok(Value::Null) => {}
            Ok(other) => {
                if !p.head.fail_open {
                    out.decisions.push(Decision {
                        deny: true,
                        message: format!(
                            "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                            expr.source,
                            cel_type_name(&other)
                        ),
                        reason: "Invalid".into(),
                        index: 0,
                    });
                }
            }
            Err(e) => {
                if !p.head.fail_open {
                    out.decisions.push(Decision {
                        deny: true,
                        message: e,
                        reason: "Invalid".into(),
                        index: 0,
                    });
                }
            }
        }
    }
    out
}

pub(crate) fn cel_type_name(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "double",
        Value::Number(_) => "int",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
        Value::String(_) => "string",
        Value::Null => "null_type",
    }
}

/// Go's `utilerrors.NewAggregate(errs).Error()`.
pub(crate) fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

pub(crate) fn bindings<'a>(
    inputs: &Inputs<'a>,
    variables: &'a Value,
) -> Vec<(&'static str, Binding<'a>)> {
    vec![
        (
            "object",
            Binding::Untyped(inputs.object.unwrap_or(&Value::Null)),
        ),
        (
            "oldObject",
            Binding::Untyped(inputs.old_object.unwrap_or(&Value::Null)),
        ),
        ("request", Binding::Untyped(inputs.request)),
        (
            "params",
            Binding::Untyped(inputs.params.unwrap_or(&Value::Null)),
        ),
        (
            "namespaceObject",
            Binding::Untyped(inputs.namespace_object.unwrap_or(&Value::Null)),
        ),
        ("variables", Binding::Untyped(variables)),
    ]
}

// ------------------------------------------------------------------ matching

/// What matching looks at (kube's `admission.Attributes` as the matchers see
/// them).
pub struct MatchInput<'a> {
    pub operation: Operation,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    /// The labels of the request's namespace (`None`: cluster-scoped, or the
    /// namespace is not known).
    pub namespace_labels: Option<&'a Value>,
    pub is_namespace: bool,
}

pub(crate) fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn any_or(list: &[&str], want: &str) -> bool {
    list.iter().any(|x| *x == "*" || *x == want)
}

/// kube's `webhook/predicates/rules.Matcher` for one `RuleWithOperations`
/// (plus `resourceNames` of a `NamedRuleWithOperations`).
pub fn rule_matches(rule: &Value, m: &MatchInput<'_>) -> bool {
    let ops = strings(rule.get("operations"));
    if !any_or(&ops, m.operation.as_str()) {
        return false;
    }
    if !any_or(&strings(rule.get("apiGroups")), m.group)
        || !any_or(&strings(rule.get("apiVersions")), m.version)
    {
        return false;
    }
    let sub = m.subresource.unwrap_or("");
    let resource_ok = strings(rule.get("resources")).iter().any(|r| {
        let (res, rsub) = r.split_once('/').unwrap_or((r, ""));
        match (res, rsub) {
            ("*", "*") => true,
            ("*", "") => sub.is_empty(),
            (res, "*") => res == m.resource,
            ("*", rsub) => rsub == sub,
            (res, rsub) => res == m.resource && rsub == sub,
        }
    });
    if !resource_ok {
        return false;
    }
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        // A Namespace is cluster-scoped though it names itself.
        "Cluster" => m.namespace.is_none() || m.is_namespace,
        "Namespaced" => m.namespace.is_some() && !m.is_namespace,
        _ => true,
    };
    let names = strings(rule.get("resourceNames"));
    scope_ok && (names.is_empty() || names.contains(&m.name))
}

pub(crate) fn labels_of(obj: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Value>) -> Result<Selector, String> {
    match v {
        None | Some(Value::Null) => Ok(Selector::everything()),
        Some(v) => Selector::from_label_selector(v).map_err(|e| e.message),
    }
}

/// kube's `matching.Matcher.Matches` over a `MatchResources`: namespace
/// selector, object selector, excluded rules, rules.
pub fn resources_match(criteria: &Value, m: &MatchInput<'_>) -> Result<bool, String> {
    // namespaceSelector: cluster-scoped objects (other than Namespaces)
    // always match; a Namespace is matched by its own labels.
    let ns_sel = selector(criteria.get("namespaceSelector"))?;
    let ns_ok = if m.is_namespace {
        ns_sel.matches(&labels_of(m.object.or(m.old_object)))
    } else if m.namespace.is_none() {
        true
    } else {
        let labels = m
            .namespace_labels
            .and_then(Value::as_object)
            .map(|l| {
                l.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        ns_sel.matches(&labels)
    };
    if !ns_ok {
        return Ok(false);
    }
    let obj_sel = selector(criteria.get("objectSelector"))?;
    if !(obj_sel.matches(&labels_of(m.object)) || obj_sel.matches(&labels_of(m.old_object))) {
        return Ok(false);
    }
    let rules = |f: &str| {
        criteria
            .get(f)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if rules("excludeResourceRules")
        .iter()
        .any(|r| rule_matches(r, m))
    {
        return Ok(false);
    }
    // No resourceRules (a binding narrowing by selectors only): every
    // resource matches.
    let include = rules("resourceRules");
    Ok(include.is_empty() || include.iter().any(|r| rule_matches(r, m)))
}

// ------------------------------------------------------------------- plugin

/// kube's `IsExemptAdmissionConfigurationResource`: policies and webhooks
/// never apply to the objects that configure admission.
pub(crate) fn exempt(group: &str, resource: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            resource,
            "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
                | "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
        )
}

/// The `ValidatingAdmissionPolicy` admission plugin (validating phase).
pub struct ValidatingAdmissionPolicy {
    registry: Weak<Registry>,
    compiled: CompileCache<Compiled>,
}

impl ValidatingAdmissionPolicy {
    pub fn new(registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::downgrade(registry),
            compiled: CompileCache::new(),
        })
    }

    fn compiled(&self, policy: &Value) -> Arc<Compiled> {
        self.compiled.get_or_compile(policy, Compiled::new)
    }
}

/// Compiled policies by name, each with the resourceVersion it was compiled
/// at: a policy is recompiled only when it changed (both policy plugins).
pub(crate) struct CompileCache<T>(Mutex<HashMap<String, (String, Arc<T>)>>);

impl<T> CompileCache<T> {
    pub(crate) fn new() -> Self {
        Self(Mutex::new(HashMap::new()))
    }

    /// The compiled form of `policy`, compiled by `compile` when missing or stale.
    pub(crate) fn get_or_compile(
        &self,
        policy: &Value,
        compile: impl FnOnce(&Value) -> T,
    ) -> Arc<T> {
        let field = |f: &str| {
            policy
                .pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (name, rv) = (field("name"), field("resourceVersion"));
        let mut cache = self.0.lock();
        if let Some((have, c)) = cache.get(&name)
            && *have == rv
        {
            return c.clone();
        }
        let c = Arc::new(compile(policy));
        cache.insert(name, (rv, c.clone()));
        c
    }
}

/// Every object of a store as this process's cache has it.
pub(crate) async fn cached_list(
    registry: &Registry,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
) -> Vec<Value> {
    let Some(store) = registry.by_resource(group, resource) else {
        return Vec::new();
    };
    match store.list(namespace, None, 0, None, ReadAt::Any).await {
        Ok(l) => l
            .items
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// `AdmissionRequest` as CEL's `request` sees it.
pub fn request_value(attrs: &Attributes<'_>) -> Value {
    let info = attrs.info;
    let mut user = serde_json::Map::new();
    if let Some(u) = attrs.user {
        if !u.name.is_empty() {
            user.insert("username".into(), json!(u.name));
        }
        if !u.uid.is_empty() {
            user.insert("uid".into(), json!(u.uid));
        }
        if !u.groups.is_empty() {
            user.insert("groups".into(), json!(u.groups));
        }
        if !u.extra.is_empty() {
            user.insert("extra".into(), json!(u.extra));
        }
    }
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let resource = json!({"group": info.group, "version": info.version, "resource": info.resource});
    let mut r = json!({
        "uid": "",
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": attrs.name,
        "namespace": attrs.namespace.unwrap_or(""),
        "operation": attrs.operation.as_str(),
        "userInfo": user,
        "dryRun": attrs.dry_run,
    });
    if let Some(sub) = attrs.subresource {
        r["subResource"] = json!(sub);
        r["requestSubResource"] = json!(sub);
    }
    if let Some(o) = attrs.options {
        r["options"] = o.clone();
    }
    r
}

/// kube's `CreateNamespaceObject`: the namespace without managed fields
/// and owner references.
pub(crate) fn namespace_object(ns: &Value) -> Value {
    let mut out = json!({"apiVersion": "v1", "kind": "Namespace"});
    if let Some(meta) = ns.get("metadata").and_then(Value::as_object) {
        let mut m = meta.clone();
        m.remove("managedFields");
        m.remove("ownerReferences");
        out["metadata"] = Value::Object(m);
    }
    for f in ["spec", "status"] {
        if let Some(v) = ns.get(f) {
            out[f] = v.clone();
        }
    }
    out
}

/// Go's `%v` of a `*ParamKind` (kube's "not known" message prints it).
fn param_kind_text(api_version: &str, kind: &str) -> String {
    format!("&ParamKind{{APIVersion:{api_version},Kind:{kind},}}")
}

pub(crate) enum Params {
    List(Vec<Value>),
    Error(String),
}

pub(crate) async fn collect_params(
    registry: &Registry,
    kind: Option<&(String, String)>,
    param_ref: Option<&Value>,
    namespace: Option<&str>,
) -> Params {
    let (Some((api_version, kind)), Some(pref)) = (kind, param_ref) else {
        return Params::List(vec![Value::Null]);
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let Some(store) = registry
        .stores()
        .into_iter()
        .find(|s| s.info().group == group && s.info().version == version && s.info().kind == *kind)
    else {
        return Params::Error(format!(
            "paramKind kind `{}` not known",
            param_kind_text(api_version, kind)
        ));
    };
    let s = |f: &str| {
        pref.get(f)
            .and_then(Value::as_str)
            .filter(|x| !x.is_empty())
    };
    let ns = if store.info().namespaced {
        match s("namespace").or(namespace) {
            Some(ns) => Some(ns.to_string()),
            None => {
                return Params::Error(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                        .into(),
                );
            }
        }
    } else {
        if s("namespace").is_some() {
            return Params::Error(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        }
        None
    };
    let params: Vec<Value> = if let Some(name) = s("name") {
        let cached = store
            .list(ns.as_deref(), None, 0, None, ReadAt::Any)
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        cached
            .iter()
            .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
            .filter(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            .collect()
    } else if let Some(sel) = pref.get("selector") {
        let sel = match Selector::from_label_selector(sel) {
            Ok(s) => s,
            Err(e) => return Params::Error(e.message),
        };
        let cached = store
            .list(ns.as_deref(), None, 0, None, ReadAt::Any)
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        cached
            .iter()
            .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
            .filter(|o| sel.matches(&labels_of(Some(o))))
            .collect()
    } else {
        return Params::Error("one of name or selector must be provided".into());
    };
    if params.is_empty() && s("parameterNotFoundAction") == Some("Deny") {
        return Params::Error(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Params::List(params)
}

/// The objects of one policy kind's resource (`validatingadmissionpolicies`,
/// `...bindings`, ...) in this process's cache, sorted by name: kube
/// evaluates policies and bindings in name order.
pub(crate) async fn sorted_list(registry: &Registry, resource: &str) -> Vec<Value> {
    let mut items = cached_list(registry, GROUP, resource, None).await;
    items.sort_by_key(|o| meta(o, "name"));
    items
}

/// The request as both policy plugins match it: its namespace (none for a
/// Namespace itself, which is cluster-scoped) and that namespace's object.
pub(crate) struct RequestScope<'a> {
    pub(crate) namespace: Option<&'a str>,
    pub(crate) namespace_object: Option<Value>,
    pub(crate) is_namespace: bool,
}

impl<'a> RequestScope<'a> {
    pub(crate) async fn of(registry: &Registry, attrs: &Attributes<'a>) -> Self {
        let info = attrs.info;
        let is_namespace = info.group.is_empty() && info.resource == "namespaces";
        let namespace = if is_namespace { None } else { attrs.namespace };
        let namespace_object = match (namespace, registry.namespaces()) {
            (Some(ns), Some(store)) => store.get_value(None, ns).await.ok(),
            _ => None,
        };
        Self {
            namespace,
            namespace_object,
            is_namespace,
        }
    }

    /// What the matchers look at for this request, with `object` and
    /// `old_object` as the plugin sees them.
    pub(crate) fn match_input<'b>(
        &'b self,
        attrs: &'b Attributes<'a>,
        object: Option<&'b Value>,
        old_object: Option<&'b Value>,
    ) -> MatchInput<'b> {
        let info = attrs.info;
        MatchInput {
            operation: attrs.operation,
            group: &info.group,
            version: &info.version,
            resource: &info.resource,
            subresource: attrs.subresource,
            namespace: self.namespace,
            name: attrs.name,
            object,
            old_object,
            namespace_labels: self
                .namespace_object
                .as_ref()
                .and_then(|n| n.pointer("/metadata/labels")),
            is_namespace: self.is_namespace,
        }
    }
}

/// How one binding of a policy applies to a request.
pub(crate) enum BindingUse<'b> {
    /// The binding matches: the policy runs once per param (one `null`
    /// without a `paramKind`).
    Run {
        binding: &'b Value,
        name: String,
        params: Vec<Value>,
    },
    /// The policy (`binding: None`) or a binding cannot be configured for
    /// this request; it counts as a failure under the failure policy.
    Misconfigured {
        binding: Option<String>,
        message: String,
    },
}

/// The bindings of `policy` among `bindings` (its kind's, in name order)
/// that apply to the request `m`, as kube's policy dispatcher finds them:
/// the policy's `matchConstraints`, then each binding's `matchResources`,
/// then the params its `paramRef` selects.
pub(crate) async fn applicable_bindings<'b>(
    registry: &Registry,
    policy: &PolicyHeader,
    bindings: &'b [Value],
    m: &MatchInput<'_>,
) -> Vec<BindingUse<'b>> {
    let Some(constraints) = &policy.match_constraints else {
        return Vec::new();
    };
    match resources_match(constraints, m) {
        Ok(true) => {}
        Ok(false) => return Vec::new(),
        Err(e) => {
            return vec![BindingUse::Misconfigured {
                binding: None,
                message: format!("failed to configure policy: {e}"),
            }];
        }
    }
    let mut uses = Vec::new();
    let of_policy = bindings
        .iter()
        .filter(|b| b.pointer("/spec/policyName").and_then(Value::as_str) == Some(&policy.name));
    for binding in of_policy {
        let name = meta(binding, "name");
        let misconfigured = |name: String, e: String| BindingUse::Misconfigured {
            binding: Some(name),
            message: format!("failed to configure binding: {e}"),
        };
        if let Some(mr) = binding
            .pointer("/spec/matchResources")
            .filter(|v| !v.is_null())
        {
            match resources_match(mr, m) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    uses.push(misconfigured(name, e));
                    continue;
                }
            }
        }
        let param_ref = binding.pointer("/spec/paramRef").filter(|v| !v.is_null());
        match collect_params(registry, policy.param_kind.as_ref(), param_ref, m.namespace).await {
            Params::List(params) => uses.push(BindingUse::Run {
                binding,
                name,
                params,
            }),
            Params::Error(e) => uses.push(misconfigured(name, e)),
        }
    }
    uses
}

/// A denial: which policy and binding, and the decision.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

#[async_trait::async_trait]
impl Admission for ValidatingAdmissionPolicy {
    fn mutates(&self) -> bool {
        false
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        let info = attrs.info;
        if exempt(&info.group, &info.resource) {
            return Ok(Vec::new());
        }
        let Some(registry) = self.registry.upgrade() else {
            return Ok(Vec::new());
        };
        let policies = sorted_list(&registry, "validatingadmissionpolicies").await;
        if policies.is_empty() {
            return Ok(Vec::new());
        }
        let bindings = sorted_list(&registry, "validatingadmissionpolicybindings").await;
        let (object, old_object) = match attrs.operation {
            Operation::Delete => (None, attrs.old.or(Some(obj))),
            _ => (Some(obj), attrs.old),
        };
        let scope = RequestScope::of(&registry, attrs).await;
        let m = scope.match_input(attrs, object, old_object);
        let request = request_value(attrs);
        let ns_value = scope.namespace_object.as_ref().map(namespace_object);
        let mut warnings = Vec::new();
        let mut denied: Vec<Denied> = Vec::new();
        for policy in &policies {
            let p = self.compiled(policy);
            let name = &p.head.name;
            let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
            for found in applicable_bindings(&registry, &p.head, &bindings, &m).await {
                let (binding, bname, params) = match found {
                    BindingUse::Run {
                        binding,
                        name,
                        params,
                    } => (binding, name, params),
                    BindingUse::Misconfigured { binding, message } => {
                        if !p.head.fail_open {
                            denied.push(Denied {
                                policy: name.clone(),
                                binding,
                                message,
                                reason: "Invalid".into(),
                            });
                        }
                        continue;
                    }
                };
                let actions = strings(binding.pointer("/spec/validationActions"));
                for param in &params {
                    let inputs = Inputs {
                        object,
                        old_object,
                        request: &request,
                        params: Some(param),
                        namespace_object: ns_value.as_ref(),
                    };
                    let result = evaluate(&p, &inputs);
                    for d in result.decisions.iter().filter(|d| d.deny) {
                        for action in &actions {
                            match *action {
                                "Deny" => denied.push(Denied {
                                    policy: name.clone(),
                                    binding: Some(bname.clone()),
                                    message: d.message.clone(),
                                    reason: d.reason.clone(),
                                }),
                                "Warn" => warnings.push(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{bname}': {}",
                                    d.message
                                )),
                                "Audit" => {
                                    let value = json!([{
                                        "message": d.message,
                                        "policy": name,
                                        "binding": bname,
                                        "expressionIndex": d.index,
                                        "validationActions": actions,
                                    }]);
                                    tracing::info!(
                                        annotation = VALIDATION_FAILURE_ANNOTATION,
                                        value = %value,
                                        resource = %info.resource,
                                        name = %attrs.name,
                                        "ValidatingAdmissionPolicy audit"
                                    );
                                }
                                _ => {}
                            }
                        }
                    }
                    for (k, v) in result.annotations {
                        match annotations.iter_mut().find(|(key, _)| *key == k) {
                            Some((_, vals)) => {
                                if !vals.contains(&v) {
                                    vals.push(v)
                                }
                            }
                            None => annotations.push((k, vec![v])),
                        }
                    }
                }
            }
            for (k, vals) in annotations {
                tracing::info!(
                    annotation = %format!("{name}/{k}"),
                    value = %vals.join(", "),
                    resource = %info.resource,
                    name = %attrs.name,
                    "ValidatingAdmissionPolicy audit annotation"
                );
            }
        }
        if let Some(d) = denied.into_iter().next() {
            let message = match &d.binding {
                Some(b) => format!(
                    "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
                    d.policy, d.message
                ),
                None => format!(
                    "ValidatingAdmissionPolicy '{}' denied request: {}",
                    d.policy, d.message
                ),
            };
            return Err(denial(attrs, obj, &d.reason, &message));
        }
        Ok(warnings)
    }
}

/// kube's `admission.NewForbidden` with the decision's reason and code
/// (`reasonToCode`) and the message as the one cause.
fn denial(attrs: &Attributes<'_>, obj: &Value, reason: &str, message: &str) -> ApiError {
    let name = forbidden_name(attrs, obj);
    let mut e = ApiError::forbidden(&attrs.info.group, &attrs.info.resource, &name, message);
    e.code = match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    e.reason = reason.to_string();
    e.causes = vec![Cause::new("", message, "")];
    e
}

/// kube's `extractResourceName`: the object's name (or generateName), else
/// the request's name.
pub fn forbidden_name(attrs: &Attributes<'_>, obj: &Value) -> String {
    let meta = |f: &str| {
        obj.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    meta("name")
        .or_else(|| meta("generateName"))
        .unwrap_or(attrs.name)
        .to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn policy(spec: Value) -> Compiled {
        Compiled::new(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn deployment(replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
               "spec": {"replicas": replicas}})
    }

    fn run(p: &Compiled, obj: &Value, params: Option<&Value>) -> Evaluation {
        let request = json!({"operation": "CREATE", "userInfo": {"username": "alice"}});
        let ns = json!({"metadata": {"name": "default", "labels": {"env": "prod"}}});
        evaluate(
            p,
            &Inputs {
                object: Some(obj),
                old_object: None,
                request: &request,
                params,
                namespace_object: Some(&ns),
            },
        )
    }

    #[test]
    fn failed_expression_message_and_reason() {
        let p = policy(json!({"validations": [{"expression": "object.spec.replicas <= 5"}]}));
        assert!(run(&p, &deployment(3), None).decisions.is_empty());
        let d = &run(&p, &deployment(7), None).decisions[0];
        assert!(d.deny);
        assert_eq!(d.message, "failed expression: object.spec.replicas <= 5");
        assert_eq!(d.reason, "Invalid");
    }

    #[test]
    fn params_variables_message_expression() {
        let p = policy(json!({
            "variables": [{"name": "max", "expression": "int(params.data.max)"}],
            "validations": [{
                "expression": "object.spec.replicas <= variables.max",
                "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > ' + string(variables.max) + ' for ' + request.userInfo.username + ' in ' + namespaceObject.metadata.labels.env",
                "reason": "Forbidden"
            }]
        }));
        let params = json!({"data": {"max": "4"}});
        assert!(run(&p, &deployment(4), Some(&params)).decisions.is_empty());
        let d = &run(&p, &deployment(9), Some(&params)).decisions[0];
        assert_eq!(d.message, "replicas 9 > 4 for alice in prod");
        assert_eq!(d.reason, "Forbidden");
    }

    #[test]
    fn message_falls_back_and_errors_follow_failure_policy() {
        let p = policy(
            json!({"validations": [{"expression": "object.spec.replicas < 2", "message": "  too many  "}]}),
        );
        assert_eq!(
            run(&p, &deployment(3), None).decisions[0].message,
            "too many"
        );
        let p = policy(json!({"validations": [{"expression": "object.spec.nope == 1"}]}));
        let d = &run(&p, &deployment(3), None).decisions[0];
        assert!(d.deny);
        assert_eq!(
            d.message,
            "expression 'object.spec.nope == 1' resulted in error: no such key: nope"
        );
        let p = policy(
            json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.spec.nope == 1"}]}),
        );
        assert!(!run(&p, &deployment(3), None).decisions[0].deny);
        let p = policy(json!({"validations": [{"expression": "object.spec.replicas <"}]}));
        assert!(
            run(&p, &deployment(3), None).decisions[0]
                .message
                .starts_with("compilation error: ERROR: <input>:1:")
        );
    }

    #[test]
    fn match_conditions_gate_and_audit_annotations() {
        let p = policy(json!({
            "matchConditions": [{"name": "only-web", "expression": "object.metadata.name == 'web'"}],
            "validations": [{"expression": "false"}],
            "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]
        }));
        let r = run(&p, &deployment(2), None);
        assert_eq!(r.decisions.len(), 1);
        assert_eq!(
            r.annotations,
            vec![("replicas".to_string(), "2".to_string())]
        );
        let mut other = deployment(2);
        other["metadata"]["name"] = json!("api");
        assert_eq!(run(&p, &other, None), Evaluation::default());
    }

    fn input<'a>(obj: &'a Value, ns_labels: &'a Value) -> MatchInput<'a> {
        MatchInput {
            operation: Operation::Create,
            group: "apps",
            version: "v1",
            resource: "deployments",
            subresource: None,
            namespace: Some("default"),
            name: "web",
            object: Some(obj),
            old_object: None,
            namespace_labels: Some(ns_labels),
            is_namespace: false,
        }
    }

    #[test]
    fn resource_rules_selectors_and_exclusions() {
        let obj = deployment(1);
        let labels = json!({"env": "prod"});
        let m = input(&obj, &labels);
        let rule = json!({"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]});
        assert!(resources_match(&json!({"resourceRules": [rule]}), &m).unwrap());
        let scale = MatchInput {
            subresource: Some("scale"),
            ..input(&obj, &labels)
        };
        assert!(!resources_match(&json!({"resourceRules": [rule]}), &scale).unwrap());
        let all = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"]});
        assert!(resources_match(&json!({"resourceRules": [all]}), &scale).unwrap());
        let wrong_op = json!({"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["deployments"]});
        assert!(!resources_match(&json!({"resourceRules": [wrong_op]}), &m).unwrap());
        assert!(
            !resources_match(
                &json!({"resourceRules": [rule], "excludeResourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["deployments"], "resourceNames": ["web"]}]}),
                &m
            )
            .unwrap()
        );
        assert!(
            !resources_match(
                &json!({"resourceRules": [rule], "namespaceSelector": {"matchLabels": {"env": "dev"}}}),
                &m
            )
            .unwrap()
        );
        assert!(
            resources_match(
                &json!({"resourceRules": [rule], "namespaceSelector": {"matchLabels": {"env": "prod"}}, "objectSelector": {"matchLabels": {"app": "web"}}}),
                &m
            )
            .unwrap()
        );
        assert!(
            !resources_match(
                &json!({"resourceRules": [rule], "objectSelector": {"matchLabels": {"app": "db"}}}),
                &m
            )
            .unwrap()
        );
        assert!(
            resources_match(
                &json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
                &m
            )
            .unwrap(),
            "a binding's matchResources without resourceRules matches every resource"
        );
        let cluster = json!({"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["deployments"], "scope": "Cluster"});
        assert!(!resources_match(&json!({"resourceRules": [cluster]}), &m).unwrap());
    }
}
