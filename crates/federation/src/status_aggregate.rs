//! Status aggregation (SPEC §3.7): the status of a federated object computed
//! from the status of its member copies, so that `kubectl get deploy` shows
//! `10/10` and `kubectl rollout status` on the federation waits for, and
//! reports, the rollout in every cluster.
//!
//! - Deployments, ReplicaSets, StatefulSets, DaemonSets: the counters are
//!   summed over the members (as Federation v1's `UpdateFederatedStatus`
//!   did for replicas/updated/ready/available, extended to every counter of
//!   the kind); zeros are left out, as kube's `omitempty` does, except the
//!   fields kube's types require.
//! - `observedGeneration` is the federated object's `metadata.generation`
//!   once every member copy carries that generation (the sync record says
//!   so) and its member has observed the copy (its
//!   `status.observedGeneration` ≥ the member's own `metadata.generation`
//!   of the copy we applied: each member counts generations on its own);
//!   until then the previous value is kept, so kubectl's "Waiting for
//!   deployment spec update to be observed" holds while any member lags.
//! - Deployment conditions: `Available` is the AND of the members' (a
//!   member without conditions counts by its numbers), `Progressing` is
//!   `False/ProgressDeadlineExceeded` when any member's is (kubectl then
//!   fails the rollout, naming the cluster), `True/NewReplicaSetAvailable`
//!   when every member is done, else `True/ReplicaSetUpdated` naming the
//!   clusters still rolling out. Times are carried over from the previous
//!   status while a condition does not change.
//! - StatefulSets: the revisions are those of a member still rolling out
//!   (so kubectl's "waiting for statefulset rolling update to complete"
//!   holds), else the common revision.
//! - Jobs: counters summed, `startTime` the earliest, `Complete` (and
//!   `completionTime`, the latest) once every member completed, `Failed`
//!   as soon as one failed (v1 took the latest such condition of any
//!   member, which reported a Job complete when one cluster was).
//! - Services and Ingresses: `status.loadBalancer.ingress` is the union
//!   over members, in cluster order, without duplicates; the per-cluster
//!   addresses are also rendered in Federation v1's
//!   `federation.kubernetes.io/service-ingresses` format by
//!   [`service_ingresses_annotation`].
//!
//! Only members that are Ready and hold a copy are passed in: a member
//! that stopped answering has no status we can trust.
//!
//! Pure functions, no I/O.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// The per-cluster load-balancer addresses annotation (Federation v1).
pub const SERVICE_INGRESSES_ANNOTATION: &str = "federation.kubernetes.io/service-ingresses";

/// kube's deployment controller reason for a rollout past its deadline.
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";

/// One member copy as the status controller sees it.
#[derive(Clone, Copy, Debug)]
pub struct MemberView<'a> {
    /// The member cluster's name.
    pub cluster: &'a str,
    /// The member's object, with its status.
    pub object: &'a Value,
    /// The member object's own `metadata.generation` right after the
    /// federation last applied it (`None`: use the object's).
    pub applied_generation: Option<i64>,
    /// Whether the copy carries the federated object's current generation
    /// (the sync record says InSync for it).
    pub in_sync: bool,
    /// Whether the cluster still runs an older pod template while a
    /// rollout goes wave by wave ([`crate::rollout`]): its replicas count
    /// 0 toward the updated ones and its rollout is not done.
    pub held: bool,
}

impl MemberView<'_> {
    fn status_i64(&self, field: &str) -> i64 {
        self.object
            .get("status")
            .and_then(|s| s.get(field))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    }

    fn spec_replicas(&self) -> i64 {
        self.object
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    }

    /// Whether the member has observed the copy we applied.
    pub fn observed(&self) -> bool {
        let generation = self.applied_generation.unwrap_or_else(|| {
            self.object
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        });
        self.in_sync && self.status_i64("observedGeneration") >= generation
    }

    fn condition(&self, kind: &str) -> Option<&Value> {
        conditions(self.object.get("status"))
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    }
}

fn conditions(status: Option<&Value>) -> &[Value] {
    status
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn cond_str<'a>(c: &'a Value, field: &str) -> &'a str {
    c.get(field).and_then(Value::as_str).unwrap_or("")
}

/// How the members' statuses of a kind sum (the kind's
/// [`crate::policy::KindPolicy::status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusSum {
    /// apps/v1 Deployment: counters, observedGeneration, conditions.
    Deployment,
    /// apps/v1 ReplicaSet: counters, observedGeneration, ReplicaFailure.
    ReplicaSet,
    /// apps/v1 StatefulSet: counters, observedGeneration, revisions.
    StatefulSet,
    /// apps/v1 DaemonSet: counters, observedGeneration.
    DaemonSet,
    /// batch/v1 Job: counters, start and completion, Complete / Failed.
    Job,
    /// Services and Ingresses: the union of `status.loadBalancer.ingress`.
    LoadBalancer,
}

/// The counters summed per kind, and those kube's types require (always
/// written, even when 0).
fn counters(sum: StatusSum) -> (&'static [&'static str], &'static [&'static str]) {
    match sum {
        StatusSum::Deployment => (
            &[
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
                "unavailableReplicas",
                "terminatingReplicas",
            ],
            &[],
        ),
        StatusSum::ReplicaSet => (
            &[
                "replicas",
                "fullyLabeledReplicas",
                "readyReplicas",
                "availableReplicas",
                "terminatingReplicas",
            ],
            &["replicas"],
        ),
        StatusSum::StatefulSet => (
            &[
                "replicas",
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
            ],
            &["replicas"],
        ),
        StatusSum::DaemonSet => (
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
            ],
            &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
            ],
        ),
        StatusSum::Job => (
            &["active", "succeeded", "failed", "ready", "terminating"],
            &[],
        ),
        StatusSum::LoadBalancer => (&[], &[]),
    }
}

/// The status of the federated object `fed` from its members, summed as
/// `sum` says. `now` (RFC 3339) is the time written on conditions that
/// change.
pub fn aggregate(sum: StatusSum, fed: &Value, members: &[MemberView], now: &str) -> Value {
    aggregate_rollout(sum, fed, members, now, None)
}

/// [`aggregate`] while a rollout goes wave by wave: members
/// [`MemberView::held`] on an older template count 0 updated replicas, and
/// `halted` (why the rollout halted, naming the cluster) makes a
/// Deployment's `Progressing` condition `False/ProgressDeadlineExceeded`,
/// so `kubectl rollout status` fails with kube's words.
pub fn aggregate_rollout(
    sum: StatusSum,
    fed: &Value,
    members: &[MemberView],
    now: &str,
    halted: Option<&str>,
) -> Value {
    if sum == StatusSum::LoadBalancer {
        return json!({"loadBalancer": load_balancer(members)});
    }
    let (summed, required) = counters(sum);
    let previous = fed.get("status");
    let mut status = Map::new();
    for field in summed {
        let updated = matches!(*field, "updatedReplicas" | "updatedNumberScheduled");
        let sum = members
            .iter()
            .filter(|m| !(updated && m.held))
            .fold(0i64, |s, m| s.saturating_add(m.status_i64(field)));
        if sum != 0 || required.contains(field) {
            status.insert(field.to_string(), json!(sum));
        }
    }
    if sum != StatusSum::Job {
        let generation = fed
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let observed = if members.iter().all(MemberView::observed) {
            Some(generation)
        } else {
            previous
                .and_then(|s| s.get("observedGeneration"))
                .and_then(Value::as_i64)
                .filter(|g| *g != 0)
        };
        if let Some(g) = observed {
            status.insert("observedGeneration".into(), json!(g));
        }
        let collisions = members.iter().map(|m| m.status_i64("collisionCount")).max();
        if let Some(c) = collisions.filter(|c| *c > 0) {
            status.insert("collisionCount".into(), json!(c));
        }
    }
    let conds = match sum {
        StatusSum::Deployment => deployment_conditions(members, now, halted),
        StatusSum::ReplicaSet => replica_failure_conditions(members, now),
        StatusSum::StatefulSet => {
            statefulset_revisions(members, &mut status);
            Vec::new()
        }
        StatusSum::Job => job_fields(members, &mut status, now),
        StatusSum::DaemonSet | StatusSum::LoadBalancer => Vec::new(),
    };
    if !conds.is_empty() {
        let conds = carry_times(conds, conditions(previous));
        status.insert("conditions".into(), Value::Array(conds));
    }
    Value::Object(status)
}

/// A member's Deployment rollout is done (kubectl's criteria, per member).
fn deployment_done(m: &MemberView) -> bool {
    let updated = m.status_i64("updatedReplicas");
    !m.held
        && m.observed()
        && updated >= m.spec_replicas()
        && m.status_i64("replicas") <= updated
        && m.status_i64("availableReplicas") >= updated
}

fn condition(kind: &str, status: bool, reason: &str, message: String, now: &str) -> Value {
    json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

fn deployment_conditions(members: &[MemberView], now: &str, halted: Option<&str>) -> Vec<Value> {
    let unavailable: Vec<&str> = members
        .iter()
        .filter(|m| match m.condition("Available") {
            Some(c) => cond_str(c, "status") != "True",
            None => m.status_i64("availableReplicas") < m.spec_replicas(),
        })
        .map(|m| m.cluster)
        .collect();
    let available = if unavailable.is_empty() {
        condition(
            "Available",
            true,
            "MinimumReplicasAvailable",
            "Deployment has minimum availability in every cluster.".into(),
            now,
        )
    } else {
        condition(
            "Available",
            false,
            "MinimumReplicasUnavailable",
            format!(
                "Deployment does not have minimum availability in {}.",
                unavailable.join(", ")
            ),
            now,
        )
    };
    let timed_out: Vec<&str> = members
        .iter()
        .filter(|m| {
            m.condition("Progressing")
                .is_some_and(|c| cond_str(c, "reason") == TIMED_OUT_REASON)
        })
        .map(|m| m.cluster)
        .collect();
    let rolling: Vec<&str> = members
        .iter()
        .filter(|m| !deployment_done(m))
        .map(|m| m.cluster)
        .collect();
    let progressing = if let Some(why) = halted {
        condition(
            "Progressing",
            false,
            TIMED_OUT_REASON,
            format!("Deployment has exceeded its progress deadline: {why}"),
            now,
        )
    } else if !timed_out.is_empty() {
        condition(
            "Progressing",
            false,
            TIMED_OUT_REASON,
            format!(
                "Deployment has exceeded its progress deadline in {}.",
                timed_out.join(", ")
            ),
            now,
        )
    } else if rolling.is_empty() {
        condition(
            "Progressing",
            true,
            "NewReplicaSetAvailable",
            "Deployment has successfully progressed in every cluster.".into(),
            now,
        )
    } else {
        condition(
            "Progressing",
            true,
            "ReplicaSetUpdated",
            format!("Deployment is progressing in {}.", rolling.join(", ")),
            now,
        )
    };
    vec![available, progressing]
}

fn replica_failure_conditions(members: &[MemberView], now: &str) -> Vec<Value> {
    let failing: Vec<String> = members
        .iter()
        .filter_map(|m| {
            let c = m.condition("ReplicaFailure")?;
            (cond_str(c, "status") == "True")
                .then(|| format!("{}: {}", m.cluster, cond_str(c, "message")))
        })
        .collect();
    if failing.is_empty() {
        return Vec::new();
    }
    let mut c = condition(
        "ReplicaFailure",
        true,
        "FailedCreate",
        failing.join("; "),
        now,
    );
    // ReplicaSet conditions have no lastUpdateTime.
    if let Some(o) = c.as_object_mut() {
        o.remove("lastUpdateTime");
    }
    vec![c]
}

fn statefulset_revisions(members: &[MemberView], status: &mut Map<String, Value>) {
    let rev = |m: &MemberView, f: &str| {
        m.object
            .get("status")
            .and_then(|s| s.get(f))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let lagging = members
        .iter()
        .find(|m| rev(m, "currentRevision") != rev(m, "updateRevision"));
    let pick = lagging.or(members.first());
    if let Some(m) = pick {
        for f in ["currentRevision", "updateRevision"] {
            if let Some(r) = rev(m, f) {
                status.insert(f.into(), json!(r));
            }
        }
    }
}

fn job_fields(members: &[MemberView], status: &mut Map<String, Value>, now: &str) -> Vec<Value> {
    let time = |m: &MemberView, f: &str| {
        m.object
            .get("status")
            .and_then(|s| s.get(f))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    // RFC 3339 UTC timestamps as kube writes them compare as strings.
    if let Some(start) = members.iter().filter_map(|m| time(m, "startTime")).min() {
        status.insert("startTime".into(), json!(start));
    }
    let is_true = |m: &MemberView, t: &str| {
        m.condition(t)
            .is_some_and(|c| cond_str(c, "status") == "True")
    };
    let mut conds = Vec::new();
    let failed: Vec<&MemberView> = members.iter().filter(|m| is_true(m, "Failed")).collect();
    if let Some(first) = failed.first() {
        let c = first.condition("Failed").cloned().unwrap_or(Value::Null);
        let mut out = condition(
            "Failed",
            true,
            cond_str(&c, "reason"),
            failed
                .iter()
                .map(|m| {
                    let msg = m.condition("Failed").map(|c| cond_str(c, "message"));
                    format!("{}: {}", m.cluster, msg.unwrap_or(""))
                })
                .collect::<Vec<_>>()
                .join("; "),
            now,
        );
        if let Some(o) = out.as_object_mut() {
            o.insert("lastProbeTime".into(), json!(now));
            o.remove("lastUpdateTime");
        }
        conds.push(out);
    } else if !members.is_empty() && members.iter().all(|m| is_true(m, "Complete")) {
        if let Some(done) = members
            .iter()
            .filter_map(|m| time(m, "completionTime"))
            .max()
        {
            status.insert("completionTime".into(), json!(done));
        }
        let mut out = condition(
            "Complete",
            true,
            "",
            "Job completed in every cluster.".into(),
            now,
        );
        if let Some(o) = out.as_object_mut() {
            o.insert("lastProbeTime".into(), json!(now));
            o.remove("lastUpdateTime");
            o.remove("reason");
        }
        conds.push(out);
    }
    conds
}

/// Keep a previous condition's times while its status, reason and message
/// are unchanged (a status is then not rewritten for nothing).
fn carry_times(mut new: Vec<Value>, old: &[Value]) -> Vec<Value> {
    for c in &mut new {
        let Some(prev) = old
            .iter()
            .find(|o| cond_str(o, "type") == cond_str(c, "type"))
        else {
            continue;
        };
        let same_status = cond_str(prev, "status") == cond_str(c, "status");
        let same_all = same_status
            && cond_str(prev, "reason") == cond_str(c, "reason")
            && cond_str(prev, "message") == cond_str(c, "message");
        let Some(o) = c.as_object_mut() else { continue };
        for (field, keep) in [
            ("lastTransitionTime", same_status),
            ("lastUpdateTime", same_all),
            ("lastProbeTime", same_all),
        ] {
            if keep
                && o.contains_key(field)
                && let Some(t) = prev.get(field)
            {
                o.insert(field.into(), t.clone());
            }
        }
    }
    new
}

fn member_ingresses(m: &MemberView) -> Vec<Value> {
    m.object
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn load_balancer(members: &[MemberView]) -> Value {
    let mut sorted: Vec<&MemberView> = members.iter().collect();
    sorted.sort_by_key(|m| m.cluster);
    let mut seen = BTreeSet::new();
    let mut ingress = Vec::new();
    for m in sorted {
        for i in member_ingresses(m) {
            if seen.insert(i.to_string()) {
                ingress.push(i);
            }
        }
    }
    if ingress.is_empty() {
        json!({})
    } else {
        json!({ "ingress": ingress })
    }
}

/// Federation v1's `federation.kubernetes.io/service-ingresses` value:
/// `{"items":[{"cluster":"c1","items":[{"ip":"…"}]}]}`, clusters sorted by
/// name (v1's sort), clusters without an address left out; `None` when no
/// cluster has one (v1's `items` is `omitempty`).
pub fn service_ingresses_annotation(members: &[MemberView]) -> Option<String> {
    let mut sorted: Vec<&MemberView> = members.iter().collect();
    sorted.sort_by_key(|m| m.cluster);
    let items: Vec<Value> = sorted
        .into_iter()
        .filter_map(|m| {
            let i = member_ingresses(m);
            (!i.is_empty()).then(|| json!({"cluster": m.cluster, "items": i}))
        })
        .collect();
    (!items.is_empty()).then(|| json!({ "items": items }).to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)] // a failing test may panic
mod tests {
    use super::*;

    const NOW: &str = "2024-05-01T10:00:00Z";
    const LATER: &str = "2024-05-01T10:05:00Z";

    fn deploy(spec: i64, g: i64, status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": g},
               "spec": {"replicas": spec}, "status": status})
    }

    fn view<'a>(cluster: &'a str, object: &'a Value) -> MemberView<'a> {
        MemberView {
            cluster,
            object,
            applied_generation: None,
            in_sync: true,
            held: false,
        }
    }

    fn done(spec: i64, g: i64) -> Value {
        deploy(
            spec,
            g,
            json!({"observedGeneration": g, "replicas": spec, "updatedReplicas": spec,
                   "readyReplicas": spec, "availableReplicas": spec,
                   "conditions": [{"type": "Available", "status": "True"},
                                  {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}),
        )
    }

    /// kubectl's DeploymentStatusViewer, as a test oracle.
    fn kubectl_rollout_done(fed: &Value) -> Result<bool, String> {
        let g = fed["metadata"]["generation"].as_i64().unwrap_or(0);
        let st = &fed["status"];
        let n = |f: &str| st.get(f).and_then(Value::as_i64).unwrap_or(0);
        if g > n("observedGeneration") {
            return Ok(false);
        }
        if conditions(Some(st)).iter().any(|c| {
            cond_str(c, "type") == "Progressing" && cond_str(c, "reason") == TIMED_OUT_REASON
        }) {
            return Err("exceeded its progress deadline".into());
        }
        let spec = fed["spec"]["replicas"].as_i64().unwrap_or(1);
        Ok(!(n("updatedReplicas") < spec
            || n("replicas") > n("updatedReplicas")
            || n("availableReplicas") < n("updatedReplicas")))
    }

    fn with_status(fed: &Value, status: Value) -> Value {
        let mut f = fed.clone();
        f["status"] = status;
        f
    }

    #[test]
    fn deployment_counters_sum_and_rollout_completes_when_all_are_done() {
        let fed = deploy(10, 3, json!({}));
        let (a, b) = (done(5, 7), done(5, 2));
        let s = deployment(&fed, &[view("a", &a), view("b", &b)]);
        assert_eq!(s["replicas"], 10);
        assert_eq!(s["readyReplicas"], 10);
        assert_eq!(s["availableReplicas"], 10);
        assert_eq!(s["updatedReplicas"], 10);
        assert_eq!(s["observedGeneration"], 3);
        assert!(s.get("unavailableReplicas").is_none(), "zeros are omitted");
        assert_eq!(s["conditions"][0]["type"], "Available");
        assert_eq!(s["conditions"][0]["status"], "True");
        assert_eq!(s["conditions"][1]["reason"], "NewReplicaSetAvailable");
        assert_eq!(kubectl_rollout_done(&with_status(&fed, s)), Ok(true));
    }

    #[test]
    fn rollout_waits_while_one_member_lags() {
        let fed = deploy(10, 3, json!({}));
        let a = done(5, 2);
        // b has observed its copy but only 2 of 5 are updated.
        let b = deploy(
            5,
            4,
            json!({"observedGeneration": 4, "replicas": 5, "updatedReplicas": 2,
                   "readyReplicas": 5, "availableReplicas": 5}),
        );
        let s = deployment(&fed, &[view("a", &a), view("b", &b)]);
        assert_eq!(s["updatedReplicas"], 7);
        assert_eq!(s["conditions"][1]["reason"], "ReplicaSetUpdated");
        assert!(
            s["conditions"][1]["message"]
                .as_str()
                .unwrap()
                .contains('b')
        );
        assert_eq!(kubectl_rollout_done(&with_status(&fed, s)), Ok(false));
    }

    #[test]
    fn observed_generation_waits_for_every_member_to_observe_its_copy() {
        let fed = deploy(10, 3, json!({"observedGeneration": 2}));
        let a = done(5, 7);
        // b's controller has not yet observed generation 5 of its copy.
        let b = deploy(
            5,
            5,
            json!({"observedGeneration": 4, "replicas": 5, "updatedReplicas": 5, "availableReplicas": 5}),
        );
        let s = deployment(&fed, &[view("a", &a), view("b", &b)]);
        assert_eq!(s["observedGeneration"], 2, "previous value kept");
        assert_eq!(kubectl_rollout_done(&with_status(&fed, s)), Ok(false));

        // The cached b still shows generation 4 observed, but we applied a
        // copy that became generation 5 there: not observed yet.
        let b_stale = deploy(5, 4, json!({"observedGeneration": 4}));
        let mut vb = view("b", &b_stale);
        vb.applied_generation = Some(5);
        assert!(!vb.observed());
        // A copy not yet carrying our generation is not observed either.
        let mut va = view("a", &a);
        va.in_sync = false;
        assert!(!va.observed());
        let s = deployment(&fed, &[va, view("b", &done(5, 5))]);
        assert_eq!(s["observedGeneration"], 2);
    }

    #[test]
    fn a_member_past_its_deadline_fails_the_federated_rollout() {
        let fed = deploy(10, 1, json!({}));
        let a = done(5, 1);
        let b = deploy(
            5,
            1,
            json!({"observedGeneration": 1, "replicas": 5, "updatedReplicas": 1,
                   "conditions": [{"type": "Progressing", "status": "False", "reason": TIMED_OUT_REASON}]}),
        );
        let s = deployment(&fed, &[view("a", &a), view("b", &b)]);
        assert_eq!(s["conditions"][1]["status"], "False");
        assert_eq!(
            s["conditions"][0]["status"], "False",
            "b has no Available=True"
        );
        assert!(kubectl_rollout_done(&with_status(&fed, s)).is_err());
    }

    #[test]
    fn condition_times_are_kept_while_nothing_changes() {
        let fed = deploy(10, 1, json!({}));
        let (a, b) = (done(5, 1), done(5, 1));
        let members = [view("a", &a), view("b", &b)];
        let s1 = deployment(&fed, &members);
        let s2 = aggregate(
            StatusSum::Deployment,
            &with_status(&fed, s1.clone()),
            &members,
            LATER,
        );
        assert_eq!(s1, s2, "an unchanged status is byte-identical");
        // A change of reason keeps lastTransitionTime (same status) but not lastUpdateTime.
        let lag = deploy(
            5,
            1,
            json!({"observedGeneration": 1, "replicas": 5, "updatedReplicas": 3,
            "availableReplicas": 5}),
        );
        let s3 = aggregate(
            StatusSum::Deployment,
            &with_status(&fed, s2),
            &[view("a", &a), view("b", &lag)],
            LATER,
        );
        assert_eq!(s3["conditions"][1]["lastTransitionTime"], NOW);
        assert_eq!(s3["conditions"][1]["lastUpdateTime"], LATER);
    }

    #[test]
    fn no_members_reports_zero_and_the_generation() {
        let fed = deploy(3, 2, json!({}));
        let s = deployment(&fed, &[]);
        assert_eq!(s["observedGeneration"], 2);
        assert!(s.get("replicas").is_none());
        assert_eq!(kubectl_rollout_done(&with_status(&fed, s)), Ok(false));
    }

    #[test]
    fn replicaset_and_statefulset_and_daemonset() {
        let rs_fed = json!({"metadata": {"generation": 1}, "spec": {"replicas": 4}});
        let rs = json!({"metadata": {"generation": 1}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "replicas": 2, "fullyLabeledReplicas": 2,
                       "readyReplicas": 1, "availableReplicas": 1,
                       "conditions": [{"type": "ReplicaFailure", "status": "True", "message": "quota"}]}});
        let rs0 = json!({"metadata": {"generation": 1}, "spec": {"replicas": 0}, "status": {"observedGeneration": 1}});
        let s = aggregate(
            StatusSum::ReplicaSet,
            &rs_fed,
            &[view("a", &rs), view("b", &rs)],
            NOW,
        );
        assert_eq!(s["replicas"], 4);
        assert_eq!(s["fullyLabeledReplicas"], 4);
        assert_eq!(s["availableReplicas"], 2);
        assert_eq!(s["conditions"][0]["type"], "ReplicaFailure");
        assert_eq!(s["conditions"][0]["message"], "a: quota; b: quota");
        let s = aggregate(StatusSum::ReplicaSet, &rs_fed, &[view("a", &rs0)], NOW);
        assert_eq!(s["replicas"], 0, "required field kept at 0");
        assert!(s.get("conditions").is_none());

        let sts = |cur: &str, upd: &str| {
            json!({"metadata": {"generation": 1}, "spec": {"replicas": 2},
              "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2,
                         "updatedReplicas": 2, "availableReplicas": 2,
                         "currentRevision": cur, "updateRevision": upd, "collisionCount": 1}})
        };
        let (x, y) = (sts("web-1", "web-1"), sts("web-1", "web-2"));
        let s = aggregate(
            StatusSum::StatefulSet,
            &rs_fed,
            &[view("a", &x), view("b", &y)],
            NOW,
        );
        assert_eq!(s["replicas"], 4);
        assert_eq!(s["currentRevision"], "web-1");
        assert_eq!(s["updateRevision"], "web-2", "a member still rolling shows");
        assert_eq!(s["collisionCount"], 1);
        let s = aggregate(
            StatusSum::StatefulSet,
            &rs_fed,
            &[view("a", &x), view("b", &x)],
            NOW,
        );
        assert_eq!(s["updateRevision"], "web-1");

        let ds = json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 2,
            "currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberReady": 2,
            "updatedNumberScheduled": 3, "numberAvailable": 2, "numberUnavailable": 1}});
        let s = aggregate(
            StatusSum::DaemonSet,
            &rs_fed,
            &[view("a", &ds), view("b", &ds)],
            NOW,
        );
        assert_eq!(s["desiredNumberScheduled"], 6);
        assert_eq!(s["numberMisscheduled"], 0);
        assert_eq!(s["numberUnavailable"], 2);
        assert_eq!(
            s["observedGeneration"], 1,
            "our generation once all observed"
        );
    }

    #[test]
    fn jobs_complete_only_when_every_member_completed() {
        let fed = json!({"metadata": {"generation": 1}});
        let running = json!({"status": {"active": 2, "startTime": "2024-05-01T09:00:01Z"}});
        let complete = |t: &str| {
            json!({"status": {"succeeded": 3, "startTime": "2024-05-01T09:00:00Z", "completionTime": t,
                "conditions": [{"type": "Complete", "status": "True"}]}})
        };
        let (c1, c2) = (
            complete("2024-05-01T09:01:00Z"),
            complete("2024-05-01T09:02:00Z"),
        );
        let s = aggregate(
            StatusSum::Job,
            &fed,
            &[view("a", &c1), view("b", &running)],
            NOW,
        );
        assert_eq!(s["active"], 2);
        assert_eq!(s["succeeded"], 3);
        assert_eq!(s["startTime"], "2024-05-01T09:00:00Z");
        assert!(s.get("conditions").is_none());
        assert!(s.get("completionTime").is_none());
        assert!(s.get("observedGeneration").is_none(), "Jobs have none");
        let s = aggregate(StatusSum::Job, &fed, &[view("a", &c1), view("b", &c2)], NOW);
        assert_eq!(s["conditions"][0]["type"], "Complete");
        assert_eq!(s["completionTime"], "2024-05-01T09:02:00Z");
        let failed = json!({"status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded", "message": "too many"}]}});
        let s = aggregate(
            StatusSum::Job,
            &fed,
            &[view("a", &c1), view("b", &failed)],
            NOW,
        );
        assert_eq!(s["conditions"][0]["type"], "Failed");
        assert_eq!(s["conditions"][0]["reason"], "BackoffLimitExceeded");
        assert_eq!(s["conditions"][0]["message"], "b: too many");
        assert_eq!(s["failed"], 1);
    }

    #[test]
    fn services_union_ingress_and_render_the_v1_annotation() {
        let svc = |ips: &[&str]| {
            let ingress: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
            json!({"status": {"loadBalancer": {"ingress": ingress}}})
        };
        let (b, a, c, none) = (
            svc(&["10.0.0.2"]),
            svc(&["10.0.0.1", "10.0.0.2"]),
            json!({"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}),
            json!({"status": {"loadBalancer": {}}}),
        );
        let members = [
            view("b", &b),
            view("a", &a),
            view("c", &c),
            view("d", &none),
        ];
        let s = aggregate(StatusSum::LoadBalancer, &json!({}), &members, NOW);
        assert_eq!(
            s,
            json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}]}})
        );
        assert_eq!(
            service_ingresses_annotation(&members).unwrap(),
            r#"{"items":[{"cluster":"a","items":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]},{"cluster":"b","items":[{"ip":"10.0.0.2"}]},{"cluster":"c","items":[{"hostname":"lb.example.com"}]}]}"#
        );
        assert_eq!(service_ingresses_annotation(&[view("d", &none)]), None);
        assert_eq!(
            aggregate(
                StatusSum::LoadBalancer,
                &json!({}),
                &[view("d", &none)],
                NOW
            ),
            json!({"loadBalancer": {}})
        );
    }

    #[test]
    fn the_kinds_policy_decides_what_is_summed() {
        use crate::policy::of;
        assert_eq!(of("", "ConfigMap").status, None);
        assert_eq!(of("", "Service").status, Some(StatusSum::LoadBalancer));
        assert_eq!(
            of("networking.k8s.io", "Ingress").status,
            Some(StatusSum::LoadBalancer)
        );
        assert_eq!(of("batch", "Job").status, Some(StatusSum::Job));
        for k in ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"] {
            assert!(of("apps", k).status.is_some(), "{k}");
            // A custom resource of the same kind name is not summed.
            assert_eq!(of("example.com", k).status, None, "{k}");
        }
        assert_eq!(of("example.com", "Service").status, None);
    }

    #[test]
    fn a_cluster_held_on_the_old_template_counts_no_updated_replicas() {
        let fed = deploy(10, 3, json!({}));
        let (a, b) = (done(5, 3), done(5, 3));
        let mut held = view("b", &b);
        held.held = true;
        let s = aggregate_rollout(
            StatusSum::Deployment,
            &fed,
            &[view("a", &a), held],
            NOW,
            None,
        );
        assert_eq!(s["updatedReplicas"], 5);
        assert_eq!(s["replicas"], 10);
        assert_eq!(kubectl_rollout_done(&with_status(&fed, s)), Ok(false));
        let s = aggregate_rollout(
            StatusSum::Deployment,
            &fed,
            &[view("a", &a), held],
            NOW,
            Some("rollout halted in wave 1/2 (a)"),
        );
        let progressing = &s["conditions"][1];
        assert_eq!(progressing["reason"], TIMED_OUT_REASON);
        assert!(kubectl_rollout_done(&with_status(&fed, s)).is_err());
    }

    /// [`aggregate`] of a Deployment at [`NOW`].
    fn deployment(fed: &Value, members: &[MemberView]) -> Value {
        aggregate(StatusSum::Deployment, fed, members, NOW)
    }
}
