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
