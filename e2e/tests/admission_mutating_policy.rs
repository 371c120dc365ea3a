//! MutatingAdmissionPolicy with kubectl against a real server: a policy
//! whose JSONPatch mutation labels ConfigMaps of the namespaces its binding
//! selects, one whose ApplyConfiguration mutation sets a Deployment's
//! replicas (both seen on `kubectl get`), objects the bindings or match
//! conditions exclude left untouched, and a mutation that cannot apply
//! refusing the request with kube's generic policy Status.

mod kubectl_support;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually, kubectl_bin};

use kubectl_support::{SETTLE, json};

const POLICIES: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: map-on
  labels: {map-test: "on"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: map-off
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: label-configmaps
spec:
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: not-skipped
    expression: "!object.metadata.name.startsWith('skip-')"
  variables:
  - name: label
    expression: "'policy.example.com/mutated-by'"
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        has(object.metadata.labels)
        ? [JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey(variables.label), value: "label-configmaps"}]
        : [JSONPatch{op: "add", path: "/metadata/labels", value: {"policy.example.com/mutated-by": "label-configmaps"}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: label-configmaps-binding
spec:
  policyName: label-configmaps
  matchResources:
    namespaceSelector:
      matchLabels: {map-test: "on"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: three-replicas
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{replicas: 3}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: three-replicas-binding
spec:
  policyName: three-replicas
  matchResources:
    namespaceSelector:
      matchLabels: {map-test: "on"}
"#;

const BROKEN: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: broken
spec:
  failurePolicy: Fail
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["secrets"]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "remove", path: "/data/missing"}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: broken-binding
spec:
  policyName: broken
  matchResources:
    namespaceSelector:
      matchLabels: {map-test: "on"}
"#;

fn deployment(ns: &str, name: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
"#
    )
}

fn label(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/labels/policy.example.com~1mutated-by")
        .and_then(Value::as_str)
}

/// POST `body` to `path` with the admin client: the status code and body.
fn post(server: &Server, path: &str, body: &Value) -> Result<(u16, Value)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = server.client().await?;
        let req = http::Request::builder()
            .method("POST")
            .uri(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(kube::client::Body::from(serde_json::to_vec(body)?))?;
        let res = client
            .send(req)
            .await
            .with_context(|| format!("POST {path}"))?;
        let code = res.status().as_u16();
        let bytes = res.into_body().collect_bytes().await?;
        Ok((code, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    })
}

#[test]
fn mutating_admission_policy_patches_and_applies_on_matching_objects_only() -> Result<()> {
    if !kubectl_bin().exists() {
        println!("SKIPPED: no kubectl at {}", kubectl_bin().display());
        return Ok(());
    }
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], POLICIES)?;

    // Policies reach admission through the watch cache: wait until the
    // JSONPatch shows on a created ConfigMap.
    let mut n = 0;
    let labelled = eventually(SETTLE, || {
        n += 1;
        let name = format!("probe-{n}");
        server.kubectl_ok(&["create", "configmap", &name, "-n", "map-on"])?;
        let cm = json(&server, &["get", "configmap", &name, "-n", "map-on"])?;
        Ok(label(&cm).is_some().then_some(cm))
    })?;
    ensure!(
        label(&labelled) == Some("label-configmaps"),
        "the JSONPatch label expected: {labelled}"
    );

    // A ConfigMap with labels of its own gets the label added beside them.
    server.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "map-on",
        "--from-literal=a=1",
    ])?;
    server.kubectl_ok(&[
        "label",
        "configmap",
        "settings",
        "-n",
        "map-on",
        "team=blue",
    ])?;
    let cm = json(&server, &["get", "configmap", "settings", "-n", "map-on"])?;
    ensure!(
        label(&cm) == Some("label-configmaps")
            && cm["metadata"]["labels"]["team"] == "blue"
            && cm["data"]["a"] == "1",
        "label added beside the object's own (on UPDATE too): {cm}"
    );

    // Not matching: another namespace (the binding's namespaceSelector)
    // and a name the match condition excludes are untouched.
    server.kubectl_ok(&["create", "configmap", "settings", "-n", "map-off"])?;
    let off = json(&server, &["get", "configmap", "settings", "-n", "map-off"])?;
    ensure!(
        off["metadata"].get("labels").is_none(),
        "a ConfigMap outside the binding must be untouched: {off}"
    );
    server.kubectl_ok(&["create", "configmap", "skip-me", "-n", "map-on"])?;
    let skipped = json(&server, &["get", "configmap", "skip-me", "-n", "map-on"])?;
    ensure!(
        label(&skipped).is_none(),
        "a ConfigMap the match condition excludes must be untouched: {skipped}"
    );

    // ApplyConfiguration: the Deployment is created with 1 replica and
    // stored with 3; outside the binding it keeps its 1.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &deployment("map-on", "web"))?;
    let d = json(&server, &["get", "deployment", "web", "-n", "map-on"])?;
    ensure!(
        d["spec"]["replicas"] == 3
            && d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27",
        "replicas 3 merged into the Deployment expected: {}",
        d["spec"]
    );
    let replicas = server.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        "map-on",
        "-o",
        "jsonpath={.spec.replicas}",
    ])?;
    ensure!(replicas.trim() == "3", "kubectl get shows {replicas}");
    server.kubectl_stdin_ok(&["create", "-f", "-"], &deployment("map-off", "web"))?;
    let d = json(&server, &["get", "deployment", "web", "-n", "map-off"])?;
    ensure!(
        d["spec"]["replicas"] == 1,
        "a Deployment outside the binding keeps its replicas: {}",
        d["spec"]
    );

    // A mutation that does not apply refuses the request (failurePolicy
    // Fail) with kube's generic policy Status: 403, reason Invalid.
    server.kubectl_stdin_ok(&["create", "-f", "-"], BROKEN)?;
    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s1", "namespace": "map-on"},
        "stringData": {"k": "v"}
    });
    let (code, status) = eventually(SETTLE, || {
        let (code, status) = post(&server, "/api/v1/namespaces/map-on/secrets", &body)?;
        if code == 201 {
            server.kubectl_ok(&["delete", "secret", "s1", "-n", "map-on"])?;
            return Ok(None);
        }
        Ok(Some((code, status)))
    })?;
    let message = status["message"].as_str().unwrap_or_default();
    ensure!(
        code == 403
            && status["reason"] == "Invalid"
            && message.starts_with(
                "policy 'broken' with binding 'broken-binding' denied request: JSONPath: "
            )
            && status["details"]["causes"][0]["message"] == message
            && status["details"]["kind"] == "secrets"
            && status["details"]["name"] == "s1",
        "kube's policy Status expected, got {code}: {status}"
    );
    let err = server.kubectl_err(&["create", "secret", "generic", "s2", "-n", "map-on"])?;
    ensure!(
        err.contains("policy 'broken' with binding 'broken-binding' denied request"),
        "kubectl shows the refusal: {err}"
    );
    // Outside the binding, secrets are admitted.
    server.kubectl_ok(&["create", "secret", "generic", "s2", "-n", "map-off"])?;
    Ok(())
}
