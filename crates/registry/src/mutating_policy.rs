//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1`), as
//! kube-apiserver's `MutatingAdmissionPolicy` admission plugin
//! (`k8s.io/apiserver/pkg/admission/plugin/policy/mutating`), in the
//! mutating phase before the mutating webhooks. Matching is
//! ValidatingAdmissionPolicy's ([`crate::policy`]): each policy's
//! `matchConstraints`, each of its bindings' `matchResources`, the params
//! a binding's `paramRef` selects, then `matchConditions`; `variables` are
//! evaluated and each of the policy's `mutations` runs in order over
//! `object`, `oldObject`, `request`, `params`, `namespaceObject`,
//! `variables`:
//!
//! - `patchType: JSONPatch`: `jsonPatch.expression` returns a list of
//!   `JSONPatch{op, path, from, value}` applied as an RFC 6902 patch (a
//!   failed `test` operation leaves the object as it was, as kube);
//! - `patchType: ApplyConfiguration`: `applyConfiguration.expression`
//!   returns `Object{...}`, merged into the object as server-side apply
//!   merges (with the kinds' schemas: associative lists by key, atomic
//!   fields refused), without recording field ownership.
//!
//! Struct literals (`Object.spec{...}`, `JSONPatch{...}`) are built by
//! [`ubernetes_cel::compile_mutating`]. After each mutation the object is
//! decoded and defaulted again (the kind's `normalize`), as kube defaults
//! the patched object.
//!
//! Errors (expression errors, patches that do not apply, configuration
//! errors) go by the policy's `failurePolicy` (default `Fail`): refused as
//! kube's generic policy dispatcher refuses, a 403 whose message is
//! `policy '<policy>' with binding '<binding>' denied request: <error>`
//! (reason `Invalid` for evaluation errors), every error a cause.
//!
//! `reinvocationPolicy: IfNeeded`: when a later policy changed the object,
//! the IfNeeded policies run before it run once more. Differences from
//! kube: reinvocation is within this plugin (kube also reinvokes when a
//! mutating webhook changed the object afterwards), DELETE is not mutated
//! (as kube), the `authorizer` variable is not declared, and struct
//! literals are not typed from the schema.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use ubernetes_apimachinery::{ApiError, Cause};

use crate::admission::{Admission, Attributes, Operation};
use crate::policy::{
    BindingUse, Expr, Inputs, PolicyHeader, RequestScope, aggregate, applicable_bindings, bindings,
    exempt, forbidden_name, namespace_object, request_value, sorted_list, spec_list,
};
use crate::registry::Registry;

/// One of a policy's `mutations`.
enum Mutation {
    JsonPatch(Expr),
    Apply(Expr),
    /// A `patchType` this server does not know (kube skips it).
    Unknown,
}

/// A MutatingAdmissionPolicy with its expressions compiled.
struct Compiled {
    head: PolicyHeader,
    reinvoke_if_needed: bool,
    mutations: Vec<Mutation>,
}

impl Compiled {
    fn new(policy: &Value) -> Self {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        let expr = |v: &Value, f: &str| {
            v.get(f)
                .and_then(|x| x.get("expression"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Self {
            head: PolicyHeader::new(policy),
            reinvoke_if_needed: spec.get("reinvocationPolicy").and_then(Value::as_str)
                == Some("IfNeeded"),
            mutations: spec_list(spec, "mutations")
                .iter()
                .map(
                    |m| match m.get("patchType").and_then(Value::as_str).unwrap_or("") {
                        "JSONPatch" => Mutation::JsonPatch(Expr::mutation(&expr(m, "jsonPatch"))),
                        "ApplyConfiguration" => {
                            Mutation::Apply(Expr::mutation(&expr(m, "applyConfiguration")))
                        }
                        _ => Mutation::Unknown,
                    },
                )
                .collect(),
        }
    }
}

/// What the mutations of one invocation may read besides the object.
pub(crate) struct Context<'a> {
    pub old_object: Option<&'a Value>,
    pub request: &'a Value,
    pub params: Option<&'a Value>,
    pub namespace_object: Option<&'a Value>,
}

/// How applying a mutation's result to the object is done: the merge of
/// an apply configuration and the kind's decoding and defaults.
pub(crate) trait Patcher {
    fn merge_applied(&self, live: &Value, applied: &Value) -> Result<Value, String>;
    fn normalize(&self, obj: Value) -> Result<Value, ApiError>;
}

/// Runs one invocation (policy, binding, param) over `obj` (kube's
/// `dispatchInvocations` for one invocation): whether its match conditions
/// let it run, and the errors that go by the failure policy. As kube, a
/// mutation that fails is skipped and the others still apply; a Status
/// error (the patched object does not decode) is returned.
fn invoke(
    p: &Compiled,
    ctx: &Context<'_>,
    patcher: &dyn Patcher,
    obj: &mut Value,
) -> Result<(bool, Vec<String>), ApiError> {
    let mut budget = ubernetes_cel::RUNTIME_COST_BUDGET;
    // matchConditions: any false → skip; errors → the failure policy
    // (Ignore: skipped).
    {
        let object = obj.clone();
        let inp = Inputs {
            object: Some(&object),
            old_object: ctx.old_object,
            request: ctx.request,
            params: ctx.params,
            namespace_object: ctx.namespace_object,
        };
        let empty = json!({});
        let vars = bindings(&inp, &empty);
        let mut errors = Vec::new();
        for (_, cond) in &p.head.match_conditions {
            match cond.eval(&vars, &mut budget) {
                Ok(Value::Bool(false)) => return Ok((false, Vec::new())),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            if p.head.fail_open {
                return Ok((false, Vec::new()));
            }
            return Ok((false, vec![aggregate(&errors)]));
        }
    }
    let mut errors = Vec::new();
    for mutation in &p.mutations {
        let object = obj.clone();
        let inp = Inputs {
            object: Some(&object),
            old_object: ctx.old_object,
            request: ctx.request,
            params: ctx.params,
            namespace_object: ctx.namespace_object,
        };
        // Variables see the object as the previous mutation left it.
        let mut variables = serde_json::Map::new();
        for (name, expr) in &p.head.variables {
            let vars_json = Value::Object(variables.clone());
            let vars = bindings(&inp, &vars_json);
            if let Ok(v) = expr.eval(&vars, &mut budget) {
                variables.insert(name.clone(), v);
            }
        }
        let vars_json = Value::Object(variables);
        let vars = bindings(&inp, &vars_json);
        let patched = match mutation {
            Mutation::Unknown => continue,
            Mutation::JsonPatch(expr) => expr
                .eval(&vars, &mut budget)
                .and_then(|result| json_patch_result(&result))
                .and_then(|ops| apply_json_patch(obj, &ops)),
            Mutation::Apply(expr) => expr.eval(&vars, &mut budget).and_then(|result| {
                let Value::Object(mut applied) = result else {
                    return Err(format!(
                        "unsupported return type from ApplyConfiguration expression: {}",
                        crate::policy::cel_type_name(&result)
                    ));
                };
                for f in ["apiVersion", "kind"] {
                    if let Some(v) = obj.get(f) {
                        applied.insert(f.into(), v.clone());
                    }
                }
                patcher
                    .merge_applied(obj, &Value::Object(applied))
                    .map_err(|e| format!("error applying patch: {e}"))
            }),
        };
        match patched {
            // Decoded and defaulted again, as kube does the patched object.
            Ok(patched) if patched != *obj => *obj = patcher.normalize(patched)?,
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    Ok((true, errors))
}

/// The RFC 6902 operations of a JSONPatch expression's result (a list of
/// `JSONPatch{op, path, from, value}`).
fn json_patch_result(result: &Value) -> Result<json_patch::Patch, String> {
    let Value::Array(items) = result else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(fields) = item else {
            return Err(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch"
                    .into(),
            );
        };
        let mut op = serde_json::Map::new();
        for f in ["op", "path", "from"] {
            let v = fields.get(f).and_then(Value::as_str).unwrap_or("");
            if f != "from" || !v.is_empty() {
                op.insert(f.into(), json!(v));
            }
        }
        if let Some(v) = fields.get("value") {
            op.insert("value".into(), v.clone());
        }
        ops.push(Value::Object(op));
    }
    serde_json::from_value(Value::Array(ops)).map_err(|e| format!("JSONPath: {e}"))
}

/// `obj` patched; unchanged when a `test` operation fails (kube: "the
/// patch must not be applied").
fn apply_json_patch(obj: &Value, ops: &json_patch::Patch) -> Result<Value, String> {
    let mut doc = obj.clone();
    match json_patch::patch(&mut doc, ops) {
        Ok(()) => Ok(doc),
        Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => Ok(obj.clone()),
        Err(e) => Err(format!("JSONPath: {e}")),
    }
}

/// The `MutatingAdmissionPolicy` admission plugin (mutating phase).
pub struct MutatingAdmissionPolicy {
    registry: Weak<Registry>,
    compiled: crate::policy::CompileCache<Compiled>,
}

impl MutatingAdmissionPolicy {
    pub fn new(registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::downgrade(registry),
            compiled: crate::policy::CompileCache::new(),
        })
    }

    fn compiled(&self, policy: &Value) -> Arc<Compiled> {
        self.compiled.get_or_compile(policy, Compiled::new)
    }
}

/// The registry's field manager and the resource's strategy.
struct StorePatcher<'a> {
    registry: &'a Registry,
    info: &'a ubernetes_apimachinery::ResourceInfo,
}

impl Patcher for StorePatcher<'_> {
    fn merge_applied(&self, live: &Value, applied: &Value) -> Result<Value, String> {
        match self.registry.field_manager() {
            Some(fm) => fm.merge_applied(self.info, live, applied),
            None => Ok(crate::managed_fields::merge_untyped(live, applied)),
        }
    }

    fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
        let info = self.info;
        match self
            .registry
            .get(&info.group, &info.version, &info.resource)
        {
            Some(store) => store
                .strategy()
                .normalize(obj)
                .map_err(|e| ApiError::internal(e.message)),
            None => Ok(obj),
        }
    }
}

/// A refusal: which policy and binding, and why.
struct PolicyError {
    policy: String,
    binding: Option<String>,
    message: String,
    /// `Invalid` for evaluation errors; empty for configuration errors.
    reason: &'static str,
}

impl PolicyError {
    /// kube's `PolicyError.Error()`.
    fn text(&self) -> String {
        match &self.binding {
            Some(b) => format!(
                "policy '{}' with binding '{b}' denied request: {}",
                self.policy, self.message
            ),
            None => format!(
                "policy \"{}\" denied request: {}",
                self.policy, self.message
            ),
        }
    }
}

/// One policy × binding × param to run.
struct Invocation {
    policy: Arc<Compiled>,
    binding: String,
    param: Value,
}

/// What every invocation of one request reads besides the object and param.
struct Shared<'a> {
    old_object: Option<&'a Value>,
    request: &'a Value,
    namespace_object: Option<&'a Value>,
}

/// Runs the invocations in order over `obj` (kube's `dispatchInvocations`),
/// then once more those with `reinvocationPolicy: IfNeeded` that ran before
/// a later one changed the object. Errors that go by the failure policy are
/// added to `errors` (with whether to ignore them); a mutation's Status
/// error is returned.
fn dispatch(
    invocations: &[Invocation],
    shared: &Shared<'_>,
    patcher: &dyn Patcher,
    obj: &mut Value,
    errors: &mut Vec<(bool, PolicyError)>,
) -> Result<(), ApiError> {
    // kube's reinvocation bookkeeping: the IfNeeded invocations run since
    // the last change, and those to run again.
    let mut previously: Vec<usize> = Vec::new();
    let mut reinvoke: Vec<usize> = Vec::new();
    for round in 0..2 {
        for (i, inv) in invocations.iter().enumerate() {
            if round == 1 && !reinvoke.contains(&i) {
                continue;
            }
            let ctx = Context {
                old_object: shared.old_object,
                request: shared.request,
                params: Some(&inv.param).filter(|p| !p.is_null()),
                namespace_object: shared.namespace_object,
            };
            let before = obj.clone();
            let (ran, failed) = invoke(&inv.policy, &ctx, patcher, obj)?;
            for message in failed {
                tracing::debug!(policy = %inv.policy.head.name, binding = %inv.binding, error = %message, "MutatingAdmissionPolicy mutation failed");
                errors.push((
                    inv.policy.head.fail_open,
                    PolicyError {
                        policy: inv.policy.head.name.clone(),
                        binding: Some(inv.binding.clone()),
                        message,
                        reason: "Invalid",
                    },
                ));
            }
            if !ran {
                continue;
            }
            if *obj != before {
                reinvoke.append(&mut previously);
            }
            if inv.policy.reinvoke_if_needed && round == 0 {
                previously.push(i);
            }
        }
        if reinvoke.is_empty() {
            break;
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl Admission for MutatingAdmissionPolicy {
    /// No policy (the usual case) is known without copying the object; a
    /// change is seen against the copy the policies' dispatch keeps anyway.
    async fn mutate_changed(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<(Vec<String>, bool), ApiError> {
        let info = attrs.info;
        // No body to mutate on DELETE: kube's handler takes CREATE, UPDATE
        // and CONNECT only.
        if attrs.operation == Operation::Delete || exempt(&info.group, &info.resource) {
            return Ok((Vec::new(), false));
        }
        let Some(registry) = self.registry.upgrade() else {
            return Ok((Vec::new(), false));
        };
        let policies = sorted_list(&registry, "mutatingadmissionpolicies").await;
        if policies.is_empty() {
            return Ok((Vec::new(), false));
        }
        let all_bindings = sorted_list(&registry, "mutatingadmissionpolicybindings").await;
        let scope = RequestScope::of(&registry, attrs).await;
        let request = request_value(attrs);
        let ns_value = scope.namespace_object.as_ref().map(namespace_object);
        let mut errors: Vec<(bool, PolicyError)> = Vec::new();
        let mut invocations = Vec::new();
        let before_all = obj.clone();
        {
            let object = obj.clone();
            let m = scope.match_input(attrs, Some(&object), attrs.old);
            for policy in &policies {
                let p = self.compiled(policy);
                for found in applicable_bindings(&registry, &p.head, &all_bindings, &m).await {
                    match found {
                        BindingUse::Run { name, params, .. } => {
                            for param in params {
                                invocations.push(Invocation {
                                    policy: p.clone(),
                                    binding: name.clone(),
                                    param,
                                });
                            }
                        }
                        BindingUse::Misconfigured { binding, message } => errors.push((
                            p.head.fail_open,
                            PolicyError {
                                policy: p.head.name.clone(),
                                binding,
                                message,
                                reason: "",
                            },
                        )),
                    }
                }
            }
        }
        let patcher = StorePatcher {
            registry: &registry,
            info,
        };
        let shared = Shared {
            old_object: attrs.old,
            request: &request,
            namespace_object: ns_value.as_ref(),
        };
        dispatch(&invocations, &shared, &patcher, obj, &mut errors)?;
        let changed = *obj != before_all;
        if changed {
            tracing::debug!(resource = %info.resource, name = %attrs.name, "MutatingAdmissionPolicy mutated the object");
        }
        let refused: Vec<PolicyError> = errors
            .into_iter()
            .filter(|(ignore, _)| !ignore)
            .map(|(_, e)| e)
            .collect();
        if let Some(first) = refused.first() {
            let mut e = ApiError::forbidden(
                &info.group,
                &info.resource,
                &forbidden_name(attrs, obj),
                "admission request denied by policy",
            );
            e.message = first.text();
            if !first.reason.is_empty() {
                e.reason = first.reason.to_string();
            }
            e.causes = refused
                .iter()
                .map(|r| Cause::new("", r.text(), ""))
                .collect();
            return Err(e);
        }
        Ok((Vec::new(), changed))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The untyped merge and no defaults (the store's patcher without a
    /// schema).
    struct Plain;

    impl Patcher for Plain {
        fn merge_applied(&self, live: &Value, applied: &Value) -> Result<Value, String> {
            Ok(crate::managed_fields::merge_untyped(live, applied))
        }
        fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
            Ok(obj)
        }
    }

    fn policy(spec: Value) -> Compiled {
        Compiled::new(&json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn run(p: &Compiled, obj: &mut Value, params: Option<&Value>) -> (bool, Vec<String>) {
        let request = json!({"operation": "CREATE", "userInfo": {"username": "alice"}});
        let ns = json!({"metadata": {"name": "default", "labels": {"env": "prod"}}});
        let ctx = Context {
            old_object: None,
            request: &request,
            params,
            namespace_object: Some(&ns),
        };
        invoke(p, &ctx, &Plain, obj).unwrap()
    }

    fn configmap() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cm", "namespace": "default"}, "data": {"a": "1"}})
    }

    #[test]
    fn json_patch_adds_labels_in_order_with_variables_and_params() {
        let p = policy(json!({
            "variables": [{"name": "team", "expression": "params.data.team"}],
            "mutations": [
                {"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "[JSONPatch{op: 'add', path: '/metadata/labels', value: {}}]"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/team'), value: variables.team}, JSONPatch{op: 'add', path: '/metadata/labels/env', value: namespaceObject.metadata.labels.env}]"}}
            ]
        }));
        let mut obj = configmap();
        let params = json!({"data": {"team": "blue"}});
        assert_eq!(run(&p, &mut obj, Some(&params)), (true, vec![]));
        assert_eq!(
            obj["metadata"]["labels"],
            json!({"example.com/team": "blue", "env": "prod"})
        );
    }

    #[test]
    fn failed_test_operation_leaves_the_object_and_bad_paths_fail() {
        let p = policy(
            json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
            "[JSONPatch{op: 'test', path: '/data/a', value: '2'}, JSONPatch{op: 'replace', path: '/data/a', value: '3'}]"}}]}),
        );
        let mut obj = configmap();
        assert_eq!(run(&p, &mut obj, None), (true, vec![]));
        assert_eq!(obj, configmap());
        let p = policy(
            json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
            "[JSONPatch{op: 'remove', path: '/data/nope'}]"}}]}),
        );
        let (ran, errors) = run(&p, &mut configmap(), None);
        assert!(ran);
        assert!(errors[0].starts_with("JSONPath: "), "{errors:?}");
    }

    #[test]
    fn apply_configuration_merges_and_match_conditions_gate() {
        let p = policy(json!({
            "matchConditions": [{"name": "only-web", "expression": "object.metadata.name == 'web'"}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{spec: Object.spec{replicas: object.spec.replicas + 2}}"}}]
        }));
        let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"replicas": 1, "paused": true}});
        assert_eq!(run(&p, &mut obj, None), (true, vec![]));
        assert_eq!(obj["spec"], json!({"replicas": 3, "paused": true}));
        let mut other = json!({"metadata": {"name": "api"}, "spec": {"replicas": 1}});
        assert_eq!(run(&p, &mut other, None), (false, vec![]));
        assert_eq!(other["spec"]["replicas"], 1);
    }

    #[test]
    fn if_needed_policies_run_again_after_a_later_change() {
        let first = |reinvocation: &str| {
            Arc::new(Compiled::new(&json!({"metadata": {"name": "a"}, "spec": {
                "reinvocationPolicy": reinvocation,
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: {'a': has(object.metadata.labels) && 'b' in object.metadata.labels ? 'after-b' : 'first'}}}"}}]}})))
        };
        let second = Arc::new(Compiled::new(&json!({"metadata": {"name": "b"}, "spec": {
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {'b': 'x'}}}"}}]}})));
        let request = json!({});
        let shared = Shared {
            old_object: None,
            request: &request,
            namespace_object: None,
        };
        for (policy, want) in [("IfNeeded", "after-b"), ("Never", "first")] {
            let invocations = [
                Invocation {
                    policy: first(policy),
                    binding: "a".into(),
                    param: Value::Null,
                },
                Invocation {
                    policy: second.clone(),
                    binding: "b".into(),
                    param: Value::Null,
                },
            ];
            let mut obj = configmap();
            let mut errors = Vec::new();
            dispatch(&invocations, &shared, &Plain, &mut obj, &mut errors).unwrap();
            assert!(errors.is_empty());
            assert_eq!(
                obj["metadata"]["labels"],
                json!({"a": want, "b": "x"}),
                "{policy}"
            );
        }
    }

    #[test]
    fn failed_mutations_are_policy_errors_and_the_others_apply() {
        let broken = Arc::new(Compiled::new(
            &json!({"metadata": {"name": "broken"}, "spec": {
            "mutations": [
                {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/data/b', value: '2'}]"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'remove', path: '/nope'}]"}}
            ]}}),
        ));
        let request = json!({});
        let shared = Shared {
            old_object: None,
            request: &request,
            namespace_object: None,
        };
        let invocations = [Invocation {
            policy: broken,
            binding: "bb".into(),
            param: Value::Null,
        }];
        let mut obj = configmap();
        let mut errors = Vec::new();
        dispatch(&invocations, &shared, &Plain, &mut obj, &mut errors).unwrap();
        // As kube: the mutation that failed is skipped, the one before kept.
        assert_eq!(obj["data"], json!({"a": "1", "b": "2"}));
        assert_eq!(errors.len(), 1);
        let (ignore, e) = &errors[0];
        assert!(!ignore);
        assert_eq!(e.reason, "Invalid");
        assert!(
            e.text()
                .starts_with("policy 'broken' with binding 'bb' denied request: JSONPath: "),
            "{}",
            e.text()
        );
    }

    #[test]
    fn expression_errors_and_wrong_types_are_policy_errors() {
        let p = policy(json!({"mutations": [{"patchType": "ApplyConfiguration",
            "applyConfiguration": {"expression": "object.spec.nope"}}]}));
        assert_eq!(
            run(&p, &mut configmap(), None).1,
            vec!["expression 'object.spec.nope' resulted in error: no such key: spec".to_string()]
        );
        let p = policy(json!({"mutations": [{"patchType": "ApplyConfiguration",
            "applyConfiguration": {"expression": "'x'"}}]}));
        assert_eq!(
            run(&p, &mut configmap(), None).1,
            vec!["unsupported return type from ApplyConfiguration expression: string".to_string()]
        );
        let p = policy(json!({"failurePolicy": "Ignore",
            "matchConditions": [{"name": "broken", "expression": "object.nope"}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]}));
        assert_eq!(run(&p, &mut configmap(), None), (false, vec![]));
        // Under Fail, the match condition's error is the policy's.
        let p = policy(
            json!({"matchConditions": [{"name": "broken", "expression": "object.nope"}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"}}]}),
        );
        let (ran, errors) = run(&p, &mut configmap(), None);
        assert!(!ran);
        assert_eq!(
            errors,
            vec!["expression 'object.nope' resulted in error: no such key: nope".to_string()]
        );
    }
}
