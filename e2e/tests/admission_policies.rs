//! Admission policies with kubectl against a real server: a
//! ValidatingAdmissionPolicy with a param and two bindings (Deny and Warn),
//! LimitRanger defaults and limits on Pods, and ResourceQuota (the
//! controller's `status.used` following creates and deletes, the over-quota
//! create refused with kube's 403, and concurrent creates never sharing the
//! last slot). Messages are compared with kube-apiserver's wording.

mod kubectl_support;

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually};

use kubectl_support::{SETTLE, json};

/// POST `body` to `path` with the admin client: the status code and the
/// response body (a `Status` on failure).
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

/// [`deployment`] as JSON (for [`post`]).
fn deployment_json(ns: &str, name: &str, replicas: u32) -> Value {
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}
    })
}

fn deployment(ns: &str, name: &str, replicas: u32) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: {replicas}
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

const POLICY: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: vap-enforce
  labels: {vap-test: enforce}
---
apiVersion: v1
kind: Namespace
metadata:
  name: vap-warn
  labels: {vap-test: warn}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: replica-limit
  namespace: vap-enforce
data:
  maxReplicas: "3"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  variables:
  - name: max
    expression: "int(params.data.maxReplicas)"
  validations:
  - expression: "object.spec.replicas <= variables.max"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-binding
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef:
    name: replica-limit
    namespace: vap-enforce
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels: {vap-test: enforce}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-warn
spec:
  policyName: max-replicas
  validationActions: [Warn]
  paramRef:
    name: replica-limit
    namespace: vap-enforce
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels: {vap-test: warn}
"#;

#[test]
fn validating_admission_policy_denies_with_kube_message_and_warn_admits() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], POLICY)?;
    // Policies reach admission through the watch cache: wait for the Deny
    // to take effect (kube's policy informers take a moment too).
    let denied = eventually(SETTLE, || {
        let out =
            server.kubectl_stdin(&["create", "-f", "-"], &deployment("vap-enforce", "web", 5))?;
        if out.status.success() {
            server.kubectl_ok(&["delete", "deployment", "web", "-n", "vap-enforce"])?;
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&out.stderr).into_owned()))
    })?;
    let reason = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' \
                  denied request: failed expression: object.spec.replicas <= variables.max";
    // kubectl prints an Invalid Status by its causes, as with kube.
    ensure!(
        denied.contains(&format!("The deployments \"web\" is invalid: : {reason}")),
        "kube's 422 as kubectl shows it expected, got: {denied}"
    );
    // The Status itself: kube's admission.NewForbidden with reason Invalid.
    let (code, status) = post(
        &server,
        "/apis/apps/v1/namespaces/vap-enforce/deployments",
        &deployment_json("vap-enforce", "web", 5),
    )?;
    let message = format!("deployments.apps \"web\" is forbidden: {reason}");
    ensure!(
        code == 422
            && status["reason"] == "Invalid"
            && status["message"] == message.as_str()
            && status["details"]["causes"] == serde_json::json!([{"message": reason}])
            && status["details"]["kind"] == "deployments"
            && status["details"]["group"] == "apps",
        "kube's Status expected, got {code}: {status}"
    );

    // Within the limit: admitted; raising it over the limit: denied too
    // (the binding matches UPDATE).
    server.kubectl_stdin_ok(&["create", "-f", "-"], &deployment("vap-enforce", "web", 3))?;
    let err = server.kubectl_err(&[
        "patch",
        "deployment",
        "web",
        "-n",
        "vap-enforce",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
    ])?;
    ensure!(err.contains(reason), "update must be denied: {err}");
    let d = json(&server, &["get", "deployment", "web", "-n", "vap-enforce"])?;
    ensure!(d["spec"]["replicas"] == 3, "denied update changed it: {d}");

    // The param decides: raising the limit admits 4.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "replica-limit",
        "-n",
        "vap-enforce",
        "--type=merge",
        "-p",
        r#"{"data":{"maxReplicas":"4"}}"#,
    ])?;
    eventually(SETTLE, || {
        let out = server.kubectl(&[
            "patch",
            "deployment",
            "web",
            "-n",
            "vap-enforce",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":4}}"#,
        ])?;
        Ok(out.status.success().then_some(()))
    })?;

    // The Warn binding admits and warns with kube's text.
    let out = server.kubectl_stdin(&["create", "-f", "-"], &deployment("vap-warn", "web", 9))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.success(), "Warn must admit: {stderr}");
    ensure!(
        stderr.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding \
             'max-replicas-warn': failed expression: object.spec.replicas <= variables.max"
        ),
        "warning expected, got: {stderr}"
    );

    // Namespaces no binding selects are not checked at all.
    server.kubectl_ok(&["create", "namespace", "vap-free"])?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], &deployment("vap-free", "web", 9))?;

    // Without its param (parameterNotFoundAction: Deny), the binding denies.
    server.kubectl_ok(&["delete", "configmap", "replica-limit", "-n", "vap-enforce"])?;
    let err = eventually(SETTLE, || {
        let out = server.kubectl_stdin(
            &["create", "-f", "-"],
            &deployment("vap-enforce", "small", 1),
        )?;
        if out.status.success() {
            server.kubectl_ok(&["delete", "deployment", "small", "-n", "vap-enforce"])?;
            return Ok(None);
        }
        Ok(Some(String::from_utf8_lossy(&out.stderr).into_owned()))
    })?;
    ensure!(
        err.contains(
            "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied \
             request: failed to configure binding: no params found for policy binding with `Deny` \
             parameterNotFoundAction"
        ),
        "{err}"
    );
    Ok(())
}

const LIMIT_RANGE: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: lr
---
apiVersion: v1
kind: LimitRange
metadata:
  name: limits
  namespace: lr
spec:
  limits:
  - type: Container
    max: {cpu: "1", memory: 1Gi}
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
"#;

/// A binding's `validationActions` and `policyName` are checked as kube
/// checks them (the messages are kube-apiserver 1.36.2's, from kubectl
/// create against it).
#[test]
fn invalid_policy_bindings_are_refused_with_kube_messages() -> Result<()> {
    let server = Server::start()?;
    let binding = |name: &str, spec: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {{name: {name}}}\nspec:\n{spec}"
        )
    };
    let cases = [
        (
            "  policyName: p\n  validationActions: [Deny, Warn]\n",
            "spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ),
        (
            "  policyName: p\n  validationActions: []\n",
            "spec.validationActions: Required value: at least one validation action is required",
        ),
        (
            "  policyName: p\n  validationActions: [Deny, Deny]\n",
            "spec.validationActions[1]: Duplicate value: \"Deny\"",
        ),
        (
            "  policyName: p\n  validationActions: [Block]\n",
            "spec.validationActions[0]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
        ),
        (
            "  validationActions: [Deny]\n",
            "spec.policyName: Required value",
        ),
    ];
    for (spec, message) in cases {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &binding("b1", spec))?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(
            !out.status.success()
                && err.contains(&format!(
                    "The ValidatingAdmissionPolicyBinding \"b1\" is invalid: {message}"
                )),
            "{spec}: {err}"
        );
    }
    // A valid one is stored.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &binding(
            "b1",
            "  policyName: p\n  validationActions: [Warn, Audit]\n",
        ),
    )?;
    Ok(())
}

/// A quota scoped by `scopeSelector` (PriorityClass In [high]) limits and
/// counts only the pods of that class, as kube's pod evaluator does.
#[test]
fn a_priority_class_scoped_quota_counts_and_limits_only_its_pods() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: pq}\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: high-pods, namespace: pq}\nspec:\n  hard: {pods: \"1\"}\n  scopeSelector:\n    matchExpressions:\n    - {scopeName: PriorityClass, operator: In, values: [high]}\n",
    )?;
    let pod = |name: &str, class: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: pq}}\nspec:\n  {class}containers:\n  - {{name: app, image: nginx:1.27}}\n"
        )
    };
    let used_pods = || -> Result<Option<String>> {
        let q = json(&server, &["get", "resourcequota", "high-pods", "-n", "pq"])?;
        Ok(q["status"]["used"]["pods"].as_str().map(str::to_string))
    };
    eventually(SETTLE, || Ok(used_pods()?.filter(|u| u == "0")))?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &pod("h1", "priorityClassName: high\n  "),
    )?;
    // Pods of no class, or another, are not this quota's.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &pod("plain1", ""))?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], &pod("plain2", ""))?;
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        &pod("h2", "priorityClassName: high\n  "),
    )?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && err.contains("pods \"h2\" is forbidden: exceeded quota: high-pods, requested: pods=1, used: pods=1, limited: pods=1"),
        "{err}"
    );
    eventually(SETTLE, || Ok(used_pods()?.filter(|u| u == "1")))?;
    Ok(())
}

/// A mutating policy that labels a new pod with the priority it has then.
const SEE_PRIORITY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: see-priority}
spec:
  reinvocationPolicy: Never
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [JSONPatch{op: "add", path: "/metadata/labels", value:
          {"seen-priority": has(object.spec.priority) ? string(object.spec.priority) : "none"}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: see-priority}
spec: {policyName: see-priority}
"#;

/// kube's Priority admission: a pod's priority and preemption policy come
/// from its PriorityClass or the global default one; an unknown class, or a
/// priority that disagrees, is refused; only one class may be the default.
/// The messages are kube-apiserver 1.36.2's (kubectl create against it).
#[test]
fn pods_take_their_priority_from_their_class_as_kube_admits_them() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "prio"])?;
    let pod = |name: &str, spec: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: prio}}\nspec:\n{spec}  containers:\n  - {{name: app, image: nginx:1.27}}\n"
        )
    };
    let refused = |manifest: String, message: &str| -> Result<()> {
        let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest)?;
        let err = String::from_utf8_lossy(&out.stderr);
        ensure!(
            !out.status.success() && err.contains(message),
            "{message}: {err}"
        );
        Ok(())
    };
    let priority = |name: &str| -> Result<(Value, Value, Value)> {
        let p = json(&server, &["get", "pod", name, "-n", "prio"])?;
        Ok((
            p["spec"]["priority"].clone(),
            p["spec"]["preemptionPolicy"].clone(),
            p["spec"]["priorityClassName"].clone(),
        ))
    };
    refused(
        pod("p1", "  priorityClassName: nope\n"),
        "pods \"p1\" is forbidden: no PriorityClass with name nope was found",
    )?;
    // No class and no default: 0.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &pod("plain", ""))?;
    assert_eq!(
        priority("plain")?,
        (
            serde_json::json!(0),
            serde_json::json!("PreemptLowerPriority"),
            Value::Null
        )
    );
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\nglobalDefault: true\npreemptionPolicy: Never\n",
    )?;
    refused(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high2}\nvalue: 2000\nglobalDefault: true\n".to_string(),
        "priorityclasses.scheduling.k8s.io \"high2\" is forbidden: PriorityClass high is already marked as default. Only one default can exist",
    )?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &pod("named", "  priorityClassName: high\n"),
    )?;
    let high = (
        serde_json::json!(1000),
        serde_json::json!("Never"),
        serde_json::json!("high"),
    );
    assert_eq!(priority("named")?, high);
    // No class: the global default's, name included.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &pod("defaulted", ""))?;
    assert_eq!(priority("defaulted")?, high);
    // Priority runs before the mutating policies and webhooks, as in kube:
    // a MutatingAdmissionPolicy reads the priority it computed.
    server.kubectl_stdin_ok(&["apply", "-f", "-"], SEE_PRIORITY)?;
    let seen = || -> Result<Value> {
        server.kubectl_stdin(&["create", "-f", "-"], &pod("seen", ""))?;
        let p = json(&server, &["get", "pod", "seen", "-n", "prio"])?;
        server.kubectl(&["delete", "pod", "seen", "-n", "prio", "--wait=false"])?;
        Ok(p["metadata"]["labels"]["seen-priority"].clone())
    };
    // The policy is served once the cache has it.
    let mut label = Value::Null;
    for _ in 0..50 {
        label = seen()?;
        if !label.is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(label, serde_json::json!("1000"));
    server.kubectl_ok(&["delete", "mutatingadmissionpolicybindings", "see-priority"])?;
    refused(
        pod("p8", "  priorityClassName: high\n  priority: 7\n"),
        "pods \"p8\" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name",
    )?;
    refused(
        pod(
            "p10",
            "  priorityClassName: high\n  preemptionPolicy: PreemptLowerPriority\n",
        ),
        "pods \"p10\" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name",
    )?;
    // The same value given is fine; a system class is kube's.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &pod("same", "  priorityClassName: high\n  priority: 1000\n"),
    )?;
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &pod("critical", "  priorityClassName: system-cluster-critical\n"),
    )?;
    assert_eq!(priority("critical")?.0, serde_json::json!(2_000_000_000));
    Ok(())
}

fn pod(name: &str, resources: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: lr
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources: {resources}
"#
    )
}

#[test]
fn limit_range_defaults_appear_on_a_pod_and_max_is_enforced() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], LIMIT_RANGE)?;
    // A consistent read of the LimitRange: the server's cache has it.
    json(&server, &["get", "limitrange", "limits", "-n", "lr"])?;

    server.kubectl_stdin_ok(&["create", "-f", "-"], &pod("plain", "{}"))?;
    let p = json(&server, &["get", "pod", "plain", "-n", "lr"])?;
    let res = &p["spec"]["containers"][0]["resources"];
    ensure!(
        res["requests"] == serde_json::json!({"cpu": "100m", "memory": "64Mi"})
            && res["limits"] == serde_json::json!({"cpu": "500m", "memory": "256Mi"}),
        "LimitRange defaults expected: {res}"
    );
    ensure!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"]
            == "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app",
        "annotation: {}",
        p["metadata"]
    );

    // What the pod states is kept; only the rest is defaulted.
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &pod("partial", "{limits: {cpu: 800m}}"),
    )?;
    let p = json(&server, &["get", "pod", "partial", "-n", "lr"])?;
    let res = &p["spec"]["containers"][0]["resources"];
    ensure!(
        res["limits"]["cpu"] == "800m" && res["limits"]["memory"] == "256Mi",
        "{res}"
    );

    // Over the max: kube's 403.
    let err = server.kubectl_stdin(
        &["create", "-f", "-"],
        &pod("big", "{limits: {cpu: \"2\"}}"),
    )?;
    let stderr = String::from_utf8_lossy(&err.stderr);
    ensure!(!err.status.success(), "over-max pod admitted");
    ensure!(
        stderr.contains("Error from server (Forbidden)")
            && stderr.contains(
                "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
            ),
        "kube's message expected: {stderr}"
    );
    ensure!(
        server.kubectl_get(&["pod", "big", "-n", "lr"])?.is_none(),
        "refused pod stored"
    );
    Ok(())
}

fn used(server: &Server, ns: &str, quota: &str) -> Result<Value> {
    let q = json(server, &["get", "resourcequota", quota, "-n", ns])?;
    Ok(q["status"]["used"].clone())
}

fn configmap_count(server: &Server, ns: &str) -> Result<usize> {
    let l = json(server, &["get", "configmaps", "-n", ns])?;
    Ok(l["items"].as_array().map(Vec::len).unwrap_or(0))
}

/// Waits until the quota's `status.used` shows `n` ConfigMaps (both names).
fn wait_used(server: &Server, ns: &str, n: usize) -> Result<()> {
    let want = serde_json::json!({"configmaps": n.to_string(), "count/configmaps": n.to_string()});
    eventually(SETTLE, || {
        let u = used(server, ns, "cm-quota")?;
        Ok((u == want).then_some(()))
    })
    .with_context(|| format!("status.used never showed {n} configmaps"))
}

#[test]
fn resource_quota_used_follows_configmaps_and_over_quota_create_is_403() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "rq"])?;
    // The namespace may already hold ConfigMaps (kube-root-ca.crt).
    let base = eventually(Duration::from_secs(5), || {
        Ok(Some(configmap_count(&server, "rq")?))
    })?;
    let hard = base + 3;
    let quota = format!(
        r#"
apiVersion: v1
kind: ResourceQuota
metadata:
  name: cm-quota
  namespace: rq
spec:
  hard:
    configmaps: "{hard}"
    count/configmaps: "{hard}"
"#
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &quota)?;
    wait_used(&server, "rq", base)?;
    let q = json(&server, &["get", "resourcequota", "cm-quota", "-n", "rq"])?;
    ensure!(
        q["status"]["hard"]
            == serde_json::json!({"configmaps": hard.to_string(), "count/configmaps": hard.to_string()}),
        "status.hard mirrors spec.hard: {q}"
    );

    // Creates raise it.
    for i in 0..2 {
        server.kubectl_ok(&["create", "configmap", &format!("cm{i}"), "-n", "rq"])?;
        wait_used(&server, "rq", base + i + 1)?;
    }
    // Deletes lower it.
    server.kubectl_ok(&["delete", "configmap", "cm0", "-n", "rq"])?;
    wait_used(&server, "rq", base + 1)?;

    // Fill to the limit, then one more is refused with kube's 403.
    server.kubectl_ok(&["create", "configmap", "cm2", "-n", "rq"])?;
    server.kubectl_ok(&["create", "configmap", "cm3", "-n", "rq"])?;
    wait_used(&server, "rq", hard)?;
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm4\n  namespace: rq\n",
    )?;
    ensure!(!out.status.success(), "over-quota create admitted");
    let err = String::from_utf8_lossy(&out.stderr);
    let message = format!(
        "configmaps \"cm4\" is forbidden: exceeded quota: cm-quota, requested: \
         configmaps=1,count/configmaps=1, used: configmaps={hard},count/configmaps={hard}, \
         limited: configmaps={hard},count/configmaps={hard}"
    );
    ensure!(
        err.contains("Error from server (Forbidden)") && err.contains(&message),
        "kube's 403 expected: {err}"
    );
    let (code, status) = post(
        &server,
        "/api/v1/namespaces/rq/configmaps",
        &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm4"}}),
    )?;
    ensure!(
        code == 403 && status["reason"] == "Forbidden" && status["message"] == message.as_str(),
        "kube's 403 Status expected, got {code}: {status}"
    );
    ensure!(
        configmap_count(&server, "rq")? == hard,
        "refused ConfigMap stored"
    );

    // One slot free again, many concurrent creates: exactly one gets it
    // (the charge is a compare-and-swap of the quota's status).
    server.kubectl_ok(&["delete", "configmap", "cm3", "-n", "rq"])?;
    wait_used(&server, "rq", hard - 1)?;
    let results: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let server = &server;
                s.spawn(move || {
                    server
                        .kubectl(&["create", "configmap", &format!("race{i}"), "-n", "rq"])
                        .map(|o| o.status.success())
                        .unwrap_or(false)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .collect()
    });
    ensure!(
        results.iter().filter(|ok| **ok).count() == 1,
        "exactly one concurrent create may take the last slot: {results:?}"
    );
    ensure!(configmap_count(&server, "rq")? == hard, "quota overrun");
    wait_used(&server, "rq", hard)?;
    Ok(())
}

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.quota.example.com
spec:
  group: quota.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

fn gadget(name: &str) -> String {
    format!(
        "apiVersion: quota.example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\n  namespace: rqc\n"
    )
}

#[test]
fn a_quota_counts_custom_resources_of_a_crd_served_after_start() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "rqc"])?;
    server.kubectl_ok(&[
        "create",
        "quota",
        "gadgets",
        "-n",
        "rqc",
        "--hard=count/gadgets.quota.example.com=1",
    ])?;
    let want = |n: &str| serde_json::json!({"count/gadgets.quota.example.com": n});
    eventually(SETTLE, || {
        Ok((used(&server, "rqc", "gadgets")? == want("0")).then_some(()))
    })?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], GADGETS)?;
    server.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gadgets.quota.example.com",
        "--timeout=20s",
    ])?;
    // Charged and deleted at once, most likely before the controller
    // follows the new resource: its first list must count again.
    eventually(SETTLE, || {
        Ok(server
            .kubectl_stdin(&["create", "-f", "-"], &gadget("g0"))?
            .status
            .success()
            .then_some(()))
    })?;
    server.kubectl_ok(&["delete", "gadget", "g0", "-n", "rqc"])?;
    eventually(SETTLE, || {
        Ok((used(&server, "rqc", "gadgets")? == want("0")).then_some(()))
    })?;
    eventually(SETTLE, || {
        Ok(server
            .kubectl_stdin(&["create", "-f", "-"], &gadget("g1"))?
            .status
            .success()
            .then_some(()))
    })?;
    // The controller sees the custom resource's create.
    eventually(SETTLE, || {
        Ok((used(&server, "rqc", "gadgets")? == want("1")).then_some(()))
    })?;
    let out = server.kubectl_stdin(&["create", "-f", "-"], &gadget("g2"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success()
            && err.contains(
                "gadgets.quota.example.com \"g2\" is forbidden: exceeded quota: gadgets, requested: \
                 count/gadgets.quota.example.com=1, used: count/gadgets.quota.example.com=1, \
                 limited: count/gadgets.quota.example.com=1"
            ),
        "kube's 403 expected: {err}"
    );
    // And its delete.
    server.kubectl_ok(&["delete", "gadget", "g1", "-n", "rqc"])?;
    eventually(SETTLE, || {
        Ok((used(&server, "rqc", "gadgets")? == want("0")).then_some(()))
    })?;
    server.kubectl_stdin_ok(&["create", "-f", "-"], &gadget("g2"))?;
    Ok(())
}
