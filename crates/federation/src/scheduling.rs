//! The scheduling controller (SPEC §3.6): fills sync's per-cluster
//! extension point ([`ReplicaScheduler`]) with each cluster's share of a
//! workload's replicas.
//!
//! For a Deployment, ReplicaSet or StatefulSet, on every reconcile of its
//! sync:
//! 1. the preferences ([`planner::preferences_of`]) and the Ready clusters
//!    its placement selects;
//! 2. what each runs (its copy's `status.readyReplicas`, v1's "current")
//!    and, for copies short of available replicas for longer than
//!    `--federation-unschedulable-threshold`, their estimated capacity
//!    ([`failover::ShortfallTracker`]);
//! 3. Federation v1's plan ([`planner::schedule`]);
//! 4. the safe step towards it ([`failover::handover`]): scale-ups at
//!    once, scale-downs only as far as the others make up for; clusters
//!    that are not Ready are not in the answer, so sync leaves them alone;
//! 5. an event `ReplicasMoved` on the federated object when the plan
//!    changes, saying why (weight change, cluster lost, cluster back,
//!    scaled, overflow).
//!
//! A workload that a federated HorizontalPodAutoscaler scales
//! ([`hpa::controlling_hpa`], from a watch of the federation's HPAs) is not
//! planned: in each cluster its HPA is placed in, a new copy is sent without
//! `spec.replicas` and an existing copy with its own current value (see
//! [`hpa`]); the HPA itself gets its per-cluster share of `minReplicas` /
//! `maxReplicas` ([`hpa::split`]).
//!
//! It reads only caches (the kind's federated informer and the HPA
//! store): sync calls it on every reconcile. What has to wake sync up —
//! an HPA created or changed, a shortfall that matures — is sent on
//! sync's wake-up stream ([`ReplicaScheduler::wakeups`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use futures::channel::mpsc;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use parking_lot::Mutex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::events::{EventType, Recorder};
use crate::failover::{self, Action, ClusterState, ShortfallTracker};
use crate::hpa;
use crate::informer::ObjectKey;
use crate::kinds::FederatedKind;
use crate::member_object::ClusterFields;
use crate::placement;
use crate::planner;
use crate::policy::{GroupKind, Replicas};
use crate::sync::{ReplicaScheduler, ScheduleInput};

/// The event recorded when a workload's replicas move between clusters.
pub const REPLICAS_MOVED: &str = "ReplicasMoved";
/// The event recorded when a preferences annotation does not parse.
pub const INVALID_PREFERENCES: &str = "InvalidReplicaPreferences";

/// What the scheduler remembers per federated object (by uid).
#[derive(Default)]
struct Memory {
    tracker: ShortfallTracker,
    /// The last plan (for `ReplicasMoved`).
    plan: BTreeMap<String, i64>,
    prefs: Option<String>,
    total: i64,
    ready: BTreeSet<String>,
    pref_error: Option<String>,
    touched: Option<Instant>,
    /// A wake-up is pending at this time (shortfall maturing).
    wake_at: Option<Instant>,
}

/// The scheduling controller: implements [`ReplicaScheduler`] for sync.
pub struct Scheduler {
    threshold: Duration,
    recorder: Recorder,
    hpas: Store<DynamicObject>,
    memory: Mutex<HashMap<String, Memory>>,
    /// Per workload kind, where sync takes the keys to reconcile again.
    wakeups: Mutex<HashMap<GroupKind, mpsc::UnboundedSender<ObjectKey>>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

/// The federated HPA kind (`autoscaling/v2`).
fn hpa_resource() -> ApiResource {
    ApiResource {
        group: "autoscaling".into(),
        version: "v2".into(),
        api_version: "autoscaling/v2".into(),
        kind: "HorizontalPodAutoscaler".into(),
        plural: "horizontalpodautoscalers".into(),
    }
}

/// Where the replicas of `kind` live, if it is a workload the scheduler
/// plans (its policy's [`Replicas::Workload`]): `(pointer, preferences
/// annotation)`.
fn workload(kind: &FederatedKind) -> Option<(&'static str, &'static str)> {
    match kind.policy().replicas {
        Replicas::Workload {
            pointer,
            preferences,
        } => Some((pointer, preferences)),
        Replicas::None | Replicas::Autoscaler => None,
    }
}

impl Scheduler {
    /// Start the scheduler: a watch of the federation's HPAs (through
    /// `client`) until `stop`. `threshold` is
    /// `--federation-unschedulable-threshold`.
    pub fn start(
        client: kube::Client,
        recorder: Recorder,
        threshold: Duration,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let writer = reflector::store::Writer::new(hpa_resource());
        let hpas = writer.as_reader();
        let this = Arc::new(Self {
            threshold,
            recorder,
            hpas,
            memory: Mutex::new(HashMap::new()),
            wakeups: Mutex::new(HashMap::new()),
        });
        let api: Api<DynamicObject> = Api::all_with(client, &hpa_resource());
        let me = this.clone();
        tokio::spawn(async move {
            let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()))
                .default_backoff()
                .applied_objects();
            let mut stream = std::pin::pin!(stream);
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => break,
                    n = stream.next() => n,
                };
                match next {
                    // An HPA changed: the workload it scales is scheduled anew.
                    Some(Ok(h)) => {
                        let v = serde_json::to_value(&h).unwrap_or(Value::Null);
                        if let Some(t) = hpa::scale_target(&v) {
                            let key = ObjectKey::new(h.namespace().as_deref(), &t.name);
                            me.wake_target(&t, key);
                        }
                    }
                    Some(Err(e)) => tracing::debug!(error = %e, "federated HPA watch"),
                    None => break,
                }
            }
        });
        this
    }

    /// Ask sync to reconcile again the workload `key` an HPA's target
    /// names (every scheduled kind it may be, when it names no group).
    fn wake_target(&self, target: &hpa::ScaleTarget, key: ObjectKey) {
        for (gk, tx) in self.wakeups.lock().iter() {
            if target.is(&gk.group, &gk.kind, &target.name) {
                let _ = tx.unbounded_send(key.clone());
            }
        }
    }

    fn controlling_hpa(
        &self,
        ns: Option<&str>,
        group: &str,
        kind: &str,
        name: &str,
    ) -> Option<Value> {
        let hpas: Vec<Value> = self
            .hpas
            .state()
            .iter()
            .filter(|h| h.namespace().as_deref() == ns && h.metadata.deletion_timestamp.is_none())
            .filter_map(|h| serde_json::to_value(&**h).ok())
            .collect();
        hpa::controlling_hpa(&hpas, group, kind, name).cloned()
    }

    fn schedule_hpa(&self, input: &ScheduleInput<'_>) -> Option<BTreeMap<String, ClusterFields>> {
        let fed = input.object;
        let (min, max) = hpa::min_max(fed);
        // The HPA's own preferences annotation, if any (weight 1 each).
        let (prefs, _) = planner::preferences_of(planner::DEPLOYMENT_PREFERENCES_ANNOTATION, fed);
        let clusters = ready_selected(input);
        let shares = hpa::split(&prefs, min, max, &clusters, &object_key(fed));
        Some(
            shares
                .into_iter()
                .map(|(c, s)| {
                    let mut f = ClusterFields::default();
                    f.set.insert("/spec/minReplicas".into(), s.min.into());
                    f.set.insert("/spec/maxReplicas".into(), s.max.into());
                    (c, f)
                })
                .collect(),
        )
    }

    fn schedule_hpa_target(
        &self,
        input: &ScheduleInput<'_>,
        hpa_obj: &Value,
        pointer: &str,
    ) -> BTreeMap<String, ClusterFields> {
        let hpa_placement = placement::placement_of(hpa_obj);
        let key = key_of(input.object);
        input
            .clusters
            .iter()
            .filter(|c| c.selected && c.member.ready)
            .map(|c| {
                let fields = if hpa_placement.selects(&c.member.labels) {
                    match input
                        .informer
                        .get(&c.member.name, &key)
                        .and_then(|o| o.data.pointer(pointer).and_then(Value::as_i64))
                    {
                        // The member's autoscaler decides; we send back
                        // what it decided (never our own number).
                        Some(r) => ClusterFields::set_at(pointer, r),
                        None => ClusterFields::omit_at(pointer),
                    }
                } else {
                    ClusterFields::set_at(pointer, 0)
                };
                (c.member.name.clone(), fields)
            })
            .collect()
    }

    fn schedule_workload(
        &self,
        input: &ScheduleInput<'_>,
        pointer: &str,
        preferences: &str,
    ) -> Option<BTreeMap<String, ClusterFields>> {
        let fed = input.object;
        let (group, kind) = (&input.kind.resource.group, &input.kind.resource.kind);
        let uid = fed
            .pointer("/metadata/uid")
            .and_then(Value::as_str)?
            .to_string();
        let name = fed.pointer("/metadata/name").and_then(Value::as_str)?;
        let ns = fed.pointer("/metadata/namespace").and_then(Value::as_str);
        if let Some(h) = self.controlling_hpa(ns, group, kind, name) {
            return Some(self.schedule_hpa_target(input, &h, pointer));
        }
        let total = fed.pointer(pointer).and_then(Value::as_i64).unwrap_or(1);
        let (prefs, pref_error) = planner::preferences_of(preferences, fed);
        let prefs_text = fed
            .pointer("/metadata/annotations")
            .and_then(|m| m.get(preferences))
            .and_then(Value::as_str)
            .map(str::to_string);
        let clusters = ready_selected(input);
        let key = key_of(fed);
        let copies: BTreeMap<String, Arc<DynamicObject>> = input
            .informer
            .copies(&key)
            .into_iter()
            .filter(|(c, _)| clusters.contains(c))
            .collect();
        let now = Instant::now();

        let mut memory = self.memory.lock();
        prune(&mut memory, now);
        let mem = memory.entry(uid).or_default();
        mem.touched = Some(now);

        let mut current = BTreeMap::new();
        let mut capacity = BTreeMap::new();
        let mut next_wake: Option<Instant> = None;
        for (c, copy) in &copies {
            let spec = i64_at(&copy.data, pointer).unwrap_or(1);
            let ready = i64_at(&copy.data, "/status/readyReplicas").unwrap_or(0);
            let available = i64_at(&copy.data, "/status/availableReplicas").unwrap_or(0);
            current.insert(c.clone(), ready);
            let observed = copy_observed(copy);
            match mem
                .tracker
                .observe(c, spec, available, observed, now, self.threshold)
            {
                Some(cap) => {
                    capacity.insert(c.clone(), cap);
                }
                None if observed && available < spec => {
                    // Short, not for long enough yet: look again when it
                    // would be.
                    let at = now + self.threshold;
                    next_wake = Some(next_wake.map_or(at, |w| w.min(at)));
                }
                None => {}
            }
        }
        let keep: Vec<&str> = copies.keys().map(String::as_str).collect();
        mem.tracker.retain(&keep);

        let plan = planner::schedule(
            &prefs,
            total,
            &clusters,
            &current,
            &capacity,
            &key.to_string(),
        );
        let state: BTreeMap<String, ClusterState> = clusters
            .iter()
            .map(|c| {
                let copy = copies.get(c);
                (
                    c.clone(),
                    ClusterState {
                        ready: true,
                        target: plan.get(c).copied().unwrap_or(0),
                        spec: copy.map(|o| i64_at(&o.data, pointer).unwrap_or(1)),
                        available: copy
                            .and_then(|o| i64_at(&o.data, "/status/availableReplicas"))
                            .unwrap_or(0),
                    },
                )
            })
            .collect();
        let steps = failover::handover(total, &state);

        // Events: why the plan changed.
        let ready_now: BTreeSet<String> = clusters.iter().cloned().collect();
        if let Some(err) = &pref_error
            && mem.pref_error.as_ref() != Some(err)
        {
            self.recorder.record(
                fed,
                EventType::Warning,
                INVALID_PREFERENCES,
                format!("{err}; replicas are spread evenly (weight 1 each)"),
            );
        }
        mem.pref_error = pref_error;
        let planned: BTreeMap<String, i64> = plan
            .iter()
            .filter(|(c, _)| clusters.contains(c))
            .map(|(c, n)| (c.clone(), *n))
            .collect();
        if !mem.plan.is_empty() && mem.plan != planned {
            let why = why_moved(mem, &ready_now, &prefs_text, total, &capacity);
            let moves = describe_moves(&mem.plan, &planned);
            self.recorder.record(
                fed,
                EventType::Normal,
                REPLICAS_MOVED,
                format!("{moves} ({why})"),
            );
        }
        mem.plan = planned;
        mem.prefs = prefs_text;
        mem.total = total;
        mem.ready = ready_now;

        // A shortfall that matures later must wake sync up then.
        if let Some(at) = next_wake
            && mem.wake_at.is_none_or(|w| w <= now || at < w)
        {
            mem.wake_at = Some(at);
            if let Some(tx) = self.wakeups.lock().get(&input.kind.group_kind()).cloned() {
                let key = key.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                    let _ = tx.unbounded_send(key);
                });
            }
        }
        drop(memory);

        Some(
            steps
                .into_iter()
                .filter_map(|(c, a)| match a {
                    Action::Apply(n) => Some((c, ClusterFields::set_at(pointer, n))),
                    Action::Leave => None,
                })
                .collect(),
        )
    }
}

impl ReplicaScheduler for Scheduler {
    fn schedule(&self, input: &ScheduleInput<'_>) -> Option<BTreeMap<String, ClusterFields>> {
        match input.kind.policy().replicas {
            Replicas::Autoscaler => self.schedule_hpa(input),
            Replicas::Workload {
                pointer,
                preferences,
            } => self.schedule_workload(input, pointer, preferences),
            Replicas::None => None,
        }
    }

    fn wakeups(&self, kind: &FederatedKind) -> Option<mpsc::UnboundedReceiver<ObjectKey>> {
        workload(kind)?;
        let (tx, rx) = mpsc::unbounded();
        self.wakeups.lock().insert(kind.group_kind(), tx);
        Some(rx)
    }
}

/// The Ready clusters the object's placement selects, by name.
fn ready_selected(input: &ScheduleInput<'_>) -> Vec<String> {
    input
        .clusters
        .iter()
        .filter(|c| c.selected && c.member.ready)
        .map(|c| c.member.name.clone())
        .collect()
}

fn key_of(obj: &Value) -> ObjectKey {
    ObjectKey::new(
        obj.pointer("/metadata/namespace").and_then(Value::as_str),
        obj.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
}

fn object_key(obj: &Value) -> String {
    key_of(obj).to_string()
}

fn i64_at(v: &Value, p: &str) -> Option<i64> {
    v.pointer(p).and_then(Value::as_i64)
}

/// Whether a member has observed its copy's current spec (and reports
/// status at all).
fn copy_observed(copy: &DynamicObject) -> bool {
    let generation = copy.metadata.generation.unwrap_or(0);
    i64_at(&copy.data, "/status/observedGeneration").is_some_and(|o| o >= generation)
}

/// Drop what is remembered of objects not scheduled for ten minutes
/// (deleted ones), when the map grows.
fn prune(memory: &mut HashMap<String, Memory>, now: Instant) {
    if memory.len() < 4096 {
        return;
    }
    memory.retain(|_, m| {
        m.touched
            .is_some_and(|t| now.saturating_duration_since(t) < Duration::from_secs(600))
    });
}

fn why_moved(
    mem: &Memory,
    ready_now: &BTreeSet<String>,
    prefs: &Option<String>,
    total: i64,
    capacity: &BTreeMap<String, i64>,
) -> String {
    let lost: Vec<&str> = mem
        .ready
        .difference(ready_now)
        .map(String::as_str)
        .collect();
    let back: Vec<&str> = ready_now
        .difference(&mem.ready)
        .map(String::as_str)
        .collect();
    if !lost.is_empty() {
        format!("cluster lost: {}", lost.join(", "))
    } else if !back.is_empty() {
        format!("cluster back: {}", back.join(", "))
    } else if &mem.prefs != prefs {
        "weight change".into()
    } else if mem.total != total {
        format!("scaled from {} to {total}", mem.total)
    } else if !capacity.is_empty() {
        let over: Vec<String> = capacity
            .iter()
            .map(|(c, n)| format!("{c} runs only {n}"))
            .collect();
        format!("overflow: {}", over.join(", "))
    } else {
        "rebalance".into()
    }
}

fn describe_moves(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) -> String {
    let clusters: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let parts: Vec<String> = clusters
        .into_iter()
        .filter_map(|c| {
            let (b, a) = (
                before.get(c).copied().unwrap_or(0),
                after.get(c).copied().unwrap_or(0),
            );
            (a != b).then(|| format!("{c} {b}→{a}"))
        })
        .collect();
    format!("replicas moved: {}", parts.join(", "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;

    fn m(v: &[(&str, i64)]) -> BTreeMap<String, i64> {
        v.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    }

    #[test]
    fn moves_are_described_per_cluster() {
        assert_eq!(
            describe_moves(&m(&[("a", 5), ("b", 5)]), &m(&[("a", 10), ("b", 0)])),
            "replicas moved: a 5→10, b 5→0"
        );
        assert_eq!(
            describe_moves(&m(&[("a", 5), ("b", 5)]), &m(&[("a", 10)])),
            "replicas moved: a 5→10, b 5→0"
        );
    }

    #[test]
    fn the_reason_names_what_changed() {
        let mut mem = Memory {
            ready: ["a", "b"].iter().map(|s| s.to_string()).collect(),
            prefs: Some("p".into()),
            total: 10,
            ..Memory::default()
        };
        let ab: BTreeSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let a: BTreeSet<String> = ["a"].iter().map(|s| s.to_string()).collect();
        let p = Some("p".to_string());
        let none = BTreeMap::new();
        assert_eq!(why_moved(&mem, &a, &p, 10, &none), "cluster lost: b");
        assert_eq!(
            why_moved(&mem, &ab, &Some("q".into()), 10, &none),
            "weight change"
        );
        assert_eq!(why_moved(&mem, &ab, &p, 12, &none), "scaled from 10 to 12");
        assert_eq!(
            why_moved(&mem, &ab, &p, 10, &m(&[("a", 2)])),
            "overflow: a runs only 2"
        );
        mem.ready = a;
        assert_eq!(why_moved(&mem, &ab, &p, 10, &none), "cluster back: b");
    }

    #[test]
    fn only_apps_workloads_are_scheduled() {
        let kind = |g: &str, k: &str| FederatedKind::new(g, "v1", k, "x", true);
        for k in ["Deployment", "StatefulSet", "ReplicaSet"] {
            assert_eq!(
                workload(&kind("apps", k)),
                Some((
                    "/spec/replicas",
                    if k == "ReplicaSet" {
                        planner::REPLICA_SET_PREFERENCES_ANNOTATION
                    } else {
                        planner::DEPLOYMENT_PREFERENCES_ANNOTATION
                    }
                )),
                "{k}"
            );
        }
        assert_eq!(workload(&kind("apps", "DaemonSet")), None);
        assert_eq!(workload(&kind("example.com", "Deployment")), None);
        // A CRD's objects, whatever their group says.
        assert_eq!(workload(&kind("apps", "Deployment").custom()), None);
    }
}
