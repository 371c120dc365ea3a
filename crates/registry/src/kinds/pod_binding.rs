//! A Pod's `binding` subresource (`POST …/namespaces/NS/pods/NAME/binding`)
//! and the `bindings` resource (`POST …/namespaces/NS/bindings`), kube's
//! `BindingREST` of `pkg/registry/core/pod/storage/storage.go`: a `Binding`
//! assigns a Pod to a node, the scheduler's last step. Declared by the Pod
//! kind ([`Builtin::create_subresource`](super::Builtin::create_subresource)),
//! so the API server's handlers dispatch to it without naming it; the
//! `bindings` resource (not stored, create only) is described here too
//! ([`bindings_info`]) and served with the same code ([`create_binding`]).
//!
//! The Pod gets `spec.nodeName` and the Binding's annotations, then its
//! `PodScheduled` condition turns `True`. A Pod that already has a node, is
//! being deleted, or whose UID is not the Binding's is a 409 Conflict on
//! `pods/binding`, as in kube; the answer is kube's `Status{status:
//! Success, code: 201}`. `ValidatePodBinding`'s errors are answered as kube
//! answers their aggregate: a 500 without a reason.

use serde_json::{Value, json};
use ubernetes_apimachinery::error::field;
use ubernetes_apimachinery::{ApiError, ResourceInfo};

use crate::registry::Registry;
use crate::store::{Store, WriteOptions};
use crate::strategy::{CreateRest, Created, RestContext};

/// The Pod's `binding` REST.
pub static BINDING: BindingRest = BindingRest;

/// See [`BINDING`].
pub struct BindingRest;

/// The kind of the subresource's body.
const BINDING_KIND: &str = "Binding";
/// The resource kube's conflicts name.
const CONFLICT_RESOURCE: &str = "pods/binding";
/// The field manager of a binding written without one (the scheduler's).
const DEFAULT_MANAGER: &str = "kube-scheduler";

#[async_trait::async_trait]
impl CreateRest for BindingRest {
    /// kube's `BindingREST.Create` on `pods/NAME/binding`.
    async fn create(&self, ctx: RestContext<'_>, body: Value) -> Result<Created, ApiError> {
        let namespace = ctx
            .namespace
            .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
        bind(ctx.store, namespace, Some(ctx.name), &body, ctx.options).await
    }
}

/// The `bindings` resource as discovery lists it (core `v1`, namespaced,
/// create only; not stored).
pub fn bindings_info() -> ResourceInfo {
    ResourceInfo {
        group: String::new(),
        version: "v1".to_string(),
        resource: "bindings".to_string(),
        singular: "binding".to_string(),
        kind: BINDING_KIND.to_string(),
        namespaced: true,
        verbs: vec!["create".to_string()],
        short_names: Vec::new(),
        categories: Vec::new(),
        subresources: Vec::new(),
        definition: format!("io.k8s.api.core.v1.{BINDING_KIND}"),
    }
}

/// `POST …/namespaces/NS/bindings`: the same REST, the Pod named by the
/// Binding alone.
pub async fn create_binding(
    registry: &Registry,
    namespace: &str,
    body: &Value,
    opts: &WriteOptions,
) -> Result<Created, ApiError> {
    let pods = registry
        .get("", "v1", "pods")
        .ok_or_else(|| ApiError::internal("pods are not served"))?;
    bind(&pods, namespace, None, body, opts).await
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// kube's `ValidatePodBinding`: the field errors, answered as their
/// aggregate (a 500 without a reason: `[a, b]`, one error itself).
fn validate(binding: &Value) -> Result<(), ApiError> {
    let target_kind = str_at(binding, "/target/kind");
    let mut causes = Vec::new();
    if !target_kind.is_empty() && target_kind != "Node" {
        causes.push(field::not_supported(
            "target.kind",
            &json!(target_kind),
            &["Node", "<empty>"],
        ));
    }
    if str_at(binding, "/target/name").is_empty() {
        causes.push(field::required("target.name", ""));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let texts: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    let message = match texts.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    Err(ApiError {
        code: 500,
        reason: String::new(),
        message,
        subject: None,
        causes: Vec::new(),
        retry_after: None,
        list_continue: None,
    })
}

/// kube's `BindingREST.Create` + `assignPod`: validate the Binding, then
/// set the node, the annotations and the `PodScheduled` condition.
async fn bind(
    pods: &Store,
    namespace: &str,
    url_name: Option<&str>,
    binding: &Value,
    opts: &WriteOptions,
) -> Result<Created, ApiError> {
    let kind = str_at(binding, "/kind");
    if !kind.is_empty() && kind != BINDING_KIND {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {BINDING_KIND}: no kind \"{kind}\" is registered for version \"v1\""
        )));
    }
    let name = str_at(binding, "/metadata/name").to_string();
    if url_name.is_some_and(|u| u != name) {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let ns = str_at(binding, "/metadata/namespace");
    if !ns.is_empty() && ns != namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    validate(binding)?;
    let node = str_at(binding, "/target/name").to_string();
    let mut opts = opts.clone();
    opts.field_manager
        .get_or_insert_with(|| DEFAULT_MANAGER.into());
    let uid = str_at(binding, "/metadata/uid").to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let pod_name = name.clone();
    let target = node.clone();
    pods.patch(Some(namespace), &name, None, &opts, move |cur| {
        let conflict =
            |message: String| ApiError::conflict("", CONFLICT_RESOURCE, &pod_name, &message);
        if cur
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            return Err(conflict(format!(
                "pod {pod_name} is being deleted, cannot be assigned to a host"
            )));
        }
        let current_node = str_at(cur, "/spec/nodeName");
        if !current_node.is_empty() {
            return Err(conflict(format!(
                "pod {pod_name} is already assigned to node \"{current_node}\""
            )));
        }
        let current_uid = str_at(cur, "/metadata/uid");
        if !uid.is_empty() && current_uid != uid {
            return Err(conflict(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {current_uid}"
            )));
        }
        let mut next = cur.clone();
        next["spec"]["nodeName"] = json!(target);
        if !annotations.is_empty() {
            let meta = &mut next["metadata"];
            if !meta["annotations"].is_object() {
                meta["annotations"] = json!({});
            }
            for (k, v) in &annotations {
                meta["annotations"][k] = v.clone();
            }
        }
        Ok(next)
    })
    .await?;
    if !opts.dry_run {
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        pods.patch(Some(namespace), &name, Some("status"), &opts, move |cur| {
            let mut next = cur.clone();
            if !next["status"].is_object() {
                next["status"] = json!({});
            }
            let mut conditions: Vec<Value> = next["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c["type"] != "PodScheduled");
            conditions.push(json!({
                "type": "PodScheduled", "status": "True",
                "lastProbeTime": null, "lastTransitionTime": now,
            }));
            next["status"]["conditions"] = json!(conditions);
            Ok(next)
        })
        .await?;
    }
    tracing::info!(namespace, pod = %name, node = %node, "bound pod to node");
    Ok(Created {
        object: json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        warnings: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_errors_are_kubes_aggregate() {
        let one = validate(&json!({"target": {"kind": "Node"}})).expect_err("no name");
        assert_eq!(one.code, 500);
        assert_eq!(one.message, "target.name: Required value");
        let two = validate(&json!({"target": {"kind": "Pod"}})).expect_err("a Pod target");
        assert_eq!(
            two.message,
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
        );
        assert!(validate(&json!({"target": {"name": "node-a"}})).is_ok());
    }
}
