//! Crash test at the storage level: SIGKILL a write storm (the
//! `write_storm` example) at a random moment, reopen the store, and check
//! that every acknowledged write is there, the revision counter matches the
//! writes, and the history replays without a gap. Three rounds on one
//! directory, so recovery after recovery is covered too.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use ubernetes_storage::sled_engine::SledStorage;
use ubernetes_storage::{ListOptions, Storage};

/// Kills (SIGKILL on unix) and reaps the child however the test exits.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The newest modification time of the files under `dir`.
fn newest_under(dir: &Path) -> SystemTime {
    let mut newest = UNIX_EPOCH;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return newest;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let t = if path.is_dir() {
            newest_under(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(UNIX_EPOCH)
        };
        newest = newest.max(t);
    }
    newest
}

/// The `write_storm` example of this test's profile. `cargo test` builds
/// every example (so does scripts/test.sh), so it is only built here when
/// missing or older than the crate's sources (`cargo test --test crash`
/// after an edit): a cargo build from inside a test inherits the test's
/// `CARGO_*` variables and selects other targets, which makes cargo build
/// ring, rustls, kube and everything above them again, twice.
fn write_storm_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/crash-<hash>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf();
    let bin = profile_dir
        .join("examples")
        .join(format!("write_storm{}", std::env::consts::EXE_SUFFIX));
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources =
        newest_under(&crate_dir.join("src")).max(newest_under(&crate_dir.join("examples")));
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
    if built.is_none_or(|b| b < sources) {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-q", "--workspace", "--example", "write_storm"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "building the write_storm example failed");
    }
    assert!(bin.exists(), "{} not found", bin.display());
    bin
}

fn random_millis(lo: u64, hi: u64) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    lo + u64::from(nanos) % (hi - lo)
}

/// Run one storm, kill it, and return the keys it acknowledged.
fn storm_round(bin: &PathBuf, dir: &std::path::Path, round: usize) -> Vec<String> {
    let child = Command::new(bin)
        .arg(dir)
        .arg(format!("round{round}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn write_storm");
    let mut child = KillOnDrop(child);
    let stdout = child.0.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                // A line cut by the kill (no newline) was never fully acknowledged.
                Ok(n) if n > 0 && line.ends_with('\n') => {
                    if tx.send(line.trim_end().to_owned()).is_err() {
                        break;
                    }
                }
                _ => break,
            }
        }
    });
    let mut acked = Vec::new();
    // Wait for the storm to be under way, then let it run a random while.
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("write_storm acknowledged nothing within 60 s");
    acked.push(first);
    std::thread::sleep(Duration::from_millis(random_millis(200, 600)));
    drop(child); // SIGKILL + reap
    reader.join().expect("reader thread");
    acked.extend(rx.try_iter());
    acked
}

#[test]
fn every_acknowledged_write_survives_sigkill() {
    let bin = write_storm_binary();
    let dir = tempfile::TempDir::new().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut all_acked: HashSet<String> = HashSet::new();
    for round in 0..3 {
        let acked = storm_round(&bin, dir.path(), round);
        assert!(!acked.is_empty());
        all_acked.extend(acked.iter().cloned());
        rt.block_on(async {
            let store = Arc::new(SledStorage::open(dir.path()).expect("store reopens cleanly"));
            let listed = store
                .list("/storm/", ListOptions::default())
                .await
                .expect("list");
            let present: HashSet<&str> = listed.items.iter().map(|kv| kv.key.as_str()).collect();
            let missing: Vec<&String> = all_acked
                .iter()
                .filter(|k| !present.contains(k.as_str()))
                .collect();
            assert!(
                missing.is_empty(),
                "round {round}: {} of {} acknowledged keys lost, e.g. {:?}",
                missing.len(),
                all_acked.len(),
                missing.iter().take(5).collect::<Vec<_>>()
            );
            // Only creates happened: one revision per stored key, and the
            // full history replays in order without a gap.
            let rev = store.current_revision().await.expect("revision");
            assert_eq!(rev, listed.items.len() as u64, "round {round}");
            let mut w = store.watch("/storm/", 0).await.expect("watch");
            for expected in 1..=rev {
                let ev = tokio::time::timeout(Duration::from_secs(10), w.next())
                    .await
                    .expect("replay in time")
                    .expect("stream open")
                    .expect("event");
                assert_eq!(ev.revision(), expected);
                assert!(present.contains(ev.kv.key.as_str()));
            }
        });
    }
}
