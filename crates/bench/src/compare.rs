//! `bench api --versus-kube`: our server against kube-apiserver on etcd, in
//! one run. The harness starts one etcd (3.5.30 from `../shared/kube`), then
//! in turn:
//!
//! 1. `ubernetes serve --etcd-servers URL --etcd-prefix /ubernetes` (the
//!    default, [`OursEngine::Etcd`]: the same store as kube's) or `ubernetes
//!    serve` on its embedded sled store ([`OursEngine::Sled`], SPEC §5's
//!    standalone comparison): every [`crate::api`] scenario, then the server
//!    is stopped;
//! 2. kube-apiserver 1.36 `--etcd-servers URL --etcd-prefix /registry`
//!    ([`crate::kube_apiserver`]): the same scenarios, then it is stopped;
//!
//! (`--kube-first` swaps the order, to see what the order costs: the second
//! run finds etcd holding the first one's objects under the other prefix)
//!
//! and prints one table with each figure and the ratio ours / kube per
//! scenario. One server runs at a time, so neither pays for the other's
//! idle work; both see the same machine, the same etcd process and the same
//! client. etcd's own CPU and memory are in neither figure.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::api::{self, ApiOptions, ApiReport};
use crate::etcd::{self, ManagedEtcd};
use crate::kube_apiserver::KubeApiserver;
use crate::procfs::mib;
use crate::server::{ManagedServer, ServerSpec};

/// The etcd prefix of `ubernetes serve` in the comparison.
pub const OUR_PREFIX: &str = "/ubernetes";
/// The etcd prefix of kube-apiserver in the comparison (its default).
pub const KUBE_PREFIX: &str = "/registry";

/// `ours / kube`, when both are figures and kube's is not zero.
pub fn ratio(ours: f64, kube: f64) -> Option<f64> {
    (ours.is_finite() && kube.is_finite() && kube > 0.0).then(|| ours / kube)
}

/// One scenario in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioRow {
    /// The scenario (`create`, `get`, …).
    pub name: &'static str,
    /// Throughput, ours and kube's (operations per second).
    pub ops_per_sec: (f64, f64),
    /// Median latency in milliseconds, ours and kube's.
    pub p50_ms: (f64, f64),
    /// 99th percentile latency in milliseconds, ours and kube's.
    pub p99_ms: (f64, f64),
    /// Server CPU seconds in the scenario, ours and kube's, when read.
    pub cpu_s: Option<(f64, f64)>,
}

impl RatioRow {
    /// Throughput ours / kube (above 1: we do more per second).
    pub fn throughput_ratio(&self) -> Option<f64> {
        ratio(self.ops_per_sec.0, self.ops_per_sec.1)
    }
    /// p50 ours / kube (below 1: we answer faster).
    pub fn p50_ratio(&self) -> Option<f64> {
        ratio(self.p50_ms.0, self.p50_ms.1)
    }
    /// p99 ours / kube (below 1: we answer faster).
    pub fn p99_ratio(&self) -> Option<f64> {
        ratio(self.p99_ms.0, self.p99_ms.1)
    }
    /// Server CPU ours / kube for the same work (below 1: we spend less).
    pub fn cpu_ratio(&self) -> Option<f64> {
        self.cpu_s.and_then(|(o, k)| ratio(o, k))
    }
}

/// The scenarios both runs have, in the order of ours.
pub fn compare(ours: &ApiReport, kube: &ApiReport) -> Vec<RatioRow> {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    ours.scenarios
        .iter()
        .filter_map(|o| {
            let k = kube.scenarios.iter().find(|k| k.name == o.name)?;
            Some(RatioRow {
                name: o.name,
                ops_per_sec: (o.summary.ops_per_sec, k.summary.ops_per_sec),
                p50_ms: (ms(o.summary.p50), ms(k.summary.p50)),
                p99_ms: (ms(o.summary.p99), ms(k.summary.p99)),
                cpu_s: o.server_cpu.zip(k.server_cpu),
            })
        })
        .collect()
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}"))
}

/// The printed comparison table (a header and one line per scenario).
pub fn ratio_table(rows: &[RatioRow]) -> Vec<String> {
    let mut out = vec![format!(
        "{:<14} {:>10} {:>10} {:>6}   {:>9} {:>9} {:>6}   {:>9} {:>9} {:>6}   {:>7} {:>7} {:>6}",
        "scenario",
        "ours op/s",
        "kube op/s",
        "ratio",
        "ours p50",
        "kube p50",
        "ratio",
        "ours p99",
        "kube p99",
        "ratio",
        "ours s",
        "kube s",
        "ratio"
    )];
    for r in rows {
        let (oc, kc) = r.cpu_s.map_or(("-".into(), "-".into()), |(o, k)| {
            (format!("{o:.2}"), format!("{k:.2}"))
        });
        out.push(format!(
            "{:<14} {:>10.1} {:>10.1} {:>6}   {:>9.3} {:>9.3} {:>6}   {:>9.3} {:>9.3} {:>6}   {:>7} {:>7} {:>6}",
            r.name,
            r.ops_per_sec.0,
            r.ops_per_sec.1,
            fmt_ratio(r.throughput_ratio()),
            r.p50_ms.0,
            r.p50_ms.1,
            fmt_ratio(r.p50_ratio()),
            r.p99_ms.0,
            r.p99_ms.1,
            fmt_ratio(r.p99_ratio()),
            oc,
            kc,
            fmt_ratio(r.cpu_ratio()),
        ));
    }
    out
}

/// Which store our server runs on in the comparison (kube-apiserver always
/// runs on the harness's etcd).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OursEngine {
    /// `--etcd-servers` on the harness's etcd, prefix [`OUR_PREFIX`]: the
    /// like-for-like comparison (the gate's).
    #[default]
    Etcd,
    /// The embedded sled store on a temporary data dir (the standalone
    /// server of SPEC §5); etcd then serves kube-apiserver only.
    Sled,
}

impl OursEngine {
    /// Its name as the flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Etcd => "etcd",
            Self::Sled => "sled",
        }
    }
}

/// Where the upstream binaries come from.
#[derive(Debug, Clone)]
pub struct VersusOptions {
    /// `kube.sh` (default: found as [`etcd::find_kube_sh`] does).
    pub kube_sh: Option<PathBuf>,
    /// The etcd binary (default: kube.sh's etcd 3.5.30).
    pub etcd_bin: Option<PathBuf>,
    /// Our server.
    pub server: ServerSpec,
    /// Measure kube-apiserver first (default: ours first).
    pub kube_first: bool,
}

/// The upstream binaries of `../shared/kube`, unpacked.
#[derive(Debug, Clone)]
pub struct Upstream {
    /// etcd (kube.sh's 3.5.30 unless `--etcd-bin`).
    pub etcd_bin: PathBuf,
    /// kube-apiserver 1.36.
    pub kube_bin: PathBuf,
}

impl Upstream {
    /// Find `kube.sh` and unpack its binaries; `None`, after printing a
    /// `SKIPPED:` line naming `what`, when there is no `../shared/kube`.
    pub async fn locate(versus: &VersusOptions, what: &str) -> Result<Option<Self>> {
        let Some(kube_sh) = versus.kube_sh.clone().or_else(etcd::find_kube_sh) else {
            println!(
                "SKIPPED: {what} needs ../shared/kube/kube.sh (the upstream \
                 kube-apiserver and etcd; pass --kube-sh or set UBERNETES_KUBE_SH): not found"
            );
            return Ok(None);
        };
        let bin_dir = etcd::unpack_kube_binaries(&kube_sh).await?;
        Ok(Some(Self {
            etcd_bin: versus
                .etcd_bin
                .clone()
                .unwrap_or_else(|| bin_dir.join("etcd")),
            kube_bin: bin_dir.join("kube-apiserver"),
        }))
    }
}

/// Run the comparison with ours on etcd ([`run_on`] with
/// [`OursEngine::Etcd`]).
pub async fn run(opts: &ApiOptions, versus: &VersusOptions) -> Result<ExitCode> {
    run_on(opts, versus, OursEngine::Etcd).await
}

/// Run the comparison with ours on `engine`. Exit code 2 and a `SKIPPED:`
/// line when there is no `../shared/kube`.
pub async fn run_on(
    opts: &ApiOptions,
    versus: &VersusOptions,
    engine: OursEngine,
) -> Result<ExitCode> {
    let Some(upstream) = Upstream::locate(versus, "bench api --versus-kube").await? else {
        return Ok(ExitCode::from(2));
    };
    let mut etcd = ManagedEtcd::start(upstream.etcd_bin).await?;
    let result = both_on(opts, versus, engine, &mut etcd, &upstream.kube_bin).await;
    etcd.stop().await;
    let (ours, kube) = result?;
    println!();
    println!(
        "bench api --versus-kube: ratio = ours / kube (throughput: above 1 is faster; latency and CPU: below 1 is better)"
    );
    for line in ratio_table(&compare(&ours, &kube)) {
        println!("{line}");
    }
    if let (Some(o), Some(k)) = (ours.memory, kube.memory) {
        println!(
            "memory: peak RSS (VmHWM) ours {} kube {} ratio {}; RSS growth per stored object ours {:.0} B kube {:.0} B",
            mib(o.hwm),
            mib(k.hwm),
            fmt_ratio(ratio(o.hwm as f64, k.hwm as f64)),
            o.rss_per_object(),
            k.rss_per_object()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Both runs on `etcd` (in the order `versus.kube_first` says); every
/// server is stopped (by PID) before returning. Returns (ours, kube).
pub async fn both(
    opts: &ApiOptions,
    versus: &VersusOptions,
    etcd: &mut ManagedEtcd,
    kube_bin: &Path,
) -> Result<(ApiReport, ApiReport)> {
    both_on(opts, versus, OursEngine::Etcd, etcd, kube_bin).await
}

/// [`both`] with ours on `engine` (kube-apiserver on `etcd` either way).
pub async fn both_on(
    opts: &ApiOptions,
    versus: &VersusOptions,
    engine: OursEngine,
    etcd: &mut ManagedEtcd,
    kube_bin: &Path,
) -> Result<(ApiReport, ApiReport)> {
    let url = etcd.url();
    println!(
        "bench api --versus-kube: {} first; ours on {}; etcd {} at {url}; concurrency {}, objects {}, watchers {} x {} writes, lists x {}",
        if versus.kube_first {
            "kube-apiserver"
        } else {
            "ubernetes"
        },
        engine.name(),
        etcd.bin().display(),
        opts.concurrency,
        opts.objects,
        opts.watchers,
        opts.watch_events,
        opts.list_repeats
    );

    if versus.kube_first {
        let kube = run_kube(opts, kube_bin, &url).await?;
        let ours = run_ours(opts, versus, engine, &url).await?;
        Ok((ours, kube))
    } else {
        let ours = run_ours(opts, versus, engine, &url).await?;
        let kube = run_kube(opts, kube_bin, &url).await?;
        Ok((ours, kube))
    }
}

/// `ubernetes serve --etcd-servers URL --etcd-prefix /ubernetes` (or on
/// sled, as `engine` says): start, measure, stop (also when the run
/// fails).
async fn run_ours(
    opts: &ApiOptions,
    versus: &VersusOptions,
    engine: OursEngine,
    url: &str,
) -> Result<ApiReport> {
    let mut spec = versus.server.clone();
    if engine == OursEngine::Etcd {
        spec.extra_args.extend([
            "--etcd-servers".to_string(),
            url.to_string(),
            "--etcd-prefix".to_string(),
            OUR_PREFIX.to_string(),
        ]);
    }
    let mut ours = ManagedServer::start(spec)
        .await
        .with_context(|| format!("starting ubernetes serve on {}", engine.name()))?;
    let process = ours.process();
    let store = match engine {
        OursEngine::Etcd => format!("--etcd-prefix {OUR_PREFIX}"),
        OursEngine::Sled => "on sled (its temporary data dir)".to_string(),
    };
    println!(
        "\n== ours: {} {} (pid {}), {store}",
        versus.server.bin.display(),
        ours.url(),
        process.as_ref().map_or(0, |p| p.pid())
    );
    let result = match ours.client().await {
        Ok(client) => {
            settle("ubernetes serve", process.as_ref()).await;
            api::run(&client, process.as_ref(), opts).await
        }
        Err(e) => Err(e),
    };
    ours.stop().await;
    let report = result.context("the run against ubernetes serve")?;
    for line in report.memory_lines() {
        println!("{line}");
    }
    Ok(report)
}

/// kube-apiserver `--etcd-servers URL --etcd-prefix /registry`: start,
/// measure, stop (also when the run fails).
async fn run_kube(opts: &ApiOptions, kube_bin: &Path, url: &str) -> Result<ApiReport> {
    let mut kube = KubeApiserver::start(kube_bin, url, KUBE_PREFIX)
        .await
        .context("starting kube-apiserver on the same etcd")?;
    let process = kube.process();
    println!(
        "\n== kube: {} {} (pid {}), --etcd-prefix {KUBE_PREFIX}",
        kube_bin.display(),
        kube.url(),
        process.as_ref().map_or(0, |p| p.pid())
    );
    let result = match kube.client().await {
        Ok(client) => {
            settle("kube-apiserver", process.as_ref()).await;
            api::run(&client, process.as_ref(), opts).await
        }
        Err(e) => Err(e),
    };
    kube.stop().await;
    let report = result.context("the run against kube-apiserver")?;
    for line in report.memory_lines() {
        println!("{line}");
    }
    Ok(report)
}

/// A server counts as settled below this share of one core.
const SETTLE_CPU: f64 = 0.05;
/// Over windows of this length.
const SETTLE_WINDOW: Duration = Duration::from_millis(500);
/// And is measured anyway after this long.
const SETTLE_MAX: Duration = Duration::from_secs(15);

/// Wait until the just-started server is idle (under 5 % of a core over
/// half a second; at most 15 s). Ready is not idle: kube-apiserver goes on
/// installing its bootstrap objects and building its OpenAPI documents for
/// seconds after `/readyz` says ok, and ours starts its controllers; a run
/// begun then measures that work too, differently in every run.
async fn settle(what: &str, process: Option<&crate::procfs::Process>) {
    let Some(process) = process else { return };
    let started = Instant::now();
    let Ok(mut last) = process.sample() else {
        return;
    };
    while started.elapsed() < SETTLE_MAX {
        tokio::time::sleep(SETTLE_WINDOW).await;
        let Ok(now) = process.sample() else { return };
        let busy = (now.cpu_seconds - last.cpu_seconds) / SETTLE_WINDOW.as_secs_f64();
        last = now;
        if busy < SETTLE_CPU {
            eprintln!(
                "compare: {what} idle after {:.1} s",
                started.elapsed().as_secs_f64()
            );
            return;
        }
    }
    eprintln!(
        "compare: {what} still busy after {:.0} s; measuring anyway",
        SETTLE_MAX.as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ScenarioResult;
    use crate::stats::Summary;

    fn scenario(
        name: &'static str,
        ops_per_sec: f64,
        p50_ms: u64,
        cpu: Option<f64>,
    ) -> ScenarioResult {
        ScenarioResult {
            name,
            summary: Summary {
                ops: 100,
                elapsed: Duration::from_secs(1),
                ops_per_sec,
                p50: Duration::from_millis(p50_ms),
                p99: Duration::from_millis(p50_ms * 4),
                max: Duration::from_millis(p50_ms * 10),
            },
            server_cpu: cpu,
            note: String::new(),
        }
    }

    #[test]
    fn a_ratio_needs_a_nonzero_peer() {
        assert_eq!(ratio(300.0, 150.0), Some(2.0));
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
        assert_eq!(ratio(0.0, 4.0), Some(0.0));
    }

    #[test]
    fn scenarios_are_paired_by_name_in_our_order() {
        let ours = ApiReport {
            scenarios: vec![
                scenario("create", 2000.0, 2, Some(1.0)),
                scenario("get", 8000.0, 1, Some(2.0)),
                scenario("watch", 50.0, 10, None),
            ],
            memory: None,
        };
        let kube = ApiReport {
            scenarios: vec![
                scenario("get", 4000.0, 2, Some(4.0)),
                scenario("create", 1000.0, 4, Some(4.0)),
            ],
            memory: None,
        };
        let rows = compare(&ours, &kube);
        let names: Vec<&str> = rows.iter().map(|r| r.name).collect();
        assert_eq!(names, ["create", "get"], "watch is in one run only");
        assert_eq!(rows[0].throughput_ratio(), Some(2.0));
        assert_eq!(rows[0].p50_ratio(), Some(0.5));
        assert_eq!(rows[0].p99_ratio(), Some(0.5));
        assert_eq!(rows[0].cpu_ratio(), Some(0.25));
        assert_eq!(rows[1].throughput_ratio(), Some(2.0));
        assert_eq!(rows[1].cpu_ratio(), Some(0.5));
    }

    #[test]
    fn the_table_prints_each_figure_and_its_ratio() {
        let ours = ApiReport {
            scenarios: vec![scenario("create", 1500.0, 3, None)],
            memory: None,
        };
        let kube = ApiReport {
            scenarios: vec![scenario("create", 1000.0, 6, Some(1.0))],
            memory: None,
        };
        let lines = ratio_table(&compare(&ours, &kube));
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("scenario"), "{}", lines[0]);
        let cols: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cols,
            [
                "create", "1500.0", "1000.0", "1.50", "3.000", "6.000", "0.50", "12.000", "24.000",
                "0.50", "-", "-", "-"
            ]
        );
    }
}
