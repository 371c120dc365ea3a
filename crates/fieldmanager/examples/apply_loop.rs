//! A micro-benchmark of the member copy's server-side apply: the bench's
//! 1 KiB ConfigMap applied N times as a create (no live object) and as an
//! update (one key changed) by the same manager with `force`, as
//! `bench api --only apply` sends it; prints the time per apply. Run it
//! under `perf stat -e instructions` for a load-independent figure:
//!
//! ```sh
//! cargo run --release -p ubernetes-fieldmanager --example apply_loop -- 20000
//! ```

use std::time::Instant;

use serde_json::{Value, json};
use ubernetes_fieldmanager::{Context, Schema, apply};
use ubernetes_openapi::definitions;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let defs = definitions().snapshot();
    let ctx = Context {
        manager: "bench",
        api_version: "v1",
        subresource: "",
        now: "2026-11-28T00:00:00Z",
        schema: Schema::definition(&defs, "io.k8s.api.core.v1.ConfigMap"),
        ignored: None,
    };
    let payload = "x".repeat(1024);
    let applied = |counter: u32| -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ap-000001", "labels": {"bench-apply": "g1"}},
            "data": {"payload": payload, "counter": counter.to_string()}
        })
    };
    let first = applied(0);
    let second = applied(1);
    let mut live = match apply(None, &first, true, &ctx) {
        Ok(v) => v,
        Err(e) => panic!("create: {e}"),
    };
    let meta = &mut live["metadata"];
    meta["namespace"] = json!("bench");
    meta["uid"] = json!("0b5c3e8e-1f0e-4e55-9a53-6a3f1c1f2e11");
    meta["resourceVersion"] = json!("12345");
    meta["creationTimestamp"] = json!("2026-11-28T00:00:00Z");

    let start = Instant::now();
    let mut sink = 0usize;
    for _ in 0..n {
        if let Ok(v) = apply(None, &first, true, &ctx) {
            sink += v.as_object().map_or(0, |o| o.len());
        }
    }
    let create = start.elapsed();
    let start = Instant::now();
    for _ in 0..n {
        if let Ok(v) = apply(Some(&live), &second, true, &ctx) {
            sink += v.as_object().map_or(0, |o| o.len());
        }
    }
    let update = start.elapsed();
    println!(
        "apply-create {:.2} us, apply-update {:.2} us per apply ({n} each, {sink})",
        create.as_secs_f64() * 1e6 / n as f64,
        update.as_secs_f64() * 1e6 / n as f64
    );
}
