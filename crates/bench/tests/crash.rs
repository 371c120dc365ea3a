//! The crash harness as a test: the built `bench crash --rounds 2` against
//! the built `target/<profile>/ubernetes` (`scripts/test.sh` builds every
//! binary first) must report no loss and exit 0; and against a server that
//! loses its store on every restart it must report the loss and exit
//! non-zero, so a harness that stopped checking would fail here.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{Context, Result, ensure};

mod common;
use common::ubernetes_bin;

fn bench_crash(bin: &Path, rounds: &str) -> Result<Output> {
    Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["crash", "--rounds", rounds, "--writers", "8"])
        .arg("--ubernetes-bin")
        .arg(bin)
        .output()
        .context("running bench crash")
}

/// The numbers of `crash: N rounds, A acknowledged writes, L lost`.
fn summary(stdout: &str) -> Option<(usize, usize, usize)> {
    let line = stdout.lines().find(|l| l.starts_with("crash: "))?;
    let nums: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    match nums[..] {
        [n, a, l] => Some((n, a, l)),
        _ => None,
    }
}

#[test]
fn two_rounds_of_sigkill_during_a_write_storm_lose_no_acknowledged_write() -> Result<()> {
    let out = bench_crash(&ubernetes_bin()?, "2")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        out.status.success(),
        "bench crash failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let (rounds, acked, lost) =
        summary(&stdout).with_context(|| format!("no summary line in {stdout:?}"))?;
    ensure!(rounds == 2, "{stdout}");
    ensure!(acked > 0, "nothing was acknowledged: {stdout}\n{stderr}");
    ensure!(lost == 0, "{stdout}");
    Ok(())
}

#[test]
fn a_server_that_loses_its_store_on_restart_fails_the_harness() -> Result<()> {
    let real = ubernetes_bin()?;
    let dir = tempfile::tempdir()?;
    // A wrapper that wipes the data dir on every start but the first: every
    // acknowledged write of the round before is gone after the restart.
    let wrapper = dir.path().join("forgetful-ubernetes");
    std::fs::write(
        &wrapper,
        format!(
            r#"#!/bin/sh
data=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--data-dir" ]; then data="$a"; fi
  prev="$a"
done
if [ -n "$data" ] && [ -e "$data.started" ]; then rm -rf "$data"; fi
[ -n "$data" ] && touch "$data.started"
exec "{}" "$@"
"#,
            real.display()
        ),
    )?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    }
    let out = bench_crash(&wrapper, "1")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success(),
        "bench crash passed a server that forgets everything:\n{stdout}\n{stderr}"
    );
    let (_, acked, lost) =
        summary(&stdout).with_context(|| format!("no summary line in {stdout:?}\n{stderr}"))?;
    ensure!(acked > 0, "{stdout}\n{stderr}");
    ensure!(lost == acked, "every acknowledged write is lost: {stdout}");
    ensure!(stderr.contains("missing"), "{stderr}");
    Ok(())
}

#[test]
fn the_summary_line_is_parsed() {
    assert_eq!(
        summary("x\ncrash: 2 rounds, 1234 acknowledged writes, 0 lost\n"),
        Some((2, 1234, 0))
    );
    assert_eq!(summary("nothing"), None);
}
