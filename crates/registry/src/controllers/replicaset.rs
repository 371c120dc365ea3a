//! kube-controller-manager's **replicaset** and **replicationcontroller**
//! controllers (one pod-making controller, two flavours), run while the
//! federation stands alone ([`super::standalone`]): Pods from the template
//! (`generateName` `NAME-`, the controller reference, the template's labels
//! plus [`LABEL`]) created or deleted to match `spec.replicas`; orphans the
//! selector matches adopted and owned pods that stop matching released;
//! status `replicas`, `fullyLabeledReplicas`, `readyReplicas`,
//! `availableReplicas` (0 without a kubelet: pods stay Pending),
//! `observedGeneration`, and the `ReplicaFailure` condition while a pod
//! create is refused (e.g. by a quota), removed once creates succeed.
//!
//! Simplified from kube: no slow-start batches (up to 500 creates per
//! sync, stopping at the first refusal), no expectations (each write waits
//! until the watch cache shows it instead).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::labels::Selector;

use super::standalone::{
    self, FIELD_MANAGER, Key, Reconciler, cached, cached_one, claim, deleting, key_of, labels_of,
    owner_ref, settle, template_parts, write_status,
};
use crate::registry::Registry;
use crate::store::{DeleteOptions, Store, WriteOptions, now_rfc3339};

/// kube's `BurstReplicas`: at most this many creates or deletes per sync.
const BURST: usize = 500;

/// Which of the two kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    ReplicaSet,
    ReplicationController,
}

/// The pod-making controller of one kind.
pub struct ReplicaSetController {
    registry: Arc<Registry>,
    flavor: Flavor,
    owners: Arc<Store>,
    pods: Arc<Store>,
}

impl ReplicaSetController {
    /// Start the ReplicaSet and the ReplicationController controller
    /// (those of the two kinds the registry serves), working until `stop`.
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) {
        let Some(pods) = registry.get("", "v1", "pods") else {
            return;
        };
        for (flavor, owners) in [
            (
                Flavor::ReplicaSet,
                registry.get("apps", "v1", "replicasets"),
            ),
            (
                Flavor::ReplicationController,
                registry.get("", "v1", "replicationcontrollers"),
            ),
        ] {
            let Some(owners) = owners else { continue };
            let c = Arc::new(Self {
                registry: registry.clone(),
                flavor,
                owners,
                pods: pods.clone(),
            });
            standalone::run(registry.clone(), c, stop.clone());
        }
    }

    fn api_version_kind(&self) -> (&'static str, &'static str) {
        match self.flavor {
            Flavor::ReplicaSet => ("apps/v1", "ReplicaSet"),
            Flavor::ReplicationController => ("v1", "ReplicationController"),
        }
    }

    /// The owner's selector: a LabelSelector for a ReplicaSet, a map
    /// (defaulted to the template's labels) for a ReplicationController.
    fn selector(&self, owner: &Value) -> Result<Selector, ApiError> {
        match self.flavor {
            Flavor::ReplicaSet => match owner.pointer("/spec/selector") {
                Some(s) => Selector::from_label_selector(s),
                None => Ok(Selector::nothing()),
            },
            Flavor::ReplicationController => {
                let set = owner
                    .pointer("/spec/selector")
                    .filter(|s| s.as_object().is_some_and(|m| !m.is_empty()))
                    .or_else(|| owner.pointer("/spec/template/metadata/labels"))
                    .map(|m| labels_of(&json!({"metadata": {"labels": m}})))
                    .unwrap_or_default();
                if set.is_empty() {
                    return Ok(Selector::nothing());
                }
                Ok(Selector::from_set(&set))
            }
        }
    }

    /// A new pod of `owner` (kube's `GetPodFromTemplate`).
    fn pod_for(&self, owner: &Value) -> Value {
        let (api_version, kind) = self.api_version_kind();
        let (name, template, labels) = template_parts(owner, "/spec/template", self.name());
        let mut metadata = json!({
            "generateName": format!("{name}-"),
            "labels": labels,
            "ownerReferences": [owner_ref(owner, api_version, kind)],
        });
        for field in ["annotations", "finalizers"] {
            if let Some(v) = template.pointer(&format!("/metadata/{field}")) {
                metadata[field] = v.clone();
            }
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata,
            "spec": template.get("spec").cloned().unwrap_or(json!({})),
        })
    }

    /// Create `n` pods; the first refusal ends the burst and is returned.
    async fn create_pods(&self, ns: &str, owner: &Value, n: usize) -> Result<(), ApiError> {
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let namespaces = self.registry.namespaces();
        for _ in 0..n {
            let w = self
                .pods
                .create(namespaces.as_deref(), Some(ns), self.pod_for(owner), &opts)
                .await?;
            settle(&self.pods, &w.object).await;
        }
        Ok(())
    }

    /// Delete `n` of `pods`, the least far along first (kube's
    /// `getPodsToDelete`: unscheduled, then pending, then not ready, then
    /// the newest).
    async fn delete_pods(&self, ns: &str, mut pods: Vec<Value>, n: usize) -> Result<(), ApiError> {
        pods.sort_by_key(|p| {
            let scheduled = p
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .is_some();
            let running = p.pointer("/status/phase").and_then(Value::as_str) == Some("Running");
            let created = p
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (scheduled, running, pod_ready(p), std::cmp::Reverse(created))
        });
        for pod in pods.into_iter().take(n) {
            let (_, name) = key_of(&pod);
            match self
                .pods
                .delete(Some(ns), &name, &DeleteOptions::default())
                .await
            {
                Ok(_) | Err(ApiError { code: 404, .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Whether a pod's `Ready` condition is `True`.
pub(crate) fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// A pod that counts: not being deleted, neither Succeeded nor Failed
/// (kube's `FilterActivePods`).
fn active(pod: &Value) -> bool {
    !deleting(pod)
        && !matches!(
            pod.pointer("/status/phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        )
}

/// kube's `calculateStatus`: counts of `pods` and the `ReplicaFailure`
/// condition (`failure`: a create or delete refused this sync).
fn status_of(owner: &Value, pods: &[Value], failure: Option<(&str, String)>) -> Value {
    let template_labels: BTreeMap<String, String> = owner
        .pointer("/spec/template/metadata/labels")
        .map(|m| labels_of(&json!({"metadata": {"labels": m}})))
        .unwrap_or_default();
    let fully = pods
        .iter()
        .filter(|p| {
            let l = labels_of(p);
            template_labels.iter().all(|(k, v)| l.get(k) == Some(v))
        })
        .count();
    let ready = pods.iter().filter(|p| pod_ready(p)).count();
    let min_ready = owner
        .pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    // Without a kubelet no pod is ever Ready; availability beyond ready
    // (minReadySeconds) is counted as ready when 0, as kube does.
    let available = if min_ready == 0 { ready } else { 0 };
    let mut status = json!({ "replicas": pods.len() });
    for (field, n) in [
        ("fullyLabeledReplicas", fully),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ] {
        if n > 0 {
            status[field] = json!(n);
        }
    }
    if let Some(g) = owner
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
    {
        status["observedGeneration"] = json!(g);
    }
    let mut conditions: Vec<Value> = owner
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let existing = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some("ReplicaFailure"));
    match (failure, existing) {
        (Some((reason, message)), None) => conditions.push(json!({
            "type": "ReplicaFailure",
            "status": "True",
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
            "message": message,
        })),
        (None, Some(i)) => {
            conditions.remove(i);
        }
        _ => {}
    }
    if !conditions.is_empty() {
        status["conditions"] = json!(conditions);
    }
    status
}

impl Reconciler for ReplicaSetController {
    fn name(&self) -> &'static str {
        match self.flavor {
            Flavor::ReplicaSet => "replicaset",
            Flavor::ReplicationController => "replicationcontroller",
        }
    }

    fn owner(&self) -> (&'static str, Arc<Store>) {
        (self.api_version_kind().1, self.owners.clone())
    }

    fn children(&self) -> Vec<Arc<Store>> {
        vec![self.pods.clone()]
    }

    async fn sync(self: Arc<Self>, (ns, name): Key) -> Result<Option<Duration>, ApiError> {
        let Some(owner) = cached_one(&self.owners, &ns, &name) else {
            return Ok(None);
        };
        let selector = self.selector(&owner)?;
        let (api_version, kind) = self.api_version_kind();
        let oref = owner_ref(&owner, api_version, kind);
        let candidates = cached(&self.pods, Some(&ns));
        let pods: Vec<Value> = claim(&self.pods, &owner, &oref, &selector, candidates)
            .await
            .into_iter()
            .filter(active)
            .collect();
        let wanted = owner
            .pointer("/spec/replicas")
            .and_then(Value::as_u64)
            .unwrap_or(1) as usize;
        let mut failure = None;
        if !deleting(&owner) {
            if pods.len() < wanted {
                let n = (wanted - pods.len()).min(BURST);
                if let Err(e) = self.create_pods(&ns, &owner, n).await {
                    tracing::info!(namespace = %ns, name, error = %e, "standalone {kind}: pod create refused");
                    failure = Some(("FailedCreate", e.message.clone()));
                }
            } else if pods.len() > wanted {
                let n = (pods.len() - wanted).min(BURST);
                if let Err(e) = self.delete_pods(&ns, pods.clone(), n).await {
                    failure = Some(("FailedDelete", e.message.clone()));
                }
            }
        }
        // The status counts what the sync started from; the watch events of
        // its own creates and deletes queue the next sync, which counts them.
        let status = status_of(&owner, &pods, failure.clone());
        write_status(&self.owners, &owner, status).await?;
        Ok(failure.map(|_| Duration::from_secs(5)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_counts_and_surfaces_a_refused_create() {
        let owner = json!({
            "metadata": {"generation": 3},
            "spec": {"template": {"metadata": {"labels": {"a": "1", "b": "2"}}}},
        });
        let pods = vec![
            json!({"metadata": {"labels": {"a": "1", "b": "2"}},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"metadata": {"labels": {"a": "1"}}}),
        ];
        let s = status_of(
            &owner,
            &pods,
            Some(("FailedCreate", "exceeded quota".into())),
        );
        assert_eq!(s["replicas"], 2);
        assert_eq!(s["fullyLabeledReplicas"], 1);
        assert_eq!(s["readyReplicas"], 1);
        assert_eq!(s["availableReplicas"], 1);
        assert_eq!(s["observedGeneration"], 3);
        assert_eq!(s["conditions"][0]["type"], "ReplicaFailure");
        assert_eq!(s["conditions"][0]["message"], "exceeded quota");
        // Gone once creates succeed.
        let owner = json!({"metadata": {}, "status": s});
        let s = status_of(&owner, &[], None);
        assert!(s.get("conditions").is_none());
        assert_eq!(s, json!({"replicas": 0}));
    }

    #[test]
    fn terminal_or_deleted_pods_do_not_count() {
        assert!(active(&json!({"status": {"phase": "Pending"}})));
        assert!(!active(&json!({"status": {"phase": "Failed"}})));
        assert!(!active(
            &json!({"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}})
        ));
    }
}
