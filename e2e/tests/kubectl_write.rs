//! kubectl 1.37 writes against the server: the three patch types, client-side
//! apply dropping a key, `edit` through `KUBE_EDITOR`, `scale` (the scale
//! subresource), status-subresource isolation, `replace` with a stale
//! resourceVersion, error texts (AlreadyExists, Invalid names, strict unknown
//! fields), server dry-run, `diff` exit codes, and the imperative creates that
//! send protobuf bodies.

mod kubectl_support;

use anyhow::{Context, Result};
use serde_json::Value;
use ubernetes_e2e::Server;

use kubectl_support::{json, kubectl_env_ok, kubectl_status, settled_deployment};

const TWO_CONTAINERS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: two
  namespace: default
  labels:
    app: two
spec:
  replicas: 1
  selector:
    matchLabels:
      app: two
  template:
    metadata:
      labels:
        app: two
    spec:
      containers:
      - name: web
        image: nginx:1.26
        ports:
        - containerPort: 80
      - name: sidecar
        image: busybox:1.36
        command: ["sleep", "3600"]
"#;

fn containers(deploy: &Value) -> Vec<Value> {
    deploy["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn patch_strategic_merge_and_json_each_change_only_what_they_name() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], TWO_CONTAINERS)?;
    // kcm's deployment controller (the federation's own while it stands
    // alone) writes the revision annotation, and kube bumps a Deployment's
    // generation on an annotation change too: read the generation once it
    // is done.
    let before = settled_deployment(&server, "default", "two")?;
    let generation = before["metadata"]["generation"]
        .as_i64()
        .context("generation")?;

    // Strategic merge: containers merge by name; only "web" changes. The
    // patch's own answer is read: the controller's next revision
    // annotation bumps the generation once more right after.
    let after = json(
        &server,
        &[
            "patch",
            "deployment",
            "two",
            "--type=strategic",
            "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}"#,
        ],
    )?;
    let c = containers(&after);
    assert_eq!(c.len(), 2, "{after}");
    assert_eq!(c[0]["name"], "web");
    assert_eq!(c[0]["image"], "nginx:1.27");
    assert_eq!(
        c[0]["ports"][0]["containerPort"], 80,
        "untouched fields of web kept"
    );
    assert_eq!(c[1]["name"], "sidecar");
    assert_eq!(c[1]["image"], "busybox:1.36");
    assert_eq!(c[1]["command"], serde_json::json!(["sleep", "3600"]));
    assert_eq!(
        after["metadata"]["generation"].as_i64(),
        Some(generation + 1),
        "a spec change bumps generation"
    );

    // Strategic merge with a $patch: delete directive removes one container by name.
    let out = server.kubectl_ok(&[
        "patch",
        "deployment",
        "two",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#,
    ])?;
    assert_eq!(out.trim(), "deployment.apps/two patched");
    let names: Vec<Value> = containers(&json(&server, &["get", "deployment", "two"])?)
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(names, [serde_json::json!("web")]);

    // JSON merge patch: lists are replaced wholesale, null deletes a key.
    server.kubectl_ok(&[
        "patch",
        "deployment",
        "two",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"app":null,"team":"a"}},"spec":{"template":{"spec":{"containers":[{"name":"only","image":"redis:7"}]}}}}"#,
    ])?;
    let merged = json(&server, &["get", "deployment", "two"])?;
    assert_eq!(
        merged["metadata"]["labels"],
        serde_json::json!({"team": "a"})
    );
    let c = containers(&merged);
    assert_eq!(c.len(), 1, "{merged}");
    assert_eq!(c[0]["name"], "only");
    assert_eq!(
        c[0]["imagePullPolicy"], "IfNotPresent",
        "defaults re-applied after the patch"
    );

    // JSON patch (RFC 6902): test, replace, add.
    server.kubectl_ok(&[
        "patch",
        "deployment",
        "two",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":4},{"op":"add","path":"/metadata/annotations","value":{"note":"json"}}]"#,
    ])?;
    let jp = json(&server, &["get", "deployment", "two"])?;
    assert_eq!(jp["spec"]["replicas"], 4);
    assert_eq!(jp["metadata"]["annotations"]["note"], "json");
    // A failing test op rejects the whole patch.
    let err = server.kubectl_err(&[
        "patch",
        "deployment",
        "two",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":9}]"#,
    ])?;
    // kube-apiserver answers a failed patch application with a bare 422
    // (NewGenericServerResponse: reason Invalid, no causes).
    assert!(
        err.contains(
            "The request is invalid: the server rejected our request due to an error in our request"
        ),
        "{err}"
    );
    assert_eq!(
        json(&server, &["get", "deployment", "two"])?["spec"]["replicas"],
        4
    );
    Ok(())
}

#[test]
fn apply_twice_removes_the_key_the_second_manifest_drops() -> Result<()> {
    let server = Server::start()?;
    let first = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: ap
  namespace: default
  labels:
    keep: "yes"
    drop: "yes"
data:
  keep: "1"
  drop: "2"
"#;
    let second = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: ap
  namespace: default
  labels:
    keep: "yes"
data:
  keep: "1"
  added: "3"
"#;
    assert_eq!(
        server
            .kubectl_stdin_ok(&["apply", "-f", "-"], first)?
            .trim(),
        "configmap/ap created"
    );
    // A key added by someone else (not in last-applied) must survive applies.
    server.kubectl_ok(&["label", "configmap", "ap", "foreign=kept"])?;
    assert_eq!(
        server
            .kubectl_stdin_ok(&["apply", "-f", "-"], second)?
            .trim(),
        "configmap/ap configured"
    );
    let cm = json(&server, &["get", "configmap", "ap"])?;
    assert_eq!(cm["data"], serde_json::json!({"keep": "1", "added": "3"}));
    assert_eq!(
        cm["metadata"]["labels"],
        serde_json::json!({"keep": "yes", "foreign": "kept"})
    );
    let last: Value = serde_json::from_str(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .context("last-applied")?,
    )?;
    assert_eq!(last["data"], serde_json::json!({"keep": "1", "added": "3"}));
    // Applying the same again is a no-op.
    assert_eq!(
        server
            .kubectl_stdin_ok(&["apply", "-f", "-"], second)?
            .trim(),
        "configmap/ap unchanged"
    );
    Ok(())
}

#[test]
fn edit_saves_what_the_editor_wrote() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&[
        "create",
        "configmap",
        "edme",
        "--from-literal=greeting=oldvalue",
        "--from-literal=other=same",
    ])?;
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("editor.sh");
    std::fs::write(&script, "#!/bin/sh\nsed -i s/oldvalue/newvalue/ \"$1\"\n")?;
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()?;
    assert!(status.success());
    let editor = script.to_string_lossy().into_owned();

    let (out, _) = kubectl_env_ok(
        &server,
        &["edit", "configmap", "edme"],
        &[("KUBE_EDITOR", &editor)],
    )?;
    assert_eq!(out.trim(), "configmap/edme edited");
    let cm = json(&server, &["get", "configmap", "edme"])?;
    assert_eq!(
        cm["data"],
        serde_json::json!({"greeting": "newvalue", "other": "same"})
    );

    // An editor that changes nothing: kubectl says so and nothing is written.
    let rv = cm["metadata"]["resourceVersion"].clone();
    let (out, err) = kubectl_env_ok(
        &server,
        &["edit", "configmap", "edme"],
        &[("KUBE_EDITOR", &editor)],
    )?;
    assert!(out.trim().is_empty(), "{out}");
    assert!(err.contains("Edit cancelled, no changes made."), "{err}");
    assert_eq!(
        json(&server, &["get", "configmap", "edme"])?["metadata"]["resourceVersion"],
        rv
    );
    Ok(())
}

#[test]
fn scale_goes_through_the_scale_subresource() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(&["apply", "-f", "-"], TWO_CONTAINERS)?;

    let out = server.kubectl(&["scale", "deployment", "two", "--replicas=3", "-v=6"])?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "deployment.apps/two scaled"
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.lines()
            .any(|l| l.contains("verb=\"PATCH\"") && l.contains("/deployments/two/scale")),
        "kubectl scale patches the scale subresource:\n{log}"
    );
    assert_eq!(
        json(&server, &["get", "deployment", "two"])?["spec"]["replicas"],
        3
    );

    let scale: Value = serde_json::from_str(&server.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/two/scale",
    ])?)?;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=two");

    // --current-replicas is a precondition checked against the scale.
    let err = server.kubectl_err(&[
        "scale",
        "deployment",
        "two",
        "--current-replicas=1",
        "--replicas=5",
    ])?;
    assert!(err.contains("Expected replicas to be 1, was 3"), "{err}");
    assert_eq!(
        json(&server, &["get", "deployment", "two"])?["spec"]["replicas"],
        3
    );

    // Other scalable kinds.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:16
"#,
    )?;
    server.kubectl_ok(&["scale", "statefulset", "db", "--replicas=2"])?;
    assert_eq!(
        json(&server, &["get", "statefulset", "db"])?["spec"]["replicas"],
        2
    );
    Ok(())
}

#[test]
fn status_and_main_resource_writes_are_isolated() -> Result<()> {
    // The test writes the status as a deployment controller would, so no
    // other may run: kube-apiserver without kcm. A federation with no
    // Cluster runs kcm's deployment controller itself (standalone mode),
    // which would rewrite the status at once, as kcm does on kube: it is
    // turned off here.
    let server = Server::start_with(&["--standalone-controllers=false"])?;
    // With members joined the federation sums their status into federated
    // Deployments, so this one is kept to the federation (the annotation).
    let own = TWO_CONTAINERS.replace(
        "  labels:\n    app: two\nspec:",
        "  labels:\n    app: two\n  annotations:\n    federation.kubernetes.io/federation-control-plane: \"true\"\nspec:",
    );
    assert_ne!(own, TWO_CONTAINERS);
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &own)?;

    // A status patch changes status only; its spec part is ignored.
    server.kubectl_ok(&[
        "patch",
        "deployment",
        "two",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":9},"status":{"replicas":7,"readyReplicas":5}}"#,
    ])?;
    let d = json(&server, &["get", "deployment", "two"])?;
    assert_eq!(d["spec"]["replicas"], 1, "status write ignores spec");
    assert_eq!(d["status"]["replicas"], 7);
    assert_eq!(d["status"]["readyReplicas"], 5);
    let generation = d["metadata"]["generation"].clone();

    // A main-resource patch of status is ignored; its spec/metadata apply.
    server.kubectl_ok(&[
        "patch",
        "deployment",
        "two",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"x":"y"}},"status":{"replicas":1,"readyReplicas":0}}"#,
    ])?;
    let d = json(&server, &["get", "deployment", "two"])?;
    assert_eq!(d["status"]["replicas"], 7, "main write ignores status");
    assert_eq!(d["status"]["readyReplicas"], 5);
    assert_eq!(d["metadata"]["labels"]["x"], "y");
    assert_eq!(
        d["metadata"]["generation"], generation,
        "no spec change, no new generation"
    );

    // The READY column reads the status written through the subresource.
    let table = server.kubectl_ok(&["get", "deployment", "two", "--no-headers"])?;
    let cols: Vec<&str> = table.split_whitespace().collect();
    assert_eq!(&cols[..2], ["two", "5/1"], "{table}");

    // Same for a namespace-less kind with status: nodes.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nspec:\n  unschedulable: false\n",
    )?;
    server.kubectl_ok(&[
        "patch",
        "node",
        "n1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"spec":{"unschedulable":true},"status":{"nodeInfo":{"kubeletVersion":"v1.37.1"}}}"#,
    ])?;
    let n = json(&server, &["get", "node", "n1"])?;
    assert_eq!(n["status"]["nodeInfo"]["kubeletVersion"], "v1.37.1");
    assert!(
        n["spec"]["unschedulable"] != true,
        "status write ignores spec: {n}"
    );
    Ok(())
}

#[test]
fn write_errors_carry_kube_apiservers_reasons_and_messages() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "configmap", "c2", "--from-literal=k=v2"])?;

    // replace with a stale resourceVersion → Conflict.
    let stale = server.kubectl_ok(&["get", "configmap", "c2", "-o", "yaml"])?;
    server.kubectl_ok(&["label", "configmap", "c2", "bump=1"])?;
    let stale = stale.replace("k: v2", "k: stale");
    let out = server.kubectl_stdin(&["replace", "-f", "-"], &stale)?;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Error from server (Conflict)"), "{err}");
    assert!(
        err.contains(
            "Operation cannot be fulfilled on configmaps \"c2\": the object has been modified; please apply your changes to the latest version and try again"
        ),
        "{err}"
    );
    assert_eq!(
        json(&server, &["get", "configmap", "c2"])?["data"]["k"],
        "v2"
    );

    // create twice → AlreadyExists, both imperatively and from a file.
    let err = server.kubectl_err(&["create", "configmap", "c2"])?;
    assert!(err.contains("configmaps \"c2\" already exists"), "{err}");
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c2\n  namespace: default\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], doc)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Error from server (AlreadyExists)"), "{err}");
    assert!(err.contains("configmaps \"c2\" already exists"), "{err}");

    // Invalid names → 422 naming the field.
    let err = server.kubectl_err(&["create", "configmap", "Bad_Name"])?;
    assert!(
        err.contains(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
        ),
        "{err}"
    );
    let doc = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: has.dots\n";
    let out = server.kubectl_stdin(&["create", "-f", "-", "-v=6"], doc)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("status=\"422 Unprocessable Entity\""), "{err}");
    assert!(
        err.contains(
            "The Namespace \"has.dots\" is invalid: metadata.name: Invalid value: \"has.dots\""
        ),
        "{err}"
    );
    assert!(
        err.contains("a lowercase RFC 1123 label must consist of"),
        "{err}"
    );

    // A missing required field → 422 with the field path.
    let doc = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nosel\n  namespace: default\nspec:\n  template:\n    metadata:\n      labels: {a: b}\n    spec:\n      containers:\n      - name: c\n        image: x\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], doc)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The Deployment \"nosel\" is invalid"), "{err}");
    assert!(err.contains("* spec.selector: Required value"), "{err}");
    Ok(())
}

#[test]
fn unknown_fields_are_refused_under_strict_validation_and_warned_otherwise() -> Result<()> {
    let server = Server::start()?;
    let doc = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: uf
  namespace: default
spec:
  foo: 1
  selector:
    matchLabels: {a: b}
  template:
    metadata:
      labels: {a: b}
    spec:
      containers:
      - name: c
        image: nginx:1.27
"#;
    for verb in ["apply", "create"] {
        let out = server.kubectl_stdin(&[verb, "-f", "-"], doc)?;
        assert!(
            !out.status.success(),
            "{verb} with an unknown field must fail"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("Error from server (BadRequest)"),
            "{verb}: {err}"
        );
        assert!(
            err.contains("strict decoding error: unknown field \"spec.foo\""),
            "{verb}: {err}"
        );
    }
    server.kubectl_err(&["get", "deployment", "uf"])?;

    // --validate=warn: created, with the server's warning relayed by kubectl.
    let out = server.kubectl_stdin(&["create", "--validate=warn", "-f", "-"], doc)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Warning: unknown field \"spec.foo\""), "{err}");
    let d = json(&server, &["get", "deployment", "uf"])?;
    assert!(d["spec"].get("foo").is_none(), "unknown field dropped: {d}");

    // --validate=false (Ignore): accepted silently.
    let out = server.kubectl_stdin(&["apply", "--validate=false", "-f", "-"], doc)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("unknown field"));
    Ok(())
}

#[test]
fn server_dry_run_validates_but_stores_nothing() -> Result<()> {
    let server = Server::start()?;

    let out = server.kubectl_ok(&[
        "create",
        "configmap",
        "dry",
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "json",
    ])?;
    let obj: Value = serde_json::from_str(&out)?;
    assert_eq!(obj["data"]["a"], "b");
    assert!(
        obj["metadata"]["uid"].is_string(),
        "dry-run returns the object as it would be stored: {obj}"
    );
    server.kubectl_err(&["get", "configmap", "dry"])?;

    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry2\n  namespace: default\ndata:\n  a: b\n";
    let out = server.kubectl_stdin_ok(&["apply", "--dry-run=server", "-f", "-"], doc)?;
    assert_eq!(out.trim(), "configmap/dry2 created (server dry run)");
    server.kubectl_err(&["get", "configmap", "dry2"])?;

    // Dry-run still validates.
    let err = server.kubectl_err(&["create", "configmap", "Bad_Name", "--dry-run=server"])?;
    assert!(err.contains("metadata.name: Invalid value"), "{err}");

    // Patch and delete dry runs leave the stored object alone.
    server.kubectl_stdin_ok(&["apply", "-f", "-"], doc)?;
    let out = server.kubectl_ok(&[
        "patch",
        "configmap",
        "dry2",
        "--dry-run=server",
        "-p",
        r#"{"data":{"a":"changed"}}"#,
    ])?;
    assert!(out.starts_with("configmap/dry2 patched"), "{out}");
    assert_eq!(
        json(&server, &["get", "configmap", "dry2"])?["data"]["a"],
        "b"
    );
    let out = server.kubectl_ok(&["delete", "configmap", "dry2", "--dry-run=server"])?;
    assert_eq!(
        out.trim(),
        "configmap \"dry2\" deleted from default namespace (server dry run)"
    );
    assert_eq!(
        json(&server, &["get", "configmap", "dry2"])?["data"]["a"],
        "b"
    );
    Ok(())
}

#[test]
fn diff_exits_zero_without_changes_and_one_with_changes() -> Result<()> {
    let server = Server::start()?;
    let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  namespace: default\ndata:\n  greeting: hi\n";
    server.kubectl_stdin_ok(&["apply", "-f", "-"], doc)?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("cm.yaml");
    std::fs::write(&file, doc)?;
    let file = file.to_string_lossy().into_owned();

    let (code, out, err) = kubectl_status(&server, &["diff", "-f", &file])?;
    assert_eq!(code, 0, "no change: stdout {out} stderr {err}");
    assert!(out.is_empty(), "{out}");

    std::fs::write(&file, doc.replace("greeting: hi", "greeting: hello"))?;
    let (code, out, err) = kubectl_status(&server, &["diff", "-f", &file])?;
    assert_eq!(code, 1, "a change: stdout {out} stderr {err}");
    assert!(out.lines().any(|l| l == "-  greeting: hi"), "{out}");
    assert!(out.lines().any(|l| l == "+  greeting: hello"), "{out}");
    // diff is a dry run: nothing changed.
    assert_eq!(
        json(&server, &["get", "configmap", "d"])?["data"]["greeting"],
        "hi"
    );

    // A new object is a change too.
    std::fs::write(&file, doc.replace("name: d", "name: brand-new"))?;
    let (code, out, _) = kubectl_status(&server, &["diff", "-f", &file])?;
    assert_eq!(code, 1, "{out}");
    assert!(out.lines().any(|l| l == "+  name: brand-new"), "{out}");
    server.kubectl_err(&["get", "configmap", "brand-new"])?;

    // Errors are exit code > 1.
    std::fs::write(&file, doc.replace("name: d", "name: Bad_Name"))?;
    let (code, _, err) = kubectl_status(&server, &["diff", "-f", &file])?;
    assert!(
        code > 1,
        "an invalid object is an error, not a diff: {code} {err}"
    );
    Ok(())
}

#[test]
fn diff_of_an_unchanged_imperatively_created_object_exits_zero() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "configmap", "edme", "--from-literal=greeting=v"])?;
    let cm = json(&server, &["get", "configmap", "edme"])?;
    assert!(cm["metadata"].get("generateName").is_none(), "{cm}");
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("cm.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edme\n  namespace: default\ndata:\n  greeting: v\n",
    )?;
    let (code, out, err) = kubectl_status(&server, &["diff", "-f", &file.to_string_lossy()])?;
    assert_eq!(code, 0, "stdout {out} stderr {err}");
    Ok(())
}

#[test]
fn imperative_creates_send_protobuf_and_store_the_right_objects() -> Result<()> {
    let server = Server::start()?;

    let protobuf_post = |args: &[&str]| -> Result<String> {
        let mut full = args.to_vec();
        full.push("-v=8");
        let out = server.kubectl(&full)?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "kubectl {}: {stderr}", args.join(" "));
        assert!(
            stderr.contains("Content-Type: application/vnd.kubernetes.protobuf")
                || stderr.contains("\"Content-Type\"=\"application/vnd.kubernetes.protobuf\""),
            "kubectl {} sent a protobuf body:\n{stderr}",
            args.join(" ")
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };

    let out = protobuf_post(&["create", "namespace", "proto"])?;
    assert_eq!(out.trim(), "namespace/proto created");
    let ns = json(&server, &["get", "namespace", "proto"])?;
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], serde_json::json!(["kubernetes"]));

    let out = protobuf_post(&[
        "create",
        "configmap",
        "cfg",
        "-n",
        "proto",
        "--from-literal=a=1",
        "--from-literal=b=two words",
    ])?;
    assert_eq!(out.trim(), "configmap/cfg created");
    let cm = json(&server, &["get", "configmap", "cfg", "-n", "proto"])?;
    assert_eq!(cm["data"], serde_json::json!({"a": "1", "b": "two words"}));

    let out = protobuf_post(&[
        "create",
        "secret",
        "generic",
        "sec",
        "-n",
        "proto",
        "--from-literal=password=hunter2",
        "--type=example.com/custom",
    ])?;
    assert_eq!(out.trim(), "secret/sec created");
    let sec = json(&server, &["get", "secret", "sec", "-n", "proto"])?;
    assert_eq!(sec["data"]["password"], "aHVudGVyMg==");
    assert_eq!(sec["type"], "example.com/custom");

    // Cluster-policy kinds kubectl creates through its typed clients.
    let out = protobuf_post(&[
        "create",
        "priorityclass",
        "proto-high",
        "--value=1000",
        "--description=created in protobuf",
        "--preemption-policy=Never",
    ])?;
    assert_eq!(
        out.trim(),
        "priorityclass.scheduling.k8s.io/proto-high created"
    );
    let pc = json(&server, &["get", "priorityclass", "proto-high"])?;
    assert_eq!(pc["value"], 1000);
    assert_eq!(pc["description"], "created in protobuf");
    assert_eq!(pc["preemptionPolicy"], "Never");

    // The field manager is kubectl's (the fieldManager query parameter).
    let cm = json(
        &server,
        &[
            "get",
            "configmap",
            "cfg",
            "-n",
            "proto",
            "--show-managed-fields",
        ],
    )?;
    assert_eq!(
        cm["metadata"]["managedFields"][0]["manager"],
        "kubectl-create"
    );
    Ok(())
}
