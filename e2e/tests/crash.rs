//! Crash consistency of the real server (SPEC §6): a write storm of 8
//! concurrent kube-client tasks creating ConfigMaps, a SIGKILL at a random
//! moment 0.3–1.5 s in, a restart on the same data dir and port; then every
//! create that was acknowledged (201) is there with the data that was sent,
//! nothing is there that was never attempted, and the server is healthy
//! (ready, lists, accepts writes). Three rounds on the same data dir, so
//! each restart also reopens a store that was killed before.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::task::{JoinSet, block_in_place};
use ubernetes_e2e::Server;

const WRITERS: usize = 8;
const ROUNDS: usize = 3;

/// A random delay in 300..1500 ms (std's randomly seeded hasher; no RNG
/// dependency needed for one number per round).
fn random_kill_delay() -> Duration {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default(),
    );
    Duration::from_millis(300 + h.finish() % 1200)
}

fn value_for(name: &str) -> String {
    format!("value of {name}")
}

/// What one writer did: names whose create was acknowledged, and every name
/// it attempted.
#[derive(Default)]
struct Outcome {
    acked: BTreeSet<String>,
    attempted: BTreeSet<String>,
    /// Failures while the server was certainly still up (before `killing`).
    errors_while_up: Vec<String>,
    errors: usize,
}

/// Create ConfigMaps `r{round}-w{writer}-{i}` until `stop` is set.
/// `killing` is set just before the SIGKILL.
async fn writer(
    api: Api<ConfigMap>,
    round: usize,
    id: usize,
    killing: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Outcome {
    let mut out = Outcome::default();
    let mut i = 0u64;
    while !stop.load(Ordering::Acquire) {
        let name = format!("r{round}-w{id}-{i}");
        i += 1;
        let cm: ConfigMap = match serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"round": round.to_string()}},
            "data": {"v": value_for(&name)}
        })) {
            Ok(cm) => cm,
            Err(_) => break,
        };
        out.attempted.insert(name.clone());
        match api.create(&PostParams::default(), &cm).await {
            Ok(created) if created.name_any() == name => {
                out.acked.insert(name);
            }
            other => {
                // Read before judging: a failure seen before the kill was
                // decided on is the server's, not the crash's.
                if !killing.load(Ordering::Acquire) {
                    out.errors_while_up.push(format!("{name}: {other:?}"));
                }
                out.errors += 1;
                // The server is gone (or going): do not spin on refused
                // connections until `stop` is set.
                tokio::task::yield_now().await;
            }
        }
    }
    out
}

/// name → data["v"] of every ConfigMap of `round`.
async fn stored(api: &Api<ConfigMap>, round: usize) -> Result<BTreeMap<String, String>> {
    let list = api
        .list(&ListParams::default().labels(&format!("round={round}")))
        .await?;
    Ok(list
        .items
        .iter()
        .map(|o| {
            let v = o
                .data
                .as_ref()
                .and_then(|d| d.get("v"))
                .cloned()
                .unwrap_or_default();
            (o.name_any(), v)
        })
        .collect())
}

async fn assert_healthy(client: &Client, api: &Api<ConfigMap>, round: usize) -> Result<()> {
    let req = http_get("/readyz")?;
    let ready = client.request_text(req).await.context("/readyz")?;
    ensure!(ready == "ok", "/readyz says {ready:?}");
    let name = format!("after-crash-{round}");
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}
    }))?;
    api.create(&PostParams::default(), &cm)
        .await
        .context("a write after the restart")?;
    ensure!(api.get_opt(&name).await?.is_some(), "read back {name}");
    Ok(())
}

fn http_get(path: &str) -> Result<http::Request<Vec<u8>>> {
    Ok(http::Request::get(path).body(Vec::new())?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_create_survives_a_sigkill_during_a_write_storm() -> Result<()> {
    let started = Instant::now();
    let mut server = block_in_place(Server::start)?;
    let mut all_acked: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();

    for round in 0..ROUNDS {
        let client = server.client().await?;
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        let killing = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = JoinSet::new();
        for id in 0..WRITERS {
            writers.spawn(writer(
                api.clone(),
                round,
                id,
                killing.clone(),
                stop.clone(),
            ));
        }

        let delay = random_kill_delay();
        tokio::time::sleep(delay).await;
        killing.store(true, Ordering::Release);
        block_in_place(|| server.kill9());
        stop.store(true, Ordering::Release);

        let mut acked = BTreeSet::new();
        let mut attempted = BTreeSet::new();
        let mut errors = 0;
        let mut errors_while_up = Vec::new();
        while let Some(done) = writers.join_next().await {
            let out = done?;
            acked.extend(out.acked);
            attempted.extend(out.attempted);
            errors += out.errors;
            errors_while_up.extend(out.errors_while_up);
        }
        ensure!(
            errors_while_up.is_empty(),
            "round {round}: {} creates failed while the server was up, e.g. {:?}",
            errors_while_up.len(),
            &errors_while_up[..errors_while_up.len().min(3)]
        );
        ensure!(
            !acked.is_empty(),
            "round {round}: no create was acknowledged in {delay:?} ({errors} errors); log:\n{}",
            server.log_tail()
        );

        block_in_place(|| server.crash_and_restart())
            .with_context(|| format!("round {round}: restart after SIGKILL"))?;
        let client = server.client().await?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

        // Every round so far, not only this one: a later crash must not
        // lose what an earlier round had acknowledged.
        all_acked.insert(round, acked.clone());
        for (r, acked) in &all_acked {
            let present = stored(&api, *r).await?;
            let missing: Vec<&String> =
                acked.iter().filter(|n| !present.contains_key(*n)).collect();
            ensure!(
                missing.is_empty(),
                "round {round}: {} of {} acknowledged creates of round {r} are gone after the crash, e.g. {:?}",
                missing.len(),
                acked.len(),
                &missing[..missing.len().min(5)]
            );
            for (name, v) in &present {
                ensure!(*v == value_for(name), "{name} holds {v:?}");
            }
            if *r == round {
                let unknown: Vec<&String> =
                    present.keys().filter(|n| !attempted.contains(*n)).collect();
                ensure!(unknown.is_empty(), "objects never attempted: {unknown:?}");
            }
        }
        assert_healthy(&client, &api, round).await?;
        eprintln!(
            "round {round}: killed after {delay:?}; {} acknowledged, {} attempted, {} present",
            acked.len(),
            attempted.len(),
            stored(&api, round).await?.len()
        );
    }
    eprintln!("{ROUNDS} rounds in {:?}", started.elapsed());
    Ok(())
}
