//! Events on federated objects (core `v1` Events, so `kubectl describe` and
//! `kubectl get events` show them), as the federation controllers of
//! Federation v1 recorded them: reason `CreateInCluster`,
//! `UpdateInCluster`, `DeleteInCluster`, `Adopted`, `Failed…`, with the
//! cluster named in the message.
//!
//! Writing an event never blocks or fails a reconcile: it is sent from a
//! task of its own and a failure is only logged.
//!
//! Routine Normal events (a copy created, updated, deleted or adopted:
//! [`ROUTINE_REASONS`]) share one budget per process, a token bucket of
//! [`ROUTINE_BURST`] events refilled at [`ROUTINE_PER_SECOND`]: a bulk of
//! 10,000 new objects would otherwise write 10,000 Events to the host, one
//! per object, as many as the objects themselves. kube's `EventCorrelator`
//! spam filter is per object (25 events, then one per 5 minutes) and would
//! let every one through. Warnings and every other reason are always sent;
//! the record's status says the same per cluster anyway.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// The component named in `source` / `reportingComponent`.
pub const COMPONENT: &str = "ubernetes-federation";

/// Normal or Warning, as Kubernetes events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// The Normal reasons that share the routine budget.
pub const ROUTINE_REASONS: &[&str] = &[
    "CreateInCluster",
    "UpdateInCluster",
    "DeleteInCluster",
    "Adopted",
];
/// Routine events sent at once after a quiet time.
pub const ROUTINE_BURST: f64 = 100.0;
/// Routine events per second, sustained.
pub const ROUTINE_PER_SECOND: f64 = 5.0;

/// A token bucket.
#[derive(Debug)]
struct Budget {
    tokens: f64,
    at: Instant,
    dropped: u64,
}

impl Budget {
    fn new() -> Self {
        Self {
            tokens: ROUTINE_BURST,
            at: Instant::now(),
            dropped: 0,
        }
    }

    /// Take one token at `now`, if there is one.
    fn take(&mut self, now: Instant) -> bool {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * ROUTINE_PER_SECOND;
        self.tokens = (self.tokens + refill).min(ROUTINE_BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// Records events through the federation's own API.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    seq: std::sync::Arc<AtomicU64>,
    routine: std::sync::Arc<Mutex<Budget>>,
}

impl Recorder {
    /// A recorder writing with `client` (the in-process client).
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            seq: std::sync::Arc::new(AtomicU64::new(0)),
            routine: std::sync::Arc::new(Mutex::new(Budget::new())),
        }
    }

    /// Record an event about `obj` (a federated object as JSON, with
    /// apiVersion and kind). Cluster-scoped objects get their events in
    /// namespace `default`, as kube-apiserver's recorders do. A routine
    /// Normal event over the budget (see the module docs) is dropped.
    pub fn record(&self, obj: &Value, kind: EventType, reason: &str, message: String) {
        if kind == EventType::Normal && ROUTINE_REASONS.contains(&reason) {
            let mut budget = self.routine.lock();
            if !budget.take(Instant::now()) {
                tracing::debug!(
                    reason,
                    dropped = budget.dropped,
                    "routine event over budget, not recorded"
                );
                return;
            }
        }
        let Some(event) = self.build(obj, kind, reason, &message) else {
            return;
        };
        let namespace = event
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        tokio::spawn(async move {
            if let Err(err) = api.create(&PostParams::default(), &event).await {
                tracing::debug!(error = %err, "cannot record an event");
            }
        });
    }

    fn build(&self, obj: &Value, kind: EventType, reason: &str, message: &str) -> Option<Event> {
        let meta = obj.get("metadata")?;
        let name = meta.get("name")?.as_str()?;
        let namespace = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        let now = jiff::Timestamp::now();
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let suffix = format!(
            "{:x}",
            (now.as_nanosecond() as u64).wrapping_add(seq.wrapping_mul(0x9e37_79b9))
        );
        let ts = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let micro = now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
        let value = json!({
            "metadata": {"name": format!("{name}.{suffix}"), "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": name,
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind.as_str(),
            "source": {"component": COMPONENT},
            "firstTimestamp": ts,
            "lastTimestamp": ts,
            "eventTime": micro,
            "count": 1,
            "reportingComponent": COMPONENT,
            "reportingInstance": COMPONENT,
            "action": reason,
        });
        serde_json::from_value(value).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_routine_budget_allows_a_burst_then_its_rate() {
        let mut b = Budget::new();
        let t0 = b.at;
        let sent = (0..1000).filter(|_| b.take(t0)).count();
        assert_eq!(sent as f64, ROUTINE_BURST);
        // One second later: the sustained rate.
        let t1 = t0 + Duration::from_secs(1);
        let sent = (0..1000).filter(|_| b.take(t1)).count();
        assert_eq!(sent as f64, ROUTINE_PER_SECOND);
        // A long quiet time refills no more than the burst.
        let t2 = t1 + Duration::from_secs(3600);
        let sent = (0..1000).filter(|_| b.take(t2)).count();
        assert_eq!(sent as f64, ROUTINE_BURST);
        assert_eq!(b.dropped, 3000 - 2 * 100 - 5);
    }

    #[tokio::test]
    async fn an_event_names_the_object_reason_and_goes_to_its_namespace() {
        // The client is never used by `build`.
        let client = kube::Client::new(
            tower::service_fn(|_req: http::Request<kube::client::Body>| async {
                Err::<http::Response<kube::client::Body>, std::io::Error>(std::io::Error::other(
                    "unused",
                ))
            }),
            "default",
        );
        let rec = Recorder::new(client);
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "app", "uid": "u1", "resourceVersion": "7"}});
        let ev = rec
            .build(
                &obj,
                EventType::Normal,
                "CreateInCluster",
                "created in cluster m1",
            )
            .expect("event");
        assert_eq!(ev.metadata.namespace.as_deref(), Some("app"));
        assert!(ev.metadata.name.as_deref().unwrap_or("").starts_with("cm."));
        assert_eq!(ev.involved_object.uid.as_deref(), Some("u1"));
        assert_eq!(ev.reason.as_deref(), Some("CreateInCluster"));
        assert_eq!(ev.type_.as_deref(), Some("Normal"));
        let other = rec
            .build(&obj, EventType::Normal, "CreateInCluster", "x")
            .expect("event");
        assert_ne!(ev.metadata.name, other.metadata.name, "names are unique");

        let cluster_scoped = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "app", "uid": "u2"}});
        let ev = rec
            .build(
                &cluster_scoped,
                EventType::Warning,
                "FailedCreateInCluster",
                "no",
            )
            .expect("event");
        assert_eq!(ev.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(ev.type_.as_deref(), Some("Warning"));
    }
}
