//! Shared by the bench's integration tests.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// `ubernetes` next to the `bench` binary under test (same profile).
pub fn ubernetes_bin() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("UBERNETES_BIN") {
        return Ok(PathBuf::from(p));
    }
    let bench = Path::new(env!("CARGO_BIN_EXE_bench"));
    let bin = bench
        .parent()
        .context("the bench binary has no directory")?
        .join("ubernetes");
    if !bin.exists() {
        bail!(
            "{} not found: build it first (`cargo build --bins`, done by scripts/test.sh)",
            bin.display()
        );
    }
    Ok(bin)
}

/// Run the bench under test with `args` against [`ubernetes_bin`]; its
/// stdout, or an error with both outputs when it failed.
#[allow(dead_code)] // not every test crate runs the bench this way
pub fn run_bench(args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .arg("--ubernetes-bin")
        .arg(ubernetes_bin()?)
        .output()
        .context("running bench")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "bench {args:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(stdout)
}
