//! The embedded engine on sled 0.34: [`SledStorage`] implements [`Storage`]
//! with etcd's revision model in one sled tree.
//!
//! # Layout
//! One tree, three key spaces told apart by a one-byte tag:
//! - `k<key>` → `[create_revision u64 BE][mod_revision u64 BE][value]`: the
//!   current state (deleted keys are removed; there are no tombstones);
//! - `l<revision u64 BE>` → one change (see [`encode_event`]): the event log,
//!   in revision order. It holds the previous value of every change, so it is
//!   both the watch history and the undo log for lists at an older revision;
//! - `m<name>` → metadata (`mformat`, `mcompacted`).
//!
//! Each write is two plain inserts, the log entry first and then the state
//! change, serialised by a mutex that assigns revisions. Not a `sled::Batch`
//! or transaction: in sled 0.34 each of those writes out (pwrite +
//! `sync_file_range`) the log buffer twice and makes every later read take a
//! global lock, which costs more than the group commit saves. Atomicity comes
//! from sled recovering a prefix of its log instead: after a crash a state
//! change is never there without its log entry, and the one write that may be
//! cut in half (log entry without state change; never acknowledged, never
//! published) is rolled back on open. The current revision is not stored
//! apart: on open it is `max(last log revision, compacted revision)`.
//!
//! # Reads at an older revision
//! `list(prefix, revision: r)` scans the current state and then undoes every
//! logged change with revision `> r` (the state of a key at `r` is the
//! previous value of its first change after `r`). So a list costs the current
//! keys under the prefix plus the changes since `r`, and needs the log from
//! `r` on: `r` below the compacted revision is [`StorageError::Compacted`].
//!
//! # Durability (group commit)
//! A write returns only once it is on disk. A dedicated flusher thread loops:
//! take the latest applied revision, `flush()` sled, mark that revision
//! flushed, publish the now-durable events to watchers, wake the writers. One
//! flush covers every write applied before it, so concurrent writers share
//! flushes. sled's background flusher is switched off (we flush ourselves).
//!
//! What "on disk" means: sled 0.34's `flush()` writes its log buffer with
//! `pwrite` and then calls `sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)`
//! on Linux, not `fsync`. That alone makes acknowledged writes survive a crash
//! or `kill -9` of the process (the data is in the kernel's page cache and
//! being written back), but not a power loss or kernel crash:
//! `sync_file_range` neither flushes the drive's volatile cache nor file
//! metadata (e.g. the file's new size). So by default ([`SledOptions::fsync`])
//! the flusher also `fdatasync`s sled's data file after each group flush,
//! once per group (measured on a 2-core VM: no visible throughput cost).
//! With fsync on, the buffer a flush writes itself is not `sync_file_range`d
//! first (vendored sled's `flush_skips_sync_file_range`): the `fdatasync`
//! writes back the same pages and waits for them, so the range sync was a
//! second submission and a second sleep per group for nothing (as etcd's
//! WAL: `write`, then one `fdatasync` per batch). Every flush this engine
//! does is followed by that `fdatasync` ([`durable_flush`]). Buffers sled's
//! IO threads write between flushes keep their `sync_file_range`.
//! Remaining gap: sled writes a log message larger than a quarter segment
//! (128 KiB: a tree node holding very large values) to a separate blob file
//! without syncing it; such writes survive a process crash but are not
//! covered against power loss.
//!
//! # Visibility
//! `get`, `list` and `current_revision` see every applied write, including
//! ones whose flush is still in progress (their writers have not been
//! answered yet). Watchers only ever receive durable events: the flusher
//! publishes events after their flush.
//!
//! # Watch
//! Every durable event is broadcast once (an `Arc`) to all watch streams; a
//! stream filters by prefix. A stream replays the log from its start revision
//! up to the published revision it saw after subscribing, then follows the
//! broadcast, dropping what it already replayed. It tracks the next global
//! revision it expects, so a stream that lagged behind the broadcast buffer
//! (or received a revision ahead of what it has seen) refills the gap from the
//! log: no gaps, no duplicates, and no unbounded buffering.
//!
//! # Compaction
//! `compact(r)` records `r` durably, then deletes log entries `≤ r` in
//! batches on a blocking thread. Readers check the compacted revision after
//! reading the log, so a concurrent compaction is reported, never hidden.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use sled::IVec;
use tokio::sync::{broadcast, watch};

use crate::{
    Event, EventType, KeyValue, ListOptions, ListResult, ProgressWatchStream, Revision, Storage,
    StorageError, WatchItem, WatchStream,
};

const TAG_KV: u8 = b'k';
const TAG_LOG: u8 = b'l';
const META_FORMAT: &[u8] = b"mformat";
const META_COMPACTED: &[u8] = b"mcompacted";
const FORMAT_VERSION: &[u8] = b"ubernetes-sled-1";
/// Events buffered in the broadcast channel; a watcher further behind
/// refills from the log.
const BROADCAST_CAPACITY: usize = 8192;
/// Log entries read per step while replaying a watch.
const REPLAY_BATCH: u64 = 512;
/// Log entries removed per batch while compacting.
const COMPACT_BATCH: usize = 4096;
/// A progress-reporting watch reports progress at least this often (in
/// global revisions skipped), even when it never goes idle.
const PROGRESS_EVERY: Revision = 1024;

/// Tuning of a [`SledStorage`].
#[derive(Debug, Clone)]
pub struct SledOptions {
    /// `fdatasync` sled's data file after each group flush, so acknowledged
    /// writes survive power loss, not only a process crash (default: `true`;
    /// see the module docs).
    pub fsync: bool,
    /// sled's page cache size in bytes (default: 512 MiB).
    pub cache_capacity: u64,
}

impl Default for SledOptions {
    fn default() -> Self {
        Self {
            fsync: true,
            cache_capacity: 512 * 1024 * 1024,
        }
    }
}

fn engine<E: std::fmt::Display>(e: E) -> StorageError {
    StorageError::Engine(e.to_string())
}

/// How long [`SledStorage::open`] waits for the store's file lock.
///
/// sled locks its data file for one process. Within a process, sled's own
/// background threads may keep a just-dropped database (and its lock) open
/// for a moment, so an open right after a close waits that out instead of
/// failing; any longer means another process holds the store.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Open `config`, waiting up to `wait` while another holder has the lock,
/// then failing with an error that says so and what to do.
fn open_locked(
    config: &sled::Config,
    path: &Path,
    wait: Duration,
) -> Result<sled::Db, StorageError> {
    let deadline = Instant::now() + wait;
    loop {
        match config.open() {
            Ok(db) => return Ok(db),
            // sled reports a held lock as this `Other` I/O error (config.rs).
            Err(sled::Error::Io(e)) if e.to_string().starts_with("could not acquire lock") => {
                if Instant::now() >= deadline {
                    return Err(StorageError::Engine(format!(
                        "the store in {} is in use: another process holds its lock ({e}); \
                         stop the other ubernetes serving this directory or pass another --data-dir",
                        path.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(engine(e)),
        }
    }
}

fn corrupt(what: &str) -> StorageError {
    StorageError::Engine(format!("corrupt sled record: {what}"))
}

/// What the flusher has made durable (or why it could not).
#[derive(Debug, Clone, Default)]
struct FlushState {
    flushed: Revision,
    failed: Option<String>,
}

#[derive(Default)]
struct FlushSignal {
    shutdown: bool,
}

/// State shared by the storage handle, its flusher thread and its watch
/// streams.
struct Shared {
    data: sled::Tree,
    /// Serialises writers: revision assignment + batch application.
    write: Mutex<()>,
    /// The last applied revision (visible to reads).
    committed: AtomicU64,
    /// The last revision published to watchers (durable).
    published: AtomicU64,
    compacted: AtomicU64,
    /// Group flushes done since open (diagnostics).
    flushes: AtomicU64,
    /// Applied but not yet published events, in revision order.
    pending: Mutex<VecDeque<Arc<Event>>>,
    signal: Mutex<FlushSignal>,
    signal_cv: Condvar,
    flushed: watch::Sender<FlushState>,
    events: Mutex<Option<broadcast::Sender<Arc<Event>>>>,
    /// sled's data file, `fdatasync`ed after every flush when
    /// [`SledOptions::fsync`] is on.
    sync_file: Option<std::fs::File>,
}

/// The sled engine. Cheap reads, serialised writes, group-committed flushes.
pub struct SledStorage {
    shared: Arc<Shared>,
    db: sled::Db,
    flusher: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SledStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledStorage")
            .field("revision", &self.shared.committed.load(Ordering::Acquire))
            .field("compacted", &self.shared.compacted.load(Ordering::Acquire))
            .finish()
    }
}

impl SledStorage {
    /// Open (or create) the store in directory `path` with default options.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        Self::open_with(path, SledOptions::default())
    }

    /// Open (or create) the store in directory `path`. The directory is
    /// made private (0700) before sled opens it and the files sled has
    /// created are made 0600 after (see [`make_private`]).
    pub fn open_with(path: &Path, options: SledOptions) -> Result<Self, StorageError> {
        create_private_dir(path)?;
        let config = sled::Config::new()
            .path(path)
            .cache_capacity(options.cache_capacity)
            .flush_every_ms(None)
            // With fsync on, every flush is followed by an `fdatasync` of the
            // data file (`durable_flush`), which writes back and waits for
            // what sled's `sync_file_range` would have: skip that second wait
            // for the buffer the flushing thread writes (vendor/sled patch 3).
            .flush_skips_sync_file_range(options.fsync)
            .mode(sled::Mode::HighThroughput);
        let db = open_locked(&config, path, LOCK_WAIT)?;
        make_private(path)?;
        let data: sled::Tree = (*db).clone();
        let sync_file = if options.fsync {
            Some(data_file(path)?)
        } else {
            None
        };

        match data.get(META_FORMAT).map_err(engine)? {
            Some(v) if v.as_ref() == FORMAT_VERSION => {}
            Some(v) => {
                return Err(StorageError::Engine(format!(
                    "unsupported store format {:?}",
                    String::from_utf8_lossy(&v)
                )));
            }
            None => {
                data.insert(META_FORMAT, FORMAT_VERSION).map_err(engine)?;
                durable_flush(&data, sync_file.as_ref())?;
            }
        }
        let compacted = match data.get(META_COMPACTED).map_err(engine)? {
            Some(v) => decode_u64(&v).ok_or_else(|| corrupt("compacted revision"))?,
            None => 0,
        };
        let last_logged = repair_tail(&data, sync_file.as_ref())?;
        let revision = last_logged.max(compacted);

        let (flushed, _) = watch::channel(FlushState {
            flushed: revision,
            failed: None,
        });
        let (events, _) = broadcast::channel(BROADCAST_CAPACITY);
        let shared = Arc::new(Shared {
            data,
            write: Mutex::new(()),
            committed: AtomicU64::new(revision),
            published: AtomicU64::new(revision),
            compacted: AtomicU64::new(compacted),
            flushes: AtomicU64::new(0),
            pending: Mutex::new(VecDeque::new()),
            signal: Mutex::new(FlushSignal::default()),
            signal_cv: Condvar::new(),
            flushed,
            events: Mutex::new(Some(events)),
            sync_file,
        });
        let flusher = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("ubernetes-sled-flush".into())
                .spawn(move || flusher_loop(&shared, revision))
                .map_err(engine)?
        };
        Ok(Self {
            shared,
            db,
            flusher: Some(flusher),
        })
    }

    /// Wait until `revision` is durable (the group commit).
    async fn wait_durable(&self, revision: Revision) -> Result<(), StorageError> {
        {
            let _signal = self.shared.signal.lock();
            self.shared.signal_cv.notify_one();
        }
        let mut rx = self.shared.flushed.subscribe();
        let state = rx
            .wait_for(|s| s.flushed >= revision || s.failed.is_some())
            .await
            .map_err(|_| StorageError::Engine("storage flusher stopped".into()))?;
        match &state.failed {
            Some(e) if state.flushed < revision => {
                Err(StorageError::Engine(format!("flush failed: {e}")))
            }
            _ => Ok(()),
        }
    }

    /// Apply one write (log entry, then state change); the caller holds the
    /// write lock. Queues the event for publication after the next flush.
    fn apply(
        &self,
        kv_key: &[u8],
        state: Option<Vec<u8>>,
        event: Event,
        log: Vec<u8>,
    ) -> Result<(), StorageError> {
        let rev = event.revision();
        let data = &self.shared.data;
        // Log entry first: sled recovers a prefix of its log, so after a crash
        // a state change is never there without its log entry (see
        // `repair_tail` for the converse).
        data.insert(log_key(rev), log).map_err(engine)?;
        let applied = match state {
            Some(v) => data.insert(kv_key, v).map(|_| ()),
            None => data.remove(kv_key).map(|_| ()),
        };
        if let Err(e) = applied {
            // Best effort: the revision is reused by the next write anyway.
            let _ = data.remove(log_key(rev));
            return Err(engine(e));
        }
        self.shared.pending.lock().push_back(Arc::new(event));
        self.shared.committed.store(rev, Ordering::Release);
        Ok(())
    }

    fn next_revision(&self) -> Result<Revision, StorageError> {
        self.shared
            .committed
            .load(Ordering::Acquire)
            .checked_add(1)
            .ok_or_else(|| StorageError::Engine("revision counter overflow".into()))
    }

    /// How many group flushes ran since open (writes per flush = the group
    /// commit's batching; for benchmarks and diagnostics).
    pub fn flush_count(&self) -> u64 {
        self.shared.flushes.load(Ordering::Relaxed)
    }

    /// The store's size on disk, in bytes.
    pub fn size_on_disk(&self) -> Result<u64, StorageError> {
        self.db.size_on_disk().map_err(engine)
    }
}

impl Drop for SledStorage {
    fn drop(&mut self) {
        {
            let mut signal = self.shared.signal.lock();
            signal.shutdown = true;
            self.shared.signal_cv.notify_all();
        }
        if let Some(handle) = self.flusher.take() {
            let _ = handle.join();
        }
        // Ends every watch stream once it has drained what it was sent.
        self.shared.events.lock().take();
    }
}

/// Undo a write cut in half by a crash: its log entry is there but its state
/// change is not (never acknowledged, never published, since both precede
/// the flush). Returns the last logged revision.
fn repair_tail(
    data: &sled::Tree,
    sync_file: Option<&std::fs::File>,
) -> Result<Revision, StorageError> {
    let Some(entry) = data.scan_prefix([TAG_LOG]).next_back() else {
        return Ok(0);
    };
    let (k, v) = entry.map_err(engine)?;
    let rev = decode_u64(&k[1..]).ok_or_else(|| corrupt("log key"))?;
    let ev = decode_event(rev, &v)?;
    let state = data.get(kv_key(&ev.kv.key)).map_err(engine)?;
    let state_rev = match &state {
        Some(iv) => Some(
            decode_u64(iv.get(8..).unwrap_or_default()).ok_or_else(|| corrupt("state header"))?,
        ),
        None => None,
    };
    let applied = match ev.kind {
        EventType::Added | EventType::Modified => state_rev == Some(rev),
        EventType::Deleted => state_rev.is_none(),
    };
    if applied {
        return Ok(rev);
    }
    tracing::warn!(revision = rev, key = %ev.kv.key, "rolling back a write interrupted by a crash");
    data.remove(k).map_err(engine)?;
    durable_flush(data, sync_file)?;
    Ok(rev - 1)
}

/// Create the store directory with mode 0700 (and its missing parents).
fn create_private_dir(path: &Path) -> Result<(), StorageError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(path).map_err(|e| {
        StorageError::Engine(format!(
            "cannot create the store directory {}: {e}",
            path.display()
        ))
    })
}

/// The store holds every Secret, the member clusters' kubeconfigs among
/// them (plaintext unless `--encryption-provider-config` covers secrets):
/// only the server's user may read it. sled creates its files with the
/// process umask (0644 with the usual 022), so after open the directory is
/// set to 0700, each directory under it to 0700 and each file to 0600.
/// Files sled creates later (new snapshots, blobs) get the umask's mode
/// but sit in the 0700 directory, which alone keeps other users out; the
/// next open tightens them too. A process-wide umask is not set: it would
/// change the modes of every other file the process writes.
fn make_private(dir: &Path) -> Result<(), StorageError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let set = |p: &Path, mode: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).map_err(|e| {
                StorageError::Engine(format!(
                    "cannot make {} private (mode {mode:o}): {e}",
                    p.display()
                ))
            })
        };
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(d) = dirs.pop() {
            set(&d, 0o700)?;
            let entries = std::fs::read_dir(&d)
                .map_err(|e| StorageError::Engine(format!("cannot list {}: {e}", d.display())))?;
            for entry in entries {
                let entry = entry.map_err(|e| {
                    StorageError::Engine(format!("cannot list {}: {e}", d.display()))
                })?;
                let kind = entry.file_type().map_err(|e| {
                    StorageError::Engine(format!("cannot stat {}: {e}", entry.path().display()))
                })?;
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if kind.is_file() {
                    set(&entry.path(), 0o600)?;
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn data_file(path: &Path) -> Result<std::fs::File, StorageError> {
    let file: PathBuf = path.join("db");
    std::fs::OpenOptions::new()
        .read(true)
        .open(&file)
        .map_err(|e| StorageError::Engine(format!("open {} for fsync: {e}", file.display())))
}

/// Flush sled and, with fsync on, `fdatasync` its data file: every write
/// applied before the call is on disk when it returns. The only way this
/// engine flushes, since with fsync on sled's own flush no longer waits for
/// the buffer it writes (`flush_skips_sync_file_range`).
fn durable_flush(data: &sled::Tree, sync_file: Option<&std::fs::File>) -> Result<(), StorageError> {
    data.flush().map_err(engine)?;
    if let Some(f) = sync_file {
        f.sync_data()
            .map_err(|e| StorageError::Engine(format!("fdatasync: {e}")))?;
    }
    Ok(())
}

/// The group-commit loop: one flush per round covers every write applied
/// before it; then the round's events are published in revision order.
fn flusher_loop(shared: &Shared, mut flushed: Revision) {
    loop {
        {
            let mut signal = shared.signal.lock();
            while !signal.shutdown && shared.committed.load(Ordering::Acquire) <= flushed {
                shared.signal_cv.wait(&mut signal);
            }
            if signal.shutdown && shared.committed.load(Ordering::Acquire) <= flushed {
                return;
            }
        }
        let target = shared.committed.load(Ordering::Acquire);
        let result =
            durable_flush(&shared.data, shared.sync_file.as_ref()).map_err(|e| e.to_string());
        if let Err(e) = result {
            tracing::error!(error = %e, "sled flush failed; failing pending writes");
            shared.flushed.send_modify(|s| s.failed = Some(e));
            // Writers see the failure; keep trying so later writes may succeed.
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        flushed = target;
        shared.flushes.fetch_add(1, Ordering::Relaxed);
        // Publish: first the revision (so a subscriber that reads it replays
        // up to it from the log), then the events themselves.
        let ready: Vec<Arc<Event>> = {
            let mut pending = shared.pending.lock();
            let n = pending
                .iter()
                .take_while(|e| e.revision() <= target)
                .count();
            pending.drain(..n).collect()
        };
        shared.published.store(target, Ordering::Release);
        if let Some(tx) = shared.events.lock().as_ref() {
            for ev in ready {
                // No receivers is fine.
                let _ = tx.send(ev);
            }
        }
        shared.flushed.send_modify(|s| {
            s.flushed = target;
            s.failed = None;
        });
    }
}

// ---------- encoding ----------

fn decode_u64(b: &[u8]) -> Option<u64> {
    let arr: [u8; 8] = b.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(arr))
}

fn decode_u32(b: &[u8]) -> Option<usize> {
    let arr: [u8; 4] = b.get(..4)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(arr)).ok()
}

fn kv_key(key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(TAG_KV);
    k.extend_from_slice(key.as_bytes());
    k
}

fn log_key(rev: Revision) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = TAG_LOG;
    k[1..].copy_from_slice(&rev.to_be_bytes());
    k
}

/// The smallest byte string greater than every string starting with `prefix`
/// (`None`: no bound).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn encode_state(create: Revision, modr: Revision, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + value.len());
    v.extend_from_slice(&create.to_be_bytes());
    v.extend_from_slice(&modr.to_be_bytes());
    v.extend_from_slice(value);
    v
}

/// A zero-copy view of part of a sled value.
fn ivec_bytes(iv: &IVec, range: std::ops::Range<usize>) -> Bytes {
    if range.len() <= 64 {
        Bytes::copy_from_slice(&iv[range])
    } else {
        Bytes::from_owner(iv.clone()).slice(range)
    }
}

fn decode_state(key: String, iv: &IVec) -> Result<KeyValue, StorageError> {
    let create = decode_u64(iv).ok_or_else(|| corrupt("state header"))?;
    let modr = decode_u64(&iv[8..]).ok_or_else(|| corrupt("state header"))?;
    Ok(KeyValue {
        key,
        value: ivec_bytes(iv, 16..iv.len()),
        create_revision: create,
        mod_revision: modr,
    })
}

fn write_len(out: &mut Vec<u8>, len: usize) -> Result<(), StorageError> {
    let len = u32::try_from(len).map_err(|_| StorageError::Engine("value too large".into()))?;
    out.extend_from_slice(&len.to_be_bytes());
    Ok(())
}

/// A log entry: `[kind u8][key_len u32][key][create u64][value_len u32][value]`
/// then for `Modified` `[prev_mod u64][prev_value…]`, for `Deleted`
/// `[prev_mod u64]` (the value is the deleted one).
fn encode_event(ev: &Event) -> Result<Vec<u8>, StorageError> {
    let prev_len = match (&ev.kind, &ev.prev) {
        (EventType::Modified, Some(p)) => 8 + p.value.len(),
        (EventType::Deleted, _) => 8,
        _ => 0,
    };
    let mut out =
        Vec::with_capacity(1 + 4 + ev.kv.key.len() + 8 + 4 + ev.kv.value.len() + prev_len);
    out.push(match ev.kind {
        EventType::Added => 0,
        EventType::Modified => 1,
        EventType::Deleted => 2,
    });
    write_len(&mut out, ev.kv.key.len())?;
    out.extend_from_slice(ev.kv.key.as_bytes());
    out.extend_from_slice(&ev.kv.create_revision.to_be_bytes());
    write_len(&mut out, ev.kv.value.len())?;
    out.extend_from_slice(&ev.kv.value);
    match (&ev.kind, &ev.prev) {
        (EventType::Added, _) => {}
        (_, Some(p)) => {
            out.extend_from_slice(&p.mod_revision.to_be_bytes());
            if ev.kind == EventType::Modified {
                out.extend_from_slice(&p.value);
            }
        }
        (_, None) => return Err(StorageError::Engine("event without previous value".into())),
    }
    Ok(out)
}

/// The key of a log entry, without decoding the rest.
fn event_key(iv: &IVec) -> Result<&[u8], StorageError> {
    let len = decode_u32(iv.get(1..).unwrap_or_default()).ok_or_else(|| corrupt("log entry"))?;
    iv.get(5..5 + len).ok_or_else(|| corrupt("log entry key"))
}

fn decode_event(rev: Revision, iv: &IVec) -> Result<Event, StorageError> {
    let bad = || corrupt("log entry");
    let kind = match iv.first().ok_or_else(bad)? {
        0 => EventType::Added,
        1 => EventType::Modified,
        2 => EventType::Deleted,
        _ => return Err(bad()),
    };
    let key_len = decode_u32(iv.get(1..).ok_or_else(bad)?).ok_or_else(bad)?;
    let mut pos = 5;
    let key = std::str::from_utf8(iv.get(pos..pos + key_len).ok_or_else(bad)?)
        .map_err(|_| bad())?
        .to_owned();
    pos += key_len;
    let create = decode_u64(iv.get(pos..).ok_or_else(bad)?).ok_or_else(bad)?;
    pos += 8;
    let value_len = decode_u32(iv.get(pos..).ok_or_else(bad)?).ok_or_else(bad)?;
    pos += 4;
    let value_end = pos.checked_add(value_len).ok_or_else(bad)?;
    if value_end > iv.len() {
        return Err(bad());
    }
    let value = ivec_bytes(iv, pos..value_end);
    pos = value_end;
    let prev = match kind {
        EventType::Added => None,
        EventType::Modified => {
            let prev_mod = decode_u64(iv.get(pos..).ok_or_else(bad)?).ok_or_else(bad)?;
            Some(KeyValue {
                key: key.clone(),
                value: ivec_bytes(iv, pos + 8..iv.len()),
                create_revision: create,
                mod_revision: prev_mod,
            })
        }
        EventType::Deleted => {
            let prev_mod = decode_u64(iv.get(pos..).ok_or_else(bad)?).ok_or_else(bad)?;
            Some(KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: create,
                mod_revision: prev_mod,
            })
        }
    };
    Ok(Event {
        kind,
        kv: KeyValue {
            key,
            value,
            create_revision: create,
            mod_revision: rev,
        },
        prev,
    })
}

// ---------- reads ----------

/// A list page being filled: items up to the limit, then a count.
struct Page {
    items: Vec<KeyValue>,
    remaining: u64,
    limit: usize,
}

impl Page {
    fn full(&self) -> bool {
        self.items.len() >= self.limit
    }

    fn push(&mut self, kv: KeyValue) {
        if self.full() {
            self.remaining += 1;
        } else {
            self.items.push(kv);
        }
    }
}

impl Shared {
    fn check_compacted(&self, requested: Revision) -> Result<(), StorageError> {
        let compacted = self.compacted.load(Ordering::Acquire);
        if requested < compacted {
            return Err(StorageError::Compacted {
                requested,
                compacted,
            });
        }
        Ok(())
    }

    /// A consistent list at a revision: scan the current state, then undo
    /// every change logged after that revision.
    fn list_blocking(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        let committed = self.committed.load(Ordering::Acquire);
        let at = opts.revision.unwrap_or(committed);
        self.check_compacted(at)?;
        if at > committed {
            return Err(StorageError::Engine(format!(
                "required revision {at} is a future revision (current {committed})"
            )));
        }
        let limit = match opts.limit {
            None | Some(0) => usize::MAX,
            Some(n) => n,
        };
        let start_after = opts
            .start_after
            .as_deref()
            .filter(|s| s.as_bytes() >= prefix.as_bytes());
        let start = match start_after {
            Some(s) => {
                let mut k = kv_key(s);
                k.push(0);
                k
            }
            None => kv_key(prefix),
        };
        let end = prefix_end(&kv_key(prefix));
        let scanned: Vec<(IVec, IVec)> = match &end {
            Some(end) => self
                .data
                .range(start..end.clone())
                .collect::<Result<Vec<_>, _>>(),
            None => self.data.range(start..).collect::<Result<Vec<_>, _>>(),
        }
        .map_err(engine)?;

        // Every write whose state the scan saw has finished applying its log
        // entry once we can take the write lock.
        drop(self.write.lock());

        // The state at `at` of each key changed since: the previous value of
        // its first change after `at`.
        let mut overlay: BTreeMap<Vec<u8>, Option<KeyValue>> = BTreeMap::new();
        let in_range = |k: &[u8]| {
            k.starts_with(prefix.as_bytes()) && start_after.is_none_or(|s| k > s.as_bytes())
        };
        let log_from = at.checked_add(1).map(log_key);
        if let Some(from) = log_from {
            let log = self.data.range(&from[..]..&[TAG_LOG + 1][..]);
            for (expected, entry) in (at + 1..).zip(log) {
                let (k, v) = entry.map_err(engine)?;
                let rev = decode_u64(&k[1..]).ok_or_else(|| corrupt("log key"))?;
                if rev != expected {
                    return Err(self.gap_error(at, expected));
                }
                let key = event_key(&v)?;
                if in_range(key) && !overlay.contains_key(key) {
                    let ev = decode_event(rev, &v)?;
                    overlay.insert(key.to_vec(), ev.prev);
                }
            }
        }
        // A compaction during our log read may have removed entries we needed.
        self.check_compacted(at)?;

        let mut out = Page {
            items: Vec::new(),
            remaining: 0,
            limit,
        };
        let mut over = overlay.into_iter().peekable();
        for (k, v) in &scanned {
            let key = &k[1..];
            while let Some((ok, _)) = over.peek() {
                if ok.as_slice() >= key {
                    break;
                }
                if let Some((_, Some(kv))) = over.next() {
                    out.push(kv);
                }
            }
            if over.peek().is_some_and(|(ok, _)| ok.as_slice() == key) {
                if let Some((_, Some(kv))) = over.next() {
                    out.push(kv);
                }
                continue;
            }
            if out.full() {
                out.remaining += 1;
            } else {
                let key = String::from_utf8(key.to_vec()).map_err(|_| corrupt("key"))?;
                out.push(decode_state(key, v)?);
            }
        }
        for (_, kv) in over {
            if let Some(kv) = kv {
                out.push(kv);
            }
        }
        let Page {
            items, remaining, ..
        } = out;
        Ok(ListResult {
            items,
            revision: at,
            remaining,
        })
    }

    /// The error for a missing log entry: compaction if it explains it,
    /// corruption otherwise.
    fn gap_error(&self, requested: Revision, missing: Revision) -> StorageError {
        let compacted = self.compacted.load(Ordering::Acquire);
        if missing <= compacted {
            StorageError::Compacted {
                requested,
                compacted,
            }
        } else {
            StorageError::Engine(format!("event log is missing revision {missing}"))
        }
    }

    /// Log entries `from..=to`, in order, checked for gaps.
    fn read_log(&self, from: Revision, to: Revision) -> Result<Vec<Event>, StorageError> {
        let mut out = Vec::new();
        let mut expected = from;
        for entry in self.data.range(log_key(from)..=log_key(to)) {
            let (k, v) = entry.map_err(engine)?;
            let rev = decode_u64(&k[1..]).ok_or_else(|| corrupt("log key"))?;
            if rev != expected {
                return Err(self.gap_error(from.saturating_sub(1), expected));
            }
            expected += 1;
            out.push(decode_event(rev, &v)?);
        }
        if expected != to + 1 {
            return Err(self.gap_error(from.saturating_sub(1), expected));
        }
        // Entries we did read are fine, but a compaction racing the read may
        // have removed some we then would not have noticed.
        self.check_compacted(from.saturating_sub(1))?;
        Ok(out)
    }
}

// ---------- watch ----------

/// One watch stream's state machine (see the module docs).
struct WatchState {
    shared: Arc<Shared>,
    prefix: String,
    rx: broadcast::Receiver<Arc<Event>>,
    /// The next global revision this stream has to account for.
    next: Revision,
    /// Revisions `next..=replay_until` are to be read from the log.
    replay_until: Revision,
    /// A live event received ahead of `next`, handled after the replay.
    stash: Option<Arc<Event>>,
    buf: VecDeque<WatchItem>,
    progress: bool,
    last_progress: Revision,
    done: bool,
}

impl WatchState {
    fn take_live(&mut self, ev: Arc<Event>) {
        let rev = ev.revision();
        if rev < self.next {
            return;
        }
        if rev > self.next {
            self.replay_until = rev - 1;
            self.stash = Some(ev);
            return;
        }
        self.next = rev + 1;
        if ev.kv.key.starts_with(&self.prefix) {
            self.buf.push_back(WatchItem::Event((*ev).clone()));
        } else {
            self.maybe_progress(false);
        }
    }

    fn maybe_progress(&mut self, idle: bool) {
        let seen = self.next - 1;
        if self.progress
            && seen > self.last_progress
            && (idle || seen - self.last_progress >= PROGRESS_EVERY)
        {
            self.last_progress = seen;
            self.buf.push_back(WatchItem::Progress(seen));
        }
    }

    async fn next_item(&mut self) -> Option<Result<WatchItem, StorageError>> {
        loop {
            if let Some(item) = self.buf.pop_front() {
                if let WatchItem::Event(ev) = &item {
                    self.last_progress = self.last_progress.max(ev.revision());
                }
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            if self.next <= self.replay_until {
                let to = self.replay_until.min(self.next + REPLAY_BATCH - 1);
                match self.shared.read_log(self.next, to) {
                    Ok(events) => {
                        for ev in events {
                            if ev.kv.key.starts_with(&self.prefix) {
                                self.buf.push_back(WatchItem::Event(ev));
                            }
                        }
                        self.next = to + 1;
                        if self.buf.is_empty() {
                            self.maybe_progress(false);
                        }
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                continue;
            }
            if let Some(ev) = self.stash.take() {
                self.take_live(ev);
                continue;
            }
            match self.rx.try_recv() {
                Ok(ev) => {
                    self.take_live(ev);
                    continue;
                }
                Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(broadcast::error::TryRecvError::Closed) => {
                    self.done = true;
                    continue;
                }
                Err(broadcast::error::TryRecvError::Empty) => {
                    self.maybe_progress(true);
                    if !self.buf.is_empty() {
                        continue;
                    }
                }
            }
            match self.rx.recv().await {
                Ok(ev) => self.take_live(ev),
                // The next event received shows the gap; it is refilled from the log.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => self.done = true,
            }
        }
    }
}

impl SledStorage {
    fn watch_state(
        &self,
        prefix: &str,
        from: Revision,
        progress: bool,
    ) -> Result<WatchState, StorageError> {
        self.shared.check_compacted(from)?;
        let rx = match self.shared.events.lock().as_ref() {
            Some(tx) => tx.subscribe(),
            None => return Err(StorageError::Engine("storage is closed".into())),
        };
        // Everything up to `published` is in the log; everything after it
        // will be broadcast to `rx`.
        let published = self.shared.published.load(Ordering::Acquire);
        Ok(WatchState {
            shared: self.shared.clone(),
            prefix: prefix.to_owned(),
            rx,
            next: from.saturating_add(1),
            replay_until: published,
            stash: None,
            buf: VecDeque::new(),
            progress,
            last_progress: from,
            done: false,
        })
    }
}

fn into_stream(
    state: WatchState,
) -> impl futures::Stream<Item = Result<WatchItem, StorageError>> + Send + 'static {
    futures::stream::unfold(state, |mut st| async move {
        let item = st.next_item().await?;
        Some((item, st))
    })
}

#[async_trait::async_trait]
impl Storage for SledStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        match self.shared.data.get(kv_key(key)).map_err(engine)? {
            Some(iv) => Ok(Some(decode_state(key.to_owned(), &iv)?)),
            None => Ok(None),
        }
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        let shared = self.shared.clone();
        let prefix = prefix.to_owned();
        tokio::task::spawn_blocking(move || shared.list_blocking(&prefix, &opts))
            .await
            .map_err(engine)?
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        let kk = kv_key(key);
        let kv = {
            let _w = self.shared.write.lock();
            if self.shared.data.contains_key(&kk).map_err(engine)? {
                return Err(StorageError::AlreadyExists {
                    key: key.to_owned(),
                });
            }
            let rev = self.next_revision()?;
            let kv = KeyValue {
                key: key.to_owned(),
                value,
                create_revision: rev,
                mod_revision: rev,
            };
            let event = Event {
                kind: EventType::Added,
                kv: kv.clone(),
                prev: None,
            };
            let log = encode_event(&event)?;
            self.apply(&kk, Some(encode_state(rev, rev, &kv.value)), event, log)?;
            kv
        };
        self.wait_durable(kv.mod_revision).await?;
        Ok(kv)
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let kk = kv_key(key);
        let kv = {
            let _w = self.shared.write.lock();
            let Some(cur) = self.shared.data.get(&kk).map_err(engine)? else {
                return Err(StorageError::NotFound {
                    key: key.to_owned(),
                });
            };
            let prev = decode_state(key.to_owned(), &cur)?;
            if prev.mod_revision != expected {
                return Err(StorageError::Conflict {
                    key: key.to_owned(),
                    expected,
                    actual: prev.mod_revision,
                });
            }
            let rev = self.next_revision()?;
            let kv = KeyValue {
                key: key.to_owned(),
                value,
                create_revision: prev.create_revision,
                mod_revision: rev,
            };
            let state = encode_state(kv.create_revision, rev, &kv.value);
            let event = Event {
                kind: EventType::Modified,
                kv: kv.clone(),
                prev: Some(prev),
            };
            let log = encode_event(&event)?;
            self.apply(&kk, Some(state), event, log)?;
            kv
        };
        self.wait_durable(kv.mod_revision).await?;
        Ok(kv)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let kk = kv_key(key);
        let kv = {
            let _w = self.shared.write.lock();
            let Some(cur) = self.shared.data.get(&kk).map_err(engine)? else {
                return Err(StorageError::NotFound {
                    key: key.to_owned(),
                });
            };
            let prev = decode_state(key.to_owned(), &cur)?;
            if let Some(expected) = expected
                && prev.mod_revision != expected
            {
                return Err(StorageError::Conflict {
                    key: key.to_owned(),
                    expected,
                    actual: prev.mod_revision,
                });
            }
            let rev = self.next_revision()?;
            let kv = KeyValue {
                mod_revision: rev,
                ..prev.clone()
            };
            let event = Event {
                kind: EventType::Deleted,
                kv: kv.clone(),
                prev: Some(prev),
            };
            let log = encode_event(&event)?;
            self.apply(&kk, None, event, log)?;
            kv
        };
        self.wait_durable(kv.mod_revision).await?;
        Ok(kv)
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        // No progress reports are made (`false`); events_only types it.
        let state = self.watch_state(prefix, from, false)?;
        Ok(crate::events_only(into_stream(state)))
    }

    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<ProgressWatchStream, StorageError> {
        let state = self.watch_state(prefix, from, true)?;
        Ok(Box::pin(into_stream(state)))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.shared.committed.load(Ordering::Acquire))
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let revision = revision.min(self.shared.committed.load(Ordering::Acquire));
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || compact_blocking(&shared, revision))
            .await
            .map_err(engine)?
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.shared.compacted.load(Ordering::Acquire))
    }

    /// The only writer is this process, and its watches deliver every write
    /// in order: the cache is current once it has this process's last write.
    fn serves_progress_requests(&self) -> bool {
        true
    }
}

fn compact_blocking(shared: &Shared, revision: Revision) -> Result<(), StorageError> {
    {
        // Serialise with writers only to order the metadata record.
        let _w = shared.write.lock();
        if revision <= shared.compacted.load(Ordering::Acquire) {
            return Ok(());
        }
        shared
            .data
            .insert(META_COMPACTED, &revision.to_be_bytes())
            .map_err(engine)?;
        shared.compacted.store(revision, Ordering::Release);
    }
    // The compacted revision must be on disk before any log entry goes, or a
    // crash could leave a log with a hole and no record of why.
    durable_flush(&shared.data, shared.sync_file.as_ref())?;
    let mut keys: Vec<IVec> = Vec::with_capacity(COMPACT_BATCH);
    loop {
        keys.clear();
        for entry in shared
            .data
            .range(&[TAG_LOG][..]..=&log_key(revision)[..])
            .keys()
            .take(COMPACT_BATCH)
        {
            keys.push(entry.map_err(engine)?);
        }
        if keys.is_empty() {
            break;
        }
        // Plain removes, not a `Batch`: sled batches force a log write each
        // and switch every later read to a global lock.
        for k in &keys {
            shared.data.remove(k).map_err(engine)?;
        }
        if keys.len() < COMPACT_BATCH {
            break;
        }
    }
    // Durability of the removals is not required (re-removed on the next
    // compaction), but the next group flush covers them anyway.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventType, value: &'static [u8], prev: Option<&'static [u8]>) -> Event {
        Event {
            kind,
            kv: KeyValue {
                key: "/a/b".into(),
                value: Bytes::from_static(value),
                create_revision: 3,
                mod_revision: 9,
            },
            prev: prev.map(|p| KeyValue {
                key: "/a/b".into(),
                value: Bytes::from_static(p),
                create_revision: 3,
                mod_revision: 5,
            }),
        }
    }

    #[test]
    fn log_entries_round_trip_every_event_kind() {
        for e in [
            ev(EventType::Added, b"new", None),
            ev(EventType::Modified, b"new", Some(b"old")),
            ev(EventType::Deleted, b"old", Some(b"old")),
        ] {
            let iv = IVec::from(encode_event(&e).expect("encode"));
            assert_eq!(event_key(&iv).expect("key"), b"/a/b");
            assert_eq!(decode_event(9, &iv).expect("decode"), e);
        }
    }

    #[test]
    fn truncated_log_entries_are_engine_errors_not_panics() {
        let full = encode_event(&ev(EventType::Modified, b"new", Some(b"old"))).expect("encode");
        // Everything before the trailing previous value ("old") is required.
        for n in 0..full.len() - 3 {
            let iv = IVec::from(&full[..n]);
            assert!(
                matches!(decode_event(9, &iv), Err(StorageError::Engine(_))),
                "cut at {n}"
            );
        }
        let mut bad_kind = full.clone();
        bad_kind[0] = 7;
        assert!(decode_event(9, &IVec::from(bad_kind)).is_err());
        assert!(matches!(
            decode_state("k".into(), &IVec::from(&b"short"[..])),
            Err(StorageError::Engine(_))
        ));
    }

    fn raw_event(
        kind: EventType,
        key: &str,
        value: &'static [u8],
        rev: Revision,
        prev_mod: Revision,
    ) -> Vec<u8> {
        let kv = KeyValue {
            key: key.into(),
            value: Bytes::from_static(value),
            create_revision: 1,
            mod_revision: rev,
        };
        let prev = (kind != EventType::Added).then(|| KeyValue {
            mod_revision: prev_mod,
            ..kv.clone()
        });
        encode_event(&Event { kind, kv, prev }).expect("encode")
    }

    /// The store's tree opened with sled's defaults, as a crash left it.
    fn raw_open(path: &Path) -> sled::Db {
        open_locked(&sled::Config::new().path(path), path, LOCK_WAIT).expect("raw open")
    }

    #[cfg(unix)]
    #[test]
    fn the_store_directory_and_its_files_are_private_to_the_owner() {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        let root = tempfile::TempDir::new().expect("tempdir");
        // A fresh store, created by the open.
        let fresh = root.path().join("fresh");
        let s = SledStorage::open(&fresh).expect("open");
        drop(s);
        assert_eq!(mode(&fresh), 0o700);
        let mut files = 0;
        for entry in std::fs::read_dir(&fresh).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                files += 1;
                assert_eq!(mode(&path), 0o600, "{}", path.display());
            }
        }
        assert!(files > 0, "sled wrote files");
        // A store left world-readable (an older version's) is tightened.
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let db = fresh.join("db");
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let s = SledStorage::open(&fresh).expect("reopen");
        drop(s);
        assert_eq!(mode(&fresh), 0o700);
        assert_eq!(mode(&db), 0o600);
    }

    #[test]
    fn a_store_held_open_is_a_clear_error_and_opens_once_released() {
        let dir = tempfile::TempDir::new().expect("tempdir");
        let held = raw_open(dir.path());
        let config = sled::Config::new().path(dir.path());
        let err = open_locked(&config, dir.path(), Duration::from_millis(200))
            .expect_err("a held store does not open twice");
        let msg = err.to_string();
        assert!(
            msg.contains("is in use") && msg.contains("--data-dir"),
            "{msg}"
        );
        // Released while an open waits: that open succeeds.
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let db = open_locked(&config, dir.path(), Duration::from_secs(20));
        release.join().expect("release");
        db.expect("opens once the other holder lets go");
    }

    #[tokio::test]
    async fn a_write_cut_in_half_by_a_crash_is_rolled_back_on_open() {
        let dir = tempfile::TempDir::new().expect("tempdir");
        {
            let s = SledStorage::open(dir.path()).expect("open");
            s.create("/a", Bytes::from_static(b"1"))
                .await
                .expect("create");
            s.create("/b", Bytes::from_static(b"1"))
                .await
                .expect("create");
        }
        for (kind, key) in [
            (EventType::Added, "/c"),
            (EventType::Modified, "/a"),
            (EventType::Deleted, "/b"),
        ] {
            {
                // What a crash between the two inserts leaves: the log entry only.
                let db = raw_open(dir.path());
                let prev_mod = if key == "/a" { 1 } else { 2 };
                db.insert(log_key(3), raw_event(kind, key, b"2", 3, prev_mod))
                    .expect("insert");
                db.flush().expect("flush");
            }
            let s = SledStorage::open(dir.path()).expect("reopen");
            assert_eq!(s.current_revision().await.expect("rev"), 2, "{kind:?}");
            assert_eq!(s.get("/c").await.expect("get"), None);
            assert_eq!(
                s.get("/a").await.expect("get").map(|kv| kv.mod_revision),
                Some(1)
            );
            assert!(s.get("/b").await.expect("get").is_some());
            let list = s
                .list(
                    "/",
                    ListOptions {
                        revision: Some(2),
                        ..Default::default()
                    },
                )
                .await;
            assert_eq!(list.expect("list").items.len(), 2);
        }
        // A complete last write is kept.
        let s = SledStorage::open(dir.path()).expect("reopen");
        let d = s.delete("/b", None).await.expect("delete");
        assert_eq!(d.mod_revision, 3);
        drop(s);
        let s = SledStorage::open(dir.path()).expect("reopen");
        assert_eq!(s.current_revision().await.expect("rev"), 3);
    }

    #[test]
    fn prefix_end_skips_past_every_key_with_the_prefix() {
        assert_eq!(prefix_end(b"ka/"), Some(b"ka0".to_vec()));
        assert_eq!(prefix_end(&[1, 255]), Some(vec![2]));
        assert_eq!(prefix_end(&[255]), None);
    }
}
