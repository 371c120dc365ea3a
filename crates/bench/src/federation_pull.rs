//! `bench federation --pull` / `--compare-push-pull` (issue 24 item 7):
//! the same run as push mode, but every member joined in pull mode.
//!
//! For member `member-I`: `ubernetes join member-I --pull
//! --agent-kubeconfig-out DIR/member-I.agent.kubeconfig` (the real
//! subcommand, a child process, against the host's admin kubeconfig), then
//! one `ubernetes agent --cluster member-I --federation-kubeconfig FILE
//! --kubeconfig MEMBER` process per member. The host is never given a
//! member's address or credentials: everything it does in a member goes
//! over that member's agent's reverse tunnel.
//!
//! The agents' CPU seconds and memory are read from `/proc` like the
//! host's ([`AgentUsage`]: sum and max over the agents). Every agent is
//! killed when [`Agents`] drops (`kill_on_drop`), on error too.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use futures::{StreamExt as _, stream};
use http::StatusCode;
use kube::Client;
use serde_json::Value;
use tokio::process::{Child, Command};

use crate::client;

use crate::procfs::{self, Process, Sample};
use crate::server::{ManagedServer, tail_of, terminate};

/// The running agents of one pull-mode run.
pub(crate) struct Agents {
    /// Kubeconfigs and logs.
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

/// The agents' processes, for [`Window`](crate::federation) readings.
static AGENT_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

impl Agents {
    /// Join every member in pull mode (`member-I`, as push mode names
    /// them) and start its agent with the member's admin kubeconfig.
    pub(crate) async fn join(
        bin: &Path,
        log_level: &str,
        host: &ManagedServer,
        members: &[ManagedServer],
    ) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("ubernetes-bench-agents-")
            .tempdir()
            .context("creating a temporary dir for the agents")?;
        let mut agents = Self {
            dir,
            children: Vec::with_capacity(members.len()),
        };
        for (i, m) in members.iter().enumerate() {
            let name = format!("member-{i}");
            let out = agents.dir.path().join(format!("{name}.agent.kubeconfig"));
            let run = Command::new(bin)
                .args(["join", &name, "--pull", "--agent-kubeconfig-out"])
                .arg(&out)
                .arg("--federation-kubeconfig")
                .arg(host.kubeconfig())
                .args(["--log-level", log_level])
                .env_remove("KUBECONFIG")
                .stdin(Stdio::null())
                .output()
                .await
                .context("running ubernetes join --pull")?;
            if !run.status.success() {
                bail!(
                    "ubernetes join {name} --pull: {}{}",
                    String::from_utf8_lossy(&run.stdout),
                    String::from_utf8_lossy(&run.stderr)
                );
            }
            let log = std::fs::File::create(agents.log(&name))
                .with_context(|| format!("creating the log of agent {name}"))?;
            let child = Command::new(bin)
                .args(["agent", "--cluster", &name, "--federation-kubeconfig"])
                .arg(&out)
                .arg("--kubeconfig")
                .arg(m.kubeconfig())
                .args(["--log-level", log_level])
                .env_remove("KUBECONFIG")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::from(log))
                .kill_on_drop(true)
                .spawn()
                .with_context(|| format!("starting ubernetes agent --cluster {name}"))?;
            agents.children.push(child);
        }
        if let Ok(mut pids) = AGENT_PIDS.lock() {
            *pids = agents.children.iter().filter_map(Child::id).collect();
        }
        Ok(agents)
    }

    fn log(&self, name: &str) -> PathBuf {
        log_path(self.dir.path(), name)
    }

    /// The last lines of every agent's log whose process has exited (for
    /// an error report).
    pub(crate) fn exited_logs(&mut self) -> String {
        let mut out = String::new();
        let dir = self.dir.path().to_path_buf();
        for (i, c) in self.children.iter_mut().enumerate() {
            if let Ok(Some(status)) = c.try_wait() {
                let name = format!("member-{i}");
                out.push_str(&format!(
                    "agent {name} exited ({status}):\n{}\n",
                    tail_of(&log_path(&dir, &name), 20)
                ));
            }
        }
        out
    }

    /// SIGTERM every agent (its graceful stop), SIGKILL after 5 s.
    pub(crate) async fn stop(&mut self) {
        if let Ok(mut pids) = AGENT_PIDS.lock() {
            pids.clear();
        }
        for c in self.children.drain(..) {
            terminate(Some(c), std::time::Duration::from_secs(5)).await;
        }
    }
}

/// Where agent `name` logs, in `dir`.
fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("agent-{name}.log"))
}

/// A reading of every running agent, in member order (empty in push mode).
pub(crate) fn sample_agents() -> Vec<Sample> {
    AGENT_PIDS
        .lock()
        .map(|pids| {
            pids.iter()
                .filter_map(|p| Process::new(*p).sample().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The agents' use over one scenario: CPU seconds (sum over the agents,
/// and the most one used), resident memory at its end (sum and max) and
/// the highest peak (VmHWM) of one agent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct AgentUsage {
    /// Agents read.
    pub count: usize,
    /// CPU seconds of all agents together.
    pub cpu_sum: f64,
    /// CPU seconds of the busiest agent.
    pub cpu_max: f64,
    /// RSS of all agents together at the end, bytes.
    pub rss_sum: u64,
    /// RSS of the largest agent at the end, bytes.
    pub rss_max: u64,
    /// The highest peak RSS (VmHWM) of one agent so far, bytes.
    pub hwm_max: u64,
}

impl AgentUsage {
    /// The use between two readings of the same agents (`None` when there
    /// are none, as in push mode, or the readings do not pair up).
    pub(crate) fn between(start: &[Sample], end: &[Sample]) -> Option<Self> {
        if end.is_empty() || start.len() != end.len() {
            return None;
        }
        let cpu: Vec<f64> = start
            .iter()
            .zip(end)
            .map(|(a, b)| (b.cpu_seconds - a.cpu_seconds).max(0.0))
            .collect();
        Some(Self {
            count: end.len(),
            cpu_sum: cpu.iter().sum(),
            cpu_max: cpu.iter().copied().fold(0.0, f64::max),
            rss_sum: end.iter().map(|s| s.rss_bytes).sum(),
            rss_max: end.iter().map(|s| s.rss_bytes).max().unwrap_or(0),
            hwm_max: end.iter().map(|s| s.hwm_bytes).max().unwrap_or(0),
        })
    }

    /// `N agents cpu X s (max one Y s), RSS sum S, max M, peak P`.
    pub(crate) fn line(&self) -> String {
        format!(
            "{} agents cpu {:.2} s (busiest {:.2} s), RSS sum {}, max {}, peak of one {}",
            self.count,
            self.cpu_sum,
            self.cpu_max,
            procfs::mib(self.rss_sum),
            procfs::mib(self.rss_max),
            procfs::mib(self.hwm_max)
        )
    }
}

/// What a member's store was written since revision `rv`: one line per
/// watch event after `rv` (`ADDED v1/ConfigMap ns/name rv N`) of every
/// watchable resource its discovery lists, so the restart scenario can
/// name the writes it counts (deletes included). A resource whose watch
/// window no longer holds `rv` says so (`410`).
pub(crate) async fn writes_since(member: &Client, rv: u64) -> Result<Vec<String>> {
    let mut collections = Vec::new();
    let mut versions = vec!["/api/v1".to_string()];
    let groups = client::get(member, "/apis")
        .await?
        .expect(StatusCode::OK, "discovery /apis")?
        .json()?;
    for g in groups["groups"].as_array().into_iter().flatten() {
        if let Some(gv) = g
            .pointer("/preferredVersion/groupVersion")
            .and_then(Value::as_str)
        {
            versions.push(format!("/apis/{gv}"));
        }
    }
    for prefix in versions {
        let list = client::get(member, &prefix)
            .await?
            .expect(StatusCode::OK, "discovery")?
            .json()?;
        for r in list["resources"].as_array().into_iter().flatten() {
            let name = r["name"].as_str().unwrap_or_default();
            let watchable = r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "watch"));
            if watchable && !name.contains('/') {
                collections.push(format!("{prefix}/{name}"));
            }
        }
    }
    let found: Vec<Vec<String>> = stream::iter(collections)
        .map(|c| async move {
            let uri = format!("{c}?watch=1&resourceVersion={rv}&timeoutSeconds=1");
            match client::get(member, &uri).await {
                Ok(reply) if reply.status == StatusCode::OK => watch_lines(&reply.body),
                Ok(reply) => vec![format!("{c}: HTTP {}", reply.status)],
                Err(e) => vec![format!("{c}: {e:#}")],
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut lines: Vec<String> = found.into_iter().flatten().collect();
    lines.sort();
    Ok(lines)
}

/// One line per event of a watch body (newline-separated JSON events).
fn watch_lines(body: &[u8]) -> Vec<String> {
    body.split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .map(|e| {
            let o = &e["object"];
            let m = &o["metadata"];
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            if e["type"] == "ERROR" {
                return format!("ERROR {} {}", o["code"], s(&o["message"]));
            }
            format!(
                "{} {}/{} {}/{} rv {}",
                s(&e["type"]),
                s(&o["apiVersion"]),
                s(&o["kind"]),
                s(&m["namespace"]),
                s(&m["name"]),
                s(&m["resourceVersion"])
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(cpu: f64, rss_mib: u64, hwm_mib: u64) -> Sample {
        Sample {
            cpu_seconds: cpu,
            rss_bytes: rss_mib << 20,
            hwm_bytes: hwm_mib << 20,
        }
    }

    #[test]
    fn agent_use_is_summed_and_its_maximum_kept() {
        let start = [s(1.0, 10, 10), s(2.0, 12, 12)];
        let end = [s(4.0, 20, 25), s(3.0, 14, 30)];
        let u = AgentUsage::between(&start, &end);
        assert_eq!(
            u,
            Some(AgentUsage {
                count: 2,
                cpu_sum: 4.0,
                cpu_max: 3.0,
                rss_sum: 34 << 20,
                rss_max: 20 << 20,
                hwm_max: 30 << 20,
            })
        );
        let line = u.map(|u| u.line()).unwrap_or_default();
        assert!(
            line.starts_with("2 agents cpu 4.00 s (busiest 3.00 s)"),
            "{line}"
        );
    }

    #[test]
    fn watch_events_are_named() {
        let body = concat!(
            r#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench","resourceVersion":"12"}}}"#,
            "\n",
            r#"{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}}"#,
            "\n"
        );
        assert_eq!(
            watch_lines(body.as_bytes()),
            vec![
                "MODIFIED v1/Namespace /bench rv 12".to_string(),
                "ERROR 410 too old".to_string()
            ]
        );
    }

    #[test]
    fn no_agents_or_an_agent_gone_is_no_reading() {
        assert_eq!(AgentUsage::between(&[], &[]), None);
        assert_eq!(AgentUsage::between(&[s(1.0, 1, 1)], &[]), None);
    }
}
