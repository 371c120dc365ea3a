//! kubectl 1.37 and object lifecycles: `get -w` streaming watch events,
//! `wait --for=delete` / `--for=jsonpath`, finalizers holding a deletion,
//! garbage collection over ownerReferences (background, orphan, foreground),
//! namespace deletion purging contents, and a terminating namespace refusing
//! new content.

mod kubectl_support;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually};

use kubectl_support::{SETTLE, Streaming, json, lines, wait_gone};

/// A ConfigMap manifest with optional finalizer and owner.
fn configmap(
    name: &str,
    ns: &str,
    finalizer: Option<&str>,
    owner: Option<(&str, &str, bool)>,
) -> String {
    let mut doc =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n");
    if let Some(f) = finalizer {
        doc.push_str(&format!("  finalizers: [\"{f}\"]\n"));
    }
    if let Some((owner, uid, block)) = owner {
        doc.push_str(&format!(
            "  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: {block}\n"
        ));
    }
    doc.push_str("data:\n  k: v\n");
    doc
}

fn uid(server: &Server, name: &str, ns: &str) -> Result<String> {
    let obj = json(server, &["get", "configmap", name, "-n", ns])?;
    obj["metadata"]["uid"]
        .as_str()
        .map(str::to_string)
        .context("uid")
}

#[test]
fn get_watch_streams_added_modified_and_deleted_events() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "configmap", "first"])?;

    let mut watch = Streaming::start(
        &server,
        &[
            "get",
            "configmaps",
            "-w",
            "--output-watch-events",
            "-o",
            "jsonpath={.type} {.object.metadata.name} {.object.data.k}{\"\\n\"}",
        ],
    )?;
    // The initial list arrives as ADDED events; once "first" is printed the
    // watch continues from the list's resourceVersion, so nothing later is missed.
    watch.wait_for(SETTLE, |l| l.starts_with("ADDED first"))?;

    server.kubectl_ok(&["create", "configmap", "second", "--from-literal=k=one"])?;
    let line = watch.wait_for(SETTLE, |l| l.contains("second"))?;
    assert_eq!(line, "ADDED second one");

    server.kubectl_ok(&[
        "patch",
        "configmap",
        "second",
        "-p",
        r#"{"data":{"k":"two"}}"#,
    ])?;
    let line = watch.wait_for(SETTLE, |l| l.contains("second"))?;
    assert_eq!(line, "MODIFIED second two");

    server.kubectl_ok(&["delete", "configmap", "second"])?;
    let line = watch.wait_for(SETTLE, |l| l.contains("second"))?;
    assert_eq!(line, "DELETED second two");
    drop(watch);

    // The same as JSON watch events, across all namespaces.
    let mut watch = Streaming::start(
        &server,
        &[
            "get",
            "configmaps",
            "-A",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ],
    )?;
    watch.wait_for(SETTLE, |l| l.contains("\"first\""))?;
    server.kubectl_ok(&["create", "namespace", "elsewhere"])?;
    server.kubectl_ok(&["create", "configmap", "third", "-n", "elsewhere"])?;
    let line = watch.wait_for(SETTLE, |l| l.contains("\"third\""))?;
    let event: Value =
        serde_json::from_str(&line).with_context(|| format!("one JSON event per line: {line}"))?;
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["kind"], "ConfigMap");
    assert_eq!(event["object"]["metadata"]["namespace"], "elsewhere");
    Ok(())
}

#[test]
fn wait_returns_when_the_object_is_deleted_or_matches() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "configmap", "gone"])?;
    server.kubectl_ok(&["create", "configmap", "flag", "--from-literal=k=pending"])?;

    std::thread::scope(|s| -> Result<()> {
        let deleter = s.spawn(|| -> Result<()> {
            // Shortly after kubectl wait has started.
            std::thread::sleep(Duration::from_millis(800));
            server.kubectl_ok(&["delete", "configmap", "gone", "--wait=false"])?;
            Ok(())
        });
        let started = Instant::now();
        let out =
            server.kubectl_ok(&["wait", "--for=delete", "configmap/gone", "--timeout=30s"])?;
        assert_eq!(out.trim(), "configmap/gone condition met");
        assert!(
            started.elapsed() >= Duration::from_millis(700),
            "wait returned before the delete"
        );
        deleter
            .join()
            .map_err(|_| anyhow::anyhow!("deleter panicked"))??;
        Ok(())
    })?;
    server.kubectl_err(&["get", "configmap", "gone"])?;

    std::thread::scope(|s| -> Result<()> {
        let patcher = s.spawn(|| -> Result<()> {
            std::thread::sleep(Duration::from_millis(800));
            server.kubectl_ok(&[
                "patch",
                "configmap",
                "flag",
                "-p",
                r#"{"data":{"k":"done"}}"#,
            ])?;
            Ok(())
        });
        let out = server.kubectl_ok(&[
            "wait",
            "--for=jsonpath={.data.k}=done",
            "configmap/flag",
            "--timeout=30s",
        ])?;
        assert_eq!(out.trim(), "configmap/flag condition met");
        patcher
            .join()
            .map_err(|_| anyhow::anyhow!("patcher panicked"))??;
        Ok(())
    })?;

    // A wait that cannot be met times out with an error.
    let err = server.kubectl_err(&["wait", "--for=delete", "configmap/flag", "--timeout=1s"])?;
    assert!(err.contains("timed out waiting for the condition"), "{err}");
    Ok(())
}

#[test]
fn a_finalizer_holds_a_deletion_until_it_is_removed() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &configmap("held", "default", Some("example.com/hold"), None),
    )?;

    let out = server.kubectl_ok(&["delete", "configmap", "held", "--wait=false"])?;
    assert_eq!(
        out.trim(),
        "configmap \"held\" deleted from default namespace"
    );
    let obj = json(&server, &["get", "configmap", "held"])?;
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj}");
    assert_eq!(
        obj["metadata"]["finalizers"],
        serde_json::json!(["example.com/hold"])
    );
    // Still listed while it waits.
    let listed = server.kubectl_ok(&["get", "configmaps", "-o", "name"])?;
    assert!(
        lines(&listed).iter().any(|l| l == "configmap/held"),
        "{listed}"
    );

    // No new finalizers on an object being deleted; other updates are fine.
    let err = server.kubectl_err(&[
        "patch",
        "configmap",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]"#,
    ])?;
    assert!(
        err.contains("no new finalizers can be added if the object is being deleted"),
        "{err}"
    );
    server.kubectl_ok(&["label", "configmap", "held", "still=here"])?;

    // kubectl delete (which waits) gives up after its timeout while held.
    let err = server.kubectl_err(&["delete", "configmap", "held", "--timeout=1s"])?;
    assert!(err.contains("timed out waiting for the condition"), "{err}");

    // Removing the last finalizer completes the deletion.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])?;
    wait_gone(&server, &["get", "configmap", "held"])?;
    Ok(())
}

#[test]
fn garbage_collection_follows_owner_references_in_every_propagation_mode() -> Result<()> {
    let server = Server::start()?;
    let owned =
        |owner: &str, dependent: &str, finalizer: Option<&str>, block: bool| -> Result<()> {
            server.kubectl_ok(&["create", "configmap", owner])?;
            let owner_uid = uid(&server, owner, "default")?;
            server.kubectl_stdin_ok(
                &["create", "-f", "-"],
                &configmap(
                    dependent,
                    "default",
                    finalizer,
                    Some((owner, &owner_uid, block)),
                ),
            )?;
            Ok(())
        };

    // Background (kubectl's default): the owner goes at once, the dependent after it.
    owned("owner-bg", "dep-bg", None, false)?;
    server.kubectl_ok(&["delete", "configmap", "owner-bg"])?;
    server.kubectl_err(&["get", "configmap", "owner-bg"])?;
    wait_gone(&server, &["get", "configmap", "dep-bg"])?;

    // Orphan: the dependent stays, its ownerReference stripped.
    owned("owner-or", "dep-or", None, false)?;
    server.kubectl_ok(&["delete", "configmap", "owner-or", "--cascade=orphan"])?;
    wait_gone(&server, &["get", "configmap", "owner-or"])?;
    let dep = eventually(SETTLE, || {
        let dep = json(&server, &["get", "configmap", "dep-or"])?;
        Ok(dep["metadata"]
            .get("ownerReferences")
            .is_none()
            .then_some(dep))
    })?;
    assert!(
        dep["metadata"]["deletionTimestamp"].is_null(),
        "orphan is not deleted: {dep}"
    );

    // Foreground: the owner waits (foregroundDeletion finalizer) until its
    // blocking dependent is gone; a finalizer on the dependent holds both.
    owned("owner-fg", "dep-fg", Some("example.com/hold"), true)?;
    server.kubectl_ok(&[
        "delete",
        "configmap",
        "owner-fg",
        "--cascade=foreground",
        "--wait=false",
    ])?;
    let owner = json(&server, &["get", "configmap", "owner-fg"])?;
    assert!(
        owner["metadata"]["deletionTimestamp"].is_string(),
        "{owner}"
    );
    assert_eq!(
        owner["metadata"]["finalizers"],
        serde_json::json!(["foregroundDeletion"])
    );
    eventually(SETTLE, || {
        let dep = json(&server, &["get", "configmap", "dep-fg"])?;
        Ok(dep["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(()))
    })?;
    // Still held: the owner is there as long as the dependent is.
    json(&server, &["get", "configmap", "owner-fg"])?;
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "dep-fg",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])?;
    wait_gone(&server, &["get", "configmap", "dep-fg"])?;
    wait_gone(&server, &["get", "configmap", "owner-fg"])?;

    // Foreground with kubectl waiting: when delete returns, both are gone.
    owned("owner-fw", "dep-fw", None, true)?;
    let out = server.kubectl_ok(&["delete", "configmap", "owner-fw", "--cascade=foreground"])?;
    assert_eq!(
        out.trim(),
        "configmap \"owner-fw\" deleted from default namespace"
    );
    server.kubectl_err(&["get", "configmap", "owner-fw"])?;
    server.kubectl_err(&["get", "configmap", "dep-fw"])?;
    Ok(())
}

#[test]
fn deleting_a_namespace_purges_its_contents_and_then_the_namespace() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "doomed"])?;
    server.kubectl_ok(&["create", "configmap", "a", "-n", "doomed"])?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "b",
        "-n",
        "doomed",
        "--from-literal=x=y",
    ])?;
    server.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "doomed",
        "--image=nginx:1.27",
    ])?;
    server.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "svc",
        "-n",
        "doomed",
        "--tcp=80:8080",
    ])?;
    server.kubectl_ok(&[
        "create",
        "role",
        "r",
        "-n",
        "doomed",
        "--verb=get",
        "--resource=pods",
    ])?;

    // kubectl delete waits for the namespace to be gone.
    let out = server.kubectl_ok(&["delete", "namespace", "doomed", "--timeout=60s"])?;
    assert_eq!(out.trim(), "namespace \"doomed\" deleted");
    let err = server.kubectl_err(&["get", "namespace", "doomed"])?;
    assert!(err.contains("namespaces \"doomed\" not found"), "{err}");
    let left = server.kubectl_ok(&[
        "get",
        "configmaps,secrets,deployments,services,roles,serviceaccounts",
        "-A",
        "--field-selector",
        "metadata.namespace=doomed",
        "-o",
        "name",
    ])?;
    assert!(left.trim().is_empty(), "contents left behind: {left}");

    // The name can be reused afterwards, empty.
    server.kubectl_ok(&["create", "namespace", "doomed"])?;
    let cms = server.kubectl_ok(&["get", "configmaps", "-n", "doomed", "-o", "name"])?;
    assert!(!lines(&cms).iter().any(|l| l == "configmap/a"), "{cms}");
    Ok(())
}

#[test]
fn a_terminating_namespace_refuses_new_content() -> Result<()> {
    let server = Server::start()?;
    server.kubectl_ok(&["create", "namespace", "held"])?;
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &configmap("pin", "held", Some("example.com/hold"), None),
    )?;
    server.kubectl_ok(&["create", "configmap", "plain", "-n", "held"])?;

    server.kubectl_ok(&["delete", "namespace", "held", "--wait=false"])?;
    let ns = json(&server, &["get", "namespace", "held"])?;
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
    let table = server.kubectl_ok(&["get", "namespace", "held", "--no-headers"])?;
    assert_eq!(
        table.split_whitespace().take(2).collect::<Vec<_>>(),
        ["held", "Terminating"]
    );

    // The namespace controller deletes what it can; the pinned one waits.
    wait_gone(&server, &["get", "configmap", "plain", "-n", "held"])?;
    eventually(SETTLE, || {
        let pin = json(&server, &["get", "configmap", "pin", "-n", "held"])?;
        Ok(pin["metadata"]["deletionTimestamp"]
            .is_string()
            .then_some(()))
    })?;

    // New content is forbidden, imperatively (protobuf) and from YAML.
    let err = server.kubectl_err(&["create", "configmap", "new", "-n", "held"])?;
    assert!(
        err.contains("configmaps \"new\" is forbidden: unable to create new content in namespace held because it is being terminated"),
        "{err}"
    );
    let out = server.kubectl_stdin(
        &["apply", "-f", "-"],
        &configmap("new2", "held", None, None),
    )?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    assert!(err.contains("because it is being terminated"), "{err}");
    // Creating in a namespace that does not exist at all is NotFound.
    let err = server.kubectl_err(&["create", "configmap", "x", "-n", "nosuchns"])?;
    assert!(err.contains("namespaces \"nosuchns\" not found"), "{err}");

    // Releasing the finalizer lets the namespace finish.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "pin",
        "-n",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])?;
    wait_gone(&server, &["get", "namespace", "held"])?;
    Ok(())
}
