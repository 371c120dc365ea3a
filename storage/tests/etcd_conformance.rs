//! The conformance suite on [`EtcdStorage`] against a real etcd this test
//! starts itself (see `ubernetes_storage::etcd_process` for which binary),
//! plus what only a shared engine has: two servers on one etcd see the same
//! objects at the same revisions, and kube's key layout. Without an etcd
//! binary every test prints why it is skipped and passes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use ubernetes_storage::etcd_engine::{EtcdOptions, EtcdStorage};
use ubernetes_storage::etcd_process::EtcdProcess;
use ubernetes_storage::{EventType, ListOptions, Storage, StorageError, conformance};

fn start_etcd(test: &str) -> Option<EtcdProcess> {
    EtcdProcess::start_for_test(test)
}

async fn engine(etcd: &EtcdProcess, prefix: &str) -> EtcdStorage {
    EtcdStorage::connect(&EtcdOptions {
        endpoints: vec![etcd.url.clone()],
        prefix: prefix.to_string(),
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("connecting to etcd: {e}\n{}", etcd.log()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_passes_the_conformance_suite() {
    let Some(etcd) = start_etcd("etcd_passes_the_conformance_suite") else {
        return;
    };
    let etcd = Arc::new(etcd);
    let n = Arc::new(AtomicU32::new(0));
    let (e, counter) = (etcd.clone(), n.clone());
    conformance::run_all(move || {
        let (etcd, n) = (e.clone(), counter.clone());
        async move {
            // Every case on a fresh key prefix of the same etcd.
            let prefix = format!("/case{}", n.fetch_add(1, Ordering::SeqCst));
            Arc::new(engine(&etcd, &prefix).await) as Arc<dyn Storage>
        }
    })
    .await;
    assert_eq!(n.load(Ordering::SeqCst), 13, "every case ran");
}

/// Two engines on one etcd and prefix (two `ubernetes serve` replicas): the
/// revision is etcd's, so what one writes the other reads, lists and
/// watches at the same revisions, and a stale write through either conflicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_etcd_share_objects_and_revisions() {
    let Some(etcd) = start_etcd("two_servers_on_one_etcd_share_objects_and_revisions") else {
        return;
    };
    let a = engine(&etcd, "/registry").await;
    let b = engine(&etcd, "/registry").await;
    let base = a.current_revision().await.expect("rev");
    assert_eq!(b.current_revision().await.expect("rev"), base);
    let mut watch_b = b.watch("/pods/", base).await.expect("watch on b");
    let created = a
        .create("/pods/default/web", Bytes::from_static(b"v1"))
        .await
        .expect("create through a");
    assert_eq!(created.mod_revision, base + 1);
    assert_eq!(
        b.get("/pods/default/web").await.expect("get"),
        Some(created.clone())
    );
    let listed = b
        .list("/pods/", ListOptions::default())
        .await
        .expect("list");
    assert_eq!(listed.items, vec![created.clone()]);
    assert_eq!(listed.revision, created.mod_revision);
    let ev = conformance::next_event(&mut watch_b).await;
    assert_eq!((ev.kind, &ev.kv), (EventType::Added, &created));
    let updated = b
        .update(
            "/pods/default/web",
            Bytes::from_static(b"v2"),
            created.mod_revision,
        )
        .await
        .expect("update through b");
    match a
        .update(
            "/pods/default/web",
            Bytes::from_static(b"v3"),
            created.mod_revision,
        )
        .await
    {
        Err(StorageError::Conflict { actual, .. }) => assert_eq!(actual, updated.mod_revision),
        other => panic!("stale update through a: expected Conflict, got {other:?}"),
    }
    // A list at the first revision through a, after b's update.
    let old = a
        .list(
            "/pods/",
            ListOptions {
                revision: Some(created.mod_revision),
                ..Default::default()
            },
        )
        .await
        .expect("list at a revision");
    assert_eq!(old.items, vec![created.clone()]);
    // A watch through a resumes from the revision b's client saw.
    let mut watch_a = a
        .watch("/pods/", created.mod_revision)
        .await
        .expect("watch");
    let ev = conformance::next_event(&mut watch_a).await;
    assert_eq!((ev.kind, ev.kv), (EventType::Modified, updated.clone()));
    // Compaction through one is seen by the other.
    a.compact(updated.mod_revision).await.expect("compact");
    assert_eq!(
        b.compacted_revision().await.expect("compacted"),
        updated.mod_revision
    );
    assert!(matches!(
        b.watch("/pods/", base).await,
        Err(StorageError::Compacted { compacted, .. }) if compacted == updated.mod_revision
    ));
}

/// Keys are the store keys under `--etcd-prefix`, the registry's own root
/// (`/registry`) replaced by it, as kube-apiserver lays them out
/// (`PREFIX/<resource path>/NAMESPACE/NAME`); other prefixes are invisible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_live_under_the_etcd_prefix() {
    let Some(etcd) = start_etcd("keys_live_under_the_etcd_prefix") else {
        return;
    };
    let options = |prefix: &str| EtcdOptions {
        endpoints: vec![etcd.url.clone()],
        prefix: prefix.to_string(),
        store_root: Some("/registry".into()),
        ..Default::default()
    };
    let s = EtcdStorage::connect(&options("/fed/"))
        .await
        .expect("connect");
    let other = EtcdStorage::connect(&options("/other"))
        .await
        .expect("connect");
    let pod = s
        .create("/registry/core/pods/default/web", Bytes::from_static(b"{}"))
        .await
        .expect("create");
    s.create("compact_rev_key", Bytes::from_static(b"0"))
        .await
        .expect("create");
    s.create("/elsewhere/x", Bytes::from_static(b"x"))
        .await
        .expect("create");
    let mut raw = etcd_client::Client::connect([etcd.url.as_str()], None)
        .await
        .expect("raw client");
    let all = raw
        .get(
            "",
            Some(
                etcd_client::GetOptions::new()
                    .with_all_keys()
                    .with_keys_only(),
            ),
        )
        .await
        .expect("raw get");
    let keys: Vec<String> = all
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect();
    assert_eq!(
        keys,
        [
            "/fed/compact_rev_key",
            "/fed/core/pods/default/web",
            "/fed/elsewhere/x"
        ]
    );
    // Lists and watches give the store's names back.
    let listed = s
        .list("/registry/core/", ListOptions::default())
        .await
        .expect("list");
    assert_eq!(listed.items, vec![pod.clone()]);
    let mut w = s.watch("/registry/core/pods/", 0).await.expect("watch");
    assert_eq!(conformance::next_event(&mut w).await.kv, pod);
    assert_eq!(
        s.list("/elsewhere/", ListOptions::default())
            .await
            .expect("list")
            .items[0]
            .key,
        "/elsewhere/x"
    );
    assert!(
        other
            .list("/registry/", ListOptions::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
    assert_eq!(
        s.get("compact_rev_key")
            .await
            .expect("get")
            .map(|kv| kv.key),
        Some("compact_rev_key".to_string())
    );
}

/// A progress report never runs ahead of the events it vouches for, on every
/// etcd version (`WatchItem::Progress(r)`: every change with revision `<= r`
/// was delivered). etcd before 3.4.31 / 3.5.13 answers a progress *request*
/// with its current revision even for a watch still catching up on older
/// events (etcd-io/etcd#15220, #17507); a watch cache believing it would
/// skip those events for good (a replica then lacked objects another one
/// created: the two-servers e2e test failed on Debian's etcd 3.4.23). Here a
/// watch starts 600 revisions back while a second writer keeps writing
/// through the same engine, which asks for progress after each write.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn progress_never_runs_ahead_of_the_events() {
    use futures::StreamExt;
    use ubernetes_storage::WatchItem;
    let Some(etcd) = start_etcd("progress_never_runs_ahead_of_the_events") else {
        return;
    };
    let s = Arc::new(engine(&etcd, "/registry").await);
    // The engine asks etcd for progress exactly when this binary's version
    // answers correctly.
    let out = std::process::Command::new(&etcd.binary)
        .arg("--version")
        .output()
        .expect("etcd --version");
    let out = String::from_utf8_lossy(&out.stdout);
    let version = out
        .lines()
        .find_map(|l| l.strip_prefix("etcd Version:"))
        .expect("etcd --version names the version")
        .trim();
    assert_eq!(
        s.serves_progress_requests(),
        ubernetes_storage::etcd_engine::progress_requests_are_safe(version),
        "etcd {version}"
    );
    let base = s.current_revision().await.expect("rev");
    const BACKLOG: u64 = 600;
    const LIVE: u64 = 200;
    for i in 0..BACKLOG {
        s.create(&format!("/bulk/k{i}"), Bytes::from(vec![b'x'; 512]))
            .await
            .expect("create");
    }
    let mut watch = s.watch_progress("/bulk/", base).await.expect("watch");
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..LIVE {
                s.create(&format!("/bulk/live{i}"), Bytes::from_static(b"v"))
                    .await
                    .expect("live create");
            }
        })
    };
    // Only this test writes to this etcd: revision base + n is the n-th write.
    let total = BACKLOG + LIVE;
    let mut delivered = 0u64;
    let mut reports = 0;
    while delivered < total {
        let item = tokio::time::timeout(std::time::Duration::from_secs(30), watch.next())
            .await
            .expect("the watch goes on")
            .expect("the watch does not end")
            .expect("no watch error");
        match item {
            WatchItem::Event(ev) => {
                delivered += 1;
                assert_eq!(ev.revision(), base + delivered, "events in revision order");
            }
            WatchItem::Progress(r) => {
                reports += 1;
                assert!(
                    r <= base + delivered,
                    "progress {r} reported with only the events up to {} delivered \
                     (etcd {})",
                    base + delivered,
                    etcd.binary.display()
                );
            }
        }
    }
    writer.await.expect("writer");
    eprintln!("{delivered} events, {reports} progress reports in order");
}
