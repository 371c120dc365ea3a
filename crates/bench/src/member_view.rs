//! `bench member-view`: the cost of `federation@all` (SPEC §5 "member
//! view", issue 25 item 5). Starts a host and M member servers with
//! [`federation::start_servers`] (our own `ubernetes serve` as the
//! members), joins them, creates N ConfigMaps of 1 KiB directly in each
//! member's namespace `fedbench` (in parallel), then times merged lists
//! through `/apis/federation/v1beta1/clusters/-/proxy/api/v1/namespaces/
//! fedbench/configmaps`:
//!
//! - as kubectl sends them: `limit=500` pages walked to the end (the whole
//!   walk timed), as `-o json` (plain JSON) and as `kubectl get` (a
//!   Table); and unpaged (no `limit`);
//! - for the breakdown, the same lists straight from the members (one
//!   member, and every member at once, from the bench): what the members
//!   cost before the federation merges;
//! - one member hung (SIGSTOP, so its socket accepts and never answers),
//!   the unpaged and the paged list again: each must come at about the
//!   bound (5 s) with a `Warning` naming that member and without its items.
//!
//! The host's RSS is sampled every 10 ms during each scenario (before and
//! peak), and its CPU seconds per list read from `/proc`. Each walk counts
//! the items it got (every one must be there) with a parse that skips the
//! items' content, as a client must read the pages to follow `continue`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use http::{Request, StatusCode, header};
use kube::Client;
use kube::client::Body;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;

use crate::client::{self, query_escape};
use crate::federation::{self, FederationOptions, NAMESPACE};
use crate::procfs::{self, Process};
use crate::stats::Latencies;

/// `kubectl get`'s `Accept` (a Table, else JSON).
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
/// kubectl's default `--chunk-size`.
const KUBECTL_CHUNK: usize = 500;
/// The federation's per-member bound (`member_view::MEMBER_BOUND`).
const BOUND: Duration = Duration::from_secs(5);

/// What `bench member-view` does.
#[derive(Debug, Clone)]
pub struct MemberViewOptions {
    /// How to start the host and the members (`members`, `bin`, flags).
    pub federation: FederationOptions,
    /// ConfigMaps created in each member.
    pub per_member: usize,
    /// Repetitions of each healthy list scenario.
    pub repeats: usize,
    /// Repetitions of each list with a hung member.
    pub slow_repeats: usize,
}

/// One list as a client reads it: the items (or Table rows) and where to
/// go on.
#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(default)]
    items: Vec<IgnoredAny>,
    #[serde(default)]
    rows: Vec<IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct PageMeta {
    #[serde(default)]
    #[serde(rename = "continue")]
    next: Option<String>,
}

/// A whole list walked: items, pages, the `Warning` headers seen.
#[derive(Debug, Default)]
struct Walk {
    items: usize,
    pages: usize,
    warnings: Vec<String>,
}

/// How a list is asked for.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// `limit` (kubectl's chunk), or unpaged.
    limit: Option<usize>,
    /// The `Accept` header.
    accept: &'static str,
}

/// GET every page of `collection` as `shape` says.
async fn walk(c: &Client, collection: &str, shape: Shape) -> Result<Walk> {
    let mut out = Walk::default();
    let mut next: Option<String> = None;
    loop {
        let mut query = Vec::new();
        if let Some(l) = shape.limit {
            query.push(format!("limit={l}"));
        }
        if let Some(t) = &next {
            query.push(format!("continue={}", query_escape(t)));
        }
        let uri = if query.is_empty() {
            collection.to_string()
        } else {
            format!("{collection}?{}", query.join("&"))
        };
        let req = Request::get(&uri)
            .header(header::ACCEPT, shape.accept)
            .body(Body::empty())
            .context("building a request")?;
        let res = c.send(req).await?;
        let status = res.status();
        out.warnings.extend(
            res.headers()
                .get_all(header::WARNING)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        );
        let body = res.into_body().collect_bytes().await?;
        if status != StatusCode::OK {
            bail!(
                "GET {uri}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        let page: Page = serde_json::from_slice(&body).context("a list page")?;
        out.pages += 1;
        out.items += page.items.len() + page.rows.len();
        next = page.metadata.next.filter(|t| !t.is_empty());
        if next.is_none() {
            return Ok(out);
        }
    }
}

/// The host's memory over one scenario: RSS sampled every 10 ms.
struct RssProbe {
    before: u64,
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl RssProbe {
    fn start(process: &Process) -> Self {
        let before = process.sample().map_or(0, |s| s.rss_bytes);
        let peak = Arc::new(AtomicU64::new(before));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, k, s) = (process.clone(), peak.clone(), stop.clone());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                if let Ok(sample) = p.sample() {
                    k.fetch_max(sample.rss_bytes, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        Self {
            before,
            peak,
            stop,
            task,
        }
    }

    /// `(before, peak)` in bytes.
    async fn finish(self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
        (self.before, self.peak.load(Ordering::Relaxed))
    }
}

/// One row of the printed table.
struct Row {
    scenario: String,
    runs: usize,
    items: usize,
    pages: usize,
    p50: Duration,
    p99: Duration,
    /// Host CPU seconds per list, RSS before and peak (none for direct).
    host: Option<(f64, u64, u64)>,
}

/// Run `shape` `repeats` times through `list`, each walk checked by
/// `check`; the host measured when given.
async fn measure<F, Fut>(
    scenario: &str,
    repeats: usize,
    host: Option<&Process>,
    list: F,
    check: impl Fn(&Walk) -> Result<()>,
) -> Result<Row>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Walk>>,
{
    let probe = host.map(RssProbe::start);
    let cpu0 = host.and_then(|p| p.sample().ok()).map(|s| s.cpu_seconds);
    let mut lat = Latencies::new();
    let mut last = Walk::default();
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let w = list().await.with_context(|| scenario.to_string())?;
        lat.record(t.elapsed());
        check(&w).with_context(|| format!("{scenario}: {w:?}"))?;
        last = w;
    }
    let cpu1 = host.and_then(|p| p.sample().ok()).map(|s| s.cpu_seconds);
    let host_figures = match (probe, cpu0, cpu1) {
        (Some(probe), Some(a), Some(b)) => {
            let (before, peak) = probe.finish().await;
            Some(((b - a) / repeats.max(1) as f64, before, peak))
        }
        (Some(probe), _, _) => {
            probe.finish().await;
            None
        }
        _ => None,
    };
    let s = lat.summary(Duration::ZERO);
    eprintln!("member-view: {scenario}: p50 {:.3} s", s.p50.as_secs_f64());
    Ok(Row {
        scenario: scenario.to_string(),
        runs: s.ops,
        items: last.items,
        pages: last.pages,
        p50: s.p50,
        p99: s.p99,
        host: host_figures,
    })
}

/// The figures as a table.
fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "| {:<52} | {:>4} | {:>6} | {:>5} | {:>8} | {:>8} | {:>15} | {:>10} | {:>9} |\n",
        "scenario",
        "runs",
        "items",
        "pages",
        "p50 s",
        "p99 s",
        "host cpu s/list",
        "RSS before",
        "RSS peak"
    );
    out.push_str(&format!(
        "|{:-<54}|{:->6}|{:->8}|{:->7}|{:->10}|{:->10}|{:->15}|{:->12}|{:->11}|\n",
        "", "", "", "", "", "", "", "", ""
    ));
    for r in rows {
        let (cpu, before, peak) = match r.host {
            Some((cpu, before, peak)) => {
                (format!("{cpu:.3}"), procfs::mib(before), procfs::mib(peak))
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        out.push_str(&format!(
            "| {:<52} | {:>4} | {:>6} | {:>5} | {:>8.3} | {:>8.3} | {:>15} | {:>10} | {:>9} |\n",
            r.scenario,
            r.runs,
            r.items,
            r.pages,
            r.p50.as_secs_f64(),
            r.p99.as_secs_f64(),
            cpu,
            before,
            peak
        ));
    }
    out
}

/// Send SIGSTOP or SIGCONT to `pid` (the `kill` command: no unsafe here).
fn signal(pid: u32, sig: &str) -> Result<()> {
    let status = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .context("running kill")?;
    if !status.success() {
        bail!("kill -{sig} {pid} failed");
    }
    Ok(())
}

/// Start everything, measure, print the table, stop everything.
pub async fn run(opts: &MemberViewOptions) -> Result<()> {
    if !opts.federation.bin.exists() {
        bail!(
            "{} not found: `cargo build --release -p ubernetes -p bench` or pass --ubernetes-bin",
            opts.federation.bin.display()
        );
    }
    if opts.federation.members < 2 {
        bail!("--members must be at least 2 (one is hung in the last scenarios)");
    }
    let (mut host, mut members) = federation::start_servers(&opts.federation).await?;
    let result = scenarios(opts, &host, &members).await;
    if result.is_err() {
        eprintln!("member-view: host log tail:\n{}", host.log_tail(30));
    }
    host.kill9().await;
    for m in &mut members {
        m.kill9().await;
    }
    let rows = result?;
    println!("{}", table(&rows));
    Ok(())
}

async fn scenarios(
    opts: &MemberViewOptions,
    host: &crate::server::ManagedServer,
    members: &[crate::server::ManagedServer],
) -> Result<Vec<Row>> {
    let m = members.len();
    let n = opts.per_member;
    let timeout = opts.federation.timeout;
    let hc = host.client().await?;
    let mut mc = Vec::with_capacity(m);
    for p in members {
        mc.push(p.client().await?);
    }
    let t = Instant::now();
    federation::join(&hc, members, timeout).await?;
    eprintln!(
        "member-view: {m} members joined in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // N ConfigMaps straight into each member's namespace.
    let t = Instant::now();
    for c in &mc {
        federation::ensure(
            c,
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
            "namespace",
        )
        .await?;
    }
    let uri = client::configmaps(NAMESPACE);
    stream::iter((0..m).flat_map(|i| (0..n).map(move |j| (i, j))))
        .map(|(i, j)| {
            let (c, uri) = (&mc[i], &uri);
            async move {
                let r =
                    client::post_json(c, uri, federation::configmap(&format!("cm-{j}"))).await?;
                if r.status != StatusCode::CREATED && r.status != StatusCode::CONFLICT {
                    bail!("create in member-{i}: HTTP {}: {}", r.status, r.text());
                }
                Ok(())
            }
        })
        .buffer_unordered(opts.federation.concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await?;
    eprintln!(
        "member-view: {} ConfigMaps created in {:.1} s",
        n * m,
        t.elapsed().as_secs_f64()
    );
    // What each member holds there (the bench's and what its controllers
    // publish, e.g. kube-root-ca.crt): the count every merged list must give.
    let json = Shape {
        limit: None,
        accept: "application/json",
    };
    let mut per_member = Vec::with_capacity(m);
    for c in &mc {
        per_member.push(walk(c, &uri, json).await?.items);
    }
    let total: usize = per_member.iter().sum();

    let process = host.process();
    let hp = process.as_ref();
    let merged = format!("/apis/federation/v1beta1/clusters/-/proxy{uri}");
    let paged_json = Shape {
        limit: Some(KUBECTL_CHUNK),
        accept: "application/json",
    };
    let paged_table = Shape {
        limit: Some(KUBECTL_CHUNK),
        accept: TABLE_ACCEPT,
    };
    let complete = |want: usize| {
        move |w: &Walk| -> Result<()> {
            if w.items != want || !w.warnings.is_empty() {
                bail!("wanted {want} items and no warning");
            }
            Ok(())
        }
    };
    let mut rows = Vec::new();
    let r = opts.repeats;
    // The members alone, for the breakdown.
    let one = per_member.first().copied().unwrap_or(0);
    rows.push(
        measure(
            &format!("direct: one member, unpaged ({one} items)"),
            r,
            None,
            || walk(&mc[0], &uri, json),
            complete(one),
        )
        .await?,
    );
    rows.push(
        measure(
            &format!("direct: all {m} members at once, unpaged"),
            r,
            None,
            || async {
                let walks =
                    futures::future::try_join_all(mc.iter().map(|c| walk(c, &uri, json))).await?;
                Ok(Walk {
                    items: walks.iter().map(|w| w.items).sum(),
                    pages: walks.len(),
                    warnings: Vec::new(),
                })
            },
            complete(total),
        )
        .await?,
    );
    for (name, shape) in [
        ("federation@all: unpaged, JSON", json),
        ("federation@all: limit=500 walk, JSON (-o json)", paged_json),
        (
            "federation@all: limit=500 walk, Table (kubectl get)",
            paged_table,
        ),
    ] {
        rows.push(measure(name, r, hp, || walk(&hc, &merged, shape), complete(total)).await?);
    }

    // One member hung: SIGSTOP (its socket still accepts; nothing answers).
    let victim = m / 2;
    let name = format!("member-{victim}");
    let pid = members[victim]
        .process()
        .map(|p| p.pid())
        .context("the hung member's pid")?;
    let want = total - per_member[victim];
    let at_the_bound = |w: &Walk| -> Result<()> {
        let named = format!("cluster {name}: no answer within {}s", BOUND.as_secs());
        if w.items != want || w.warnings.len() != 1 || !w.warnings[0].contains(&named) {
            bail!("wanted {want} items and one Warning {named:?}");
        }
        Ok(())
    };
    signal(pid, "STOP")?;
    let mut slow = Vec::new();
    for (label, shape) in [
        ("unpaged, JSON", json),
        ("limit=500 walk, JSON", paged_json),
    ] {
        let row = measure(
            &format!("{name} hung (SIGSTOP): {label}"),
            opts.slow_repeats,
            hp,
            || walk(&hc, &merged, shape),
            at_the_bound,
        )
        .await;
        slow.push(row);
    }
    signal(pid, "CONT")?;
    for row in slow {
        rows.push(row?);
    }
    println!(
        "bench member-view: host + {m} members (our own ubernetes serve: {}), {n} ConfigMaps of 1 KiB per member ({total} items in {NAMESPACE} with what the members publish); per-member bound {} s",
        opts.federation.bin.display(),
        BOUND.as_secs()
    );
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_counted_without_reading_its_items() -> Result<()> {
        let page: Page = serde_json::from_str(
            r#"{"kind":"ConfigMapList","metadata":{"continue":"abc"},"items":[{"a":1},{"b":[2]}]}"#,
        )?;
        assert_eq!(page.items.len(), 2);
        assert_eq!(page.metadata.next.as_deref(), Some("abc"));
        let table: Page = serde_json::from_str(
            r#"{"kind":"Table","metadata":{},"columnDefinitions":[],"rows":[{"cells":[]}]}"#,
        )?;
        assert_eq!((table.items.len(), table.rows.len()), (0, 1));
        assert_eq!(table.metadata.next, None);
        Ok(())
    }

    #[test]
    fn the_table_prints_every_row_with_its_host_figures() {
        let rows = [
            Row {
                scenario: "direct".into(),
                runs: 3,
                items: 10,
                pages: 1,
                p50: Duration::from_millis(12),
                p99: Duration::from_millis(20),
                host: None,
            },
            Row {
                scenario: "merged".into(),
                runs: 3,
                items: 10,
                pages: 2,
                p50: Duration::from_millis(250),
                p99: Duration::from_millis(300),
                host: Some((0.125, 100 << 20, 150 << 20)),
            },
        ];
        let t = table(&rows);
        assert_eq!(t.lines().count(), 4, "{t}");
        assert!(t.contains("0.012") && t.contains("0.250"), "{t}");
        assert!(t.contains("0.125") && t.contains("150.0 MiB"), "{t}");
    }
}
