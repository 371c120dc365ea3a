//! `bench gate`: the speed gate of the test command (issue 21 item 2). A
//! short `bench api --versus-kube`: five pairs, each the same small load
//! against `ubernetes serve` on etcd and against kube-apiserver 1.36 on the
//! same etcd ([`crate::compare::both`], one server at a time, the order
//! alternating between pairs), then per verb (create, get, update, patch,
//! list, watch) the median of the five throughput ratios ours / kube.
//!
//! The gate fails when a verb's median drops more than 30 % below the figure
//! recorded for that verb in `docs/benchmarks.md`, in a fenced block whose
//! info string is the block name (`gate`):
//!
//! ````text
//! ```gate
//! # verb  ratio   (comments and blank lines are ignored)
//! create  0.80
//! get     1.60
//! ```
//! ````
//!
//! Only ratios measured in the same run are compared, never absolute
//! times: a slower or busier machine slows both servers. The recorded
//! figures are written by `bench gate --write` (the medians of a run, in
//! place of the block's lines); nothing here hard-codes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use crate::api::ApiOptions;
use crate::compare::{self, Upstream, VersusOptions};
use crate::etcd::ManagedEtcd;

/// The verbs the gate judges, in the order printed.
pub const VERBS: [&str; 6] = ["create", "get", "update", "patch", "list", "watch"];

/// What to run and what to judge against.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// Pairs (ours + kube) to run; the median is taken over them.
    pub pairs: usize,
    /// The load of each run.
    pub api: ApiOptions,
    /// The servers and binaries (its `kube_first` is ignored: the order
    /// alternates, ours first in the odd pairs).
    pub versus: VersusOptions,
    /// The file holding the recorded figures (`docs/benchmarks.md`).
    pub figures: PathBuf,
    /// The info string of the fenced block holding them.
    pub block: String,
    /// How far below its recorded figure a verb's median may drop, in
    /// percent of the figure, before the gate fails.
    pub max_drop_percent: f64,
    /// Write the measured medians into the block instead of judging.
    pub write: bool,
}

/// The recorded figures: verb → ratio ours / kube.
pub type Figures = BTreeMap<String, f64>;

/// The line range of the block's content in `md`: the lines after the
/// opening fence (` ```NAME `) up to the closing fence.
fn block_lines(md: &str, block: &str) -> Result<(usize, usize)> {
    let lines: Vec<&str> = md.lines().collect();
    let open = lines
        .iter()
        .position(|l| l.trim_end() == format!("```{block}"))
        .with_context(|| format!("no fenced block ```{block} (the recorded figures)"))?;
    let close = lines[open + 1..]
        .iter()
        .position(|l| l.trim_end() == "```")
        .with_context(|| format!("the fenced block ```{block} is not closed"))?;
    Ok((open + 1, open + 1 + close))
}

/// Read the recorded figures from the fenced block `block` of `md`: one
/// `verb ratio` per line; `#` comments and blank lines are skipped. A
/// malformed line, a repeated verb, a ratio that is not a positive number
/// or an empty block is an error.
pub fn parse_figures(md: &str, block: &str) -> Result<Figures> {
    let (from, to) = block_lines(md, block)?;
    let mut figures = Figures::new();
    for (n, line) in md.lines().enumerate().take(to).skip(from) {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [verb, ratio] = fields[..] else {
            bail!("line {}: expected `verb ratio`, got {line:?}", n + 1);
        };
        let ratio: f64 = ratio
            .parse()
            .with_context(|| format!("line {}: {ratio:?} is not a number", n + 1))?;
        ensure!(
            ratio.is_finite() && ratio > 0.0,
            "line {}: the ratio of {verb} must be a positive number",
            n + 1
        );
        ensure!(
            figures.insert(verb.to_string(), ratio).is_none(),
            "line {}: {verb} is recorded twice",
            n + 1
        );
    }
    ensure!(!figures.is_empty(), "the block ```{block} records no verb");
    Ok(figures)
}

/// `md` with the content of block `block` replaced by `content` (its
/// fences and everything around them kept).
pub fn replace_block(md: &str, block: &str, content: &[String]) -> Result<String> {
    let (from, to) = block_lines(md, block)?;
    let lines: Vec<&str> = md.lines().collect();
    let mut out: Vec<&str> = lines[..from].to_vec();
    out.extend(content.iter().map(String::as_str));
    out.extend(&lines[to..]);
    let mut text = out.join("\n");
    if md.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// The block's lines for `medians`, in [`VERBS`] order, with a comment
/// saying how they were measured.
pub fn render_figures(medians: &Figures, how: &str) -> Vec<String> {
    let mut lines = vec![
        "# verb  ratio: median throughput ours / kube-apiserver, same etcd".to_string(),
        format!("# written by `bench gate --write`: {how}"),
    ];
    lines.extend(
        VERBS
            .iter()
            .filter_map(|v| medians.get(*v).map(|r| format!("{v:<7} {r:.2}"))),
    );
    lines
}

/// The median of `values` (the mean of the middle two for an even count);
/// `None` when empty or when a value is not a number.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

/// The lowest median that passes: `recorded` less `max_drop_percent` % of it.
pub fn floor(recorded: f64, max_drop_percent: f64) -> f64 {
    recorded * (1.0 - max_drop_percent / 100.0)
}

/// One verb judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The verb.
    pub verb: String,
    /// Each pair's throughput ratio ours / kube.
    pub ratios: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// The recorded figure.
    pub recorded: f64,
    /// The lowest passing median.
    pub floor: f64,
}

impl Verdict {
    /// Whether the median is at or above the floor (a higher ratio is a
    /// faster server of ours; rising above the figure always passes).
    pub fn passed(&self) -> bool {
        self.median >= self.floor
    }
}

/// Judge every recorded verb by the median of its measured ratios. A
/// recorded verb that was not measured is an error (the gate would
/// otherwise pass on nothing).
pub fn judge(
    measured: &BTreeMap<String, Vec<f64>>,
    recorded: &Figures,
    max_drop_percent: f64,
) -> Result<Vec<Verdict>> {
    let mut verdicts = Vec::new();
    for verb in VERBS
        .iter()
        .map(|v| v.to_string())
        .filter(|v| recorded.contains_key(v))
        .chain(
            recorded
                .keys()
                .filter(|v| !VERBS.contains(&v.as_str()))
                .cloned(),
        )
    {
        let ratios = measured.get(&verb).cloned().unwrap_or_default();
        let median = median(&ratios)
            .with_context(|| format!("{verb} is recorded but the gate measured no ratio for it"))?;
        let recorded = recorded[&verb];
        verdicts.push(Verdict {
            floor: floor(recorded, max_drop_percent),
            verb,
            ratios,
            median,
            recorded,
        });
    }
    Ok(verdicts)
}

/// The printed verdict table, one `gate:` line per verb.
pub fn verdict_lines(verdicts: &[Verdict], max_drop_percent: f64) -> Vec<String> {
    let mut out = vec![format!(
        "gate: {:<7} {:<34} {:>6} {:>8} {:>6}  verdict",
        "verb", "ratio ours/kube per pair", "median", "recorded", "floor"
    )];
    for v in verdicts {
        let pairs: Vec<String> = v.ratios.iter().map(|r| format!("{r:.2}")).collect();
        out.push(format!(
            "gate: {:<7} {:<34} {:>6.2} {:>8.2} {:>6.2}  {}",
            v.verb,
            pairs.join(" "),
            v.median,
            v.recorded,
            v.floor,
            if v.passed() {
                "ok".to_string()
            } else {
                format!("FAIL (more than {max_drop_percent:.0} % below the recorded figure)")
            }
        ));
    }
    out
}

/// The failure message for the failed verbs; `None` when all passed.
pub fn failure(verdicts: &[Verdict], max_drop_percent: f64, source: &str) -> Option<String> {
    let failed: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.passed())
        .map(|v| {
            format!(
                "{}: median ratio {:.2} is more than {max_drop_percent:.0} % below the recorded {:.2} (floor {:.2})",
                v.verb, v.median, v.recorded, v.floor
            )
        })
        .collect();
    (!failed.is_empty()).then(|| format!("{}; recorded in {source}", failed.join("; ")))
}

/// Run the gate: exit 0 when every verb passes (or after `--write`), 1
/// when one fails, 2 (after a `SKIPPED:` line) without `../shared/kube`.
pub async fn run(opts: &GateOptions) -> Result<ExitCode> {
    ensure!(opts.pairs >= 1, "--pairs must be at least 1");
    let source = format!("{} (block ```{})", opts.figures.display(), opts.block);
    let md = std::fs::read_to_string(&opts.figures)
        .with_context(|| format!("reading {}", opts.figures.display()))?;
    // Read the figures before measuring: a broken table fails at once.
    let recorded = if opts.write {
        block_lines(&md, &opts.block).with_context(|| format!("in {source}"))?;
        None
    } else {
        Some(parse_figures(&md, &opts.block).with_context(|| format!("in {source}"))?)
    };
    let Some(upstream) = Upstream::locate(&opts.versus, "bench gate").await? else {
        return Ok(ExitCode::from(2));
    };
    let started = Instant::now();
    let mut etcd = ManagedEtcd::start(upstream.etcd_bin.clone()).await?;
    let result = pairs(opts, &mut etcd, &upstream.kube_bin).await;
    etcd.stop().await;
    let measured = result?;
    let secs = started.elapsed().as_secs_f64();
    let load = load_average();
    let how = format!(
        "{} pairs, {} objects, concurrency {}, {} watchers x {} writes, lists x {}",
        opts.pairs,
        opts.api.objects,
        opts.api.concurrency,
        opts.api.watchers,
        opts.api.watch_events,
        opts.api.list_repeats
    );
    println!();
    let Some(recorded) = recorded else {
        let medians: Figures = measured
            .iter()
            .filter_map(|(v, r)| median(r).map(|m| (v.clone(), m)))
            .collect();
        let lines = render_figures(&medians, &how);
        std::fs::write(
            &opts.figures,
            replace_block(&md, &opts.block, &lines)?.as_bytes(),
        )
        .with_context(|| format!("writing {}", opts.figures.display()))?;
        for line in &lines {
            println!("gate: wrote {line}");
        }
        println!("gate: RECORDED the medians into {source} ({how}; {secs:.0} s, load {load})");
        return Ok(ExitCode::SUCCESS);
    };
    let verdicts = judge(&measured, &recorded, opts.max_drop_percent)?;
    for line in verdict_lines(&verdicts, opts.max_drop_percent) {
        println!("{line}");
    }
    match failure(&verdicts, opts.max_drop_percent, &source) {
        None => {
            println!(
                "gate: PASSED: {} verbs within {:.0} % of {source}; {how}; {secs:.0} s, load {load}",
                verdicts.len(),
                opts.max_drop_percent
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(why) => {
            println!("gate: FAILED: {why}; {how}; {secs:.0} s, load {load}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The five (or `--pairs`) pairs on `etcd`: verb → each pair's ratio.
async fn pairs(
    opts: &GateOptions,
    etcd: &mut ManagedEtcd,
    kube_bin: &Path,
) -> Result<BTreeMap<String, Vec<f64>>> {
    let mut measured: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for pair in 0..opts.pairs {
        let mut versus = opts.versus.clone();
        versus.kube_first = pair % 2 == 1;
        let (ours, kube) = compare::both(&opts.api, &versus, etcd, kube_bin)
            .await
            .with_context(|| format!("pair {}", pair + 1))?;
        let mut line = format!(
            "gate: pair {}/{} ({} first):",
            pair + 1,
            opts.pairs,
            if versus.kube_first { "kube" } else { "ours" }
        );
        for row in compare::compare(&ours, &kube) {
            if !VERBS.contains(&row.name) {
                continue;
            }
            let ratio = row.throughput_ratio().with_context(|| {
                format!("pair {}: {} has no throughput ratio", pair + 1, row.name)
            })?;
            line.push_str(&format!(" {} {ratio:.2}", row.name));
            measured
                .entry(row.name.to_string())
                .or_default()
                .push(ratio);
        }
        println!("\n{line}");
    }
    Ok(measured)
}

/// `/proc/loadavg`'s three figures, for the printed summary.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Benchmarks\n\ntext\n\n```gate\n# verb ratio\ncreate 0.80\nget    1.60  # a comment\n\nwatch 1.00\n```\n\nmore text\n";

    fn measured(pairs: &[(&str, &[f64])]) -> BTreeMap<String, Vec<f64>> {
        pairs
            .iter()
            .map(|(v, r)| (v.to_string(), r.to_vec()))
            .collect()
    }

    #[test]
    fn figures_are_read_from_the_named_block() -> Result<()> {
        let f = parse_figures(DOC, "gate")?;
        assert_eq!(f.len(), 3);
        assert_eq!(f["create"], 0.80);
        assert_eq!(f["get"], 1.60);
        assert_eq!(f["watch"], 1.00);
        assert!(parse_figures(DOC, "other").is_err(), "no such block");
        Ok(())
    }

    #[test]
    fn a_broken_table_is_an_error_not_a_pass() {
        for bad in [
            "```gate\ncreate\n```\n",
            "```gate\ncreate 0.8 extra\n```\n",
            "```gate\ncreate fast\n```\n",
            "```gate\ncreate 0\n```\n",
            "```gate\ncreate -1\n```\n",
            "```gate\ncreate 0.8\ncreate 0.9\n```\n",
            "```gate\n# nothing\n```\n",
            "```gate\ncreate 0.8\n",
        ] {
            assert!(parse_figures(bad, "gate").is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0, 0.5]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn a_median_more_than_30_percent_below_fails_and_a_faster_one_passes() -> Result<()> {
        let recorded = parse_figures(DOC, "gate")?;
        // create: floor 0.56; 0.55 is below it. get: floor 1.12; well above.
        // watch: far above its figure (a speed-up) passes.
        let m = measured(&[
            ("create", &[0.9, 0.5, 0.55, 0.2, 0.6]),
            ("get", &[1.5, 1.4, 1.3, 1.6, 2.0]),
            ("watch", &[3.0, 3.1, 2.9, 3.0, 3.2]),
        ]);
        let v = judge(&m, &recorded, 30.0)?;
        let by: BTreeMap<&str, &Verdict> = v.iter().map(|v| (v.verb.as_str(), v)).collect();
        assert_eq!(by["create"].median, 0.55);
        assert!((by["create"].floor - 0.56).abs() < 1e-9);
        assert!(!by["create"].passed(), "0.55 < 0.56 must fail");
        assert!(by["get"].passed());
        assert!(by["watch"].passed(), "faster than recorded passes");
        let msg = failure(&v, 30.0, "docs/benchmarks.md").context("create failed")?;
        assert!(msg.contains("create"), "{msg}");
        assert!(
            msg.contains("0.55") && msg.contains("0.80") && msg.contains("30 %"),
            "{msg}"
        );
        assert!(!msg.contains("get:") && !msg.contains("watch:"), "{msg}");
        Ok(())
    }

    #[test]
    fn the_floor_itself_passes_and_just_below_fails() -> Result<()> {
        let recorded: Figures = [("get".to_string(), 2.0)].into();
        let at = judge(&measured(&[("get", &[1.4])]), &recorded, 30.0)?;
        assert!(at[0].passed() && failure(&at, 30.0, "x").is_none());
        let below = judge(&measured(&[("get", &[1.39])]), &recorded, 30.0)?;
        assert!(!below[0].passed() && failure(&below, 30.0, "x").is_some());
        Ok(())
    }

    #[test]
    fn a_recorded_verb_never_measured_is_an_error() -> Result<()> {
        let recorded = parse_figures(DOC, "gate")?;
        let m = measured(&[("create", &[1.0]), ("get", &[2.0])]);
        assert!(
            judge(&m, &recorded, 30.0).is_err(),
            "watch was not measured"
        );
        Ok(())
    }

    #[test]
    fn writing_replaces_only_the_block_and_reads_back() -> Result<()> {
        let medians: Figures = [("create".to_string(), 1.234), ("watch".to_string(), 0.9)].into();
        let lines = render_figures(&medians, "5 pairs");
        let md = replace_block(DOC, "gate", &lines)?;
        assert!(md.starts_with("# Benchmarks\n\ntext\n\n```gate\n"), "{md}");
        assert!(md.ends_with("```\n\nmore text\n"), "{md}");
        let f = parse_figures(&md, "gate")?;
        assert_eq!(f.len(), 2, "the old get line is gone");
        assert_eq!(f["create"], 1.23);
        assert_eq!(f["watch"], 0.9);
        Ok(())
    }

    #[test]
    fn the_verdict_table_names_each_verb_and_its_figures() -> Result<()> {
        let recorded: Figures = [("patch".to_string(), 1.0)].into();
        let v = judge(&measured(&[("patch", &[0.5, 0.6, 0.4])]), &recorded, 30.0)?;
        let lines = verdict_lines(&v, 30.0);
        assert_eq!(lines.len(), 2);
        let cols: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            &cols[..8],
            [
                "gate:", "patch", "0.50", "0.60", "0.40", "0.50", "1.00", "0.70"
            ]
        );
        assert_eq!(cols[8], "FAIL");
        Ok(())
    }
}
