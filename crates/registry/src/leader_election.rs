//! Leader election with a `coordination.k8s.io/v1` Lease: client-go's
//! `tools/leaderelection` algorithm, run over this server's own registry
//! (the Lease is an ordinary object: `kubectl get lease -n kube-system`).
//!
//! - A candidate reads the Lease. None: it creates it holding it (so the
//!   first replica leads at once). Held by another identity whose record
//!   changed less than `leaseDurationSeconds` ago *by this process's clock*
//!   (the observed time, never the writer's `renewTime`: clocks may differ):
//!   it waits `--leader-elect-retry-period` and tries again. Otherwise it
//!   writes itself as holder (`acquireTime` = now, `leaseTransitions` + 1)
//!   with the read `resourceVersion` as precondition: of two candidates only
//!   one write succeeds (optimistic concurrency), the other gets 409.
//! - The leader renews (`renewTime`) every retry period. If no renewal has
//!   succeeded for `--leader-elect-renew-deadline` (less than the lease
//!   duration), it gives up: the current term's [`CancellationToken`] is
//!   cancelled, so everything started for the term stops *before* another
//!   candidate can consider the lease expired (a partitioned leader stops
//!   writing), and it campaigns again.
//! - On shutdown the leader releases the Lease (empty holder,
//!   `leaseDurationSeconds: 1`, client-go's `ReleaseOnCancel`), so a
//!   replacement takes over at its next retry.
//! - Winning a term emits an Event on the Lease, reason `LeaderElection`,
//!   message `IDENTITY became leader`, as kube's controllers do.
//!
//! Consumers hold a [`Leadership`] and start their work per term with
//! [`Leadership::on_leading`]. With the embedded store (sled) only one
//! process can open the data dir, so the server uses
//! [`Leadership::always`] instead of an election.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng as _;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;

use crate::registry::Registry;
use crate::store::WriteOptions;

/// The group of the Lease kind.
const GROUP: &str = "coordination.k8s.io";

/// The election's parameters (kube-controller-manager's `--leader-elect-*`).
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// How long a non-leader waits after the last observed change of the
    /// Lease before taking it (`--leader-elect-lease-duration`; 3 s by
    /// default here, 15 s in kube, see docs/operations.md).
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up
    /// leadership (`--leader-elect-renew-deadline`; 2 s, kube's 10 s).
    pub renew_deadline: Duration,
    /// The pause between two attempts (`--leader-elect-retry-period`;
    /// 400 ms, kube's 2 s).
    pub retry_period: Duration,
    /// The Lease's namespace and name.
    pub namespace: String,
    pub name: String,
    /// This candidate's holder identity ([`default_identity`]).
    pub identity: String,
}

impl LeaderElectionConfig {
    /// client-go's checks (`NewLeaderElector`).
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err("leaseDuration must be greater than renewDeadline".into());
        }
        // client-go: renewDeadline > JitterFactor (1.2) * retryPeriod.
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err("renewDeadline must be greater than retryPeriod*JitterFactor".into());
        }
        if self.retry_period.is_zero() {
            return Err("retryPeriod must be greater than zero".into());
        }
        if self.identity.is_empty() {
            return Err("leader election requires a non-empty identity".into());
        }
        Ok(())
    }
}

/// kube-controller-manager's identity: the host name, `_`, a fresh UUID.
pub fn default_identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// Who leads, seen from one process: `Some(term)` while it leads, the term's
/// token cancelled when leadership ends. Cheap to clone.
#[derive(Clone)]
pub struct Leadership {
    tx: Arc<watch::Sender<Option<CancellationToken>>>,
    /// The process's stop: ends the [`Leadership::on_leading`] tasks.
    stop: CancellationToken,
    identity: String,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("identity", &self.identity)
            .field("leading", &self.is_leader())
            .finish()
    }
}

impl Leadership {
    /// Leading from now until `stop`: the only process of its store.
    pub fn always(stop: CancellationToken) -> Self {
        let (tx, _) = watch::channel(Some(stop.clone()));
        Self {
            tx: Arc::new(tx),
            stop,
            identity: String::new(),
        }
    }

    fn new(stop: CancellationToken, identity: String) -> Self {
        let (tx, _) = watch::channel(None);
        Self {
            tx: Arc::new(tx),
            stop,
            identity,
        }
    }

    /// Whether this process leads now.
    pub fn is_leader(&self) -> bool {
        self.tx.borrow().as_ref().is_some_and(|t| !t.is_cancelled())
    }

    /// This candidate's identity (empty without an election).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Call `start(term)` at the beginning of every term this process leads
    /// (at once if it leads now); `term` is cancelled when the term ends.
    pub fn on_leading<F>(&self, start: F)
    where
        F: Fn(CancellationToken) + Send + Sync + 'static,
    {
        let mut rx = self.tx.subscribe();
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                let term = rx.borrow_and_update().clone();
                if let Some(term) = term
                    && !term.is_cancelled()
                {
                    start(term);
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = rx.changed() => if changed.is_err() { return },
                }
            }
        });
    }

    /// Wait until this process leads (or `stop`).
    pub async fn wait_leading(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx
            .wait_for(|t| t.as_ref().is_some_and(|t| !t.is_cancelled()))
            .await;
    }
}

/// The Lease record as last observed, and when (this process's clock).
struct Observed {
    spec: Value,
    at: Instant,
}

/// One candidate (see the module documentation).
pub struct LeaderElector {
    registry: Arc<Registry>,
    config: LeaderElectionConfig,
    observed: Mutex<Option<Observed>>,
}

/// kube's MicroTime: RFC 3339 with microseconds, UTC.
fn micro_time_now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// `d` plus up to 20 % (client-go's `wait.Jitter(d, 1.2)` adds up to d·1.2).
fn jitter(d: Duration) -> Duration {
    d + d.mul_f64(rand::rng().random_range(0.0..1.2))
}

impl LeaderElector {
    /// Start campaigning in the background until `stop`; the returned
    /// [`Leadership`] reports the terms won.
    pub fn start(
        registry: Arc<Registry>,
        config: LeaderElectionConfig,
        stop: CancellationToken,
    ) -> Leadership {
        let leadership = Leadership::new(stop.clone(), config.identity.clone());
        let elector = Arc::new(Self {
            registry,
            config,
            observed: Mutex::new(None),
        });
        let tx = leadership.tx.clone();
        tokio::spawn(async move { elector.run(tx, stop).await });
        leadership
    }

    fn lock_description(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    async fn run(
        self: Arc<Self>,
        tx: Arc<watch::Sender<Option<CancellationToken>>>,
        stop: CancellationToken,
    ) {
        let lease = self.lock_description();
        loop {
            tracing::info!(lease = %lease, identity = %self.config.identity, "attempting to acquire leader lease");
            // Acquire.
            loop {
                match self.try_acquire_or_renew().await {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(lease = %lease, error = %e, "error retrieving or updating the leader lease")
                    }
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(jitter(self.config.retry_period)) => {}
                }
            }
            tracing::info!(lease = %lease, identity = %self.config.identity, "successfully acquired lease");
            let term = stop.child_token();
            tx.send_replace(Some(term.clone()));
            self.became_leader_event().await;
            // Renew until the deadline passes without a successful renewal.
            let mut last_renew = Instant::now();
            let lost = loop {
                // Never past the deadline: a leader that cannot renew stops
                // at it, not up to a retry period later.
                let pause = self.config.retry_period.min(
                    self.config
                        .renew_deadline
                        .saturating_sub(last_renew.elapsed()),
                );
                tokio::select! {
                    () = stop.cancelled() => break false,
                    () = tokio::time::sleep(pause) => {}
                }
                let started = Instant::now();
                let left = self
                    .config
                    .renew_deadline
                    .saturating_sub(started.duration_since(last_renew));
                let renewed = match tokio::time::timeout(left, self.try_acquire_or_renew()).await {
                    Ok(Ok(true)) => true,
                    Ok(Ok(false)) => {
                        // Someone else holds it now: stop at once.
                        tracing::warn!(lease = %lease, "the leader lease is held by another candidate");
                        break true;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(lease = %lease, error = %e, "failed to renew the leader lease");
                        false
                    }
                    Err(_) => false,
                };
                if renewed {
                    // The write happened after `started`: others observed
                    // it no earlier than that.
                    last_renew = started;
                } else if last_renew.elapsed() >= self.config.renew_deadline {
                    tracing::error!(lease = %lease, deadline = ?self.config.renew_deadline, "failed to renew the leader lease within the renew deadline");
                    break true;
                }
            };
            // Stop the term's work before anything else (kube's
            // OnStoppedLeading).
            term.cancel();
            tx.send_replace(None);
            if lost {
                tracing::error!(lease = %lease, identity = %self.config.identity, "leaderelection lost: the leader's controllers are stopped");
                continue;
            }
            self.release().await;
            return;
        }
    }

    fn leases(&self) -> Result<Arc<crate::Store>, ApiError> {
        self.registry
            .get(GROUP, "v1", "leases")
            .ok_or_else(|| ApiError::internal("the Lease resource is not served"))
    }

    /// One attempt (client-go's `tryAcquireOrRenew`): `Ok(true)` when this
    /// candidate holds the Lease after it.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, ApiError> {
        let leases = self.leases()?;
        let ns = self.config.namespace.as_str();
        let me = self.config.identity.as_str();
        let now = micro_time_now();
        let duration = i64::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(15);
        let current = match leases.get_value(Some(ns), &self.config.name).await {
            Ok(l) => l,
            Err(e) if e.code == 404 => {
                let lease = json!({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.config.name, "namespace": ns},
                    "spec": {
                        "holderIdentity": me,
                        "leaseDurationSeconds": duration,
                        "acquireTime": now,
                        "renewTime": now,
                        "leaseTransitions": 0,
                    }
                });
                let namespaces = self.registry.namespaces();
                return match leases
                    .create(
                        namespaces.as_deref(),
                        Some(ns),
                        lease,
                        &WriteOptions::default(),
                    )
                    .await
                {
                    Ok(w) => {
                        self.observe(w.object.get("spec").cloned().unwrap_or(Value::Null));
                        Ok(true)
                    }
                    Err(e) if e.code == 409 => Ok(false),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let spec = current.get("spec").cloned().unwrap_or_else(|| json!({}));
        let observed_at = self.observe(spec.clone());
        let holder = spec
            .get("holderIdentity")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let held_for = Duration::from_secs(
            spec.get("leaseDurationSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        );
        if !holder.is_empty() && holder != me && observed_at.elapsed() < held_for {
            return Ok(false);
        }
        let transitions = spec
            .get("leaseTransitions")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let mut new_spec = json!({
            "holderIdentity": me,
            "leaseDurationSeconds": duration,
            "renewTime": now,
        });
        if holder == me {
            new_spec["acquireTime"] = spec.get("acquireTime").cloned().unwrap_or(json!(now));
            new_spec["leaseTransitions"] = json!(transitions);
        } else {
            new_spec["acquireTime"] = json!(now);
            new_spec["leaseTransitions"] = json!(transitions + 1);
        }
        self.write(current, new_spec).await
    }

    /// Replace the Lease's spec, with its resourceVersion as precondition.
    async fn write(&self, mut current: Value, spec: Value) -> Result<bool, ApiError> {
        let leases = self.leases()?;
        current["spec"] = spec;
        if let Some(meta) = current.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        match leases
            .update(
                Some(&self.config.namespace),
                &self.config.name,
                current,
                None,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(w) => {
                self.observe(w.object.get("spec").cloned().unwrap_or(Value::Null));
                Ok(true)
            }
            // Another candidate wrote first (stale resourceVersion).
            Err(e) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Remember the record; returns when it was first seen as it is.
    fn observe(&self, spec: Value) -> Instant {
        let mut observed = self.observed.lock();
        match &*observed {
            Some(o) if o.spec == spec => o.at,
            _ => {
                let at = Instant::now();
                *observed = Some(Observed { spec, at });
                at
            }
        }
    }

    /// Give the Lease up if still held (client-go's `release`).
    async fn release(&self) {
        let Ok(leases) = self.leases() else { return };
        let Ok(current) = leases
            .get_value(Some(&self.config.namespace), &self.config.name)
            .await
        else {
            return;
        };
        let spec = current.get("spec").cloned().unwrap_or_else(|| json!({}));
        if spec.get("holderIdentity").and_then(Value::as_str) != Some(&self.config.identity) {
            return;
        }
        let now = micro_time_now();
        let released = json!({
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": spec.get("leaseTransitions").cloned().unwrap_or(json!(0)),
        });
        match self.write(current, released).await {
            Ok(true) => {
                tracing::info!(lease = %self.lock_description(), "released the leader lease")
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "failed to release the leader lease"),
        }
    }

    /// kube's `LeaderElection` Event on the Lease: `IDENTITY became leader`.
    async fn became_leader_event(&self) {
        let Some(events) = self.registry.get("", "v1", "events") else {
            return;
        };
        let ns = self.config.namespace.as_str();
        let uid = match self.leases() {
            Ok(l) => l
                .get_value(Some(ns), &self.config.name)
                .await
                .ok()
                .and_then(|v| {
                    v.pointer("/metadata/uid")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let message = format!("{} became leader", self.config.identity);
        let event = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {
                "name": format!("{}.{:x}", self.config.name, rand::rng().random::<u64>()),
                "namespace": ns,
            },
            "involvedObject": {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "namespace": ns, "name": self.config.name, "uid": uid,
            },
            "reason": "LeaderElection",
            "message": message,
            "type": "Normal",
            "source": {"component": "ubernetes"},
            "reportingComponent": "ubernetes",
            "reportingInstance": self.config.identity,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        let namespaces = self.registry.namespaces();
        if let Err(e) = events
            .create(
                namespaces.as_deref(),
                Some(ns),
                event,
                &WriteOptions::default(),
            )
            .await
        {
            tracing::warn!(error = %e, "cannot record the leader election event");
        }
        tracing::info!(lease = %self.lock_description(), "{message}");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test may panic
mod tests {
    use super::*;
    use crate::RegistryOptions;
    use crate::controllers::{BootstrapOptions, bootstrap};
    use ubernetes_storage::Storage;
    use ubernetes_storage::sled_engine::SledStorage;

    async fn registry(dir: &std::path::Path) -> Arc<Registry> {
        let storage: Arc<dyn Storage> = Arc::new(SledStorage::open(dir).unwrap());
        let registry = Registry::new(storage, crate::kinds::builtin(), RegistryOptions::default())
            .await
            .unwrap();
        bootstrap(
            &registry,
            &BootstrapOptions {
                advertise_address: "127.0.0.1".into(),
                secure_port: 6443,
            },
        )
        .await
        .unwrap();
        registry
    }

    fn config(identity: &str, lease: Duration) -> LeaderElectionConfig {
        LeaderElectionConfig {
            lease_duration: lease,
            renew_deadline: lease.mul_f64(0.6),
            retry_period: lease / 10,
            namespace: "kube-system".into(),
            name: "test-lease".into(),
            identity: identity.into(),
        }
    }

    fn elector(registry: &Arc<Registry>, identity: &str, lease: Duration) -> LeaderElector {
        LeaderElector {
            registry: registry.clone(),
            config: config(identity, lease),
            observed: Mutex::new(None),
        }
    }

    async fn lease_spec(registry: &Registry) -> Value {
        registry
            .get(GROUP, "v1", "leases")
            .unwrap()
            .get_value(Some("kube-system"), "test-lease")
            .await
            .unwrap()["spec"]
            .clone()
    }

    #[test]
    fn config_checks_are_client_gos() {
        assert!(config("a", Duration::from_secs(15)).validate().is_ok());
        let mut c = config("a", Duration::from_secs(15));
        c.renew_deadline = c.lease_duration;
        assert!(
            c.validate().is_err(),
            "renew deadline must be below the lease"
        );
        let mut c = config("a", Duration::from_secs(15));
        c.retry_period = c.renew_deadline;
        assert!(
            c.validate().is_err(),
            "retry period must be below the deadline"
        );
        assert!(config("", Duration::from_secs(15)).validate().is_err());
        let id = default_identity();
        let (host, uuid) = id.rsplit_once('_').unwrap();
        assert!(!host.is_empty());
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{id}");
    }

    #[tokio::test]
    async fn first_candidate_leads_at_once_others_wait_for_the_lease_to_expire() {
        let dir = tempfile::tempdir().unwrap();
        let registry = registry(dir.path()).await;
        let lease = Duration::from_secs(1);
        let a = elector(&registry, "host_a", lease);
        let b = elector(&registry, "host_b", lease);
        assert!(
            a.try_acquire_or_renew().await.unwrap(),
            "no lease: A takes it"
        );
        let spec = lease_spec(&registry).await;
        assert_eq!(spec["holderIdentity"], "host_a");
        assert_eq!(spec["leaseDurationSeconds"], 1);
        assert_eq!(spec["leaseTransitions"], 0);
        assert_eq!(spec["acquireTime"], spec["renewTime"]);
        assert!(!b.try_acquire_or_renew().await.unwrap(), "held: B waits");
        // A renews: same acquireTime, same transitions, newer renewTime.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(a.try_acquire_or_renew().await.unwrap());
        let renewed = lease_spec(&registry).await;
        assert_eq!(renewed["acquireTime"], spec["acquireTime"]);
        assert_ne!(renewed["renewTime"], spec["renewTime"]);
        assert_eq!(renewed["leaseTransitions"], 0);
        // B saw a change (the renewal) just now: still not expired.
        assert!(!b.try_acquire_or_renew().await.unwrap());
        // A stops renewing; a lease duration after B's last observation B takes it.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert!(
            b.try_acquire_or_renew().await.unwrap(),
            "expired: B takes it"
        );
        let taken = lease_spec(&registry).await;
        assert_eq!(taken["holderIdentity"], "host_b");
        assert_eq!(taken["leaseTransitions"], 1);
        assert_ne!(taken["acquireTime"], spec["acquireTime"]);
        // A comes back: B's record is new to A, so A waits.
        assert!(!a.try_acquire_or_renew().await.unwrap());
    }

    #[tokio::test]
    async fn of_two_candidates_racing_for_an_expired_lease_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let registry = registry(dir.path()).await;
        let lease = Duration::from_secs(1);
        let old = elector(&registry, "host_old", lease);
        assert!(old.try_acquire_or_renew().await.unwrap());
        let c = elector(&registry, "host_c", lease);
        let d = elector(&registry, "host_d", lease);
        assert!(!c.try_acquire_or_renew().await.unwrap());
        assert!(!d.try_acquire_or_renew().await.unwrap());
        tokio::time::sleep(Duration::from_millis(1100)).await;
        for _ in 0..5 {
            let (rc, rd) = tokio::join!(c.try_acquire_or_renew(), d.try_acquire_or_renew());
            let (rc, rd) = (rc.unwrap(), rd.unwrap());
            // Each may renew what it already holds, never both hold it.
            assert!(!(rc && rd), "both candidates think they lead");
        }
        let holder = lease_spec(&registry).await["holderIdentity"].clone();
        assert!(holder == "host_c" || holder == "host_d", "{holder}");
    }

    #[tokio::test]
    async fn the_leader_stops_its_term_when_another_holds_the_lease_and_releases_on_stop() {
        let dir = tempfile::tempdir().unwrap();
        let registry = registry(dir.path()).await;
        let stop = CancellationToken::new();
        let cfg = config("host_a", Duration::from_secs(2));
        let leadership = LeaderElector::start(registry.clone(), cfg, stop.clone());
        let terms = Arc::new(Mutex::new(Vec::<CancellationToken>::new()));
        {
            let terms = terms.clone();
            leadership.on_leading(move |term| terms.lock().push(term));
        }
        tokio::time::timeout(Duration::from_secs(2), leadership.wait_leading())
            .await
            .expect("the only candidate leads at once");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(terms.lock().len(), 1);
        // The "became leader" Event, on the Lease.
        let events = registry.get("", "v1", "events").unwrap();
        let list = events
            .list(
                Some("kube-system"),
                None,
                0,
                None,
                crate::store::ReadAt::Latest,
            )
            .await
            .unwrap();
        assert!(
            list.items.iter().any(|i| {
                let v: Value = serde_json::from_slice(i).unwrap();
                v["reason"] == "LeaderElection"
                    && v["message"] == "host_a became leader"
                    && v["involvedObject"]["kind"] == "Lease"
            }),
            "no LeaderElection event"
        );
        // Another process takes the lease over (as after a partition).
        let leases = registry.get(GROUP, "v1", "leases").unwrap();
        let mut lease = leases
            .get_value(Some("kube-system"), "test-lease")
            .await
            .unwrap();
        lease["spec"]["holderIdentity"] = json!("host_z");
        leases
            .update(
                Some("kube-system"),
                "test-lease",
                lease,
                None,
                &WriteOptions::default(),
            )
            .await
            .unwrap();
        let first = terms.lock()[0].clone();
        tokio::time::timeout(Duration::from_secs(2), first.cancelled())
            .await
            .expect("the term ends at the next renewal");
        assert!(!leadership.is_leader());
        stop.cancel();
        // Stopping a leader releases the lease: here it no longer leads, so
        // the record stays host_z's.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(lease_spec(&registry).await["holderIdentity"], "host_z");

        // A fresh leader that stops releases its lease.
        let stop = CancellationToken::new();
        let mut cfg = config("host_b", Duration::from_secs(2));
        cfg.name = "other-lease".into();
        let leadership = LeaderElector::start(registry.clone(), cfg, stop.clone());
        tokio::time::timeout(Duration::from_secs(2), leadership.wait_leading())
            .await
            .unwrap();
        stop.cancel();
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let v = leases
                .get_value(Some("kube-system"), "other-lease")
                .await
                .unwrap();
            if v["spec"].get("holderIdentity").is_none() {
                assert_eq!(v["spec"]["leaseDurationSeconds"], 1);
                break;
            }
            assert!(Instant::now() < deadline, "not released: {v}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
