//! The conformance suite on [`SledStorage`], plus what only a persistent
//! engine has: reopening a directory and group-committed durability.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use ubernetes_storage::sled_engine::SledStorage;
use ubernetes_storage::{EventType, ListOptions, Storage, StorageError, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sled_passes_the_conformance_suite() {
    let dirs = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let keep = dirs.clone();
    conformance::run_all(move || {
        let dirs = keep.clone();
        async move {
            let dir = tempfile::TempDir::new().expect("tempdir");
            let s = SledStorage::open(dir.path()).expect("open");
            dirs.lock().push(dir);
            Arc::new(s) as Arc<dyn Storage>
        }
    })
    .await;
    drop(dirs);
}

#[tokio::test]
async fn reopen_keeps_objects_revision_and_history() {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let (a1, a2, d, compacted_at) = {
        let s = SledStorage::open(dir.path()).expect("open");
        let a1 = s
            .create("/r/a", Bytes::from_static(b"a1"))
            .await
            .expect("create");
        let a2 = s
            .update("/r/a", Bytes::from_static(b"a2"), a1.mod_revision)
            .await
            .expect("update");
        s.create("/r/b", Bytes::from_static(b"b"))
            .await
            .expect("create");
        let d = s.delete("/r/b", None).await.expect("delete");
        s.create("/r/c", Bytes::from_static(b"c"))
            .await
            .expect("create");
        s.compact(1).await.expect("compact");
        (a1, a2, d, 1)
    };
    let s = SledStorage::open(dir.path()).expect("reopen");
    assert_eq!(s.current_revision().await.expect("rev"), 5);
    assert_eq!(
        s.compacted_revision().await.expect("compacted"),
        compacted_at
    );
    assert_eq!(s.get("/r/a").await.expect("get"), Some(a2.clone()));
    assert_eq!(s.get("/r/b").await.expect("get"), None);
    let now = s.list("/r/", ListOptions::default()).await.expect("list");
    assert_eq!(
        now.items
            .iter()
            .map(|kv| kv.key.as_str())
            .collect::<Vec<_>>(),
        ["/r/a", "/r/c"]
    );
    // History survives: a list at revision 3 and a watch replaying from 1.
    let old = s
        .list(
            "/r/",
            ListOptions {
                revision: Some(3),
                ..Default::default()
            },
        )
        .await
        .expect("list at 3");
    assert_eq!(old.items.len(), 2);
    assert_eq!(old.items[0], a2);
    assert!(matches!(
        s.list(
            "/r/",
            ListOptions {
                revision: Some(0),
                ..Default::default()
            }
        )
        .await,
        Err(StorageError::Compacted { .. })
    ));
    let mut w = s.watch("/r/", 1).await.expect("watch");
    let mut kinds = Vec::new();
    for _ in 0..4 {
        let ev = conformance::next_event(&mut w).await;
        kinds.push((ev.kind, ev.revision()));
        if ev.kind == EventType::Deleted {
            assert_eq!(ev.kv, d);
        }
        if ev.kind == EventType::Modified {
            assert_eq!(ev.prev.as_ref(), Some(&a1));
        }
    }
    assert_eq!(
        kinds,
        [
            (EventType::Modified, 2),
            (EventType::Added, 3),
            (EventType::Deleted, 4),
            (EventType::Added, 5)
        ]
    );
    // The counter continues where it was.
    let e = s
        .create("/r/e", Bytes::from_static(b"e"))
        .await
        .expect("create");
    assert_eq!(e.mod_revision, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_commit_serves_64_concurrent_writers() {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let s = Arc::new(SledStorage::open(dir.path()).expect("open"));
    let mut tasks = Vec::new();
    for t in 0..64 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for i in 0..20 {
                let kv = s
                    .create(&format!("/g/{t:02}/{i:02}"), Bytes::from(vec![b'x'; 1024]))
                    .await
                    .expect("create");
                revs.push(kv.mod_revision);
            }
            revs
        }));
    }
    let mut revs = Vec::new();
    for t in tasks {
        revs.extend(t.await.expect("task"));
    }
    revs.sort_unstable();
    assert_eq!(revs, (1..=64 * 20).collect::<Vec<u64>>());
    drop(s);
    // Everything acknowledged is there after reopening.
    let s = SledStorage::open(dir.path()).expect("reopen");
    let all = s.list("/g/", ListOptions::default()).await.expect("list");
    assert_eq!(all.items.len(), 64 * 20);
    assert_eq!(s.current_revision().await.expect("rev"), 64 * 20);
}

#[tokio::test]
async fn corrupt_values_are_engine_errors() {
    let dir = tempfile::TempDir::new().expect("tempdir");
    {
        let s = SledStorage::open(dir.path()).expect("open");
        for k in ["/x/a", "/x/b"] {
            s.create(k, Bytes::from_static(b"v")).await.expect("create");
        }
    }
    let corrupt = |key: &[u8]| {
        let db = raw_open(dir.path());
        db.insert(key, &b"\x09bad"[..]).expect("insert");
        db.flush().expect("flush");
    };
    // The state of /x/a and the log entry of revision 1.
    corrupt(b"k/x/a");
    corrupt(b"l\0\0\0\0\0\0\0\x01");
    {
        let s = SledStorage::open(dir.path()).expect("reopen");
        assert!(matches!(s.get("/x/a").await, Err(StorageError::Engine(_))));
        assert!(s.get("/x/b").await.expect("intact key").is_some());
        assert!(matches!(
            s.list("/x/", ListOptions::default()).await,
            Err(StorageError::Engine(_))
        ));
        let mut w = s.watch("/x/", 0).await.expect("watch");
        let first = tokio::time::timeout(std::time::Duration::from_secs(10), w.next()).await;
        assert!(matches!(first, Ok(Some(Err(StorageError::Engine(_))))));
    }
    // A corrupt last log entry (checked on open) fails the open, no panic.
    corrupt(b"l\0\0\0\0\0\0\0\x02");
    assert!(matches!(
        SledStorage::open(dir.path()),
        Err(StorageError::Engine(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_far_behind_the_live_broadcast_catches_up_from_the_log() {
    let dir = tempfile::TempDir::new().expect("tempdir");
    let s = Arc::new(SledStorage::open(dir.path()).expect("open"));
    let mut w = s.watch("/lag/", 0).await.expect("watch");
    // More events than the broadcast buffer holds, while nobody polls `w`.
    const N: u64 = 9_000;
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..N).step_by(8) {
                s.create(&format!("/lag/{i:05}"), Bytes::from_static(b"v"))
                    .await
                    .expect("create");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    for expected in 1..=N {
        let ev = conformance::next_event(&mut w).await;
        assert_eq!(ev.revision(), expected);
    }
    let last = s
        .create("/lag/z", Bytes::from_static(b"v"))
        .await
        .expect("create");
    assert_eq!(conformance::next_event(&mut w).await.kv, last);
}

/// sled's tree under the store, opened the way a crash or a tool would. The
/// store just dropped may hold sled's file lock a moment longer (its
/// background threads), so wait for it as `SledStorage::open` does.
fn raw_open(path: &std::path::Path) -> sled::Db {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match sled::open(path) {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline => {
                assert!(
                    e.to_string().contains("could not acquire lock"),
                    "raw open: {e}"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => panic!("raw open: {e}"),
        }
    }
}
