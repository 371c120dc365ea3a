//! kubectl 1.37 output against the server: table headers and rows exactly as
//! kube-apiserver's printers produce them (`get`, `get -o wide`), the other
//! output formats (`yaml`, `json`, `name`, `custom-columns`, `jsonpath`),
//! `describe` and `explain` (served from our OpenAPI documents).

mod kubectl_support;

use anyhow::{Context, Result};
use serde_json::Value;
use ubernetes_e2e::Server;

use kubectl_support::{
    SETTLE, header, json, lines, rows, settled_deployment, workload_controllers_run,
};

const OBJECTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: out
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
  namespace: out
  labels:
    tier: front
data:
  greeting: hello
  other: value
---
apiVersion: v1
kind: Secret
metadata:
  name: sec1
  namespace: out
type: kubernetes.io/basic-auth
stringData:
  username: admin
  password: hunter2
---
apiVersion: v1
kind: Service
metadata:
  name: svc1
  namespace: out
spec:
  clusterIP: 10.96.100.10
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
  - name: dns
    port: 53
    protocol: UDP
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: out
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
      - name: sidecar
        image: busybox:1.36
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: rs1
  namespace: out
spec:
  replicas: 3
  selector:
    matchLabels:
      app: rs1
  template:
    metadata:
      labels:
        app: rs1
    spec:
      containers:
      - name: web
        image: nginx:1.27
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ing1
  namespace: out
spec:
  ingressClassName: nginx
  rules:
  - host: a.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: svc1
            port:
              number: 80
  - host: b.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: svc1
            port:
              number: 80
---
apiVersion: v1
kind: Event
metadata:
  name: ev1
  namespace: out
involvedObject:
  apiVersion: v1
  kind: ConfigMap
  name: cm1
  namespace: out
reason: Testing
message: something happened
type: Warning
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 1
source:
  component: e2e
"#;

/// The server with [`OBJECTS`] applied and, where kcm's workload controllers
/// run ([`workload_controllers_run`]), settled as kcm leaves them: web's
/// ReplicaSet and two Pending Pods made, rs1's three Pods made (no Node, so
/// none is ready), so the tables below read a fixed state.
fn setup() -> Result<Server> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], OBJECTS)?;
    settled_deployment(&server, "out", "web")?;
    if workload_controllers_run() {
        ubernetes_e2e::eventually(SETTLE, || {
            let rs = json(&server, &["get", "replicaset", "rs1", "-n", "out"])?;
            Ok((rs["status"]["replicas"] == 3).then_some(()))
        })?;
    }
    Ok(server)
}

/// web's replica counts (updated, total, unavailable) as kube shows them:
/// with kcm (a standalone federation) its ReplicaSet made both Pods, which
/// stay Pending without a Node; with members that run no controllers,
/// nothing was made.
fn web_counts() -> (u32, u32, u32) {
    if workload_controllers_run() {
        (2, 2, 2)
    } else {
        (0, 0, 0)
    }
}

/// The tokens of a collapsed table row.
fn tokens(row: &str) -> Vec<&str> {
    row.split(' ').collect()
}

/// The only data row of a table, as tokens.
fn only_row(table: &str) -> Vec<String> {
    let r = rows(table);
    assert_eq!(r.len(), 1, "expected one row:\n{table}");
    tokens(&r[0]).into_iter().map(str::to_string).collect()
}

#[test]
fn table_headers_and_rows_are_kube_apiservers() -> Result<()> {
    let server = setup()?;

    let ns = server.kubectl_ok(&["get", "namespaces"])?;
    assert_eq!(header(&ns), "NAME STATUS AGE", "{ns}");
    let out_row = rows(&ns)
        .into_iter()
        .find(|r| r.starts_with("out "))
        .context("ns out listed")?;
    assert_eq!(&tokens(&out_row)[..2], ["out", "Active"], "{ns}");

    // (every namespace also holds the server's kube-root-ca.crt)
    let cm = server.kubectl_ok(&[
        "get",
        "configmaps",
        "-n",
        "out",
        "--field-selector=metadata.name=cm1",
    ])?;
    assert_eq!(header(&cm), "NAME DATA AGE", "{cm}");
    assert_eq!(&only_row(&cm)[..2], ["cm1", "2"], "{cm}");

    let sec = server.kubectl_ok(&["get", "secrets", "-n", "out"])?;
    assert_eq!(header(&sec), "NAME TYPE DATA AGE", "{sec}");
    assert_eq!(
        &only_row(&sec)[..3],
        ["sec1", "kubernetes.io/basic-auth", "2"],
        "{sec}"
    );

    let svc = server.kubectl_ok(&["get", "services", "-n", "out"])?;
    assert_eq!(
        header(&svc),
        "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
        "{svc}"
    );
    assert_eq!(
        &only_row(&svc)[..5],
        [
            "svc1",
            "ClusterIP",
            "10.96.100.10",
            "<none>",
            "80/TCP,53/UDP"
        ],
        "{svc}"
    );
    let svc_wide = server.kubectl_ok(&["get", "services", "-n", "out", "-o", "wide"])?;
    assert_eq!(
        header(&svc_wide),
        "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR",
        "{svc_wide}"
    );
    let row = only_row(&svc_wide);
    assert_eq!(
        row.last().map(String::as_str),
        Some("app=web"),
        "{svc_wide}"
    );

    let deploy = server.kubectl_ok(&["get", "deployments", "-n", "out"])?;
    assert_eq!(
        header(&deploy),
        "NAME READY UP-TO-DATE AVAILABLE AGE",
        "{deploy}"
    );
    let (updated, _, _) = web_counts();
    assert_eq!(
        &only_row(&deploy)[..4],
        ["web", "0/2", updated.to_string().as_str(), "0"],
        "{deploy}"
    );
    let deploy_wide = server.kubectl_ok(&["get", "deployments", "-n", "out", "-o", "wide"])?;
    assert_eq!(
        header(&deploy_wide),
        "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
        "{deploy_wide}"
    );
    let row = only_row(&deploy_wide);
    assert_eq!(
        &row[5..],
        ["web,sidecar", "nginx:1.27,busybox:1.36", "app=web"],
        "{deploy_wide}"
    );

    // (with kcm, web's own ReplicaSet is listed too; rs1's Pods exist
    // but none is ready without a Node)
    let rs = server.kubectl_ok(&[
        "get",
        "replicasets",
        "-n",
        "out",
        "--field-selector=metadata.name=rs1",
    ])?;
    assert_eq!(header(&rs), "NAME DESIRED CURRENT READY AGE", "{rs}");
    let current = if workload_controllers_run() { "3" } else { "0" };
    assert_eq!(&only_row(&rs)[..4], ["rs1", "3", current, "0"], "{rs}");

    let ing = server.kubectl_ok(&["get", "ingresses", "-n", "out"])?;
    assert_eq!(header(&ing), "NAME CLASS HOSTS ADDRESS PORTS AGE", "{ing}");
    // ADDRESS is empty (no load balancer status), so the row has one token fewer.
    assert_eq!(
        &only_row(&ing)[..4],
        ["ing1", "nginx", "a.example.com,b.example.com", "80"],
        "{ing}"
    );

    // Only our event, by the involvedObject and reason field selectors,
    // which kube-apiserver supports on core events (with members joined,
    // the federation reports its own events on cm1, as controllers do).
    let ev = server.kubectl_ok(&[
        "get",
        "events",
        "-n",
        "out",
        "--field-selector",
        "involvedObject.kind=ConfigMap,involvedObject.name=cm1,reason=Testing",
    ])?;
    assert_eq!(header(&ev), "LAST SEEN TYPE REASON OBJECT MESSAGE", "{ev}");
    let row = only_row(&ev);
    assert_eq!(
        &row[1..],
        [
            "Warning",
            "Testing",
            "configmap/cm1",
            "something",
            "happened"
        ],
        "{ev}"
    );
    Ok(())
}

#[test]
fn every_output_format_prints_the_object() -> Result<()> {
    let server = setup()?;

    let yaml = server.kubectl_ok(&["get", "configmap", "cm1", "-n", "out", "-o", "yaml"])?;
    for line in [
        "apiVersion: v1",
        "kind: ConfigMap",
        "  name: cm1",
        "  namespace: out",
        "  greeting: hello",
        "    tier: front",
    ] {
        assert!(
            yaml.lines().any(|l| l == line),
            "missing {line:?} in:\n{yaml}"
        );
    }

    let obj = json(&server, &["get", "configmap", "cm1", "-n", "out"])?;
    assert_eq!(obj["data"]["greeting"], "hello");
    assert_eq!(obj["metadata"]["labels"]["tier"], "front");

    let list = json(&server, &["get", "configmaps", "-n", "out"])?;
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "cm1");

    let name = server.kubectl_ok(&[
        "get",
        "configmaps,secrets,deployments",
        "-n",
        "out",
        "-o",
        "name",
    ])?;
    assert_eq!(
        lines(&name),
        [
            "configmap/cm1",
            "configmap/kube-root-ca.crt",
            "deployment.apps/web",
            "secret/sec1"
        ],
        "{name}"
    );

    let cc = server.kubectl_ok(&[
        "get",
        "deployments",
        "-n",
        "out",
        "-o",
        "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas,IMAGE:.spec.template.spec.containers[0].image",
    ])?;
    assert_eq!(header(&cc), "NAME REPLICAS IMAGE", "{cc}");
    assert_eq!(rows(&cc), ["web 2 nginx:1.27"], "{cc}");

    let jp = server.kubectl_ok(&[
        "get",
        "services",
        "-n",
        "out",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}:{.spec.ports[*].port}{\"\\n\"}{end}",
    ])?;
    assert_eq!(jp, "svc1:80 53\n");

    let jp_one = server.kubectl_ok(&[
        "get",
        "secret",
        "sec1",
        "-n",
        "out",
        "-o",
        "jsonpath={.data.username}",
    ])?;
    assert_eq!(jp_one, "YWRtaW4=", "base64 of admin");

    // -o wide of a kind without wide columns is the plain table.
    let wide = server.kubectl_ok(&["get", "configmaps", "-n", "out", "-o", "wide"])?;
    assert_eq!(header(&wide), "NAME DATA AGE", "{wide}");
    Ok(())
}

#[test]
fn describe_shows_deployment_and_configmap_details() -> Result<()> {
    let server = setup()?;

    let d = server.kubectl_ok(&["describe", "deployment", "web", "-n", "out"])?;
    let collapsed: Vec<String> = d
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let (updated, total, unavailable) = web_counts();
    let replicas = format!(
        "Replicas: 2 desired | {updated} updated | {total} total | 0 available | {unavailable} unavailable"
    );
    for want in [
        "Name: web",
        "Namespace: out",
        "Selector: app=web",
        replicas.as_str(),
        "StrategyType: RollingUpdate",
        "RollingUpdateStrategy: 25% max unavailable, 25% max surge",
        "Labels: app=web",
        "web:",
        "Image: nginx:1.27",
        "sidecar:",
        "Image: busybox:1.36",
    ] {
        assert!(
            collapsed.iter().any(|l| l == want),
            "describe deployment lacks {want:?}:\n{d}"
        );
    }

    let c = server.kubectl_ok(&["describe", "configmap", "cm1", "-n", "out"])?;
    let collapsed: Vec<String> = c
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "Name: cm1",
        "Namespace: out",
        "Labels: tier=front",
        "Data",
        "greeting:",
        "hello",
        "other:",
        "value",
    ] {
        assert!(
            collapsed.iter().any(|l| l == want),
            "describe configmap lacks {want:?}:\n{c}"
        );
    }
    // The value follows its key and the `----` rule.
    let at = collapsed
        .iter()
        .position(|l| l == "greeting:")
        .context("greeting key")?;
    assert_eq!(collapsed[at + 1], "----");
    assert_eq!(collapsed[at + 2], "hello");
    Ok(())
}

#[test]
fn explain_reads_field_docs_from_the_servers_openapi() -> Result<()> {
    let server = Server::start()?;

    let e = server.kubectl_ok(&["explain", "deployment.spec.replicas"])?;
    let collapsed: Vec<String> = e
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "GROUP: apps",
        "KIND: Deployment",
        "VERSION: v1",
        "FIELD: replicas <integer>",
        "DESCRIPTION:",
    ] {
        assert!(
            collapsed.iter().any(|l| l == want),
            "explain lacks {want:?}:\n{e}"
        );
    }
    assert!(e.contains("Number of desired pods"), "{e}");

    let c = server.kubectl_ok(&["explain", "configmap"])?;
    let collapsed: Vec<String> = c
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for want in [
        "KIND: ConfigMap",
        "VERSION: v1",
        "FIELDS:",
        "apiVersion <string>",
        "binaryData <map[string]string>",
        "data <map[string]string>",
        "immutable <boolean>",
        "metadata <ObjectMeta>",
    ] {
        assert!(
            collapsed.iter().any(|l| l == want),
            "explain configmap lacks {want:?}:\n{c}"
        );
    }
    assert!(
        c.contains("ConfigMap holds configuration data for pods to consume."),
        "{c}"
    );

    // An unknown field is kubectl's error, from the same schema.
    let err = server.kubectl_err(&["explain", "deployment.spec.nosuchfield"])?;
    assert!(
        err.contains("field \"nosuchfield\" does not exist"),
        "{err}"
    );
    Ok(())
}

#[test]
fn events_k8s_io_events_print_with_the_same_columns() -> Result<()> {
    let server = setup()?;
    let doc = r#"
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: eev
  namespace: out
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/e2e
reportingInstance: e2e-1
action: Testing
reason: Tested
type: Normal
note: new style event
regarding:
  kind: Deployment
  name: web
  namespace: out
"#;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], doc)?;
    let ev = server.kubectl_ok(&[
        "get",
        "events.events.k8s.io",
        "-n",
        "out",
        "--field-selector",
        "metadata.name=eev",
    ])?;
    assert_eq!(header(&ev), "LAST SEEN TYPE REASON OBJECT MESSAGE", "{ev}");
    let row = only_row(&ev);
    assert_eq!(
        &row[1..],
        [
            "Normal",
            "Tested",
            "deployment/web",
            "new",
            "style",
            "event"
        ],
        "{ev}"
    );
    let v: Value = json(
        &server,
        &["get", "events.events.k8s.io", "eev", "-n", "out"],
    )?;
    assert_eq!(v["note"], "new style event");
    Ok(())
}
