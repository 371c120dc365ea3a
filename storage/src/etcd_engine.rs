//! The etcd v3 engine: [`Storage`] on an etcd cluster, with kube-apiserver's
//! etcd3 store semantics (`k8s.io/apiserver/pkg/storage/etcd3/store.go` and
//! `watcher.go`), on the `etcd-client` crate.
//!
//! What it does:
//! - keys live under `--etcd-prefix` (default `/registry`, as kube): the
//!   store key `/pods/default/web` is the etcd key `/registry/pods/default/web`;
//! - the revision is etcd's: every `mod_revision` handed out is etcd's
//!   revision of that write, so a resourceVersion read through one server
//!   resumes a list or a watch on any other server on the same etcd;
//! - create / update / delete are single transactions comparing the key's
//!   `create_revision` / `mod_revision` (kube's `OptimisticPut` /
//!   `OptimisticDelete`); a failed comparison reads the key in the same
//!   transaction, giving the same `AlreadyExists` / `Conflict` / `NotFound`
//!   the sled engine gives;
//! - lists are etcd ranges at a revision (paged with `start_after` + limit,
//!   `remaining` from etcd's count);
//! - watches are etcd watches from `from + 1` with previous values; progress
//!   is asked of etcd (`WatchProgressRequest`) every second and shortly after
//!   each write of this process, and etcd's progress notifications become
//!   [`WatchItem::Progress`]; only of an etcd that answers such requests
//!   correctly (3.4.31+, 3.5.13+; [`progress_requests_are_safe`]): an older
//!   one is never asked, and [`Storage::serves_progress_requests`] says so,
//!   so reads that must be current go to etcd rather than the watch cache;
//! - compaction is etcd's; a list or watch below etcd's compacted revision is
//!   [`StorageError::Compacted`] with etcd's compacted revision (found by
//!   probing, as etcd does not report it on a range error).
//!
//! Why here and not in a crate of its own: the engine is chosen at run time
//! (`ubernetes serve --etcd-servers`), so every binary that opens a store
//! needs it anyway, and the conformance suite runs against it from this
//! crate's tests like the sled engine's. `etcd-client` needs `protoc` at build
//! time; the workspace patches it to a vendored copy whose build script uses
//! `protoc-bin-vendored` (see `vendor/etcd-client/Cargo.toml`), so a plain
//! `cargo build` needs nothing installed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType as EtcdKind,
    GetOptions, Identity, KeyValue as EtcdKv, TlsOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
    WatchOptions,
};
use futures::StreamExt;
use tokio::sync::{mpsc, watch};

use crate::{
    Event, EventType, KeyValue, ListOptions, ListResult, ProgressWatchStream, Revision, Storage,
    StorageError, WatchItem, WatchStream,
};

/// kube-apiserver's default `--etcd-prefix`.
pub const DEFAULT_PREFIX: &str = "/registry";

/// How often an idle watch asks etcd for a progress notification (what lets
/// a watch cache learn about revisions written under other prefixes, also by
/// other servers).
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// The shortest gap between two progress requests of one watch after local
/// writes.
const PROGRESS_AFTER_WRITE: Duration = Duration::from_millis(50);
/// Responses can be large (a list of every object of a kind): kube-apiserver
/// sets `MaxCallRecvMsgSize` to `math.MaxInt32`.
const MAX_MESSAGE: usize = i32::MAX as usize;
/// How long [`EtcdStorage::connect`] keeps trying to reach etcd.
const CONNECT_PATIENCE: Duration = Duration::from_secs(20);

/// Where and how to reach etcd (kube-apiserver's `--etcd-*` flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EtcdOptions {
    /// `--etcd-servers`: `http://host:port` or `https://host:port` URLs.
    pub endpoints: Vec<String>,
    /// `--etcd-prefix`: the prefix of every key (default `/registry`).
    pub prefix: String,
    /// The root of the caller's own key names, replaced by `prefix` in etcd:
    /// the registry names keys `/registry/GROUP/RESOURCE/...`, and with root
    /// `/registry` a Pod is `PREFIX/core/pods/NS/NAME` in etcd (not
    /// `PREFIX/registry/core/...`). Keys outside the root (and every key when
    /// it is `None`) are stored as `PREFIX` + key.
    pub store_root: Option<String>,
    /// `--etcd-cafile`: the CA that signed etcd's serving certificate.
    pub ca_file: Option<PathBuf>,
    /// `--etcd-certfile` / `--etcd-keyfile`: the client certificate and key.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

/// The etcd engine. Cheap to share (`Arc`); every call is one or a few etcd
/// RPCs, no state is kept here but a lower bound of the compacted revision.
pub struct EtcdStorage {
    client: Client,
    /// The prefix without a trailing `/` (`/registry`).
    prefix: String,
    /// [`EtcdOptions::store_root`] without a trailing `/`; empty for none.
    root: String,
    /// A lower bound of etcd's compacted revision (what this process compacted
    /// or found); the exact value is probed when needed.
    compacted_hint: AtomicU64,
    /// Bumped after every successful write: open watches then ask etcd for
    /// progress, so a progress report past the write comes promptly.
    writes: watch::Sender<u64>,
    /// Whether every endpoint's etcd answers a progress request only once the
    /// watch has delivered every earlier event (see
    /// [`progress_requests_are_safe`]); when not, watches never ask.
    progress_requests: bool,
}

/// Whether etcd `version` answers a watch progress request correctly: etcd
/// before 3.4.31 and 3.5.13 answers with its current revision even for a
/// watch still catching up on older events (etcd-io/etcd#15220; 3.5.8-3.5.12
/// fixed that but never answer a watch that has had no event yet, #17507).
/// kube-apiserver asks etcd only from these versions on as well
/// (`etcd3/feature`'s `RequestWatchProgress` check, v3.4.31+ / v3.5.13+).
pub fn progress_requests_are_safe(version: &str) -> bool {
    let mut parts = version
        .trim()
        .trim_start_matches('v')
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u64>().ok());
    let (Some(Some(major)), Some(Some(minor)), Some(Some(patch))) =
        (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    match (major, minor) {
        (3, 4) => patch >= 31,
        (3, 5) => patch >= 13,
        (3, m) => m >= 6,
        (m, _) => m > 3,
    }
}

impl std::fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn engine<E: std::fmt::Display>(e: E) -> StorageError {
    StorageError::Engine(format!("etcd: {e}"))
}

/// etcd's `ErrCompacted` ("mvcc: required revision has been compacted").
fn is_compacted(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s) if s.message().contains("required revision has been compacted"))
}

/// etcd's `ErrFutureRev` ("mvcc: required revision is a future revision").
fn is_future(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s) if s.message().contains("future revision"))
}

fn rev(r: i64) -> Revision {
    u64::try_from(r).unwrap_or(0)
}

fn etcd_rev(r: Revision) -> Result<i64, StorageError> {
    i64::try_from(r).map_err(|_| StorageError::Engine(format!("revision {r} out of etcd's range")))
}

/// The first key after every key starting with `prefix` (etcd's
/// `GetPrefixRangeEnd`); `\0` (the whole key space) if there is none.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn read_pem(what: &str, path: &std::path::Path) -> Result<Vec<u8>, StorageError> {
    std::fs::read(path)
        .map_err(|e| StorageError::Engine(format!("cannot read {what} {}: {e}", path.display())))
}

impl EtcdStorage {
    /// Connect to etcd (retrying for up to 20 s while it is unreachable, as
    /// kube-apiserver waits for etcd on start) and check it answers.
    pub async fn connect(options: &EtcdOptions) -> Result<Self, StorageError> {
        let endpoints: Vec<String> = options
            .endpoints
            .iter()
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        if endpoints.is_empty() {
            return Err(StorageError::Engine(
                "no etcd endpoint given (--etcd-servers)".into(),
            ));
        }
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        let tls_wanted = options.ca_file.is_some()
            || options.cert_file.is_some()
            || endpoints.iter().any(|e| e.starts_with("https://"));
        if tls_wanted {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &options.ca_file {
                tls = tls.ca_certificate(Certificate::from_pem(read_pem("--etcd-cafile", ca)?));
            }
            match (&options.cert_file, &options.key_file) {
                (Some(cert), Some(key)) => {
                    tls = tls.identity(Identity::from_pem(
                        read_pem("--etcd-certfile", cert)?,
                        read_pem("--etcd-keyfile", key)?,
                    ));
                }
                (None, None) => {}
                _ => {
                    return Err(StorageError::Engine(
                        "--etcd-certfile and --etcd-keyfile go together".into(),
                    ));
                }
            }
            connect = connect.with_tls(tls);
        }
        let client = Client::connect(&endpoints, Some(connect.clone()))
            .await
            .map_err(engine)?;
        let prefix = options.prefix.trim_end_matches('/').to_string();
        let root = options
            .store_root
            .as_deref()
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string();
        let storage = Self {
            client,
            prefix,
            root,
            compacted_hint: AtomicU64::new(0),
            writes: watch::Sender::new(0),
            progress_requests: false,
        };
        let deadline = Instant::now() + CONNECT_PATIENCE;
        loop {
            match tokio::time::timeout(Duration::from_secs(5), storage.current_revision()).await {
                Ok(Ok(_)) => {
                    let progress_requests =
                        progress_requests_everywhere(&endpoints, &connect).await;
                    return Ok(Self {
                        progress_requests,
                        ..storage
                    });
                }
                Ok(Err(e)) if Instant::now() >= deadline => {
                    return Err(StorageError::Engine(format!(
                        "cannot reach etcd at {}: {e}",
                        endpoints.join(",")
                    )));
                }
                Err(_) if Instant::now() >= deadline => {
                    return Err(StorageError::Engine(format!(
                        "etcd at {} does not answer",
                        endpoints.join(",")
                    )));
                }
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }

    /// Whether this engine's watches ask etcd for progress (every endpoint
    /// runs an etcd that answers such requests correctly).
    pub fn asks_for_progress(&self) -> bool {
        self.progress_requests
    }

    /// The etcd key of a store key: the prefix, then the key with the store
    /// root cut off (a key without a leading `/` gets one, so
    /// `compact_rev_key` is `/registry/compact_rev_key`).
    fn full(&self, key: &str) -> Vec<u8> {
        let rest = match key.strip_prefix(self.root.as_str()) {
            Some(rest) if !self.root.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
                rest
            }
            _ => key,
        };
        let mut out = Vec::with_capacity(self.prefix.len() + rest.len() + 1);
        out.extend_from_slice(self.prefix.as_bytes());
        if !rest.is_empty() && !rest.starts_with('/') {
            out.push(b'/');
        }
        out.extend_from_slice(rest.as_bytes());
        out
    }

    fn convert(&self, kv: &EtcdKv, key: &str) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Bytes::copy_from_slice(kv.value()),
            create_revision: rev(kv.create_revision()),
            mod_revision: rev(kv.mod_revision()),
        }
    }

    fn kv(&self) -> etcd_client::KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE)
    }

    fn wrote(&self) {
        self.writes.send_modify(|n| *n = n.wrapping_add(1));
    }

    async fn txn(&self, txn: Txn) -> Result<TxnResponse, StorageError> {
        self.kv().txn(txn).await.map_err(engine)
    }

    /// The key read by the transaction's `get` operation, if it exists.
    fn read_in_txn(&self, resp: &TxnResponse, key: &str) -> Result<Option<KeyValue>, StorageError> {
        for op in resp.op_responses() {
            if let TxnOpResponse::Get(get) = op {
                return match get.kvs().first() {
                    Some(kv) => Ok(Some(self.convert(kv, key))),
                    None => Ok(None),
                };
            }
        }
        Ok(None)
    }

    /// Whether a read at `revision` is still possible (`revision >= 1`).
    async fn readable_at(&self, revision: Revision) -> Result<bool, StorageError> {
        let opts = GetOptions::new()
            .with_count_only()
            .with_revision(etcd_rev(revision)?);
        match self.kv().get(self.full(""), Some(opts)).await {
            Ok(_) => Ok(true),
            Err(e) if is_compacted(&e) => Ok(false),
            // A revision not written yet is not compacted.
            Err(e) if is_future(&e) => Ok(true),
            Err(e) => Err(engine(e)),
        }
    }

    /// `Err(Compacted)` if `requested` is below etcd's compacted revision.
    async fn check_available(&self, requested: Revision) -> Result<(), StorageError> {
        let hint = self.compacted_hint.load(Ordering::Acquire);
        let compacted = if requested < hint {
            hint
        } else if requested == 0 {
            self.compacted_revision().await?
        } else if self.readable_at(requested).await? {
            return Ok(());
        } else {
            self.compacted_revision().await?
        };
        if requested < compacted {
            return Err(StorageError::Compacted {
                requested,
                compacted,
            });
        }
        Ok(())
    }

    fn compacted_error(&self, requested: Revision, compacted: Revision) -> StorageError {
        self.compacted_hint.fetch_max(compacted, Ordering::AcqRel);
        StorageError::Compacted {
            requested,
            compacted,
        }
    }
}

/// One etcd watch event as a store [`Event`] (kube's `parseEvent`: a put
/// whose create and mod revisions are equal is a creation).
fn convert_event(names: &Names, ev: &etcd_client::Event) -> Result<Event, StorageError> {
    let kv = ev
        .kv()
        .ok_or_else(|| StorageError::Engine("etcd watch event without a key".into()))?;
    let key = names.name(kv.key())?;
    let prev = ev.prev_kv().map(|p| KeyValue {
        key: key.clone(),
        value: Bytes::copy_from_slice(p.value()),
        create_revision: rev(p.create_revision()),
        mod_revision: rev(p.mod_revision()),
    });
    match ev.event_type() {
        EtcdKind::Put => {
            let created = kv.create_revision() == kv.mod_revision();
            Ok(Event {
                kind: if created {
                    EventType::Added
                } else {
                    EventType::Modified
                },
                kv: KeyValue {
                    key,
                    value: Bytes::copy_from_slice(kv.value()),
                    create_revision: rev(kv.create_revision()),
                    mod_revision: rev(kv.mod_revision()),
                },
                prev: if created { None } else { prev },
            })
        }
        EtcdKind::Delete => {
            // kube: "etcd event received with PrevKv=nil".
            let last = prev.ok_or_else(|| {
                StorageError::Engine(format!(
                    "etcd delete event of {key} without its previous value"
                ))
            })?;
            Ok(Event {
                kind: EventType::Deleted,
                kv: KeyValue {
                    key,
                    value: last.value.clone(),
                    create_revision: last.create_revision,
                    mod_revision: rev(kv.mod_revision()),
                },
                prev: Some(last),
            })
        }
    }
}

/// Store names of the etcd keys of one range: the range's store prefix and
/// its etcd form (a key is the store prefix + what follows the etcd prefix).
#[derive(Debug, Clone)]
struct Names {
    store: String,
    etcd: Vec<u8>,
}

impl Names {
    fn name(&self, key: &[u8]) -> Result<String, StorageError> {
        let rest = key.strip_prefix(self.etcd.as_slice()).ok_or_else(|| {
            StorageError::Engine(format!(
                "etcd returned a key outside the range of {}",
                self.store
            ))
        })?;
        let rest = std::str::from_utf8(rest)
            .map_err(|_| StorageError::Engine("etcd returned a key that is not UTF-8".into()))?;
        Ok(format!("{}{rest}", self.store))
    }
}

/// Ask each endpoint's etcd for its version: progress requests are used only
/// when every one of them answers them correctly (an endpoint that does not
/// say counts as one that does not). kube-apiserver checks every endpoint the
/// same way.
async fn progress_requests_everywhere(endpoints: &[String], connect: &ConnectOptions) -> bool {
    let mut safe = true;
    for endpoint in endpoints {
        let version = async {
            let mut client = Client::connect([endpoint.as_str()], Some(connect.clone()))
                .await
                .map_err(engine)?;
            let status = client.status().await.map_err(engine)?;
            Ok::<_, StorageError>(status.version().to_string())
        };
        match tokio::time::timeout(Duration::from_secs(5), version).await {
            Ok(Ok(v)) if progress_requests_are_safe(&v) => {
                tracing::debug!(%endpoint, version = %v, "etcd answers watch progress requests");
            }
            Ok(Ok(v)) => {
                tracing::warn!(
                    %endpoint,
                    version = %v,
                    "etcd {v} answers watch progress requests before the events they cover \
                     (etcd-io/etcd#15220): reads that must be current are served from etcd, \
                     not the watch cache; upgrade etcd to 3.4.31+ or 3.5.13+ to serve them \
                     from the cache"
                );
                safe = false;
            }
            Ok(Err(e)) => {
                tracing::warn!(%endpoint, error = %e, "cannot read etcd's version; not asking its watches for progress");
                safe = false;
            }
            Err(_) => {
                tracing::warn!(%endpoint, "etcd did not tell its version in 5 s; not asking its watches for progress");
                safe = false;
            }
        }
    }
    safe
}

/// Pump one etcd watch into `tx` until the receiver is dropped or the watch
/// fails; asks etcd for progress every [`PROGRESS_EVERY`] and shortly after
/// local writes.
async fn pump_watch(
    mut requests: etcd_client::WatchRequestSender,
    mut responses: etcd_client::WatchResponseStream,
    names: Names,
    from: Revision,
    mut writes: watch::Receiver<u64>,
    ask_progress: bool,
    tx: mpsc::Sender<Result<WatchItem, StorageError>>,
) {
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_request = Instant::now();
    let mut pending = false;
    // The highest revision delivered or reported so far.
    let mut seen = from;
    loop {
        let wake = tokio::time::Instant::from_std(last_request + PROGRESS_AFTER_WRITE);
        let ask = tokio::select! {
            () = tx.closed() => return,
            _ = ticker.tick(), if ask_progress => true,
            Ok(()) = writes.changed(), if ask_progress => {
                if last_request.elapsed() >= PROGRESS_AFTER_WRITE {
                    true
                } else {
                    pending = true;
                    false
                }
            }
            () = tokio::time::sleep_until(wake), if pending => true,
            msg = responses.next() => {
                let resp = match msg {
                    Some(Ok(resp)) => resp,
                    Some(Err(e)) => {
                        let _ = tx.send(Err(engine(e))).await;
                        return;
                    }
                    None => {
                        let _ = tx.send(Err(StorageError::Engine("etcd closed the watch".into()))).await;
                        return;
                    }
                };
                if resp.canceled() {
                    let err = if resp.compact_revision() > 0 {
                        StorageError::Compacted { requested: seen, compacted: rev(resp.compact_revision()) }
                    } else {
                        StorageError::Engine(format!("etcd cancelled the watch: {}", resp.cancel_reason()))
                    };
                    let _ = tx.send(Err(err)).await;
                    return;
                }
                if resp.events().is_empty() {
                    // A progress notification (or the creation answer, which
                    // says nothing about progress).
                    if !resp.created()
                        && let Some(r) = resp.header().map(|h| rev(h.revision()))
                        && r > seen
                    {
                        seen = r;
                        if tx.send(Ok(WatchItem::Progress(r))).await.is_err() {
                            return;
                        }
                    }
                    continue;
                }
                for ev in resp.events() {
                    let item = convert_event(&names, ev);
                    let failed = item.is_err();
                    if let Ok(ev) = &item {
                        seen = seen.max(ev.revision());
                    }
                    if tx.send(item.map(WatchItem::Event)).await.is_err() || failed {
                        return;
                    }
                }
                false
            }
        };
        if ask {
            pending = false;
            last_request = Instant::now();
            if requests.request_progress().await.is_err() {
                let _ = tx
                    .send(Err(StorageError::Engine("etcd watch stream closed".into())))
                    .await;
                return;
            }
        }
    }
}

#[async_trait::async_trait]
impl Storage for EtcdStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let resp = self.kv().get(self.full(key), None).await.map_err(engine)?;
        match resp.kvs().first() {
            Some(kv) => Ok(Some(self.convert(kv, key))),
            None => Ok(None),
        }
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult, StorageError> {
        if opts.revision == Some(0) {
            // The state before the first write: empty, unless compacted.
            self.check_available(0).await?;
            return Ok(ListResult::default());
        }
        let full = self.full(prefix);
        let end = prefix_end(&full);
        let start = match opts.start_after.as_deref() {
            Some(s) => {
                let mut k = self.full(s);
                if k >= full {
                    k.push(0);
                    k
                } else {
                    full.clone()
                }
            }
            None => full.clone(),
        };
        let mut get = GetOptions::new().with_range(end);
        if let Some(r) = opts.revision {
            get = get.with_revision(etcd_rev(r)?);
        }
        if let Some(n) = opts.limit.filter(|n| *n > 0) {
            get = get.with_limit(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let resp = match self.kv().get(start, Some(get)).await {
            Ok(resp) => resp,
            Err(e) if is_compacted(&e) => {
                let requested = opts.revision.unwrap_or(0);
                let compacted = self.compacted_revision().await?;
                return Err(self.compacted_error(requested, compacted));
            }
            Err(e) if is_future(&e) => {
                return Err(StorageError::Engine(format!(
                    "required revision {} is a future revision",
                    opts.revision.unwrap_or(0)
                )));
            }
            Err(e) => return Err(engine(e)),
        };
        let names = Names {
            store: prefix.to_string(),
            etcd: full,
        };
        let items = resp
            .kvs()
            .iter()
            .map(|kv| Ok(self.convert(kv, &names.name(kv.key())?)))
            .collect::<Result<Vec<_>, _>>()?;
        let total = rev(resp.count());
        let remaining = total.saturating_sub(items.len() as u64);
        let revision = match opts.revision {
            Some(r) => r,
            None => resp.header().map(|h| rev(h.revision())).unwrap_or(0),
        };
        Ok(ListResult {
            items,
            revision,
            remaining,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue, StorageError> {
        let full = self.full(key);
        let txn = Txn::new()
            .when([Compare::create_revision(full.clone(), CompareOp::Equal, 0)])
            .and_then([
                TxnOp::put(full.clone(), value.to_vec(), None),
                // The revisions only: the value is the one just written
                // (not sent back by etcd a second time).
                TxnOp::get(full.clone(), Some(GetOptions::new().with_keys_only())),
            ]);
        let resp = self.txn(txn).await?;
        if !resp.succeeded() {
            return Err(StorageError::AlreadyExists {
                key: key.to_string(),
            });
        }
        self.wrote();
        self.read_in_txn(&resp, key)?
            .map(|kv| KeyValue { value, ..kv })
            .ok_or_else(|| StorageError::Engine(format!("{key} missing right after its create")))
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let full = self.full(key);
        let txn = Txn::new()
            .when([
                // A missing key has mod_revision 0: never "update" it into being.
                Compare::version(full.clone(), CompareOp::Greater, 0),
                Compare::mod_revision(full.clone(), CompareOp::Equal, etcd_rev(expected)?),
            ])
            .and_then([
                TxnOp::put(full.clone(), value.to_vec(), None),
                // Revisions only, as in `create`: the value is `value`.
                TxnOp::get(full.clone(), Some(GetOptions::new().with_keys_only())),
            ])
            .or_else([TxnOp::get(full, Some(GetOptions::new().with_keys_only()))]);
        let resp = self.txn(txn).await?;
        let current = self.read_in_txn(&resp, key)?;
        if !resp.succeeded() {
            return Err(match current {
                None => StorageError::NotFound {
                    key: key.to_string(),
                },
                Some(kv) => StorageError::Conflict {
                    key: key.to_string(),
                    expected,
                    actual: kv.mod_revision,
                },
            });
        }
        self.wrote();
        current
            .map(|kv| KeyValue { value, ..kv })
            .ok_or_else(|| StorageError::Engine(format!("{key} missing right after its update")))
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let full = self.full(key);
        let mut when = vec![Compare::version(full.clone(), CompareOp::Greater, 0)];
        if let Some(e) = expected {
            when.push(Compare::mod_revision(
                full.clone(),
                CompareOp::Equal,
                etcd_rev(e)?,
            ));
        }
        let txn = Txn::new()
            .when(when)
            .and_then([TxnOp::delete(
                full.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(full, None)]);
        let resp = self.txn(txn).await?;
        if !resp.succeeded() {
            return Err(match self.read_in_txn(&resp, key)? {
                None => StorageError::NotFound {
                    key: key.to_string(),
                },
                Some(kv) => StorageError::Conflict {
                    key: key.to_string(),
                    expected: expected.unwrap_or(0),
                    actual: kv.mod_revision,
                },
            });
        }
        self.wrote();
        let revision = resp.header().map(|h| rev(h.revision())).unwrap_or(0);
        let prev = resp.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(d) => d.prev_kvs().first().cloned(),
            _ => None,
        });
        let prev = prev.ok_or_else(|| {
            StorageError::Engine(format!("etcd deleted {key} without its previous value"))
        })?;
        let mut gone = self.convert(&prev, key);
        gone.mod_revision = revision;
        Ok(gone)
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StorageError> {
        Ok(crate::events_only(self.watch_progress(prefix, from).await?))
    }

    async fn watch_progress(
        &self,
        prefix: &str,
        from: Revision,
    ) -> Result<ProgressWatchStream, StorageError> {
        self.check_available(from).await?;
        let full = self.full(prefix);
        let full_for_names = full.clone();
        let options = WatchOptions::new()
            .with_range(prefix_end(&full))
            .with_start_revision(etcd_rev(from.saturating_add(1))?)
            .with_prev_key()
            .with_progress_notify();
        let stream = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_MESSAGE)
            .watch(full, Some(options))
            .await
            .map_err(engine)?;
        let (requests, responses) = stream.split();
        let (tx, rx) = mpsc::channel(1024);
        tokio::spawn(pump_watch(
            requests,
            responses,
            Names {
                store: prefix.to_string(),
                etcd: full_for_names,
            },
            from,
            self.writes.subscribe(),
            self.progress_requests,
            tx,
        ));
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let resp = self
            .kv()
            .get(self.full(""), Some(GetOptions::new().with_count_only()))
            .await
            .map_err(engine)?;
        Ok(resp.header().map(|h| rev(h.revision())).unwrap_or(0))
    }

    /// Other servers write to the same etcd: a consistent read waits for
    /// etcd's current revision (one count-only range request, as
    /// kube-apiserver's `getCurrentResourceVersionFromStorage`).
    async fn consistent_read_revision(&self) -> Result<Option<Revision>, StorageError> {
        self.current_revision().await.map(Some)
    }

    fn request_progress(&self) {
        self.writes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn serves_progress_requests(&self) -> bool {
        self.progress_requests
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        if revision == 0 {
            return Ok(());
        }
        let mut target = revision;
        loop {
            match self.kv().compact(etcd_rev(target)?, None).await {
                Ok(_) => {
                    self.compacted_hint.fetch_max(target, Ordering::AcqRel);
                    return Ok(());
                }
                // Already compacted at or past it (maybe by another server): a no-op.
                Err(e) if is_compacted(&e) => return Ok(()),
                // Past the current revision: compact everything, as sled does.
                Err(e) if is_future(&e) => {
                    let now = self.current_revision().await?;
                    if now >= target {
                        return Err(engine(e));
                    }
                    target = now;
                }
                Err(e) => return Err(engine(e)),
            }
        }
    }

    async fn compacted_revision(&self) -> Result<Revision, StorageError> {
        // Reads succeed exactly at revisions >= etcd's compacted revision:
        // the lowest readable revision, found by bisection from the hint.
        let mut lo = self.compacted_hint.load(Ordering::Acquire).max(1);
        if self.readable_at(lo).await? {
            // Revision 1 is etcd's empty start: compacted there or never is
            // the same (nothing was written at 1).
            return Ok(if lo == 1 { 0 } else { lo });
        }
        let mut hi = self.current_revision().await?;
        // Invariant: lo unreadable, hi readable.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.readable_at(mid).await? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        self.compacted_hint.fetch_max(hi, Ordering::AcqRel);
        Ok(hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_etcds_range_end() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }

    #[test]
    fn progress_requests_are_used_from_the_fixed_etcd_releases_on() {
        for (version, safe) in [
            ("3.4.23", false), // Debian bookworm's etcd-server
            ("3.4.30", false),
            ("3.4.31", true),
            ("3.5.12", false),
            ("3.5.13", true),
            ("3.5.30", true),
            ("v3.6.0", true),
            ("3.6.0-rc.1", true),
            ("4.0.0", true),
            ("3.3.27", false),
            ("", false),
            ("unknown", false),
        ] {
            assert_eq!(progress_requests_are_safe(version), safe, "{version}");
        }
    }
}
