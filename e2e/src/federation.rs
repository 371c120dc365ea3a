//! A federation for end-to-end tests: one host `ubernetes serve` (federation
//! controllers on, `--cluster-monitor-period 1s`) and member clusters that
//! are plain API servers (`--federation-controllers=false`), all real
//! processes driven with the real kubectl.
//!
//! Members join declaratively, as a user would (SPEC §3.2): a Secret in
//! `federation-system` whose key `kubeconfig` is the member's admin
//! kubeconfig, and a `Cluster` whose `serverAddressByClientCIDRs` maps
//! `0.0.0.0/0` to the member's URL.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{Server, eventually};

/// How long a cluster may take to show a condition in the tests' waits.
pub const CLUSTER_WAIT: Duration = Duration::from_secs(30);

/// Where the member credentials live.
pub const FEDERATION_NAMESPACE: &str = "federation-system";

/// A running federation: the host and its member servers.
pub struct Federation {
    /// The federation API server (controllers on).
    pub host: Server,
    /// The member clusters (plain API servers), not joined yet.
    pub members: Vec<Server>,
}

impl Federation {
    /// Start the host (with `--cluster-monitor-period 1s` and
    /// `extra_host_args`) and `n_members` members, all at once.
    pub fn start(n_members: usize, extra_host_args: &[&str]) -> Result<Self> {
        let mut host_args = vec!["--cluster-monitor-period", "1s"];
        host_args.extend_from_slice(extra_host_args);
        let (host, members) = std::thread::scope(|s| {
            let host = s.spawn(|| Server::start_with(&host_args));
            let members: Vec<_> = (0..n_members)
                .map(|_| s.spawn(|| Server::start_with(&["--federation-controllers=false"])))
                .collect();
            let host = host
                .join()
                .map_err(|_| anyhow::anyhow!("host start panicked"));
            let members: Vec<_> = members
                .into_iter()
                .map(|m| {
                    m.join()
                        .map_err(|_| anyhow::anyhow!("member start panicked"))
                })
                .collect();
            (host, members)
        });
        let host = host?.context("starting the federation host")?;
        let members = members
            .into_iter()
            .map(|m| m?.context("starting a member"))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { host, members })
    }

    /// Member `i`.
    pub fn member(&self, i: usize) -> Result<&Server> {
        self.members
            .get(i)
            .with_context(|| format!("no member {i} (there are {})", self.members.len()))
    }

    /// Member `i`, to kill or restart it.
    pub fn member_mut(&mut self, i: usize) -> Result<&mut Server> {
        let n = self.members.len();
        self.members
            .get_mut(i)
            .with_context(|| format!("no member {i} (there are {n})"))
    }

    /// Create Nodes in member `i`, each `(name, zone, region)` labelled
    /// with `topology.kubernetes.io/zone` and `…/region` (an empty value
    /// leaves that label off).
    pub fn create_nodes(&self, i: usize, nodes: &[(&str, &str, &str)]) -> Result<()> {
        let items: Vec<Value> = nodes
            .iter()
            .map(|(name, zone, region)| {
                let mut labels = serde_json::Map::new();
                if !zone.is_empty() {
                    labels.insert("topology.kubernetes.io/zone".into(), json!(zone));
                }
                if !region.is_empty() {
                    labels.insert("topology.kubernetes.io/region".into(), json!(region));
                }
                json!({
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                })
            })
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
        self.member(i)?
            .kubectl_stdin_ok(&["apply", "-f", "-"], &list.to_string())?;
        Ok(())
    }

    /// Join member `i` declaratively as Cluster `name` with `labels`: the
    /// Secret `federation-system/<name>` with the member's admin kubeconfig
    /// and the Cluster pointing at the member's URL for `0.0.0.0/0`.
    pub fn join(&self, i: usize, name: &str, labels: &[(&str, &str)]) -> Result<()> {
        join_with_labels(&self.host, self.member(i)?, name, labels)
    }

    /// Create (or update) the Secret `federation-system/<name>` with
    /// `kubeconfig` under key `kubeconfig`.
    pub fn create_secret(&self, name: &str, kubeconfig: &str) -> Result<()> {
        create_secret(&self.host, name, kubeconfig)
    }

    /// Create (or update) Cluster `name` reaching `server` for `0.0.0.0/0`
    /// with the credentials of Secret `secret`.
    pub fn create_cluster(
        &self,
        name: &str,
        server: &str,
        secret: &str,
        labels: &[(&str, &str)],
    ) -> Result<()> {
        create_cluster(&self.host, name, server, secret, labels)
    }

    /// Unjoin Cluster `name`: delete the Cluster and its Secret.
    pub fn unjoin(&self, name: &str) -> Result<()> {
        self.host
            .kubectl_ok(&["delete", "cluster", name, "--ignore-not-found"])?;
        self.host.kubectl_ok(&[
            "delete",
            "secret",
            name,
            "-n",
            FEDERATION_NAMESPACE,
            "--ignore-not-found",
        ])?;
        Ok(())
    }

    /// Cluster `name` as JSON, or `None` when it does not exist.
    pub fn cluster(&self, name: &str) -> Result<Option<Value>> {
        let out = self.host.kubectl(&["get", "cluster", name, "-o", "json"])?;
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            return serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("cluster {name} is not JSON: {text}"));
        }
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("NotFound") || err.contains("not found") {
            return Ok(None);
        }
        bail!("kubectl get cluster {name} failed: {err}")
    }

    /// Wait until Cluster `name` has a condition `type_` with `status`
    /// (and, if given, `reason`); returns the Cluster.
    pub fn wait_condition(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: Option<&str>,
        timeout: Duration,
    ) -> Result<Value> {
        let mut last = None;
        let found = eventually(timeout, || {
            let cluster = self.cluster(name)?;
            let ok = cluster
                .as_ref()
                .and_then(|c| condition(c, type_))
                .is_some_and(|c| c["status"] == status && reason.is_none_or(|r| c["reason"] == r));
            last = cluster.clone();
            Ok(cluster.filter(|_| ok))
        });
        found.with_context(|| {
            format!(
                "cluster {name}: no condition {type_}={status} {reason:?}; last seen: {}\nhost log:\n{}",
                last.map(|c| c["status"].to_string()).unwrap_or_default(),
                self.host.log_tail()
            )
        })
    }

    /// Wait until Cluster `name` is `Ready=True`; returns it.
    pub fn wait_ready(&self, name: &str) -> Result<Value> {
        self.wait_condition(name, "Ready", "True", Some("ClusterReady"), CLUSTER_WAIT)
    }
}

/// The condition `type_` of a Cluster (as JSON).
pub fn condition<'a>(cluster: &'a Value, type_: &str) -> Option<&'a Value> {
    cluster
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The federation's PropagationRecord of object `name` of resource `id`
/// (`configmaps`, `deployments.apps`, …) in namespace `ns` (`None`:
/// cluster-scoped), as JSON; `None` when there is none.
pub fn propagation_record(
    host: &Server,
    id: &str,
    ns: Option<&str>,
    name: &str,
) -> Result<Option<Value>> {
    let record = format!("{name}.{id}");
    let ns = ns.unwrap_or(FEDERATION_NAMESPACE);
    let out = host.kubectl(&[
        "get",
        "propagationrecords.federation",
        &record,
        "-n",
        ns,
        "-o",
        "json",
    ])?;
    if out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout);
        return serde_json::from_str(&text)
            .map(Some)
            .with_context(|| format!("record {ns}/{record} is not JSON: {text}"));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("NotFound") || err.contains("not found") {
        return Ok(None);
    }
    bail!("kubectl get propagationrecord {ns}/{record} failed: {err}")
}

/// The per-cluster propagation state of an object (from its
/// PropagationRecord): cluster name → `{state, observedGeneration,
/// message, hash, resourceVersion, replicas}`; `{}` without a record.
pub fn propagation_state(host: &Server, id: &str, ns: Option<&str>, name: &str) -> Result<Value> {
    let Some(record) = propagation_record(host, id, ns, name)? else {
        return Ok(json!({}));
    };
    let mut out = serde_json::Map::new();
    for c in record
        .pointer("/status/clusters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(n) = c["name"].as_str() {
            out.insert(n.to_string(), c.clone());
        }
    }
    Ok(Value::Object(out))
}

/// `(reason, message)` of every Event about object `name` in namespace
/// `ns` of the federation (`None`: kubectl's current namespace).
pub fn events_of(host: &Server, ns: Option<&str>, name: &str) -> Result<Vec<(String, String)>> {
    let selector = format!("involvedObject.name={name}");
    let mut args = vec!["events", "--field-selector", &selector];
    if let Some(ns) = ns {
        args.extend(["-n", ns]);
    }
    let list = host.kubectl_get(&args)?.context("events")?;
    Ok(list["items"]
        .as_array()
        .context("items")?
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect())
}

/// Write `status` on `kind/name` in `member` through its status
/// subresource (a merge patch), as the member's own controllers would.
pub fn write_status(member: &Server, kind: &str, name: &str, status: Value) -> Result<()> {
    member.kubectl_ok(&[
        "patch",
        kind,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &json!({ "status": status }).to_string(),
    ])?;
    Ok(())
}

/// Create (or update) the Secret `federation-system/<name>` on `host` with
/// `kubeconfig` under key `kubeconfig`.
pub fn create_secret(host: &Server, name: &str, kubeconfig: &str) -> Result<()> {
    let manifest = json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": FEDERATION_NAMESPACE},
            },
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": FEDERATION_NAMESPACE},
                "stringData": {"kubeconfig": kubeconfig},
            },
        ],
    });
    host.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest.to_string())?;
    Ok(())
}

/// Create (or update) Cluster `name` on `host` reaching `server` for
/// `0.0.0.0/0` with the credentials of Secret `secret`.
pub fn create_cluster(
    host: &Server,
    name: &str,
    server: &str,
    secret: &str,
    labels: &[(&str, &str)],
) -> Result<()> {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let cluster = json!({
        "apiVersion": "federation/v1beta1",
        "kind": "Cluster",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server},
            ],
            "secretRef": {"name": secret},
        },
    });
    host.kubectl_stdin_ok(&["apply", "-f", "-"], &cluster.to_string())?;
    Ok(())
}

/// Join `member` to `host` declaratively as Cluster `name` with `labels`.
pub fn join_with_labels(
    host: &Server,
    member: &Server,
    name: &str,
    labels: &[(&str, &str)],
) -> Result<()> {
    let kubeconfig = std::fs::read_to_string(member.kubeconfig())
        .with_context(|| format!("reading {}", member.kubeconfig().display()))?;
    create_secret(host, name, &kubeconfig)?;
    create_cluster(host, name, &member.url(), name, labels)
}

/// Join `member` to `host` as Cluster `name` (no labels).
pub fn join_member(host: &Server, member: &Server, name: &str) -> Result<()> {
    join_with_labels(host, member, name, &[])
}

/// Wait until Cluster `name` on `host` is `Ready=True`.
pub fn wait_member_ready(host: &Server, name: &str) -> Result<()> {
    eventually(CLUSTER_WAIT, || {
        let out = host.kubectl(&["get", "cluster", name, "-o", "json"])?;
        if !out.status.success() {
            return Ok(None);
        }
        let c: Value = serde_json::from_slice(&out.stdout)?;
        Ok(condition(&c, "Ready")
            .is_some_and(|r| r["status"] == "True")
            .then_some(()))
    })
    .with_context(|| format!("member {name} not Ready; host log:\n{}", host.log_tail()))
}
