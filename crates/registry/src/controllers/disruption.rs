//! kube-controller-manager's **disruption** controller
//! (`pkg/controller/disruption`) over the federation's own Pods, in
//! standalone mode only ([`super::standalone::standalone`]: no Cluster
//! joined, the federation is a cluster of its own). A PodDisruptionBudget's
//! status is computed as kube's `trySync` does: the Pods its selector
//! matches, the expected count (`minAvailable` as a number: the matching
//! Pods; a percentage or `maxUnavailable`: the scale of the Pods'
//! controllers, a ReplicaSet's Deployment first), `desiredHealthy`,
//! `currentHealthy` (Ready Pods not being deleted nor disrupted),
//! `disruptionsAllowed`, the `disruptedPods` still pending, the
//! `DisruptionAllowed` condition (`SufficientPods`, `InsufficientPods`, or
//! `SyncFailed` with the error) and `observedGeneration`.
//!
//! With members joined, a PDB propagates and each member's disruption
//! controller counts its own Pods; the federation does not sum those
//! statuses, and this controller leaves the last status as it was.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::labels::Selector;
use ubernetes_storage::EventType;

use super::endpoints::{FIELD_MANAGER, Key, key_of, labels, store};
use super::replicaset::pod_ready;
use super::standalone::standalone;
use super::{Queue, follow, follow_listed, spawn_until};
use crate::registry::Registry;
use crate::store::{ReadAt, WriteOptions, now_rfc3339};

/// The condition the controller keeps on every PDB.
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
/// How long a Pod stays in `disruptedPods` (kube's `DeletionTimeout`).
const DELETION_TIMEOUT: Duration = Duration::from_secs(2 * 60);

/// The disruption controller (see the module docs).
pub struct DisruptionController {
    registry: Arc<Registry>,
    queue: Arc<Queue<Key>>,
    /// namespace → PDB names (a Pod's change queues them).
    budgets: Mutex<HashMap<String, HashSet<String>>>,
}

impl DisruptionController {
    /// Start following PDBs, Pods and Clusters until `stop`; `None` when
    /// the registry serves no PDBs or Pods.
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) -> Option<Arc<Self>> {
        let pdbs = registry.get("policy", "v1", "poddisruptionbudgets")?;
        let pods = registry.get("", "v1", "pods")?;
        let c = Arc::new(Self {
            registry: registry.clone(),
            queue: Queue::new(),
            budgets: Mutex::new(HashMap::new()),
        });
        let observer = c.clone();
        follow(stop.clone(), pdbs, move |_, kind, pdb| {
            let Some((ns, name)) = key_of(&pdb) else {
                return;
            };
            {
                let mut budgets = observer.budgets.lock();
                let set = budgets.entry(ns.clone()).or_default();
                if kind == EventType::Deleted {
                    set.remove(&name);
                } else {
                    set.insert(name.clone());
                }
            }
            if kind != EventType::Deleted {
                observer.queue.add((ns, name));
            }
        });
        let observer = c.clone();
        follow(stop.clone(), pods, move |_, _, pod| {
            if let Some((ns, _)) = key_of(&pod) {
                observer.queue_namespace(Some(&ns));
            }
        });
        // Standalone mode starts when the last Cluster goes: count again.
        if let Some(clusters) =
            registry.get(ubernetes_api::GROUP, ubernetes_api::VERSION, "clusters")
        {
            let on_event = c.clone();
            let on_list = c.clone();
            follow_listed(
                stop.clone(),
                clusters,
                move |_, kind, _| {
                    if kind == EventType::Deleted {
                        on_event.queue_namespace(None);
                    }
                },
                move |_| on_list.queue_namespace(None),
            );
        }
        let worker = c.clone();
        spawn_until(stop, async move {
            loop {
                let key = worker.queue.next().await;
                if !standalone(&worker.registry) {
                    continue;
                }
                match worker.sync(&key).await {
                    Ok(Some(after)) => worker.queue.add_after(key, after),
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(namespace = %key.0, pdb = %key.1, error = %e, "disruption sync failed; retrying");
                        worker.queue.add_after(key, Duration::from_secs(1));
                    }
                }
            }
        });
        Some(c)
    }

    /// Queue every PDB of `ns` (every namespace: `None`).
    fn queue_namespace(&self, ns: Option<&str>) {
        let keys: Vec<Key> = self
            .budgets
            .lock()
            .iter()
            .filter(|(n, _)| ns.is_none_or(|ns| ns == n.as_str()))
            .flat_map(|(n, names)| names.iter().map(|name| (n.clone(), name.clone())))
            .collect();
        for k in keys {
            self.queue.add(k);
        }
    }

    /// Compute and write one PDB's status; `Some(d)`: a disrupted Pod's
    /// entry expires after `d`.
    async fn sync(&self, key: &Key) -> Result<Option<Duration>, ApiError> {
        let (ns, name) = key;
        let pdbs = store(&self.registry, "policy", "poddisruptionbudgets")?;
        let pdb = match pdbs.get_value(Some(ns), name).await {
            Ok(p) => p,
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e),
        };
        if pdb.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(None);
        }
        let now = jiff::Timestamp::now().as_second();
        let (status, recheck) = match self.compute(&pdb, now).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(namespace = %ns, pdb = %name, error = %e.message, "disruption budget sync failed");
                (fail_safe(&pdb, &e.message), None)
            }
        };
        let current = pdb.get("status").cloned().unwrap_or(json!({}));
        if same_status(&current, &status) {
            return Ok(recheck);
        }
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let generation = pdb.pointer("/metadata/generation").cloned();
        let res = pdbs
            .patch(Some(ns), name, Some("status"), &opts, |cur| {
                if cur.pointer("/metadata/generation").cloned() != generation {
                    return Err(ApiError::conflict(
                        "policy",
                        "poddisruptionbudgets",
                        name,
                        "the budget changed while it was counted",
                    ));
                }
                let mut next = cur.clone();
                next["status"] = status.clone();
                Ok(next)
            })
            .await;
        match res {
            Ok(_) => {
                tracing::debug!(namespace = %ns, pdb = %name, "disruption budget status written");
                Ok(recheck)
            }
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// kube's `trySync`: the new status, and when to look again.
    async fn compute(&self, pdb: &Value, now: i64) -> Result<(Value, Option<Duration>), ApiError> {
        let ns = pdb
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let sel =
            Selector::from_label_selector(pdb.pointer("/spec/selector").unwrap_or(&Value::Null))?;
        let pods_store = store(&self.registry, "", "pods")?;
        let list = pods_store
            .list(Some(ns), None, 0, None, ReadAt::Latest)
            .await?;
        let pods: Vec<Value> = list
            .items
            .iter()
            .filter_map(|b| serde_json::from_slice::<Value>(b).ok())
            .filter(|p| sel.matches(&labels(p)))
            .collect();
        let (expected, desired) = self.expected_count(pdb, &pods).await?;
        let (disrupted, recheck) = disrupted_pods(pdb, &pods, now);
        let healthy = pods
            .iter()
            .filter(|p| {
                p.pointer("/metadata/deletionTimestamp").is_none()
                    && pod_ready(p)
                    && p.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .is_none_or(|n| !disrupted.contains_key(n))
            })
            .count() as i64;
        let mut allowed = healthy - desired;
        if expected <= 0 || allowed <= 0 {
            allowed = 0;
        }
        let generation = pdb
            .pointer("/metadata/generation")
            .cloned()
            .unwrap_or(json!(0));
        let mut status = json!({
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "disruptionsAllowed": allowed,
            "observedGeneration": generation,
        });
        if !disrupted.is_empty() {
            status["disruptedPods"] = json!(disrupted);
        }
        let (cond_status, reason) = if allowed > 0 {
            ("True", "SufficientPods")
        } else {
            ("False", "InsufficientPods")
        };
        status["conditions"] = conditions(pdb, cond_status, reason, "", &generation);
        Ok((status, recheck))
    }

    /// kube's `getExpectedPodCount`: (expectedCount, desiredHealthy).
    async fn expected_count(&self, pdb: &Value, pods: &[Value]) -> Result<(i64, i64), ApiError> {
        if let Some(max_unavailable) = pdb.pointer("/spec/maxUnavailable") {
            let expected = self.expected_scale(pods).await?;
            let mu = scaled(max_unavailable, expected)?;
            return Ok((expected, (expected - mu).max(0)));
        }
        match pdb.pointer("/spec/minAvailable") {
            Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0))),
            Some(v @ Value::String(_)) => {
                let expected = self.expected_scale(pods).await?;
                Ok((expected, scaled(v, expected)?))
            }
            _ => Ok((0, 0)),
        }
    }

    /// kube's `getExpectedScale`: the summed scale of the matching Pods'
    /// controllers (Pods without one are left out; a controller of another
    /// kind fails the sync, as kube's finders do without a scale).
    async fn expected_scale(&self, pods: &[Value]) -> Result<i64, ApiError> {
        let mut scales: HashMap<String, i64> = HashMap::new();
        for pod in pods {
            let Some(owner) = controller_of(pod) else {
                continue;
            };
            let uid = owner.get("uid").and_then(Value::as_str).unwrap_or_default();
            if scales.contains_key(uid) {
                continue;
            }
            let ns = pod
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let pod_name = pod
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match self.controller_scale(ns, owner).await? {
                Some((uid, scale)) => {
                    scales.insert(uid, scale);
                }
                None => {
                    return Err(ApiError::internal(format!(
                        "found no controllers for pod {pod_name:?}"
                    )));
                }
            }
        }
        Ok(scales.values().sum())
    }

    /// The scale of a Pod's controller (kube's finders: a ReplicaSet, or its
    /// Deployment; a ReplicationController; a StatefulSet): (uid, replicas).
    async fn controller_scale(
        &self,
        ns: &str,
        owner: &Value,
    ) -> Result<Option<(String, i64)>, ApiError> {
        let kind = owner
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let api_version = owner
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let resource = match (group, kind) {
            ("apps", "ReplicaSet") => ("apps", "replicasets"),
            ("apps", "StatefulSet") => ("apps", "statefulsets"),
            ("", "ReplicationController") => ("", "replicationcontrollers"),
            _ => return Ok(None),
        };
        let Some(obj) = self.get_owned(ns, resource, owner).await? else {
            return Ok(None);
        };
        // A ReplicaSet controlled by a Deployment: the Deployment's scale.
        if resource.1 == "replicasets"
            && let Some(dep_ref) = controller_of(&obj)
            && dep_ref.get("kind").and_then(Value::as_str) == Some("Deployment")
            && let Some(dep) = self.get_owned(ns, ("apps", "deployments"), dep_ref).await?
        {
            return Ok(Some(scale_of(&dep)));
        }
        Ok(Some(scale_of(&obj)))
    }

    /// The object an owner reference names, when its uid matches.
    async fn get_owned(
        &self,
        ns: &str,
        (group, resource): (&str, &str),
        owner: &Value,
    ) -> Result<Option<Value>, ApiError> {
        let Some(s) = self.registry.get(group, "v1", resource) else {
            return Ok(None);
        };
        let name = owner
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match s.get_value(Some(ns), name).await {
            Ok(o) if o.pointer("/metadata/uid") == owner.get("uid") => Ok(Some(o)),
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

fn scale_of(obj: &Value) -> (String, i64) {
    (
        obj.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        obj.pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1),
    )
}

/// kube's `GetScaledValueFromIntOrPercent(v, total, roundUp=true)`.
fn scaled(v: &Value, total: i64) -> Result<i64, ApiError> {
    match v {
        Value::Number(n) => Ok(n.as_i64().unwrap_or(0)),
        Value::String(s) => {
            let pct = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "invalid value for IntOrString: invalid value {s:?}"
                    ))
                })?;
            Ok((pct * total + 99) / 100)
        }
        _ => Ok(0),
    }
}

/// kube's `buildDisruptedPodMap`: the entries of `disruptedPods` for Pods
/// that still match, are not being deleted, and were disrupted less than
/// [`DELETION_TIMEOUT`] ago; and when the oldest of those expires.
fn disrupted_pods(
    pdb: &Value,
    pods: &[Value],
    now: i64,
) -> (serde_json::Map<String, Value>, Option<Duration>) {
    let mut kept = serde_json::Map::new();
    let mut recheck: Option<Duration> = None;
    let Some(map) = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
    else {
        return (kept, None);
    };
    let timeout = DELETION_TIMEOUT.as_secs() as i64;
    for pod in pods {
        let Some(name) = pod.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let Some(at) = map.get(name).and_then(Value::as_str) else {
            continue;
        };
        let Ok(t) = at.parse::<jiff::Timestamp>() else {
            continue;
        };
        let expires = t.as_second() + timeout;
        if expires < now {
            continue;
        }
        kept.insert(name.to_string(), json!(at));
        let left = Duration::from_secs(u64::try_from(expires - now).unwrap_or(0) + 1);
        recheck = Some(recheck.map_or(left, |r| r.min(left)));
    }
    (kept, recheck)
}

/// The `conditions` with `DisruptionAllowed` set (kube's
/// `apimeta.SetStatusCondition`: the transition time moves only when the
/// status does).
fn conditions(pdb: &Value, status: &str, reason: &str, message: &str, generation: &Value) -> Value {
    let mut list: Vec<Value> = pdb
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let old = list
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(DISRUPTION_ALLOWED));
    let transition = old
        .and_then(|i| list.get(i))
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now_rfc3339()));
    let cond = json!({
        "type": DISRUPTION_ALLOWED,
        "status": status,
        "observedGeneration": generation,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    });
    match old {
        Some(i) => list[i] = cond,
        None => list.push(cond),
    }
    Value::Array(list)
}

/// kube's `failSafe`: no disruption allowed, `SyncFailed` with the error.
fn fail_safe(pdb: &Value, message: &str) -> Value {
    let generation = pdb
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(0));
    let mut status = pdb.get("status").cloned().unwrap_or(json!({}));
    if !status.is_object() {
        status = json!({});
    }
    status["disruptionsAllowed"] = json!(0);
    status["observedGeneration"] = generation.clone();
    status["conditions"] = conditions(pdb, "False", "SyncFailed", message, &generation);
    for f in ["currentHealthy", "desiredHealthy", "expectedPods"] {
        if status.get(f).is_none() {
            status[f] = json!(0);
        }
    }
    status
}

/// Whether two statuses say the same, the stored form's defaults aside.
fn same_status(current: &Value, wanted: &Value) -> bool {
    let fields = [
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
        "disruptionsAllowed",
        "observedGeneration",
        "conditions",
    ];
    let empty = json!({});
    fields.iter().all(|f| current.get(*f) == wanted.get(*f))
        && current
            .get("disruptedPods")
            .filter(|v| !v.is_null())
            .unwrap_or(&empty)
            == wanted.get("disruptedPods").unwrap_or(&empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled(&json!("1%"), 0).ok(), Some(0));
        assert_eq!(scaled(&json!("1%"), 3).ok(), Some(1));
        assert_eq!(scaled(&json!("50%"), 3).ok(), Some(2));
        assert_eq!(scaled(&json!(2), 10).ok(), Some(2));
        assert!(scaled(&json!("x"), 3).is_err());
    }

    #[test]
    fn the_condition_keeps_its_transition_time_while_its_status_stays() {
        let pdb = json!({"status": {"conditions": [{"type": DISRUPTION_ALLOWED, "status": "False",
            "reason": "InsufficientPods", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}});
        let same = conditions(&pdb, "False", "InsufficientPods", "", &json!(2));
        assert_eq!(same[0]["lastTransitionTime"], json!("2020-01-01T00:00:00Z"));
        assert_eq!(same[0]["observedGeneration"], json!(2));
        let flipped = conditions(&pdb, "True", "SufficientPods", "", &json!(2));
        assert_ne!(
            flipped[0]["lastTransitionTime"],
            json!("2020-01-01T00:00:00Z")
        );
        assert_eq!(flipped.as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn fail_safe_allows_no_disruption_and_says_why() {
        let pdb = json!({"metadata": {"generation": 3},
            "status": {"disruptionsAllowed": 2, "currentHealthy": 3}});
        let s = fail_safe(&pdb, "found no controllers for pod \"p\"");
        assert_eq!(s["disruptionsAllowed"], json!(0));
        assert_eq!(s["observedGeneration"], json!(3));
        assert_eq!(s["currentHealthy"], json!(3));
        assert_eq!(s["conditions"][0]["reason"], json!("SyncFailed"));
        assert_eq!(
            s["conditions"][0]["message"],
            json!("found no controllers for pod \"p\"")
        );
    }

    #[test]
    fn expired_or_deleted_disrupted_pods_are_dropped() {
        let now = jiff::Timestamp::now().as_second();
        let at = |secs_ago: i64| {
            jiff::Timestamp::from_second(now - secs_ago)
                .map(|t| t.to_string())
                .unwrap_or_default()
        };
        let (recent, old) = (at(30), at(300));
        let pdb = json!({"status": {"disruptedPods": {"a": recent, "b": old, "c": recent, "gone": recent}}});
        let pods = vec![
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "b"}}),
            json!({"metadata": {"name": "c", "deletionTimestamp": "x"}}),
        ];
        let (kept, recheck) = disrupted_pods(&pdb, &pods, now);
        assert_eq!(kept.keys().collect::<Vec<_>>(), vec!["a"]);
        assert!(
            recheck.is_some_and(|d| d <= Duration::from_secs(91) && d > Duration::from_secs(60))
        );
    }
}
