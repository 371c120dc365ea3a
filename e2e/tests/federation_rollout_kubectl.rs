//! `kubectl rollout` against the federation (issue 23 item 3, SPEC
//! §3.11): real `ubernetes serve` processes, a member joined, the real
//! kubectl.
//!
//! - A Deployment's history is ReplicaSets in the federation: `rollout
//!   history` lists a revision per template change (with its change
//!   cause, `--revision=N` shows that template), `rollout undo` and `undo
//!   --to-revision` bring a template back to the member, `restart` rolls a
//!   new template out, `pause` holds it (the member copy is paused, no
//!   revision is recorded, undo is refused) and `resume` records it.
//! - A StatefulSet's and a DaemonSet's history is ControllerRevisions:
//!   `history` lists them, `undo` brings the template back.
//! - No ReplicaSet or ControllerRevision of the federation reaches a
//!   member, and deleting the workload deletes its history (the GC).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::Value;
use ubernetes_e2e::federation::Federation;
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);
const NS: &str = "shop";

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations:
    kubernetes.io/change-cause: "first"
    federation.kubernetes.io/rollout-strategy: '{"waves": [["*"]]}'
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.0"}]
"#;

const STATEFUL_AND_DAEMON_SETS: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: shop
  annotations: {federation.kubernetes.io/rollout-strategy: '{"waves": [["*"]]}'}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "pg:1"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: shop
  annotations: {federation.kubernetes.io/rollout-strategy: '{"waves": [["*"]]}'}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "fl:1"}]
"#;

fn federation() -> Result<Federation> {
    let fed = Federation::start(1, &[])?;
    fed.join(0, "a", &[])?;
    fed.wait_ready("a")?;
    fed.host.kubectl_ok(&["create", "namespace", NS])?;
    Ok(fed)
}

/// `kubectl rollout history KIND/NAME`'s revisions and change causes.
fn history(host: &Server, what: &str) -> Result<Vec<(i64, String)>> {
    let out = host.kubectl_ok(&["rollout", "history", what, "-n", NS])?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let n = parts.next()?.parse().ok()?;
            Some((n, parts.collect::<Vec<_>>().join(" ")))
        })
        .collect())
}

/// Wait until `rollout history` lists exactly the revisions `want`.
fn wait_history(host: &Server, what: &str, want: &[i64]) -> Result<Vec<(i64, String)>> {
    eventually(WAIT, || {
        let h = history(host, what)?;
        let numbers: Vec<i64> = h.iter().map(|(n, _)| *n).collect();
        Ok((numbers == want).then_some(h))
    })
    .with_context(|| {
        format!(
            "{what}: history {:?}, wanted {want:?}\n{}",
            history(host, what),
            host.log_tail()
        )
    })
}

/// The image of the first container of `kind/name` in `server`.
fn image(server: &Server, kind: &str, name: &str) -> Result<Option<String>> {
    Ok(server.kubectl_get(&[kind, name, "-n", NS])?.and_then(|o| {
        o.pointer("/spec/template/spec/containers/0/image")
            .and_then(Value::as_str)
            .map(str::to_string)
    }))
}

fn wait_image(server: &Server, kind: &str, name: &str, want: &str) -> Result<()> {
    eventually(WAIT, || {
        Ok((image(server, kind, name)?.as_deref() == Some(want)).then_some(()))
    })
    .with_context(|| format!("{kind}/{name} never ran {want} at {}", server.url()))
}

/// How many objects of `resource` `server` holds in the namespace.
fn count(server: &Server, resource: &str) -> Result<usize> {
    let list = server
        .kubectl_get(&[resource, "-n", NS])?
        .context(resource.to_string())?;
    Ok(list["items"].as_array().map_or(0, Vec::len))
}

#[test]
fn deployment_history_undo_restart_pause_and_resume_through_kubectl() -> Result<()> {
    let fed = federation()?;
    let host = &fed.host;
    let member = fed.member(0)?;
    host.kubectl_stdin_ok(&["apply", "-f", "-"], DEPLOYMENT)?;
    wait_image(member, "deployment", "web", "nginx:1.0")?;
    wait_history(host, "deployment/web", &[1])?;

    // A second template, then its change cause (as kube, the Deployment's
    // annotations follow to its current ReplicaSet): two revisions, each
    // with its change cause; the federation does not write the user's
    // Deployment (SPEC §3.8), and no member copy carries a revision of ours.
    host.kubectl_ok(&["set", "image", "deployment/web", "web=nginx:2.0", "-n", NS])?;
    host.kubectl_ok(&[
        "annotate",
        "deployment/web",
        "-n",
        NS,
        "--overwrite",
        "kubernetes.io/change-cause=second",
    ])?;
    let want = [(1, "first".to_string()), (2, "second".to_string())];
    eventually(WAIT, || {
        Ok((history(host, "deployment/web")? == want).then_some(()))
    })
    .with_context(|| format!("history {:?}", history(host, "deployment/web")))?;
    let one = host.kubectl_ok(&[
        "rollout",
        "history",
        "deployment/web",
        "-n",
        NS,
        "--revision=1",
    ])?;
    ensure!(
        one.contains("nginx:1.0") && !one.contains("nginx:2.0"),
        "{one}"
    );
    wait_image(member, "deployment", "web", "nginx:2.0")?;
    let d = host
        .kubectl_get(&["deployment", "web", "-n", NS])?
        .context("web")?;
    ensure!(
        d.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
            .is_none(),
        "the federation wrote the user's Deployment: {d}"
    );
    let copy = member
        .kubectl_get(&["deployment", "web", "-n", NS])?
        .context("copy")?;
    ensure!(
        copy.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
            .is_none(),
        "the federation's revision annotation reached the member: {copy}"
    );

    // Undo: revision 1's template comes back (renumbered 3), in the member too.
    host.kubectl_ok(&["rollout", "undo", "deployment/web", "-n", NS])?;
    wait_image(member, "deployment", "web", "nginx:1.0")?;
    wait_history(host, "deployment/web", &[2, 3])?;
    host.kubectl_ok(&[
        "rollout",
        "undo",
        "deployment/web",
        "-n",
        NS,
        "--to-revision=2",
    ])?;
    wait_image(member, "deployment", "web", "nginx:2.0")?;
    wait_history(host, "deployment/web", &[3, 4])?;

    // Restart: a new template (restartedAt) reaches the member, a new revision.
    host.kubectl_ok(&["rollout", "restart", "deployment/web", "-n", NS])?;
    eventually(WAIT, || {
        let c = member.kubectl_get(&["deployment", "web", "-n", NS])?;
        Ok(c.filter(|c| {
            c.pointer("/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt")
                .is_some()
        }))
    })
    .context("restart never reached the member")?;
    wait_history(host, "deployment/web", &[3, 4, 5])?;

    // Pause: the member's copy is paused; a change is sent but recorded
    // as no revision; undo is refused; resume records it.
    host.kubectl_ok(&["rollout", "pause", "deployment/web", "-n", NS])?;
    host.kubectl_ok(&["set", "image", "deployment/web", "web=nginx:3.0", "-n", NS])?;
    eventually(WAIT, || {
        let c = member.kubectl_get(&["deployment", "web", "-n", NS])?;
        Ok(c.filter(|c| c.pointer("/spec/paused") == Some(&Value::Bool(true))))
    })
    .context("pause never reached the member")?;
    std::thread::sleep(Duration::from_secs(2));
    let h = history(host, "deployment/web")?;
    ensure!(h.len() == 3, "a revision was recorded while paused: {h:?}");
    let err = host.kubectl_err(&["rollout", "undo", "deployment/web", "-n", NS])?;
    ensure!(err.contains("paused"), "{err}");
    host.kubectl_ok(&["rollout", "resume", "deployment/web", "-n", NS])?;
    wait_history(host, "deployment/web", &[3, 4, 5, 6])?;
    let six = host.kubectl_ok(&[
        "rollout",
        "history",
        "deployment/web",
        "-n",
        NS,
        "--revision=6",
    ])?;
    ensure!(six.contains("nginx:3.0"), "{six}");

    // The history never left the federation; deleting the Deployment
    // deletes it.
    ensure!(
        count(member, "replicasets")? == 0,
        "a ReplicaSet reached the member"
    );
    ensure!(
        count(host, "replicasets")? == 4,
        "revisions 3 to 6 in the federation"
    );
    host.kubectl_ok(&["delete", "deployment", "web", "-n", NS, "--wait=false"])?;
    eventually(
        WAIT,
        || Ok((count(host, "replicasets")? == 0).then_some(())),
    )
    .context("the GC left the Deployment's ReplicaSets")?;
    Ok(())
}

#[test]
fn stateful_and_daemon_set_history_and_undo_through_kubectl() -> Result<()> {
    let fed = federation()?;
    let host = &fed.host;
    let member = fed.member(0)?;
    host.kubectl_stdin_ok(&["apply", "-f", "-"], STATEFUL_AND_DAEMON_SETS)?;
    wait_history(host, "statefulset/db", &[1])?;
    wait_history(host, "daemonset/agent", &[1])?;
    host.kubectl_ok(&["set", "image", "statefulset/db", "db=pg:2", "-n", NS])?;
    host.kubectl_ok(&["set", "image", "daemonset/agent", "agent=fl:2", "-n", NS])?;
    wait_history(host, "statefulset/db", &[1, 2])?;
    wait_history(host, "daemonset/agent", &[1, 2])?;
    let one = host.kubectl_ok(&[
        "rollout",
        "history",
        "statefulset/db",
        "-n",
        NS,
        "--revision=1",
    ])?;
    ensure!(one.contains("pg:1"), "{one}");
    wait_image(member, "statefulset", "db", "pg:2")?;
    wait_image(member, "daemonset", "agent", "fl:2")?;

    // Undo (kubectl sends the revision's data as a strategic merge patch).
    host.kubectl_ok(&["rollout", "undo", "statefulset/db", "-n", NS])?;
    host.kubectl_ok(&[
        "rollout",
        "undo",
        "daemonset/agent",
        "-n",
        NS,
        "--to-revision=1",
    ])?;
    wait_image(member, "statefulset", "db", "pg:1")?;
    wait_image(member, "daemonset", "agent", "fl:1")?;
    wait_history(host, "statefulset/db", &[2, 3])?;
    wait_history(host, "daemonset/agent", &[2, 3])?;

    ensure!(
        count(member, "controllerrevisions")? == 0,
        "a ControllerRevision reached the member"
    );
    host.kubectl_ok(&[
        "delete",
        "statefulset,daemonset",
        "--all",
        "-n",
        NS,
        "--wait=false",
    ])?;
    eventually(WAIT, || {
        Ok((count(host, "controllerrevisions")? == 0).then_some(()))
    })
    .context("the GC left the ControllerRevisions")?;
    Ok(())
}
