//! The `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins
//! (kube's `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook`):
//! the webhooks of every `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` (read from the registry's watch cache,
//! configurations sorted by name, webhooks in their order) are matched
//! against each write and called with an `AdmissionReview` v1.
//!
//! Matching, as kube's `ShouldCallHook`:
//! - `rules`: operations, apiGroups, apiVersions, resources (`*`,
//!   `*/*`, `pods/status`, `*/status`, `pods/*`) and scope;
//!   `matchPolicy: Equivalent` (the default) also matches a rule naming
//!   another served version of the same group/resource (the object is sent
//!   as it is: versions of one resource share their objects here, there is
//!   no conversion);
//! - `namespaceSelector` against the namespace's labels (a Namespace's own
//!   labels for namespaces; cluster-scoped objects are never excluded); a
//!   namespace that does not exist is kube's 404;
//! - `objectSelector` against the labels of the object or the old object;
//! - `matchConditions` (CEL on `object`, `oldObject`, `request`; no
//!   `authorizer` here): all must be true; an error refuses the request
//!   (403) under `failurePolicy: Fail` and skips the webhook under Ignore.
//!
//! Calling (see [`crate::client`]): `timeoutSeconds` (default 10);
//! `failurePolicy` (default Fail) decides whether a webhook that cannot be
//! called or answers nonsense refuses the request (kube's 500 `Internal
//! error occurred: failed calling webhook "NAME": …`) or is skipped; a
//! denial is `admission webhook "NAME" denied the request: MESSAGE` with
//! the webhook's code (at least 400). A dry-run request is refused (400
//! `admission webhook "NAME" does not support dry run`) by a webhook whose
//! `sideEffects` is not `None` or `NoneOnDryRun`.
//!
//! Mutating webhooks run in order and their JSONPatch (`patchType:
//! JSONPatch`) is applied at once; with `reinvocationPolicy: IfNeeded` a
//! webhook is called a second time when a webhook after it changed the
//! object (kube's reinvocation, limited to this plugin's webhooks).
//! Validating webhooks run in parallel; the first refusal in webhook order
//! wins. Warnings of either become `Warning: 299` headers.
//!
//! Never called on the admission configuration kinds themselves
//! (webhook configurations, ValidatingAdmissionPolicy and its bindings), so
//! a broken webhook cannot lock its own fix out, as kube.
//!
//! Server-internal writes (no user) are sent as `system:apiserver` in
//! `system:masters`, kube's loopback identity.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use ubernetes_apimachinery::labels::Selector;
use ubernetes_apimachinery::{ApiError, ResourceInfo};
use ubernetes_registry::Registry;
use ubernetes_registry::admission::{Admission, Attributes, Operation};
use ubernetes_registry::store::ReadAt;

use crate::client::{self, ClientConfig, ServiceResolver};

const GROUP: &str = "admissionregistration.k8s.io";
/// kube's default `timeoutSeconds`.
const DEFAULT_TIMEOUT: u64 = 10;

/// One `rules` entry.
#[derive(Debug, Clone, Default)]
struct Rule {
    operations: Vec<String>,
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

impl Rule {
    fn from_json(v: &Value) -> Self {
        Self {
            operations: strings(v.get("operations")),
            api_groups: strings(v.get("apiGroups")),
            api_versions: strings(v.get("apiVersions")),
            resources: strings(v.get("resources")),
            scope: v
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
        }
    }

    /// kube's `rules.Matcher.Matches` for `group/version/resource/sub`.
    fn matches(
        &self,
        op: Operation,
        group: &str,
        version: &str,
        resource: &str,
        sub: &str,
        namespaced_request: bool,
    ) -> bool {
        let scope = match self.scope.as_str() {
            "Namespaced" => resource != "namespaces" && namespaced_request,
            "Cluster" => resource == "namespaces" || !namespaced_request,
            _ => true,
        };
        let operation = exact_or_wildcard(&self.operations, op.as_str());
        let resource_ok = self.resources.iter().any(|r| {
            let (res, rsub) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (res == "*" || res == resource) && (rsub == "*" || rsub == sub)
        });
        scope
            && operation
            && exact_or_wildcard(&self.api_groups, group)
            && exact_or_wildcard(&self.api_versions, version)
            && resource_ok
    }
}

/// One webhook of a configuration.
#[derive(Debug, Clone)]
struct Hook {
    name: String,
    /// The configuration's name and the webhook's index (reinvocation).
    uid: String,
    client: Result<ClientConfig, String>,
    rules: Vec<Rule>,
    ignore_failures: bool,
    exact: bool,
    namespace_selector: Value,
    object_selector: Value,
    side_effects: Option<String>,
    timeout: Duration,
    reinvoke_if_needed: bool,
    match_conditions: Vec<(String, String)>,
    review_version: String,
}

impl Hook {
    fn from_json(config: &str, index: usize, v: &Value) -> Self {
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let timeout = v
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT);
        let versions = strings(v.get("admissionReviewVersions"));
        let review_version = if versions.is_empty() || versions.iter().any(|s| s == "v1") {
            "v1"
        } else if versions.iter().any(|s| s == "v1beta1") {
            "v1beta1"
        } else {
            ""
        };
        Self {
            uid: format!("{config}/{name}/{index}"),
            name,
            client: v
                .get("clientConfig")
                .ok_or_else(|| "clientConfig is required".to_string())
                .and_then(ClientConfig::from_json),
            rules: v
                .get("rules")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Rule::from_json).collect())
                .unwrap_or_default(),
            ignore_failures: v.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
            exact: v.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
            namespace_selector: v
                .get("namespaceSelector")
                .filter(|s| !s.is_null())
                .cloned()
                .unwrap_or_else(|| json!({})),
            object_selector: v
                .get("objectSelector")
                .filter(|s| !s.is_null())
                .cloned()
                .unwrap_or_else(|| json!({})),
            side_effects: v
                .get("sideEffects")
                .and_then(Value::as_str)
                .map(str::to_string),
            timeout: Duration::from_secs(timeout.max(1)),
            reinvoke_if_needed: v.get("reinvocationPolicy").and_then(Value::as_str)
                == Some("IfNeeded"),
            match_conditions: v
                .get("matchConditions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            let get = |k: &str| {
                                c.get(k).and_then(Value::as_str).unwrap_or("").to_string()
                            };
                            (get("name"), get("expression"))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            review_version: review_version.to_string(),
        }
    }
}

/// A failure to call a webhook (kube's `ErrCallingWebhook`): subject to
/// `failurePolicy`.
struct CallingError(String);

/// Why a hook did not admit.
enum HookError {
    /// Subject to `failurePolicy`.
    Calling(CallingError),
    /// A refusal (denial, dry run unsupported, bad patch): never ignored.
    Refused(ApiError),
}

/// A webhook's verified answer.
#[derive(Debug)]
struct Verdict {
    allowed: bool,
    status: Value,
    patch: Option<Vec<u8>>,
    warnings: Vec<String>,
}

/// kube's `VerifyAdmissionResponse`.
fn verify(uid: &str, version: &str, review: &Value, mutating: bool) -> Result<Verdict, String> {
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    let want = format!("admission.k8s.io/{version}");
    if api_version != want || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of {want}, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let Some(resp) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
    }
    let patch = match resp.get("patch").and_then(Value::as_str) {
        Some(p) if !p.is_empty() => {
            use base64::Engine;
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .map_err(|e| format!("response.patch is not base64: {e}"))?,
            )
        }
        _ => None,
    };
    let patch_type = resp.get("patchType").and_then(Value::as_str);
    if patch.is_some() && !mutating {
        return Err("validating webhooks may not return patches".into());
    }
    if patch.is_some() && patch_type.is_none() {
        return Err("webhook returned response.patch but not response.patchType".into());
    }
    if patch.is_none() && patch_type.is_some() {
        return Err("webhook returned response.patchType but not response.patch".into());
    }
    if let Some(t) = patch_type
        && t != "JSONPatch"
    {
        return Err(format!("unsupported patch type \"{t}\""));
    }
    Ok(Verdict {
        allowed: resp
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        status: resp.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings: strings(resp.get("warnings")),
    })
}

/// kube's `webhookerrors.ToStatusErr`: the webhook's Status, worded as a
/// refusal by `name`, with a code of at least 400.
fn denied(name: &str, status: &Value) -> ApiError {
    let denied_by = format!("admission webhook \"{name}\" denied the request");
    let message = status.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400) as u16;
    let text = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let mut e = ApiError::new(
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::BAD_REQUEST),
        reason,
        text,
    );
    e.code = code;
    e
}

/// The user as `AdmissionRequest.userInfo` shows it.
fn user_info(attrs: &Attributes<'_>) -> Value {
    let Some(u) = attrs.user else {
        return json!({"username": "system:apiserver", "groups": ["system:masters", "system:authenticated"]});
    };
    let mut v = json!({"username": u.name});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    if !u.groups.is_empty() {
        v["groups"] = json!(u.groups);
    }
    if !u.extra.is_empty() {
        v["extra"] = json!(u.extra);
    }
    v
}

/// The `AdmissionRequest` (without uid) for a write; `matched` is the
/// resource the rule matched (an equivalent version under matchPolicy
/// Equivalent).
fn admission_request(attrs: &Attributes<'_>, matched: &ResourceInfo, obj: &Value) -> Value {
    let info = attrs.info;
    let mut req = json!({
        "kind": {"group": matched.group, "version": matched.version, "kind": matched.kind},
        "resource": {"group": matched.group, "version": matched.version, "resource": matched.resource},
        "requestKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "requestResource": {"group": info.group, "version": info.version, "resource": info.resource},
        "name": attrs.name,
        "operation": attrs.operation.as_str(),
        "userInfo": user_info(attrs),
        "object": if attrs.operation == Operation::Delete { Value::Null } else { obj.clone() },
        "oldObject": match attrs.operation {
            Operation::Update | Operation::Delete => attrs.old.cloned().unwrap_or(Value::Null),
            _ => Value::Null,
        },
        "dryRun": attrs.dry_run,
    });
    if let Some(sub) = attrs.subresource {
        req["subResource"] = json!(sub);
        req["requestSubResource"] = json!(sub);
    }
    if let Some(ns) = attrs.namespace
        && info.namespaced
    {
        req["namespace"] = json!(ns);
    }
    if let Some(o) = attrs.options {
        req["options"] = o.clone();
    }
    req
}

/// The webhook plugins: mutating webhooks in [`Admission::mutate`],
/// validating webhooks in [`Admission::validate`].
pub struct WebhookAdmission {
    registry: Weak<Registry>,
    resolver: Arc<dyn ServiceResolver>,
}

impl WebhookAdmission {
    /// The plugin over `registry`'s configurations; Services resolve
    /// through the registry's Endpoints.
    pub fn new(registry: &Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            registry: Arc::downgrade(registry),
            resolver: Arc::new(crate::RegistryServiceResolver::new(registry)),
        })
    }

    fn registry(&self) -> Result<Arc<Registry>, ApiError> {
        self.registry
            .upgrade()
            .ok_or_else(|| ApiError::service_unavailable("the server is shutting down"))
    }

    /// Every webhook of the configurations of `resource`, configurations
    /// sorted by name.
    async fn hooks(&self, resource: &str) -> Result<Vec<Hook>, ApiError> {
        let registry = self.registry()?;
        let Some(store) = registry.get(GROUP, "v1", resource) else {
            return Ok(Vec::new());
        };
        let list = store.list(None, None, 0, None, ReadAt::Any).await?;
        let mut configs: Vec<Value> = list
            .items
            .iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect();
        configs.sort_by(|a, b| {
            let n = |v: &Value| {
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            n(a).cmp(&n(b))
        });
        let mut hooks = Vec::new();
        for c in &configs {
            let cname = c
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Some(ws) = c.get("webhooks").and_then(Value::as_array) {
                hooks.extend(
                    ws.iter()
                        .enumerate()
                        .map(|(i, w)| Hook::from_json(cname, i, w)),
                );
            }
        }
        Ok(hooks)
    }

    /// The resource a hook's rules match for this request (the request's
    /// own, or under Equivalent another served version of it).
    fn matched_resource(&self, hook: &Hook, attrs: &Attributes<'_>) -> Option<ResourceInfo> {
        let info = attrs.info;
        let sub = attrs.subresource.unwrap_or("");
        let namespaced = attrs.namespace.is_some_and(|n| !n.is_empty()) && info.namespaced;
        let hit = |i: &ResourceInfo| {
            hook.rules.iter().any(|r| {
                r.matches(
                    attrs.operation,
                    &i.group,
                    &i.version,
                    &i.resource,
                    sub,
                    namespaced,
                )
            })
        };
        if hit(info) {
            return Some(info.clone());
        }
        if hook.exact {
            return None;
        }
        let registry = self.registry.upgrade()?;
        registry
            .resources()
            .into_iter()
            .find(|i| i.group == info.group && i.resource == info.resource && hit(i))
    }

    /// kube's `MatchNamespaceSelector`.
    async fn namespace_matches(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        obj: &Value,
    ) -> Result<bool, ApiError> {
        let is_namespace = attrs.info.group.is_empty() && attrs.info.resource == "namespaces";
        let ns = attrs
            .namespace
            .filter(|n| !n.is_empty() && attrs.info.namespaced);
        if ns.is_none() && !is_namespace {
            return Ok(true);
        }
        let selector = Selector::from_label_selector(&hook.namespace_selector)?;
        if selector.is_empty() && !selector.matches_nothing() {
            return Ok(true);
        }
        let labels_of = |v: &Value| -> std::collections::BTreeMap<String, String> {
            v.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let labels = if is_namespace {
            // The request is about the namespace itself: its labels as the
            // request has them (the old ones on delete).
            match attrs.operation {
                Operation::Delete => labels_of(attrs.old.unwrap_or(obj)),
                _ => labels_of(obj),
            }
        } else {
            let registry = self.registry()?;
            let Some(namespaces) = registry.namespaces() else {
                return Ok(true);
            };
            let name = ns.unwrap_or_default();
            let v = namespaces.get_value(None, name).await?;
            labels_of(&v)
        };
        Ok(selector.matches(&labels))
    }

    /// kube's `MatchObjectSelector`: the object's or the old object's labels.
    fn object_matches(hook: &Hook, attrs: &Attributes<'_>, obj: &Value) -> Result<bool, ApiError> {
        let selector = Selector::from_label_selector(&hook.object_selector)?;
        if selector.is_empty() && !selector.matches_nothing() {
            return Ok(true);
        }
        let matches = |v: Option<&Value>| {
            v.and_then(|v| v.pointer("/metadata/labels"))
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                        .collect()
                })
                .is_some_and(|l| selector.matches(&l))
        };
        let object = (attrs.operation != Operation::Delete).then_some(obj);
        Ok(matches(object) || matches(attrs.old))
    }

    /// kube's matchConditions: `Ok(false)` skips the webhook.
    fn conditions_match(
        hook: &Hook,
        attrs: &Attributes<'_>,
        request: &Value,
    ) -> Result<bool, ApiError> {
        use ubernetes_cel::{Binding, Type, compile};
        let decls = [
            ("object", Type::Dyn),
            ("oldObject", Type::Dyn),
            ("request", Type::Dyn),
        ];
        let object = request.get("object").filter(|o| !o.is_null());
        let old = request.get("oldObject").filter(|o| !o.is_null());
        let mut errors = Vec::new();
        for (name, expr) in &hook.match_conditions {
            let result = compile(expr, &decls)
                .map_err(|e| e.to_string())
                .and_then(|p| {
                    p.eval(
                        &[
                            ("object", Binding::Json(object)),
                            ("oldObject", Binding::Json(old)),
                            ("request", Binding::Json(Some(request))),
                        ],
                        ubernetes_cel::PER_CALL_LIMIT,
                    )
                    .map_err(|e| e.to_string())
                });
            match result {
                Ok((ubernetes_cel::cel::Value::Bool(true), _)) => {}
                Ok((ubernetes_cel::cel::Value::Bool(false), _)) => return Ok(false),
                Ok((other, _)) => errors.push(format!(
                    "matchCondition '{name}': expected a boolean, got {other:?}"
                )),
                Err(e) => errors.push(format!("matchCondition '{name}': {e}")),
            }
        }
        if errors.is_empty() {
            return Ok(true);
        }
        if hook.ignore_failures {
            tracing::warn!(webhook = %hook.name, errors = ?errors, "match conditions failed; failurePolicy Ignore skips the webhook");
            return Ok(false);
        }
        Err(ApiError::forbidden(
            &attrs.info.group,
            &attrs.info.resource,
            attrs.name,
            &errors.join(", "),
        ))
    }

    /// Whether `hook` is called for this request, and the request it gets.
    async fn should_call(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        obj: &Value,
    ) -> Result<Option<Value>, ApiError> {
        let Some(matched) = self.matched_resource(hook, attrs) else {
            return Ok(None);
        };
        if !self.namespace_matches(hook, attrs, obj).await? {
            return Ok(None);
        }
        if !Self::object_matches(hook, attrs, obj)? {
            return Ok(None);
        }
        let request = admission_request(attrs, &matched, obj);
        if !hook.match_conditions.is_empty() && !Self::conditions_match(hook, attrs, &request)? {
            return Ok(None);
        }
        Ok(Some(request))
    }

    /// Call one webhook with `request`.
    async fn call(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        mut request: Value,
        mutating: bool,
    ) -> Result<Verdict, HookError> {
        if attrs.dry_run {
            match hook.side_effects.as_deref() {
                None => {
                    return Err(HookError::Calling(CallingError(
                        "Webhook SideEffects is nil".into(),
                    )));
                }
                Some("None") | Some("NoneOnDryRun") => {}
                Some(_) => {
                    return Err(HookError::Refused(ApiError::bad_request(format!(
                        "admission webhook \"{}\" does not support dry run",
                        hook.name
                    ))));
                }
            }
        }
        if hook.review_version.is_empty() {
            return Err(HookError::Calling(CallingError(
                "webhook does not accept known AdmissionReview versions (v1, v1beta1)".into(),
            )));
        }
        let client = hook.client.as_ref().map_err(|e| {
            HookError::Calling(CallingError(format!("could not get REST client: {e}")))
        })?;
        let uid = uuid::Uuid::new_v4().to_string();
        request["uid"] = json!(uid);
        let review = json!({
            "apiVersion": format!("admission.k8s.io/{}", hook.review_version),
            "kind": "AdmissionReview",
            "request": request,
        });
        let started = std::time::Instant::now();
        let answer = client::post_json(client, self.resolver.as_ref(), &review, hook.timeout)
            .await
            .map_err(|e| {
                HookError::Calling(CallingError(format!("failed to call webhook: {e}")))
            })?;
        tracing::debug!(webhook = %hook.name, elapsed = ?started.elapsed(), "webhook answered");
        verify(&uid, &hook.review_version, &answer, mutating).map_err(|e| {
            HookError::Calling(CallingError(format!(
                "received invalid webhook response: {e}"
            )))
        })
    }

    /// Run one hook to a result: `Ok(None)` when skipped (not matched, or
    /// failed and `failurePolicy: Ignore`).
    async fn run(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        obj: &Value,
        mutating: bool,
    ) -> Result<Option<Verdict>, ApiError> {
        let Some(request) = self.should_call(hook, attrs, obj).await? else {
            return Ok(None);
        };
        match self.call(hook, attrs, request, mutating).await {
            Ok(v) if v.allowed => Ok(Some(v)),
            Ok(v) => Err(denied(&hook.name, &v.status)),
            Err(HookError::Refused(e)) => Err(e),
            Err(HookError::Calling(CallingError(why))) => {
                let msg = format!("failed calling webhook \"{}\": {why}", hook.name);
                if hook.ignore_failures {
                    tracing::warn!(webhook = %hook.name, error = %msg, "Failed calling webhook, failing open");
                    Ok(None)
                } else {
                    tracing::warn!(webhook = %hook.name, error = %msg, "Failed calling webhook, failing closed");
                    Err(ApiError::internal(msg))
                }
            }
        }
    }
}

/// Whether webhooks skip this resource (kube's
/// `IsExemptAdmissionConfigurationResource`).
fn exempt(info: &ResourceInfo) -> bool {
    info.group == GROUP
        && matches!(
            info.resource.as_str(),
            "validatingwebhookconfigurations"
                | "mutatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

#[async_trait::async_trait]
impl Admission for WebhookAdmission {
    /// Whether a webhook's patch changed the object is known per patch: no
    /// copy of the object is compared (none at all without webhooks).
    async fn mutate_changed(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
    ) -> Result<(Vec<String>, bool), ApiError> {
        if exempt(attrs.info) || attrs.operation == Operation::Connect {
            return Ok((Vec::new(), false));
        }
        let hooks = self.hooks("mutatingwebhookconfigurations").await?;
        if hooks.is_empty() {
            return Ok((Vec::new(), false));
        }
        let mut warnings = Vec::new();
        let mut any_changed = false;
        // kube's reinvocation bookkeeping: the IfNeeded webhooks called
        // since the last change, and those to call again.
        let mut previously: Vec<String> = Vec::new();
        let mut reinvoke: Vec<String> = Vec::new();
        for round in 0..2 {
            for hook in &hooks {
                if round == 1 && !reinvoke.contains(&hook.uid) {
                    continue;
                }
                let Some(verdict) = self.run(hook, attrs, &*obj, true).await? else {
                    continue;
                };
                warnings.extend(verdict.warnings);
                let changed = match verdict.patch {
                    Some(p) => apply_patch(hook, attrs, obj, &p)?,
                    None => false,
                };
                any_changed |= changed;
                if changed {
                    reinvoke.append(&mut previously);
                }
                if hook.reinvoke_if_needed && round == 0 {
                    previously.push(hook.uid.clone());
                }
            }
            if reinvoke.is_empty() {
                break;
            }
        }
        Ok((warnings, any_changed))
    }

    async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<Vec<String>, ApiError> {
        if exempt(attrs.info) || attrs.operation == Operation::Connect {
            return Ok(Vec::new());
        }
        let hooks = self.hooks("validatingwebhookconfigurations").await?;
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        // In parallel, as kube's validating dispatcher.
        let results =
            futures::future::join_all(hooks.iter().map(|h| self.run(h, attrs, obj, false))).await;
        let mut warnings = Vec::new();
        for r in results {
            if let Some(v) = r? {
                warnings.extend(v.warnings);
            }
        }
        Ok(warnings)
    }
}

/// Apply a mutating webhook's JSONPatch; whether the object changed.
fn apply_patch(
    hook: &Hook,
    attrs: &Attributes<'_>,
    obj: &mut Value,
    patch: &[u8],
) -> Result<bool, ApiError> {
    let ops: json_patch::Patch = serde_json::from_slice(patch).map_err(|e| {
        ApiError::internal(format!(
            "failed calling webhook \"{}\": received undecodable patch in webhook response: {e}",
            hook.name
        ))
    })?;
    if ops.0.is_empty() {
        return Ok(false);
    }
    if attrs.operation == Operation::Delete {
        return Err(ApiError::internal(format!(
            "admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    }
    let before = obj.clone();
    json_patch::patch(obj, &ops).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(*obj != before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: Value) -> Rule {
        Rule::from_json(&v)
    }

    #[test]
    fn rules_match_as_kubes_matcher() {
        let r = rule(
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}),
        );
        assert!(r.matches(Operation::Create, "", "v1", "configmaps", "", true));
        assert!(!r.matches(Operation::Update, "", "v1", "configmaps", "", true));
        assert!(!r.matches(Operation::Create, "apps", "v1", "configmaps", "", true));
        // `configmaps` does not match a subresource; `*/status` does.
        assert!(!r.matches(Operation::Create, "", "v1", "configmaps", "status", true));
        let s = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/status"]}),
        );
        assert!(s.matches(
            Operation::Update,
            "apps",
            "v1",
            "deployments",
            "status",
            true
        ));
        assert!(!s.matches(Operation::Update, "apps", "v1", "deployments", "", true));
        let all = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}),
        );
        assert!(all.matches(Operation::Delete, "x", "v9", "things", "scale", false));
        let star = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
        );
        assert!(!star.matches(Operation::Delete, "x", "v9", "things", "scale", false));
        // Scope: namespaces are cluster-scoped.
        let ns = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
        );
        assert!(ns.matches(Operation::Create, "", "v1", "pods", "", true));
        assert!(!ns.matches(Operation::Create, "", "v1", "namespaces", "", false));
        assert!(!ns.matches(Operation::Create, "", "v1", "nodes", "", false));
        let cl = rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
        );
        assert!(cl.matches(Operation::Create, "", "v1", "namespaces", "", false));
        assert!(!cl.matches(Operation::Create, "", "v1", "pods", "", true));
    }

    #[test]
    fn responses_are_verified_as_kube_does() {
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "warnings": ["careful"]}});
        let v = verify("u1", "v1", &ok, false).expect("verified");
        assert!(v.allowed && v.warnings == vec!["careful"]);
        let wrong_uid = verify("u2", "v1", &ok, false).expect_err("uid");
        assert_eq!(wrong_uid, "expected response.uid=\"u2\", got \"u1\"");
        let bad_kind = json!({"apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            verify("u1", "v1", &bad_kind, true).expect_err("kind"),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got v1, Kind=Status"
        );
        let patch = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u1", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"}});
        assert_eq!(
            verify("u1", "v1", &patch, false).expect_err("validating patch"),
            "validating webhooks may not return patches"
        );
        assert!(verify("u1", "v1", &patch, true).is_ok());
    }

    #[test]
    fn denials_are_worded_and_coded_as_kubes_to_status_err() {
        let e = denied(
            "deny.example.com",
            &json!({"code": 403, "message": "no labels"}),
        );
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no labels"
        );
        let e = denied("d", &Value::Null);
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"d\" denied the request without explanation"
        );
    }
}
