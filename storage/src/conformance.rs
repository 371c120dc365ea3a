//! The engine conformance suite: the behaviour every [`Storage`] engine must
//! have, as async functions that panic on a violation (like kube-apiserver's
//! `storage/testing/store_tests.go`). Engines run it from their integration
//! tests:
//!
//! ```ignore
//! ubernetes_storage::conformance::run_all(|| async { Arc::new(make_engine()) as Arc<dyn Storage> }).await;
//! ```
//!
//! Every case gets a fresh engine from `make` and only assumes revisions
//! relative to the engine's revision when the case starts, so an engine on a
//! shared backend (etcd) passes too as long as nobody else writes under
//! `/conformance/`.
//!
//! The values written are small JSON objects of apiVersion [`API_VERSION`]
//! and kind [`KIND`] ([`value`]), so the suite also runs through storage
//! layers that read JSON (the registry's conversion layers), and every value
//! read is compared with the value written: a layer that forgets to
//! transform a value back on some path fails the case.
//! [`forwards_every_method`] checks the other half of a layer stack: each
//! [`Storage`] method called on top reaches the engine as that same method.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use crate::{
    Event, EventType, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// How long a case waits for a watch event before failing.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Run every case, each on a fresh engine from `make`.
pub async fn run_all<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Storage>>,
{
    create_get_and_already_exists(make().await).await;
    update_is_compare_and_swap(make().await).await;
    delete_with_and_without_precondition(make().await).await;
    revision_is_global_and_bumps_by_one_per_write(make().await).await;
    list_by_prefix_is_ordered_and_does_not_leak(make().await).await;
    list_pages_with_limit_start_after_and_remaining(make().await).await;
    list_at_an_older_revision_sees_the_old_state(make().await).await;
    watch_replays_then_follows_live(make().await).await;
    watch_started_during_writes_has_no_gap_or_duplicate(make().await).await;
    watch_only_sees_its_prefix(make().await).await;
    compaction_makes_older_revisions_unavailable(make().await).await;
    concurrent_creates_get_distinct_revisions(make().await).await;
    watch_progress_reports_writes_under_other_prefixes(make().await).await;
}

/// The apiVersion of the values the suite writes.
pub const API_VERSION: &str = "conformance.ubernetes.io/v1";
/// The kind of the values the suite writes.
pub const KIND: &str = "Probe";

/// The value the suite writes for `s`:
/// `{"apiVersion":API_VERSION,"kind":KIND,"value":s}`.
pub fn value(s: &str) -> Bytes {
    let v = serde_json::json!({"apiVersion": API_VERSION, "kind": KIND, "value": s});
    Bytes::from(v.to_string())
}

fn val(s: &str) -> Bytes {
    value(s)
}

async fn rev(s: &Arc<dyn Storage>) -> Revision {
    s.current_revision().await.expect("current_revision")
}

async fn create(s: &Arc<dyn Storage>, key: &str, v: &str) -> KeyValue {
    s.create(key, val(v))
        .await
        .unwrap_or_else(|e| panic!("create {key}: {e}"))
}

async fn list(s: &Arc<dyn Storage>, prefix: &str, opts: ListOptions) -> ListResult {
    s.list(prefix, opts)
        .await
        .unwrap_or_else(|e| panic!("list {prefix}: {e}"))
}

fn keys(r: &ListResult) -> Vec<&str> {
    r.items.iter().map(|kv| kv.key.as_str()).collect()
}

/// The next event of `w`, failing the case on timeout, error or end.
pub async fn next_event(w: &mut WatchStream) -> Event {
    match tokio::time::timeout(EVENT_TIMEOUT, w.next()).await {
        Ok(Some(Ok(ev))) => ev,
        Ok(Some(Err(e))) => panic!("watch failed: {e}"),
        Ok(None) => panic!("watch ended"),
        Err(_) => panic!("no watch event within {EVENT_TIMEOUT:?}"),
    }
}

/// create, get, and create of an existing key.
pub async fn create_get_and_already_exists(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    assert_eq!(s.get("/conformance/a/x").await.expect("get"), None);
    let kv = create(&s, "/conformance/a/x", "one").await;
    assert_eq!(kv.key, "/conformance/a/x");
    assert_eq!(kv.value, val("one"));
    assert_eq!(kv.mod_revision, base + 1);
    assert_eq!(kv.create_revision, base + 1);
    assert_eq!(
        s.get("/conformance/a/x").await.expect("get"),
        Some(kv.clone())
    );
    match s.create("/conformance/a/x", val("two")).await {
        Err(StorageError::AlreadyExists { key }) => assert_eq!(key, "/conformance/a/x"),
        other => panic!("second create: expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        rev(&s).await,
        base + 1,
        "a failed create must not bump the revision"
    );
    assert_eq!(s.get("/conformance/a/x").await.expect("get"), Some(kv));
}

/// update succeeds at the current revision and conflicts at a stale one.
pub async fn update_is_compare_and_swap(s: Arc<dyn Storage>) {
    let created = create(&s, "/conformance/u/x", "v1").await;
    let updated = s
        .update("/conformance/u/x", val("v2"), created.mod_revision)
        .await
        .expect("update at the current revision");
    assert_eq!(updated.value, val("v2"));
    assert_eq!(updated.create_revision, created.create_revision);
    assert_eq!(updated.mod_revision, created.mod_revision + 1);
    match s
        .update("/conformance/u/x", val("v3"), created.mod_revision)
        .await
    {
        Err(StorageError::Conflict {
            key,
            expected,
            actual,
        }) => {
            assert_eq!(key, "/conformance/u/x");
            assert_eq!(expected, created.mod_revision);
            assert_eq!(actual, updated.mod_revision);
        }
        other => panic!("stale update: expected Conflict, got {other:?}"),
    }
    assert_eq!(
        s.get("/conformance/u/x").await.expect("get"),
        Some(updated.clone())
    );
    match s.update("/conformance/u/missing", val("v"), 1).await {
        Err(StorageError::NotFound { key }) => assert_eq!(key, "/conformance/u/missing"),
        other => panic!("update of a missing key: expected NotFound, got {other:?}"),
    }
    assert_eq!(rev(&s).await, updated.mod_revision);
}

/// delete with a matching / stale precondition and without one.
pub async fn delete_with_and_without_precondition(s: Arc<dyn Storage>) {
    let a = create(&s, "/conformance/d/a", "a").await;
    let b = create(&s, "/conformance/d/b", "b").await;
    match s
        .delete("/conformance/d/a", Some(a.mod_revision + 100))
        .await
    {
        Err(StorageError::Conflict {
            expected, actual, ..
        }) => {
            assert_eq!(expected, a.mod_revision + 100);
            assert_eq!(actual, a.mod_revision);
        }
        other => panic!("delete with a stale precondition: expected Conflict, got {other:?}"),
    }
    assert!(s.get("/conformance/d/a").await.expect("get").is_some());
    let gone = s
        .delete("/conformance/d/a", Some(a.mod_revision))
        .await
        .expect("delete with a matching precondition");
    assert_eq!(gone.value, val("a"));
    assert_eq!(gone.create_revision, a.create_revision);
    assert_eq!(gone.mod_revision, b.mod_revision + 1, "deletion's revision");
    assert_eq!(s.get("/conformance/d/a").await.expect("get"), None);
    let gone_b = s
        .delete("/conformance/d/b", None)
        .await
        .expect("unconditional delete");
    assert_eq!(gone_b.value, val("b"));
    assert_eq!(gone_b.mod_revision, gone.mod_revision + 1);
    match s.delete("/conformance/d/b", None).await {
        Err(StorageError::NotFound { .. }) => {}
        other => panic!("delete of a missing key: expected NotFound, got {other:?}"),
    }
    // A key can be created again after its deletion, with a new create_revision.
    let again = create(&s, "/conformance/d/a", "a2").await;
    assert_eq!(again.create_revision, gone_b.mod_revision + 1);
}

/// Every successful write bumps one global counter by exactly one.
pub async fn revision_is_global_and_bumps_by_one_per_write(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    let a = create(&s, "/conformance/r/a", "1").await;
    let b = create(&s, "/conformance/r/other/b", "1").await;
    let a2 = s
        .update("/conformance/r/a", val("2"), a.mod_revision)
        .await
        .expect("update");
    let _ = s.update("/conformance/r/a", val("x"), a.mod_revision).await;
    let _ = s.create("/conformance/r/a", val("x")).await;
    let d = s
        .delete("/conformance/r/other/b", None)
        .await
        .expect("delete");
    assert_eq!(
        [
            a.mod_revision,
            b.mod_revision,
            a2.mod_revision,
            d.mod_revision
        ],
        [base + 1, base + 2, base + 3, base + 4]
    );
    assert_eq!(rev(&s).await, base + 4);
}

/// A prefix list is in key order and does not include keys that merely
/// share the prefix's characters (`/a/` vs `/ab/`).
pub async fn list_by_prefix_is_ordered_and_does_not_leak(s: Arc<dyn Storage>) {
    for k in [
        "/conformance/l/a/c",
        "/conformance/l/ab/x",
        "/conformance/l/a/a",
        "/conformance/l/a",
        "/conformance/l/a/b",
        "/conformance/l/b/a",
    ] {
        create(&s, k, k).await;
    }
    let r = list(&s, "/conformance/l/a/", ListOptions::default()).await;
    assert_eq!(
        keys(&r),
        [
            "/conformance/l/a/a",
            "/conformance/l/a/b",
            "/conformance/l/a/c"
        ]
    );
    assert_eq!(r.remaining, 0);
    assert_eq!(r.revision, rev(&s).await);
    for kv in &r.items {
        assert_eq!(kv.value, val(&kv.key), "each key's own value");
    }
    let all = list(&s, "/conformance/l/", ListOptions::default()).await;
    assert_eq!(all.items.len(), 6);
    assert!(all.items.windows(2).all(|w| w[0].key < w[1].key));
    assert!(
        list(&s, "/conformance/l/c/", ListOptions::default())
            .await
            .items
            .is_empty()
    );
}

/// `limit` + `start_after` page through a prefix; `remaining` counts the rest.
pub async fn list_pages_with_limit_start_after_and_remaining(s: Arc<dyn Storage>) {
    for i in 0..10 {
        create(&s, &format!("/conformance/p/k{i:02}"), "v").await;
    }
    create(&s, "/conformance/pz", "other prefix").await;
    let at = rev(&s).await;
    let mut seen = Vec::new();
    let mut start_after: Option<String> = None;
    let mut remainings = Vec::new();
    loop {
        let r = list(
            &s,
            "/conformance/p/",
            ListOptions {
                start_after: start_after.clone(),
                limit: Some(3),
                revision: Some(at),
            },
        )
        .await;
        assert!(r.items.len() <= 3);
        assert_eq!(r.revision, at);
        seen.extend(r.items.iter().map(|kv| kv.key.clone()));
        remainings.push(r.remaining);
        if r.remaining == 0 {
            break;
        }
        start_after = r.items.last().map(|kv| kv.key.clone());
        assert!(start_after.is_some(), "a page with remaining > 0 has items");
    }
    let expected: Vec<String> = (0..10).map(|i| format!("/conformance/p/k{i:02}")).collect();
    assert_eq!(seen, expected);
    assert_eq!(remainings, [7, 4, 1, 0]);
    // limit 0 means no limit; start_after before the prefix starts at the prefix.
    let r = list(
        &s,
        "/conformance/p/",
        ListOptions {
            start_after: Some("/a".into()),
            limit: Some(0),
            revision: None,
        },
    )
    .await;
    assert_eq!(r.items.len(), 10);
    assert_eq!(r.remaining, 0);
}

/// A list at an older revision returns the state as of that revision.
pub async fn list_at_an_older_revision_sees_the_old_state(s: Arc<dyn Storage>) {
    let a = create(&s, "/conformance/o/a", "a1").await;
    let b = create(&s, "/conformance/o/b", "b1").await;
    let at = rev(&s).await;
    s.update("/conformance/o/a", val("a2"), a.mod_revision)
        .await
        .expect("update");
    s.delete("/conformance/o/b", Some(b.mod_revision))
        .await
        .expect("delete");
    create(&s, "/conformance/o/c", "c1").await;
    let old = list(
        &s,
        "/conformance/o/",
        ListOptions {
            revision: Some(at),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(old.revision, at);
    assert_eq!(old.items, vec![a.clone(), b.clone()]);
    let now = list(&s, "/conformance/o/", ListOptions::default()).await;
    assert_eq!(keys(&now), ["/conformance/o/a", "/conformance/o/c"]);
    assert_eq!(now.items[0].value, val("a2"));
    // Paging at the old revision: the deleted key still counts.
    let page = list(
        &s,
        "/conformance/o/",
        ListOptions {
            start_after: None,
            limit: Some(1),
            revision: Some(at),
        },
    )
    .await;
    assert_eq!(page.items, vec![a]);
    assert_eq!(page.remaining, 1);
    let page2 = list(
        &s,
        "/conformance/o/",
        ListOptions {
            start_after: Some("/conformance/o/a".into()),
            limit: Some(1),
            revision: Some(at),
        },
    )
    .await;
    assert_eq!(page2.items, vec![b]);
    assert_eq!(page2.remaining, 0);
}

/// A watch from a past revision replays history, then follows live writes,
/// with the right event types and previous values.
pub async fn watch_replays_then_follows_live(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    let a = create(&s, "/conformance/w/a", "a1").await;
    let a2 = s
        .update("/conformance/w/a", val("a2"), a.mod_revision)
        .await
        .expect("update");
    let mut w = s.watch("/conformance/w/", base).await.expect("watch");
    let e1 = next_event(&mut w).await;
    assert_eq!(e1.kind, EventType::Added);
    assert_eq!(e1.kv, a);
    assert_eq!(e1.prev, None);
    assert_eq!(e1.revision(), base + 1);
    let e2 = next_event(&mut w).await;
    assert_eq!(e2.kind, EventType::Modified);
    assert_eq!(e2.kv, a2);
    assert_eq!(e2.prev, Some(a.clone()));
    // Live from here.
    let d = s.delete("/conformance/w/a", None).await.expect("delete");
    let e3 = next_event(&mut w).await;
    assert_eq!(e3.kind, EventType::Deleted);
    assert_eq!(e3.kv, d);
    assert_eq!(e3.kv.mod_revision, base + 3);
    assert_eq!(e3.kv.value, val("a2"));
    assert_eq!(e3.prev, Some(a2));
    let b = create(&s, "/conformance/w/b", "b").await;
    let e4 = next_event(&mut w).await;
    assert_eq!((e4.kind, e4.kv), (EventType::Added, b));
    // A watch from the current revision sees only what comes next.
    let now = rev(&s).await;
    let mut w2 = s.watch("/conformance/w/", now).await.expect("watch");
    let c = create(&s, "/conformance/w/c", "c").await;
    assert_eq!(next_event(&mut w2).await.kv, c);
    assert_eq!(next_event(&mut w).await.kv, c, "no duplicate, no gap");
}

/// A watch started while writers run sees every revision exactly once, in
/// order (the race between replaying history and subscribing to live events).
pub async fn watch_started_during_writes_has_no_gap_or_duplicate(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    const N: u64 = 300;
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..N {
                s.create(&format!("/conformance/race/k{i:04}"), val("v"))
                    .await
                    .expect("create");
            }
        })
    };
    let mut watches = Vec::new();
    for _ in 0..5 {
        tokio::task::yield_now().await;
        watches.push(s.watch("/conformance/race/", base).await.expect("watch"));
    }
    writer.await.expect("writer task");
    for w in &mut watches {
        for i in 1..=N {
            let ev = next_event(w).await;
            assert_eq!(ev.revision(), base + i, "event {i}");
            assert_eq!(ev.kind, EventType::Added);
        }
    }
    // Nothing extra queued: the next event is a fresh write.
    let last = create(&s, "/conformance/race/zz", "end").await;
    for w in &mut watches {
        assert_eq!(next_event(w).await.kv, last);
    }
}

/// A watch never sees keys outside its prefix.
pub async fn watch_only_sees_its_prefix(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    let mut w = s.watch("/conformance/wp/a/", base).await.expect("watch");
    create(&s, "/conformance/wp/ab/x", "no").await;
    create(&s, "/conformance/wp/b/x", "no").await;
    let mine = create(&s, "/conformance/wp/a/x", "yes").await;
    create(&s, "/conformance/wp/a", "no").await;
    let mine2 = create(&s, "/conformance/wp/a/y", "yes").await;
    assert_eq!(next_event(&mut w).await.kv, mine);
    assert_eq!(next_event(&mut w).await.kv, mine2);
}

/// After `compact(r)`, lists and watches below `r` fail with `Compacted`;
/// at `r` and later they work.
pub async fn compaction_makes_older_revisions_unavailable(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    let a = create(&s, "/conformance/c/a", "1").await;
    let a2 = s
        .update("/conformance/c/a", val("2"), a.mod_revision)
        .await
        .expect("update");
    let a3 = s
        .update("/conformance/c/a", val("3"), a2.mod_revision)
        .await
        .expect("update");
    s.compact(a2.mod_revision).await.expect("compact");
    assert_eq!(
        s.compacted_revision().await.expect("compacted_revision"),
        a2.mod_revision
    );
    let at = |r| ListOptions {
        revision: Some(r),
        ..Default::default()
    };
    match s.list("/conformance/c/", at(base + 1)).await {
        Err(StorageError::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, base + 1);
            assert_eq!(compacted, a2.mod_revision);
        }
        other => panic!("list below the compacted revision: expected Compacted, got {other:?}"),
    }
    assert!(matches!(
        s.watch("/conformance/c/", base + 1).await,
        Err(StorageError::Compacted { .. })
    ));
    let r = list(&s, "/conformance/c/", at(a2.mod_revision)).await;
    assert_eq!(r.items, vec![a2.clone()]);
    let mut w = s
        .watch("/conformance/c/", a2.mod_revision)
        .await
        .expect("watch at the compacted revision");
    let ev = next_event(&mut w).await;
    assert_eq!((ev.kind, ev.kv), (EventType::Modified, a3.clone()));
    // Compacting again lower is a no-op; the current state is untouched.
    s.compact(base).await.expect("compact lower");
    assert_eq!(
        s.compacted_revision().await.expect("compacted_revision"),
        a2.mod_revision
    );
    assert_eq!(
        s.get("/conformance/c/a").await.expect("get"),
        Some(a3.clone())
    );
    // Compacting everything keeps the revision counter and current state.
    s.compact(a3.mod_revision).await.expect("compact all");
    assert_eq!(rev(&s).await, a3.mod_revision);
    assert_eq!(
        list(&s, "/conformance/c/", ListOptions::default())
            .await
            .items,
        vec![a3.clone()]
    );
    let b = create(&s, "/conformance/c/b", "b").await;
    assert_eq!(b.mod_revision, a3.mod_revision + 1);
    assert_eq!(next_event(&mut w).await.kv, b);
}

/// Many tasks creating at once all succeed with distinct revisions, and the
/// counter ends exactly that many writes later.
pub async fn concurrent_creates_get_distinct_revisions(s: Arc<dyn Storage>) {
    let base = rev(&s).await;
    const TASKS: usize = 16;
    const EACH: usize = 25;
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let s = s.clone();
        handles.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..EACH {
                let kv = s
                    .create(&format!("/conformance/cc/t{t:02}-{i:03}"), val("v"))
                    .await
                    .expect("concurrent create");
                revs.push(kv.mod_revision);
            }
            revs
        }));
    }
    let mut all = HashSet::new();
    for h in handles {
        for r in h.await.expect("task") {
            assert!(all.insert(r), "revision {r} handed out twice");
        }
    }
    let n = (TASKS * EACH) as u64;
    assert_eq!(all.len() as u64, n);
    assert!(all.iter().all(|r| *r > base && *r <= base + n));
    assert_eq!(rev(&s).await, base + n);
    let r = list(&s, "/conformance/cc/", ListOptions::default()).await;
    assert_eq!(r.items.len() as u64, n);
}

/// `watch_progress` delivers the prefix's events in order and reports
/// progress past writes under other prefixes (what lets a watch cache answer
/// "wait until revision r" for any r). An engine that says it cannot
/// ([`Storage::serves_progress_requests`]: an old etcd) need not report, but
/// a report it gives must not run ahead of the events.
pub async fn watch_progress_reports_writes_under_other_prefixes(s: Arc<dyn Storage>) {
    let must_report = s.serves_progress_requests();
    let base = rev(&s).await;
    let mut w = s
        .watch_progress("/conformance/pg/mine/", base)
        .await
        .expect("watch_progress");
    let mine = create(&s, "/conformance/pg/mine/a", "a").await;
    let other = create(&s, "/conformance/pg/other/b", "b").await;
    let mut saw_event = false;
    loop {
        // Without reports to wait for, a second is enough to catch one that
        // would run ahead.
        let patience = if !must_report && saw_event {
            Duration::from_secs(1)
        } else {
            EVENT_TIMEOUT
        };
        let item = match tokio::time::timeout(patience, w.next()).await {
            Ok(Some(Ok(item))) => item,
            Ok(Some(Err(e))) => panic!("watch_progress failed: {e}"),
            Ok(None) => panic!("watch_progress ended"),
            Err(_) if !must_report && saw_event => break,
            Err(_) => panic!(
                "no progress past revision {} within {EVENT_TIMEOUT:?}",
                other.mod_revision
            ),
        };
        match item {
            WatchItem::Event(ev) => {
                assert!(!saw_event, "one event expected");
                assert_eq!(ev.kv, mine);
                saw_event = true;
            }
            WatchItem::Progress(r) => {
                if r >= mine.mod_revision {
                    assert!(saw_event, "progress past an event not yet delivered");
                }
                if r >= other.mod_revision {
                    break;
                }
            }
        }
    }
}

/// A [`Storage`] that forwards every method to `inner` and records which
/// were called: put between an engine and a stack of layers, it shows that
/// each method called on top reaches the engine ([`forwards_every_method`]).
/// A new `Storage` method is added here too.
pub struct Recorder {
    inner: Arc<dyn Storage>,
    calls: parking_lot::Mutex<Vec<&'static str>>,
}

impl Recorder {
    /// Record the calls made to `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        Self {
            inner,
            calls: parking_lot::Mutex::new(Vec::new()),
        }
    }

    fn record(&self, method: &'static str) {
        self.calls.lock().push(method);
    }

    /// The calls recorded since the last `take_calls`.
    pub fn take_calls(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.calls.lock())
    }
}

#[async_trait::async_trait]
impl Storage for Recorder {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.record("get");
        self.inner.get(key).await
    }

    async fn get_with_staleness(
        &self,
        key: &str,
    ) -> Result<Option<(KeyValue, bool)>, StorageError> {
        self.record("get_with_staleness");
        self.inner.get_with_staleness(key).await
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        self.record("list");
        self.inner.list(prefix, opts).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        self.record("create");
        self.inner.create(key, value).await
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        self.record("update");
        self.inner.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        self.record("delete");
        self.inner.delete(key, expected).await
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        self.record("watch");
        self.inner.watch(prefix, from).await
    }

    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<crate::ProgressWatchStream, StorageError> {
        self.record("watch_progress");
        self.inner.watch_progress(prefix, from).await
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.record("current_revision");
        self.inner.current_revision().await
    }

    async fn consistent_read_revision(&self) -> Result<Option<Revision>, StorageError> {
        self.record("consistent_read_revision");
        self.inner.consistent_read_revision().await
    }

    fn request_progress(&self) {
        self.record("request_progress");
        self.inner.request_progress();
    }

    fn serves_progress_requests(&self) -> bool {
        self.record("serves_progress_requests");
        self.inner.serves_progress_requests()
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.record("compact");
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.record("compacted_revision");
        self.inner.compacted_revision().await
    }
}

/// Every [`Storage`] method called on the stack `stack` builds over
/// `engine` reaches `engine` as that same method (a layer that answered
/// `get_with_staleness` with the engine's `get`, `watch_progress` with its
/// `watch`, or `serves_progress_requests` by itself would hide what the
/// engine does), and the answers that are the engine's alone (revisions,
/// progress support) are passed on unchanged. A consistent read may wait
/// for more than the engine says (a layer that marks writes), never less.
pub async fn forwards_every_method(
    engine: Arc<dyn Storage>,
    stack: impl FnOnce(Arc<dyn Storage>) -> Arc<dyn Storage>,
) {
    let recorder = Arc::new(Recorder::new(engine.clone()));
    let top = stack(recorder.clone() as Arc<dyn Storage>);
    let key = "/conformance/fw/things/x";
    // Which engine calls one call on top makes: the method itself (reads
    // through some layers may add more calls of their own, never others
    // instead of it).
    async fn expect<T>(recorder: &Recorder, method: &'static str, f: impl Future<Output = T>) -> T {
        recorder.take_calls();
        let out = f.await;
        let calls = recorder.take_calls();
        assert!(
            calls.contains(&method),
            "`{method}` on the stack did not reach the engine (it called {calls:?})"
        );
        out
    }
    let kv = expect(&recorder, "create", top.create(key, val("one")))
        .await
        .expect("create");
    assert_eq!(kv.value, val("one"));
    let got = expect(&recorder, "get", top.get(key)).await.expect("get");
    assert_eq!(got, Some(kv.clone()));
    let (got, _) = expect(&recorder, "get_with_staleness", top.get_with_staleness(key))
        .await
        .expect("get_with_staleness")
        .expect("present");
    assert_eq!(got, kv);
    let kv2 = expect(
        &recorder,
        "update",
        top.update(key, val("two"), kv.mod_revision),
    )
    .await
    .expect("update");
    assert_eq!(kv2.value, val("two"));
    let l = expect(
        &recorder,
        "list",
        top.list("/conformance/fw/", ListOptions::default()),
    )
    .await
    .expect("list");
    assert_eq!(l.items, vec![kv2.clone()]);
    let mut w = expect(
        &recorder,
        "watch",
        top.watch("/conformance/fw/", kv.mod_revision),
    )
    .await
    .expect("watch");
    assert_eq!(next_event(&mut w).await.kv, kv2);
    let mut wp = expect(
        &recorder,
        "watch_progress",
        top.watch_progress("/conformance/fw/", kv.mod_revision),
    )
    .await
    .expect("watch_progress");
    match tokio::time::timeout(EVENT_TIMEOUT, wp.next()).await {
        Ok(Some(Ok(WatchItem::Event(ev)))) => assert_eq!(ev.kv, kv2),
        other => panic!("watch_progress: expected the update, got {other:?}"),
    }
    let gone = expect(&recorder, "delete", top.delete(key, Some(kv2.mod_revision)))
        .await
        .expect("delete");
    assert_eq!(gone.value, val("two"));
    let r = expect(&recorder, "current_revision", top.current_revision())
        .await
        .expect("current_revision");
    assert_eq!(
        r,
        engine.current_revision().await.expect("current_revision")
    );
    let c = expect(
        &recorder,
        "consistent_read_revision",
        top.consistent_read_revision(),
    )
    .await
    .expect("consistent_read_revision");
    if let Some(below) = engine
        .consistent_read_revision()
        .await
        .expect("consistent_read_revision")
    {
        assert!(
            c.is_some_and(|c| c >= below),
            "a consistent read on the stack waits for {c:?}, the engine's for {below}"
        );
    }
    expect(&recorder, "request_progress", async {
        top.request_progress()
    })
    .await;
    let serves = expect(&recorder, "serves_progress_requests", async {
        top.serves_progress_requests()
    })
    .await;
    assert_eq!(serves, engine.serves_progress_requests());
    expect(&recorder, "compact", top.compact(kv.mod_revision))
        .await
        .expect("compact");
    let compacted = expect(&recorder, "compacted_revision", top.compacted_revision())
        .await
        .expect("compacted_revision");
    assert_eq!(compacted, kv.mod_revision);
    assert_eq!(
        engine
            .compacted_revision()
            .await
            .expect("compacted_revision"),
        kv.mod_revision
    );
}
