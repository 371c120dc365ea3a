//! Rollouts across clusters, wave by wave (SPEC §3.11): a federated
//! Deployment, StatefulSet or DaemonSet annotated
//! `federation.kubernetes.io/rollout-strategy` gets a new pod template one
//! wave of clusters at a time.
//!
//! ```json
//! {"waves": [["canary"], ["east", "west"], ["*"]], "minReadySeconds": 30, "onFailure": "Pause"}
//! ```
//!
//! Sync asks [`plan`] on every reconcile of such an object which pod
//! template each selected cluster's copy gets: the clusters of the waves
//! that started get the federated object's template, the later waves keep
//! the one they run (every other field of the copy still follows). The
//! plan's state is kept in the object's propagation record
//! ([`RolloutStatus`]: the template rolling out, the wave under way, when it
//! started, the templates clusters still run) with each cluster's template
//! hash and wave state, so a restart of the federation resumes the rollout
//! where it stood.
//!
//! A wave is healthy when every copy of its clusters that is Ready has
//! observed the new template (sent, and the member's
//! `status.observedGeneration` ≥ the copy's generation) and is complete as
//! `kubectl rollout status` judges it there ([`judge`]); the next wave
//! starts `minReadySeconds` after. A cluster that is not Ready does not
//! hold its wave (its replicas move by §3.6 failover); when it comes back
//! it gets the template its wave is due. A copy reporting
//! `Progressing=False/ProgressDeadlineExceeded`, or a wave not healthy
//! within `spec.progressDeadlineSeconds` (600 by default), halts the
//! rollout: no further wave starts until the template changes, and with
//! `onFailure: Rollback` the failed wave gets the template the rollout
//! started from back. While the federated object is paused
//! (`spec.paused`, `kubectl rollout pause`) no wave completes, starts or
//! halts and the deadline clock stops; `resume` starts it afresh.
//!
//! Pure functions, no I/O.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::Value;
pub use ubernetes_api::propagation::RolloutStatus;

use crate::events::EventType;
use crate::kinds::FederatedKind;
use crate::member_object::content_hash;
use crate::version::{ClusterRecord, SyncState};

/// The annotation that asks for a rollout wave by wave.
pub const ROLLOUT_STRATEGY_ANNOTATION: &str = "federation.kubernetes.io/rollout-strategy";
/// Event reason: an unreadable rollout strategy (the template goes
/// everywhere at once).
pub const INVALID_ROLLOUT_STRATEGY: &str = "InvalidRolloutStrategy";
/// Event reason: a wave's clusters get the new template.
pub const WAVE_STARTED: &str = "WaveStarted";
/// Event reason: every copy of a wave is healthy.
pub const WAVE_COMPLETED: &str = "WaveCompleted";
/// Event reason: a wave failed; no further wave starts.
pub const ROLLOUT_HALTED: &str = "RolloutHalted";
/// kube's deployment controller reason for a rollout past its deadline.
const TIMED_OUT: &str = "ProgressDeadlineExceeded";
/// kube's default `spec.progressDeadlineSeconds`.
const DEFAULT_DEADLINE: i64 = 600;

/// The workload kinds a rollout strategy applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// apps/v1 Deployment.
    Deployment,
    /// apps/v1 StatefulSet.
    StatefulSet,
    /// apps/v1 DaemonSet.
    DaemonSet,
}

impl Workload {
    /// The workload kind of `kind`, if it is one.
    pub fn of(kind: &FederatedKind) -> Option<Self> {
        if kind.resource.group != "apps" {
            return None;
        }
        match kind.resource.kind.as_str() {
            "Deployment" => Some(Self::Deployment),
            "StatefulSet" => Some(Self::StatefulSet),
            "DaemonSet" => Some(Self::DaemonSet),
            _ => None,
        }
    }
}

/// What to do when a wave fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum OnFailure {
    /// Stop: no further wave starts (the default).
    #[default]
    Pause,
    /// Stop, and send the template the rollout started from back to the
    /// failed wave.
    Rollback,
}

/// The annotation's value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Strategy {
    /// Cluster names per wave; `"*"`: every selected cluster not named.
    #[serde(default)]
    pub waves: Vec<Vec<String>>,
    /// How long a wave stays healthy before the next starts.
    #[serde(default)]
    pub min_ready_seconds: u32,
    /// `Pause` or `Rollback`.
    #[serde(default)]
    pub on_failure: OnFailure,
}

/// The rollout strategy of `fed`: `Ok(None)` without the annotation,
/// `Err` naming the problem when it cannot be read.
pub fn strategy_of(fed: &Value) -> Result<Option<Strategy>, String> {
    let Some(text) = fed
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ROLLOUT_STRATEGY_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let s: Strategy = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut seen = BTreeSet::new();
    for name in s.waves.iter().flatten() {
        if name.is_empty() {
            return Err("an empty cluster name in waves".into());
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(format!("{name:?} is in more than one wave"));
        }
    }
    Ok(Some(s))
}

/// The waves over the `selected` clusters: the named ones in the order
/// given, `"*"` the selected clusters named nowhere, and those (without a
/// `"*"`) after the last wave; empty waves are left out.
pub fn waves_of(strategy: &Strategy, selected: &[&str]) -> Vec<Vec<String>> {
    let named: BTreeSet<String> = strategy
        .waves
        .iter()
        .flatten()
        .map(|n| n.to_ascii_lowercase())
        .collect();
    let rest: Vec<String> = selected
        .iter()
        .filter(|c| !named.contains(&c.to_ascii_lowercase()))
        .map(|c| c.to_string())
        .collect();
    let mut star = false;
    let mut out: Vec<Vec<String>> = Vec::new();
    for wave in &strategy.waves {
        let mut w = Vec::new();
        for name in wave {
            if name == "*" {
                star = true;
                w.extend(rest.iter().cloned());
            } else if let Some(c) = selected.iter().find(|c| c.eq_ignore_ascii_case(name)) {
                w.push(c.to_string());
            }
        }
        if !w.is_empty() {
            out.push(w);
        }
    }
    if !star && !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The hash of a workload's pod template (`spec.template`).
pub fn template_hash(fed: &Value) -> String {
    content_hash(fed.pointer("/spec/template").unwrap_or(&Value::Null))
}

/// How `kubectl rollout status` judges one copy in its cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Rolled out.
    Complete,
    /// Still rolling out (why).
    Waiting(String),
    /// The member's controller gave up (`ProgressDeadlineExceeded`).
    Failed(String),
}

fn i64_at(v: &Value, p: &str) -> Option<i64> {
    v.pointer(p).and_then(Value::as_i64)
}

/// kubectl's `polymorphichelpers/rollout_status.go` for one member copy
/// (the strategies kubectl cannot follow, `OnDelete`, count as complete:
/// nothing will roll out by itself). A copy with 0 replicas is complete
/// at once.
pub fn judge(kind: Workload, copy: &Value) -> Health {
    let generation = i64_at(copy, "/metadata/generation").unwrap_or(0);
    let observed = i64_at(copy, "/status/observedGeneration").unwrap_or(0);
    let n = |f: &str| i64_at(copy, &format!("/status/{f}")).unwrap_or(0);
    let spec_replicas = i64_at(copy, "/spec/replicas").unwrap_or(1);
    if kind != Workload::DaemonSet && spec_replicas == 0 {
        return Health::Complete;
    }
    if observed < generation || observed == 0 {
        return Health::Waiting("waiting for the spec update to be observed".into());
    }
    let strategy = copy
        .pointer("/spec/updateStrategy/type")
        .and_then(Value::as_str);
    match kind {
        Workload::Deployment => {
            let timed_out = copy
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some("Progressing")
                            && c.get("reason").and_then(Value::as_str) == Some(TIMED_OUT)
                    })
                });
            if timed_out {
                return Health::Failed("exceeded its progress deadline".into());
            }
            let updated = n("updatedReplicas");
            if updated < spec_replicas {
                Health::Waiting(format!(
                    "{updated} out of {spec_replicas} new replicas have been updated"
                ))
            } else if n("replicas") > updated {
                Health::Waiting(format!(
                    "{} old replicas are pending termination",
                    n("replicas") - updated
                ))
            } else if n("availableReplicas") < updated {
                Health::Waiting(format!(
                    "{} of {updated} updated replicas are available",
                    n("availableReplicas")
                ))
            } else {
                Health::Complete
            }
        }
        Workload::StatefulSet => {
            if strategy == Some("OnDelete") {
                return Health::Complete;
            }
            if n("readyReplicas") < spec_replicas {
                return Health::Waiting(format!(
                    "{} of {spec_replicas} pods are ready",
                    n("readyReplicas")
                ));
            }
            if let Some(partition) = i64_at(copy, "/spec/updateStrategy/rollingUpdate/partition") {
                let want = spec_replicas - partition;
                return if n("updatedReplicas") < want {
                    Health::Waiting(format!(
                        "{} of {want} new pods have been updated",
                        n("updatedReplicas")
                    ))
                } else {
                    Health::Complete
                };
            }
            let rev = |f: &str| {
                copy.pointer(&format!("/status/{f}"))
                    .and_then(Value::as_str)
            };
            if rev("updateRevision") != rev("currentRevision") {
                Health::Waiting("waiting for the rolling update to complete".into())
            } else {
                Health::Complete
            }
        }
        Workload::DaemonSet => {
            if strategy == Some("OnDelete") {
                return Health::Complete;
            }
            let desired = n("desiredNumberScheduled");
            if n("updatedNumberScheduled") < desired {
                Health::Waiting(format!(
                    "{} out of {desired} new pods have been updated",
                    n("updatedNumberScheduled")
                ))
            } else if n("numberAvailable") < desired {
                Health::Waiting(format!(
                    "{} of {desired} updated pods are available",
                    n("numberAvailable")
                ))
            } else {
                Health::Complete
            }
        }
    }
}

/// One member cluster as [`plan`] sees it.
#[derive(Clone, Debug)]
pub struct ClusterView<'a> {
    /// The Cluster's name.
    pub name: &'a str,
    /// Whether the object's placement selects it.
    pub selected: bool,
    /// Whether the Cluster is Ready.
    pub ready: bool,
    /// Its entry in the object's propagation record.
    pub record: Option<&'a ClusterRecord>,
    /// Our copy there, with its status (from the federated informer).
    pub copy: Option<Value>,
}

/// A wave's state, per cluster in the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveState {
    /// A later wave: the cluster keeps the template it runs.
    Waiting,
    /// The wave under way.
    Progressing,
    /// The cluster's copy is rolled out (or its wave is done).
    Healthy,
    /// The rollout halted in this wave.
    Failed,
}

impl WaveState {
    /// The name written in the record.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "Waiting",
            Self::Progressing => "Progressing",
            Self::Healthy => "Healthy",
            Self::Failed => "Failed",
        }
    }
}

/// What [`plan`] decided for one reconcile.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The rollout's state to keep in the record.
    pub status: RolloutStatus,
    /// Per cluster whose copy must not get the federated object's
    /// template: the template it gets instead.
    pub hold: BTreeMap<String, Value>,
    /// Per selected cluster: its wave (from 1) and the wave's state there.
    pub waves: BTreeMap<String, (i64, WaveState)>,
    /// Events on the federated object.
    pub events: Vec<(EventType, &'static str, String)>,
    /// Look again after this long (a deadline or `minReadySeconds`).
    pub recheck: Option<Duration>,
}

fn parse_time(s: Option<&str>) -> Option<Timestamp> {
    s.and_then(|s| s.parse().ok())
}

fn time(t: Timestamp) -> String {
    Timestamp::from_second(t.as_second())
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn secs_between(from: Timestamp, to: Timestamp) -> i64 {
    to.as_second() - from.as_second()
}

/// Whether the cluster's copy carries the template `target` and its
/// member has observed it: the record says it was applied for the current
/// generation, and the cached copy is not older than that apply.
fn observed_target(view: &ClusterView<'_>, target: &str, generation: i64) -> bool {
    let (Some(r), Some(copy)) = (view.record, view.copy.as_ref()) else {
        return false;
    };
    let not_older = match (
        copy.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.parse::<u64>().ok()),
        r.resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok()),
    ) {
        (Some(c), Some(a)) => c >= a,
        _ => true,
    };
    r.state == SyncState::InSync
        && r.observed_generation == generation
        && r.template_hash.as_deref() == Some(target)
        && not_older
}

/// The rollout of the federated workload `fed` (of kind `kind`, rolled out
/// as `strategy` says) at `now`, given the state kept in its record
/// (`prev`) and every member cluster.
pub fn plan(
    kind: Workload,
    fed: &Value,
    strategy: &Strategy,
    prev: Option<&RolloutStatus>,
    clusters: &[ClusterView<'_>],
    now: Timestamp,
) -> Plan {
    let target = template_hash(fed);
    let template = fed
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let generation = i64_at(fed, "/metadata/generation").unwrap_or(0);
    let deadline = i64_at(fed, "/spec/progressDeadlineSeconds").unwrap_or(DEFAULT_DEADLINE);
    let selected: Vec<&str> = clusters
        .iter()
        .filter(|c| c.selected)
        .map(|c| c.name)
        .collect();
    let waves = waves_of(strategy, &selected);
    let total = i64::try_from(waves.len()).unwrap_or(i64::MAX);
    let mut events = Vec::new();
    let wave_names = |i: i64| -> String {
        usize::try_from(i - 1)
            .ok()
            .and_then(|i| waves.get(i))
            .map(|w| w.join(", "))
            .unwrap_or_default()
    };

    let mut st = match prev {
        // The first template the federation knows (a new object, or the
        // annotation just added): there is no older template to keep.
        None => RolloutStatus {
            template_hash: target.clone(),
            wave: total + 1,
            ..RolloutStatus::default()
        },
        Some(p) if p.template_hash != target => {
            let mut templates = p.templates.clone();
            let running: BTreeSet<&str> = clusters
                .iter()
                .filter_map(|c| c.record.and_then(|r| r.template_hash.as_deref()))
                .collect();
            templates.retain(|h, _| running.contains(h.as_str()) || *h == p.template_hash);
            let st = RolloutStatus {
                template_hash: target.clone(),
                from_hash: Some(p.template_hash.clone()),
                waves: total,
                wave: 1,
                wave_started: Some(time(now)),
                healthy_since: None,
                halted: None,
                templates,
            };
            if total > 0 {
                events.push((
                    EventType::Normal,
                    WAVE_STARTED,
                    format!(
                        "wave 1/{total} ({}) gets the new pod template {}",
                        wave_names(1),
                        short(&target)
                    ),
                ));
            }
            st
        }
        Some(p) => p.clone(),
    };
    st.waves = total;
    st.wave = st.wave.clamp(1, total + 1);
    st.templates.insert(target.clone(), template);

    let mut recheck: Option<Duration> = None;
    let mut soon = |d: Duration| recheck = Some(recheck.map_or(d, |r: Duration| r.min(d)));
    // Paused (`kubectl rollout pause`): the waves hold where they are. No
    // wave is judged, so none completes, none starts and none halts; the
    // deadline clock stops (kube's deployment controller never reports
    // ProgressDeadlineExceeded for a paused Deployment) and starts afresh
    // on resume, as does the wave's `minReadySeconds`.
    let paused = crate::revisions::is_paused(fed);
    if paused && st.halted.is_none() && st.wave <= total {
        st.wave_started = None;
        st.healthy_since = None;
    }
    // Judge the wave under way.
    if !paused && st.halted.is_none() && st.wave <= total {
        let idx = usize::try_from(st.wave - 1).unwrap_or(0);
        let members: Vec<&ClusterView<'_>> = waves
            .get(idx)
            .map(|w| {
                clusters
                    .iter()
                    .filter(|c| w.iter().any(|n| n == c.name))
                    .collect()
            })
            .unwrap_or_default();
        let mut waiting: Vec<String> = Vec::new();
        let mut failed: Option<String> = None;
        // A cluster that is not Ready does not hold its wave.
        for c in members.iter().filter(|c| c.ready) {
            if !observed_target(c, &target, generation) {
                waiting.push(format!("{}: the new template is not applied yet", c.name));
                continue;
            }
            match c.copy.as_ref().map(|copy| judge(kind, copy)) {
                Some(Health::Complete) => {}
                Some(Health::Waiting(why)) => waiting.push(format!("{}: {why}", c.name)),
                Some(Health::Failed(why)) => {
                    failed = Some(format!("cluster {}: {why}", c.name));
                    break;
                }
                None => waiting.push(format!("{}: no copy yet", c.name)),
            }
        }
        // No start recorded: the wave resumes now from a pause.
        let started = parse_time(st.wave_started.as_deref()).unwrap_or(now);
        st.wave_started = Some(time(started));
        if failed.is_none() && !waiting.is_empty() {
            let spent = secs_between(started, now);
            if spent > deadline {
                failed = Some(format!(
                    "cluster {}: not healthy within progressDeadlineSeconds ({deadline} s)",
                    waiting.join("; cluster ")
                ));
            } else {
                soon(Duration::from_secs(
                    u64::try_from(deadline - spent + 1).unwrap_or(1),
                ));
            }
        }
        if let Some(why) = failed {
            let what = match strategy.on_failure {
                OnFailure::Pause => "no further wave starts (onFailure: Pause)".to_string(),
                OnFailure::Rollback => format!(
                    "no further wave starts, and wave {} gets the previous pod template back \
                     (onFailure: Rollback)",
                    st.wave
                ),
            };
            let message = format!(
                "rollout halted in wave {}/{total} ({}): {why}; {what}",
                st.wave,
                wave_names(st.wave)
            );
            events.push((EventType::Warning, ROLLOUT_HALTED, message.clone()));
            st.halted = Some(message);
            st.healthy_since = None;
        } else if waiting.is_empty() {
            let since = parse_time(st.healthy_since.as_deref()).unwrap_or(now);
            st.healthy_since = Some(time(since));
            let held = secs_between(since, now);
            let min = i64::from(strategy.min_ready_seconds);
            if held >= min {
                events.push((
                    EventType::Normal,
                    WAVE_COMPLETED,
                    format!(
                        "wave {}/{total} ({}) is rolled out",
                        st.wave,
                        wave_names(st.wave)
                    ),
                ));
                st.wave += 1;
                st.wave_started = Some(time(now));
                st.healthy_since = None;
                if st.wave <= total {
                    events.push((
                        EventType::Normal,
                        WAVE_STARTED,
                        format!(
                            "wave {}/{total} ({}) gets the new pod template {}",
                            st.wave,
                            wave_names(st.wave),
                            short(&target)
                        ),
                    ));
                    soon(Duration::from_secs(1));
                }
            } else {
                soon(Duration::from_secs(
                    u64::try_from(min - held).unwrap_or(1).max(1),
                ));
            }
        } else {
            st.healthy_since = None;
        }
    }

    // Which template each selected cluster gets, and its wave state.
    let done = st.wave > total;
    let rollback = st.halted.is_some() && strategy.on_failure == OnFailure::Rollback;
    let mut hold = BTreeMap::new();
    let mut states = BTreeMap::new();
    for (i, wave) in waves.iter().enumerate() {
        let n = i64::try_from(i + 1).unwrap_or(i64::MAX);
        for name in wave {
            let record = clusters
                .iter()
                .find(|c| c.name == name)
                .and_then(|c| c.record);
            let state = if done || n < st.wave {
                WaveState::Healthy
            } else if n == st.wave && st.halted.is_some() {
                WaveState::Failed
            } else if n == st.wave {
                let view = clusters.iter().find(|c| c.name == name);
                let complete = view.is_some_and(|c| {
                    observed_target(c, &target, generation)
                        && c.copy.as_ref().map(|copy| judge(kind, copy)) == Some(Health::Complete)
                });
                if complete {
                    WaveState::Healthy
                } else {
                    WaveState::Progressing
                }
            } else {
                WaveState::Waiting
            };
            states.insert(name.clone(), (n, state));
            let keep = if n == st.wave && rollback {
                st.from_hash.clone()
            } else if !done && n > st.wave {
                // A later wave keeps what it runs; a cluster new to the
                // object (none recorded) gets what the rollout started from.
                record
                    .and_then(|r| r.template_hash.clone())
                    .filter(|h| st.templates.contains_key(h))
                    .or_else(|| st.from_hash.clone())
            } else {
                None
            };
            if let Some(h) = keep.filter(|h| *h != target)
                && let Some(t) = st.templates.get(&h)
            {
                hold.insert(name.clone(), t.clone());
            }
        }
    }
    // Templates no cluster runs, and that no rollback needs, go.
    let mut keep = BTreeSet::from([target.clone()]);
    if !done {
        keep.extend(st.from_hash.iter().cloned());
        keep.extend(
            clusters
                .iter()
                .filter_map(|c| c.record.and_then(|r| r.template_hash.clone())),
        );
    }
    st.templates.retain(|h, _| keep.contains(h));
    if done {
        st.wave_started = None;
    }
    Plan {
        status: st,
        hold,
        waves: states,
        events,
        recheck,
    }
}

fn short(hash: &str) -> &str {
    hash.get(..10).unwrap_or(hash)
}

/// The JSON merge patch turning `old` into `new` (members of `old` missing
/// from `new` become `null`, objects recursively).
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = serde_json::Map::new();
            for (k, v) in n {
                match o.get(k) {
                    Some(ov) if ov == v => {}
                    Some(ov) => {
                        out.insert(k.clone(), merge_patch(ov, v));
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use serde_json::json;

    use super::*;

    fn deploy(image: &str, generation: i64) -> Value {
        json!({"metadata": {"name": "web", "generation": generation, "annotations": {
                   ROLLOUT_STRATEGY_ANNOTATION: r#"{"waves": [["a"], ["b"]]}"#}},
               "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    fn copy(generation: i64, observed: i64, updated: i64, timed_out: bool) -> Value {
        let mut c = json!({"metadata": {"generation": generation, "resourceVersion": "10"},
               "spec": {"replicas": 1},
               "status": {"observedGeneration": observed, "replicas": 1, "updatedReplicas": updated,
                          "availableReplicas": updated}});
        if timed_out {
            c["status"]["conditions"] =
                json!([{"type": "Progressing", "status": "False", "reason": TIMED_OUT}]);
        }
        c
    }

    fn record(hash: &str, generation: i64) -> ClusterRecord {
        ClusterRecord {
            state: SyncState::InSync,
            observed_generation: generation,
            resource_version: Some("10".into()),
            template_hash: Some(hash.into()),
            ..ClusterRecord::default()
        }
    }

    fn strategy(on_failure: OnFailure) -> Strategy {
        Strategy {
            waves: vec![vec!["a".into()], vec!["b".into()]],
            min_ready_seconds: 0,
            on_failure,
        }
    }

    #[test]
    fn the_annotation_is_read_and_checked() {
        let s = strategy_of(&deploy("x", 1)).unwrap().unwrap();
        assert_eq!(s.waves, vec![vec!["a".to_string()], vec!["b".to_string()]]);
        assert_eq!(s.on_failure, OnFailure::Pause);
        let bad = |text: &str| {
            strategy_of(&json!({"metadata": {"annotations": {ROLLOUT_STRATEGY_ANNOTATION: text}}}))
        };
        assert!(bad("{not json").is_err());
        assert!(
            bad(r#"{"waves": [["a"], ["a"]]}"#)
                .unwrap_err()
                .contains("more than one wave")
        );
        assert!(bad(r#"{"onFailure": "Explode"}"#).is_err());
        assert_eq!(strategy_of(&json!({})).unwrap(), None);
    }

    #[test]
    fn waves_take_the_star_and_the_unnamed_clusters_last() {
        let s = Strategy {
            waves: vec![vec!["canary".into()], vec!["gone".into()], vec!["*".into()]],
            ..Strategy::default()
        };
        assert_eq!(
            waves_of(&s, &["canary", "east", "west"]),
            vec![
                vec!["canary".to_string()],
                vec!["east".into(), "west".into()]
            ]
        );
        let s = Strategy {
            waves: vec![vec!["east".into()]],
            ..Strategy::default()
        };
        assert_eq!(
            waves_of(&s, &["canary", "east"]),
            vec![vec!["east".to_string()], vec!["canary".into()]]
        );
    }

    #[test]
    fn kubectl_judges_each_kind() {
        let d = Workload::Deployment;
        assert_eq!(judge(d, &copy(2, 2, 1, false)), Health::Complete);
        assert!(matches!(
            judge(d, &copy(2, 1, 1, false)),
            Health::Waiting(_)
        ));
        assert!(matches!(
            judge(d, &copy(2, 2, 0, false)),
            Health::Waiting(_)
        ));
        assert!(matches!(judge(d, &copy(2, 2, 0, true)), Health::Failed(_)));
        let zero = json!({"metadata": {"generation": 3}, "spec": {"replicas": 0}});
        assert_eq!(judge(d, &zero), Health::Complete);
        let sts = json!({"metadata": {"generation": 1}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "readyReplicas": 2,
                       "currentRevision": "r1", "updateRevision": "r2"}});
        assert!(matches!(
            judge(Workload::StatefulSet, &sts),
            Health::Waiting(_)
        ));
        let ds = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1,
            "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3}});
        assert_eq!(judge(Workload::DaemonSet, &ds), Health::Complete);
    }

    fn step(
        fed: &Value,
        s: &Strategy,
        prev: Option<&Plan>,
        views: &[ClusterView<'_>],
        now: Timestamp,
    ) -> Plan {
        plan(
            Workload::Deployment,
            fed,
            s,
            prev.map(|p| &p.status),
            views,
            now,
        )
    }

    /// Both clusters on `r`'s template, rolled out.
    fn settled<'a>(r: &'a ClusterRecord) -> [ClusterView<'a>; 2] {
        [
            view("a", r, copy(1, 1, 1, false)),
            view("b", r, copy(1, 1, 1, false)),
        ]
    }

    fn view<'a>(name: &'a str, record: &'a ClusterRecord, copy: Value) -> ClusterView<'a> {
        ClusterView {
            name,
            selected: true,
            ready: true,
            record: Some(record),
            copy: Some(copy),
        }
    }

    #[test]
    fn the_second_wave_keeps_the_old_template_until_the_first_is_complete() {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        let (old, new) = (deploy("v1", 1), deploy("v2", 2));
        let (h1, h2) = (template_hash(&old), template_hash(&new));
        let s = strategy(OnFailure::Pause);
        // First sight: nothing older to keep.
        let r1 = record(&h1, 1);
        let p0 = step(&old, &s, None, &[], now);
        assert_eq!(p0.status.template_hash, h1);
        // The template changes: a starts, b keeps v1.
        let views = settled(&r1);
        let p1 = step(&new, &s, Some(&p0), &views, now);
        assert_eq!(p1.status.wave, 1);
        assert_eq!(p1.status.from_hash.as_deref(), Some(h1.as_str()));
        assert!(!p1.hold.contains_key("a"));
        assert_eq!(p1.hold["b"], old["spec"]["template"]);
        assert_eq!(p1.waves["b"], (2, WaveState::Waiting));
        assert!(p1.events.iter().any(|e| e.1 == WAVE_STARTED));
        // a applied but not rolled out: still wave 1.
        let r2 = record(&h2, 2);
        let views = [
            view("a", &r2, copy(2, 2, 0, false)),
            view("b", &r1, copy(1, 1, 1, false)),
        ];
        let p2 = step(&new, &s, Some(&p1), &views, now);
        assert_eq!(p2.status.wave, 1);
        assert!(p2.hold.contains_key("b"));
        assert_eq!(p2.waves["a"], (1, WaveState::Progressing));
        // a complete: wave 2 starts, b gets v2.
        let views = [
            view("a", &r2, copy(2, 2, 1, false)),
            view("b", &r1, copy(1, 1, 1, false)),
        ];
        let p3 = step(&new, &s, Some(&p2), &views, now);
        assert_eq!(p3.status.wave, 2);
        assert!(p3.hold.is_empty());
        assert!(p3.events.iter().any(|e| e.1 == WAVE_COMPLETED));
        // b complete: done, only the new template is kept.
        let views = [
            view("a", &r2, copy(2, 2, 1, false)),
            view("b", &r2, copy(2, 2, 1, false)),
        ];
        let p4 = step(&new, &s, Some(&p3), &views, now);
        assert_eq!(p4.status.wave, 3);
        assert_eq!(p4.status.templates.len(), 1);
        assert_eq!(p4.waves["b"], (2, WaveState::Healthy));
    }

    #[test]
    fn a_deadline_in_the_first_wave_halts_and_rollback_sends_the_old_template_back() {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        let (old, new) = (deploy("v1", 1), deploy("v2", 2));
        let (h1, h2) = (template_hash(&old), template_hash(&new));
        let p0 = step(&old, &strategy(OnFailure::Pause), None, &[], now);
        let (r1, r2) = (record(&h1, 1), record(&h2, 2));
        for on_failure in [OnFailure::Pause, OnFailure::Rollback] {
            let s = strategy(on_failure);
            let views = settled(&r1);
            let p1 = step(&new, &s, Some(&p0), &views, now);
            let views = [
                view("a", &r2, copy(2, 2, 0, true)),
                view("b", &r1, copy(1, 1, 1, false)),
            ];
            let p2 = step(&new, &s, Some(&p1), &views, now);
            let halted = p2.status.halted.clone().expect("halted");
            assert!(halted.contains("cluster a"), "{halted}");
            assert!(p2.events.iter().any(|e| e.1 == ROLLOUT_HALTED));
            assert_eq!(p2.hold["b"], old["spec"]["template"], "b never gets v2");
            assert_eq!(p2.waves["a"], (1, WaveState::Failed));
            assert_eq!(p2.hold.contains_key("a"), on_failure == OnFailure::Rollback);
            // Halted stays halted, without a second event.
            let p3 = step(&new, &s, Some(&p2), &views, now);
            assert!(p3.status.halted.is_some() && p3.events.is_empty());
        }
        // Not healthy within the deadline (600 s by default) halts too.
        let s = strategy(OnFailure::Pause);
        let views = settled(&r1);
        let p1 = step(&new, &s, Some(&p0), &views, now);
        let views = [
            view("a", &r2, copy(2, 2, 0, false)),
            view("b", &r1, copy(1, 1, 1, false)),
        ];
        let later = now + jiff::SignedDuration::from_secs(601);
        let p2 = step(&new, &s, Some(&p1), &views, later);
        assert!(
            p2.status
                .halted
                .is_some_and(|h| h.contains("progressDeadlineSeconds"))
        );
    }

    #[test]
    fn pause_holds_the_waves_and_stops_the_deadline_clock() {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        let at = |s: i64| now + jiff::SignedDuration::from_secs(s);
        let (old, new) = (deploy("v1", 1), deploy("v2", 2));
        let (h1, h2) = (template_hash(&old), template_hash(&new));
        let s = strategy(OnFailure::Pause);
        let p0 = step(&old, &s, None, &[], now);
        let (r1, r2) = (record(&h1, 1), record(&h2, 2));
        let views = settled(&r1);
        let p1 = step(&new, &s, Some(&p0), &views, now);
        // Paused (the template is unchanged, so the generation is the one
        // the copies observed): a complete, yet b keeps v1, long past the
        // deadline, with no halt.
        let mut paused = new.clone();
        paused["spec"]["paused"] = json!(true);
        let views = [
            view("a", &r2, copy(2, 2, 1, false)),
            view("b", &r1, copy(1, 1, 1, false)),
        ];
        let p2 = step(&paused, &s, Some(&p1), &views, at(10));
        let p3 = step(&paused, &s, Some(&p2), &views, at(5000));
        for p in [&p2, &p3] {
            assert_eq!(p.status.wave, 1);
            assert_eq!(p.hold["b"], old["spec"]["template"], "b waits while paused");
            assert!(p.status.halted.is_none() && p.events.is_empty());
        }
        // Resumed: the deadline counts from now, and a complete moves on.
        let waiting = [
            view("a", &r2, copy(2, 2, 0, false)),
            view("b", &r1, copy(1, 1, 1, false)),
        ];
        let p4 = step(&new, &s, Some(&p3), &waiting, at(5001));
        assert!(p4.status.halted.is_none(), "the pause stopped the clock");
        assert_eq!(p4.status.wave, 1);
        let p5 = step(&new, &s, Some(&p4), &waiting, at(5001 + 601));
        assert!(p5.status.halted.is_some(), "the clock runs again");
        let p5 = step(&new, &s, Some(&p4), &views, at(5002));
        assert_eq!(p5.status.wave, 2);
        assert!(p5.hold.is_empty(), "b gets v2 on resume");
    }

    #[test]
    fn a_cluster_that_is_not_ready_does_not_hold_its_wave() {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        let (old, new) = (deploy("v1", 1), deploy("v2", 2));
        let h1 = template_hash(&old);
        let s = strategy(OnFailure::Pause);
        let p0 = step(&old, &s, None, &[], now);
        let r1 = record(&h1, 1);
        let mut a = view("a", &r1, copy(1, 1, 1, false));
        a.ready = false;
        let views = [a, view("b", &r1, copy(1, 1, 1, false))];
        let p1 = step(&new, &s, Some(&p0), &views, now);
        let p2 = step(&new, &s, Some(&p1), &views, now);
        assert_eq!(p2.status.wave, 2, "a lost: wave 2 starts");
        assert!(p2.hold.is_empty());
    }

    #[test]
    fn merge_patch_nulls_what_went_away() {
        let old = json!({"a": 1, "t": {"x": 1, "y": 2}, "h": "why"});
        let new = json!({"a": 2, "t": {"y": 2, "z": 3}});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"a": 2, "t": {"x": null, "z": 3}, "h": null})
        );
    }
}
