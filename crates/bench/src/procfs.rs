//! What Linux's `/proc` says about the server process: CPU seconds used
//! (user + system, from `/proc/PID/stat`), resident memory now (`VmRSS`)
//! and at its peak (`VmHWM`, from `/proc/PID/status`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};

/// A reading of one process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// User + system CPU time consumed so far, in seconds.
    pub cpu_seconds: f64,
    /// Resident set size now, in bytes.
    pub rss_bytes: u64,
    /// Peak resident set size so far (high-water mark), in bytes.
    pub hwm_bytes: u64,
}

/// Reads `/proc/PID/…` of one process.
#[derive(Debug, Clone)]
pub struct Process {
    pid: u32,
    root: PathBuf,
}

impl Process {
    /// The process with this id.
    pub fn new(pid: u32) -> Self {
        Self {
            pid,
            root: PathBuf::from("/proc").join(pid.to_string()),
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Read its CPU time and memory now.
    pub fn sample(&self) -> Result<Sample> {
        let stat = std::fs::read_to_string(self.root.join("stat"))
            .with_context(|| format!("reading /proc/{}/stat", self.pid))?;
        let status = std::fs::read_to_string(self.root.join("status"))
            .with_context(|| format!("reading /proc/{}/status", self.pid))?;
        let ticks = parse_cpu_ticks(&stat)?;
        Ok(Sample {
            cpu_seconds: ticks as f64 / clock_ticks_per_second() as f64,
            rss_bytes: status_kib(&status, "VmRSS")? * 1024,
            hwm_bytes: status_kib(&status, "VmHWM")? * 1024,
        })
    }
}

/// utime + stime (fields 14 and 15 of `/proc/PID/stat`), in clock ticks.
/// The command name (field 2) is in parentheses and may hold spaces, so
/// fields are counted from the last `)`.
pub fn parse_cpu_ticks(stat: &str) -> Result<u64> {
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no ')' in /proc/PID/stat")?;
    // rest starts at field 3 (state): field n is at index n - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64> {
        fields
            .get(n - 3)
            .context("short /proc/PID/stat")?
            .parse::<u64>()
            .with_context(|| format!("field {n} of /proc/PID/stat"))
    };
    Ok(field(14)? + field(15)?)
}

/// The value of a `Name:   1234 kB` line of `/proc/PID/status`, in KiB.
pub fn status_kib(status: &str, name: &str) -> Result<u64> {
    for line in status.lines() {
        if let Some((key, value)) = line.split_once(':')
            && key == name
        {
            let mut parts = value.split_whitespace();
            let n = parts
                .next()
                .context("empty value")?
                .parse::<u64>()
                .with_context(|| format!("{name} in /proc/PID/status"))?;
            return match parts.next() {
                Some("kB") | None => Ok(n),
                Some(unit) => bail!("{name}: unexpected unit {unit}"),
            };
        }
    }
    bail!("no {name} in /proc/PID/status")
}

/// `sysconf(_SC_CLK_TCK)` as `getconf CLK_TCK` prints it; 100 (Linux's
/// USER_HZ on every common architecture) if that cannot be run.
fn clock_ticks_per_second() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|t| *t > 0)
            .unwrap_or(100)
    })
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_counted_after_a_command_name_with_spaces_and_parens() {
        let stat = "4242 (tokio (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 75 0 0 20 0 9 0 123 456789 1234 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat).ok(), Some(325));
    }

    #[test]
    fn a_truncated_stat_line_is_an_error() {
        assert!(parse_cpu_ticks("1 (x) S 1 2").is_err());
        assert!(parse_cpu_ticks("garbage").is_err());
    }

    #[test]
    fn status_values_are_read_in_kib() {
        let status = "Name:\tubernetes\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n";
        assert_eq!(status_kib(status, "VmRSS").ok(), Some(102400));
        assert_eq!(status_kib(status, "VmHWM").ok(), Some(204800));
        assert!(status_kib(status, "VmSwap").is_err());
    }

    #[test]
    fn this_process_can_be_sampled() -> Result<()> {
        let s = Process::new(std::process::id()).sample()?;
        assert!(s.rss_bytes > 0);
        assert!(s.hwm_bytes >= s.rss_bytes);
        assert!(s.cpu_seconds >= 0.0);
        Ok(())
    }
}
