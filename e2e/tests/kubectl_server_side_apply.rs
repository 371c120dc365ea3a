//! Server-side apply with the real kubectl 1.37: managed fields, conflicts
//! between managers, `--force-conflicts`, removal of fields a manager stops
//! applying, and client-side then server-side apply on one object.

use anyhow::{Result, ensure};
use serde_json::Value;
use ubernetes_e2e::Server;

const CM_V1: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"1\"\n  b: \"2\"\n";
const CM_V2: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  c: \"3\"\n";
const OTHER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: \"9\"\n";

const CM_CREATE_ONLY: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: once\n  resourceVersion: \"9223372036854775807\"\ndata:\n  a: \"1\"\n";

fn get_json(server: &Server, args: &[&str]) -> Result<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    Ok(serde_json::from_str(&server.kubectl_ok(&all)?)?)
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_string(),
                        e["operation"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn server_side_apply_tracks_owners_conflicts_and_removals() -> Result<()> {
    let server = Server::start()?;
    let out = server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], CM_V1)?;
    ensure!(out.contains("configmap/ssa serverside-applied"), "{out}");

    // The manager and its fields are visible with --show-managed-fields.
    let shown = server.kubectl_ok(&["get", "cm", "ssa", "-o", "yaml", "--show-managed-fields"])?;
    ensure!(shown.contains("manager: kubectl"), "{shown}");
    ensure!(shown.contains("operation: Apply"), "{shown}");
    ensure!(
        shown.contains("f:a: {}") && shown.contains("f:b: {}"),
        "{shown}"
    );

    // A second manager applying another value conflicts, naming the field
    // and the owner.
    let err = server.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        OTHER,
    )?;
    ensure!(!err.status.success(), "the conflicting apply must fail");
    let stderr = String::from_utf8_lossy(&err.stderr);
    ensure!(
        stderr.contains("Apply failed with 1 conflict")
            && stderr.contains(r#"conflict with "kubectl""#)
            && stderr.contains(".data.a"),
        "{stderr}"
    );
    ensure!(
        get_json(&server, &["get", "cm", "ssa"])?["data"]["a"] == "1",
        "unchanged"
    );

    // --force-conflicts takes the field.
    server.kubectl_stdin_ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        OTHER,
    )?;
    let obj = get_json(&server, &["get", "cm", "ssa", "--show-managed-fields"])?;
    ensure!(obj["data"]["a"] == "9", "{obj}");
    let m = managers(&obj);
    ensure!(m.contains(&("other".into(), "Apply".into())), "{m:?}");

    // kubectl no longer owns .data.a; a manifest without a and b removes b
    // (kubectl owned it alone) and leaves a (now other's).
    server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], CM_V2)?;
    let obj = get_json(&server, &["get", "cm", "ssa"])?;
    ensure!(obj["data"].get("b").is_none(), "b removed: {obj}");
    ensure!(obj["data"]["a"] == "9" && obj["data"]["c"] == "3", "{obj}");

    // A resourceVersion in an applied configuration is a precondition on
    // the object that is there; an apply that creates ignores it, as
    // kube-apiserver does (the federation's create-only apply of a member
    // copy relies on both).
    server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], CM_CREATE_ONLY)?;
    let obj = get_json(&server, &["get", "cm", "once", "--show-managed-fields"])?;
    ensure!(obj["data"]["a"] == "1", "{obj}");
    ensure!(
        obj["metadata"]["resourceVersion"] != "9223372036854775807",
        "{obj}"
    );
    ensure!(
        managers(&obj) == [("kubectl".to_string(), "Apply".to_string())],
        "{obj}"
    );
    let again = server.kubectl_stdin(&["apply", "--server-side", "-f", "-"], CM_CREATE_ONLY)?;
    let stderr = String::from_utf8_lossy(&again.stderr);
    ensure!(
        !again.status.success()
            && stderr.contains("Operation cannot be fulfilled")
            && stderr.contains("the object has been modified"),
        "the second apply must be a conflict: {stderr}"
    );
    let after = get_json(&server, &["get", "cm", "once"])?;
    ensure!(
        after["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"],
        "nothing written: {after}"
    );
    Ok(())
}

#[test]
fn client_side_then_server_side_apply_on_one_object() -> Result<()> {
    let server = Server::start()?;
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: web, image: 'nginx:1.25'}\n";
    server.kubectl_stdin_ok(&["apply", "-f", "-"], manifest)?;
    let out = server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], manifest)?;
    ensure!(out.contains("serverside-applied"), "{out}");
    let changed = manifest.replace("nginx:1.25", "nginx:1.27");
    server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], &changed)?;
    let obj = get_json(&server, &["get", "deploy", "web"])?;
    ensure!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27",
        "{obj}"
    );
    // The last-applied annotation follows the server-side apply, so a later
    // client-side apply works from it and keeps the value.
    let last = obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    ensure!(
        last.contains("nginx:1.27"),
        "annotation kept in step: {last}"
    );
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &changed)?;
    let obj = get_json(&server, &["get", "deploy", "web"])?;
    ensure!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27",
        "{obj}"
    );
    Ok(())
}
