//! The watch cache over a real [`SledStorage`]: reads after writes, watch
//! resume, filtered transitions, slow watchers, the resume window, and
//! re-listing when the upstream watch fails.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::Notify;
use ubernetes_storage::cache::{
    Attrs, AttrsFn, CacheConfig, CacheEvent, CacheWatchReceiver, CachedObject, FilterFn, WatchCache,
};
use ubernetes_storage::sled_engine::SledStorage;
use ubernetes_storage::{
    EventType, KeyValue, ListOptions, ListResult, ProgressWatchStream, Revision, Storage,
    StorageError, WatchStream,
};

fn attrs_fn() -> AttrsFn {
    Arc::new(|v: &Value| {
        let mut a = Attrs::default();
        if let Some(labels) = v["metadata"]["labels"].as_object() {
            for (k, val) in labels {
                a.labels
                    .insert(k.clone(), val.as_str().unwrap_or_default().to_owned());
            }
        }
        for f in ["name", "namespace"] {
            if let Some(s) = v["metadata"][f].as_str() {
                a.fields.insert(format!("metadata.{f}"), s.to_owned());
            }
        }
        a
    })
}

fn obj(ns: &str, name: &str, labels: Value, data: &str) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "data": {"k": data},
        }))
        .expect("json"),
    )
}

fn key(ns: &str, name: &str) -> String {
    format!("/configmaps/{ns}/{name}")
}

fn json_of(o: &CachedObject) -> Value {
    serde_json::from_slice(&o.json).expect("cached json")
}

fn rv_of(o: &CachedObject) -> String {
    json_of(o)["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_owned()
}

fn names(items: &[Arc<CachedObject>]) -> Vec<String> {
    items.iter().map(|o| o.key.clone()).collect()
}

async fn sled() -> (tempfile::TempDir, Arc<SledStorage>) {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let s = Arc::new(SledStorage::open(dir.path()).expect("open"));
    (dir, s)
}

async fn start(s: Arc<dyn Storage>, config: CacheConfig) -> Arc<WatchCache> {
    WatchCache::start(s, "/configmaps/".into(), attrs_fn(), config)
        .await
        .expect("cache starts")
}

async fn recv(rx: &mut CacheWatchReceiver) -> Result<CacheEvent, StorageError> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a cache event in time")
        .expect("watch channel open")
}

async fn event(rx: &mut CacheWatchReceiver) -> CacheEvent {
    recv(rx).await.expect("an event, not an error")
}

#[tokio::test]
async fn gets_and_lists_see_writes_after_wait_for_revision() {
    let (_dir, s) = sled().await;
    let pre = s
        .create(
            &key("ns1", "pre"),
            obj("ns1", "pre", json!({"app": "x"}), "0"),
        )
        .await
        .expect("create");
    let cache = start(s.clone(), CacheConfig::default()).await;
    assert_eq!(cache.revision(), pre.mod_revision);
    let got = cache.get(&key("ns1", "pre")).expect("initial list loaded");
    assert_eq!(rv_of(&got), pre.mod_revision.to_string());

    let mut last = 0;
    for (ns, name, app) in [
        ("ns1", "b", "x"),
        ("ns2", "a", "y"),
        ("ns1", "a", "y"),
        ("ns1", "c", "x"),
    ] {
        last = s
            .create(&key(ns, name), obj(ns, name, json!({"app": app}), "1"))
            .await
            .expect("create")
            .mod_revision;
    }
    cache
        .wait_for_revision(last)
        .await
        .expect("cache catches up");
    assert!(cache.revision() >= last);

    let c = cache
        .get(&key("ns1", "c"))
        .expect("written object is cached");
    assert_eq!(c.mod_revision, last);
    assert_eq!(rv_of(&c), last.to_string());
    assert_eq!(json_of(&c)["data"]["k"], "1");
    assert_eq!(c.attrs.labels.get("app"), Some("x"));
    assert_eq!(c.attrs.fields.get("metadata.namespace"), Some("ns1"));
    assert!(cache.get(&key("ns3", "nope")).is_none());

    let (items, rev, remaining) = cache.list("/configmaps/ns1/", None, None, 0);
    assert_eq!(
        names(&items),
        [
            key("ns1", "a"),
            key("ns1", "b"),
            key("ns1", "c"),
            key("ns1", "pre")
        ]
    );
    assert_eq!((rev, remaining), (cache.revision(), 0));

    let (page, _, remaining) = cache.list("/configmaps/", None, None, 2);
    assert_eq!(names(&page), [key("ns1", "a"), key("ns1", "b")]);
    assert_eq!(remaining, 3);
    let (page, _, remaining) = cache.list("/configmaps/", Some(&key("ns1", "b")), None, 2);
    assert_eq!(names(&page), [key("ns1", "c"), key("ns1", "pre")]);
    assert_eq!(remaining, 1);

    let app_x: FilterFn = Arc::new(|o: &CachedObject| o.attrs.labels.get("app") == Some("x"));
    let (items, _, remaining) = cache.list("/configmaps/", None, Some(&app_x), 1);
    assert_eq!(names(&items), [key("ns1", "b")]);
    assert_eq!(remaining, 2, "only matching items are counted");
}

#[tokio::test]
async fn wait_for_revision_completes_for_writes_under_other_prefixes() {
    let (_dir, s) = sled().await;
    let cache = start(s.clone(), CacheConfig::default()).await;
    let other = s
        .create("/secrets/ns/x", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    cache
        .wait_for_revision(other.mod_revision)
        .await
        .expect("progress reports advance the cache");
    assert!(cache.revision() >= other.mod_revision);
    let (items, rev, _) = cache.list("/configmaps/", None, None, 0);
    assert!(items.is_empty());
    assert!(rev >= other.mod_revision);
}

#[tokio::test(start_paused = true)]
async fn wait_for_a_revision_never_written_times_out() {
    let (_dir, s) = sled().await;
    let cache = start(s.clone(), CacheConfig::default()).await;
    match cache.wait_for_revision(1_000).await {
        Err(StorageError::Engine(msg)) => assert!(msg.starts_with("timeout"), "{msg}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn watch_resumes_from_a_revision_then_follows_live() {
    let (_dir, s) = sled().await;
    let cache = start(s.clone(), CacheConfig::default()).await;
    let a = s
        .create(&key("ns", "a"), obj("ns", "a", json!({}), "1"))
        .await
        .expect("create");
    let b = s
        .create(&key("ns", "b"), obj("ns", "b", json!({}), "1"))
        .await
        .expect("create");
    let a2 = s
        .update(
            &key("ns", "a"),
            obj("ns", "a", json!({}), "2"),
            a.mod_revision,
        )
        .await
        .expect("update");
    let bd = s.delete(&key("ns", "b"), None).await.expect("delete");
    cache
        .wait_for_revision(bd.mod_revision)
        .await
        .expect("wait");

    let mut w = cache
        .watch("/configmaps/", b.mod_revision, None)
        .expect("watch");
    let e = event(&mut w).await;
    assert_eq!(e.kind, EventType::Modified);
    assert_eq!(e.object.mod_revision, a2.mod_revision);
    assert_eq!(json_of(&e.object)["data"]["k"], "2");
    let e = event(&mut w).await;
    assert_eq!(e.kind, EventType::Deleted);
    assert_eq!(e.object.key, key("ns", "b"));
    assert_eq!(
        rv_of(&e.object),
        bd.mod_revision.to_string(),
        "deletion revision"
    );

    // From the current revision: nothing replayed, live events follow.
    let mut now = cache
        .watch("/configmaps/", cache.revision(), None)
        .expect("watch");
    // Only its sub-prefix.
    let mut ns2 = cache
        .watch("/configmaps/ns2/", 0, None)
        .expect("watch from 0");
    let c = s
        .create(&key("ns", "c"), obj("ns", "c", json!({}), "1"))
        .await
        .expect("create");
    let d = s
        .create(&key("ns2", "d"), obj("ns2", "d", json!({}), "1"))
        .await
        .expect("create");
    for rx in [&mut w, &mut now] {
        let e = event(rx).await;
        assert_eq!(
            (e.kind, e.object.mod_revision),
            (EventType::Added, c.mod_revision)
        );
        let e = event(rx).await;
        assert_eq!(e.object.mod_revision, d.mod_revision);
    }
    let e = event(&mut ns2).await;
    assert_eq!(
        e.object.key,
        key("ns2", "d"),
        "a sub-prefix watch sees only its keys"
    );
}

#[tokio::test]
async fn filtered_watch_turns_transitions_into_added_and_deleted() {
    let (_dir, s) = sled().await;
    let cache = start(s.clone(), CacheConfig::default()).await;
    let app_x: FilterFn = Arc::new(|o: &CachedObject| o.attrs.labels.get("app") == Some("x"));
    let mut w = cache
        .watch("/configmaps/", cache.revision(), Some(app_x))
        .expect("watch");
    let k = key("ns", "o");
    let v1 = s
        .create(&k, obj("ns", "o", json!({"app": "other"}), "1"))
        .await
        .expect("create");
    let v2 = s
        .update(
            &k,
            obj("ns", "o", json!({"app": "x"}), "2"),
            v1.mod_revision,
        )
        .await
        .expect("starts matching");
    let v3 = s
        .update(
            &k,
            obj("ns", "o", json!({"app": "x"}), "3"),
            v2.mod_revision,
        )
        .await
        .expect("still matching");
    let v4 = s
        .update(
            &k,
            obj("ns", "o", json!({"app": "gone"}), "4"),
            v3.mod_revision,
        )
        .await
        .expect("stops matching");
    s.delete(&k, None).await.expect("delete while not matching");
    let m = s
        .create(&key("ns", "m"), obj("ns", "m", json!({"app": "x"}), "1"))
        .await
        .expect("create matching");
    let md = s
        .delete(&key("ns", "m"), None)
        .await
        .expect("delete matching");

    let e = event(&mut w).await;
    assert_eq!(
        (e.kind, e.object.mod_revision),
        (EventType::Added, v2.mod_revision)
    );
    let e = event(&mut w).await;
    assert_eq!(
        (e.kind, e.object.mod_revision),
        (EventType::Modified, v3.mod_revision)
    );
    let e = event(&mut w).await;
    assert_eq!(e.kind, EventType::Deleted);
    // As kube-apiserver: the last content that matched, at the new revision.
    assert_eq!(rv_of(&e.object), v4.mod_revision.to_string());
    assert_eq!(json_of(&e.object)["data"]["k"], "3");
    assert_eq!(json_of(&e.object)["metadata"]["labels"]["app"], "x");
    let e = event(&mut w).await;
    assert_eq!(
        (e.kind, e.object.mod_revision),
        (EventType::Added, m.mod_revision)
    );
    let e = event(&mut w).await;
    assert_eq!(
        (e.kind, e.object.mod_revision),
        (EventType::Deleted, md.mod_revision)
    );
    // The same transitions are replayed from the ring for a late watcher.
    let app_x: FilterFn = Arc::new(|o: &CachedObject| o.attrs.labels.get("app") == Some("x"));
    let mut late = cache
        .watch("/configmaps/", v1.mod_revision, Some(app_x))
        .expect("watch");
    let kinds: Vec<EventType> = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(event(&mut late).await.kind);
        }
        v
    };
    assert_eq!(
        kinds,
        [
            EventType::Added,
            EventType::Modified,
            EventType::Deleted,
            EventType::Added,
            EventType::Deleted
        ]
    );
}

#[tokio::test]
async fn a_slow_watcher_is_closed_while_others_continue() {
    let (_dir, s) = sled().await;
    let config = CacheConfig {
        window: 1000,
        watcher_queue: 10,
    };
    let cache = start(s.clone(), config).await;
    let from = cache.revision();
    let mut slow = cache.watch("/configmaps/", from, None).expect("watch");
    let mut fast = cache.watch("/configmaps/", from, None).expect("watch");
    let reader = tokio::spawn(async move {
        let mut revs = Vec::new();
        for _ in 0..30 {
            revs.push(event(&mut fast).await.object.mod_revision);
        }
        revs
    });
    let mut last = 0;
    for i in 0..30 {
        last = s
            .create(
                &key("ns", &format!("o{i:02}")),
                obj("ns", "o", json!({}), "1"),
            )
            .await
            .expect("create")
            .mod_revision;
    }
    cache.wait_for_revision(last).await.expect("wait");
    let revs = reader.await.expect("fast reader");
    assert_eq!(revs, ((from + 1)..=last).collect::<Vec<Revision>>());
    // The slow one got what fit in its queue, then WatcherTooSlow, then the end.
    let mut got = 0;
    loop {
        match recv(&mut slow).await {
            Ok(_) => got += 1,
            Err(StorageError::WatcherTooSlow) => break,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(got, 10);
    assert!(slow.recv().await.is_none(), "closed after the error");
}

#[tokio::test]
async fn resuming_below_the_window_is_compacted() {
    let (_dir, s) = sled().await;
    let config = CacheConfig {
        window: 5,
        watcher_queue: 100,
    };
    let cache = start(s.clone(), config).await;
    let start_rev = cache.revision();
    let mut revs = Vec::new();
    for i in 0..10 {
        revs.push(
            s.create(&key("ns", &format!("o{i}")), obj("ns", "o", json!({}), "1"))
                .await
                .expect("create")
                .mod_revision,
        );
    }
    cache.wait_for_revision(revs[9]).await.expect("wait");
    // The window holds the last 5 events (revs[5..]); resuming needs every
    // event after `from`, so from = revs[4] is the oldest possible.
    match cache.watch("/configmaps/", start_rev, None) {
        Err(StorageError::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, start_rev);
            assert_eq!(compacted, revs[4]);
        }
        other => panic!("expected Compacted, got {:?}", other.map(|_| ())),
    }
    assert!(matches!(
        cache.watch("/configmaps/", revs[3], None),
        Err(StorageError::Compacted { .. })
    ));
    let mut w = cache
        .watch("/configmaps/", revs[4], None)
        .expect("oldest resumable");
    for r in &revs[5..] {
        assert_eq!(event(&mut w).await.object.mod_revision, *r);
    }
}

/// A storage whose watch streams fail on demand, to exercise the re-list.
struct FailingWatch {
    inner: Arc<SledStorage>,
    fail: Arc<Notify>,
}

#[async_trait::async_trait]
impl Storage for FailingWatch {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        self.inner.get(key).await
    }
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        self.inner.list(prefix, opts).await
    }
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        self.inner.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        self.inner.delete(key, expected).await
    }
    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        self.inner.watch(prefix, from).await
    }
    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<ProgressWatchStream, StorageError> {
        let live = self.inner.watch_progress(prefix, from).await?;
        let fail = self.fail.clone();
        let failure = futures::stream::once(async move {
            fail.notified().await;
            Err(StorageError::Compacted {
                requested: from,
                compacted: from + 1,
            })
        });
        Ok(Box::pin(futures::stream::select(live, failure)))
    }
    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }
    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        self.inner.compacted_revision().await
    }
    fn serves_progress_requests(&self) -> bool {
        self.inner.serves_progress_requests()
    }
}

#[tokio::test]
async fn upstream_failure_relists_and_closes_watchers_with_compacted() {
    let (_dir, s) = sled().await;
    let fail = Arc::new(Notify::new());
    let storage = Arc::new(FailingWatch {
        inner: s.clone(),
        fail: fail.clone(),
    });
    let cache = start(storage, CacheConfig::default()).await;
    let a = s
        .create(&key("ns", "a"), obj("ns", "a", json!({}), "1"))
        .await
        .expect("create");
    cache.wait_for_revision(a.mod_revision).await.expect("wait");
    let mut w = cache
        .watch("/configmaps/", cache.revision(), None)
        .expect("watch");
    fail.notify_one();
    match recv(&mut w).await {
        Err(StorageError::Compacted { .. }) => {}
        other => panic!("expected Compacted after the re-list, got {other:?}"),
    }
    // The cache goes on: writes after the re-list are seen and watchable.
    // The Compacted error is sent after the state was replaced, so this
    // watcher is registered on the re-listed state.
    let mut w2 = cache
        .watch("/configmaps/", cache.revision(), None)
        .expect("watch after the re-list");
    let b = s
        .create(&key("ns", "b"), obj("ns", "b", json!({}), "1"))
        .await
        .expect("create");
    cache.wait_for_revision(b.mod_revision).await.expect("wait");
    assert!(cache.get(&key("ns", "a")).is_some());
    assert!(cache.get(&key("ns", "b")).is_some());
    let e = event(&mut w2).await;
    assert_eq!(e.object.mod_revision, b.mod_revision);
}

/// Pages of a list at an older revision come from the cache and equal a
/// list of storage history at that revision, whatever changed since.
#[tokio::test]
async fn lists_at_an_earlier_revision_match_storage_history() {
    let (_dir, s) = sled().await;
    let cache = start(s.clone(), CacheConfig::default()).await;
    for name in ["a", "b", "c", "d", "e"] {
        s.create(&key("ns", name), obj("ns", name, json!({"app": "x"}), "v1"))
            .await
            .expect("create");
    }
    let before = s.current_revision().await.expect("revision");
    let b = s.get(&key("ns", "b")).await.expect("get").expect("b");
    s.update(
        &key("ns", "b"),
        obj("ns", "b", json!({"app": "y"}), "v2"),
        b.mod_revision,
    )
    .await
    .expect("update b");
    s.delete(&key("ns", "c"), None).await.expect("delete c");
    s.create(&key("ns", "bb"), obj("ns", "bb", json!({"app": "x"}), "v1"))
        .await
        .expect("create bb");
    let d = s.get(&key("ns", "d")).await.expect("get").expect("d");
    s.update(
        &key("ns", "d"),
        obj("ns", "d", json!({"app": "x"}), "v2"),
        d.mod_revision,
    )
    .await
    .expect("update d");
    let latest = s.current_revision().await.expect("revision");
    cache.wait_for_revision(latest).await.expect("caught up");

    let history = s
        .list(
            "/configmaps/",
            ListOptions {
                revision: Some(before),
                ..Default::default()
            },
        )
        .await
        .expect("storage history");
    let want: Vec<(String, Value)> = history
        .items
        .iter()
        .map(|kv| {
            let mut v: Value = serde_json::from_slice(&kv.value).expect("json");
            v["metadata"]["resourceVersion"] = json!(kv.mod_revision.to_string());
            (kv.key.clone(), v)
        })
        .collect();
    assert_eq!(want.len(), 5);

    // Whole, and in pages of two after each page's last key.
    let (all, remaining) = cache
        .list_at("/configmaps/", None, None, 0, before)
        .expect("in the window");
    let got: Vec<(String, Value)> = all.iter().map(|o| (o.key.clone(), json_of(o))).collect();
    assert_eq!(got, want);
    assert_eq!(remaining, 0);
    let (page, remaining) = cache
        .list_at("/configmaps/", Some(&key("ns", "a")), None, 2, before)
        .expect("in the window");
    assert_eq!(names(&page), [key("ns", "b"), key("ns", "c")]);
    assert_eq!(json_of(&page[0])["data"]["k"], "v1", "b as it was");
    assert_eq!(remaining, 2);

    // Filters see the old labels: b matched app=x then.
    let app_x: FilterFn = Arc::new(|o: &CachedObject| o.attrs.labels.get("app") == Some("x"));
    let (x, _) = cache
        .list_at("/configmaps/", None, Some(&app_x), 0, before)
        .expect("in the window");
    assert_eq!(x.len(), 5);

    // Outside the window: storage must answer.
    assert!(
        cache
            .list_at("/configmaps/", None, None, 0, latest + 1)
            .is_none()
    );
}

/// A window of a few events: a revision older than the ring is not served.
#[tokio::test]
async fn lists_before_the_window_are_not_served_from_the_cache() {
    let (_dir, s) = sled().await;
    let cache = start(
        s.clone(),
        CacheConfig {
            window: 2,
            ..CacheConfig::default()
        },
    )
    .await;
    let first = s
        .create(&key("ns", "a"), obj("ns", "a", json!({}), "v"))
        .await
        .expect("create");
    for name in ["b", "c", "d"] {
        s.create(&key("ns", name), obj("ns", name, json!({}), "v"))
            .await
            .expect("create");
    }
    let latest = s.current_revision().await.expect("revision");
    cache.wait_for_revision(latest).await.expect("caught up");
    assert!(
        cache
            .list_at("/configmaps/", None, None, 0, first.mod_revision)
            .is_none()
    );
    let (items, _) = cache
        .list_at("/configmaps/", None, None, 0, latest)
        .expect("the current revision is in the window");
    assert_eq!(items.len(), 4);
}

#[tokio::test]
async fn head_watchers_get_the_decoded_head_of_live_events_only() {
    let (_dir, s) = sled().await;
    let cache = start(s.clone(), CacheConfig::default()).await;
    let from = cache.revision();
    let first = s
        .create(&key("ns1", "a"), obj("ns1", "a", json!({"app": "x"}), "0"))
        .await
        .expect("create")
        .mod_revision;
    // From before `first`: that event is replayed from the ring (no head).
    cache.wait_for_revision(first).await.expect("caught up");
    let mut heads = cache
        .watch_heads("/configmaps/", from, None)
        .expect("watch heads");
    let mut other = cache
        .watch_heads("/configmaps/", from, None)
        .expect("watch heads");
    let mut plain = cache.watch("/configmaps/", from, None).expect("watch");
    let mut managed =
        serde_json::from_slice::<Value>(&obj("ns1", "b", json!({}), "1")).expect("json");
    managed["metadata"]["managedFields"] = json!([{"manager": "m"}]);
    let second = s
        .create(
            &key("ns1", "b"),
            Bytes::from(serde_json::to_vec(&managed).expect("json")),
        )
        .await
        .expect("create")
        .mod_revision;

    for rx in [&mut heads, &mut other, &mut plain] {
        let replayed = event(rx).await;
        assert_eq!(replayed.object.mod_revision, first);
        assert!(replayed.head.is_none(), "a replayed event has no head");
    }
    let live = event(&mut heads).await;
    let head = live.head.clone().expect("a live event's head");
    // The members a metadata follower reads, as the cached JSON has them
    // (resourceVersion included), less managedFields and the data.
    assert_eq!(
        *head,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "b",
                "namespace": "ns1",
                "labels": {},
                "resourceVersion": second.to_string(),
            },
        })
    );
    let shared = event(&mut other).await.head.expect("a head");
    assert!(
        Arc::ptr_eq(&head, &shared),
        "one decode for all head watchers"
    );
    assert!(event(&mut plain).await.head.is_none());
}
