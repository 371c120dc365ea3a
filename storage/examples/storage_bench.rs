//! Storage micro-benchmark (prints numbers; not a test): durable creates with
//! N concurrent clients, point gets, a full list, and watch-cache catch-up.
//!
//! Usage: `cargo run --release -p ubernetes-storage --example storage_bench [CLIENTS] [OBJECTS] [--no-fsync]`

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use ubernetes_storage::cache::{Attrs, CacheConfig, WatchCache};
use ubernetes_storage::sled_engine::{SledOptions, SledStorage};
use ubernetes_storage::{ListOptions, Storage};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fsync = !args.iter().any(|a| a == "--no-fsync");
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let clients = nums.first().copied().unwrap_or(32);
    let objects = nums.get(1).copied().unwrap_or(20_000);
    let dir = tempfile::TempDir::new()?;
    let store = Arc::new(SledStorage::open_with(
        dir.path(),
        SledOptions {
            fsync,
            ..Default::default()
        },
    )?);
    let dyn_store: Arc<dyn Storage> = store.clone();
    let cache = WatchCache::start(
        dyn_store,
        "/configmaps/".into(),
        Arc::new(|_| Attrs::default()),
        CacheConfig::default(),
    )
    .await?;

    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "bench", "labels": {"app": "bench"}},
        "data": {"k": "x".repeat(900)},
    });
    let value = Bytes::from(serde_json::to_vec(&body)?);
    let per = objects / clients;
    let t = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let store = store.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per {
                store
                    .create(&format!("/configmaps/bench/c{c:02}-{i:06}"), value.clone())
                    .await?;
            }
            Ok::<(), ubernetes_storage::StorageError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let n = per * clients;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "durable creates: {n} x {} B, {clients} clients{}: {:.0}/s",
        value.len(),
        if fsync { "" } else { " (no fsync)" },
        n as f64 / secs
    );

    println!(
        "  group flushes: {} ({:.1} writes each)",
        store.flush_count(),
        n as f64 / store.flush_count().max(1) as f64
    );
    let rev = store.current_revision().await?;
    let t = Instant::now();
    cache.wait_for_revision(rev).await?;
    println!(
        "watch cache caught up {:?} after the last create",
        t.elapsed()
    );

    let t = Instant::now();
    let gets = 100_000;
    for i in 0..gets {
        let key = format!("/configmaps/bench/c{:02}-{:06}", i % clients, i % per);
        store.get(&key).await?;
    }
    println!(
        "storage gets (1 task): {:.0}/s",
        gets as f64 / t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    for i in 0..gets {
        let key = format!("/configmaps/bench/c{:02}-{:06}", i % clients, i % per);
        cache.get(&key);
    }
    println!(
        "cache gets (1 task): {:.0}/s",
        gets as f64 / t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let l = store.list("/configmaps/", ListOptions::default()).await?;
    println!("storage list of {}: {:?}", l.items.len(), t.elapsed());
    let t = Instant::now();
    let (items, _, _) = cache.list("/configmaps/", None, None, 0);
    println!("cache list of {}: {:?}", items.len(), t.elapsed());
    let t = Instant::now();
    let l = store
        .list(
            "/configmaps/",
            ListOptions {
                limit: Some(500),
                revision: Some(rev / 2),
                ..Default::default()
            },
        )
        .await?;
    println!(
        "storage list page of {} at revision {} (remaining {}): {:?}",
        l.items.len(),
        rev / 2,
        l.remaining,
        t.elapsed()
    );
    let t = Instant::now();
    store.compact(rev).await?;
    println!("compact {rev} events: {:?}", t.elapsed());
    println!("size on disk: {} MiB", store.size_on_disk()? / (1 << 20));
    Ok(())
}
