//! `bench crash --etcd` and `bench api --versus-kube` end to end at a tiny
//! size, on a real etcd (and, for the comparison, the real kube-apiserver)
//! that the bench starts itself: the crash harness must lose nothing over
//! rounds that kill the server and, in one of them, etcd too, and read every
//! acknowledged write back from etcd; the comparison must print a ratio
//! for every scenario, and `bench gate` must fail on the verb whose
//! recorded figure it misses and pass the others. Skipped, saying why, without an etcd binary or
//! without `../shared/kube`. The figures live in docs/benchmarks.md.

use std::path::PathBuf;
use std::process::{Command, Output};

use anyhow::{Context, Result, ensure};

mod common;
use common::ubernetes_bin;

fn bench(args: &[&str]) -> Result<Output> {
    Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .arg("--ubernetes-bin")
        .arg(ubernetes_bin()?)
        .output()
        .context("running bench")
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `shared/kube/kube.sh` in a parent directory of this crate, as the bench
/// looks for it.
fn kube_sh() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("UBERNETES_KUBE_SH").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    // The roots `bench`'s own lookup (`etcd::find_kube_sh`) searches, so the
    // test expects a skip exactly when the bench skips.
    let mut roots: Vec<PathBuf> = Vec::new();
    roots.extend(std::env::current_dir().ok());
    roots.extend(std::env::current_exe().ok());
    roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    roots.iter().find_map(|root| {
        root.ancestors()
            .map(|d| d.join("shared/kube/kube.sh"))
            .find(|p| p.is_file())
    })
}

/// Without `../shared/kube` the command must have said `SKIPPED:` and
/// exited with 2: true (the test is skipped, saying so); false with it.
fn skipped_without_kube(out: &Output, what: &str) -> Result<bool> {
    if kube_sh().is_some() {
        return Ok(false);
    }
    let all = text(out);
    ensure!(out.status.code() == Some(2), "{all}");
    ensure!(
        String::from_utf8_lossy(&out.stdout).contains("SKIPPED: "),
        "{all}"
    );
    eprintln!("SKIPPED: no ../shared/kube: {what} said so");
    Ok(true)
}

/// Whether `bench crash --etcd` will find an etcd (see crates/bench/src/etcd.rs).
fn have_etcd() -> bool {
    kube_sh().is_some()
        || std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("etcd").is_file()))
}

#[test]
fn bench_crash_on_etcd_loses_nothing_when_the_server_and_etcd_are_killed() -> Result<()> {
    if !have_etcd() {
        eprintln!(
            "SKIPPED: no etcd binary (install Debian's etcd-server or provide ../shared/kube)"
        );
        return Ok(());
    }
    let out = bench(&[
        "crash",
        "--etcd",
        "--rounds",
        "4",
        "--etcd-kill-every",
        "2",
        "--full-check-every",
        "2",
        "--kill-min-ms",
        "300",
        "--kill-max-ms",
        "600",
    ])?;
    let all = text(&out);
    ensure!(out.status.success(), "bench crash --etcd failed: {all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("crash: 4 rounds, "))
        .with_context(|| format!("no summary line: {all}"))?;
    ensure!(summary.ends_with(", 0 lost"), "{all}");
    let etcd_line = stdout
        .lines()
        .find(|l| l.starts_with("crash: etcd engine: etcd SIGKILLed in 2 rounds; "))
        .with_context(|| format!("etcd must be killed in rounds 2 and 4: {all}"))?;
    // Every acknowledged write of the summary was read back from etcd.
    let acked: usize = summary
        .trim_start_matches("crash: 4 rounds, ")
        .split(' ')
        .next()
        .context("acknowledged count")?
        .parse()?;
    ensure!(acked > 0, "{all}");
    ensure!(
        etcd_line.contains(&format!(
            "; {acked} acknowledged writes read back from etcd"
        )),
        "{all}"
    );
    Ok(())
}

#[test]
fn bench_api_versus_kube_prints_a_ratio_per_scenario() -> Result<()> {
    let out = bench(&[
        "api",
        "--versus-kube",
        "--objects",
        "40",
        "--concurrency",
        "4",
        "--watchers",
        "3",
        "--watch-events",
        "2",
        "--list-repeats",
        "1",
    ])?;
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if skipped_without_kube(&out, "bench api --versus-kube")? {
        return Ok(());
    }
    ensure!(
        out.status.success(),
        "bench api --versus-kube failed: {all}"
    );
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("bench api --versus-kube: ratio"))
        .collect();
    for scenario in [
        "create",
        "get",
        "update",
        "patch",
        "list",
        "list-selector",
        "list-paged",
        "watch",
    ] {
        let row = table
            .iter()
            .find(|l| l.split_whitespace().next() == Some(scenario))
            .with_context(|| format!("no ratio row for {scenario}: {all}"))?;
        let cols: Vec<&str> = row.split_whitespace().collect();
        ensure!(cols.len() == 13, "{row}");
        // Both throughputs are figures and the ratio is theirs.
        let (ours, kube, r): (f64, f64, f64) =
            (cols[1].parse()?, cols[2].parse()?, cols[3].parse()?);
        ensure!(ours > 0.0 && kube > 0.0, "{row}");
        ensure!((ours / kube - r).abs() < 0.01 + r * 0.01, "{row}");
    }
    ensure!(
        table
            .iter()
            .any(|l| l.starts_with("memory: peak RSS (VmHWM) ours ")),
        "{all}"
    );
    Ok(())
}

#[test]
fn bench_gate_fails_naming_the_verb_below_its_floor_and_passes_the_others() -> Result<()> {
    // A figure no server reaches for get (1000x kube-apiserver) and one every
    // server passes for create: the gate must fail (exit 1) on get alone.
    let dir = tempfile::tempdir()?;
    let figures = dir.path().join("figures.md");
    std::fs::write(
        &figures,
        "# figures\n\n```gate\ncreate 0.01\nget 1000\n```\n",
    )?;
    let figures = figures.display().to_string();
    let out = bench(&[
        "gate",
        "--pairs",
        "1",
        "--objects",
        "40",
        "--concurrency",
        "4",
        "--watchers",
        "2",
        "--watch-events",
        "2",
        "--list-repeats",
        "1",
        "--figures",
        &figures,
    ])?;
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if skipped_without_kube(&out, "bench gate")? {
        return Ok(());
    }
    ensure!(out.status.code() == Some(1), "the gate must fail: {all}");
    let line = |verb: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("gate: {verb} ")))
            .with_context(|| format!("no verdict line for {verb}: {all}"))
    };
    ensure!(line("create")?.ends_with(" ok"), "{all}");
    ensure!(line("get")?.contains("FAIL"), "{all}");
    let failed = stdout
        .lines()
        .find(|l| l.starts_with("gate: FAILED: "))
        .with_context(|| format!("no FAILED line: {all}"))?;
    ensure!(
        failed.contains("get: median ratio") && failed.contains("recorded 1000.00"),
        "{all}"
    );
    ensure!(!failed.contains("create:"), "create passed: {all}");
    Ok(())
}
