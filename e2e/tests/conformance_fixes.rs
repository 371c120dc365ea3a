//! What the upstream API-machinery conformance specs rely on, each checked
//! with the real `kube` client against the real binary:
//!
//! - every namespace holds the `kube-root-ca.crt` ConfigMap (the CA in the
//!   admin kubeconfig, kube's description annotation), within a second of the
//!   namespace's creation, recreated after a delete and put back after an edit
//!   (kube-controller-manager's root-CA publisher);
//! - a DELETE answers what kube-apiserver answers: the deleted object for the
//!   kinds whose kube storage sets `ReturnDeletedObject` (a Service), a
//!   Success `Status` for the others (a ConfigMap), the object marked for
//!   deletion while finalizers are pending, with 200, and 202 only for the
//!   legacy `orphanDependents: false`;
//! - `apiregistration.k8s.io/v1` APIServices: one `Local` APIService per
//!   served group/version (kube's names, labels and priorities) kept in step
//!   with CRDs, put back when edited or deleted; user-created ones validated
//!   with kube's messages and given the `Available` condition; kubectl's
//!   table columns; `kubectl apply -f` of a bundle with one;
//! - what else the upstream conformance specs check: a `timeout` Go cannot
//!   parse is 400, a review answers 406 to a Table-only Accept, namespaces'
//!   `finalize` writes spec.finalizers and their `status` writes annotations,
//!   strict decoding reports duplicate fields, and the health endpoints list
//!   kube-apiserver's checks;
//! - the specs of the API-only `[Conformance]` run fixed after it: review
//!   metadata of Go zero values, a condition without `lastTransitionTime`,
//!   MutatingAdmissionPolicy(Binding) in protobuf, `/api/`, the
//!   ServiceAccount plugin's token volume, the `kubernetes` EndpointSlice.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use ubernetes_e2e::Server;

const ROOT_CA: &str = "kube-root-ca.crt";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The CA the admin kubeconfig trusts for the server (PEM).
fn kubeconfig_ca(server: &Server) -> Result<String> {
    let kc = kube::config::Kubeconfig::read_from(server.kubeconfig())?;
    let data = kc
        .clusters
        .iter()
        .find_map(|c| c.cluster.as_ref()?.certificate_authority_data.clone())
        .context("no certificate-authority-data in the kubeconfig")?;
    let bytes: k8s_openapi::ByteString = serde_json::from_value(json!(data))?;
    Ok(String::from_utf8(bytes.0)?)
}

/// Poll `f` every 50 ms until it yields a value, up to `within`.
async fn within<T, F, Fut>(within: Duration, what: &str, mut f: F) -> Result<(T, Duration)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = f().await? {
            return Ok((v, start.elapsed()));
        }
        if start.elapsed() > within {
            bail!("{what}: not within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn root_ca_of(cms: &Api<ConfigMap>, ca: &str) -> Result<Option<ConfigMap>> {
    Ok(cms.get_opt(ROOT_CA).await?.filter(|cm| {
        cm.data
            .as_ref()
            .and_then(|d| d.get("ca.crt"))
            .map(String::as_str)
            == Some(ca)
    }))
}

#[tokio::test]
async fn every_namespace_gets_kube_root_ca_crt_and_keeps_it() -> Result<()> {
    let server = Server::start()?;
    let client = server.client().await?;
    let ca = kubeconfig_ca(&server)?;
    assert!(ca.contains("BEGIN CERTIFICATE"), "{ca}");

    // The bootstrap namespaces have it.
    for ns in ["default", "kube-system", "kube-public"] {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        within(Duration::from_secs(5), ns, || root_ca_of(&cms, &ca)).await?;
    }

    // A new namespace has it within a second.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "fresh"}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "fresh");
    let (cm, took) = within(
        Duration::from_secs(1),
        "kube-root-ca.crt in a new namespace",
        || root_ca_of(&cms, &ca),
    )
    .await?;
    eprintln!("kube-root-ca.crt appeared after {took:?}");
    let annotations = cm.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("kubernetes.io/description")
            .map(String::as_str),
        Some(DESCRIPTION)
    );
    assert_eq!(cm.data.as_ref().map(|d| d.len()), Some(1), "{cm:?}");

    // Deleted: it comes back (a new object).
    let old_uid = cm.metadata.uid.clone();
    cms.delete(ROOT_CA, &DeleteParams::default()).await?;
    let (back, _) = within(
        Duration::from_secs(2),
        "kube-root-ca.crt recreated",
        || async {
            Ok(root_ca_of(&cms, &ca)
                .await?
                .filter(|c| c.metadata.uid != old_uid))
        },
    )
    .await?;
    assert!(back.metadata.annotations.is_some());

    // Edited: the data is put back and the extra key dropped, the annotation
    // restored; a label of the user's is kept.
    cms.patch(
        ROOT_CA,
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"labels": {"mine": "yes"},
                         "annotations": {"kubernetes.io/description": null}},
            "data": {"ca.crt": "not a CA", "extra": "x"}
        })),
    )
    .await?;
    let (fixed, _) = within(
        Duration::from_secs(2),
        "kube-root-ca.crt corrected",
        || async {
            Ok(root_ca_of(&cms, &ca).await?.filter(|c| {
                c.data.as_ref().map(|d| d.len()) == Some(1)
                    && c.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get("kubernetes.io/description"))
                        .is_some()
            }))
        },
    )
    .await?;
    assert_eq!(
        fixed
            .metadata
            .labels
            .unwrap_or_default()
            .get("mine")
            .map(String::as_str),
        Some("yes")
    );
    Ok(())
}

/// One raw request with the admin client: status and JSON body.
async fn raw(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<(http::StatusCode, serde_json::Value)> {
    let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let (status, bytes) = raw_bytes(client, method, path, &[], body).await?;
    Ok((status, serde_json::from_slice(&bytes)?))
}

/// One raw request with extra headers and a raw body: status and body bytes.
async fn raw_bytes(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<(http::StatusCode, Vec<u8>)> {
    let mut req = http::Request::builder().method(method).uri(path);
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        req = req.header("content-type", "application/json");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = client
        .send(req.body(kube::client::Body::from(body))?)
        .await?;
    let status = resp.status();
    Ok((status, resp.into_body().collect_bytes().await?.to_vec()))
}

#[tokio::test]
async fn deletes_answer_what_kube_apiserver_answers() -> Result<()> {
    let server = Server::start()?;
    let client = server.client().await?;
    let ns = "default";

    // A Service (ReturnDeletedObject): the typed client gets the Service.
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}
    }))?;
    services.create(&PostParams::default(), &svc).await?;
    let gone = services.delete("web", &DeleteParams::default()).await?;
    let deleted = gone
        .left()
        .context("a Service delete answers the Service")?;
    assert_eq!(deleted.metadata.name.as_deref(), Some("web"));
    assert!(deleted.spec.and_then(|s| s.cluster_ip).is_some());

    // A ServiceAccount too.
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "robot"}}))?;
    sas.create(&PostParams::default(), &sa).await?;
    let gone = sas.delete("robot", &DeleteParams::default()).await?;
    assert!(
        gone.is_left(),
        "a ServiceAccount delete answers the ServiceAccount"
    );

    // A ConfigMap: a Success Status naming it, with 200.
    let (s, _) = raw(
        &client,
        http::Method::POST,
        "/api/v1/namespaces/default/configmaps",
        Some(json!({"metadata": {"name": "c1"}})),
    )
    .await?;
    assert_eq!(s, http::StatusCode::CREATED);
    let (s, body) = raw(
        &client,
        http::Method::DELETE,
        "/api/v1/namespaces/default/configmaps/c1",
        None,
    )
    .await?;
    assert_eq!(s, http::StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Success", "{body}");
    assert_eq!(body["details"]["name"], "c1", "{body}");
    assert_eq!(body["details"]["kind"], "configmaps", "{body}");

    // Pending finalizers: the marked object, 200; with the legacy
    // orphanDependents=false, 202.
    let (s, _) = raw(
        &client,
        http::Method::POST,
        "/api/v1/namespaces/default/configmaps",
        Some(json!({"metadata": {"name": "c2", "finalizers": ["example.com/hold"]}})),
    )
    .await?;
    assert_eq!(s, http::StatusCode::CREATED);
    let (s, body) = raw(
        &client,
        http::Method::DELETE,
        "/api/v1/namespaces/default/configmaps/c2",
        None,
    )
    .await?;
    assert_eq!(s, http::StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "ConfigMap", "{body}");
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");
    let (s, body) = raw(
        &client,
        http::Method::DELETE,
        "/api/v1/namespaces/default/configmaps/c2",
        Some(json!({"orphanDependents": false})),
    )
    .await?;
    assert_eq!(s, http::StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["kind"], "ConfigMap", "{body}");

    // orphanDependents and propagationPolicy together: kube's 422.
    let (s, body) = raw(
        &client,
        http::Method::DELETE,
        "/api/v1/namespaces/default/configmaps/c2",
        Some(json!({"orphanDependents": false, "propagationPolicy": "Background"})),
    )
    .await?;
    assert_eq!(s, http::StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set",
        "{body}"
    );

    // A Namespace: the Namespace, Terminating, with 200.
    let (s, _) = raw(
        &client,
        http::Method::POST,
        "/api/v1/namespaces",
        Some(json!({"metadata": {"name": "doomed"}})),
    )
    .await?;
    assert_eq!(s, http::StatusCode::CREATED);
    let (s, body) = raw(
        &client,
        http::Method::DELETE,
        "/api/v1/namespaces/doomed",
        None,
    )
    .await?;
    assert_eq!(s, http::StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "Namespace", "{body}");
    assert_eq!(body["status"]["phase"], "Terminating", "{body}");
    Ok(())
}

fn api_service(server: &Server, name: &str) -> Result<Option<serde_json::Value>> {
    let out = server.kubectl(&["get", "apiservice", name, "-o", "json"])?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_slice(&out.stdout)?))
}

fn available(a: &serde_json::Value) -> Option<(String, String, String)> {
    let c = a["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((s("status"), s("reason"), s("message")))
}

#[test]
fn api_services_are_served_as_kube_apiserver_serves_them() -> Result<()> {
    let server = Server::start()?;
    let wait = Duration::from_secs(5);

    // One Local APIService per served group/version, as kube names them.
    let core = ubernetes_e2e::eventually(wait, || api_service(&server, "v1."))?;
    assert_eq!(core["spec"]["groupPriorityMinimum"], 18000, "{core}");
    assert_eq!(core["spec"]["versionPriority"], 1, "{core}");
    assert!(core["spec"].get("group").is_none(), "{core}");
    assert_eq!(
        core["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let apps = ubernetes_e2e::eventually(wait, || {
        Ok(api_service(&server, "v1.apps")?.filter(|a| available(a).is_some()))
    })?;
    assert_eq!(apps["spec"]["group"], "apps");
    assert_eq!(apps["spec"]["groupPriorityMinimum"], 17800);
    assert_eq!(apps["spec"]["versionPriority"], 15);
    assert_eq!(
        available(&apps),
        Some((
            "True".into(),
            "Local".into(),
            "Local APIServices are always available".into()
        ))
    );
    for name in [
        "v2.autoscaling",
        "v1.authentication.k8s.io",
        "v1beta1.federation",
    ] {
        ubernetes_e2e::eventually(wait, || api_service(&server, name))?;
    }
    assert!(api_service(&server, "v1.apiregistration.k8s.io")?.is_none());

    // kubectl's table: kube's columns.
    let table = server.kubectl_ok(&["get", "apiservices"])?;
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"], "{table}");
    assert!(
        table.lines().any(|l| l
            .split_whitespace()
            .take(3)
            .eq(["v1.apps", "Local", "True"])),
        "{table}"
    );

    // Discovery lists the group first, as kube-apiserver does.
    let groups: serde_json::Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "--raw", "/apis"])?)?;
    assert_eq!(
        groups["groups"][0]["name"], "apiregistration.k8s.io",
        "{groups}"
    );

    // Edited or deleted, an automanaged one is put back.
    server.kubectl_ok(&[
        "patch",
        "apiservice",
        "v1.apps",
        "--type=merge",
        "-p",
        r#"{"spec":{"versionPriority":7}}"#,
    ])?;
    ubernetes_e2e::eventually(wait, || {
        Ok(api_service(&server, "v1.apps")?.filter(|a| a["spec"]["versionPriority"] == 15))
    })?;
    server.kubectl_ok(&["delete", "apiservice", "v1.batch"])?;
    ubernetes_e2e::eventually(wait, || api_service(&server, "v1.batch"))?;

    // A CRD's served versions get APIServices (1000/100, automanaged
    // "true") that go with the CRD.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1alpha1, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
"#,
    )?;
    let crd = ubernetes_e2e::eventually(wait, || api_service(&server, "v1.example.com"))?;
    assert_eq!(crd["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(crd["spec"]["versionPriority"], 100);
    assert_eq!(
        crd["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    ubernetes_e2e::eventually(wait, || api_service(&server, "v1beta1.example.com"))?;
    assert!(api_service(&server, "v1alpha1.example.com")?.is_none());
    server.kubectl_ok(&["delete", "crd", "widgets.example.com"])?;
    ubernetes_e2e::eventually(Duration::from_secs(10), || {
        Ok((api_service(&server, "v1.example.com")?.is_none()
            && api_service(&server, "v1beta1.example.com")?.is_none())
        .then_some(()))
    })?;

    // kube's validation messages.
    let out = server.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.bad}\nspec: {group: other, version: v2}\n",
    )?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("metadata.name: Invalid value: \"v1.bad\": must be `spec.version+\".\"+spec.group`: \"v2.other\"")
            && err.contains("spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"),
        "{err}"
    );

    // A bundle with a user's APIServices: a Local one is available, one
    // backed by a Service is not (and says why), and follows its Service.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.local.example.io}
spec: {group: local.example.io, version: v1, groupPriorityMinimum: 100, versionPriority: 100}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.example.io}
spec:
  group: metrics.example.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics, namespace: kube-system}
"#,
    )?;
    let srv = &server;
    let condition = |name: &'static str, reason: &'static str| {
        ubernetes_e2e::eventually(wait, move || {
            Ok(api_service(srv, name)?
                .and_then(|a| available(&a))
                .filter(|(_, r, _)| r == reason))
        })
    };
    assert_eq!(condition("v1.local.example.io", "Local")?.0, "True");
    let (status, _, message) = condition("v1beta1.metrics.example.io", "ServiceNotFound")?;
    assert_eq!(status, "False");
    assert_eq!(message, "service/metrics in \"kube-system\" is not present");
    let metrics = api_service(&server, "v1beta1.metrics.example.io")?.context("gone")?;
    assert_eq!(metrics["spec"]["service"]["port"], 443, "{metrics}");
    assert!(
        server
            .kubectl_ok(&["get", "apiservice", "v1beta1.metrics.example.io"])?
            .contains("kube-system/metrics   False (ServiceNotFound)")
    );
    server.kubectl_ok(&[
        "-n",
        "kube-system",
        "create",
        "service",
        "clusterip",
        "metrics",
        "--tcp=80:80",
    ])?;
    let (_, _, message) = condition("v1beta1.metrics.example.io", "ServicePortError")?;
    assert_eq!(
        message,
        "service/metrics in \"kube-system\" is not listening on port 443"
    );
    server.kubectl_ok(&["-n", "kube-system", "delete", "service", "metrics"])?;
    server.kubectl_ok(&[
        "-n",
        "kube-system",
        "create",
        "service",
        "clusterip",
        "metrics",
        "--tcp=443:443",
    ])?;
    let (status, _, message) = condition("v1beta1.metrics.example.io", "FailedDiscoveryCheck")?;
    assert_eq!(status, "False");
    assert!(
        message.contains("does not proxy to aggregated API servers yet"),
        "{message}"
    );
    // The user's APIServices are theirs: left alone.
    std::thread::sleep(Duration::from_millis(500));
    assert!(api_service(&server, "v1.local.example.io")?.is_some());
    Ok(())
}

#[tokio::test]
async fn what_the_conformance_specs_check_is_answered_as_kube_answers_it() -> Result<()> {
    let server = Server::start()?;
    let client = server.client().await?;
    let get = http::Method::GET;

    // Server request timeout: Go's ParseDuration refuses "invalid" (400);
    // over the 60 s limit, or 0s, the default applies.
    let (s, body) = raw_bytes(
        &client,
        get.clone(),
        "/version?timeout=invalid",
        &[],
        vec![],
    )
    .await?;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(s, http::StatusCode::BAD_REQUEST, "{text}");
    assert!(
        text.contains("invalid timeout specified in the request URL"),
        "{text}"
    );
    for t in ["3m", "0s"] {
        let (s, _) = raw_bytes(
            &client,
            get.clone(),
            &format!("/version?timeout={t}"),
            &[],
            vec![],
        )
        .await?;
        assert_eq!(s, http::StatusCode::OK, "timeout={t}");
    }

    // Table transformation: a review has no table to answer with.
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}});
    let (s, body) = raw_bytes(
        &client,
        http::Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        ssar.to_string().into_bytes(),
    )
    .await?;
    assert_eq!(
        s,
        http::StatusCode::NOT_ACCEPTABLE,
        "{}",
        String::from_utf8_lossy(&body)
    );

    // Namespaces: finalize adds a spec finalizer; a status patch keeps the
    // annotation it sets.
    let (s, _) = raw(
        &client,
        http::Method::POST,
        "/api/v1/namespaces",
        Some(json!({"metadata": {"name": "fin"}})),
    )
    .await?;
    assert_eq!(s, http::StatusCode::CREATED);
    let (_, mut ns) = raw(&client, get.clone(), "/api/v1/namespaces/fin", None).await?;
    ns["spec"]["finalizers"] = json!(["kubernetes", "e2e.example.com/fakeFinalizer"]);
    let (s, out) = raw(
        &client,
        http::Method::PUT,
        "/api/v1/namespaces/fin/finalize",
        Some(ns),
    )
    .await?;
    assert_eq!(s, http::StatusCode::OK, "{out}");
    assert_eq!(
        out["spec"]["finalizers"],
        json!(["kubernetes", "e2e.example.com/fakeFinalizer"]),
        "{out}"
    );
    let (s, out) = raw_bytes(
        &client,
        http::Method::PATCH,
        "/api/v1/namespaces/fin/status",
        &[("content-type", "application/merge-patch+json")],
        json!({"metadata": {"annotations": {"e2e-patched-ns-status": "fin"}},
               "status": {"conditions": [{"type": "StatusUpdate", "status": "True", "reason": "E2E", "message": "Set from an e2e test"}]}})
            .to_string()
            .into_bytes(),
    )
    .await?;
    let out: serde_json::Value = serde_json::from_slice(&out)?;
    assert_eq!(s, http::StatusCode::OK, "{out}");
    assert_eq!(
        out["metadata"]["annotations"]["e2e-patched-ns-status"], "fin",
        "{out}"
    );
    assert_eq!(
        out["status"]["conditions"][0]["type"], "StatusUpdate",
        "{out}"
    );

    // FieldValidation: unknown and duplicate fields of a typed object.
    let dup = br#"{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "my-dep", "labels": {"app": "nginx"}},
        "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3,
                 "selector": {"matchLabels": {"app": "nginx"}},
                 "template": {"metadata": {"labels": {"app": "nginx"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}}"#;
    let (s, body) = raw_bytes(
        &client,
        http::Method::POST,
        "/apis/apps/v1/namespaces/default/deployments?fieldValidation=Strict",
        &[],
        dup.to_vec(),
    )
    .await?;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(s, http::StatusCode::BAD_REQUEST, "{text}");
    assert!(
        text.contains(r#"strict decoding error: unknown field \"spec.unknownField\", duplicate field \"spec.replicas\""#),
        "{text}"
    );

    // A YAML body with a repeated key: go-yaml's wording, as kube passes it on.
    let yaml = "\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n";
    let (s, body) = raw_bytes(
        &client,
        http::Method::PATCH,
        "/api/v1/namespaces/default/configmaps/dup?fieldManager=e2e&fieldValidation=Strict",
        &[("content-type", "application/apply-patch+yaml")],
        yaml.as_bytes().to_vec(),
    )
    .await?;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(s, http::StatusCode::BAD_REQUEST, "{text}");
    assert!(
        text.contains(r#"line 9: key \"foo\" already set in map"#),
        "{text}"
    );

    // Health handlers: kube-apiserver's checks, by name.
    for path in [
        "/healthz?verbose=1",
        "/livez?verbose=1",
        "/readyz?verbose=1",
    ] {
        let text = ubernetes_e2e::eventually(Duration::from_secs(10), || {
            let out = server.kubectl(&["get", "--raw", path])?;
            Ok(out
                .status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
        })?;
        let store_check = if path.starts_with("/readyz") {
            "[+]informer-sync ok"
        } else {
            "[+]etcd ok"
        };
        for check in [
            store_check,
            "[+]poststarthook/start-apiserver-admission-initializer ok",
            "[+]poststarthook/storage-readiness ok",
            "[+]poststarthook/rbac/bootstrap-roles ok",
            "[+]poststarthook/scheduling/bootstrap-system-priority-classes ok",
            "[+]poststarthook/apiservice-status-local-available-controller ok",
            "[+]poststarthook/bootstrap-controller ok",
            "[+]poststarthook/start-system-namespaces-controller ok",
            "[+]poststarthook/kube-apiserver-autoregistration ok",
            "[+]autoregister-completion ok",
        ] {
            assert!(
                text.lines().any(|l| l == check),
                "{path}: {check} missing in\n{text}"
            );
        }
    }
    Ok(())
}

/// POST `body` (JSON) to `path` asking for protobuf, as the e2e framework's
/// clients do: the created object's raw message (out of the `k8s\0` +
/// `runtime.Unknown` envelope).
async fn create_for_protobuf(
    client: &kube::Client,
    path: &str,
    body: &serde_json::Value,
) -> Result<Vec<u8>> {
    use prost::Message;
    let accept = [("accept", "application/vnd.kubernetes.protobuf")];
    let (s, answer) = raw_bytes(
        client,
        http::Method::POST,
        path,
        &accept,
        body.to_string().into_bytes(),
    )
    .await?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    assert_eq!(s, http::StatusCode::CREATED, "{path}: {text}");
    let rest = answer
        .strip_prefix(b"k8s\0")
        .with_context(|| format!("not protobuf: {text}"))?;
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(rest)?;
    unknown.raw.context("no raw message")
}

/// What the upstream `[Conformance]` specs of the API-only run failed on
/// here and kube-apiserver passed (docs/api-compatibility.md, "Fixed on our
/// side"), one block per spec.
#[tokio::test]
async fn the_cheap_conformance_gaps_answer_as_kube_apiserver() -> Result<()> {
    use prost::Message;
    let server = Server::start()?;
    let client = server.client().await?;
    let (get, post, put) = (http::Method::GET, http::Method::POST, http::Method::PUT);

    // SubjectReview API operations: a Go client's empty metadata carries
    // zero values (`generation: 0`); kube compares it with ObjectMeta{}.
    let spec = json!({"user": "system:serviceaccount:default:e2e", "groups": ["system:authenticated"],
        "resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": "default", "version": "v1"}});
    for (path, kind, meta) in [
        (
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "SubjectAccessReview",
            json!({"generation": 0, "creationTimestamp": null}),
        ),
        (
            "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            json!({"namespace": "default", "generation": 0}),
        ),
    ] {
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec});
        let (s, out) = raw(&client, post.clone(), path, Some(body)).await?;
        assert_eq!(s, http::StatusCode::CREATED, "{kind}: {out}");
        assert_eq!(out["status"]["allowed"], false, "{out}");
    }

    // Services status lifecycle: a condition without lastTransitionTime (Go's
    // zero time) is stored and answered as kube does, `null`.
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(
        json!({"metadata": {"name": "status-svc"}, "spec": {"ports": [{"port": 80}]}}),
    )?;
    services.create(&PostParams::default(), &svc).await?;
    let (_, mut svc) = raw(
        &client,
        get.clone(),
        "/api/v1/namespaces/default/services/status-svc",
        None,
    )
    .await?;
    svc["status"] = json!({"loadBalancer": {}, "conditions": [
        {"type": "StatusUpdate", "status": "True", "reason": "E2E", "message": "Set from e2e test"}]});
    let path = "/api/v1/namespaces/default/services/status-svc/status";
    let (s, out) = raw(&client, put, path, Some(svc)).await?;
    assert_eq!(s, http::StatusCode::OK, "{out}");
    let cond = json!({"type": "StatusUpdate", "status": "True", "lastTransitionTime": null,
        "reason": "E2E", "message": "Set from e2e test"});
    assert_eq!(out["status"]["conditions"], json!([cond]), "{out}");
    let (_, out) = raw(&client, get.clone(), path, None).await?;
    assert_eq!(out["status"]["conditions"], json!([cond]), "{out}");

    // MutatingAdmissionPolicy(Binding) API operations: answered in protobuf,
    // with kube's field numbers (the v1beta1 messages', promoted as they are).
    let map = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "pb-policy"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                     "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "reinvocationPolicy": "Never",
                 "mutations": [{"patchType": "ApplyConfiguration",
                     "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {\"a\": \"b\"}}}"}}]}});
    let admission = "/apis/admissionregistration.k8s.io/v1";
    let raw_policy = create_for_protobuf(
        &client,
        &format!("{admission}/mutatingadmissionpolicies"),
        &map,
    )
    .await?;
    use k8s_pb::api::admissionregistration::v1beta1 as pb;
    let got = pb::MutatingAdmissionPolicy::decode(raw_policy.as_slice())?;
    let got_spec = got.spec.context("spec")?;
    assert_eq!(got_spec.reinvocation_policy.as_deref(), Some("Never"));
    assert_eq!(got_spec.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(
        got_spec.mutations[0]
            .apply_configuration
            .as_ref()
            .and_then(|a| a.expression.as_deref()),
        Some("Object{metadata: Object.metadata{labels: {\"a\": \"b\"}}}")
    );
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "pb-binding"}, "spec": {"policyName": "pb-policy"}});
    let raw_binding = create_for_protobuf(
        &client,
        &format!("{admission}/mutatingadmissionpolicybindings"),
        &binding,
    )
    .await?;
    let got = pb::MutatingAdmissionPolicyBinding::decode(raw_binding.as_slice())?;
    assert_eq!(
        got.spec.and_then(|s| s.policy_name).as_deref(),
        Some("pb-policy")
    );

    // Kubectl proxy --port 0: kubectl proxy asks for `/api/`, answered as `/api`.
    let (s, slash) = raw(&client, get.clone(), "/api/", None).await?;
    assert_eq!(s, http::StatusCode::OK, "{slash}");
    assert_eq!(slash["versions"], json!(["v1"]), "{slash}");

    // ServiceAccounts opting out of automount: kube's projected token volume
    // and mounts where automount is on, none where the SA or the pod opts out.
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(
            json!({"metadata": {"name": "nomount"}, "automountServiceAccountToken": false}),
        )?,
    )
    .await?;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), "default");
    for (name, sa, pod_says, mounted) in [
        ("default-sa", "default", None, true),
        ("nomount-sa", "nomount", None, false),
        ("nomount-sa-pod-yes", "nomount", Some(true), true),
        ("default-sa-pod-no", "default", Some(false), false),
    ] {
        let mut pod = json!({"metadata": {"name": name}, "spec": {"serviceAccountName": sa,
            "initContainers": [{"name": "i", "image": "busybox"}],
            "containers": [{"name": "c", "image": "busybox"}]}});
        if let Some(yes) = pod_says {
            pod["spec"]["automountServiceAccountToken"] = json!(yes);
        }
        let pod = serde_json::to_value(
            pods.create(&PostParams::default(), &serde_json::from_value(pod)?)
                .await?,
        )?;
        let volumes = pod["spec"]["volumes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(volumes.len(), usize::from(mounted), "{name}: {pod}");
        if !mounted {
            assert!(
                pod["spec"]["containers"][0].get("volumeMounts").is_none(),
                "{name}: {pod}"
            );
            continue;
        }
        let vol = &volumes[0];
        let vname = vol["name"].as_str().unwrap_or_default();
        assert!(
            vname.starts_with("kube-api-access-") && vname.len() == "kube-api-access-".len() + 5,
            "{vol}"
        );
        assert_eq!(
            vol["projected"],
            json!({"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}),
            "{vol}"
        );
        let mount = json!([{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": vname, "readOnly": true}]);
        assert_eq!(pod["spec"]["containers"][0]["volumeMounts"], mount, "{pod}");
        assert_eq!(
            pod["spec"]["initContainers"][0]["volumeMounts"], mount,
            "{pod}"
        );
    }

    // API Server Endpoints and EndpointSlices: both name this server.
    let (_, ep) = raw(
        &client,
        get.clone(),
        "/api/v1/namespaces/default/endpoints/kubernetes",
        None,
    )
    .await?;
    let port = json!([{"name": "https", "port": server.port(), "protocol": "TCP"}]);
    assert_eq!(ep["subsets"][0]["ports"], port, "{ep}");
    let (_, slices) = raw(
        &client,
        get,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes",
        None,
    )
    .await?;
    let slice = &slices["items"][0];
    assert_eq!(slice["ports"], port, "{slices}");
    assert_eq!(
        slice["endpoints"][0]["addresses"][0], ep["subsets"][0]["addresses"][0]["ip"],
        "{slices}"
    );
    Ok(())
}
