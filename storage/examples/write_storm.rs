//! A write storm for crash testing: opens a [`SledStorage`] at `argv[1]` and
//! creates keys from several tasks until killed, printing each key to stdout
//! only after its `create` returned Ok (i.e. once it is acknowledged, hence
//! durable). `storage/tests/crash.rs` SIGKILLs it and checks every printed
//! key survived.
//!
//! Usage: `write_storm DIR [TAG]` (TAG prefixes the keys; default: the pid).

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use ubernetes_storage::Storage;
use ubernetes_storage::sled_engine::SledStorage;

const WRITERS: usize = 8;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: write_storm DIR [TAG]")?;
    let tag = args
        .next()
        .unwrap_or_else(|| std::process::id().to_string());
    let store = Arc::new(SledStorage::open(std::path::Path::new(&dir))?);
    let value = Bytes::from(vec![b'x'; 512]);
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        let tag = tag.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0u64.. {
                let key = format!("/storm/{tag}/{w}/{i:08}");
                store.create(&key, value.clone()).await?;
                let mut out = std::io::stdout().lock();
                writeln!(out, "{key}").map_err(|e| e.to_string())?;
                out.flush().map_err(|e| e.to_string())?;
            }
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for t in tasks {
        t.await?.map_err(|e| e.to_string())?;
    }
    Ok(())
}
