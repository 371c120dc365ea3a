//! Status aggregation end to end (SPEC §3.7; issue "Workloads across
//! clusters"): real `ubernetes serve` processes and the real kubectl.
//!
//! - member statuses, written by the test through each member's status
//!   subresource, sum into the federated Deployment; `kubectl rollout
//!   status` on the federation keeps waiting while one member lags and
//!   succeeds when all are done; a Service's load-balancer addresses are
//!   the union of the members', and the per-cluster addresses are in
//!   Federation v1's `service-ingresses` format on its propagation record;
//! - with real upstream kube-apiserver members and their controller
//!   manager (`../shared/kube/kube.sh up NAME --kcm`), the members' own
//!   deployment controllers create ReplicaSets and report status, and the
//!   federation reads it back (skipped, saying so, when that folder is
//!   absent).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use ubernetes_e2e::federation::{Federation, write_status};
use ubernetes_e2e::{Server, eventually};

const WAIT: Duration = Duration::from_secs(30);

fn get(server: &Server, args: &[&str]) -> Result<Option<Value>> {
    server.kubectl_get(args)
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 10
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
"#;

/// A member Deployment status: `updated` of its replicas rolled out and
/// available, its current generation observed.
fn member_status(copy: &Value, updated: i64) -> Value {
    let spec = copy
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let generation = copy
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    json!({
        "observedGeneration": generation,
        "replicas": spec,
        "updatedReplicas": updated,
        "readyReplicas": spec,
        "availableReplicas": spec,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "lastUpdateTime": "2024-05-01T10:00:00Z", "lastTransitionTime": "2024-05-01T10:00:00Z"},
            {"type": "Progressing", "status": "True",
             "reason": if updated == spec { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" },
             "lastUpdateTime": "2024-05-01T10:00:00Z", "lastTransitionTime": "2024-05-01T10:00:00Z"}],
    })
}

fn rollout_status(host: &Server, timeout: &str) -> Result<(bool, String)> {
    let out = host.kubectl(&[
        "rollout",
        "status",
        "deployment/web",
        &format!("--timeout={timeout}"),
    ])?;
    Ok((
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

#[test]
fn member_statuses_sum_and_rollout_status_waits_for_every_cluster() -> Result<()> {
    let fed = Federation::start(2, &[])?;
    fed.join(0, "a", &[])?;
    fed.join(1, "b", &[])?;
    fed.wait_ready("a")?;
    fed.wait_ready("b")?;
    fed.host
        .kubectl_stdin_ok(&["apply", "-f", "-"], DEPLOYMENT)?;
    let copies: Vec<Value> = fed
        .members
        .iter()
        .map(|m| {
            eventually(WAIT, || {
                Ok(get(m, &["deployment", "web"])?
                    .filter(|d| d.pointer("/spec/replicas") == Some(&json!(5))))
            })
        })
        .collect::<Result<_>>()
        .context("5 + 5 in the members")?;

    // No member has reported: the rollout is not done.
    let (done, out) = rollout_status(&fed.host, "2s")?;
    ensure!(
        !done,
        "rollout status succeeded with no member status: {out}"
    );

    // a is done, b has 2 of its 5 updated: still waiting, and saying so.
    write_status(
        fed.member(0)?,
        "deployment",
        "web",
        member_status(&copies[0], 5),
    )?;
    write_status(
        fed.member(1)?,
        "deployment",
        "web",
        member_status(&copies[1], 2),
    )?;
    let st = eventually(WAIT, || {
        let d = get(&fed.host, &["deployment", "web"])?.context("web")?;
        Ok((d.pointer("/status/updatedReplicas") == Some(&json!(7))).then_some(d))
    })
    .with_context(|| format!("status never summed\n{}", fed.host.log_tail()))?;
    ensure!(
        st.pointer("/status/readyReplicas") == Some(&json!(10)),
        "{st}"
    );
    ensure!(
        st.pointer("/status/availableReplicas") == Some(&json!(10)),
        "{st}"
    );
    ensure!(st.pointer("/status/replicas") == Some(&json!(10)), "{st}");
    let gen_ = st.pointer("/metadata/generation").cloned();
    ensure!(
        st.pointer("/status/observedGeneration") == gen_.as_ref(),
        "{st}"
    );
    let (done, out) = rollout_status(&fed.host, "3s")?;
    ensure!(!done, "rollout status succeeded while b lags: {out}");
    ensure!(out.contains("7 out of 10 new replicas"), "{out}");
    let table = fed.host.kubectl_ok(&["get", "deployment", "web"])?;
    ensure!(table.contains("10/10"), "{table}");

    // b done: rollout status succeeds (started before b finishes).
    let host_kubeconfig = fed.host.kubeconfig();
    let waiter = std::thread::spawn(move || {
        Command::new(ubernetes_e2e::kubectl_bin())
            .arg("--kubeconfig")
            .arg(host_kubeconfig)
            .args(["rollout", "status", "deployment/web", "--timeout=30s"])
            .output()
    });
    std::thread::sleep(Duration::from_secs(2));
    write_status(
        fed.member(1)?,
        "deployment",
        "web",
        member_status(&copies[1], 5),
    )?;
    let out = waiter
        .join()
        .map_err(|_| anyhow::anyhow!("waiter panicked"))??;
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success() && text.contains("successfully rolled out"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A new generation: waiting again until both members observe their
    // copies of it.
    fed.host
        .kubectl_ok(&["set", "image", "deployment/web", "web=nginx:1.28"])?;
    let d = eventually(WAIT, || {
        let d = get(&fed.host, &["deployment", "web"])?.context("web")?;
        Ok((d.pointer("/metadata/generation") == Some(&json!(2))).then_some(d))
    })?;
    ensure!(
        d.pointer("/status/observedGeneration") == Some(&json!(1)),
        "{d}"
    );
    let (done, out) = rollout_status(&fed.host, "2s")?;
    ensure!(
        !done,
        "done before the members observed generation 2: {out}"
    );
    for (i, m) in fed.members.iter().enumerate() {
        let copy = eventually(WAIT, || {
            Ok(get(m, &["deployment", "web"])?.filter(|d| {
                d.pointer("/spec/template/spec/containers/0/image") == Some(&json!("nginx:1.28"))
            }))
        })?;
        write_status(fed.member(i)?, "deployment", "web", member_status(&copy, 5))?;
    }
    let (done, out) = rollout_status(&fed.host, "20s")?;
    ensure!(done, "{out}\n{}", fed.host.log_tail());

    // Services: the union of the members' load-balancer addresses, and v1's
    // per-cluster annotation on the propagation record.
    write_status(
        fed.member(0)?,
        "service",
        "web",
        json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}),
    )?;
    write_status(
        fed.member(1)?,
        "service",
        "web",
        json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}]}}),
    )?;
    // (ips only: a member defaults `ipMode`, kept as the member wrote it.)
    let ips = |list: Option<&Value>| -> Vec<String> {
        list.and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|i| i["ip"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut last = Value::Null;
    let svc = eventually(WAIT, || {
        let s = get(&fed.host, &["service", "web"])?.context("svc")?;
        last = s["status"].clone();
        Ok(
            (ips(s.pointer("/status/loadBalancer/ingress")) == ["10.0.0.1", "10.0.0.2"])
                .then_some(s),
        )
    })
    .with_context(|| format!("service status {last}\n{}", fed.host.log_tail()))?;
    ensure!(
        svc.pointer("/metadata/annotations/federation.kubernetes.io~1service-ingresses")
            .is_none(),
        "the user's Service is not annotated"
    );
    let record = eventually(WAIT, || {
        let r = get(
            &fed.host,
            &["propagationrecords", "web.services", "-n", "default"],
        )?;
        Ok(r.filter(|r| {
            r.pointer("/metadata/annotations/federation.kubernetes.io~1service-ingresses")
                .is_some()
        }))
    })?;
    let text = record
        .pointer("/metadata/annotations/federation.kubernetes.io~1service-ingresses")
        .and_then(Value::as_str)
        .context("annotation")?;
    let v: Value = serde_json::from_str(text)?;
    let per_cluster: Vec<(String, Vec<String>)> = v["items"]
        .as_array()
        .context("items")?
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap_or("").to_string(),
                ips(c.get("items")),
            )
        })
        .collect();
    ensure!(
        per_cluster
            == vec![
                ("a".to_string(), vec!["10.0.0.1".to_string()]),
                ("b".to_string(), vec!["10.0.0.2".to_string()])
            ],
        "{text}"
    );
    // kubectl shows the per-cluster addresses: `get propagationrecords -o wide`.
    let table = fed.host.kubectl_ok(&[
        "get",
        "propagationrecords",
        "web.services",
        "-n",
        "default",
        "-o",
        "wide",
        "--no-headers",
    ])?;
    ensure!(
        table
            .split_whitespace()
            .any(|c| c == "a=10.0.0.1,b=10.0.0.2"),
        "per-cluster addresses in the wide table: {table}"
    );
    Ok(())
}

/// `../shared/kube/kube.sh`, if this machine has it.
fn kube_sh() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        here.join("../../shared/kube/kube.sh"),
        here.join("../../../shared/kube/kube.sh"),
        PathBuf::from("/work/shared/kube/kube.sh"),
    ]
    .into_iter()
    .find(|p| p.exists())
}

/// A real upstream cluster, stopped (`kube.sh down`) when dropped.
struct KubeCluster {
    script: PathBuf,
    name: String,
    kubeconfig: PathBuf,
}

impl KubeCluster {
    fn up(script: &Path, name: &str) -> Result<Self> {
        let out = Command::new(script).args(["up", name, "--kcm"]).output()?;
        let mut this = Self {
            script: script.to_path_buf(),
            name: name.to_string(),
            kubeconfig: PathBuf::new(),
        };
        ensure!(
            out.status.success(),
            "kube.sh up {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let path = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .trim()
            .to_string();
        this.kubeconfig = PathBuf::from(path);
        ensure!(
            this.kubeconfig.exists(),
            "no kubeconfig at {:?}",
            this.kubeconfig
        );
        Ok(this)
    }

    fn kubectl(&self, args: &[&str]) -> Result<String> {
        let out = Command::new(ubernetes_e2e::kubectl_bin())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()?;
        ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    }

    fn server(&self) -> Result<String> {
        Ok(self
            .kubectl(&[
                "config",
                "view",
                "--minify",
                "-o",
                "jsonpath={.clusters[0].cluster.server}",
            ])?
            .trim()
            .to_string())
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        let _ = Command::new(&self.script)
            .args(["down", &self.name])
            .output();
    }
}

#[test]
fn real_kube_members_report_status_back_to_the_federation() -> Result<()> {
    let Some(script) = kube_sh() else {
        eprintln!(
            "SKIPPED: ../shared/kube/kube.sh is absent: no real kube-apiserver members on this machine"
        );
        return Ok(());
    };
    let fed = Federation::start(0, &[])?;
    let names = ["kube-east", "kube-west"];
    let clusters: Vec<KubeCluster> = names
        .iter()
        .map(|n| {
            let _ = Command::new(&script).args(["down", n]).output();
            KubeCluster::up(&script, n)
        })
        .collect::<Result<_>>()?;
    for (c, n) in clusters.iter().zip(names) {
        let kubeconfig = std::fs::read_to_string(&c.kubeconfig)?;
        fed.create_secret(n, &kubeconfig)?;
        fed.create_cluster(n, &c.server()?, n, &[])?;
        fed.wait_ready(n)?;
    }
    fed.host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
"#,
    )?;
    // The members' deployment controllers make ReplicaSets (and Pods,
    // which stay Pending: there is no kubelet) and report status.
    for c in &clusters {
        eventually(Duration::from_secs(60), || {
            let out = c.kubectl(&["get", "replicasets", "-l", "app=web", "-o", "json"])?;
            let list: Value = serde_json::from_str(&out)?;
            Ok(list["items"]
                .as_array()
                .filter(|i| {
                    i.iter()
                        .any(|rs| rs.pointer("/spec/replicas") == Some(&json!(2)))
                })
                .map(|_| ()))
        })
        .with_context(|| format!("no ReplicaSet of 2 in {}", c.name))?;
    }
    let d = eventually(Duration::from_secs(60), || {
        let d = get(&fed.host, &["deployment", "web"])?.context("web")?;
        Ok((d.pointer("/status/replicas") == Some(&json!(4))
            && d.pointer("/status/updatedReplicas") == Some(&json!(4))
            && d.pointer("/status/unavailableReplicas") == Some(&json!(4))
            && d.pointer("/status/observedGeneration") == d.pointer("/metadata/generation"))
        .then_some(d))
    })
    .with_context(|| {
        format!(
            "federated status from the kube members\n{}",
            fed.host.log_tail()
        )
    })?;
    let available = d
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
        .context("Available condition")?;
    ensure!(available["status"] == "False", "pods are Pending: {d}");
    let (done, out) = {
        let out = fed
            .host
            .kubectl(&["rollout", "status", "deployment/web", "--timeout=2s"])?;
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    ensure!(!done, "no pod can run, yet: {out}");
    ensure!(
        out.contains("0 of 4 updated replicas are available"),
        "{out}"
    );
    drop(clusters);
    Ok(())
}
