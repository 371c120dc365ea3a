//! `bench api`: API throughput and latency against any Kubernetes API
//! endpoint (SPEC §5). In a fresh namespace `bench-XXXXXX` it runs, in this
//! order:
//!
//! - `create`: N ConfigMaps with 1 KiB of data each, from C concurrent clients;
//! - `get`: 3·N GETs of those objects, C clients;
//! - `update`: a read-modify-write of each object (GET, change, PUT with the
//!   resourceVersion read; a 409 Conflict starts over), C clients;
//! - `patch`: a JSON merge patch of each object, C clients;
//! - `list`, `list-selector`, `list-paged`: one client listing the whole
//!   namespace, the tenth of it selected by a label, and the whole namespace
//!   in pages of 500 (one operation = every page);
//! - `watch`: W watchers of one object; one writer patches it E times,
//!   stamping the wall-clock time into the object just before each write;
//!   each watcher records receive − stamp. The writer waits for every
//!   watcher to see an event before the next write, so the figure is the
//!   delivery latency of one write to W watchers (it includes the write's
//!   own commit; the write latency is printed beside it). The note also has
//!   the fan-out: each receive − the first watcher's receive of that write,
//!   i.e. the server's delivery to all W watchers without the commit;
//! - `apply-create`: N server-side applies (PATCH
//!   `application/apply-patch+yaml` with a JSON body, `fieldManager=bench`,
//!   `force=true`, as the federation applies member copies) each creating
//!   another 1-KiB ConfigMap, C clients;
//! - `apply-update`: the same N applies again with one key changed, C
//!   clients (last, so the other scenarios see the namespace as before).
//!
//! `only` picks scenarios by name or group (`list` is the three lists,
//! `apply` both applies); `get`, `update`, `patch` and the lists need the
//! objects of `create`, which then runs too.
//!
//! With a server process to read (`--start` or `--server-pid`) each line
//! also has the CPU seconds the server spent in that scenario, and the end
//! has its peak RSS and the memory per stored object: RSS growth over the
//! create scenario divided by N, less the object's JSON size.
//!
//! Requests are raw HTTP with pre-serialised JSON bodies (see
//! [`crate::client`]); the client runs on the same machine as the server.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use futures::TryStreamExt;
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::WatchEvent;
use rand::Rng;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::client;
use crate::procfs::{Process, Sample, mib};
use crate::stats::{Latencies, Summary, ms};

/// What to run.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// Concurrent clients for create, get, update and patch.
    pub concurrency: usize,
    /// ConfigMaps stored (N).
    pub objects: usize,
    /// Watchers in the watch scenario (W).
    pub watchers: usize,
    /// Writes observed by the watchers (E).
    pub watch_events: usize,
    /// Repetitions of each list scenario.
    pub list_repeats: usize,
    /// Leave the namespace and its objects in place at the end.
    pub keep: bool,
    /// The scenarios to run, by name or group (`list`, `apply`); empty: all.
    pub only: Vec<String>,
}

/// Every scenario, in the order run.
pub const SCENARIOS: [&str; 10] = [
    "create",
    "get",
    "update",
    "patch",
    "list",
    "list-selector",
    "list-paged",
    "watch",
    "apply-create",
    "apply-update",
];

impl ApiOptions {
    /// Whether scenario `name` runs: every one when `only` is empty, else
    /// those named there or in a named group (`list` also selects
    /// `list-selector` and `list-paged`, `apply` the two applies), and
    /// `create` whenever a scenario that reads its objects runs.
    pub fn runs(&self, name: &str) -> bool {
        let named = |n: &str| {
            self.only.iter().any(|o| {
                o == n
                    || n.strip_prefix(o.as_str())
                        .is_some_and(|rest| rest.starts_with('-'))
            })
        };
        if self.only.is_empty() || named(name) {
            return true;
        }
        name == "create"
            && [
                "get",
                "update",
                "patch",
                "list",
                "list-selector",
                "list-paged",
            ]
            .into_iter()
            .any(named)
    }

    /// Refuse an `only` entry that names no scenario.
    pub fn check_only(&self) -> Result<()> {
        for o in &self.only {
            let known = SCENARIOS.iter().any(|s| {
                s == o
                    || s.strip_prefix(o.as_str())
                        .is_some_and(|r| r.starts_with('-'))
            });
            if !known {
                bail!(
                    "--only {o}: no such scenario (known: {})",
                    SCENARIOS.join(", ")
                );
            }
        }
        Ok(())
    }
}

/// The result of one scenario.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    /// Its name (`create`, `get`, …).
    pub name: &'static str,
    /// Throughput and latency.
    pub summary: Summary,
    /// Server CPU seconds spent during it, if a server process is read.
    pub server_cpu: Option<f64>,
    /// Anything else worth printing (conflicts, pages, missed events).
    pub note: String,
}

/// The figures of a whole run.
#[derive(Debug, Clone, Default)]
pub struct ApiReport {
    /// One per scenario, in the order run.
    pub scenarios: Vec<ScenarioResult>,
    /// Server memory figures, if a server process is read.
    pub memory: Option<MemoryReport>,
}

/// Server memory figures.
#[derive(Debug, Clone, Copy)]
pub struct MemoryReport {
    /// RSS before the create scenario.
    pub rss_before: u64,
    /// RSS after the create scenario.
    pub rss_after: u64,
    /// Objects stored between the two readings.
    pub objects: usize,
    /// Average size of a stored object's JSON as the server returns it.
    pub json_bytes: f64,
    /// Peak RSS (VmHWM) at the end of the run.
    pub hwm: u64,
}

impl MemoryReport {
    /// RSS growth per object.
    pub fn rss_per_object(&self) -> f64 {
        (self.rss_after as f64 - self.rss_before as f64) / self.objects.max(1) as f64
    }

    /// RSS growth per object beyond its JSON size.
    pub fn overhead_per_object(&self) -> f64 {
        self.rss_per_object() - self.json_bytes
    }
}

/// The printed header of the scenario table.
pub fn table_header() -> String {
    format!(
        "{:<14} {:>7} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}  notes",
        "scenario", "ops", "secs", "ops/s", "p50 ms", "p99 ms", "max ms", "srv CPU s"
    )
}

impl ScenarioResult {
    /// One row of the scenario table.
    pub fn row(&self) -> String {
        let s = &self.summary;
        let msf = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1000.0);
        format!(
            "{:<14} {:>7} {:>8.3} {:>10.1} {:>10} {:>10} {:>10} {:>10}  {}",
            self.name,
            s.ops,
            s.elapsed.as_secs_f64(),
            s.ops_per_sec,
            msf(s.p50),
            msf(s.p99),
            msf(s.max),
            self.server_cpu
                .map(|c| format!("{c:.2}"))
                .unwrap_or_else(|| "-".into()),
            self.note
        )
    }
}

/// 1 KiB of data for each ConfigMap.
fn payload() -> String {
    "x".repeat(1024)
}

fn object_name(i: usize) -> String {
    format!("cm-{i:06}")
}

/// Label groups: object i is in `g{i % GROUPS}`; the selector list reads one.
const GROUPS: usize = 10;

/// Run every scenario against `client`; `process` is the server to read, if any.
pub async fn run(
    client: &Client,
    process: Option<&Process>,
    opts: &ApiOptions,
) -> Result<ApiReport> {
    if opts.concurrency == 0 || opts.objects == 0 {
        bail!("--concurrency and --objects must be at least 1");
    }
    opts.check_only()?;
    let suffix: u32 = rand::rng().random_range(0..0xff_ffff);
    let ns = format!("bench-{suffix:06x}");
    client::post_json(
        client,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            .to_string()
            .into_bytes(),
    )
    .await?
    .expect(StatusCode::CREATED, "creating the bench namespace")?;
    eprintln!("api: namespace {ns}");

    let result = scenarios(client, process, opts, &ns).await;
    if !opts.keep {
        eprintln!("api: deleting namespace {ns}");
        if let Err(e) = client::delete(client, &format!("/api/v1/namespaces/{ns}")).await {
            eprintln!("api: could not delete namespace {ns}: {e:#}");
        }
    }
    result
}

/// Measures one scenario's server CPU.
struct CpuMeter<'a> {
    process: Option<&'a Process>,
    start: Option<Sample>,
}

impl<'a> CpuMeter<'a> {
    fn start(process: Option<&'a Process>) -> Self {
        Self {
            process,
            start: process.and_then(|p| p.sample().ok()),
        }
    }

    fn seconds(&self) -> Option<f64> {
        let now = self.process?.sample().ok()?;
        Some(now.cpu_seconds - self.start?.cpu_seconds)
    }
}

async fn scenarios(
    client: &Client,
    process: Option<&Process>,
    opts: &ApiOptions,
    ns: &str,
) -> Result<ApiReport> {
    let mut report = ApiReport::default();
    let coll = client::configmaps(ns);
    let n = opts.objects;
    let c = opts.concurrency;
    println!("{}", table_header());

    // create
    let json_bytes = Arc::new(AtomicUsize::new(0));
    let (mut rss_before, mut rss_after) = (None, None);
    if opts.runs("create") {
        rss_before = process.and_then(|p| p.sample().ok());
        let cpu = CpuMeter::start(process);
        let (lat, elapsed) = {
            let (client, coll, json_bytes) = (client.clone(), coll.clone(), json_bytes.clone());
            let data = Arc::new(payload());
            run_clients("create", c, n, move |i| {
                let (client, coll, json_bytes, data) = (
                    client.clone(),
                    coll.clone(),
                    json_bytes.clone(),
                    data.clone(),
                );
                async move {
                    let body = json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": object_name(i),
                                     "labels": {"bench-group": format!("g{}", i % GROUPS)}},
                        "data": {"payload": *data, "counter": "0"}
                    });
                    let r = client::post_json(&client, &coll, body.to_string().into_bytes())
                        .await?
                        .expect(StatusCode::CREATED, "create")?;
                    json_bytes.fetch_add(r.body.len(), Ordering::Relaxed);
                    Ok(())
                }
            })
            .await?
        };
        report.push(ScenarioResult {
            name: "create",
            summary: lat.summary(elapsed),
            server_cpu: cpu.seconds(),
            note: "1 KiB data".into(),
        });
        rss_after = process.and_then(|p| p.sample().ok());
    }

    // get
    if opts.runs("get") {
        let cpu = CpuMeter::start(process);
        let (lat, elapsed) = {
            let (client, coll) = (client.clone(), coll.clone());
            run_clients("get", c, 3 * n, move |i| {
                let uri = format!("{coll}/{}", object_name(i % n));
                let client = client.clone();
                async move {
                    client::get(&client, &uri)
                        .await?
                        .expect(StatusCode::OK, "get")?;
                    Ok(())
                }
            })
            .await?
        };
        report.push(ScenarioResult {
            name: "get",
            summary: lat.summary(elapsed),
            server_cpu: cpu.seconds(),
            note: String::new(),
        });
    }

    // update (read-modify-write)
    if opts.runs("update") {
        let conflicts = Arc::new(AtomicUsize::new(0));
        let cpu = CpuMeter::start(process);
        let (lat, elapsed) = {
            let (client, coll, conflicts) = (client.clone(), coll.clone(), conflicts.clone());
            run_clients("update", c, n, move |i| {
                let uri = format!("{coll}/{}", object_name(i));
                let (client, conflicts) = (client.clone(), conflicts.clone());
                async move { read_modify_write(&client, &uri, &conflicts).await }
            })
            .await?
        };
        report.push(ScenarioResult {
            name: "update",
            summary: lat.summary(elapsed),
            server_cpu: cpu.seconds(),
            note: format!(
                "GET+PUT with resourceVersion; {} conflicts retried",
                conflicts.load(Ordering::Relaxed)
            ),
        });
    }

    // merge patch
    if opts.runs("patch") {
        let cpu = CpuMeter::start(process);
        let (lat, elapsed) = {
            let (client, coll) = (client.clone(), coll.clone());
            run_clients("patch", c, n, move |i| {
                let uri = format!("{coll}/{}", object_name(i));
                let client = client.clone();
                async move {
                    let body = json!({"data": {"patched": i.to_string()}});
                    client::merge_patch(&client, &uri, body.to_string().into_bytes())
                        .await?
                        .expect(StatusCode::OK, "merge patch")?;
                    Ok(())
                }
            })
            .await?
        };
        report.push(ScenarioResult {
            name: "patch",
            summary: lat.summary(elapsed),
            server_cpu: cpu.seconds(),
            note: "application/merge-patch+json".into(),
        });
    }

    // lists
    let repeats = opts.list_repeats.max(1);
    let selector = "bench-group=g3";
    let selected = (0..n).filter(|i| i % GROUPS == 3).count();
    // Only the bench's own ConfigMaps are counted: the namespace's
    // kube-root-ca.crt is published by the server's own controller (as
    // kube-controller-manager's) whenever it gets to it, even between two
    // lists of one scenario.
    for (name, sel, limit) in [
        ("list", None, None),
        ("list-selector", Some(selector), None),
        ("list-paged", None, Some(500)),
    ] {
        if !opts.runs(name) {
            continue;
        }
        let want = if sel.is_some() { selected } else { n };
        let cpu = CpuMeter::start(process);
        let mut lat = Latencies::new();
        let mut pages = 0;
        let mut bytes = 0;
        let started = Instant::now();
        for _ in 0..repeats {
            let t0 = Instant::now();
            let items = match limit {
                Some(limit) => {
                    let (items, p) = client::list_paged(client, &coll, sel, limit).await?;
                    pages = p;
                    count_bench_items(&items)
                }
                None => {
                    let uri = match sel {
                        Some(s) => format!("{coll}?labelSelector={}", client::query_escape(s)),
                        None => coll.clone(),
                    };
                    let r = client::get(client, &uri)
                        .await?
                        .expect(StatusCode::OK, "list")?;
                    lat.record(t0.elapsed());
                    bytes = r.body.len();
                    let list: Value =
                        serde_json::from_slice(&r.body).context("list body is not JSON")?;
                    count_bench_items(
                        list.get("items")
                            .and_then(Value::as_array)
                            .map_or(&[], |v| v),
                    )
                }
            };
            if limit.is_some() {
                lat.record(t0.elapsed());
            }
            if items != want {
                bail!("{name}: {items} items, expected {want}");
            }
        }
        let note = match limit {
            Some(l) => format!("{want} items in {pages} pages of {l}"),
            None => format!("{want} items, {:.1} MiB", bytes as f64 / 1048576.0),
        };
        report.push(ScenarioResult {
            name,
            summary: lat.summary(started.elapsed()),
            server_cpu: cpu.seconds(),
            note,
        });
    }

    // watch
    if opts.runs("watch") && opts.watchers > 0 && opts.watch_events > 0 {
        let cpu = CpuMeter::start(process);
        let w = watch_latency(client, ns, opts.watchers, opts.watch_events).await?;
        report.push(ScenarioResult {
            name: "watch",
            summary: w.delivery.summary(w.elapsed),
            server_cpu: cpu.seconds(),
            note: format!(
                "{} watchers x {} writes; {} deliveries missed; fan-out (first to each watcher) p50 {} p99 {}; write p50 {} p99 {}; watchers established in {:.1} s",
                opts.watchers,
                opts.watch_events,
                w.missed,
                ms(w.fanout.percentile(50.0).unwrap_or_default()),
                ms(w.fanout.percentile(99.0).unwrap_or_default()),
                ms(w.writes.percentile(50.0).unwrap_or_default()),
                ms(w.writes.percentile(99.0).unwrap_or_default()),
                w.establish.as_secs_f64()
            ),
        });
    }

    if let (Some(before), Some(after), Some(end)) =
        (rss_before, rss_after, process.and_then(|p| p.sample().ok()))
    {
        report.memory = Some(MemoryReport {
            rss_before: before.rss_bytes,
            rss_after: after.rss_bytes,
            objects: n,
            json_bytes: json_bytes.load(Ordering::Relaxed) as f64 / n as f64,
            hwm: end.hwm_bytes,
        });
    }

    // server-side apply: last, so the objects it adds change none of the
    // figures above.
    for (name, counter) in [("apply-create", 0), ("apply-update", 1)] {
        if !opts.runs(name) {
            continue;
        }
        let cpu = CpuMeter::start(process);
        let (lat, elapsed) = {
            let (client, coll) = (client.clone(), coll.clone());
            let data = Arc::new(payload());
            let want = if counter == 0 {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            run_clients(name, c, n, move |i| {
                let (client, coll, data) = (client.clone(), coll.clone(), data.clone());
                async move {
                    let uri = format!("{coll}/{}?fieldManager=bench&force=true", apply_name(i));
                    let body = applied_config_map(i, &data, counter);
                    client::apply_patch(&client, &uri, body.to_string().into_bytes())
                        .await?
                        .expect(want, name)?;
                    Ok(())
                }
            })
            .await?
        };
        report.push(ScenarioResult {
            name,
            summary: lat.summary(elapsed),
            server_cpu: cpu.seconds(),
            note: if counter == 0 {
                "apply-patch+yaml (JSON body), force; creates 1 KiB ConfigMaps".into()
            } else {
                "apply-patch+yaml (JSON body), force; one key changed".into()
            },
        });
    }
    Ok(report)
}

/// The name of the i-th ConfigMap of the apply scenarios.
fn apply_name(i: usize) -> String {
    format!("ap-{i:06}")
}

/// The configuration the apply scenarios apply to the i-th ConfigMap:
/// 1 KiB of data and a `counter` key, the one the update changes.
fn applied_config_map(i: usize, data: &str, counter: u32) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": apply_name(i),
                     "labels": {"bench-apply": format!("g{}", i % GROUPS)}},
        "data": {"payload": data, "counter": counter.to_string()}
    })
}

impl ApiReport {
    fn push(&mut self, r: ScenarioResult) {
        println!("{}", r.row());
        self.scenarios.push(r);
    }

    /// The memory lines printed at the end.
    pub fn memory_lines(&self) -> Vec<String> {
        let Some(m) = self.memory else {
            return vec!["memory: no server process to read (use --start or --server-pid)".into()];
        };
        vec![
            format!(
                "memory: server RSS {} before storing {} objects, {} after: {:.0} bytes per object; JSON {:.0} bytes per object; overhead beyond JSON {:.0} bytes per object",
                mib(m.rss_before),
                m.objects,
                mib(m.rss_after),
                m.rss_per_object(),
                m.json_bytes,
                m.overhead_per_object()
            ),
            format!("memory: server peak RSS (VmHWM) at the end {}", mib(m.hwm)),
        ]
    }
}

/// How many of `items` the bench wrote (those with its `bench-group` label).
fn count_bench_items(items: &[Value]) -> usize {
    items
        .iter()
        .filter(|i| i.pointer("/metadata/labels/bench-group").is_some())
        .count()
}

/// GET the object, change `data.counter`, PUT it back with the
/// resourceVersion read; on 409 Conflict, start over.
async fn read_modify_write(client: &Client, uri: &str, conflicts: &AtomicUsize) -> Result<()> {
    for _ in 0..100 {
        let mut obj = client::get(client, uri)
            .await?
            .expect(StatusCode::OK, "get for update")?
            .json()?;
        let counter = obj
            .pointer("/data/counter")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        if let Some(data) = obj.get_mut("data").and_then(Value::as_object_mut) {
            data.insert("counter".into(), Value::String((counter + 1).to_string()));
        }
        let r = client::put_json(client, uri, obj.to_string().into_bytes()).await?;
        match r.status {
            StatusCode::OK => return Ok(()),
            StatusCode::CONFLICT => {
                conflicts.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                r.expect(StatusCode::OK, "update")?;
            }
        }
    }
    bail!("{uri}: 100 conflicts in a row")
}

/// Run `ops` operations `op(i)` for i in 0..ops on `concurrency` tasks;
/// returns every operation's latency and the wall time of the whole.
/// Prints progress to stderr every two seconds.
async fn run_clients<F, Fut>(
    name: &'static str,
    concurrency: usize,
    ops: usize,
    op: F,
) -> Result<(Latencies, Duration)>
where
    F: Fn(usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let progress = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            tick.tick().await;
            loop {
                tick.tick().await;
                eprintln!("api: {name}: {}/{ops}", done.load(Ordering::Relaxed));
            }
        })
    };
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        let (next, done, op) = (next.clone(), done.clone(), op.clone());
        tasks.spawn(async move {
            let mut lat = Latencies::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= ops {
                    return Ok::<_, anyhow::Error>(lat);
                }
                let t0 = Instant::now();
                op(i).await?;
                lat.record(t0.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    let mut all = Latencies::new();
    let mut first_err = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(lat)) => all.merge(lat),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
                // Stop the others: the scenario has failed.
                next.store(ops, Ordering::Relaxed);
            }
            Err(e) => {
                first_err.get_or_insert(anyhow::anyhow!("a client task failed: {e}"));
                next.store(ops, Ordering::Relaxed);
            }
        }
    }
    let elapsed = started.elapsed();
    progress.abort();
    if let Some(e) = first_err {
        return Err(e.context(format!("scenario {name}")));
    }
    Ok((all, elapsed))
}

/// What the watch scenario measured.
struct WatchFigures {
    /// receive − stamp, one per delivery.
    delivery: Latencies,
    /// receive − the first watcher's receive of the same write, one per
    /// delivery: the server's fan-out to every watcher, without the write's
    /// own commit.
    fanout: Latencies,
    /// Latency of the writer's patches.
    writes: Latencies,
    /// Wall time of the write phase.
    elapsed: Duration,
    /// Deliveries not seen within the wait for them.
    missed: usize,
    /// How long it took to establish every watch.
    establish: Duration,
}

/// Nanoseconds since the Unix epoch.
fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// Parse a stamp `SEQ:NANOS`.
fn parse_stamp(s: &str) -> Option<(usize, u128)> {
    let (seq, nanos) = s.split_once(':')?;
    Some((seq.parse().ok()?, nanos.parse().ok()?))
}

/// Shared state of the watch scenario.
struct WatchState {
    /// Per write: how many watchers have seen it.
    received: Vec<AtomicUsize>,
    /// Set when the last watcher sees a write.
    all_received: Notify,
    /// Watches whose response headers have arrived.
    established: AtomicUsize,
    /// Set when the last watch is established.
    all_established: Notify,
    delivery: Mutex<Latencies>,
    /// Per write: the earliest receive (nanoseconds since the epoch).
    first: Vec<AtomicU64>,
    /// Every (write, receive nanoseconds since the epoch).
    receipts: Mutex<Vec<(usize, u64)>>,
    watchers: usize,
}

async fn watch_latency(
    client: &Client,
    ns: &str,
    watchers: usize,
    events: usize,
) -> Result<WatchFigures> {
    let coll = client::configmaps(ns);
    let target = format!("{coll}/watch-target");
    let created = client::post_json(
        client,
        &coll,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "watch-target", "labels": {"bench-watch": "target"}},
               "data": {"stamp": "none"}})
        .to_string()
        .into_bytes(),
    )
    .await?
    .expect(StatusCode::CREATED, "creating the watch target")?
    .json()?;
    let rv = created
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .context("the watch target has no resourceVersion")?
        .to_owned();

    let state = Arc::new(WatchState {
        received: (0..events).map(|_| AtomicUsize::new(0)).collect(),
        all_received: Notify::new(),
        established: AtomicUsize::new(0),
        all_established: Notify::new(),
        delivery: Mutex::new(Latencies::new()),
        first: (0..events).map(|_| AtomicU64::new(u64::MAX)).collect(),
        receipts: Mutex::new(Vec::with_capacity(events * watchers)),
        watchers,
    });
    let uri = format!(
        "{coll}?watch=true&labelSelector={}&resourceVersion={rv}&timeoutSeconds=3600",
        client::query_escape("bench-watch=target")
    );
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..watchers {
        let (client, uri, state) = (client.clone(), uri.clone(), state.clone());
        tasks.spawn(async move { watcher(client, uri, state).await });
    }
    // Wait for every watch to be established (or one to fail).
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut last_print = Instant::now();
    while state.established.load(Ordering::Acquire) < watchers {
        if let Some(Ok(Err(e)) | Err(e)) = tasks
            .try_join_next()
            .map(|r| r.map_err(anyhow::Error::from))
        {
            return Err(e.context("a watcher failed before the writes"));
        }
        if Instant::now() > deadline {
            bail!(
                "only {} of {watchers} watches established in 300 s",
                state.established.load(Ordering::Acquire)
            );
        }
        if last_print.elapsed() > Duration::from_secs(2) {
            eprintln!(
                "api: watch: {}/{watchers} watches established",
                state.established.load(Ordering::Acquire)
            );
            last_print = Instant::now();
        }
        let _ = tokio::time::timeout(Duration::from_millis(200), state.all_established.notified())
            .await;
    }
    let establish = started.elapsed();
    eprintln!("api: watch: {watchers} watches established in {establish:?}");

    let mut writes = Latencies::new();
    let mut missed = 0;
    let started = Instant::now();
    for seq in 0..events {
        let body = json!({"data": {"stamp": format!("{seq}:{}", now_nanos())}});
        let t0 = Instant::now();
        client::merge_patch(client, &target, body.to_string().into_bytes())
            .await?
            .expect(StatusCode::OK, "patching the watch target")?;
        writes.record(t0.elapsed());
        let deadline = Instant::now() + Duration::from_secs(10);
        let counter = state.received.get(seq).context("event index")?;
        loop {
            let seen = counter.load(Ordering::Acquire);
            if seen >= watchers {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                missed += watchers - seen;
                break;
            }
            let _ = tokio::time::timeout(left, state.all_received.notified()).await;
        }
        if seq % 20 == 19 {
            eprintln!("api: watch: {}/{events} writes delivered", seq + 1);
        }
    }
    let elapsed = started.elapsed();
    tasks.abort_all();
    let delivery = std::mem::take(
        &mut *state
            .delivery
            .lock()
            .map_err(|_| anyhow::anyhow!("a watcher panicked"))?,
    );
    let mut fanout = Latencies::new();
    for (seq, at) in state
        .receipts
        .lock()
        .map_err(|_| anyhow::anyhow!("a watcher panicked"))?
        .iter()
    {
        if let Some(first) = state.first.get(*seq) {
            let first = first.load(Ordering::Acquire);
            fanout.record(Duration::from_nanos(at.saturating_sub(first)));
        }
    }
    Ok(WatchFigures {
        delivery,
        fanout,
        writes,
        elapsed,
        missed,
        establish,
    })
}

/// One watcher: establish the watch, then record receive − stamp of every
/// stamped modification.
async fn watcher(client: Client, uri: String, state: Arc<WatchState>) -> Result<()> {
    let req = http::Request::get(uri.as_str())
        .body(Vec::new())
        .context("building the watch request")?;
    let stream = client.request_events::<ConfigMap>(req).await?;
    if state.established.fetch_add(1, Ordering::AcqRel) + 1 == state.watchers {
        state.all_established.notify_one();
    }
    let mut stream = std::pin::pin!(stream);
    let mut mine = Latencies::new();
    while let Some(event) = stream.try_next().await? {
        let received = now_nanos();
        let WatchEvent::Modified(cm) = event else {
            continue;
        };
        let Some((seq, stamp)) = cm
            .data
            .as_ref()
            .and_then(|d| d.get("stamp"))
            .and_then(|s| parse_stamp(s))
        else {
            continue;
        };
        let nanos = received.saturating_sub(stamp);
        mine.record(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ));
        // Publish before counting, so the writer's wakeup sees the sample.
        if let Ok(mut all) = state.delivery.lock() {
            all.merge(std::mem::take(&mut mine));
        }
        let at = u64::try_from(received).unwrap_or(u64::MAX);
        if let Some(first) = state.first.get(seq) {
            first.fetch_min(at, Ordering::AcqRel);
        }
        if let Ok(mut r) = state.receipts.lock() {
            r.push((seq, at));
        }
        if let Some(counter) = state.received.get(seq)
            && counter.fetch_add(1, Ordering::AcqRel) + 1 == state.watchers
        {
            state.all_received.notify_one();
        }
    }
    bail!("a watch ended early")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip() {
        let s = format!("{}:{}", 7, 1_700_000_000_123_456_789u128);
        assert_eq!(parse_stamp(&s), Some((7, 1_700_000_000_123_456_789)));
        assert_eq!(parse_stamp("none"), None);
        assert_eq!(parse_stamp("x:1"), None);
    }

    #[test]
    fn only_the_bench_s_own_list_items_are_counted() {
        let items: Vec<Value> = serde_json::from_str(
            r#"[{"metadata":{"name":"cm-000001","labels":{"bench-group":"g1"}}},
                {"metadata":{"name":"kube-root-ca.crt"}},
                {"metadata":{"name":"cm-000002","labels":{"bench-group":"g2"}}}]"#,
        )
        .unwrap_or_default();
        assert_eq!(
            count_bench_items(&items),
            2,
            "kube-root-ca.crt is not the bench's"
        );
        assert_eq!(count_bench_items(&[]), 0);
    }

    #[test]
    fn only_selects_scenarios_by_name_or_group_and_create_for_its_readers() {
        let opts = |only: &[&str]| ApiOptions {
            concurrency: 1,
            objects: 1,
            watchers: 0,
            watch_events: 0,
            list_repeats: 1,
            keep: false,
            only: only.iter().map(|s| s.to_string()).collect(),
        };
        let run = |only: &[&str]| -> Vec<&str> {
            let o = opts(only);
            SCENARIOS.into_iter().filter(|s| o.runs(s)).collect()
        };
        assert_eq!(run(&[]), SCENARIOS.to_vec());
        assert_eq!(run(&["apply"]), ["apply-create", "apply-update"]);
        assert_eq!(run(&["apply-update"]), ["apply-update"]);
        assert_eq!(
            run(&["list"]),
            ["create", "list", "list-selector", "list-paged"]
        );
        assert_eq!(run(&["get", "watch"]), ["create", "get", "watch"]);
        assert!(opts(&["apply", "list-paged"]).check_only().is_ok());
        assert!(opts(&["app"]).check_only().is_err(), "not a group");
        assert!(opts(&["nope"]).check_only().is_err());
    }

    #[test]
    fn the_applied_configuration_changes_only_the_counter() {
        let data = payload();
        let a = applied_config_map(7, &data, 0);
        let b = applied_config_map(7, &data, 1);
        assert_eq!(a.pointer("/metadata/name"), Some(&json!("ap-000007")));
        assert_eq!(a.pointer("/data/payload"), b.pointer("/data/payload"));
        assert_eq!(b.pointer("/data/counter"), Some(&json!("1")));
        let (mut a, mut b) = (a, b);
        a["data"]["counter"] = json!("");
        b["data"]["counter"] = json!("");
        assert_eq!(a, b);
    }

    #[test]
    fn memory_overhead_is_growth_per_object_less_json() {
        let m = MemoryReport {
            rss_before: 100 << 20,
            rss_after: (100 << 20) + 3_000_000,
            objects: 1000,
            json_bytes: 1200.0,
            hwm: 200 << 20,
        };
        assert!((m.rss_per_object() - 3000.0).abs() < 1e-9);
        assert!((m.overhead_per_object() - 1800.0).abs() < 1e-9);
    }

    #[tokio::test]
    async fn every_operation_runs_once_and_is_timed() -> Result<()> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let (lat, _) = run_clients("t", 4, 50, move |i| {
            let s = s.clone();
            async move {
                if let Ok(mut v) = s.lock() {
                    v.push(i);
                }
                Ok(())
            }
        })
        .await?;
        assert_eq!(lat.summary(Duration::from_secs(1)).ops, 50);
        let mut v = seen
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .clone();
        v.sort_unstable();
        assert_eq!(v, (0..50).collect::<Vec<_>>());
        Ok(())
    }

    #[tokio::test]
    async fn a_failing_operation_fails_the_scenario() {
        let r = run_clients("t", 2, 10, |i| async move {
            if i == 3 {
                bail!("boom")
            }
            Ok(())
        })
        .await;
        let msg = r.err().map(|e| format!("{e:#}")).unwrap_or_default();
        assert!(msg.contains("boom") && msg.contains("scenario t"), "{msg}");
    }
}
