//! Event expiry: kube-apiserver's `--event-ttl` (default 1 h). kube gives
//! each Event write an etcd lease of that TTL, so an Event disappears TTL
//! after its **last write**. Here one small controller does it for both
//! storage engines (sled and etcd alike; no etcd leases, so the two behave
//! the same and a sled store needs nothing of its own):
//!
//! - **What**: core `v1` Events. `events.k8s.io/v1` Events are the same
//!   objects (stored as core Events, `kinds::groups`), so following the core
//!   store expires both.
//! - **When**: it follows the store (list, then watch, relisting after an
//!   error, as the garbage collector does) and keeps one deadline per Event
//!   in a time-ordered [`ExpiryQueue`]: the last write is the arrival of the
//!   watch event that carried it (a write without its own watch event, one
//!   lost in a relist, counts from the relist). For the Events of the
//!   first list, written before this controller started (a restart, a new
//!   leader), the arrival is unknown: the last write is taken from the
//!   Event itself, the latest of `lastTimestamp`, `eventTime`,
//!   `series.lastObservedTime` and `metadata.creationTimestamp`
//!   ([`last_written`]). Every writer of Events sets one of those on each
//!   write, so this is close; an Event changed without touching them (a
//!   label patch) then expires TTL after its last recorded time, earlier
//!   than kube would, and the second precision of `lastTimestamp` can bring
//!   it up to a second early.
//! - **Who**: it deletes, so it runs on the leader only (started per
//!   leadership term, like the other controllers); each delete carries the
//!   uid and resourceVersion it judged as preconditions, so a write that
//!   lands in between wins (409: the watch brings its new deadline) and a
//!   second sweeper, say a leader about to lose its term, deletes nothing
//!   twice.
//! - A TTL of zero expires nothing (kube's etcd store attaches no lease
//!   when the TTL is 0).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use ubernetes_storage::EventType;

use crate::controllers::{follow_listed, spawn_until};
use crate::registry::Registry;
use crate::store::{DeleteOptions, Store};

/// kube-apiserver's default `--event-ttl`.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// After a failed delete (other than a precondition or a 404), try again
/// this much later.
const RETRY: Duration = Duration::from_secs(1);

/// Deadlines, one per key, in time order: the earliest is the next to
/// expire. `V` is what the deadline was set for (here the Event's uid and
/// resourceVersion).
#[derive(Debug)]
pub struct ExpiryQueue<K: Ord + Clone + std::hash::Hash, V> {
    by_time: BTreeMap<(Instant, K), V>,
    by_key: HashMap<K, Instant>,
}

impl<K: Ord + Clone + std::hash::Hash, V> Default for ExpiryQueue<K, V> {
    fn default() -> Self {
        Self {
            by_time: BTreeMap::new(),
            by_key: HashMap::new(),
        }
    }
}

impl<K: Ord + Clone + std::hash::Hash, V> ExpiryQueue<K, V> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Expire `key` at `deadline` (replacing any earlier deadline of it).
    pub fn set(&mut self, key: K, deadline: Instant, value: V) {
        self.remove(&key);
        self.by_key.insert(key.clone(), deadline);
        self.by_time.insert((deadline, key), value);
    }

    /// Forget `key`; its value if it was queued.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let at = self.by_key.remove(key)?;
        self.by_time.remove(&(at, key.clone()))
    }

    /// The deadline and value of `key`.
    pub fn get(&self, key: &K) -> Option<(Instant, &V)> {
        let at = *self.by_key.get(key)?;
        self.by_time.get(&(at, key.clone())).map(|v| (at, v))
    }

    /// The earliest deadline.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.by_time.keys().next().map(|(at, _)| *at)
    }

    /// Take every entry whose deadline is at or before `now`, earliest first.
    pub fn pop_due(&mut self, now: Instant) -> Vec<(K, V)> {
        let mut out = Vec::new();
        while let Some(entry) = self.by_time.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((_, key), value) = entry.remove_entry();
            self.by_key.remove(&key);
            out.push((key, value));
        }
        out
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// When an Event was last written, as far as the Event itself says: the
/// latest of `lastTimestamp`, `eventTime`, `series.lastObservedTime` and
/// `metadata.creationTimestamp` (core v1 field names; the stored form of
/// both Event kinds). `None` if it carries none of them.
pub fn last_written(event: &Value) -> Option<Timestamp> {
    [
        "/lastTimestamp",
        "/eventTime",
        "/series/lastObservedTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .filter_map(|p| event.pointer(p)?.as_str()?.parse::<Timestamp>().ok())
    .max()
}

/// An Event: namespace and name.
type Key = (String, String);

/// What a deadline was set for: the Event's uid and resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    uid: String,
    resource_version: String,
}

#[derive(Default)]
struct State {
    queue: ExpiryQueue<Key, Version>,
    /// The first list has been handed over: from now on an object's
    /// arrival is its last write.
    listed: bool,
}

/// The Event expiry controller.
pub struct EventTtl {
    ttl: Duration,
    store: Arc<Store>,
    state: Mutex<State>,
    /// Wakes the worker when a deadline earlier than the one it sleeps
    /// toward may have been queued.
    wake: Notify,
}

impl EventTtl {
    /// Start expiring core v1 Events (and so events.k8s.io ones) `ttl`
    /// after their last write, until `stop` (a leadership term). `None`
    /// when `ttl` is zero or the registry serves no Events.
    pub fn start_until(
        registry: &Registry,
        ttl: Duration,
        stop: CancellationToken,
    ) -> Option<Arc<Self>> {
        if ttl.is_zero() {
            return None;
        }
        let store = registry.get("", "v1", "events")?;
        let this = Arc::new(Self {
            ttl,
            store: store.clone(),
            state: Mutex::new(State::default()),
            wake: Notify::new(),
        });
        let observer = this.clone();
        let lister = this.clone();
        follow_listed(
            stop.clone(),
            store,
            move |_, kind, obj| observer.observe(kind, &obj, Timestamp::now(), Instant::now()),
            move |_| lister.state.lock().listed = true,
        );
        let worker = this.clone();
        spawn_until(stop, async move { worker.run().await });
        tracing::info!(ttl = ?ttl, "expiring Events after their last write (--event-ttl)");
        Some(this)
    }

    /// How many Events wait for their expiry.
    pub fn pending(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Set, keep or drop the deadline of the Event `obj` seen as `kind`
    /// at `now` (wall clock `wall`).
    fn observe(&self, kind: EventType, obj: &Value, wall: Timestamp, now: Instant) {
        let meta = |f: &str| {
            obj.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let key = (meta("namespace"), meta("name"));
        if key.1.is_empty() {
            return;
        }
        let mut state = self.state.lock();
        if kind == EventType::Deleted {
            state.queue.remove(&key);
            return;
        }
        let version = Version {
            uid: meta("uid"),
            resource_version: meta("resourceVersion"),
        };
        // A relist hands over what is already known: keep its deadline.
        if state.queue.get(&key).is_some_and(|(_, v)| *v == version) {
            return;
        }
        let age = if state.listed {
            Duration::ZERO
        } else {
            last_written(obj)
                .and_then(|t| wall.duration_since(t).try_into().ok())
                .unwrap_or(Duration::ZERO)
        };
        let deadline = now + self.ttl.saturating_sub(age);
        let earliest = state.queue.next_deadline().is_none_or(|d| deadline < d);
        state.queue.set(key, deadline, version);
        drop(state);
        if earliest {
            self.wake.notify_one();
        }
    }

    async fn run(self: Arc<Self>) {
        loop {
            let next = self.state.lock().queue.next_deadline();
            match next {
                Some(at) => {
                    tokio::select! {
                        () = self.wake.notified() => continue,
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => {
                    self.wake.notified().await;
                    continue;
                }
            }
            let due = self.state.lock().queue.pop_due(Instant::now());
            for (key, version) in due {
                self.expire(key, version).await;
            }
        }
    }

    /// Delete one expired Event, if it is still the version judged.
    async fn expire(&self, key: Key, version: Version) {
        let (namespace, name) = (&key.0, &key.1);
        let opts = DeleteOptions {
            precondition_uid: Some(version.uid.clone()).filter(|u| !u.is_empty()),
            precondition_resource_version: Some(version.resource_version.clone())
                .filter(|r| !r.is_empty()),
            ..DeleteOptions::default()
        };
        let ns = Some(namespace.as_str()).filter(|n| !n.is_empty());
        match self.store.delete(ns, name, &opts).await {
            Ok(_) => tracing::debug!(%namespace, %name, "an Event expired"),
            // Gone already, or written since: its watch event says what next.
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => {
                tracing::warn!(%namespace, %name, error = %e.message, "deleting an expired Event failed; retrying");
                let mut state = self.state.lock();
                if state.queue.get(&key).is_none() {
                    state.queue.set(key, Instant::now() + RETRY, version);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RegistryOptions;
    use crate::store::WriteOptions;
    use serde_json::json;
    use ubernetes_storage::Storage;
    use ubernetes_storage::sled_engine::SledStorage;

    fn key(n: &str) -> Key {
        ("ns".into(), n.into())
    }

    #[test]
    fn the_queue_pops_in_deadline_order_and_a_new_deadline_replaces_the_old() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut q = ExpiryQueue::new();
        q.set(key("c"), t0 + s(3), 3);
        q.set(key("a"), t0 + s(1), 1);
        q.set(key("b"), t0 + s(2), 2);
        assert_eq!(q.next_deadline(), Some(t0 + s(1)));
        // "a" is written again: its deadline moves past "c".
        q.set(key("a"), t0 + s(4), 4);
        assert_eq!(q.len(), 3);
        assert_eq!(q.get(&key("a")), Some((t0 + s(4), &4)));
        assert_eq!(q.next_deadline(), Some(t0 + s(2)));
        assert!(q.pop_due(t0 + s(1)).is_empty());
        assert_eq!(
            q.pop_due(t0 + s(3)),
            vec![(key("b"), 2), (key("c"), 3)],
            "due ones, earliest first; the deadline itself is due"
        );
        assert_eq!(q.remove(&key("a")), Some(4));
        assert!(q.is_empty() && q.next_deadline().is_none());
        assert!(q.pop_due(t0 + s(10)).is_empty());
        assert_eq!(q.remove(&key("a")), None);
    }

    #[test]
    fn same_deadline_for_two_keys_keeps_both() {
        let t = Instant::now();
        let mut q = ExpiryQueue::new();
        q.set(key("x"), t, ());
        q.set(key("y"), t, ());
        assert_eq!(q.pop_due(t).len(), 2);
    }

    #[test]
    fn the_last_write_is_the_latest_of_the_events_own_times() {
        let ev = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "lastTimestamp": "2026-01-01T00:05:00Z",
            "eventTime": "2026-01-01T00:01:00.000001Z",
            "series": {"count": 3, "lastObservedTime": "2026-01-01T00:07:30.500000Z"}});
        assert_eq!(
            last_written(&ev),
            "2026-01-01T00:07:30.5Z".parse::<Timestamp>().ok()
        );
        let only_created = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "lastTimestamp": null, "eventTime": "not a time"});
        assert_eq!(
            last_written(&only_created),
            "2026-01-01T00:00:00Z".parse::<Timestamp>().ok()
        );
        assert_eq!(last_written(&json!({"metadata": {}})), None);
    }

    async fn registry() -> (tempfile::TempDir, Arc<Registry>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir.path()).expect("sled"));
        let registry = Registry::new(storage, crate::kinds::builtin(), RegistryOptions::default())
            .await
            .expect("registry");
        (dir, registry)
    }

    fn event(name: &str, last: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Test", "message": "m", "type": "Normal",
            "firstTimestamp": last, "lastTimestamp": last})
    }

    async fn exists(store: &Store, name: &str) -> bool {
        store.get(Some("default"), name).await.is_ok()
    }

    /// Wait (at most `limit`) until Event `name` is gone; `what` on failure.
    async fn wait_gone(store: &Store, name: &str, limit: Duration, what: &str) {
        let gone = async {
            while exists(store, name).await {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(limit, gone).await.expect(what);
    }

    #[tokio::test]
    async fn events_go_ttl_after_their_last_write_counted_from_their_own_times_at_start() {
        let (_dir, registry) = registry().await;
        let store = registry.get("", "v1", "events").expect("events");
        let create = |v: Value| {
            let store = store.clone();
            async move {
                store
                    .create(None, Some("default"), v, &WriteOptions::default())
                    .await
                    .expect("create")
            }
        };
        let ttl = Duration::from_millis(1500);
        // Written 0.8 s before the controller starts (a restart): it counts
        // from its creationTimestamp, so it goes within 0.7 s of the start,
        // not a whole TTL after.
        create(event("before", &Timestamp::now().to_string())).await;
        tokio::time::sleep(Duration::from_millis(800)).await;
        let stop = CancellationToken::new();
        let ctl = EventTtl::start_until(&registry, ttl, stop.clone()).expect("started");
        let within = Duration::from_millis(1300);
        wait_gone(&store, "before", within, "judged from its own times").await;
        // Listed: from now on a write counts from its arrival.
        let start = std::time::Instant::now();
        create(event("fresh", "2020-01-01T00:00:00Z")).await;
        tokio::time::sleep(Duration::from_millis(750)).await;
        assert!(
            exists(&store, "fresh").await,
            "an old lastTimestamp does not count"
        );
        // Written again at ~0.75 s: lives until ~2.25 s, past the first 1.5 s.
        store
            .guaranteed_update(Some("default"), "fresh", false, |mut v| {
                v["message"] = "again".into();
                Ok(Some(v))
            })
            .await
            .expect("update");
        tokio::time::sleep(Duration::from_millis(1000)).await;
        assert!(
            exists(&store, "fresh").await,
            "the update restarted its TTL"
        );
        wait_gone(&store, "fresh", Duration::from_secs(5), "the Event expires").await;
        assert!(start.elapsed() >= Duration::from_millis(2150));
        assert_eq!(ctl.pending(), 0);
        stop.cancel();
        assert!(EventTtl::start_until(&registry, Duration::ZERO, stop).is_none());
    }
}
