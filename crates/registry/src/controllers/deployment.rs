//! kube-controller-manager's **deployment** controller, run while the
//! federation stands alone ([`super::standalone`]): a ReplicaSet per pod
//! template, named `NAME-<pod-template-hash>` (FNV-32a of the template, as
//! kube's `ComputeHash` shapes it, with `status.collisionCount`), labelled
//! with the hash and [`LABEL`]; the new one scaled to `spec.replicas`, the
//! old ones to 0; `deployment.kubernetes.io/revision` on both; old
//! ReplicaSets beyond `revisionHistoryLimit` deleted; status `replicas`,
//! `updatedReplicas`, `readyReplicas`, `availableReplicas`,
//! `unavailableReplicas`, `observedGeneration` and the `Progressing` and
//! `Available` conditions as kube words them.
//!
//! Simplified from kube: both strategies switch at once (the new
//! ReplicaSet gets all replicas and the old ones none, without waiting for
//! availability: no pod ever becomes available without a kubelet), and no
//! progress deadline is tracked. While a Deployment is paused no new
//! ReplicaSet is made. The federation's revisions controller
//! (`ubernetes_federation::revisions`) writes a Deployment's history only
//! while members exist, when this controller stands back, so the two
//! never act together.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use ubernetes_apimachinery::ApiError;
use ubernetes_apimachinery::labels::Selector;

use super::standalone::{
    self, FIELD_MANAGER, Key, LABEL, Reconciler, cached, cached_one, claim, deleting, key_of,
    owner_ref, settle, write_status,
};
use crate::registry::Registry;
use crate::store::{DeleteOptions, Store, WriteOptions, now_rfc3339};

/// The annotation holding a revision number.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// The label a ReplicaSet carries its template hash in.
pub const HASH_LABEL: &str = "pod-template-hash";

/// The deployment controller.
pub struct DeploymentController {
    registry: Arc<Registry>,
    deployments: Arc<Store>,
    replicasets: Arc<Store>,
}

impl DeploymentController {
    /// Start it (when the registry serves both kinds), working until `stop`.
    pub fn start_until(registry: Arc<Registry>, stop: CancellationToken) {
        let (Some(deployments), Some(replicasets)) = (
            registry.get("apps", "v1", "deployments"),
            registry.get("apps", "v1", "replicasets"),
        ) else {
            return;
        };
        let c = Arc::new(Self {
            registry: registry.clone(),
            deployments,
            replicasets,
        });
        standalone::run(registry, c, stop);
    }
}

/// FNV-1a, 32 bits.
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2_166_136_261u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(16_777_619)
    })
}

/// kube's `ComputeHash(template, collisionCount)`, rendered with
/// `rand.SafeEncodeString`: FNV-32a over the template (as sorted JSON; kube
/// hashes Go's printed struct, so the value differs from kube's but is as
/// stable), then the collision count's four little-endian bytes.
pub fn pod_template_hash(template: &Value, collision_count: u32) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if collision_count > 0 {
        bytes.extend(collision_count.to_le_bytes());
    }
    fnv32a(&bytes)
        .to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// The template without the hash label (kube's `EqualIgnoreHash`).
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH_LABEL);
        if labels.is_empty()
            && let Some(m) = t.pointer_mut("/metadata").and_then(Value::as_object_mut)
        {
            m.remove("labels");
        }
    }
    t
}

fn revision(obj: &Value) -> u64 {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn int(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// `maxUnavailable` of a RollingUpdate Deployment (an int or a percent of
/// `replicas`, rounded down; 25% by default); 0 for Recreate.
fn max_unavailable(d: &Value, replicas: i64) -> i64 {
    if d.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate") {
        return 0;
    }
    match d.pointer("/spec/strategy/rollingUpdate/maxUnavailable") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => s
            .trim_end_matches('%')
            .parse::<i64>()
            .map_or(0, |p| replicas * p / 100),
        _ => replicas * 25 / 100,
    }
}

/// A condition of `type_`, keeping `lastTransitionTime` when its status
/// does not change (kube's `SetDeploymentCondition`).
fn condition(old: &[Value], type_: &str, status: &str, reason: &str, message: String) -> Value {
    let now = now_rfc3339();
    let prev = old
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
    let transition = match prev {
        Some(p) if p.get("status").and_then(Value::as_str) == Some(status) => p
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or(json!(now.clone())),
        _ => json!(now.clone()),
    };
    let same = prev.is_some_and(|p| {
        p.get("status").and_then(Value::as_str) == Some(status)
            && p.get("reason").and_then(Value::as_str) == Some(reason)
            && p.get("message").and_then(Value::as_str) == Some(message.as_str())
    });
    if same && let Some(p) = prev {
        return p.clone();
    }
    json!({
        "type": type_, "status": status,
        "lastUpdateTime": now, "lastTransitionTime": transition,
        "reason": reason, "message": message,
    })
}

impl DeploymentController {
    async fn set_replicas(
        &self,
        rs: &Value,
        replicas: i64,
        rev: Option<u64>,
    ) -> Result<(), ApiError> {
        let same_rev = rev.is_none_or(|r| revision(rs) == r);
        if int(rs, "/spec/replicas") == replicas && same_rev {
            return Ok(());
        }
        let (ns, name) = key_of(rs);
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let w = self
            .replicasets
            .patch(ns.as_deref(), &name, None, &opts, |cur| {
                let mut o = cur.clone();
                o["spec"]["replicas"] = json!(replicas);
                if let Some(r) = rev {
                    let meta = &mut o["metadata"];
                    if !meta["annotations"].is_object() {
                        meta["annotations"] = json!({});
                    }
                    meta["annotations"][REVISION_ANNOTATION] = json!(r.to_string());
                }
                Ok(o)
            })
            .await?;
        settle(&self.replicasets, &w.object).await;
        Ok(())
    }

    /// Create the ReplicaSet of the Deployment's current template.
    async fn create_new(
        &self,
        ns: &str,
        d: &Value,
        hash: &str,
        rev: u64,
        replicas: i64,
    ) -> Result<Value, ApiError> {
        let name = d
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
        if !template["metadata"].is_object() {
            template["metadata"] = json!({});
        }
        if !template["metadata"]["labels"].is_object() {
            template["metadata"]["labels"] = json!({});
        }
        template["metadata"]["labels"][HASH_LABEL] = json!(hash);
        let mut labels = template["metadata"]["labels"].clone();
        labels[LABEL] = json!("deployment");
        let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
        if !selector["matchLabels"].is_object() {
            selector["matchLabels"] = json!({});
        }
        selector["matchLabels"][HASH_LABEL] = json!(hash);
        let max_surge = 0;
        let rs = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": format!("{name}-{hash}"),
                "namespace": ns,
                "labels": labels,
                "annotations": {
                    REVISION_ANNOTATION: rev.to_string(),
                    "deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                    "deployment.kubernetes.io/max-replicas": (replicas + max_surge).to_string(),
                },
                "ownerReferences": [owner_ref(d, "apps/v1", "Deployment")],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": int(d, "/spec/minReadySeconds"),
                "selector": selector,
                "template": template,
            },
        });
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let namespaces = self.registry.namespaces();
        let w = self
            .replicasets
            .create(namespaces.as_deref(), Some(ns), rs, &opts)
            .await?;
        settle(&self.replicasets, &w.object).await;
        Ok(w.object)
    }

    /// Write the revision annotation on the Deployment (kcm does).
    async fn annotate(&self, d: &Value, rev: u64) -> Result<(), ApiError> {
        if revision(d) == rev {
            return Ok(());
        }
        let (ns, name) = key_of(d);
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let w = self
            .deployments
            .patch(ns.as_deref(), &name, None, &opts, |cur| {
                let mut o = cur.clone();
                if !o["metadata"]["annotations"].is_object() {
                    o["metadata"]["annotations"] = json!({});
                }
                o["metadata"]["annotations"][REVISION_ANNOTATION] = json!(rev.to_string());
                Ok(o)
            })
            .await?;
        settle(&self.deployments, &w.object).await;
        Ok(())
    }
}

impl Reconciler for DeploymentController {
    fn name(&self) -> &'static str {
        "deployment"
    }

    fn owner(&self) -> (&'static str, Arc<Store>) {
        ("Deployment", self.deployments.clone())
    }

    fn children(&self) -> Vec<Arc<Store>> {
        vec![self.replicasets.clone()]
    }

    async fn sync(self: Arc<Self>, (ns, name): Key) -> Result<Option<Duration>, ApiError> {
        let Some(d) = cached_one(&self.deployments, &ns, &name) else {
            return Ok(None);
        };
        if deleting(&d) {
            return Ok(None);
        }
        let selector = match d.pointer("/spec/selector") {
            Some(s) => Selector::from_label_selector(s)?,
            None => Selector::nothing(),
        };
        if selector.is_empty() {
            // kube: a Deployment selecting everything is left alone.
            return Ok(None);
        }
        let oref = owner_ref(&d, "apps/v1", "Deployment");
        let candidates = cached(&self.replicasets, Some(&ns));
        let owned = claim(&self.replicasets, &d, &oref, &selector, candidates).await;
        let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let wanted = d
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let max_rev = owned.iter().map(revision).max().unwrap_or(0);
        let (new, old): (Vec<Value>, Vec<Value>) = owned.into_iter().partition(|rs| {
            rs.pointer("/spec/template")
                .is_some_and(|t| without_hash(t) == without_hash(&template))
        });
        let mut new = new.into_iter().next();
        let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        let mut created = false;
        let mut collisions = int(&d, "/status/collisionCount");
        if new.is_none() && !paused {
            let hash = pod_template_hash(&template, u32::try_from(collisions).unwrap_or(0));
            match self.create_new(&ns, &d, &hash, max_rev + 1, wanted).await {
                Ok(rs) => {
                    new = Some(rs);
                    created = true;
                }
                // A ReplicaSet of that name with another template: kube
                // bumps collisionCount and tries another hash next sync.
                Err(e) if e.code == 409 => collisions += 1,
                Err(e) => return Err(e),
            }
        }
        // The new one at the top revision and at `spec.replicas`; the old ones at 0.
        let new_rev = match &new {
            Some(rs) if revision(rs) < max_rev => max_rev + 1,
            Some(rs) => revision(rs),
            None => max_rev,
        };
        if let Some(rs) = &new
            && !paused
        {
            self.set_replicas(rs, wanted, Some(new_rev)).await?;
            for rs in &old {
                self.set_replicas(rs, 0, None).await?;
            }
        }
        if new.is_some() {
            self.annotate(&d, new_rev).await?;
        }
        // Old ones beyond revisionHistoryLimit, oldest revision first.
        let limit = d
            .pointer("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
            .unwrap_or(10);
        let mut idle: Vec<&Value> = old
            .iter()
            .filter(|rs| int(rs, "/spec/replicas") == 0 && int(rs, "/status/replicas") == 0)
            .filter(|rs| !deleting(rs))
            .collect();
        if let Ok(limit) = usize::try_from(limit)
            && idle.len() > limit
        {
            idle.sort_by_key(|rs| revision(rs));
            for rs in &idle[..idle.len() - limit] {
                let (_, n) = key_of(rs);
                let _ = self
                    .replicasets
                    .delete(Some(&ns), &n, &DeleteOptions::default())
                    .await;
            }
        }
        // Status from the ReplicaSets' own status.
        let all: Vec<&Value> = new.iter().chain(old.iter()).collect();
        let sum = |ptr: &str| all.iter().map(|rs| int(rs, ptr)).sum::<i64>();
        let replicas = sum("/status/replicas");
        let ready = sum("/status/readyReplicas");
        let available = sum("/status/availableReplicas");
        let updated = new.as_ref().map_or(0, |rs| int(rs, "/status/replicas"));
        let old_conditions: Vec<Value> = d
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let min_available = wanted - max_unavailable(&d, wanted);
        let available_cond = if available >= min_available {
            condition(
                &old_conditions,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".into(),
            )
        } else {
            condition(
                &old_conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".into(),
            )
        };
        let rs_name = new
            .as_ref()
            .and_then(|rs| rs.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let complete =
            new.is_some() && updated == wanted && replicas == wanted && available == wanted;
        let progressing = if complete {
            condition(
                &old_conditions,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
            )
        } else if created {
            condition(
                &old_conditions,
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                format!("Created new replica set \"{rs_name}\""),
            )
        } else if new.is_some() {
            let prev = old_conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Progressing"));
            match prev {
                Some(p)
                    if p.get("message")
                        .and_then(Value::as_str)
                        .is_some_and(|m| m.contains(&rs_name)) =>
                {
                    p.clone()
                }
                _ => condition(
                    &old_conditions,
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    format!("Found new replica set \"{rs_name}\""),
                ),
            }
        } else {
            condition(
                &old_conditions,
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
            )
        };
        let mut status = json!({
            "observedGeneration": int(&d, "/metadata/generation"),
            "conditions": [available_cond, progressing],
        });
        for (field, n) in [
            ("replicas", replicas),
            ("updatedReplicas", updated),
            ("readyReplicas", ready),
            ("availableReplicas", available),
            ("unavailableReplicas", (wanted - available).max(0)),
            ("collisionCount", collisions),
        ] {
            if n > 0 {
                status[field] = json!(n);
            }
        }
        // Read again: the annotation write bumped the generation.
        let d = cached_one(&self.deployments, &ns, &name).unwrap_or(d);
        status["observedGeneration"] = json!(int(&d, "/metadata/generation"));
        write_status(&self.deployments, &d, status).await?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_template_and_collisions() {
        let t = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": []}});
        let h = pod_template_hash(&t, 0);
        assert_eq!(h, pod_template_hash(&t.clone(), 0));
        assert_ne!(h, pod_template_hash(&t, 1));
        assert_ne!(h, pod_template_hash(&json!({"metadata": {}}), 0));
        assert!(h.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }

    #[test]
    fn templates_compare_without_the_hash_label() {
        let a = json!({"metadata": {"labels": {"app": "a", HASH_LABEL: "x"}}});
        let b = json!({"metadata": {"labels": {"app": "a"}}});
        assert_eq!(without_hash(&a), without_hash(&b));
    }

    #[test]
    fn max_unavailable_defaults_to_a_quarter_rounded_down() {
        assert_eq!(max_unavailable(&json!({}), 4), 1);
        assert_eq!(max_unavailable(&json!({}), 1), 0);
        let recreate = json!({"spec": {"strategy": {"type": "Recreate"}}});
        assert_eq!(max_unavailable(&recreate, 4), 0);
        let pct = json!({"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": "50%"}}}});
        assert_eq!(max_unavailable(&pct, 4), 2);
    }
}
