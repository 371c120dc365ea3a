//! Standalone mode (issue 22 item 3): a federation with no Cluster runs
//! kube-controller-manager's workload controllers for its own API, as
//! kube-apiserver + kcm without nodes would (pods stay Pending):
//!
//! - a ReplicaSet and a ReplicationController get their Pods (owner
//!   reference, template labels) and `status.replicas`; scaling deletes;
//! - a Deployment gets a ReplicaSet `NAME-<pod-template-hash>` at revision
//!   1, a new one at revision 2 when its template changes (the old one
//!   scaled to 0), and its status (`Available` False: no pod runs);
//! - a CronJob gets a Job at its next minute, listed in `status.active`;
//! - once a Cluster exists, everything they made is deleted and they stop
//!   acting (a scale-up makes no pod); when it goes, they act again;
//! - with `--federation-controllers=false` (a member, the difference
//!   harness's kube-apiserver without kcm) nothing is made.

use std::time::Duration;

use anyhow::{Result, ensure};
use serde_json::Value;
use ubernetes_e2e::{Server, eventually, federation};

const LABEL: &str = "federation.kubernetes.io/standalone-controller";
const WAIT: Duration = Duration::from_secs(30);

const WORKLOADS: &str = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc, namespace: default}
spec:
  replicas: 1
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: "nginx:1"}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick, namespace: default}
spec:
  schedule: "*/1 * * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
"#;

fn items(s: &Server, kind: &str, selector: &str) -> Result<Vec<Value>> {
    let v = s
        .kubectl_get(&[kind, "-n", "default", "-l", selector])?
        .unwrap_or_default();
    Ok(v["items"].as_array().cloned().unwrap_or_default())
}

fn controller_of(obj: &Value) -> Option<(String, String)> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or_default().to_string(),
                r["name"].as_str().unwrap_or_default().to_string(),
            )
        })
}

fn count_is(s: &Server, kind: &str, selector: &str, n: usize) -> Result<Option<Vec<Value>>> {
    let got = items(s, kind, selector)?;
    Ok((got.len() == n).then_some(got))
}

#[test]
fn standalone_controllers_act_alone_and_stand_back_for_members() -> Result<()> {
    let s = Server::start_with(&[])?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], WORKLOADS)?;

    // ReplicaSet: two pods it controls, status counted.
    let pods = eventually(WAIT, || count_is(&s, "pods", "app=rs", 2))?;
    for p in &pods {
        ensure!(
            controller_of(p) == Some(("ReplicaSet".into(), "rs".into())),
            "{p}"
        );
        ensure!(p["metadata"]["labels"][LABEL] == "replicaset", "{p}");
        ensure!(p["metadata"]["generateName"] == "rs-", "generateName: {p}");
    }
    eventually(WAIT, || {
        let rs = s.kubectl_get(&["rs", "rs", "-n", "default"])?;
        Ok(rs.filter(|r| r["status"]["replicas"] == 2 && r["status"]["observedGeneration"] == 1))
    })?;
    // Scaling down deletes one.
    s.kubectl_ok(&["scale", "rs", "rs", "-n", "default", "--replicas=1"])?;
    eventually(WAIT, || count_is(&s, "pods", "app=rs", 1))?;

    // ReplicationController.
    let pods = eventually(WAIT, || count_is(&s, "pods", "app=rc", 1))?;
    ensure!(controller_of(&pods[0]) == Some(("ReplicationController".into(), "rc".into())));
    eventually(WAIT, || {
        let rc = s.kubectl_get(&["rc", "rc", "-n", "default"])?;
        Ok(rc.filter(|r| r["status"]["replicas"] == 1))
    })?;

    // Deployment: a ReplicaSet per template, revisions, status.
    let first = eventually(WAIT, || count_is(&s, "rs", "app=web", 1))?;
    let rs = &first[0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    ensure!(!hash.is_empty(), "no pod-template-hash: {rs}");
    ensure!(rs["metadata"]["name"] == format!("web-{hash}"), "{rs}");
    ensure!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1",
        "{rs}"
    );
    ensure!(controller_of(rs) == Some(("Deployment".into(), "web".into())));
    eventually(WAIT, || count_is(&s, "pods", "app=web", 2))?;
    let d = eventually(WAIT, || {
        let d = s.kubectl_get(&["deploy", "web", "-n", "default"])?;
        Ok(d.filter(|d| {
            d["status"]["replicas"] == 2
                && d["status"]["updatedReplicas"] == 2
                && d["status"]["observedGeneration"] == d["metadata"]["generation"]
        }))
    })?;
    let conditions = d["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let cond = |t: &str| conditions.iter().find(|c| c["type"] == t).cloned();
    ensure!(
        cond("Available")
            .is_some_and(|c| c["status"] == "False" && c["reason"] == "MinimumReplicasUnavailable"),
        "{d}"
    );
    ensure!(
        cond("Progressing").is_some_and(|c| c["status"] == "True"),
        "{d}"
    );
    s.kubectl_ok(&["set", "image", "deploy/web", "-n", "default", "c=nginx:2"])?;
    eventually(WAIT, || {
        let all = items(&s, "rs", "app=web")?;
        let new = all.iter().find(|r| {
            r["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
                && r["spec"]["replicas"] == 2
        });
        let old_idle = all
            .iter()
            .any(|r| r["metadata"]["name"] == format!("web-{hash}") && r["spec"]["replicas"] == 0);
        Ok((all.len() == 2 && new.is_some() && old_idle).then_some(()))
    })?;

    // CronJob: a Job at the next minute, active (no kubelet finishes it).
    let jobs = eventually(Duration::from_secs(75), || {
        let jobs = s
            .kubectl_get(&["jobs", "-n", "default"])?
            .unwrap_or_default();
        let jobs = jobs["items"].as_array().cloned().unwrap_or_default();
        Ok((!jobs.is_empty()).then_some(jobs))
    })?;
    ensure!(controller_of(&jobs[0]) == Some(("CronJob".into(), "tick".into())));
    ensure!(
        jobs[0]["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("tick-")),
        "{}",
        jobs[0]
    );
    eventually(WAIT, || {
        let cj = s.kubectl_get(&["cronjob", "tick", "-n", "default"])?;
        Ok(cj.filter(|c| {
            c["status"]["active"]
                .as_array()
                .is_some_and(|a| a.len() == 1)
                && c["status"]["lastScheduleTime"].is_string()
        }))
    })?;

    // A Cluster exists: what they made goes, the owners stay.
    federation::create_cluster(&s, "m1", "https://127.0.0.1:1", "m1", &[])?;
    eventually(WAIT, || {
        let made = s
            .kubectl_get(&["pods,rs,jobs", "-A", "-l", LABEL])?
            .unwrap_or_default();
        Ok(made["items"]
            .as_array()
            .is_some_and(Vec::is_empty)
            .then_some(()))
    })?;
    ensure!(s.kubectl_get(&["rs", "rs", "-n", "default"])?.is_some());
    ensure!(
        s.kubectl_get(&["deploy", "web", "-n", "default"])?
            .is_some()
    );
    // They no longer act.
    s.kubectl_ok(&["scale", "rc", "rc", "-n", "default", "--replicas=2"])?;
    std::thread::sleep(Duration::from_secs(2));
    ensure!(
        items(&s, "pods", "app=rc")?.is_empty(),
        "a pod made with a Cluster present"
    );

    // The last Cluster goes: they act again.
    s.kubectl_ok(&["delete", "cluster", "m1"])?;
    eventually(WAIT, || count_is(&s, "pods", "app=rc", 2))?;
    // (The revisions controller may have written the Deployment's history
    // meanwhile, under the same `NAME-<hash>` name: the current one is
    // adopted and scaled.)
    eventually(WAIT, || {
        let all = items(&s, "rs", "app=web")?;
        Ok(all.iter().any(|r| r["spec"]["replicas"] == 2).then_some(()))
    })?;
    eventually(WAIT, || count_is(&s, "pods", "app=web", 2))?;
    Ok(())
}

#[test]
fn no_standalone_controllers_without_the_federation_controllers() -> Result<()> {
    let s = Server::start_with(&["--federation-controllers=false"])?;
    s.kubectl_stdin_ok(&["apply", "-f", "-"], WORKLOADS)?;
    std::thread::sleep(Duration::from_secs(3));
    let pods = s
        .kubectl_get(&["pods,rs", "-n", "default"])?
        .unwrap_or_default();
    // Only the ReplicaSet the user created.
    let names: Vec<&str> = pods["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    ensure!(names == ["rs"], "made without kcm: {names:?}");
    Ok(())
}
