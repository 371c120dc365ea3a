//! `bench federation`: the propagation figures of SPEC §5. Starts a host
//! `ubernetes serve` (federation controllers on) and M member servers
//! (`--federation-controllers=false`, small watch caches), joins them
//! declaratively (Secret `federation-system/<name>` + Cluster, SPEC §3.2),
//! waits for every Cluster to be Ready, then measures:
//!
//! 1. one ConfigMap created in the federation until it is visible in every
//!    member (a label-selected watch per member), repeated → p50/p99/max;
//! 2. N ConfigMaps created with 32 clients until all N are in every member;
//! 3. the host idle for a while with everything in sync (CPU %);
//! 4. SIGTERM of the host with everything in sync, restart on the same data
//!    dir and port: time to `/readyz`, time until a new object reaches every
//!    member, and how many member writes the restart sent (member store
//!    revisions before and after, and watch events on the bench's objects).
//!
//! Host CPU seconds and peak RSS (VmHWM) are read from `/proc` per
//! scenario. Every process started here is killed at the end, on error too
//! (`kill_on_drop`).
//!
//! With `--pull` the members are joined in pull mode instead, each with its
//! `ubernetes agent` (see [`crate::federation_pull`]), and the agents' CPU
//! and memory are read per scenario too; `--compare-push-pull` runs push
//! then pull on fresh servers and prints both in one table ([`table`]).
//!
//! With `--simulated-members M` ([`Mode::Simulated`], issue 21 item 5) the
//! members are M **simulated** member APIs served by this process
//! ([`crate::member_sim`], as kwok simulates nodes), joined as real members
//! are (Secret + Cluster); every printed line starts with `[simulated]`.
//! The simulator counts each member's writes itself and tells the tracker
//! of every copy (no member watches), and the host is measured as always;
//! the simulator's CPU is the "bench client cpu".

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::client;
use crate::federation_pull::{AgentUsage, Agents, sample_agents};
use crate::member_sim::{self, Sim, WriteKind};
use crate::procfs::{self, Process, Sample};
use crate::server::{ManagedServer, ServerSpec};
use crate::stats::{Latencies, ms};

/// The namespace of the bench's federated objects.
pub(crate) const NAMESPACE: &str = "fedbench";
/// The label every bench object carries; the member watches select on it.
const LABEL_KEY: &str = "bench.ubernetes.io/fed";
// Where member credentials live in the host.
use ubernetes_api::FEDERATION_NAMESPACE;

/// What `bench federation` does.
#[derive(Debug, Clone)]
pub struct FederationOptions {
    /// The `ubernetes` binary.
    pub bin: PathBuf,
    /// Member clusters to start and join.
    pub members: usize,
    /// ConfigMaps in the bulk scenario.
    pub objects: usize,
    /// Concurrent creators in the bulk scenario.
    pub concurrency: usize,
    /// Repetitions of the single-object scenario.
    pub single_repeats: usize,
    /// Seconds of idle measurement with everything in sync.
    pub idle_seconds: u64,
    /// The host's `--cluster-monitor-period` (Go duration).
    pub monitor_period: String,
    /// The members' `--default-watch-cache-size`.
    pub member_watch_cache: usize,
    /// The member processes' `--worker-threads` (0: not passed, the
    /// server's default).
    pub member_worker_threads: usize,
    /// The `--log-level` of every started server.
    pub log_level: String,
    /// Upper bound of every wait (propagation of the bulk, readiness).
    pub timeout: Duration,
    /// Skip the restart scenario.
    pub skip_restart: bool,
    /// More flags for every started server (`--server-arg`).
    pub server_args: Vec<String>,
}

/// How to start one process of the federation with these flags.
fn spec(opts: &FederationOptions, args: Vec<String>) -> ServerSpec {
    ServerSpec {
        bin: opts.bin.clone(),
        log_level: opts.log_level.clone(),
        extra_args: args
            .into_iter()
            .chain(opts.server_args.iter().cloned())
            .collect(),
    }
}

/// Which bench objects each member has shown, and when each object was in
/// every member.
struct Tracker {
    members: usize,
    inner: Mutex<TrackerState>,
    /// How many objects are in every member.
    complete: watch::Sender<usize>,
}

#[derive(Default)]
struct TrackerState {
    seen: Vec<HashSet<String>>,
    counts: HashMap<String, usize>,
    waiters: HashMap<String, oneshot::Sender<Instant>>,
    /// Watch events other than the first ADDED of a name in a member: member
    /// writes to objects already there.
    rewrites: Vec<usize>,
}

impl Tracker {
    fn new(members: usize) -> Arc<Self> {
        Arc::new(Self {
            members,
            inner: Mutex::new(TrackerState {
                seen: vec![HashSet::new(); members],
                rewrites: vec![0; members],
                ..TrackerState::default()
            }),
            complete: watch::Sender::new(0),
        })
    }

    /// Member `member` shows `name` (an ADDED event or a relist).
    fn seen(&self, member: usize, name: &str) {
        let now = Instant::now();
        let Ok(mut st) = self.inner.lock() else {
            return;
        };
        let Some(set) = st.seen.get_mut(member) else {
            return;
        };
        if !set.insert(name.to_owned()) {
            return;
        }
        let count = st.counts.entry(name.to_owned()).or_insert(0);
        *count += 1;
        if *count == self.members {
            if let Some(w) = st.waiters.remove(name) {
                let _ = w.send(now);
            }
            self.complete.send_modify(|c| *c += 1);
        }
    }

    /// Member `member` wrote an object it already had.
    fn rewrite(&self, member: usize) {
        if let Ok(mut st) = self.inner.lock()
            && let Some(r) = st.rewrites.get_mut(member)
        {
            *r += 1;
        }
    }

    /// A receiver of the moment `name` is in every member (register before creating it).
    fn wait_for(&self, name: &str) -> Result<oneshot::Receiver<Instant>> {
        let (tx, rx) = oneshot::channel();
        let mut st = self
            .inner
            .lock()
            .map_err(|_| anyhow::anyhow!("tracker lock poisoned"))?;
        st.waiters.insert(name.to_owned(), tx);
        Ok(rx)
    }

    /// Objects each member has shown.
    fn per_member(&self) -> Vec<usize> {
        self.inner
            .lock()
            .map(|st| st.seen.iter().map(HashSet::len).collect())
            .unwrap_or_default()
    }

    /// Rewrites seen per member so far.
    fn rewrites(&self) -> Vec<usize> {
        self.inner
            .lock()
            .map(|st| st.rewrites.clone())
            .unwrap_or_default()
    }

    /// Wait until at least `target` objects are in every member.
    async fn wait_complete(&self, target: usize, timeout: Duration) -> Result<()> {
        let mut rx = self.complete.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|c| *c >= target)).await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            _ => bail!(
                "after {timeout:?}: {} of {target} objects in every member; per member: {:?}",
                *self.complete.borrow(),
                self.per_member()
            ),
        }
    }
}

impl member_sim::Observer for Tracker {
    /// A simulated member wrote a bench ConfigMap: it arrived, or was rewritten.
    fn wrote(
        &self,
        member: usize,
        kind: WriteKind,
        resource: &str,
        ns: &str,
        name: &str,
        labels: &member_sim::Labels,
    ) {
        if resource != "api/v1/configmaps"
            || ns != NAMESPACE
            || !labels.iter().any(|(k, v)| k == LABEL_KEY && v == "1")
        {
            return;
        }
        match kind {
            WriteKind::Created => self.seen(member, name),
            WriteKind::Modified | WriteKind::Deleted => self.rewrite(member),
        }
    }
}

/// The members as the scenarios read them: real servers (through their
/// API) or the simulator (directly).
enum MemberSet<'a> {
    Real(&'a [Client]),
    Simulated(&'a Sim),
}

impl MemberSet<'_> {
    fn len(&self) -> usize {
        match self {
            MemberSet::Real(c) => c.len(),
            MemberSet::Simulated(s) => s.len(),
        }
    }

    /// Each member's store revision, twice (see [`member_revisions`]).
    async fn revisions(&self) -> Result<Vec<(u64, u64)>> {
        match self {
            MemberSet::Real(c) => member_revisions(c).await,
            MemberSet::Simulated(s) => Ok(s.revisions().into_iter().map(|r| (r, r)).collect()),
        }
    }

    /// Member `i`'s writes after revision `rev`, for the report.
    async fn writes_since(&self, i: usize, rev: u64) -> Vec<String> {
        match self {
            MemberSet::Real(c) => crate::federation_pull::writes_since(&c[i], rev)
                .await
                .unwrap_or_else(|e| vec![format!("cannot tell: {e:#}")]),
            MemberSet::Simulated(s) => s.writes_since(i, rev),
        }
    }

    /// Whether member `i` has the namespace `ns`.
    async fn has_namespace(&self, i: usize, ns: &str) -> Result<bool> {
        match self {
            MemberSet::Real(c) => Ok(client::get(&c[i], &format!("/api/v1/namespaces/{ns}"))
                .await?
                .status
                == StatusCode::OK),
            MemberSet::Simulated(s) => Ok(s.has(i, "api/v1/namespaces", "", ns)),
        }
    }

    /// `[simulated] ` before every printed line of a simulated run.
    /// The ConfigMap requests all members served so far, per verb (their
    /// `apiserver_request_total`); `None` for simulated members (the
    /// simulator counts its own) or when a member's metrics cannot be read.
    async fn configmap_requests(&self) -> Option<HashMap<String, u64>> {
        let MemberSet::Real(clients) = self else {
            return None;
        };
        let mut total = HashMap::new();
        for c in clients.iter() {
            let req = http::Request::get("/metrics").body(Vec::new()).ok()?;
            let text = c.request_text(req).await.ok()?;
            for (verb, n) in configmap_requests_by_verb(&text) {
                *total.entry(verb).or_insert(0) += n;
            }
        }
        Some(total)
    }

    fn tag(&self) -> &'static str {
        match self {
            MemberSet::Real(_) => "",
            MemberSet::Simulated(_) => "[simulated] ",
        }
    }
}

/// The `apiserver_request_total` samples of ConfigMaps in a Prometheus
/// text exposition, summed per verb (over codes and scopes).
fn configmap_requests_by_verb(text: &str) -> HashMap<String, u64> {
    let label = |line: &str, name: &str| -> Option<String> {
        let start = line.find(&format!("{name}=\""))? + name.len() + 2;
        let len = line.get(start..)?.find('"')?;
        line.get(start..start + len).map(str::to_string)
    };
    let mut out = HashMap::new();
    for line in text.lines() {
        if !line.starts_with("apiserver_request_total{")
            || label(line, "resource").as_deref() != Some("configmaps")
        {
            continue;
        }
        let (Some(verb), Some(n)) = (
            label(line, "verb"),
            line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()),
        ) else {
            continue;
        };
        *out.entry(verb).or_insert(0) += n as u64;
    }
    out
}

/// Watch the bench's ConfigMaps in one member forever, feeding the tracker
/// (a list first, then a watch from its resourceVersion; relist on error).
async fn watch_member(client: Client, member: usize, tracker: Arc<Tracker>) {
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let selector = format!("{LABEL_KEY}=1");
    loop {
        let list = match api.list(&ListParams::default().labels(&selector)).await {
            Ok(l) => l,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        for cm in &list.items {
            if let Some(n) = &cm.metadata.name {
                tracker.seen(member, n);
            }
        }
        let mut rv = list.metadata.resource_version.unwrap_or_default();
        'watch: loop {
            let params = WatchParams::default().labels(&selector).timeout(290);
            let Ok(stream) = api.watch(&params, &rv).await else {
                break 'watch;
            };
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(WatchEvent::Added(cm)) => {
                        if let Some(n) = &cm.metadata.name {
                            tracker.seen(member, n);
                        }
                        rv = cm.metadata.resource_version.unwrap_or(rv);
                    }
                    Ok(WatchEvent::Modified(cm)) | Ok(WatchEvent::Deleted(cm)) => {
                        tracker.rewrite(member);
                        rv = cm.metadata.resource_version.unwrap_or(rv);
                    }
                    Ok(WatchEvent::Bookmark(b)) => rv = b.metadata.resource_version,
                    Ok(WatchEvent::Error(_)) | Err(_) => break 'watch,
                }
            }
        }
    }
}

/// A ConfigMap of the bench: labelled, ~1 KiB of data.
pub(crate) fn configmap(name: &str) -> Vec<u8> {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {LABEL_KEY: "1"}},
        "data": {"payload": "x".repeat(1000)},
    })
    .to_string()
    .into_bytes()
}

/// Create a bench ConfigMap in the federation.
async fn create(host: &Client, name: &str) -> Result<()> {
    client::post_json(host, &client::configmaps(NAMESPACE), configmap(name))
        .await?
        .expect(StatusCode::CREATED, &format!("create configmap {name}"))?;
    Ok(())
}

/// Create `body` at `uri` unless it exists.
pub(crate) async fn ensure(c: &Client, uri: &str, body: Value, what: &str) -> Result<()> {
    let r = client::post_json(c, uri, body.to_string().into_bytes()).await?;
    if r.status != StatusCode::CREATED && r.status != StatusCode::CONFLICT {
        bail!("create {what}: HTTP {}: {}", r.status, r.text());
    }
    Ok(())
}

/// CPU and memory of the host over one scenario.
struct Window {
    process: Option<Process>,
    start: Option<procfs::Sample>,
    at: Instant,
    /// CPU seconds of the members and of this bench process at the start.
    others: (f64, f64),
    /// The agents at the start (pull mode; empty in push mode).
    agents: Vec<Sample>,
}

/// What one scenario cost: the host's CPU and memory, the members' and the
/// bench client's CPU, and in pull mode the agents'.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    /// The host's `/proc` was readable at both ends.
    pub readable: bool,
    /// Seconds between the readings.
    pub wall: f64,
    /// Host CPU seconds.
    pub host_cpu: f64,
    /// Host RSS at the end, bytes.
    pub host_rss: u64,
    /// Host peak RSS (VmHWM) at the end, bytes.
    pub host_hwm: u64,
    /// CPU seconds of all members together.
    pub members_cpu: f64,
    /// CPU seconds of this bench process.
    pub client_cpu: f64,
    /// The agents (pull mode).
    pub agents: Option<AgentUsage>,
}

impl std::fmt::Display for Usage {
    /// `host cpu X s (Y% of one core over Z s), peak RSS W; …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.readable {
            return f.write_str("host cpu: not readable");
        }
        write!(
            f,
            "host cpu {:.2} s ({:.1}% of one core over {:.1} s), RSS {}, peak RSS {}; all members cpu {:.2} s, bench client cpu {:.2} s",
            self.host_cpu,
            self.host_percent(),
            self.wall,
            procfs::mib(self.host_rss),
            procfs::mib(self.host_hwm),
            self.members_cpu,
            self.client_cpu
        )?;
        if let Some(a) = &self.agents {
            write!(f, "; {}", a.line())?;
        }
        Ok(())
    }
}

impl Usage {
    /// Host CPU in percent of one core.
    fn host_percent(&self) -> f64 {
        if self.wall > 0.0 {
            self.host_cpu / self.wall * 100.0
        } else {
            0.0
        }
    }
}

/// CPU seconds used so far by every member process, and by this process.
fn others_cpu() -> (f64, f64) {
    let members = MEMBER_PIDS
        .lock()
        .map(|pids| {
            pids.iter()
                .filter_map(|p| Process::new(*p).sample().ok())
                .map(|s| s.cpu_seconds)
                .sum()
        })
        .unwrap_or(0.0);
    let me = Process::new(std::process::id())
        .sample()
        .map_or(0.0, |s| s.cpu_seconds);
    (members, me)
}

/// The member processes' ids, for [`others_cpu`].
static MEMBER_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

impl Window {
    fn open(process: Option<Process>) -> Self {
        let start = process.as_ref().and_then(|p| p.sample().ok());
        Self {
            process,
            start,
            at: Instant::now(),
            others: others_cpu(),
            agents: sample_agents(),
        }
    }

    /// What the scenario cost since [`Self::open`] (prints as `host cpu X
    /// s (Y% of one core over Z s), peak RSS W; …`).
    fn close(&self) -> Usage {
        let end = self.process.as_ref().and_then(|p| p.sample().ok());
        let agents = AgentUsage::between(&self.agents, &sample_agents());
        match (self.start, end) {
            (Some(a), Some(b)) => {
                let (members, me) = others_cpu();
                Usage {
                    readable: true,
                    wall: self.at.elapsed().as_secs_f64(),
                    host_cpu: b.cpu_seconds - a.cpu_seconds,
                    host_rss: b.rss_bytes,
                    host_hwm: b.hwm_bytes,
                    members_cpu: members - self.others.0,
                    client_cpu: me - self.others.1,
                    agents,
                }
            }
            _ => Usage {
                agents,
                ..Usage::default()
            },
        }
    }
}

/// Each member's store revision: the `resourceVersion` of a one-item list
/// of namespaces and of all ConfigMaps (they must agree: one revision per
/// store).
async fn member_revisions(members: &[Client]) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::with_capacity(members.len());
    for c in members {
        let mut rv = [0u64; 2];
        for (i, uri) in ["/api/v1/namespaces?limit=1", "/api/v1/configmaps?limit=1"]
            .iter()
            .enumerate()
        {
            let v = client::get(c, uri)
                .await?
                .expect(StatusCode::OK, "list for the revision")?
                .json()?;
            rv[i] = v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .context("a list without a numeric resourceVersion")?;
        }
        out.push((rv[0], rv[1]));
    }
    Ok(out)
}

/// The sum of the store revision deltas (writes) between two readings.
fn rev_delta(before: &[(u64, u64)], after: &[(u64, u64)]) -> u64 {
    before
        .iter()
        .zip(after)
        .map(|(b, a)| a.1.saturating_sub(b.1))
        .sum()
}

/// The host's writes of Clusters (the Cluster controller's status writes
/// after its probes, the status controller's `objectsInSync` counts),
/// counted from a watch so that the host's per-object write figure can
/// leave them out: with 100 members probed every second they are ~100
/// writes a second, none of them the objects'.
struct ClusterWrites {
    /// The store revision of every Cluster write seen.
    revisions: Arc<Mutex<Vec<u64>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ClusterWrites {
    /// Watch the host's Clusters from store revision `from` on.
    fn start(hc: &Client, from: u64) -> Self {
        let api: Api<ubernetes_api::Cluster> = Api::all(hc.clone());
        let revisions = Arc::new(Mutex::new(Vec::new()));
        let seen = revisions.clone();
        let task = tokio::spawn(async move {
            let mut rv = from.to_string();
            loop {
                let Ok(events) = api.watch(&WatchParams::default(), &rv).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                let mut events = std::pin::pin!(events);
                while let Some(Ok(event)) = events.next().await {
                    let (WatchEvent::Added(c) | WatchEvent::Modified(c) | WatchEvent::Deleted(c)) =
                        event
                    else {
                        continue;
                    };
                    if let Some(v) = c.metadata.resource_version {
                        if let (Ok(n), Ok(mut seen)) = (v.parse::<u64>(), seen.lock()) {
                            seen.push(n);
                        }
                        rv = v;
                    }
                }
                // The watch ended (its timeout, an error): go on from the last write seen.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Self { revisions, task }
    }

    /// The Cluster writes at store revisions in `(from, to]`, after
    /// waiting a moment for the watch to deliver up to `to`.
    async fn between(&self, from: u64, to: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.revisions
            .lock()
            .map_or(0, |r| count_between(&r, from, to))
    }
}

impl Drop for ClusterWrites {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How many of `revisions` are in `(from, to]`.
fn count_between(revisions: &[u64], from: u64, to: u64) -> u64 {
    revisions
        .iter()
        .filter(|r| (from + 1..=to).contains(r))
        .count() as u64
}

/// Wait until every Cluster in the host is `Ready=True`.
async fn wait_clusters_ready(host: &Client, members: usize, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let v = client::get(host, "/apis/federation/v1beta1/clusters")
            .await?
            .expect(StatusCode::OK, "list clusters")?
            .json()?;
        let items = v["items"].as_array().cloned().unwrap_or_default();
        let ready = items
            .iter()
            .filter(|c| {
                c.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
            })
            .count();
        if ready >= members {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{ready} of {members} clusters Ready after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Wait until the host's CPU use over 1 s windows falls below 5 % of a
/// core (its work after a scenario is done), at most `max`; returns the
/// time it took.
async fn settle(process: Option<&Process>, max: Duration) -> Duration {
    let t = Instant::now();
    let Some(p) = process else {
        return Duration::ZERO;
    };
    while t.elapsed() < max {
        let Ok(a) = p.sample() else { break };
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Ok(b) = p.sample() else { break };
        if b.cpu_seconds - a.cpu_seconds < 0.05 {
            break;
        }
    }
    t.elapsed()
}

/// How to start the host: federation controllers on, members probed every
/// `opts.monitor_period`.
fn host_spec(opts: &FederationOptions) -> ServerSpec {
    let host_args = vec![
        "--cluster-monitor-period".to_owned(),
        opts.monitor_period.clone(),
    ];
    spec(opts, host_args)
}

/// Start the host (federation controllers on) and `opts.members` member
/// servers (`--federation-controllers=false`, small watch caches, 4 at a
/// time), each ready; every one is killed when its handle drops.
pub(crate) async fn start_servers(
    opts: &FederationOptions,
) -> Result<(ManagedServer, Vec<ManagedServer>)> {
    let t = Instant::now();
    let mut member_args = vec![
        "--federation-controllers=false".to_owned(),
        "--default-watch-cache-size".to_owned(),
        opts.member_watch_cache.to_string(),
    ];
    if opts.member_worker_threads > 0 {
        member_args.push("--worker-threads".to_owned());
        member_args.push(opts.member_worker_threads.to_string());
    }
    let mut host = ManagedServer::start_unready(host_spec(opts)).await?;
    // Members start 4 at a time (each generates its certificates).
    let members: Vec<ManagedServer> = stream::iter(0..opts.members)
        .map(|_| {
            let args = member_args.clone();
            async move {
                let mut p = ManagedServer::start_unready(spec(opts, args)).await?;
                p.wait_ready().await?;
                Ok::<_, anyhow::Error>(p)
            }
        })
        .buffered(4)
        .try_collect()
        .await?;
    host.wait_ready().await?;
    if let Ok(mut pids) = MEMBER_PIDS.lock() {
        *pids = members
            .iter()
            .filter_map(|m| m.process().map(|p| p.pid()))
            .collect();
    }
    eprintln!(
        "federation: host {} and {} members started in {:.1} s",
        host.url(),
        members.len(),
        t.elapsed().as_secs_f64()
    );
    Ok((host, members))
}

/// How the members are joined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Declaratively, with each member's address and kubeconfig (SPEC §3.2).
    #[default]
    Push,
    /// `ubernetes join --pull` and one `ubernetes agent` per member: the
    /// host is given no member address (SPEC §3.12).
    Pull,
    /// Declaratively, to members simulated by this process
    /// ([`crate::member_sim`]): the host's figures at sizes real member
    /// processes do not fit (issue 21 item 5).
    Simulated,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Push => "push",
            Mode::Pull => "pull",
            Mode::Simulated => "simulated",
        })
    }
}

/// The figures of one run, for [`table`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Figures {
    /// How the members were joined.
    pub mode: Mode,
    /// Members joined.
    pub members: usize,
    /// Objects of the bulk scenario.
    pub objects: usize,
    /// Until every Cluster was Ready (pull: the joins and agents' starts included).
    pub join: Duration,
    /// One object into every member, p50 and p99.
    pub single: (Duration, Duration),
    /// The same with every bulk object in sync.
    pub single_in_sync: Option<(Duration, Duration)>,
    /// The bulk's creates.
    pub bulk_created: Duration,
    /// Until every copy of the bulk was in every member.
    pub bulk_all: Duration,
    /// The bulk's cost (its agents' RSS: each member holding every object).
    pub bulk: Usage,
    /// Idle, in sync.
    pub idle: Usage,
    /// Restart: a new object in every member this long after the host's start.
    pub restart_first: Option<Duration>,
    /// Restart: member writes other than the new object's creates.
    pub restart_writes: Option<i64>,
}

/// Run the scenarios once per mode, each on fresh servers; with more than
/// one mode, print their figures side by side at the end.
pub async fn run_modes(opts: &FederationOptions, modes: &[Mode]) -> Result<()> {
    let mut all = Vec::with_capacity(modes.len());
    for &mode in modes {
        println!("== {mode} mode ==");
        all.push(run(opts, mode).await?);
    }
    if all.len() > 1 {
        print!("{}", table(&all));
    }
    Ok(())
}

/// The figures of several runs side by side, a row per figure.
pub(crate) fn table(runs: &[Figures]) -> String {
    fn secs(d: Duration) -> String {
        format!("{:.2} s", d.as_secs_f64())
    }
    let agent = |u: &Usage, f: &dyn Fn(&AgentUsage) -> String| {
        u.agents.as_ref().map_or_else(|| "-".to_owned(), f)
    };
    type Cell<'a> = Box<dyn Fn(&Figures) -> String + 'a>;
    let rows: Vec<(&str, Cell)> = vec![
        (
            "members x objects",
            Box::new(|f| format!("{} x {}", f.members, f.objects)),
        ),
        ("join: every Cluster Ready", Box::new(|f| secs(f.join))),
        (
            "single: p50 / p99",
            Box::new(|f| format!("{} / {}", ms(f.single.0), ms(f.single.1))),
        ),
        (
            "single in sync: p50 / p99",
            Box::new(|f| {
                f.single_in_sync
                    .map_or_else(|| "-".to_owned(), |(a, b)| format!("{} / {}", ms(a), ms(b)))
            }),
        ),
        ("bulk: created", Box::new(|f| secs(f.bulk_created))),
        (
            "bulk: every copy in every member",
            Box::new(|f| secs(f.bulk_all)),
        ),
        (
            "bulk: member copies/s",
            Box::new(|f| {
                format!(
                    "{:.0}",
                    (f.objects * f.members) as f64 / f.bulk_all.as_secs_f64().max(1e-9)
                )
            }),
        ),
        (
            "bulk: host cpu",
            Box::new(|f| format!("{:.1} s ({:.0}%)", f.bulk.host_cpu, f.bulk.host_percent())),
        ),
        (
            "bulk: host peak RSS",
            Box::new(|f| procfs::mib(f.bulk.host_hwm)),
        ),
        (
            "bulk: all members cpu",
            Box::new(|f| format!("{:.1} s", f.bulk.members_cpu)),
        ),
        (
            "bulk: agents cpu sum / busiest",
            Box::new(move |f| {
                agent(&f.bulk, &|a| {
                    format!("{:.1} s / {:.1} s", a.cpu_sum, a.cpu_max)
                })
            }),
        ),
        (
            "agents RSS sum / max (every object in)",
            Box::new(move |f| {
                agent(&f.bulk, &|a| {
                    format!("{} / {}", procfs::mib(a.rss_sum), procfs::mib(a.rss_max))
                })
            }),
        ),
        (
            "agent peak RSS (max of one)",
            Box::new(move |f| agent(&f.bulk, &|a| procfs::mib(a.hwm_max))),
        ),
        (
            "idle: host cpu",
            Box::new(|f| format!("{:.1}% of a core", f.idle.host_percent())),
        ),
        (
            "idle: agents cpu sum",
            Box::new(move |f| {
                agent(&f.idle, &|a| {
                    format!(
                        "{:.1}% of a core",
                        a.cpu_sum / f.idle.wall.max(1e-9) * 100.0
                    )
                })
            }),
        ),
        (
            "restart: new object everywhere after start",
            Box::new(|f| f.restart_first.map_or_else(|| "-".to_owned(), secs)),
        ),
        (
            "restart: member writes",
            Box::new(|f| {
                f.restart_writes
                    .map_or_else(|| "-".to_owned(), |w| w.to_string())
            }),
        ),
    ];
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut out = format!("{:width$}", "");
    for f in runs {
        out.push_str(&format!("  {:>24}", f.mode.to_string()));
    }
    out.push('\n');
    for (name, cell) in &rows {
        out.push_str(&format!("{name:width$}"));
        for f in runs {
            out.push_str(&format!("  {:>24}", cell(f)));
        }
        out.push('\n');
    }
    out
}

/// Start everything, run the scenarios in `mode`, print the figures, stop
/// everything.
pub async fn run(opts: &FederationOptions, mode: Mode) -> Result<Figures> {
    if !opts.bin.exists() {
        bail!(
            "{} not found: `cargo build --release -p ubernetes -p bench` or pass --ubernetes-bin",
            opts.bin.display()
        );
    }
    if opts.members == 0 {
        bail!("--members must be at least 1");
    }
    if mode == Mode::Simulated {
        return run_simulated(opts).await;
    }
    let (mut host, mut members) = start_servers(opts).await?;
    let mut agents = None;
    let mut figures = Figures {
        mode,
        members: opts.members,
        objects: opts.objects,
        ..Figures::default()
    };
    let result = scenarios(opts, &mut host, &members, &mut agents, &mut figures).await;
    if result.is_err() {
        eprintln!("federation: host log tail:\n{}", host.log_tail(30));
        if let Some(a) = &mut agents {
            eprint!("{}", a.exited_logs());
        }
    }
    if let Some(a) = &mut agents {
        a.stop().await;
    }
    host.kill9().await;
    for m in &mut members {
        m.kill9().await;
    }
    result.map(|()| figures)
}

/// [`run`] against `opts.members` simulated members ([`Mode::Simulated`]).
async fn run_simulated(opts: &FederationOptions) -> Result<Figures> {
    let t = Instant::now();
    let tracker = Tracker::new(opts.members);
    let observer: Arc<dyn member_sim::Observer> = tracker.clone();
    let sim = Sim::start(opts.members, Some(observer)).await?;
    let mut host = ManagedServer::start(host_spec(opts)).await?;
    eprintln!(
        "federation: host {} and {} simulated members started in {:.1} s",
        host.url(),
        sim.len(),
        t.elapsed().as_secs_f64()
    );
    let mut figures = Figures {
        mode: Mode::Simulated,
        members: opts.members,
        objects: opts.objects,
        ..Figures::default()
    };
    let result = simulated_scenarios(opts, &mut host, &sim, &tracker, &mut figures).await;
    if result.is_err() {
        eprintln!("federation: host log tail:\n{}", host.log_tail(30));
    }
    host.kill9().await;
    for (shape, count) in sim.requests() {
        println!("[simulated] the host sent the members (all together): {count:>9}  {shape}");
    }
    println!(
        "[simulated] the simulator holds {} objects over {} members; requests it does not serve (answered 404): {:?}",
        sim.objects(),
        sim.len(),
        sim.unknown_paths()
    );
    result.map(|()| figures)
}

async fn simulated_scenarios(
    opts: &FederationOptions,
    host: &mut ManagedServer,
    sim: &Sim,
    tracker: &Arc<Tracker>,
    figures: &mut Figures,
) -> Result<()> {
    let m = sim.len();
    let hc = host.client().await?;
    let t = Instant::now();
    let win = Window::open(host.process());
    let endpoints: Vec<(String, String)> = (0..m)
        .map(|i| (sim.url(i).to_owned(), sim.kubeconfig(i).to_owned()))
        .collect();
    join_endpoints(&hc, &endpoints, opts.timeout).await?;
    figures.join = t.elapsed();
    println!(
        "[simulated] join: {m} clusters Ready in {:.2} s (simulated members); {}",
        t.elapsed().as_secs_f64(),
        win.close()
    );
    after_join(
        opts,
        host,
        &hc,
        &MemberSet::Simulated(sim),
        tracker,
        figures,
    )
    .await
}

/// Join every member declaratively (Secret `federation-system/member-I` +
/// Cluster `member-I`, SPEC §3.2) and wait until every Cluster is Ready.
pub(crate) async fn join(hc: &Client, members: &[ManagedServer], timeout: Duration) -> Result<()> {
    let mut endpoints = Vec::with_capacity(members.len());
    for p in members {
        let kubeconfig = std::fs::read_to_string(p.kubeconfig())
            .with_context(|| format!("reading {}", p.kubeconfig().display()))?;
        endpoints.push((p.url().to_owned(), kubeconfig));
    }
    join_endpoints(hc, &endpoints, timeout).await
}

/// [`join`] of members given as (URL, kubeconfig text).
async fn join_endpoints(
    hc: &Client,
    members: &[(String, String)],
    timeout: Duration,
) -> Result<()> {
    ensure(
        hc,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FEDERATION_NAMESPACE}}),
        "namespace federation-system",
    )
    .await?;
    for (i, (url, kubeconfig)) in members.iter().enumerate() {
        let name = format!("member-{i}");
        ensure(
            hc,
            &format!("/api/v1/namespaces/{FEDERATION_NAMESPACE}/secrets"),
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": name, "namespace": FEDERATION_NAMESPACE},
                   "stringData": {"kubeconfig": kubeconfig}}),
            "member secret",
        )
        .await?;
        ensure(
            hc,
            "/apis/federation/v1beta1/clusters",
            json!({"apiVersion": "federation/v1beta1", "kind": "Cluster",
                   "metadata": {"name": name},
                   "spec": {"serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": url}],
                            "secretRef": {"name": name}}}),
            "cluster",
        )
        .await?;
    }
    wait_clusters_ready(hc, members.len(), timeout).await?;
    Ok(())
}

async fn scenarios(
    opts: &FederationOptions,
    host: &mut ManagedServer,
    members: &[ManagedServer],
    agents: &mut Option<Agents>,
    figures: &mut Figures,
) -> Result<()> {
    let m = members.len();
    let hc = host.client().await?;
    let mut member_clients = Vec::with_capacity(m);
    for p in members {
        member_clients.push(p.client().await?);
    }

    // Join.
    let t = Instant::now();
    let win = Window::open(host.process());
    match figures.mode {
        Mode::Push | Mode::Simulated => join(&hc, members, opts.timeout).await?,
        Mode::Pull => {
            *agents = Some(Agents::join(&opts.bin, &opts.log_level, host, members).await?);
            wait_clusters_ready(&hc, m, opts.timeout).await?;
        }
    }
    figures.join = t.elapsed();
    println!(
        "join: {m} clusters Ready in {:.2} s ({} mode); {}",
        t.elapsed().as_secs_f64(),
        figures.mode,
        win.close()
    );

    let tracker = Tracker::new(m);
    let watchers: Vec<_> = member_clients
        .iter()
        .enumerate()
        .map(|(i, c)| tokio::spawn(watch_member(c.clone(), i, tracker.clone())))
        .collect();
    let members = MemberSet::Real(&member_clients);
    let result = after_join(opts, host, &hc, &members, &tracker, figures).await;
    for w in watchers {
        w.abort();
    }
    result
}

/// The bench namespace in every member, then the scenarios.
async fn after_join(
    opts: &FederationOptions,
    host: &mut ManagedServer,
    hc: &Client,
    members: &MemberSet<'_>,
    tracker: &Arc<Tracker>,
    figures: &mut Figures,
) -> Result<()> {
    let t = Instant::now();
    ensure(
        hc,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        "namespace",
    )
    .await?;
    for i in 0..members.len() {
        let deadline = Instant::now() + opts.timeout;
        while !members.has_namespace(i, NAMESPACE).await? {
            if Instant::now() > deadline {
                bail!(
                    "namespace {NAMESPACE} not in a member after {:?}",
                    opts.timeout
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    eprintln!(
        "federation: namespace {NAMESPACE} in every member in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    measured(opts, host, hc, members, tracker, figures).await
}

/// One object at a time into every member, `opts.single_repeats` times,
/// named `{prefix}-I`: the latencies' summary.
async fn single(
    opts: &FederationOptions,
    hc: &Client,
    tracker: &Tracker,
    prefix: &str,
) -> Result<crate::stats::Summary> {
    let mut lat = Latencies::new();
    let t = Instant::now();
    for i in 0..opts.single_repeats {
        let name = format!("{prefix}-{i}");
        let rx = tracker.wait_for(&name)?;
        let t0 = Instant::now();
        create(hc, &name).await?;
        let done = tokio::time::timeout(opts.timeout, rx)
            .await
            .with_context(|| format!("{name} not in every member after {:?}", opts.timeout))?
            .context("tracker gone")?;
        lat.record(done.saturating_duration_since(t0));
    }
    Ok(lat.summary(t.elapsed()))
}

async fn measured(
    opts: &FederationOptions,
    host: &mut ManagedServer,
    hc: &Client,
    members: &MemberSet<'_>,
    tracker: &Arc<Tracker>,
    figures: &mut Figures,
) -> Result<()> {
    let m = members.len();
    let tag = members.tag();
    let mut expected = 0usize;
    let host_rss = |host: &ManagedServer| {
        host.process()
            .and_then(|p| p.sample().ok())
            .map_or(0, |s| s.rss_bytes)
    };

    // 1. One object at a time.
    let win = Window::open(host.process());
    let s = single(opts, hc, tracker, "single").await?;
    expected += opts.single_repeats;
    figures.single = (s.p50, s.p99);
    println!(
        "{tag}single: 1 object to {m} members x {}: p50 {}  p99 {}  max {}; {}",
        s.ops,
        ms(s.p50),
        ms(s.p99),
        ms(s.max),
        win.close()
    );

    // 2. Bulk.
    let host_rev0 = member_revisions(std::slice::from_ref(hc)).await?;
    let cluster_writes = ClusterWrites::start(hc, host_rev0[0].1);
    let member_rev0 = members.revisions().await?;
    let requests0 = members.configmap_requests().await;
    let rss0 = host_rss(host);
    let win = Window::open(host.process());
    let t = Instant::now();
    let n = opts.objects;
    stream::iter(0..n)
        .map(|i| async move { create(hc, &format!("bulk-{i}")).await })
        .buffer_unordered(opts.concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    let created = t.elapsed();
    expected += n;
    tracker
        .wait_complete(expected, opts.timeout)
        .await
        .context("bulk propagation")?;
    let all = t.elapsed();
    let usage = win.close();
    (figures.bulk_created, figures.bulk_all, figures.bulk) = (created, all, usage);
    println!(
        "{tag}bulk: {n} objects created in {:.2} s ({:.0}/s, concurrency {}); in all {m} members after {:.2} s ({:.0} objects/s, {:.0} member copies/s); {}",
        created.as_secs_f64(),
        n as f64 / created.as_secs_f64().max(1e-9),
        opts.concurrency,
        all.as_secs_f64(),
        n as f64 / all.as_secs_f64().max(1e-9),
        (n * m) as f64 / all.as_secs_f64().max(1e-9),
        usage
    );
    let settled = settle(host.process().as_ref(), Duration::from_secs(120)).await;
    let host_rev1 = member_revisions(std::slice::from_ref(hc)).await?;
    let member_rev1 = members.revisions().await?;
    if let (Some(r0), Some(r1)) = (requests0, members.configmap_requests().await) {
        let mut verbs: Vec<(String, u64)> = r1
            .into_iter()
            .map(|(v, n)| {
                let before = r0.get(&v).copied().unwrap_or(0);
                (v, n.saturating_sub(before))
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        verbs.sort();
        let per_copy: Vec<String> = verbs
            .iter()
            .map(|(v, c)| format!("{v} {:.3}", *c as f64 / (n * m).max(1) as f64))
            .collect();
        println!(
            "{tag}bulk: ConfigMap requests the members served per member copy (apiserver_request_total): {}",
            per_copy.join(", ")
        );
    }
    let host_writes = rev_delta(&host_rev0, &host_rev1);
    let probe_writes = cluster_writes.between(host_rev0[0].1, host_rev1[0].1).await;
    drop(cluster_writes);
    let member_writes = rev_delta(&member_rev0, &member_rev1);
    let rss1 = host_rss(host);
    let copies = (expected * m).max(1);
    println!(
        "{tag}bulk: host quiet (< 5% of a core over 1 s) {:.1} s after the last copy arrived; writes per object: host store {:.2} (the object, its record, events; the federation's own, without the user's create: {:.2}), plus {probe_writes} Cluster status writes in the window ({:.2} per object: the probes, every {}, and the objectsInSync counts, per Cluster at most every 10 s), each member {:.2}",
        settled.as_secs_f64(),
        host_writes.saturating_sub(probe_writes) as f64 / n.max(1) as f64,
        host_writes
            .saturating_sub(probe_writes)
            .saturating_sub(n as u64) as f64
            / n.max(1) as f64,
        probe_writes as f64 / n.max(1) as f64,
        opts.monitor_period,
        member_writes as f64 / (n.max(1) * m) as f64
    );
    println!(
        "{tag}memory: host RSS {} with {expected} objects in {m} members ({copies} member copies): {:.2} KiB per member copy overall, {:.2} KiB per copy of the bulk (RSS growth {} over {} copies)",
        procfs::mib(rss1),
        rss1 as f64 / 1024.0 / copies as f64,
        rss1.saturating_sub(rss0) as f64 / 1024.0 / (n * m).max(1) as f64,
        procfs::mib(rss1.saturating_sub(rss0)),
        n * m
    );

    // 3. One object at a time, everything in sync.
    if opts.single_repeats > 0 {
        let win = Window::open(host.process());
        let s = single(opts, hc, tracker, "insync").await?;
        expected += opts.single_repeats;
        figures.single_in_sync = Some((s.p50, s.p99));
        println!(
            "{tag}single-in-sync: 1 object to {m} members x {} with {} objects in sync: p50 {}  p99 {}  max {}; {}",
            s.ops,
            expected - opts.single_repeats,
            ms(s.p50),
            ms(s.p99),
            ms(s.max),
            win.close()
        );
    }

    // 4. Idle, in sync.
    let win = Window::open(host.process());
    tokio::time::sleep(Duration::from_secs(opts.idle_seconds)).await;
    figures.idle = win.close();
    println!(
        "{tag}idle: {m} members joined, probed every {} and in sync with {expected} objects, {} s: {}",
        opts.monitor_period, opts.idle_seconds, figures.idle
    );

    if opts.skip_restart {
        return Ok(());
    }

    // 5. Restart with everything in sync.
    let before = members.revisions().await?;
    let consistent = before.iter().all(|(a, b)| a == b);
    let rewrites_before = tracker.rewrites();
    let t = Instant::now();
    host.stop().await;
    let stopped = t.elapsed();
    let t = Instant::now();
    host.relaunch().await?;
    host.wait_ready().await?;
    let ready = t.elapsed();
    let win = Window::open(host.process());
    let hc = host.client().await?;
    let name = "after-restart";
    let rx = tracker.wait_for(name)?;
    let t1 = Instant::now();
    create(&hc, name).await?;
    let done = tokio::time::timeout(opts.timeout, rx)
        .await
        .with_context(|| format!("{name} not in every member after {:?}", opts.timeout))?
        .context("tracker gone")?;
    let first = done.saturating_duration_since(t);
    let new_obj = done.saturating_duration_since(t1);
    let quiet = settle(host.process().as_ref(), Duration::from_secs(180)).await;
    let after = members.revisions().await?;
    let rewrites_after = tracker.rewrites();
    // The new object is one write (its create) in each member.
    let writes: Vec<i64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| a.1 as i64 - b.1 as i64 - 1)
        .collect();
    for (i, w) in writes.iter().enumerate() {
        if *w != 0 {
            let seen = members.writes_since(i, before[i].1).await;
            println!("{tag}restart: member-{i} writes since the restart: {seen:?}");
        }
    }
    figures.restart_first = Some(first);
    figures.restart_writes = Some(writes.iter().sum());
    let rewrites: Vec<usize> = rewrites_after
        .iter()
        .zip(&rewrites_before)
        .map(|(a, b)| a - b)
        .collect();
    let restart_usage = win.close();
    println!(
        "{tag}restart: SIGTERM exit {:.2} s; /readyz {:.3} s after start; a new object in all {m} members {:.3} s after start ({} after its create); host quiet {:.1} s later; {}",
        stopped.as_secs_f64(),
        ready.as_secs_f64(),
        first.as_secs_f64(),
        ms(new_obj),
        quiet.as_secs_f64(),
        restart_usage
    );
    let total: i64 = writes.iter().sum();
    let per_member = if m > 20 {
        format!(
            "{} of {m} members with writes",
            writes.iter().filter(|w| **w != 0).count()
        )
    } else {
        format!("{writes:?}")
    };
    let rewritten: usize = rewrites.iter().sum();
    println!(
        "{tag}restart: member writes other than the new object's create (revision delta - 1): total {total}, per member {per_member}; modify/delete events on bench objects: {rewritten} in all; list revisions of namespaces and configmaps agree: {consistent}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configmap_requests_are_summed_per_verb() {
        let text = "# HELP apiserver_request_total x\n\
apiserver_request_total{code=\"201\",resource=\"configmaps\",verb=\"APPLY\"} 7\n\
apiserver_request_total{code=\"200\",resource=\"configmaps\",verb=\"APPLY\"} 2\n\
apiserver_request_total{code=\"404\",resource=\"configmaps\",verb=\"GET\"} 9\n\
apiserver_request_total{code=\"200\",resource=\"secrets\",verb=\"GET\"} 5\n\
apiserver_request_duration_seconds_count{resource=\"configmaps\",verb=\"GET\"} 4\n";
        let got = configmap_requests_by_verb(text);
        assert_eq!(got.get("APPLY"), Some(&9));
        assert_eq!(got.get("GET"), Some(&9));
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn an_object_is_complete_once_every_member_showed_it_once() {
        let t = Tracker::new(3);
        t.seen(0, "a");
        t.seen(0, "a");
        t.seen(1, "a");
        assert_eq!(
            *t.complete.borrow(),
            0,
            "a repeat in one member is not another member"
        );
        t.seen(2, "a");
        assert_eq!(*t.complete.borrow(), 1);
        assert_eq!(t.per_member(), vec![1, 1, 1]);
    }

    #[tokio::test]
    async fn a_waiter_learns_when_its_object_reached_every_member() -> Result<()> {
        let t = Tracker::new(2);
        let rx = t.wait_for("x")?;
        t.seen(0, "x");
        t.seen(1, "x");
        let at = tokio::time::timeout(Duration::from_secs(1), rx).await??;
        assert!(at <= Instant::now());
        t.wait_complete(1, Duration::from_secs(1)).await
    }

    #[tokio::test]
    async fn waiting_for_more_than_arrived_times_out_with_the_counts() {
        let t = Tracker::new(2);
        t.seen(0, "x");
        let err = t
            .wait_complete(1, Duration::from_millis(10))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("0 of 1"), "{err}");
        assert!(err.contains("[1, 0]"), "{err}");
    }

    #[test]
    fn cluster_writes_are_counted_within_the_window() {
        assert_eq!(count_between(&[3, 4, 9, 10, 11], 4, 10), 2);
        assert_eq!(count_between(&[], 0, 10), 0);
    }

    #[test]
    fn writes_are_the_sum_of_revision_deltas() {
        assert_eq!(rev_delta(&[(1, 10), (1, 20)], &[(1, 15), (1, 20)]), 5);
    }

    #[test]
    fn rewrites_are_counted_per_member() {
        let t = Tracker::new(2);
        t.rewrite(1);
        t.rewrite(1);
        t.rewrite(5);
        assert_eq!(t.rewrites(), vec![0, 2]);
    }

    #[test]
    fn the_table_puts_push_and_pull_side_by_side() {
        let push = Figures {
            mode: Mode::Push,
            members: 10,
            objects: 1000,
            bulk_all: Duration::from_secs(20),
            bulk: Usage {
                readable: true,
                wall: 20.0,
                host_cpu: 10.0,
                ..Usage::default()
            },
            restart_writes: Some(0),
            ..Figures::default()
        };
        let pull = Figures {
            mode: Mode::Pull,
            bulk_all: Duration::from_secs(25),
            bulk: Usage {
                agents: Some(AgentUsage {
                    count: 10,
                    cpu_sum: 7.5,
                    cpu_max: 0.9,
                    rss_sum: 200 << 20,
                    rss_max: 21 << 20,
                    hwm_max: 30 << 20,
                }),
                ..push.bulk
            },
            ..push.clone()
        };
        let t = table(&[push, pull]);
        let row = |name: &str| {
            t.lines()
                .find(|l| l.starts_with(name))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        };
        let header: Vec<&str> = t.lines().next().unwrap_or("").split_whitespace().collect();
        assert_eq!(header, ["push", "pull"], "{t}");
        assert!(
            row("bulk: every copy in every member").ends_with("20.00 s 25.00 s"),
            "{t}"
        );
        assert!(row("bulk: member copies/s").ends_with("500 400"), "{t}");
        assert!(
            row("bulk: host cpu").ends_with("10.0 s (50%) 10.0 s (50%)"),
            "{t}"
        );
        assert!(
            row("bulk: agents cpu sum / busiest").ends_with("- 7.5 s / 0.9 s"),
            "{t}"
        );
        assert!(
            row("agents RSS sum / max").ends_with("- 200.0 MiB / 21.0 MiB"),
            "{t}"
        );
        assert!(row("restart: member writes").ends_with("0 0"), "{t}");
    }

    #[test]
    fn bench_configmaps_carry_the_watched_label() -> Result<()> {
        let v: Value = serde_json::from_slice(&configmap("c"))?;
        assert_eq!(v["metadata"]["labels"][LABEL_KEY], "1");
        assert_eq!(v["metadata"]["namespace"], NAMESPACE);
        Ok(())
    }
}
