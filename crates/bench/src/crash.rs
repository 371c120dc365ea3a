//! `bench crash`: the crash harness of SPEC §6. Each round: a write storm
//! of concurrent ConfigMap creates (every create that is acknowledged with
//! 201 is recorded with the content it sent), a SIGKILL at a random moment,
//! a restart on the same data dir and port; then every acknowledged create
//! must be there with its content, nothing that was never attempted may be
//! there, and the server must be ready and accept a write. Rounds run on
//! one data dir, so every restart also reopens a store that was killed
//! before; every `--full-check-every` rounds (and after the last) the
//! objects of every earlier round are checked again too.
//!
//! The idea is that of `e2e/tests/crash.rs` (three rounds, as a test); this
//! one runs as many rounds as asked and prints
//! `crash: N rounds, A acknowledged writes, L lost`.
//!
//! On the etcd engine (`--etcd`: a real etcd the harness starts, or
//! `--etcd-servers URL`) the server runs with `--etcd-servers`, and the
//! SIGKILL and restart are the server's as above; every
//! `--etcd-kill-every` rounds (with a started etcd) etcd is SIGKILLed too at
//! the kill moment (first etcd, then the server) and restarted on its data
//! dir and ports before the server: etcd fsyncs its WAL before it answers a
//! write, so what the server acknowledged must survive etcd's death as
//! well. At every full check the harness also reads etcd directly (the keys
//! under `PREFIX/core/configmaps/default/`) and requires every acknowledged
//! write there with the content sent.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use http::StatusCode;
use kube::Client;
use rand::Rng;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::client;
use crate::etcd::ManagedEtcd;
use crate::server::{ManagedServer, ServerSpec};

/// The namespace written to.
const NAMESPACE: &str = "default";
/// The label that carries an object's round.
const ROUND_LABEL: &str = "bench-crash-round";

/// What to run.
#[derive(Debug, Clone)]
pub struct CrashOptions {
    /// Rounds of storm, kill, restart, check.
    pub rounds: usize,
    /// Concurrent writers in each storm.
    pub writers: usize,
    /// The kill comes at a uniformly random moment in this range after the
    /// storm starts (milliseconds).
    pub kill_after_ms: (u64, u64),
    /// Check every earlier round's objects every this many rounds (and after
    /// the last round); 0 checks them only after the last round.
    pub full_check_every: usize,
    /// The server to start (with `--etcd-servers` in its extra flags on
    /// the etcd engine).
    pub server: ServerSpec,
    /// On the etcd engine: where to read the writes back from etcd.
    pub etcd: Option<EtcdCheck>,
}

/// The etcd the server stores in, read directly at every full check.
#[derive(Debug, Clone)]
pub struct EtcdCheck {
    /// `--etcd-servers` of the server.
    pub url: String,
    /// `--etcd-prefix` of the server.
    pub prefix: String,
    /// SIGKILL (and restart) etcd too every this many rounds; 0: never.
    /// Needs an etcd the harness started.
    pub kill_every: usize,
}

/// Whether round `round` (from 0) kills etcd too.
pub fn kills_etcd(round: usize, every: usize) -> bool {
    every > 0 && (round + 1).is_multiple_of(every)
}

/// What the rounds found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CrashSummary {
    /// Rounds completed (storm, kill, restart and checks).
    pub rounds: usize,
    /// Creates acknowledged with 201 over all rounds.
    pub acknowledged: usize,
    /// Acknowledged creates missing, or present with other content, after a restart.
    pub lost: usize,
    /// Every other failure: objects never attempted, errors while the
    /// server was up, a server that does not come back healthy.
    pub failures: Vec<String>,
    /// Rounds in which etcd was SIGKILLed too.
    pub etcd_kills: usize,
    /// Acknowledged writes found in etcd itself at the last full check
    /// (`None`: not on the etcd engine).
    pub etcd_verified: Option<usize>,
}

impl CrashSummary {
    /// The line printed at the end.
    pub fn line(&self) -> String {
        format!(
            "crash: {} rounds, {} acknowledged writes, {} lost",
            self.rounds, self.acknowledged, self.lost
        )
    }

    /// Whether nothing was lost and nothing else failed.
    pub fn is_clean(&self) -> bool {
        self.lost == 0 && self.failures.is_empty()
    }
}

/// One round's writes: name → the value sent, for every attempted create,
/// and the names whose create was acknowledged.
#[derive(Debug, Default, Clone)]
pub struct RoundWrites {
    /// name → content sent, for every create attempted.
    pub attempted: BTreeMap<String, String>,
    /// Names whose create got a 201 with the content sent.
    pub acked: BTreeSet<String>,
}

/// What a check of one round against the store found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RoundCheck {
    /// Acknowledged, but not in the store.
    pub missing: Vec<String>,
    /// In the store with content other than what was sent.
    pub wrong_content: Vec<String>,
    /// In the store, but never attempted.
    pub unknown: Vec<String>,
}

impl RoundCheck {
    /// Acknowledged writes lost: missing or with other content.
    pub fn lost(&self) -> usize {
        self.missing.len()
            + self
                .wrong_content
                .iter()
                .filter(|n| !self.missing.contains(n))
                .count()
    }

    /// Whether everything is as it must be.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.wrong_content.is_empty() && self.unknown.is_empty()
    }
}

/// Compare a round's writes with what the store holds for that round
/// (`present`: name → content). A create that was attempted but not
/// acknowledged may or may not be there (it may have committed just before
/// the kill), but if it is, its content must be what was sent.
pub fn check_round(writes: &RoundWrites, present: &BTreeMap<String, String>) -> RoundCheck {
    let mut check = RoundCheck::default();
    for name in &writes.acked {
        if !present.contains_key(name) {
            check.missing.push(name.clone());
        }
    }
    for (name, content) in present {
        match writes.attempted.get(name) {
            None => check.unknown.push(name.clone()),
            Some(sent) if sent != content => check.wrong_content.push(name.clone()),
            Some(_) => {}
        }
    }
    check
}

/// The content a create of `name` sends: the name and a random nonce, so
/// an object cannot be mistaken for another one of the same name from an
/// earlier run.
fn content_for(name: &str, nonce: u64) -> String {
    format!("{name}:{nonce:016x}")
}

/// Run the rounds. Stops at the first round that finds a loss or failure.
/// `etcd`: the etcd the harness started (killed in etcd rounds).
pub async fn run(opts: &CrashOptions, etcd: Option<&mut ManagedEtcd>) -> Result<CrashSummary> {
    let started = Instant::now();
    let mut server = ManagedServer::start(opts.server.clone()).await?;
    let mut summary = CrashSummary::default();
    let mut history: BTreeMap<usize, RoundWrites> = BTreeMap::new();
    let result = rounds(opts, &mut server, etcd, &mut summary, &mut history).await;
    server.stop().await;
    if let Err(e) = result {
        summary.failures.push(format!("{e:#}"));
    }
    eprintln!(
        "crash: finished in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(summary)
}

async fn rounds(
    opts: &CrashOptions,
    server: &mut ManagedServer,
    mut etcd: Option<&mut ManagedEtcd>,
    summary: &mut CrashSummary,
    history: &mut BTreeMap<usize, RoundWrites>,
) -> Result<()> {
    let kill_every = opts.etcd.as_ref().map_or(0, |e| e.kill_every);
    for round in 0..opts.rounds {
        let etcd_round = kills_etcd(round, kill_every);
        let kill_etcd = if etcd_round {
            etcd.as_deref_mut()
        } else {
            None
        };
        if etcd_round && kill_etcd.is_none() {
            bail!("--etcd-kill-every needs an etcd the harness started (--etcd)");
        }
        let (writes, delay, errors) = storm(opts, server, round, kill_etcd).await?;
        let acked = writes.acked.len();
        summary.acknowledged += acked;
        if let Some(e) = errors.first() {
            summary.failures.push(format!(
                "round {round}: {} creates failed while the server was up, e.g. {e}",
                errors.len()
            ));
            return Ok(());
        }
        if acked == 0 {
            summary.failures.push(format!(
                "round {round}: no create was acknowledged in {delay:?}; log:\n{}",
                server.log_tail(20)
            ));
            return Ok(());
        }
        history.insert(round, writes);

        if etcd_round && let Some(etcd) = etcd.as_deref_mut() {
            etcd.restart()
                .await
                .with_context(|| format!("round {round}: etcd restart after SIGKILL"))?;
            summary.etcd_kills += 1;
        }
        server
            .restart()
            .await
            .with_context(|| format!("round {round}: restart after SIGKILL"))?;
        let client = server.client().await?;

        let last = round + 1 == opts.rounds;
        let full = last || (opts.full_check_every > 0 && (round + 1) % opts.full_check_every == 0);
        let present_count = if full {
            let stored = stored_by_round(&client, None).await?;
            let mut count = 0;
            for (r, writes) in history.iter() {
                let empty = BTreeMap::new();
                let present = stored.get(r).unwrap_or(&empty);
                count = present.len();
                if !judge(summary, round, *r, writes, present) {
                    return Ok(());
                }
            }
            let strays: Vec<&usize> = stored.keys().filter(|r| !history.contains_key(r)).collect();
            if !strays.is_empty() {
                summary.failures.push(format!(
                    "round {round}: objects of rounds never run: {strays:?}"
                ));
                return Ok(());
            }
            if let Some(check) = &opts.etcd {
                let in_etcd = stored_in_etcd(check).await?;
                let mut verified = 0;
                for writes in history.values() {
                    let missing = check_in_etcd(writes, &in_etcd);
                    verified += writes.acked.len() - missing.len();
                    if !missing.is_empty() {
                        summary.lost += missing.len();
                        summary.failures.push(format!(
                            "after the kill of round {round}: {} acknowledged creates are not in etcd under {} with the content sent (e.g. {:?})",
                            missing.len(),
                            check.prefix,
                            &missing[..missing.len().min(5)]
                        ));
                        return Ok(());
                    }
                }
                summary.etcd_verified = Some(verified);
            }
            count
        } else {
            let stored = stored_by_round(&client, Some(round)).await?;
            let empty = BTreeMap::new();
            let present = stored.get(&round).unwrap_or(&empty);
            let writes = history.get(&round).context("this round's writes")?;
            if !judge(summary, round, round, writes, present) {
                return Ok(());
            }
            present.len()
        };
        if let Err(e) = assert_healthy(&client, round).await {
            summary
                .failures
                .push(format!("round {round}: unhealthy after the restart: {e:#}"));
            return Ok(());
        }
        summary.rounds = round + 1;
        let attempted = history.get(&round).map_or(0, |w| w.attempted.len());
        eprintln!(
            "crash: round {}/{}: {} killed after {} ms; {acked} acknowledged, {attempted} attempted, {present_count} present{}",
            round + 1,
            opts.rounds,
            if etcd_round {
                "etcd and server"
            } else {
                "server"
            },
            delay.as_millis(),
            if full {
                "; every earlier round checked"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Record a round's check in the summary; false if it found anything wrong.
fn judge(
    summary: &mut CrashSummary,
    round: usize,
    of_round: usize,
    writes: &RoundWrites,
    present: &BTreeMap<String, String>,
) -> bool {
    let check = check_round(writes, present);
    if check.is_clean() {
        return true;
    }
    summary.lost += check.lost();
    summary.failures.push(format!(
        "after the kill of round {round}, round {of_round}: {} of {} acknowledged creates missing (e.g. {:?}), {} with other content (e.g. {:?}), {} never attempted (e.g. {:?})",
        check.missing.len(),
        writes.acked.len(),
        &check.missing[..check.missing.len().min(5)],
        check.wrong_content.len(),
        &check.wrong_content[..check.wrong_content.len().min(5)],
        check.unknown.len(),
        &check.unknown[..check.unknown.len().min(5)],
    ));
    false
}

/// Run the writers, kill the server at a random moment, and collect what
/// they did. Returns the writes, the kill delay and the failures seen while
/// the server was certainly up.
async fn storm(
    opts: &CrashOptions,
    server: &mut ManagedServer,
    round: usize,
    etcd: Option<&mut ManagedEtcd>,
) -> Result<(RoundWrites, Duration, Vec<String>)> {
    let client = server.client().await?;
    let killing = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = JoinSet::new();
    for id in 0..opts.writers {
        writers.spawn(writer(
            client.clone(),
            round,
            id,
            killing.clone(),
            stop.clone(),
        ));
    }
    let (lo, hi) = opts.kill_after_ms;
    let delay = Duration::from_millis(if hi > lo {
        rand::rng().random_range(lo..hi)
    } else {
        lo
    });
    tokio::time::sleep(delay).await;
    killing.store(true, Ordering::Release);
    if let Some(etcd) = etcd {
        // etcd first: the server then fails whatever it has in flight.
        etcd.kill9().await;
    }
    server.kill9().await;
    stop.store(true, Ordering::Release);

    let mut writes = RoundWrites::default();
    let mut errors = Vec::new();
    while let Some(done) = writers.join_next().await {
        let out = done.context("a writer task panicked")?;
        writes.attempted.extend(out.writes.attempted);
        writes.acked.extend(out.writes.acked);
        errors.extend(out.errors_while_up);
    }
    Ok((writes, delay, errors))
}

/// What one writer did.
struct WriterOutcome {
    writes: RoundWrites,
    /// Failures while the server was certainly up (before `killing`).
    errors_while_up: Vec<String>,
}

/// Create ConfigMaps `r{round}-w{id}-{i}` until `stop` is set.
async fn writer(
    client: Client,
    round: usize,
    id: usize,
    killing: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> WriterOutcome {
    let mut out = WriterOutcome {
        writes: RoundWrites::default(),
        errors_while_up: Vec::new(),
    };
    let uri = client::configmaps(NAMESPACE);
    let mut i = 0u64;
    while !stop.load(Ordering::Acquire) {
        let name = format!("r{round}-w{id}-{i}");
        i += 1;
        let content = content_for(&name, rand::rng().random());
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {ROUND_LABEL: round.to_string()}},
            "data": {"v": content}
        });
        out.writes.attempted.insert(name.clone(), content.clone());
        let result = client::post_json(&client, &uri, body.to_string().into_bytes()).await;
        let failure = match result {
            Ok(r) if r.status == StatusCode::CREATED => {
                let echoed = r.json().ok().and_then(|v| {
                    v.pointer("/data/v")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
                if echoed.as_deref() == Some(content.as_str()) {
                    out.writes.acked.insert(name);
                    continue;
                }
                format!("{name}: 201 with other content {echoed:?}")
            }
            Ok(r) => format!("{name}: HTTP {}: {}", r.status, r.text()),
            Err(e) => format!("{name}: {e}"),
        };
        // Read the flag after the failure: one seen before the kill was
        // decided on is the server's fault, not the crash's.
        if !killing.load(Ordering::Acquire) {
            out.errors_while_up.push(failure);
        }
        // The server is gone or going: do not spin on refused connections.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    out
}

/// round → (name → content) of every stored object of the crash harness,
/// or of `round` only.
async fn stored_by_round(
    client: &Client,
    round: Option<usize>,
) -> Result<BTreeMap<usize, BTreeMap<String, String>>> {
    let selector = match round {
        Some(r) => format!("{ROUND_LABEL}={r}"),
        None => ROUND_LABEL.to_owned(),
    };
    let (items, _) = client::list_paged(
        client,
        &client::configmaps(NAMESPACE),
        Some(&selector),
        5000,
    )
    .await?;
    let mut out: BTreeMap<usize, BTreeMap<String, String>> = BTreeMap::new();
    for item in items {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .context("an item without a name")?;
        let r = item
            .pointer(&format!("/metadata/labels/{ROUND_LABEL}"))
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<usize>().ok())
            .with_context(|| format!("{name}: no round label"))?;
        let content = item
            .pointer("/data/v")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.entry(r)
            .or_default()
            .insert(name.to_owned(), content.to_owned());
    }
    Ok(out)
}

/// name → the ConfigMap's `data.v` as stored in etcd (`None`: a value that
/// is not JSON, e.g. encrypted), for every ConfigMap of `default` under the
/// server's prefix: the registry's key `/registry/core/configmaps/NS/NAME`
/// is etcd's `PREFIX/core/configmaps/NS/NAME`.
async fn stored_in_etcd(check: &EtcdCheck) -> Result<BTreeMap<String, Option<String>>> {
    use ubernetes_storage::Storage as _;
    use ubernetes_storage::etcd_engine::{EtcdOptions, EtcdStorage};
    let etcd = EtcdStorage::connect(&EtcdOptions {
        endpoints: vec![check.url.clone()],
        prefix: check.prefix.clone(),
        ..Default::default()
    })
    .await
    .with_context(|| format!("connecting to etcd {}", check.url))?;
    let dir = format!("/core/configmaps/{NAMESPACE}/");
    let list = etcd
        .list(&dir, ubernetes_storage::ListOptions::default())
        .await
        .context("listing the ConfigMaps in etcd")?;
    let mut out = BTreeMap::new();
    for kv in list.items {
        let name = kv.key.rsplit('/').next().unwrap_or_default().to_owned();
        let v = serde_json::from_slice::<Value>(&kv.value).ok().map(|obj| {
            obj.pointer("/data/v")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        });
        out.insert(name, v);
    }
    Ok(out)
}

/// The acknowledged writes of a round that etcd lacks, or holds with other
/// content (a value that is not JSON counts by its key alone).
pub fn check_in_etcd(
    writes: &RoundWrites,
    in_etcd: &BTreeMap<String, Option<String>>,
) -> Vec<String> {
    writes
        .acked
        .iter()
        .filter(|name| match in_etcd.get(*name) {
            None => true,
            Some(None) => false,
            Some(Some(content)) => writes.attempted.get(*name) != Some(content),
        })
        .cloned()
        .collect()
}

/// Ready, and a write after the restart is accepted and reads back.
async fn assert_healthy(client: &Client, round: usize) -> Result<()> {
    if !client::is_ready(client).await {
        bail!("/readyz is not ok");
    }
    let name = format!("after-crash-{round}");
    let uri = client::configmaps(NAMESPACE);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    client::post_json(client, &uri, body.to_string().into_bytes())
        .await?
        .expect(StatusCode::CREATED, "a create after the restart")?;
    client::get(client, &format!("{uri}/{name}"))
        .await?
        .expect(StatusCode::OK, "reading back the create after the restart")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(attempted: &[(&str, &str)], acked: &[&str]) -> RoundWrites {
        RoundWrites {
            attempted: attempted
                .iter()
                .map(|(n, c)| (n.to_string(), c.to_string()))
                .collect(),
            acked: acked.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn store(objs: &[(&str, &str)]) -> BTreeMap<String, String> {
        objs.iter()
            .map(|(n, c)| (n.to_string(), c.to_string()))
            .collect()
    }

    #[test]
    fn a_store_with_every_acknowledged_write_is_clean() {
        let w = writes(&[("a", "1"), ("b", "2"), ("c", "3")], &["a", "b"]);
        // "c" was attempted but not acknowledged: it may have committed.
        let check = check_round(&w, &store(&[("a", "1"), ("b", "2"), ("c", "3")]));
        assert!(check.is_clean(), "{check:?}");
        let check = check_round(&w, &store(&[("a", "1"), ("b", "2")]));
        assert!(check.is_clean(), "{check:?}");
    }

    #[test]
    fn a_missing_acknowledged_write_is_lost() {
        let w = writes(&[("a", "1"), ("b", "2")], &["a", "b"]);
        let check = check_round(&w, &store(&[("a", "1")]));
        assert_eq!(check.missing, vec!["b".to_string()]);
        assert_eq!(check.lost(), 1);
        assert!(!check.is_clean());
    }

    #[test]
    fn other_content_under_an_acknowledged_name_is_lost() {
        let w = writes(&[("a", "1")], &["a"]);
        let check = check_round(&w, &store(&[("a", "stale")]));
        assert_eq!(check.wrong_content, vec!["a".to_string()]);
        assert_eq!(check.lost(), 1);
    }

    #[test]
    fn an_object_never_attempted_is_reported() {
        let w = writes(&[("a", "1")], &["a"]);
        let check = check_round(&w, &store(&[("a", "1"), ("ghost", "x")]));
        assert_eq!(check.unknown, vec!["ghost".to_string()]);
        assert_eq!(check.lost(), 0);
        assert!(!check.is_clean());
    }

    #[test]
    fn the_summary_line_has_the_spec_wording() {
        let s = CrashSummary {
            rounds: 200,
            acknowledged: 12345,
            lost: 0,
            failures: Vec::new(),
            ..Default::default()
        };
        assert_eq!(
            s.line(),
            "crash: 200 rounds, 12345 acknowledged writes, 0 lost"
        );
        assert!(s.is_clean());
    }

    #[test]
    fn etcd_is_killed_every_nth_round_only() {
        let rounds: Vec<usize> = (0..12).filter(|r| kills_etcd(*r, 4)).collect();
        assert_eq!(rounds, vec![3, 7, 11]);
        assert!((0..100).all(|r| !kills_etcd(r, 0)));
        assert!((0..5).all(|r| kills_etcd(r, 1)));
    }

    #[test]
    fn etcd_must_hold_every_acknowledged_write_with_its_content() {
        let w = writes(&[("a", "1"), ("b", "2"), ("c", "3")], &["a", "b"]);
        let etcd = |objs: &[(&str, Option<&str>)]| -> BTreeMap<String, Option<String>> {
            objs.iter()
                .map(|(n, c)| (n.to_string(), c.map(str::to_string)))
                .collect()
        };
        // "c" was never acknowledged: its absence is no loss.
        assert!(check_in_etcd(&w, &etcd(&[("a", Some("1")), ("b", Some("2"))])).is_empty());
        assert_eq!(check_in_etcd(&w, &etcd(&[("a", Some("1"))])), vec!["b"]);
        assert_eq!(
            check_in_etcd(&w, &etcd(&[("a", Some("1")), ("b", Some("old"))])),
            vec!["b"]
        );
        // A value that is not JSON (encrypted at rest) counts by its key.
        assert!(check_in_etcd(&w, &etcd(&[("a", None), ("b", None)])).is_empty());
    }

    #[test]
    fn contents_of_the_same_name_differ_between_attempts() {
        assert_ne!(content_for("x", 1), content_for("x", 2));
        assert!(content_for("x", 1).starts_with("x:"));
    }
}
